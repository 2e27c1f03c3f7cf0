#include "tools/record_option.hpp"

#include <cstdio>

#include "core/error.hpp"
#include "history/store.hpp"

namespace ts::cli {

void RecordTarget::prepare(const std::string& command) const {
  if (!on()) {
    if (!commit.empty()) throw InputError("--commit applies with --record DB");
    return;
  }
  provenance = history::resolve_provenance(command, commit);
  history::check_store(db);
}

void RecordTarget::record(const GateRun& run) const {
  if (!on()) return;
  const int64_t id = history::record_run(db, run, provenance);
  std::fprintf(stderr, "recorded run %lld (%zu case%s, commit %s) in %s\n", static_cast<long long>(id),
               run.candidates.size(), run.candidates.size() == 1 ? "" : "s",
               provenance.commit.empty() ? "unknown" : provenance.commit.substr(0, 12).c_str(), db.c_str());
}

void add_record_options(CLI::App& app, RecordTarget& target) {
  app.add_option("--record", target.db,
                 "append the run to this results store (SQLite, created when absent; one row per candidate; "
                 "read it with touchstone history DB)");
  app.add_option("--commit", target.commit,
                 "with --record, the commit of the kernel under test (default: env TOUCHSTONE_COMMIT, else git "
                 "rev-parse HEAD of the working directory)");
}

}  // namespace ts::cli
