// End-to-end: fixtures are never lost. Concurrent writers serialise, kill -9
// and full disks leave the fixture intact, stale temporaries are removed,
// untrusted files (FIFOs, symlink loops, corrupt HDF5) give one line and exit
// 2, an invalid output stops only the commands that read it.
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "catch.hpp"
#include "cli_runner.hpp"
#include "fixtures/fixture.hpp"

namespace fs = std::filesystem;

namespace {

using ts::test::CliResult;

int line_count(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

std::string scratch(const std::string& name) {
  const std::string d = ts::test::scratch_dir() + "/safety";
  fs::create_directories(d);
  return d + "/" + name;
}

// A started CLI process with its own output files (run_cli's are shared).
struct Child {
  pid_t pid = -1;
  std::string out, err;
};

// Starts touchstone with `args`; `fsize_bytes` > 0 sets RLIMIT_FSIZE (a
// full disk as the process sees it: writes past it fail with EFBIG).
Child spawn(const std::vector<std::string>& args, const std::string& tag, long long fsize_bytes = 0) {
  Child c;
  c.out = scratch(tag + ".out");
  c.err = scratch(tag + ".err");
  c.pid = ::fork();
  if (c.pid == 0) {
    const int o = ::open(c.out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(c.err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(o, 1);
    ::dup2(e, 2);
    if (fsize_bytes > 0) {
      struct rlimit lim {static_cast<rlim_t>(fsize_bytes), static_cast<rlim_t>(fsize_bytes)};
      ::setrlimit(RLIMIT_FSIZE, &lim);
    }
    ::setenv("TOUCHSTONE_NO_PROGRESS", "1", 1);
    ::setenv("OMP_NUM_THREADS", "1", 1);
    std::vector<char*> argv;
    std::string bin = TOUCHSTONE_CLI;
    argv.push_back(bin.data());
    std::vector<std::string> copy = args;
    for (auto& a : copy) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(bin.c_str(), argv.data());
    ::_exit(127);
  }
  return c;
}

// Exit status as the shell reports it: 128 + signal for a killed process.
int wait_for(const Child& c) {
  int st = 0;
  ::waitpid(c.pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

CliResult run(const std::vector<std::string>& args, const std::string& tag, long long fsize = 0) {
  Child c = spawn(args, tag, fsize);
  CliResult r;
  r.code = wait_for(c);
  r.out = ts::test::read_file(c.out);
  r.err = ts::test::read_file(c.err);
  return r;
}

std::vector<std::string> leftovers(const std::string& fixture) {
  std::vector<std::string> out;
  const std::string base = fs::path(fixture).filename().string();
  for (const auto& e : fs::directory_iterator(fs::path(fixture).parent_path())) {
    const std::string n = e.path().filename().string();
    if (n.rfind(base + ".tmp.", 0) == 0 || n == base + ".lock") out.push_back(n);
  }
  // Outputs are written as side files F.outputs/NAME.h5, their temporaries beside them.
  std::error_code ec;
  for (fs::directory_iterator it(fixture + ".outputs", ec), end; !ec && it != end; it.increment(ec)) {
    const std::string n = it->path().filename().string();
    if (n.find(".tmp.") != std::string::npos) out.push_back(base + ".outputs/" + n);
  }
  return out;
}

std::string synth(const std::string& name, const std::string& preset = "tiny") {
  const std::string f = scratch(name);
  fs::remove(f);
  auto r = run({"fixture", "synth", "--preset", preset, "--seed", "3", "-o", f}, name + "_synth");
  REQUIRE(r.code == 0);
  return f;
}

std::string tau_spec(int i) { return "sol:tau=" + std::to_string(0.25 * (i + 1)).substr(0, 5); }

}  // namespace

TEST_CASE("20 concurrent reference runs into one fixture leave all 20 outputs, valid", "[safety]") {
  const std::string f = synth("concurrent20.h5");
  std::vector<Child> kids;
  for (int i = 0; i < 20; ++i)
    kids.push_back(spawn({"reference", f, "--backend", tau_spec(i)}, "c20_" + std::to_string(i)));
  for (auto& k : kids) {
    INFO(ts::test::read_file(k.err));
    CHECK(wait_for(k) == 0);
  }
  const auto outputs = ts::list_group(f, "/outputs");
  CHECK(outputs.size() == 20);
  auto v = run({"fixture", "validate", f, "--json"}, "c20_validate");
  INFO(v.err);
  CHECK(v.code == 0);
  CHECK(nlohmann::json::parse(v.out)["outputs"].size() == 20);
  CHECK(leftovers(f).empty());
}

TEST_CASE("stress: 20 concurrent writers x 10 rounds lose nothing", "[safety][stress]") {
  const std::string f = synth("stress.h5");
  // Each writer replaces its own output 10 times; all 20 must survive, valid.
  std::vector<Child> kids;
  const std::string bin = TOUCHSTONE_CLI;
  for (int i = 0; i < 20; ++i) {
    Child c;
    c.err = scratch("s_" + std::to_string(i) + ".err");
    fs::remove(c.err);
    const std::string cmd = "for r in 1 2 3 4 5 6 7 8 9 10; do \"" + bin + "\" reference '" + f +
                            "' --backend '" + tau_spec(i) + "' >/dev/null 2>>'" + c.err +
                            "' || exit 1; done";
    c.pid = ::fork();
    if (c.pid == 0) {
      ::setenv("OMP_NUM_THREADS", "1", 1);
      ::execl("/bin/sh", "sh", "-c", cmd.c_str(), static_cast<char*>(nullptr));
      ::_exit(127);
    }
    kids.push_back(c);
  }
  for (auto& k : kids) {
    INFO(ts::test::read_file(k.err));
    CHECK(wait_for(k) == 0);
  }
  CHECK(ts::list_group(f, "/outputs").size() == 20);
  CHECK(run({"fixture", "validate", f}, "stress_validate").code == 0);
  CHECK(leftovers(f).empty());
}

TEST_CASE("kill -9 at random moments x 50: no fixture lost, stale temporaries removed", "[safety][stress]") {
  const std::string f = synth("killed.h5", "ci");
  std::mt19937 rng(12345);
  int killed_with_temp = 0;
  // Each round's writer removes what the round before left (and says so on
  // that round's stderr): only the last round's temporary is the next one's.
  bool last_left_temp = false;
  for (int i = 0; i < 50; ++i) {
    Child c = spawn({"reference", f, "--backend", tau_spec(i % 8)}, "kill");
    bool reaped = false;
    if (i % 2 == 0) {
      // Any moment of the run (start, load, compute, write).
      std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 900));
    } else {
      // A moment of the write: once the temporary exists, 0-20 ms later.
      for (int w = 0; w < 5000; ++w) {
        bool temp = false;
        for (const auto& n : leftovers(f)) temp = temp || n.find(".tmp.") != std::string::npos;
        if (temp) break;
        if (::waitpid(c.pid, nullptr, WNOHANG) != 0) {
          reaped = true;
          break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(rng() % 20));
    }
    if (!reaped) {
      ::kill(c.pid, SIGKILL);
      wait_for(c);
    }
    last_left_temp = false;
    for (const auto& n : leftovers(f)) last_left_temp = last_left_temp || n.find(".tmp.") != std::string::npos;
    killed_with_temp += last_left_temp;
    // The fixture is always the old or the new complete file.
    auto v = run({"fixture", "validate", f}, "kill_validate");
    INFO("round " << i << ": " << v.err);
    REQUIRE(v.code == 0);
  }
  // The next writer removes what dead writers left, and says so.
  auto r = run({"reference", f, "--backend", "exact"}, "kill_after");
  INFO(r.err);
  CHECK(r.code == 0);
  CHECK(leftovers(f).empty());
  if (last_left_temp) CHECK(r.err.find("no longer runs") != std::string::npos);
  WARN("kills that left a temporary behind: " << killed_with_temp << " of 50");
}

TEST_CASE("a full disk at every write phase: exit 2, one line, fixture intact, no crash", "[safety]") {
  // RLIMIT_FSIZE makes every write past the limit fail with EFBIG, as a full
  // disk fails with ENOSPC: the copy, the dataset writes, the metadata flush
  // at close and the fsync each meet it at some limit below the final size.
  const std::string f = synth("fulldisk.h5");
  const std::string before = ts::test::read_file(f);
  const long long size = static_cast<long long>(before.size());
  int failed = 0, passed = 0;
  for (long long lim = 512; lim < size + 80000; lim += (lim < size ? 4096 : 8192)) {
    const std::string copy = scratch("fulldisk_run.h5");
    fs::copy_file(f, copy, fs::copy_options::overwrite_existing);
    auto r = run({"reference", copy, "--backend", "exact"}, "fd", lim);
    INFO("limit " << lim << " of " << size << ": exit " << r.code << " " << r.err);
    CHECK((r.code == 0 || r.code == 2));
    if (r.code == 2) {
      ++failed;
      CHECK(line_count(r.err) == 1);
      CHECK(ts::test::read_file(copy) == before);
    } else {
      ++passed;
    }
    CHECK(leftovers(copy).empty());
  }
  CHECK(failed > 3);
  CHECK(passed > 0);
  // synth over an existing file with --force, writes failing at each phase
  for (long long lim = 1024; lim < size; lim += size / 6) {
    const std::string copy = scratch("fulldisk_synth.h5");
    fs::copy_file(f, copy, fs::copy_options::overwrite_existing);
    auto r = run({"fixture", "synth", "--preset", "tiny", "--seed", "9", "--force", "-o", copy}, "fds", lim);
    INFO("limit " << lim << ": exit " << r.code << " " << r.err);
    CHECK(r.code == 2);
    CHECK(line_count(r.err) == 1);
    CHECK(ts::test::read_file(copy) == before);
    CHECK(leftovers(copy).empty());
  }
}

TEST_CASE("a full disk at the final close: no crash in HDF5's shutdown (tmpfs, where it can mount)", "[safety]") {
  // A 20 MB tmpfs holding a ci fixture and 6.5 MB free. Needs
  // user namespaces (unshare -rm); skipped where the machine has none.
  if (std::system("unshare -rm true >/dev/null 2>&1") != 0) {
    WARN("skipped: unshare -rm is not permitted here (the RLIMIT_FSIZE test covers the phases)");
    return;
  }
  const std::string f = synth("tmpfs_src.h5", "ci");
  const std::string dir = scratch("tmpfs_mnt");
  fs::create_directories(dir);
  const std::string bin = TOUCHSTONE_CLI;
  const long long size = static_cast<long long>(fs::file_size(f));
  int crashes = 0, clean_failures = 0;
  for (long long extra : {50000LL, 200000LL, 800000LL, 1600000LL, 3200000LL, 6500000LL}) {
    // tmpfs sizes are whole pages; room for the fixture and `extra` bytes of
    // new data (an output is its own file: no copy of the fixture is made).
    const long long kb = (size + extra) / 1024 + 4;
    const std::string log = scratch("tmpfs.log");
    const std::string cmd = "unshare -rm sh -c 'mount -t tmpfs -o size=" + std::to_string(kb) +
                            "k none \"" + dir + "\" && cp \"" + f + "\" \"" + dir + "/f.h5\" && "
                            "sha256sum \"" + dir + "/f.h5\" > \"" + dir + "/../before.sha\" && "
                            "TOUCHSTONE_NO_PROGRESS=1 \"" + bin + "\" reference \"" + dir +
                            "/f.h5\" --backend sage2 --dump >/dev/null 2>\"" + log + "\"; rc=$?; echo $rc > \"" +
                            dir + "/../rc\"; sha256sum \"" + dir + "/f.h5\" > \"" + dir +
                            "/../after.sha\"; ls \"" + dir + "\" > \"" + dir + "/../ls\"'";
    std::system(cmd.c_str());
    const int rc = std::atoi(ts::test::read_file(scratch("rc")).c_str());
    const std::string err = ts::test::read_file(log);
    INFO("extra " << extra << ": exit " << rc << " " << err);
    CHECK(rc != 139);
    CHECK(rc != 134);
    crashes += rc > 128;
    if (rc == 2) {
      ++clean_failures;
      CHECK(line_count(err) == 1);
      CHECK(ts::test::read_file(scratch("before.sha")) == ts::test::read_file(scratch("after.sha")));
    } else {
      CHECK(rc == 0);
    }
    // A failed write leaves neither a temporary nor an empty outputs folder.
    CHECK(ts::test::read_file(scratch("ls")) == (rc == 0 ? "f.h5\nf.h5.outputs\n" : "f.h5\n"));
  }
  CHECK(crashes == 0);
  CHECK(clean_failures > 0);
}

TEST_CASE("fixture synth refuses to replace an existing file without --force", "[safety]") {
  const std::string f = synth("noforce.h5");
  REQUIRE(run({"reference", f, "--backend", "exact"}, "nf_ref").code == 0);
  const std::string before = ts::test::read_file(f);
  auto r = run({"fixture", "synth", "--preset", "tiny", "-o", f}, "nf_synth");
  CHECK(r.code == 2);
  CHECK(line_count(r.err) == 1);
  CHECK(r.err.find("--force") != std::string::npos);
  CHECK(ts::test::read_file(f) == before);
  r = run({"fixture", "synth", "--preset", "tiny", "--force", "-o", f}, "nf_force");
  CHECK(r.code == 0);
  CHECK(ts::list_group(f, "/outputs").empty());
}

TEST_CASE("fixture rm-output removes one output and its timings, exit 2 naming an absent one", "[safety]") {
  const std::string f = synth("rm.h5");
  REQUIRE(run({"reference", f, "--backend", "exact"}, "rm_a").code == 0);
  REQUIRE(run({"reference", f, "--backend", "sol:tau=1"}, "rm_b").code == 0);
  auto r = run({"fixture", "rm-output", f, "exact"}, "rm_1");
  INFO(r.err);
  CHECK(r.code == 0);
  CHECK(r.out.find("/outputs/exact") != std::string::npos);
  CHECK(ts::list_group(f, "/outputs") == std::vector<std::string>{"sol_tau1_bf16"});
  CHECK(run({"fixture", "validate", f}, "rm_v").code == 0);
  const std::string before = ts::test::read_file(f);
  r = run({"fixture", "rm-output", f, "exact"}, "rm_2");
  CHECK(r.code == 2);
  CHECK(line_count(r.err) == 1);
  CHECK(r.err.find("/outputs/exact") != std::string::npos);
  CHECK(r.err.find("sol_tau1_bf16") != std::string::npos);
  CHECK(ts::test::read_file(f) == before);
}

TEST_CASE("fixture rm-output removes an output whose side file is corrupt", "[safety]") {
  const std::string f = synth("rmbad.h5");
  REQUIRE(run({"reference", f, "--backend", "exact"}, "rmb_a").code == 0);
  {
    std::ofstream(f + ".outputs/exact.h5", std::ios::trunc) << "not hdf5";
  }
  CHECK(run({"fixture", "validate", f}, "rmb_v1").code == 2);
  // Its timings cannot be kept: said, and nothing removed.
  auto r = run({"fixture", "rm-output", f, "exact", "--keep-timings"}, "rmb_1");
  CHECK(r.code == 2);
  CHECK(line_count(r.err) == 1);
  CHECK(r.err.find("without --keep-timings removes the file") != std::string::npos);
  CHECK(std::filesystem::exists(f + ".outputs/exact.h5"));
  r = run({"fixture", "rm-output", f, "exact"}, "rmb_2");
  INFO(r.err);
  CHECK(r.code == 0);
  CHECK(r.out.find("removed /outputs/exact") != std::string::npos);
  CHECK_FALSE(std::filesystem::exists(f + ".outputs/exact.h5"));
  CHECK(run({"fixture", "validate", f}, "rmb_v2").code == 0);
}

TEST_CASE("an invalid output stops only the commands that read it", "[safety]") {
  const std::string f = synth("badout.h5");
  REQUIRE(run({"reference", f, "--backend", "exact"}, "bo_a").code == 0);
  // An output of the wrong shape, as another tool might leave it.
  const auto cfg = ts::load_fixture(f).config;
  ts::Tensor wrong({cfg.tokens(), cfg.heads, cfg.head_dim + 1}, ts::DType::f32);
  const std::string copy = scratch("badout_src.h5");
  {
    ts::Fixture fx = ts::load_fixture(f);
    ts::WriteOptions wo;
    wo.validate = false;
    ts::write_fixture(f, fx.meta, fx.config,
                      {{"/attention/q", fx.q, {}}, {"/attention/k", fx.k, {}}, {"/attention/v", fx.v, {}},
                       {"/outputs/broken/attention", wrong, ts::output_attrs("broken", "{}", 1.0)},
                       {"/outputs/exact/attention", ts::read_tensor(f, "/outputs/exact/attention"),
                        ts::output_attrs("exact", "{}", 1.0)}},
                      wo);
  }
  auto v = run({"fixture", "validate", f}, "bo_validate");
  CHECK(v.code == 2);
  CHECK(v.err.find("/outputs/broken/attention") != std::string::npos);
  // Commands that do not read it work.
  auto r = run({"reference", f, "--backend", "sol:tau=2"}, "bo_ref");
  INFO(r.err);
  CHECK(r.code == 0);
  CHECK(run({"compare", f, "exact", "sol_tau2_bf16"}, "bo_cmp").code == 0);
  // Commands that read it are refused, naming it.
  auto c = run({"compare", f, "broken", "exact"}, "bo_cmp_bad");
  CHECK(c.code == 2);
  CHECK(line_count(c.err) == 1);
  CHECK(c.err.find("/outputs/broken/attention") != std::string::npos);
  // And it can be removed.
  CHECK(run({"fixture", "rm-output", f, "broken"}, "bo_rm").code == 0);
  CHECK(run({"fixture", "validate", f}, "bo_validate2").code == 0);
}

TEST_CASE("a FIFO given as a fixture is refused at once", "[safety]") {
  const std::string fifo = scratch("pipe.h5");
  fs::remove(fifo);
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"fixture", "validate", fifo},
        std::vector<std::string>{"reference", fifo, "--backend", "exact"},
        std::vector<std::string>{"fixture", "inspect", fifo}}) {
    Child c = spawn(args, "fifo");
    int st = 0;
    pid_t done = 0;
    for (int i = 0; i < 300 && done == 0; ++i) {  // 30 s at most
      done = ::waitpid(c.pid, &st, WNOHANG);
      if (!done) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (!done) {
      ::kill(c.pid, SIGKILL);
      ::waitpid(c.pid, &st, 0);
    }
    REQUIRE(done != 0);  // it did not block
    const std::string err = ts::test::read_file(c.err);
    INFO(err);
    CHECK(WEXITSTATUS(st) == 2);
    CHECK(line_count(err) == 1);
    CHECK(err.find("FIFO") != std::string::npos);
  }
}

TEST_CASE("a symlink loop is named as such, not 'file not found'", "[safety]") {
  const std::string a = scratch("loop_a.h5"), b = scratch("loop_b.h5");
  fs::remove(a);
  fs::remove(b);
  fs::create_symlink(b, a);
  fs::create_symlink(a, b);
  auto r = run({"fixture", "validate", a}, "loop");
  CHECK(r.code == 2);
  CHECK(line_count(r.err) == 1);
  CHECK(r.err.find("symbolic links") != std::string::npos);
  CHECK(r.err.find("not found") == std::string::npos);
}

TEST_CASE("invalid UTF-8 and control characters in a path are escaped in the error", "[safety]") {
  const std::string bad = scratch("bad\xff\xfe\nname.h5");
  auto r = run({"fixture", "validate", bad}, "utf8");
  CHECK(r.code == 2);
  CHECK(line_count(r.err) == 1);
  CHECK(r.err.find("bad\\xFF\\xFE\\nname.h5") != std::string::npos);
  CHECK(r.err.find('\xff') == std::string::npos);
}
