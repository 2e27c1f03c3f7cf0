// touchstone fixture synth | inspect | validate | rm-output | seal | migrate
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <sstream>

#include "core/error.hpp"
#include "core/phase.hpp"
#include "fixtures/fixture.hpp"
#include "fixtures/identity.hpp"
#include "fixtures/synth.hpp"
#include "fixtures/block/synth_chain.hpp"
#include "core/progress.hpp"
#include "report/terminal.hpp"
#include "tools/command.hpp"

namespace cmd_fixture {

using ts::cli::Action;
using ts::cli::Registration;

std::string attr_text(const nlohmann::json& v) {
  std::string s = v.dump();
  if (s.size() > 160) s = s.substr(0, 157) + "...";
  return s;
}

std::string num(double x) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", x);
  return buf;
}

Registration synth_reg{
    "fixture synth",
    "Synthesize a video-like attention fixture (deterministic for a seed)",
    [](CLI::App& app) -> Action {
      struct Opts {
        std::string preset = "ci", out;
        uint64_t seed = 0;
        double structure = 0.7;
        bool compress = false, with_block = false, force = false;
        int blocks = 0, steps = 0;
        double dt = 0;
      };
      auto o = std::make_shared<Opts>();
      app.add_option("--preset", o->preset, ts::preset_names_text(" | ") + " (block.md)")->capture_default_str();
      ts::cli::add_seed_option(app, o->seed, "generator seed");
      app.add_option("--structure", o->structure,
                     "0 = noise ... 1 = strongly local and smooth video content")->capture_default_str();
      app.add_flag("--compress", o->compress, "shuffle + deflate the datasets");
      app.add_flag("--with-block", o->with_block,
                   "also synthesize /block (x, modulation, weights, observed stages); q, k, v "
                   "become the block's own attention inputs");
      app.add_option("--blocks", o->blocks,
                     "a chain set of this many blocks (with --steps; implies --with-block): -o is then a folder of "
                     "block<bb>_step<ss>.h5, inputs evolving from block to block and step to step (docs/chain.md)")
          ->check(ts::cli::integer_in(1, 1000));
      app.add_option("--steps", o->steps, "denoising steps of a chain set (with --blocks)")
          ->check(ts::cli::integer_in(1, 1000));
      app.add_option("--dt", o->dt, "a chain set's step size (default 1 / steps)")->check(ts::cli::number_at_least(0, true));
      ts::cli::mark_output(app.add_option("-o,--output", o->out, "fixture file to write (HDF5); a folder for a chain set")->required(), false);
      app.add_flag("--force", o->force,
                   "replace an existing file at -o, with every output it holds (default: refuse, "
                   "exit 2)");
      ts::cli::set_example(app, "touchstone fixture synth --preset ci --seed 1 --with-block -o ci.h5");
      return [o]() -> int {
        const auto t0 = std::chrono::steady_clock::now();
        ts::SynthOptions so;
        so.preset = o->preset;
        so.seed = o->seed;
        so.structure = o->structure;
        if ((o->blocks > 0) != (o->steps > 0)) throw ts::InputError("--blocks and --steps go together (a chain set)");
        if (o->dt > 0 && o->blocks == 0) throw ts::InputError("--dt needs --blocks and --steps (a chain set)");
        if (o->blocks > 0) {
          ts::ChainSynthOptions co;
          co.base = so;
          co.blocks = o->blocks;
          co.steps = o->steps;
          co.dt = o->dt;
          ts::WriteOptions wo;
          wo.compress = o->compress;
          wo.replace = o->force;
          ts::Progress progress("fixture synth", static_cast<int64_t>(o->blocks) * o->steps);
          const auto paths = ts::synthesize_chain(co, o->out, wo, [&progress] { progress.advance(); });
          const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
          std::printf("wrote %s: %zu files, %d blocks x %d steps, preset %s, seed %llu (%.1f s)\n", o->out.c_str(),
                      paths.size(), o->blocks, o->steps, o->preset.c_str(), static_cast<unsigned long long>(o->seed), secs);
          return ts::kPass;
        }
        std::optional<ts::Phase> ph(std::in_place, "synthesize attention inputs");
        ts::SynthResult r = ts::synthesize(so);
        if (o->with_block) {
          ph.emplace("synthesize the block");
          ts::synthesize_block(so, r);
        }
        ph.emplace("write the fixture");
        ts::WriteOptions wo;
        wo.compress = o->compress;
        wo.replace = o->force;
        ts::write_synthetic(r, o->out, wo);
        ph.reset();
        const double secs =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const auto& k = r.config;
        std::printf("wrote %s: %s, seed %llu, structure %s, S=%lld H=%lld D=%lld, sinks %s (%.1f s)\n",
                    o->out.c_str(), r.meta.model.c_str(),
                    static_cast<unsigned long long>(o->seed), num(o->structure).c_str(),
                    static_cast<long long>(k.tokens()), static_cast<long long>(k.heads),
                    static_cast<long long>(k.head_dim), r.params["sinks"].dump().c_str(), secs);
        return ts::kPass;
      };
    }};

