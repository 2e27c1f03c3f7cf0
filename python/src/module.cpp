// touchstone._core: the C++ library in-process for the Python package
// (docs/python.md "The extension"): the tables, /config validation, fixture
// validation and inspection, metrics, gate files and the gate engine with its
// typed verdicts and reports. JSON-shaped results cross as JSON text, which
// python/touchstone/api.py parses; the verdict types are classes.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>

#include "core/config_json.hpp"
#include "core/error.hpp"
#include "core/tensor.hpp"
#include "drivers/tables.hpp"
#include "fixtures/fixture.hpp"
#include "gate_binding.hpp"
#include "gates/gate_file.hpp"
#include "gates/metrics.hpp"
#include "gates/verdict.hpp"
#include "reference/attention_sol.hpp"
#include "report/gate_report.hpp"

namespace py = pybind11;

namespace {

ts::Tensor to_tensor(const py::array_t<double, py::array::c_style | py::array::forcecast>& a,
                     const std::string& dtype) {
  std::vector<int64_t> shape(a.shape(), a.shape() + a.ndim());
  ts::Tensor t(shape, ts::dtype_from_name(dtype));
  std::copy(a.data(), a.data() + a.size(), t.data.begin());
  return t;
}

py::array_t<double> to_array(const ts::Tensor& t) {
  py::array_t<double> a(std::vector<py::ssize_t>(t.shape.begin(), t.shape.end()));
  std::copy(t.data.begin(), t.data.end(), a.mutable_data());
  return a;
}

std::string metrics_json(const ts::Tensor& a, const ts::Tensor& b, const std::string& config_json) {
  nlohmann::json j = ts::compute_metrics(a, b).to_json();
  if (!config_json.empty()) {
    const ts::BlockConfig c = ts::config_from_json(nlohmann::json::parse(config_json), "config");
    j["breakdown"] = ts::compute_breakdown(a, b, c).to_json();
  }
  return j.dump();
}

// Python's writes as DatasetWrites: (dataset path, make, dtype name, attributes as JSON text),
// make() returning the C-contiguous numpy array as the file stores it. make is called when the
// dataset is written, holding the GIL for the call and for letting the array go, so the writer
// runs without it in between and several outputs' host copies never coexist.
std::vector<ts::DatasetWrite> stored_writes(const py::list& writes) {
  std::vector<ts::DatasetWrite> ds;
  for (const py::handle& w : writes) {
    const auto t = w.cast<py::tuple>();
    if (t.size() != 4) throw ts::InputError("a write is (path, make, dtype, attrs_json)");
    ts::DatasetWrite d;
    d.path = t[0].cast<std::string>();
    d.attrs = nlohmann::json::parse(t[3].cast<std::string>());
    const ts::DType dtype = ts::dtype_from_name(t[2].cast<std::string>());
    auto make = std::make_shared<py::object>(t[1].cast<py::object>());
    d.stored = [make, dtype, where = d.path]() {
      py::gil_scoped_acquire gil;
      auto* a = new py::array(py::array::ensure((*make)(), py::array::c_style));
      std::shared_ptr<const void> owner(a, [](const void* p) {
        py::gil_scoped_acquire g;
        delete static_cast<const py::array*>(p);
      });
      if (!a->ptr()) throw ts::InputError(where + ": the values are not an array");
      if (static_cast<size_t>(a->itemsize()) != static_cast<size_t>(ts::dtype_bytes(dtype)))
        throw ts::InputError(where + ": " + std::to_string(a->itemsize()) + "-byte elements for " +
                             ts::dtype_name(dtype));
      ts::StoredTensor st;
      st.shape.assign(a->shape(), a->shape() + a->ndim());
      st.dtype = dtype;
      st.spans = {{0, static_cast<int64_t>(a->size()), static_cast<const unsigned char*>(a->data())}};
      st.owner = owner;
      return st;
    };
    ds.push_back(std::move(d));
  }
  return ds;
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "touchstone's C++ library in-process (docs/python.md)";
  py::register_exception<ts::InputError>(m, "InputError", PyExc_ValueError);
  py::register_exception<ts::InternalError>(m, "InternalError", PyExc_RuntimeError);
  m.attr("__version__") = TOUCHSTONE_VERSION;
  // Reads run in this process, not in a forked child: a child of a multithreaded Python process
  // inherits libhdf5's (threadsafe build's) lock from whichever thread holds it inside h5py, and
  // stalls. The child's protection buys nothing here: the package reads the same files with h5py
  // in this same process. The CLI, a process of its own, keeps its isolated reads.
  ts::set_isolated_reads(false);

  m.def("tables_json", [] { return ts::export_tables().dump(); },
        "every table of drivers/tables.hpp as JSON text (what `touchstone tables --json` prints)");
  m.def("complete_config",
        [](const std::string& config_json, const std::string& where) {
          nlohmann::json j;
          try {
            j = nlohmann::json::parse(config_json);
          } catch (const std::exception&) {
            throw ts::InputError(where + ": not valid JSON");
          }
          return ts::config_to_json(ts::config_from_json(j, where)).dump();
        },
        py::arg("config_json"), py::arg("where") = "config",
        "/config completed with its defaults and validated; InputError naming the rule");
  m.def("validate_fixture",
        [](const std::string& path, bool allow_nonfinite) {
          ts::LoadOptions o;
          o.allow_nonfinite = allow_nonfinite;
          return ts::validate_fixture(path, o);
        },
        py::arg("path"), py::arg("allow_nonfinite") = false,
        "`touchstone fixture validate`: a summary line, or InputError naming file, dataset and rule");
  m.def("inspect_fixture_json", [](const std::string& path) { return ts::inspect_fixture(path).dump(); });
  m.def("read_tensor",
        [](const std::string& path, const std::string& dataset) {
          const ts::Tensor t = ts::read_tensor(path, dataset);
          return py::make_tuple(to_array(t), std::string(ts::dtype_name(t.dtype)));
        },
        py::arg("path"), py::arg("dataset"), "(float64 array, storage type name) of one dataset");
  m.def("sol_video_blocks",
        [](const std::string& segments_json, int64_t block_k) {
          std::vector<std::pair<int64_t, int64_t>> out;
          for (const auto& b : ts::sol_key_blocks(ts::segments_from_json(segments_json, "segments"), block_k))
            if (b.video) out.emplace_back(b.start, b.length);
          return out;
        },
        py::arg("segments_json"), py::arg("block_k"),
        "sol's video key blocks as [(start, length), ...]: each video segment cut into block_k tokens "
        "from its own start (reference/attention_sol.hpp sol_key_blocks)");
  m.def("append_datasets",
        [](const std::string& path, const py::list& writes, bool compress) {
          std::vector<ts::DatasetWrite> ds = stored_writes(writes);
          py::gil_scoped_release nogil;
          ts::append_datasets(path, ds, compress);
        },
        py::arg("path"), py::arg("writes"), py::arg("compress") = false,
        "ts::append_datasets of values as stored: writes = [(dataset path, make, dtype name, "
        "attributes as JSON text)], make() returning the C-contiguous numpy array as the file stores "
        "it (bfloat16 as uint16 bits), called when that dataset is written. Outputs go to their side "
        "files, each call's all or none, under the fixture's writers' lock; InputError as the CLI's");
  m.def("write_fixture",
        [](const std::string& path, const std::string& meta_json, const std::string& config_json,
           const py::list& writes, bool compress, bool replace) {
          const nlohmann::json m = nlohmann::json::parse(meta_json);
          ts::FixtureMeta meta;
          meta.source = m.at("source").get<std::string>();
          meta.model = m.at("model").get<std::string>();
          meta.block_index = m.at("block_index").get<int64_t>();
          meta.step = m.at("step").get<int64_t>();
          meta.seed = m.at("seed").get<int64_t>();
          meta.resolution = {m.at("resolution").at(0).get<int64_t>(), m.at("resolution").at(1).get<int64_t>()};
          meta.frames = m.at("frames").get<int64_t>();
          meta.created_by = m.value("created_by", "");
          meta.notes = m.value("notes", "");
          const nlohmann::json extra = m.value("extra", nlohmann::json::object());
          for (const auto& [k, v] : extra.items()) meta.extra[k] = v.is_string() ? v.get<std::string>() : v.dump();
          const ts::BlockConfig config = ts::config_from_json(nlohmann::json::parse(config_json), "config");
          std::vector<ts::DatasetWrite> ds = stored_writes(writes);
          ts::WriteOptions o;
          o.compress = compress;
          o.replace = replace;
          py::gil_scoped_release nogil;
          ts::write_fixture(path, meta, config, ds, o);
        },
        py::arg("path"), py::arg("meta_json"), py::arg("config_json"), py::arg("writes"),
        py::arg("compress") = false, py::arg("replace") = false,
        "ts::write_fixture: root attributes (meta: source, model, block_index, step, seed, "
        "resolution, frames, created_by, notes, extra), /config, and the datasets as append_datasets "
        "takes them; checked against the schema before it is renamed into place");
  m.def("output_attrs_json",
        [](const std::string& backend, const std::string& params_json, std::optional<double> wall_ms,
           const std::string& more_json) {
          return ts::output_attrs(backend, params_json, wall_ms, nlohmann::json::parse(more_json)).dump();
        },
        py::arg("backend"), py::arg("params_json"), py::arg("wall_ms"), py::arg("more_json") = "{}",
        "the attributes every /outputs dataset carries (ts::output_attrs), as JSON text");
  m.def("has_dataset", &ts::has_dataset);
  m.def("list_group", &ts::list_group);
  m.def("metrics_json",
        [](const py::array_t<double, py::array::c_style | py::array::forcecast>& a, const std::string& a_dtype,
           const py::array_t<double, py::array::c_style | py::array::forcecast>& b, const std::string& b_dtype,
           const std::string& config_json) {
          return metrics_json(to_tensor(a, a_dtype), to_tensor(b, b_dtype), config_json);
        },
        py::arg("a"), py::arg("a_dtype"), py::arg("b"), py::arg("b_dtype"), py::arg("config_json") = "",
        "docs/metrics.md's metrics of a against b (and the breakdown by head, query block and frame "
        "when a /config is given) as JSON text");

  // Every verdict of the one table (gates/verdict.hpp), named as reports name them.
  py::enum_<ts::Verdict> verdict(m, "Verdict");
  for (const auto& v : ts::verdict_table()) verdict.value(v.name, v.verdict);
  py::enum_<ts::RuleStatus>(m, "RuleStatus")
      .value("pass_", ts::RuleStatus::pass)
      .value("fail", ts::RuleStatus::fail)
      .value("missing", ts::RuleStatus::missing)
      .value("inconclusive", ts::RuleStatus::inconclusive);

  py::class_<ts::GateFile>(m, "GateFile")
      .def_readonly("source", &ts::GateFile::source)
      .def_readonly("name", &ts::GateFile::name)
      .def_readonly("description", &ts::GateFile::description)
      .def_readonly("baseline", &ts::GateFile::baseline)
      .def_readonly("tensor", &ts::GateFile::tensor)
      .def_property_readonly("rule_ids",
                             [](const ts::GateFile& g) {
                               std::vector<std::string> ids;
                               for (const auto& r : g.rules) ids.push_back(r.id);
                               return ids;
                             })
      .def("to_json", [](const ts::GateFile& g) { return g.to_json().dump(); })
      .def("__repr__", [](const ts::GateFile& g) { return "<touchstone gate " + g.name + " from " + g.source + ">"; });
  m.def("load_gate", &ts::load_gate, py::arg("path_or_name"),
        "a built-in gate by name or a touchstone.gate/1 file");
  m.def("parse_gate", &ts::parse_gate, py::arg("text"), py::arg("where"));
  m.def("builtin_gate_names", &ts::builtin_gate_names);

  py::class_<ts::RuleOutcome>(m, "RuleOutcome")
      .def_readonly("id", &ts::RuleOutcome::id)
      .def_readonly("metric", &ts::RuleOutcome::metric)
      .def_readonly("against", &ts::RuleOutcome::against)
      .def_readonly("tensor", &ts::RuleOutcome::tensor)
      .def_property_readonly("status", [](const ts::RuleOutcome& o) { return std::string(ts::rule_status_name(o.status)); })
      .def_readonly("figure", &ts::RuleOutcome::figure)
      .def_readonly("bound", &ts::RuleOutcome::bound)
      .def_readonly("limit", &ts::RuleOutcome::limit)
      .def_readonly("message", &ts::RuleOutcome::message)
      .def_readonly("builtin", &ts::RuleOutcome::builtin)
      .def_readonly("optional", &ts::RuleOutcome::optional)
      .def("to_json", [](const ts::RuleOutcome& o) { return o.to_json().dump(); })
      .def("__repr__", [](const ts::RuleOutcome& o) {
        return "<RuleOutcome " + o.id + " " + ts::rule_status_name(o.status) + ": " + o.message + ">";
      });

  py::class_<ts::CandidateVerdict>(m, "CandidateVerdict")
      .def_readonly("candidate", &ts::CandidateVerdict::candidate)
      .def_property_readonly("verdict", [](const ts::CandidateVerdict& c) { return std::string(ts::verdict_name(c.verdict)); })
      .def_property_readonly("accepted", [](const ts::CandidateVerdict& c) { return c.verdict == ts::Verdict::accept; })
      .def_readonly("outcomes", &ts::CandidateVerdict::outcomes)
      .def_readonly("notes", &ts::CandidateVerdict::notes)
      .def_readonly("error", &ts::CandidateVerdict::error)
      .def_readonly("repro", &ts::CandidateVerdict::repro)
      .def_readonly("clock", &ts::CandidateVerdict::clock)
      .def("to_json", [](const ts::CandidateVerdict& c) { return c.to_json().dump(); })
      .def("__repr__", [](const ts::CandidateVerdict& c) {
        return "<CandidateVerdict " + c.candidate + " " + ts::verdict_name(c.verdict) + ">";
      });

  py::class_<ts::GateRun>(m, "GateRun")
      .def_readonly("gate", &ts::GateRun::gate)
      .def_readonly("mode", &ts::GateRun::mode)
      .def_readonly("input", &ts::GateRun::input)
      .def_readonly("baseline", &ts::GateRun::baseline)
      .def_readonly("candidates", &ts::GateRun::candidates)
      .def_property_readonly("exit_code", &ts::GateRun::exit_code)
      .def("to_json", [](const ts::GateRun& r) { return r.to_json().dump(); })
      .def("render_terminal",
           [](const ts::GateRun& r, std::optional<int> width, std::optional<std::string> input) {
             // Another name for the input (the user's fixture, where the run read a working copy
             // of it): given before the report is laid out, so that a long path wraps as the
             // report wraps it, where replacing it in the text afterwards could find it cut.
             ts::GateRun shown = r;
             if (input) shown.input = *input;
             return width ? ts::render_terminal(shown, *width) : ts::render_terminal(shown);
           },
           py::arg("width") = py::none(), py::arg("input") = py::none(),
           "the terminal report; width: columns (default COLUMNS, else 100); input: the name its input "
           "line gives (default the run's)")
      .def("render_json", [](const ts::GateRun& r) { return ts::render_json(r); })
      .def("render_junit", &ts::render_junit)
      .def("render_markdown", &ts::render_markdown)
      .def("render_html", [](const ts::GateRun& r) { return ts::render_html(r); });

  m.def("run_gate",
        [](const ts::GateFile& gate, const std::string& fixture, const std::string& baseline,
           const std::vector<std::string>& candidates, int pairs, int warmup, int rotate, uint64_t seed,
           const std::string& exact, bool allow_nonfinite, const std::string& gate_arg, bool accuracy_only) {
          ts::python::GateCall c{fixture, baseline, candidates, pairs, warmup, rotate, seed, exact,
                                 allow_nonfinite, gate_arg, accuracy_only};
          py::gil_scoped_release nogil;  // the run may take seconds; other Python threads go on
          return ts::python::run_gate(gate, c);
        },
        py::arg("gate"), py::arg("fixture"), py::arg("baseline"), py::arg("candidates"), py::arg("pairs") = -1,
        py::arg("warmup") = -1, py::arg("rotate") = -1, py::arg("seed") = 1, py::arg("exact") = "auto",
        py::arg("allow_nonfinite") = false, py::arg("gate_arg") = "", py::arg("accuracy_only") = false,
        "runs, times and judges candidates against a baseline on a fixture, as `touchstone gate` does");
}
