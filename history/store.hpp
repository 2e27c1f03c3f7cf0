#pragma once
// The results store: one SQLite database file in WAL mode that any number of recorders append
// to at once (docs/history.md). Each run is one transaction, so a recorder killed mid-write
// leaves every run before it whole and nothing of its own. The schema is versioned (table
// `meta`); a store written by a newer touchstone is refused, never rewritten.
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gates/verdict.hpp"
#include "history/provenance.hpp"
#include "history/record.hpp"

struct sqlite3;

namespace ts::history {

inline constexpr int kSchemaVersion = 1;

class Store {
 public:
  // Creates the file and the schema when absent. InputError: not a SQLite file, a SQLite file
  // that is not a touchstone store, a newer schema, a path that cannot be written.
  static Store open_for_append(const std::string& path);
  // InputError when the file is missing or is not a store of a schema this build reads.
  static Store open_for_read(const std::string& path);

  Store(Store&&) noexcept;
  Store& operator=(Store&&) noexcept;
  ~Store();

  // Appends the run and its cases in one transaction, retrying while other writers hold the
  // lock; returns the run's id.
  int64_t append(const RunRecord& run);
  int schema_version() const { return version_; }
  const std::string& path() const { return path_; }
  sqlite3* handle() const { return db_; }

 private:
  Store(sqlite3* db, std::string path) : db_(db), path_(std::move(path)) {}
  sqlite3* db_ = nullptr;
  std::string path_;
  int version_ = 0;
};

// Checked before a run's work: the store can be opened (or created) for appending.
void check_store(const std::string& db_path);
// Appends the finished run (one row per candidate); returns the run's id.
int64_t record_run(const std::string& db_path, const GateRun& run, const Provenance& provenance);

// One recorded figure of a rule: a point of a series (history/series.hpp).
struct StoredFigure {
  int64_t run_id = 0, case_id = 0;
  std::string recorded_at;
  int64_t recorded_unix_ms = 0;
  std::string commit, gate, candidate, fixture_path, verdict, device;
  std::optional<std::string> fixture_identity;
  std::string rule_id, metric, against, tensor, status, bound, worse, figure_text;
  std::optional<double> figure, bound_min, bound_max, limit, lower, upper, confidence;
  std::optional<int64_t> samples;
  std::optional<double> candidate_ms, baseline_ms;
  std::string clock, timing_run;
};

struct Filters {
  std::string kernel;   // substring of the candidate spec
  std::string fixture;  // substring of the fixture identity or path
  std::string gate;     // the gate's name, exactly
  std::string metric;   // a rule's metric or id, exactly
  std::string since;    // ISO date or time (UTC): records at or after it
};

// Every non-built-in rule's figure in record order (time, then run, case, rule).
std::vector<StoredFigure> load_figures(const Store& store, const Filters& f);
// Every fixture identity and commit the store holds, whatever the filters: what the short
// identities `history` prints must tell apart (history/short_ids.hpp).
struct StoredIds {
  std::vector<std::string> fixtures, commits;
};
StoredIds stored_ids(const Store& store);
// The names of the gates the store's runs were judged by, sorted: what `--gate` may name.
std::vector<std::string> recorded_gates(const Store& store);
// Rows of the cases table (the 20-writer test counts them).
int64_t count_cases(const Store& store);

}  // namespace ts::history
