#include "history/store.hpp"

#include <sqlite3.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <thread>

#include "core/error.hpp"

namespace ts::history {
namespace {

// How long a writer waits for the others in all before it gives up (a store on a stuck network
// filesystem, a reader holding a lock for minutes): an internal error, the run's figures lost.
constexpr int kBusyTimeoutMs = 120000;

const char* const kSchema = R"sql(
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE runs(
  run_id INTEGER PRIMARY KEY,
  recorded_at TEXT NOT NULL,
  recorded_unix_ms INTEGER NOT NULL,
  command TEXT NOT NULL,
  touchstone_version TEXT NOT NULL,
  commit_id TEXT,
  commit_source TEXT,
  host TEXT,
  gate TEXT NOT NULL,
  gate_source TEXT NOT NULL,
  mode TEXT NOT NULL,
  input TEXT NOT NULL,
  baseline TEXT NOT NULL,
  context_json TEXT NOT NULL);
CREATE TABLE cases(
  case_id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(run_id),
  ordinal INTEGER NOT NULL,
  candidate TEXT NOT NULL,
  backend TEXT NOT NULL,
  params_json TEXT NOT NULL,
  fixture_identity TEXT,
  fixture_path TEXT NOT NULL,
  verdict TEXT NOT NULL,
  error TEXT NOT NULL,
  device TEXT,
  versions_json TEXT NOT NULL,
  clock TEXT,
  candidate_ms REAL,
  baseline_ms REAL,
  speedup REAL,
  speedup_lower REAL,
  speedup_upper REAL,
  speed_confidence REAL,
  speed_samples INTEGER,
  speed_method TEXT,
  timing_run TEXT,
  speed_missing TEXT,
  worst_json TEXT NOT NULL,
  shown_json TEXT NOT NULL,
  details_json TEXT NOT NULL);
CREATE TABLE rules(
  case_id INTEGER NOT NULL REFERENCES cases(case_id),
  ordinal INTEGER NOT NULL,
  rule_id TEXT NOT NULL,
  metric TEXT NOT NULL,
  against TEXT NOT NULL,
  tensor TEXT NOT NULL,
  status TEXT NOT NULL,
  figure REAL,
  figure_text TEXT NOT NULL,
  bound TEXT NOT NULL,
  bound_min REAL,
  bound_max REAL,
  bound_limit REAL,
  worse TEXT NOT NULL,
  interval_lower REAL,
  interval_upper REAL,
  interval_confidence REAL,
  interval_samples INTEGER,
  builtin INTEGER NOT NULL,
  optional INTEGER NOT NULL,
  message TEXT NOT NULL,
  PRIMARY KEY(case_id, ordinal));
CREATE TABLE groups(
  case_id INTEGER NOT NULL REFERENCES cases(case_id),
  against TEXT NOT NULL,
  breakdown TEXT NOT NULL,
  rank INTEGER NOT NULL,
  group_index INTEGER,
  metric TEXT NOT NULL,
  value REAL);
CREATE INDEX cases_by_run ON cases(run_id);
CREATE INDEX cases_by_candidate ON cases(candidate, fixture_identity, fixture_path);
CREATE INDEX groups_by_case ON groups(case_id);
CREATE INDEX runs_by_time ON runs(recorded_unix_ms);
)sql";

std::string json_text(const nlohmann::json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

bool busy(int rc) { return (rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED; }

// Backs off for a few milliseconds, jittered so that twenty writers do not retry in step.
void back_off(int attempt) {
  static thread_local std::minstd_rand gen(static_cast<unsigned>(::getpid()));
  const int ms = std::min(50, 2 + attempt) + static_cast<int>(gen() % 10);
  std::this_thread::sleep_for(std::chrono::milliseconds(ms));
}

class Stmt {
 public:
  Stmt(sqlite3* db, const char* sql, const std::string& where) : db_(db) {
    if (sqlite3_prepare_v2(db, sql, -1, &s_, nullptr) != SQLITE_OK)
      throw InternalError(where + ": " + sqlite3_errmsg(db));
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  sqlite3_stmt* get() { return s_; }
  int i = 0;  // next parameter
  Stmt& text(const std::string& v) {
    sqlite3_bind_text(s_, ++i, v.c_str(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
    return *this;
  }
  Stmt& text(const std::optional<std::string>& v) { return v ? text(*v) : null(); }
  Stmt& opt_text(const std::string& v) { return v.empty() ? null() : text(v); }
  Stmt& real(const std::optional<double>& v) {
    if (!v) return null();
    sqlite3_bind_double(s_, ++i, *v);
    return *this;
  }
  Stmt& integer(const std::optional<int64_t>& v) {
    if (!v) return null();
    sqlite3_bind_int64(s_, ++i, *v);
    return *this;
  }
  Stmt& null() {
    sqlite3_bind_null(s_, ++i);
    return *this;
  }
  // Runs an INSERT inside the open transaction.
  void done(const std::string& where) {
    const int rc = sqlite3_step(s_);
    if (rc != SQLITE_DONE) throw InternalError(where + ": " + sqlite3_errmsg(db_));
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
    i = 0;
  }

 private:
  sqlite3* db_;
  sqlite3_stmt* s_ = nullptr;
};

std::string col_text(sqlite3_stmt* s, int c) {
  const unsigned char* t = sqlite3_column_text(s, c);
  return t ? reinterpret_cast<const char*>(t) : "";
}
std::optional<double> col_real(sqlite3_stmt* s, int c) {
  if (sqlite3_column_type(s, c) == SQLITE_NULL) return std::nullopt;
  return sqlite3_column_double(s, c);
}
std::optional<int64_t> col_int(sqlite3_stmt* s, int c) {
  if (sqlite3_column_type(s, c) == SQLITE_NULL) return std::nullopt;
  return sqlite3_column_int64(s, c);
}

// Runs SQL without results, retrying while another connection holds a lock the busy handler
// did not wait out (changing the journal mode, a checkpoint).
void exec(sqlite3* db, const std::string& sql, const std::string& where) {
  for (int attempt = 0;; ++attempt) {
    char* err = nullptr;
    const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
    const std::string msg = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    if (rc == SQLITE_OK) return;
    if (busy(rc) && attempt < 2000) {
      back_off(attempt);
      continue;
    }
    if ((rc & 0xff) == SQLITE_NOTADB) throw InputError(where + ": not a SQLite database (" + msg + ")");
    if ((rc & 0xff) == SQLITE_READONLY || (rc & 0xff) == SQLITE_CANTOPEN || (rc & 0xff) == SQLITE_IOERR)
      throw InputError(where + ": cannot write the results store (" + msg + ")");
    throw InternalError(where + ": " + msg);
  }
}

// The store's schema version; 0 for an empty database. InputError when the database holds
// tables but is not a touchstone store.
int read_version(sqlite3* db, const std::string& path) {
  for (int attempt = 0;; ++attempt) {
    sqlite3_stmt* s = nullptr;
    int rc = sqlite3_prepare_v2(db, "SELECT count(*), sum(name = 'meta') FROM sqlite_master WHERE type = 'table'", -1, &s, nullptr);
    if (rc == SQLITE_OK) rc = sqlite3_step(s);
    if (busy(rc) && attempt < 2000) {
      sqlite3_finalize(s);
      back_off(attempt);
      continue;
    }
    if (rc != SQLITE_ROW) {
      const std::string msg = sqlite3_errmsg(db);
      sqlite3_finalize(s);
      if ((rc & 0xff) == SQLITE_NOTADB) throw InputError(path + ": not a SQLite database (" + msg + ")");
      throw InputError(path + ": cannot read the results store (" + msg + ")");
    }
    const int64_t tables = sqlite3_column_int64(s, 0), meta = sqlite3_column_int64(s, 1);
    sqlite3_finalize(s);
    if (tables == 0) return 0;
    if (meta == 0) throw InputError(path + ": a SQLite database but not a touchstone results store (no table 'meta')");
    break;
  }
  Stmt q(db, "SELECT value FROM meta WHERE key = 'schema_version'", path);
  if (sqlite3_step(q.get()) != SQLITE_ROW)
    throw InputError(path + ": a touchstone results store without a schema version (table 'meta')");
  const std::string v = col_text(q.get(), 0);
  int version = 0;
  try {
    size_t used = 0;
    version = std::stoi(v, &used);
    if (used != v.size() || version < 1) throw std::invalid_argument(v);
  } catch (const std::exception&) {
    throw InputError(path + ": schema_version '" + v + "' in table 'meta' is not a positive integer");
  }
  if (version > kSchemaVersion)
    throw InputError(path + ": results store schema version " + std::to_string(version) +
                     " is newer than this touchstone reads (" + std::to_string(kSchemaVersion) +
                     "); use the touchstone that wrote it or a newer one");
  return version;
}

sqlite3* open_db(const std::string& path, int flags) {
  sqlite3* db = nullptr;
  const int rc = sqlite3_open_v2(path.c_str(), &db, flags | SQLITE_OPEN_FULLMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    const std::string msg = db ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close(db);
    throw InputError(path + ": cannot open the results store (" + msg + ")");
  }
  sqlite3_busy_timeout(db, kBusyTimeoutMs);
  return db;
}

}  // namespace

Store::Store(Store&& o) noexcept : db_(o.db_), path_(std::move(o.path_)), version_(o.version_) { o.db_ = nullptr; }
Store& Store::operator=(Store&& o) noexcept {
  if (this != &o) {
    sqlite3_close(db_);
    db_ = o.db_;
    path_ = std::move(o.path_);
    version_ = o.version_;
    o.db_ = nullptr;
  }
  return *this;
}
Store::~Store() { sqlite3_close(db_); }

Store Store::open_for_append(const std::string& path) {
  namespace fs = std::filesystem;
  if (path.empty()) throw InputError("--record: empty path");
  std::error_code ec;
  if (fs::is_directory(path, ec)) throw InputError(path + ": is a directory, not a results store");
  const fs::path parent = fs::absolute(path, ec).parent_path();
  if (!fs::is_directory(parent, ec)) throw InputError(path + ": folder " + parent.string() + " does not exist");
  Store st(open_db(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE), path);
  int version = read_version(st.db_, path);
  if (version == 0) {
    // Another recorder may be creating it at the same moment: whoever takes the write lock
    // first creates it, the others find it made.
    exec(st.db_, "BEGIN IMMEDIATE", path);
    try {
      version = read_version(st.db_, path);
      if (version == 0) {
        exec(st.db_, kSchema, path);
        exec(st.db_,
             "INSERT INTO meta(key, value) VALUES ('schema_version', '" + std::to_string(kSchemaVersion) +
                 "'), ('created_by', 'touchstone " TOUCHSTONE_VERSION "')",
             path);
        version = kSchemaVersion;
      }
      exec(st.db_, "COMMIT", path);
    } catch (...) {
      sqlite3_exec(st.db_, "ROLLBACK", nullptr, nullptr, nullptr);
      throw;
    }
  }
  // WAL: readers never block the writer, and writers queue on one lock instead of failing.
  // The mode is kept in the file; synchronous=FULL makes each committed run survive a crash of
  // the machine too, not only of the recorder.
  exec(st.db_, "PRAGMA journal_mode=WAL", path);
  exec(st.db_, "PRAGMA synchronous=FULL", path);
  st.version_ = version;
  return st;
}

Store Store::open_for_read(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) throw InputError(path + ": no such results store");
  if (std::filesystem::is_directory(path, ec)) throw InputError(path + ": is a directory, not a results store");
  // Read-write without create, so that a WAL store's shared memory can be set up; a file the
  // user may only read is opened read-only.
  sqlite3* db = nullptr;
  try {
    db = open_db(path, SQLITE_OPEN_READWRITE);
  } catch (const InputError&) {
    db = open_db(path, SQLITE_OPEN_READONLY);
  }
  Store st(db, path);
  st.version_ = read_version(db, path);
  if (st.version_ == 0) throw InputError(path + ": an empty database, not a touchstone results store (no table 'meta')");
  return st;
}

int64_t Store::append(const RunRecord& r) {
  const std::string& w = path_;
  exec(db_, "BEGIN IMMEDIATE", w);
  try {
    {
      Stmt s(db_,
             "INSERT INTO runs(recorded_at, recorded_unix_ms, command, touchstone_version, commit_id, commit_source, "
             "host, gate, gate_source, mode, input, baseline, context_json) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
             w);
      s.text(r.recorded_at).integer(r.recorded_unix_ms).text(r.provenance.command).text(r.provenance.touchstone_version);
      s.opt_text(r.provenance.commit).opt_text(r.provenance.commit_source).opt_text(r.provenance.host);
      s.text(r.gate).text(r.gate_source).text(r.mode).text(r.input).text(r.baseline).text(json_text(r.context));
      s.done(w);
    }
    const int64_t run_id = sqlite3_last_insert_rowid(db_);
    Stmt cs(db_,
            "INSERT INTO cases(run_id, ordinal, candidate, backend, params_json, fixture_identity, fixture_path, verdict, "
            "error, device, versions_json, clock, candidate_ms, baseline_ms, speedup, speedup_lower, speedup_upper, "
            "speed_confidence, speed_samples, speed_method, timing_run, speed_missing, worst_json, shown_json, "
            "details_json) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            w);
    Stmt rs(db_,
            "INSERT INTO rules(case_id, ordinal, rule_id, metric, against, tensor, status, figure, figure_text, bound, "
            "bound_min, bound_max, bound_limit, worse, interval_lower, interval_upper, interval_confidence, "
            "interval_samples, builtin, optional, message) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            w);
    Stmt gs(db_,
            "INSERT INTO groups(case_id, against, breakdown, rank, group_index, metric, value) VALUES (?,?,?,?,?,?,?)",
            w);
    for (const CaseRecord& c : r.cases) {
      cs.integer(run_id).integer(c.ordinal).text(c.candidate).text(c.backend).text(json_text(c.params));
      cs.text(c.fixture_identity).text(c.fixture_path).text(c.verdict).text(c.error).text(c.device);
      cs.text(json_text(c.versions)).text(c.clock).real(c.candidate_ms).real(c.baseline_ms).real(c.speedup);
      cs.real(c.speedup_lower).real(c.speedup_upper).real(c.speed_confidence).integer(c.speed_samples);
      cs.text(c.speed_method).text(c.timing_run).text(c.speed_missing);
      cs.text(json_text(c.worst)).text(json_text(c.shown)).text(json_text(c.details));
      cs.done(w);
      const int64_t case_id = sqlite3_last_insert_rowid(db_);
      for (const RuleRecord& x : c.rules) {
        rs.integer(case_id).integer(x.ordinal).text(x.id).text(x.metric).text(x.against).text(x.tensor).text(x.status);
        rs.real(x.figure).text(x.figure_text).text(x.bound).real(x.bound_min).real(x.bound_max).real(x.limit);
        rs.text(x.worse).real(x.interval_lower).real(x.interval_upper).real(x.interval_confidence);
        rs.integer(x.interval_samples).integer(x.builtin ? 1 : 0).integer(x.optional ? 1 : 0).text(x.message);
        rs.done(w);
      }
      for (const GroupRecord& g : c.groups) {
        gs.integer(case_id).text(g.against).text(g.breakdown).integer(g.rank).integer(g.index).text(g.metric).real(g.value);
        gs.done(w);
      }
    }
    exec(db_, "COMMIT", w);
    return run_id;
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

void check_store(const std::string& db_path) {
  // A store that does not exist yet is created by the run's record, not by
  // this check: a run refused afterwards leaves no empty database behind.
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(db_path, ec)) {
    const fs::path dir = fs::path(db_path).parent_path().empty() ? fs::path(".") : fs::path(db_path).parent_path();
    if (!fs::is_directory(dir, ec))
      throw InputError("--record " + db_path + ": no folder " + dir.string() + " to create the results store in");
    if (::access(dir.c_str(), W_OK) != 0)
      throw InputError("--record " + db_path + ": folder " + dir.string() + " is not writable");
    return;
  }
  (void)Store::open_for_append(db_path);
}

int64_t record_run(const std::string& db_path, const GateRun& run, const Provenance& provenance) {
  Store st = Store::open_for_append(db_path);
  return st.append(make_run_record(run, provenance));
}

std::vector<StoredFigure> load_figures(const Store& store, const Filters& f) {
  std::string sql =
      "SELECT r.run_id, c.case_id, r.recorded_at, r.recorded_unix_ms, r.commit_id, r.gate, c.candidate, "
      "c.fixture_path, c.verdict, c.device, c.fixture_identity, ru.rule_id, ru.metric, ru.against, ru.tensor, "
      "ru.status, ru.bound, ru.worse, ru.figure_text, ru.figure, ru.bound_min, ru.bound_max, ru.bound_limit, "
      "ru.interval_lower, ru.interval_upper, ru.interval_confidence, ru.interval_samples, c.candidate_ms, "
      "c.baseline_ms, c.clock, c.timing_run "
      "FROM rules ru JOIN cases c ON c.case_id = ru.case_id JOIN runs r ON r.run_id = c.run_id "
      "WHERE ru.builtin = 0";
  std::vector<std::string> args;
  if (!f.kernel.empty()) {
    sql += " AND instr(c.candidate, ?) > 0";
    args.push_back(f.kernel);
  }
  if (!f.fixture.empty()) {
    sql += " AND (instr(coalesce(c.fixture_identity, ''), ?) > 0 OR instr(c.fixture_path, ?) > 0)";
    args.push_back(f.fixture);
    args.push_back(f.fixture);
  }
  if (!f.gate.empty()) {
    sql += " AND r.gate = ?";
    args.push_back(f.gate);
  }
  if (!f.metric.empty()) {
    sql += " AND (ru.metric = ? OR ru.rule_id = ?)";
    args.push_back(f.metric);
    args.push_back(f.metric);
  }
  if (!f.since.empty()) {
    sql += " AND r.recorded_at >= ?";
    args.push_back(f.since);
  }
  sql += " ORDER BY r.recorded_unix_ms, r.run_id, c.ordinal, ru.ordinal";
  Stmt q(store.handle(), sql.c_str(), store.path());
  for (const auto& a : args) q.text(a);
  std::vector<StoredFigure> out;
  for (int attempt = 0;;) {
    const int rc = sqlite3_step(q.get());
    if (rc == SQLITE_DONE) break;
    if (busy(rc) && attempt++ < 2000) {
      back_off(attempt);
      continue;
    }
    if (rc != SQLITE_ROW) throw InputError(store.path() + ": cannot read the results store (" + sqlite3_errmsg(store.handle()) + ")");
    sqlite3_stmt* s = q.get();
    StoredFigure p;
    int k = 0;
    p.run_id = sqlite3_column_int64(s, k++);
    p.case_id = sqlite3_column_int64(s, k++);
    p.recorded_at = col_text(s, k++);
    p.recorded_unix_ms = sqlite3_column_int64(s, k++);
    p.commit = col_text(s, k++);
    p.gate = col_text(s, k++);
    p.candidate = col_text(s, k++);
    p.fixture_path = col_text(s, k++);
    p.verdict = col_text(s, k++);
    p.device = col_text(s, k++);
    if (sqlite3_column_type(s, k) != SQLITE_NULL) p.fixture_identity = col_text(s, k);
    ++k;
    p.rule_id = col_text(s, k++);
    p.metric = col_text(s, k++);
    p.against = col_text(s, k++);
    p.tensor = col_text(s, k++);
    p.status = col_text(s, k++);
    p.bound = col_text(s, k++);
    p.worse = col_text(s, k++);
    p.figure_text = col_text(s, k++);
    p.figure = col_real(s, k++);
    p.bound_min = col_real(s, k++);
    p.bound_max = col_real(s, k++);
    p.limit = col_real(s, k++);
    p.lower = col_real(s, k++);
    p.upper = col_real(s, k++);
    p.confidence = col_real(s, k++);
    p.samples = col_int(s, k++);
    p.candidate_ms = col_real(s, k++);
    p.baseline_ms = col_real(s, k++);
    p.clock = col_text(s, k++);
    p.timing_run = col_text(s, k++);
    out.push_back(std::move(p));
  }
  return out;
}

namespace {

std::vector<std::string> distinct_texts(const Store& store, const char* sql) {
  Stmt q(store.handle(), sql, store.path());
  std::vector<std::string> out;
  for (int attempt = 0;;) {
    const int rc = sqlite3_step(q.get());
    if (rc == SQLITE_DONE) return out;
    if (busy(rc) && attempt++ < 2000) {
      back_off(attempt);
      continue;
    }
    if (rc != SQLITE_ROW) throw InputError(store.path() + ": cannot read the results store (" + sqlite3_errmsg(store.handle()) + ")");
    out.push_back(col_text(q.get(), 0));
  }
}

}  // namespace

StoredIds stored_ids(const Store& store) {
  return {distinct_texts(store, "SELECT DISTINCT fixture_identity FROM cases WHERE fixture_identity IS NOT NULL"),
          distinct_texts(store, "SELECT DISTINCT commit_id FROM runs WHERE commit_id IS NOT NULL")};
}

std::vector<std::string> recorded_gates(const Store& store) {
  return distinct_texts(store, "SELECT DISTINCT gate FROM runs WHERE gate IS NOT NULL ORDER BY gate");
}

int64_t count_cases(const Store& store) {
  Stmt q(store.handle(), "SELECT count(*) FROM cases", store.path());
  if (sqlite3_step(q.get()) != SQLITE_ROW) throw InputError(store.path() + ": cannot read table 'cases'");
  return sqlite3_column_int64(q.get(), 0);
}

}  // namespace ts::history
