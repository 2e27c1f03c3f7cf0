#include "tools/record_option.hpp"

#include <cstdio>

#include "core/error.hpp"
#include "tools/command.hpp"
#ifdef TOUCHSTONE_HAVE_HISTORY
#include "history/store.hpp"
#endif

namespace ts::cli {

void RecordTarget::prepare(const std::string& command) const {
  if (!on()) {
    if (!commit.empty()) throw InputError("--commit applies with --record DB");
    return;
  }
#ifdef TOUCHSTONE_HAVE_HISTORY
  provenance = history::resolve_provenance(command, commit);
  history::check_store(db);
#else
  (void)command;
  throw InputError("--record " + db + ": this build has no results store (SQLite3 was not found when it was "
                   "configured: apt-get install libsqlite3-dev, then configure again)");
#endif
}

void RecordTarget::record(const GateRun& run) const {
  if (!on()) return;
#ifndef TOUCHSTONE_HAVE_HISTORY
  (void)run;
#else
  const int64_t id = history::record_run(db, run, provenance);
  std::fprintf(stderr, "recorded run %lld (%zu case%s, commit %s) in %s\n", static_cast<long long>(id),
               run.candidates.size(), run.candidates.size() == 1 ? "" : "s",
               provenance.commit.empty() ? "unknown" : provenance.commit.substr(0, 12).c_str(), db.c_str());
#endif
}

void add_record_options(CLI::App& app, RecordTarget& target) {
  // An output, so that no report of the same command is written over the store.
  mark_output(app.add_option("--record", target.db,
                             "append the run to this results store (SQLite, created when absent; one row per "
                             "candidate; read it with touchstone history DB)"),
              false);
  app.add_option("--commit", target.commit,
                 "with --record, the commit of the kernel under test (default: env TOUCHSTONE_COMMIT, else git "
                 "rev-parse HEAD of the working directory)");
}

}  // namespace ts::cli
