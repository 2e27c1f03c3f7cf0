// End to end: the files a command reads and writes. An output never overwrites an input, an
// HDF5 file or another output; JSON inputs are regular files (not a device, a FIFO or a folder);
// a report to a device is written in place and a write that fails is an error; a run refused as
// bad input leaves no results store behind.
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "catch.hpp"
#include "cli_runner.hpp"

namespace fs = std::filesystem;

namespace {

using Result = ts::test::CliResult;
Result cli(const std::string& args) { return ts::test::run_cli(args); }
std::string dir() {
  const std::string d = ts::test::scratch_dir() + "/paths";
  fs::create_directories(d);
  return d;
}
std::string tiny(const std::string& name) {
  const std::string p = dir() + "/" + name + ".h5";
  if (!fs::exists(p)) REQUIRE(cli("fixture synth --preset tiny --seed 4 -o " + p).code == 0);
  return p;
}
size_t lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }
void bad_input(const Result& r, const std::string& want) {
  INFO(r.out << r.err);
  CHECK(r.code == 2);
  CHECK(lines(r.err) == 1);
  CHECK(r.err.find(want) != std::string::npos);
}

}  // namespace

TEST_CASE("paths: an output path that is an input, or an HDF5 file, is refused before any work") {
  const std::string f = tiny("overlap");
  const std::string before = ts::test::read_file(f);
  bad_input(cli("gate --gate sage_compat --fixture " + f + " --candidate exact --json " + f),
            "is also an input (--fixture");
  const std::string g = dir() + "/mine.gate.json";
  std::ofstream(g) << ts::test::read_file(std::string(TOUCHSTONE_SOURCE_DIR) + "/gates/sage_compat.json");
  const std::string gate_before = ts::test::read_file(g);
  bad_input(cli("gate --gate " + g + " --fixture " + f + " --candidate exact --html " + g), "is also an input (--gate");
  const std::string other = tiny("other");
  bad_input(cli("gate --gate sage_compat --fixture " + f + " --candidate exact --markdown " + other),
            "is an HDF5 file (a fixture?), not a report");
  bad_input(cli("fixture extract " + f + " --heads 0 --tokens 0:8 -o " + f + " --force"), "is also an input");
  const std::string j = dir() + "/twice.json";
  bad_input(cli("gate --gate sage_compat --fixture " + f + " --candidate exact --json " + j + " --html " + j),
            "one file cannot hold both outputs");
  CHECK(ts::test::read_file(f) == before);
  CHECK(ts::test::read_file(g) == gate_before);
  CHECK(cli("fixture validate " + other).code == 0);
}

TEST_CASE("paths: a JSON input that is a device, a FIFO or a folder is refused, not read forever") {
  const std::string f = tiny("json_inputs");
  bad_input(cli("gate --gate /dev/zero --fixture " + f + " --candidate exact"), "is not a regular file");
  const std::string fifo = dir() + "/fifo.json";
  fs::remove(fifo);
  REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
  bad_input(cli("gate --gate " + fifo + " --fixture " + f + " --candidate exact"), "is not a regular file");
  const std::string folder = dir() + "/folder.json";
  fs::create_directories(folder);
  bad_input(cli("gate --gate " + folder + " --fixture " + f + " --candidate exact"), "is a folder");
  bad_input(cli("import-report /dev/zero -o " + dir() + "/m.json"), "is not a regular file");
}

TEST_CASE("paths: a report to a device is written in place; a failed write is an error, not exit 0") {
  const std::string f = tiny("devices");
  const Result null = cli("gate --gate sage_compat --fixture " + f + " --candidate exact --accuracy-only --json /dev/null");
  CHECK(null.code == 0);
  struct stat st {};
  REQUIRE(::stat("/dev/null", &st) == 0);
  CHECK(S_ISCHR(st.st_mode));  // not replaced by a regular file
  if (fs::exists("/dev/full")) {
    bad_input(cli("gate --gate sage_compat --fixture " + f + " --candidate exact --accuracy-only --json /dev/full"),
              "/dev/full: cannot write");
    REQUIRE(::stat("/dev/full", &st) == 0);
    CHECK(S_ISCHR(st.st_mode));
    const std::string cmd = "TOUCHSTONE_NO_PROGRESS=1 \"" + std::string(TOUCHSTONE_CLI) + "\" gate --gate sage_compat "
                            "--fixture " + f + " --candidate exact --accuracy-only > /dev/full 2>/dev/null";
    const int st2 = std::system(cmd.c_str());
    CHECK((WIFEXITED(st2) && WEXITSTATUS(st2) == 2));
  }
}

