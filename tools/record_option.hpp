#pragma once
// --record DB and --commit C, the same on every command that judges (gate, sweep): the finished
// run is appended to the results store (docs/history.md). The store and the commit are checked
// before any work, so a bad path is exit 2 with nothing run.
#include <CLI/CLI.hpp>
#include <string>

#include "gates/verdict.hpp"
#include "history/provenance.hpp"

namespace ts::cli {

struct RecordTarget {
  std::string db, commit;
  mutable history::Provenance provenance;  // resolved by prepare()
  bool on() const { return !db.empty(); }
  // Opens (creating when absent) the store and resolves the commit; before the run.
  void prepare(const std::string& command) const;
  // Appends the run; one line on stderr says where.
  void record(const GateRun& run) const;
};

void add_record_options(CLI::App& app, RecordTarget& target);

}  // namespace ts::cli