Registration inspect_reg{
    "fixture inspect",
    "Show a fixture's attributes and datasets with shapes, dtypes and statistics",
    [](CLI::App& app) -> Action {
      struct Opts {
        std::string file;
        ts::cli::ReportTarget json;
      };
      auto o = std::make_shared<Opts>();
      app.add_option("file", o->file, "fixture file (HDF5)")->required();
      ts::cli::add_json_option(app, o->json, "the attributes and datasets");
      ts::cli::set_example(app, "touchstone fixture inspect f.h5");
      return [o]() -> int {
        nlohmann::json j = ts::inspect_fixture(o->file);
        if (o->json.on()) {
          o->json.emit(j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
          if (o->json.to_stdout()) return ts::kPass;
        }
        std::ostringstream txt;
        txt << o->file << "\n";
        const auto& id = j["identity"];
        txt << "  identity " << id["identity"].get<std::string>()
                  << (id["sealed"].get<bool>() ? " (sealed" : " (not sealed: computed from the data")
                  << ")\n";
        if (!id["intact"].get<bool>()) txt << "  DIGEST MISMATCH: see digest_ok below\n";
        for (const auto& side : j["output_files"])
          txt << "  output file " << side.get<std::string>() << "\n";
        for (auto it = j["attrs"].begin(); it != j["attrs"].end(); ++it)
          txt << "  @" << it.key() << " = " << attr_text(it.value()) << "\n";
        for (const auto& obj : j["objects"]) {
          const std::string path = obj["path"];
          const int depth = static_cast<int>(std::count(path.begin(), path.end(), '/'));
          const std::string indent(static_cast<size_t>(2 * depth), ' ');
          if (obj["kind"] == "group") {
            txt << indent << path << "/\n";
          } else if (obj.contains("error")) {
            txt << indent << path << "  ERROR " << obj["error"].get<std::string>() << "\n";
          } else {
            txt << indent << path << " " << obj["shape"].dump() << " "
                      << obj["dtype"].get<std::string>();
            if (obj.contains("min"))
              txt << " min " << num(obj["min"]) << " max " << num(obj["max"]) << " mean "
                        << num(obj["mean"]) << " std " << num(obj["std"]);
            txt << " nan " << obj["nan"] << " inf " << obj["inf"];
            if (obj.contains("digest_ok")) txt << (obj["digest_ok"].get<bool>() ? " digest ok" : " DIGEST MISMATCH");
            if (obj.contains("inputs")) {
              const std::string in = obj["inputs"];
              txt << (in == "these" ? " computed from these inputs"
                      : in == "other" ? " COMPUTED FROM OTHER INPUTS (copied from another fixture?)"
                                      : " inputs unrecorded (written before outputs recorded them)");
            }
            txt << "\n";
          }
          if (obj.contains("attrs"))
            for (auto it = obj["attrs"].begin(); it != obj["attrs"].end(); ++it)
              txt << indent << "  @" << it.key() << " = " << attr_text(it.value()) << "\n";
        }
        std::cout << ts::wrap_each_line(txt.str(), ts::terminal_width());
        return ts::kPass;
      };
    }};

Registration validate_reg{
    "fixture validate",
    "Check a fixture against touchstone.fixture/1 (exit 0 ok, 2 with a one-line error)",
    [](CLI::App& app) -> Action {
      struct Opts {
        std::string file;
        bool allow_nonfinite = false;
        bool outputs = false;
        ts::cli::ReportTarget json;
      };
      auto o = std::make_shared<Opts>();
      app.add_option("file", o->file, "fixture file (HDF5)")->required();
      app.add_flag("--allow-nonfinite", o->allow_nonfinite, "accept NaN/Inf in input tensors");
      app.add_flag("--outputs", o->outputs,
                   "also verify every output's content digest (reads every output; default: outputs are "
                   "checked for shape and for the inputs they record, readers verify what they read)");
      ts::cli::add_json_option(app, o->json, "the verdict");
      ts::cli::set_example(app, "touchstone fixture validate f.h5 --json");
      return [o]() -> int {
        ts::LoadOptions lo;
        lo.allow_nonfinite = o->allow_nonfinite;
        lo.output_content = o->outputs;
        if (o->json.on()) {
          try {
            o->json.emit(ts::validate_fixture_json(o->file, lo).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
          } catch (const ts::InputError& e) {
            // The verdict on stdout for machines, the line on stderr for people.
            o->json.emit(nlohmann::json{{"ok", false}, {"file", o->file}, {"error", e.what()}}.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n");
            throw;
          }
          if (o->json.to_stdout()) return ts::kPass;
        }
        std::cout << ts::validate_fixture(o->file, lo) << "\n";
        return ts::kPass;
      };
    }};

Registration rm_output_reg{
    "fixture rm-output",
    "Remove one output (/outputs/NAME, and /timings/NAME unless --keep-timings) from a fixture",
    [](CLI::App& app) -> Action {
      struct Opts {
        std::string file, name;
        bool keep_timings = false, json = false;
      };
      auto o = std::make_shared<Opts>();
      app.add_option("file", o->file, "fixture file (HDF5)")->required();
      app.add_option("name", o->name, "output name, as under /outputs (e.g. sage2_sm121)")->required();
      app.add_flag("--keep-timings", o->keep_timings, "leave /timings/NAME in place");
      app.add_flag("--json", o->json, "machine-readable output");
      app.footer("Example: touchstone fixture rm-output ci.h5 sol_tau1.3");
      return [o]() -> int {
        const auto removed = ts::remove_output(o->file, o->name, o->keep_timings);
        if (o->json) {
          std::cout << nlohmann::json{{"file", o->file}, {"removed", removed}}.dump(
                           2, ' ', false, nlohmann::json::error_handler_t::replace)
                    << "\n";
          return ts::kPass;
        }
        for (const auto& r : removed) std::cout << o->file << ": removed " << r << "\n";
        return ts::kPass;
      };
    }};

Registration seal_reg{
    "fixture seal",
    "Store a content digest in every input dataset of a fixture written without them",
    [](CLI::App& app) -> Action {
      struct Opts {
        std::string file;
        ts::cli::ReportTarget json;
      };
      auto o = std::make_shared<Opts>();
      app.add_option("file", o->file, "fixture file (HDF5)")->required();
      ts::cli::add_json_option(app, o->json, "the identity and the digests");
      app.footer(
          "Digests already stored are verified first (a mismatch is exit 2: the data changed since "
          "it was sealed). The file is rewritten once, to a temporary renamed over it (crash-safe); "
          "a sealed fixture is left as it is. docs/fixture-format.md \"Digests and identity\".");
      ts::cli::set_example(app, "touchstone fixture seal old.h5");
      return [o]() -> int {
        const ts::FixtureIdentity id = ts::seal_fixture(o->file);
        if (o->json.on()) {
          o->json.emit(nlohmann::json{{"file", o->file}, {"identity", id.identity},
                                      {"sealed", id.sealed}, {"digests", id.digests}}
                           .dump(2, ' ', false, nlohmann::json::error_handler_t::replace) +
                       "\n");
          if (o->json.to_stdout()) return ts::kPass;
        }
        std::cout << o->file << ": sealed, " << id.digests.size() << " input datasets, identity "
                  << id.identity << "\n";
        return ts::kPass;
      };
    }};

Registration migrate_reg{
    "fixture migrate",
    "Move the outputs a fixture holds inside it to files of their own (F.outputs/NAME.h5)",
    [](CLI::App& app) -> Action {
      struct Opts {
        std::string file;
        bool json = false;
      };
      auto o = std::make_shared<Opts>();
      app.add_option("file", o->file, "fixture file (HDF5)")->required();
      app.add_flag("--json", o->json, "machine-readable output");
      app.footer(
          "Fixtures written before side files hold /outputs and /timings inside; every read "
          "still works, and each later write of one output moves that one out. This moves all "
          "of them and rewrites the fixture once without them (crash-safe: each side file is "
          "renamed into place before the fixture is replaced). docs/fixture-format.md "
          "\"Outputs in files of their own\".");
      ts::cli::set_example(app, "touchstone fixture migrate block24.h5");
      return [o]() -> int {
        const auto moved = ts::migrate_fixture(o->file);
        if (o->json) {
          std::cout << nlohmann::json{{"file", o->file}, {"moved", moved}}.dump(
                           2, ' ', false, nlohmann::json::error_handler_t::replace)
                    << "\n";
          return ts::kPass;
        }
        if (moved.empty()) std::cout << o->file << ": no embedded outputs; nothing to move\n";
        for (const auto& n : moved)
          std::cout << o->file << ": moved " << n << " to " << ts::output_file(o->file, n) << "\n";
        return ts::kPass;
      };
    }};

}  // namespace cmd_fixture
