// The results store: a versioned schema refused when newer, bad stores exit 2 before any work,
// twenty concurrent recorders keep every row, and a recorder killed mid-write
// leaves the store readable and whole up to its last committed run.
#include <signal.h>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "catch.hpp"
#include "core/error.hpp"
#include "history/history_support.hpp"
#include "tools/cli_runner.hpp"

namespace {

std::string fresh(const std::string& name) {
  const std::string p = ts::test::scratch_dir() + "/" + name;
  for (const char* ext : {"", "-wal", "-shm"}) std::filesystem::remove(p + ext);
  return p;
}

void sql(const std::string& db, const std::string& statement) {
  sqlite3* h = nullptr;
  REQUIRE(sqlite3_open(db.c_str(), &h) == SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(h, statement.c_str(), nullptr, nullptr, &err);
  INFO((err ? err : ""));
  sqlite3_free(err);
  sqlite3_close(h);
  REQUIRE(rc == SQLITE_OK);
}

int64_t scalar(const std::string& db, const std::string& query) {
  sqlite3* h = nullptr;
  REQUIRE(sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  REQUIRE(sqlite3_prepare_v2(h, query.c_str(), -1, &s, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(s) == SQLITE_ROW);
  const int64_t v = sqlite3_column_int64(s, 0);
  sqlite3_finalize(s);
  sqlite3_close(h);
  return v;
}

std::string text_of(const std::string& db, const std::string& query) {
  sqlite3* h = nullptr;
  REQUIRE(sqlite3_open_v2(db.c_str(), &h, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  REQUIRE(sqlite3_prepare_v2(h, query.c_str(), -1, &s, nullptr) == SQLITE_OK);
  REQUIRE(sqlite3_step(s) == SQLITE_ROW);
  const unsigned char* t = sqlite3_column_text(s, 0);
  std::string v = t ? reinterpret_cast<const char*>(t) : "";
  sqlite3_finalize(s);
  sqlite3_close(h);
  return v;
}

const std::string& tiny_fixture() {
  static const std::string path = [] {
    const std::string p = ts::test::scratch_dir() + "/tiny.h5";
    const auto r = ts::test::run_cli("fixture synth --preset tiny --seed 3 --force -o " + p);
    if (r.code != 0) throw std::runtime_error("fixture synth failed: " + r.err);
    return p;
  }();
  return path;
}

// A gate of one accuracy rule: nothing is timed, so a recorder's run costs a fraction of a second.
const std::string& accuracy_gate() {
  static const std::string path = [] {
    const std::string p = ts::test::scratch_dir() + "/accuracy.gate.json";
    std::ofstream(p) << R"({"schema": "touchstone.gate/1", "name": "accuracy-only", "baseline": "sage2",
      "rules": [{"id": "sage_like", "metric": "rel_l2", "against": "baseline", "max": 0.05}]})";
    return p;
  }();
  return path;
}

}  // namespace

TEST_CASE("record_run: one row per candidate with every rule, group and the provenance", "[history][store]") {
  const std::string db = fresh("one.db");
  ts::test::record_forty(db, 0, 0, 2);
  const ts::history::Store st = ts::history::Store::open_for_read(db);
  CHECK(st.schema_version() == ts::history::kSchemaVersion);
  CHECK(ts::history::count_cases(st) == 40);
  CHECK(text_of(db, "PRAGMA journal_mode") == "wal");
  CHECK(text_of(db, "SELECT value FROM meta WHERE key = 'schema_version'") == "1");
  CHECK(scalar(db, "SELECT count(*) FROM rules WHERE builtin = 0") == 80);
  CHECK(scalar(db, "SELECT count(*) FROM rules WHERE rule_id = 'faster' AND interval_lower IS NOT NULL") == 40);
  CHECK(scalar(db, "SELECT count(*) FROM groups WHERE breakdown = 'head' AND group_index = 3") == 40);
  CHECK(text_of(db, "SELECT timing_run FROM cases LIMIT 1") == "run2001");
  CHECK(text_of(db, "SELECT worse FROM rules WHERE rule_id = 'faster' LIMIT 1") == "down");
  CHECK(text_of(db, "SELECT commit_id FROM runs ORDER BY run_id DESC LIMIT 1") == "c40");
}

TEST_CASE("gate --record: provenance from --commit, TOUCHSTONE_COMMIT; an unsealed fixture", "[history][store]") {
  const std::string db = fresh("cli.db");
  const std::string base = "gate --gate " + accuracy_gate() + " --fixture " + tiny_fixture() +
                           " --candidate sol:tau=1.3 --candidate sol:tau=2 --record " + db;
  auto r = ts::test::run_cli(base + " --commit abc123");
  INFO(r.err);
  REQUIRE(r.code == 0);
  CHECK(r.err.find("recorded run 1 (2 cases, commit abc123)") != std::string::npos);
  ::setenv("TOUCHSTONE_COMMIT", "fromenv", 1);
  r = ts::test::run_cli(base);
  ::unsetenv("TOUCHSTONE_COMMIT");
  REQUIRE(r.code == 0);
  CHECK(scalar(db, "SELECT count(*) FROM cases") == 4);
  CHECK(text_of(db, "SELECT group_concat(commit_id || ':' || commit_source) FROM runs") == "abc123:flag,fromenv:env");
  // A synthesized fixture is sealed (docs/fixture-format.md "Digests and identity"): keyed by its content.
  CHECK(scalar(db, "SELECT count(*) FROM cases WHERE fixture_identity LIKE 'sha256:%' AND fixture_path != ''") == 4);
  CHECK(text_of(db, "SELECT touchstone_version FROM runs LIMIT 1") == TOUCHSTONE_VERSION);
  const auto h = ts::test::run_cli("history " + db);
  REQUIRE(h.code == 0);
  CHECK(h.out.find("unsealed " + tiny_fixture()) == std::string::npos);
  for (const auto& line : [&] {
         std::vector<std::string> v;
         std::istringstream in(h.out);
         for (std::string l; std::getline(in, l);) v.push_back(l);
         return v;
       }())
    CHECK(line.size() <= 100);
  // sweep --record: the rows of a gated sweep.
  r = ts::test::run_cli("sweep " + tiny_fixture() + " --tau 1,2 --stored none --gate " + accuracy_gate() +
                        " --record " + db + " --commit s1");
  INFO(r.err);
  CHECK(r.code == 0);
  CHECK(scalar(db, "SELECT count(*) FROM cases JOIN runs USING(run_id) WHERE command = 'sweep'") == 2);
}

TEST_CASE("a bad store is exit 2 before any work, and nothing is lost", "[history][store]") {
  const std::string gate_cmd =
      "gate --gate " + accuracy_gate() + " --fixture " + tiny_fixture() + " --candidate sol:tau=1.3 --record ";
  // Newer schema: refused by the reader and the recorder, the file untouched.
  const std::string newer = fresh("newer.db");
  ts::test::record_forty(newer, 0, 0, 1);
  sql(newer, "UPDATE meta SET value = '2' WHERE key = 'schema_version'");
  auto r = ts::test::run_cli("history " + newer);
  CHECK(r.code == 2);
  CHECK(r.err.find("schema version 2 is newer") != std::string::npos);
  r = ts::test::run_cli(gate_cmd + newer);
  CHECK(r.code == 2);
  CHECK(r.out.empty());  // refused before the run: no verdict printed
  CHECK(scalar(newer, "SELECT count(*) FROM cases") == 40);
  // Not SQLite at all, a foreign SQLite database, a missing store, a folder that does not exist.
  const std::string junk = fresh("junk.db");
  std::ofstream(junk) << "this is not a database, but it is somebody's file\n";
  r = ts::test::run_cli(gate_cmd + junk);
  CHECK(r.code == 2);
  CHECK(r.err.find("not a SQLite database") != std::string::npos);
  CHECK(ts::test::read_file(junk) == "this is not a database, but it is somebody's file\n");
  const std::string foreign = fresh("foreign.db");
  sql(foreign, "CREATE TABLE t(x)");
  r = ts::test::run_cli("history " + foreign);
  CHECK(r.code == 2);
  CHECK(r.err.find("not a touchstone results store") != std::string::npos);
  CHECK(ts::test::run_cli(gate_cmd + foreign).code == 2);
  r = ts::test::run_cli("history " + fresh("absent.db"));
  CHECK(r.code == 2);
  CHECK(r.err.find("no such results store") != std::string::npos);
  CHECK(ts::test::run_cli(gate_cmd + ts::test::scratch_dir() + "/no/such/folder/x.db").code == 2);
  // Bad flags.
  CHECK(ts::test::run_cli("history " + newer + " --min-change 0.1").code == 2);
  CHECK(ts::test::run_cli("history " + newer + " --since yesterday").code == 2);
  CHECK(ts::test::run_cli("gate --gate " + accuracy_gate() + " --fixture " + tiny_fixture() +
                          " --candidate sol:tau=1.3 --commit x").code == 2);
}

TEST_CASE("twenty concurrent gate --record processes keep all twenty rows", "[history][concurrency]") {
  const std::string db = fresh("many.db");
  const std::string rcs = ts::test::scratch_dir() + "/rcs";
  std::filesystem::remove_all(rcs);
  std::filesystem::create_directories(rcs);
  std::string script = "for i in $(seq 1 20); do (OMP_NUM_THREADS=1 TOUCHSTONE_NO_PROGRESS=1 \"" + std::string(TOUCHSTONE_CLI) +
                       "\" gate --gate " + accuracy_gate() + " --fixture " + tiny_fixture() +
                       " --candidate sol:tau=1.3 --record " + db + " --commit w$i >/dev/null 2>" + rcs +
                       "/err$i; echo $? >" + rcs + "/rc$i) & done; wait";
  REQUIRE(std::system(("sh -c '" + script + "'").c_str()) == 0);
  for (int i = 1; i <= 20; ++i) {
    INFO("writer " << i << ": " << ts::test::read_file(rcs + "/err" + std::to_string(i)));
    CHECK(ts::test::read_file(rcs + "/rc" + std::to_string(i)) == "0\n");
  }
  CHECK(scalar(db, "SELECT count(*) FROM cases") == 20);
  CHECK(scalar(db, "SELECT count(DISTINCT commit_id) FROM runs") == 20);
  CHECK(text_of(db, "PRAGMA integrity_check") == "ok");
}

TEST_CASE("kill -9 of a recorder mid-write: readable, whole up to its last committed run", "[history][crash]") {
  const std::string db = fresh("killed.db");
  constexpr int kCases = 40;
  ts::history::check_store(db);
  int fds[2];
  REQUIRE(::pipe(fds) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    // The recorder: appends runs of 40 cases back to back (each one transaction) and reports
    // every commit, until it is killed.
    ::close(fds[0]);
    try {
      const ts::GateFile gate = ts::test::steps_gate();
      ts::test::Noise rng(11);
      ts::GateRun run = ts::test::synthetic_run(gate, "c0", 0.02, 10, 0.02, rng, 1);
      for (int i = 1; i < kCases; ++i) run.candidates.push_back(run.candidates.front());
      ts::history::Provenance p;
      p.command = "gate";
      p.touchstone_version = TOUCHSTONE_VERSION;
      ts::history::Store st = ts::history::Store::open_for_append(db);
      for (;;) {
        const int64_t id = st.append(ts::history::make_run_record(run, p));
        if (::write(fds[1], &id, sizeof id) != sizeof id) ::_exit(3);
      }
    } catch (...) {
      ::_exit(4);
    }
  }
  ::close(fds[1]);
  int64_t last = 0, id = 0;
  for (int n = 0; n < 8 && ::read(fds[0], &id, sizeof id) == sizeof id; ++n) last = id;
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  while (::read(fds[0], &id, sizeof id) == sizeof id) last = id;  // commits reported before the kill
  ::close(fds[0]);
  REQUIRE(WIFSIGNALED(status));
  REQUIRE(last >= 8);

  // Readable by a new connection (which recovers the WAL), intact, and whole: every run holds
  // all its cases, and every run the recorder reported committed is there (the one it was
  // writing is there whole or not at all).
  CHECK(text_of(db, "PRAGMA integrity_check") == "ok");
  const int64_t runs = scalar(db, "SELECT count(*) FROM runs");
  CHECK(runs >= last);
  CHECK(runs <= last + 1);
  CHECK(scalar(db, "SELECT max(run_id) FROM runs") == runs);
  CHECK(scalar(db, "SELECT count(*) FROM cases") == runs * kCases);
  CHECK(scalar(db, "SELECT count(*) FROM (SELECT run_id FROM cases GROUP BY run_id HAVING count(*) != 40)") == 0);
  const auto r = ts::test::run_cli("history " + db + " --json");
  INFO(r.err);
  CHECK(r.code == 0);
  // And writable again.
  ts::history::Store st = ts::history::Store::open_for_append(db);
  CHECK(st.append(ts::history::make_run_record(ts::GateRun{}, {})) == runs + 1);
}