TEST_CASE("paths: --record creates no results store for a run refused as bad input") {
  const std::string f = tiny("record_refused");
  const std::string db = dir() + "/refused.db";
  bad_input(cli("gate --gate sage_compat --fixture " + f + " --candidate exactt --record " + db), "unknown backend");
  CHECK_FALSE(fs::exists(db));
}

TEST_CASE("paths: no output is written over a fixture's stored output, its outputs folder or its lock") {
  const std::string f = tiny("owned");
  REQUIRE(cli("reference " + f + " --backend exact").code == 0);
  const std::string exact = f + ".outputs/exact.h5";
  const std::string exact_before = ts::test::read_file(exact);
  bad_input(cli("fixture extract " + f + " --heads 0 -o " + exact + " --force"),
            "--output " + exact + " is in the outputs folder of fixture ");
  bad_input(cli("fixture extract " + f + " --heads 0 -o " + f + ".outputs/new.h5"), "in the outputs folder of fixture");
  CHECK_FALSE(fs::exists(f + ".outputs/new.h5"));
  // A report over the lock would let a second writer in while the first holds it.
  const std::string lock = f + ".lock";
  bad_input(cli("gate --gate sage_compat --fixture " + f + " --candidate exact --json " + lock),
            "--json " + lock + " is the writers' lock of fixture ");
  CHECK_FALSE(fs::exists(lock));
  std::ofstream(lock) << "";
  bad_input(cli("gate --gate sage_compat --fixture " + f + " --candidate exact --html " + lock),
            "is the writers' lock of fixture");
  CHECK(ts::test::read_file(lock).empty());
  fs::remove(lock);
  // Of a fixture the command does not read, too.
  const std::string other = tiny("owned_other");
  bad_input(cli("gate --gate sage_compat --fixture " + f + " --candidate exact --markdown " + other + ".lock"),
            "is the writers' lock of fixture");
  CHECK(ts::test::read_file(exact) == exact_before);
  CHECK(cli("fixture validate " + f + " --outputs").code == 0);
  // A name that only looks like one, beside no fixture, is an ordinary output.
  CHECK(cli("gate --gate sage_compat --fixture " + f + " --candidate exact --json " + dir() + "/notes.lock").code == 0);
}

TEST_CASE("paths: a report never written over the results store the same command records to") {
  const std::string f = tiny("record_same");
  const std::string db = dir() + "/same.db";
  fs::remove(db);
  bad_input(cli("gate --gate sage_compat --fixture " + f + " --candidate exact --record " + db + " --json " + db),
            "one file cannot hold both outputs");
  CHECK_FALSE(fs::exists(db));
  REQUIRE(cli("gate --gate sage_compat --fixture " + f + " --candidate exact --record " + db).code == 0);
  const std::string before = ts::test::read_file(db);
  bad_input(cli("gate --gate sage_compat --fixture " + f + " --candidate exact --record " + db + " --html " + db),
            "refusing to overwrite it");
  CHECK(ts::test::read_file(db) == before);
}

TEST_CASE("paths: a report never replaces a results store or the journal SQLite recovers it from") {
  const std::string f = tiny("record_kept");
  const std::string db = dir() + "/kept.db";
  fs::remove(db);
  REQUIRE(cli("gate --gate sage_compat --fixture " + f + " --candidate exact --record " + db).code == 0);
  const std::string before = ts::test::read_file(db);
  REQUIRE(before.rfind(std::string("SQLite format 3\0", 16), 0) == 0);
  bad_input(cli("gate --gate sage_compat --fixture " + f + " --candidate exact --json " + db),
            "is a SQLite database (a results store?), not a report");
  const std::string wal = db + "-wal";
  std::ofstream(wal) << "pages SQLite replays on open";
  bad_input(cli("gate --gate sage_compat --fixture " + f + " --candidate exact --junit " + wal),
            "is a SQLite journal of " + db);
  CHECK(ts::test::read_file(db) == before);
  CHECK(ts::test::read_file(wal) == "pages SQLite replays on open");
  fs::remove(wal);
  // A report file of the same name beside no store is an ordinary output.
  const std::string plain = dir() + "/notes-wal";
  std::ofstream(plain) << "old report";
  CHECK(cli("gate --gate sage_compat --fixture " + f + " --candidate exact --json " + plain).code == 0);
}
