#include "kernels_under_test/stored_output.hpp"

#include <cmath>
#include <cstdio>

#include "core/error.hpp"
#include "core/printable.hpp"
#include "core/suggest.hpp"
#include "core/timing_defaults.hpp"
#include "fixtures/fixture.hpp"
#include "fixtures/output_check.hpp"

namespace ts {
namespace {

class StoredBackend final : public AttentionBackend {
 public:
  StoredBackend(std::string name, std::string fixture) : name_(std::move(name)), fixture_(std::move(fixture)) {
    dataset_ = name_ == "observed" ? "/attention/observed" : "/outputs/" + name_ + "/attention";
    if (!has_dataset(fixture_, dataset_))
      throw InputError(fixture_ + ": " + dataset_ + ": no such dataset for backend 'stored:" +
                       name_ + "'");
    const std::string timings = "/timings/" + name_;
    if (has_dataset(fixture_, timings)) {
      const Tensor t = read_tensor(fixture_, timings);
      if (t.rank() != 1 || t.numel() == 0)
        throw InputError(fixture_ + ": " + timings + ": expected a non-empty 1-D array of ms");
      // A time of 0, negative or NaN is no measurement: refused here, before any
      // case runs, not as a ratio the interval cannot take.
      for (size_t i = 0; i < t.data.size(); ++i)
        if (!std::isfinite(t.data[i]) || t.data[i] <= 0) {
          char v[32];
          std::snprintf(v, sizeof v, "%g", t.data[i]);
          throw InputError(fixture_ + ": " + timings + ": sample " + std::to_string(i) + " is " + v +
                           ", not a positive finite time in ms");
        }
      timings_ = t.data;
      const nlohmann::json a = read_attrs(fixture_, timings);
      clock_ = a.contains(kClockAttr) && a[kClockAttr].is_string() ? a[kClockAttr].get<std::string>() : "unknown";
      runs_ = timing_runs(a, timings, timings_->size());
    }
  }
  std::string name() const override { return name_; }
  nlohmann::json params() const override {
    nlohmann::json j = {{"backend", "stored"}, {"dataset", dataset_}};
    const nlohmann::json attrs = read_attrs(fixture_, dataset_);
    if (attrs.contains("params")) j["stored_params"] = attrs["params"];
    return j;
  }
  AttentionResult run(const AttentionProblem& p) override {
    AttentionResult r;
    r.out = read_tensor(fixture_, dataset_);
    if (r.out.rank() != 3 || r.out.dim(0) != p.q.S || r.out.dim(1) != p.q.H ||
        r.out.dim(2) != p.q.D)
      throw InputError(fixture_ + ": " + dataset_ + ": shape " + r.out.shape_string() +
                       " does not match the attention inputs");
    return r;
  }
  std::optional<StoredTensor> run_stored(const AttentionProblem& p) override {
    if (name_ == "observed") return std::nullopt;  // an input, read with the inputs' checks
    StoredTensor t = read_stored(fixture_, dataset_);
    if (t.rank() != 3 || t.dim(0) != p.q.S || t.dim(1) != p.q.H || t.dim(2) != p.q.D)
      throw InputError(fixture_ + ": " + dataset_ + ": shape " + TensorRef(t).shape_string() +
                       " does not match the attention inputs");
    return t;
  }
  std::optional<std::vector<double>> stored_timings_ms() const override { return timings_; }
  std::string stored_timings_clock() const override { return clock_; }
  std::vector<std::string> stored_timing_runs() const override { return runs_; }
  bool is_stored() const override { return true; }

 private:
  std::string name_, fixture_, dataset_;
  std::optional<std::vector<double>> timings_;
  std::string clock_;
  std::vector<std::string> runs_;

  // `timing_runs`: a JSON array of one run id per sample; else `timing_run`:
  // one id for every sample; else none (unknown).
  std::vector<std::string> timing_runs(const nlohmann::json& a, const std::string& where, size_t n) const {
    if (a.contains(kTimingRunsAttr)) {
      nlohmann::json ids;
      try {
        ids = a[kTimingRunsAttr].is_string() ? nlohmann::json::parse(a[kTimingRunsAttr].get<std::string>()) : a[kTimingRunsAttr];
      } catch (const nlohmann::json::exception&) {
        throw InputError(fixture_ + ": " + where + ": attribute timing_runs is not a JSON array of strings");
      }
      if (!ids.is_array() || ids.size() != n)
        throw InputError(fixture_ + ": " + where + ": attribute timing_runs must list one run id per sample (" +
                         std::to_string(n) + ")");
      std::vector<std::string> out;
      for (const auto& id : ids) {
        if (!id.is_string() || id.get<std::string>().empty())
          throw InputError(fixture_ + ": " + where + ": attribute timing_runs holds a value that is not a run id");
        out.push_back(id.get<std::string>());
      }
      return out;
    }
    if (a.contains(kTimingRunAttr) && a[kTimingRunAttr].is_string() && !a[kTimingRunAttr].get<std::string>().empty())
      return std::vector<std::string>(n, a[kTimingRunAttr].get<std::string>());
    return {};
  }
};

}  // namespace

std::unique_ptr<AttentionBackend> make_stored_backend(const std::string& name,
                                                      const std::string& fixture_path) {
  if (name.empty()) throw InputError("backend 'stored:': missing output name (stored:NAME)");
  if (fixture_path.empty())
    throw InputError("backend 'stored:" + name + "' needs a fixture to read from");
  // Both are mistakes in the command or the file, not a kernel's failure:
  // bad input before anything runs, naming what the fixture does hold.
  const std::string dataset = name == "observed" ? "/attention/observed" : "/outputs/" + name + "/attention";
  if (!has_dataset(fixture_path, dataset)) {
    const std::vector<std::string> names = stored_attention_names(fixture_path);
    throw InputError(printable(fixture_path) + ": no stored output '" + printable(name) + "' (stored:" +
                     printable(name) + " reads " + printable(dataset) + "; " + did_you_mean(name, names) +
                     "stored outputs: " + (names.empty() ? std::string("none") : join_names(names)) + ")");
  }
  check_stored_attention(fixture_path, dataset);
  return std::make_unique<StoredBackend>(name, fixture_path);
}

}  // namespace ts
