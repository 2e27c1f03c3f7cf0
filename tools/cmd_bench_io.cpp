// touchstone bench io: the commands that read stored tensors (compare,
// fixture validate / inspect, gate of one and of every stored candidate),
// each run as a user runs it, beside its floor on this machine: the bytes it
// must read at the measured page-cache bandwidth, or the digests it must
// verify and the metric passes it must make at their measured rates,
// whichever is more. All measured in one run, side by side.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <memory>
#include <cstring>
#include <thread>

#include "core/error.hpp"
#include "core/printable.hpp"
#include "core/progress.hpp"
#include "fixtures/digest.hpp"
#include "fixtures/fixture.hpp"
#include "gates/metrics.hpp"
#include "kernels_under_test/registry.hpp"
#include "tools/command.hpp"

namespace cmd_bench_io {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

struct Opts {
  std::string fixture, baseline, exact = "exact", gate = "sparse_acceptance";
  std::vector<std::string> candidates;
  bool cold = false;
  ts::cli::ReportTarget json;
};

uint64_t file_bytes(const std::string& p) {
  std::error_code ec;
  const auto n = fs::file_size(p, ec);
  return ec ? 0 : n;
}

// Page-cache bandwidth as the commands read: the files mapped, every page
// read on every core (after one pass that brings them into the cache).
double mapped_read_gbs(const std::vector<std::string>& files) {
  uint64_t total = 0;
  double seconds = 0;
  for (int pass = 0; pass < 2; ++pass) {
    const auto t0 = Clock::now();
    total = 0;
    for (const auto& f : files) {
      const int fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) throw ts::InputError(ts::printable(f) + ": cannot open");
      struct stat st {};
      ::fstat(fd, &st);
      const size_t n = static_cast<size_t>(st.st_size);
      void* m = n ? ::mmap(nullptr, n, PROT_READ, MAP_SHARED, fd, 0) : nullptr;
      ::close(fd);
      if (m == MAP_FAILED) throw ts::InputError(ts::printable(f) + ": cannot map");
      const auto* p = static_cast<const unsigned char*>(m);
      constexpr size_t kPiece = size_t(1) << 22;
      std::atomic<uint64_t> sink{0};
      ts::digest::parallel_for((n + kPiece - 1) / kPiece, [&](size_t i) {
        uint64_t s = 0;
        const size_t end = std::min(n, (i + 1) * kPiece);
        for (size_t at = i * kPiece; at + 8 <= end; at += 64) {
          uint64_t v;
          std::memcpy(&v, p + at, 8);
          s += v;
        }
        sink += s;
      });
      ::munmap(m, n);
      total += n;
    }
    seconds = seconds_since(t0);
  }
  return static_cast<double>(total) / seconds / 1e9;
}

// The disk's sequential rate: each file's pages dropped from the cache, then read once.
double cold_read_gbs(const std::vector<std::string>& files) {
  std::vector<char> buf(size_t(1) << 22);
  uint64_t total = 0;
  const auto t0 = Clock::now();
  for (const auto& f : files) {
    const int fd = ::open(f.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw ts::InputError(ts::printable(f) + ": cannot open");
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    for (ssize_t r; (r = ::read(fd, buf.data(), buf.size())) > 0;) total += static_cast<uint64_t>(r);
    ::close(fd);
  }
  return static_cast<double>(total) / seconds_since(t0) / 1e9;
}

double digest_gbs() {
  std::vector<unsigned char> b(size_t(256) << 20);
  for (size_t i = 0; i < b.size(); ++i) b[i] = static_cast<unsigned char>(i * 131);
  ts::digest::of(b.data(), b.size());
  const auto t0 = Clock::now();
  ts::digest::of(b.data(), b.size());
  return static_cast<double>(b.size()) / seconds_since(t0) / 1e9;
}

// Element pairs per second of one breakdown pass on bfloat16 operands as
// stored (what compare and the gates run), on this fixture's heads and width,
// 256 MiB an operand (or the fixture's length, if less): streamed from memory
// as the real passes are, not from a cache that holds them both.
double metric_pairs_per_s(const ts::BlockConfig& fixture_config) {
  ts::BlockConfig c = fixture_config;
  const int64_t H = c.heads, D = c.head_dim;
  const int64_t fit = (int64_t(256) << 20) / (2 * H * D);
  const int64_t S = std::max<int64_t>(128, std::min<int64_t>(c.tokens(), fit) / 128 * 128);
  c.grid_t = 1;
  c.grid_h = 1;
  c.grid_w = S;
  c.segments = {{"video", true, 0, S}};
  const int64_t n = S * H * D;
  std::vector<uint16_t> a(static_cast<size_t>(n)), b(static_cast<size_t>(n));
  uint64_t x = 0x9e3779b97f4a7c15ull;  // xorshift: 2 x 128 Mi values in well under a second
  for (int64_t i = 0; i < n; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    a[static_cast<size_t>(i)] = static_cast<uint16_t>(0x3f00 + (x & 0xff));
    b[static_cast<size_t>(i)] = static_cast<uint16_t>(a[static_cast<size_t>(i)] ^ ((x >> 8) & 1));
  }
  ts::StoredTensor sa, sb;
  for (auto* t : {&sa, &sb}) {
    t->shape = {S, H, D};
    t->dtype = ts::DType::bf16;
  }
  sa.spans.push_back({0, n, reinterpret_cast<const unsigned char*>(a.data())});
  sb.spans.push_back({0, n, reinterpret_cast<const unsigned char*>(b.data())});
  ts::compute_breakdown(sa, sb, c);
  const auto t0 = Clock::now();
  ts::compute_breakdown(sa, sb, c);
  return static_cast<double>(n) / seconds_since(t0);
}

// Runs this binary with `args` as a user would, output discarded; wall seconds.
double timed_run(const std::vector<std::string>& args, int* code) {
  std::vector<char*> argv;
  static const std::string self = fs::read_symlink("/proc/self/exe").string();
  argv.push_back(const_cast<char*>(self.c_str()));
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  const auto t0 = Clock::now();
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int null = ::open("/dev/null", O_WRONLY);
    ::dup2(null, 1);
    ::dup2(null, 2);
    ::execv(self.c_str(), argv.data());
    ::_exit(127);
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  *code = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
  return seconds_since(t0);
}

// A stored output's name as given: NAME or stored:NAME, the spelling every other command takes.
std::string bare(const std::string& n) {
  const auto spec = ts::BackendSpec::try_parse(n);
  return spec && spec->is_stored() ? spec->argument() : n;
}

int run(Opts o) {
  const ts::BlockConfig config = ts::read_fixture_config(o.fixture);
  if (o.baseline.empty()) throw ts::InputError("--baseline: name the stored output the gates judge against");
  o.baseline = bare(o.baseline);
  o.exact = bare(o.exact);
  for (auto& c : o.candidates) c = bare(c);
  // What the steps read is an output's attention; a stage set alone (a block run's) has none.
  auto attention = [&](const std::string& n) { return ts::has_dataset(o.fixture, "/outputs/" + n + "/attention"); };
  const std::vector<std::string> outputs = ts::list_group(o.fixture, "/outputs");
  auto require = [&](const std::string& flag, const std::string& n) {
    if (std::find(outputs.begin(), outputs.end(), n) == outputs.end())
      throw ts::InputError(flag + " " + ts::printable(n) + ": " + ts::printable(o.fixture) + " has no stored output '" +
                           ts::printable(n) + "'");
    if (!attention(n))
      throw ts::InputError(flag + " " + ts::printable(n) + ": " + ts::printable(o.fixture) + ": /outputs/" +
                           ts::printable(n) + " has no attention output (a block's stage set only)");
  };
  require("--baseline", o.baseline);
  require("--exact", o.exact);
  std::vector<std::string> cands = o.candidates;
  for (const auto& n : cands) require("--candidate", n);
  if (cands.empty())
    for (const auto& n : outputs)
      if (n != o.baseline && n != o.exact && attention(n)) cands.push_back(n);
  if (cands.empty())
    throw ts::InputError(ts::printable(o.fixture) + ": no stored attention output besides the baseline and exact to judge");
  auto side = [&](const std::string& n) { return ts::output_file(o.fixture, n); };
  const double numel = static_cast<double>(config.tokens()) * config.heads * config.head_dim;

  const auto steps_total = 5;
  ts::Progress progress("bench io", steps_total + 1);
  std::vector<std::string> all = {o.fixture, side(o.baseline), side(o.exact)};
  for (const auto& n : cands) all.push_back(side(n));
  const double cold = o.cold ? cold_read_gbs(all) : 0.0;
  const double bw = mapped_read_gbs(all);
  const double sha = digest_gbs();
  const double pairs_s = metric_pairs_per_s(config);
  progress.advance();

  struct Step {
    std::string name;
    std::vector<std::string> args;
    std::vector<std::string> files;  // read (and their digests verified)
    double passes = 0;               // breakdown passes over numel pairs
  };
  std::vector<std::string> all_cands = {"gate", "-f", o.fixture, "--gate", o.gate, "--baseline",
                                        "stored:" + o.baseline, "--exact", "stored:" + o.exact};
  for (const auto& n : cands) {
    all_cands.push_back("-c");
    all_cands.push_back("stored:" + n);
  }
  std::vector<std::string> gate_files = {o.fixture, side(o.baseline), side(o.exact)};
  for (const auto& n : cands) gate_files.push_back(side(n));
  std::vector<Step> steps = {
      {"compare", {"compare", o.fixture, cands[0], o.baseline, "--breakdown", "--json"}, {side(cands[0]), side(o.baseline)}, 1},
      {"fixture validate", {"fixture", "validate", o.fixture}, {o.fixture}, 0},
      {"fixture inspect", {"fixture", "inspect", o.fixture}, all, 0},
      {"gate, 1 stored candidate",
       {"gate", "-f", o.fixture, "--gate", o.gate, "--baseline", "stored:" + o.baseline, "--exact", "stored:" + o.exact,
        "-c", "stored:" + cands[0]},
       {o.fixture, side(o.baseline), side(o.exact), side(cands[0])},
       3}};
  if (cands.size() > 1)
    steps.push_back({"gate, " + std::to_string(cands.size()) + " stored candidates", all_cands, gate_files,
                     2.0 * static_cast<double>(cands.size()) + 1});
  nlohmann::json rows = nlohmann::json::array();
  // With the JSON on stdout, stdout holds the JSON alone (a pipe to jq must parse it).
  FILE* table = o.json.to_stdout() ? stderr : stdout;
  std::fprintf(table, "%-28s %9s %9s %7s %10s\n", "step", "wall s", "floor s", "ratio", "bytes GB");
  for (const auto& s : steps) {
    uint64_t bytes = 0;
    for (const auto& f : s.files) bytes += file_bytes(f);
    const double read_s = static_cast<double>(bytes) / (bw * 1e9);
    const double work_s = static_cast<double>(bytes) / (sha * 1e9) + s.passes * numel / pairs_s;
    const double floor_s = std::max(read_s, work_s);
    int code = 0;
    const double wall = timed_run(s.args, &code);
    if (code != 0 && code != 1)
      throw ts::InputError("bench io: '" + s.name + "' exited " + std::to_string(code) + " (run it alone to see why)");
    std::fprintf(table, "%-28s %9.2f %9.2f %7.2f %10.2f\n", s.name.c_str(), wall, floor_s, wall / floor_s,
                static_cast<double>(bytes) / 1e9);
    progress.advance();
    rows.push_back({{"step", s.name}, {"wall_s", wall}, {"floor_s", floor_s}, {"ratio", wall / floor_s},
                    {"bytes", bytes}, {"read_floor_s", read_s}, {"work_floor_s", work_s},
                    {"metric_passes", s.passes}, {"exit_code", code}});
  }
  std::fprintf(table, "rates: page cache %.2f GB/s (mapped, %u threads), digest %.2f GB/s%s\n", bw,
               std::max(1u, std::thread::hardware_concurrency()), sha,
               o.cold ? (", disk " + std::to_string(cold).substr(0, 5) + " GB/s").c_str() : "");
  std::fprintf(table, "       metric pass %.3g pairs/s\n", pairs_s);
  std::fprintf(table, "floor: max(bytes at the page-cache rate, digests + metric passes at their rates)\n");
  nlohmann::json j = {{"fixture", o.fixture},
                      {"tokens", config.tokens()},
                      {"heads", config.heads},
                      {"head_dim", config.head_dim},
                      {"candidates", cands.size()},
                      {"rates", {{"page_cache_gbs", bw}, {"digest_gbs", sha}, {"metric_pairs_per_s", pairs_s},
                                 {"disk_gbs", o.cold ? nlohmann::json(cold) : nlohmann::json()}}},
                      {"steps", rows}};
  o.json.emit(j.dump(2) + "\n");
  return ts::kPass;
}

ts::cli::Registration reg{
    "bench io",
    "Time compare, fixture validate/inspect and stored gates on a fixture beside their floors (bytes, digests, "
    "metric passes at this machine's measured rates)",
    [](CLI::App& app) -> ts::cli::Action {
      auto o = std::make_shared<Opts>();
      app.add_option("fixture", o->fixture, "fixture with stored outputs (the baseline, exact and candidates)")
          ->required();
      app.add_option("--baseline", o->baseline, "stored output the gates judge against (required)")->required();
      app.add_option("--exact", o->exact, "stored exact output")->capture_default_str();
      app.add_option("-c,--candidate", o->candidates,
                     "stored candidate (repeatable; default: every other stored output; the first is the one "
                     "compare and the one-candidate gate read)");
      app.add_option("-g,--gate", o->gate, "gate the stored gates run")->capture_default_str();
      app.add_flag("--cold", o->cold,
                   "also measure the disk's sequential rate (drops these files from the page cache first)");
      ts::cli::add_json_option(app, o->json, "the steps, floors and rates");
      ts::cli::set_example(app, "touchstone bench io b24.h5 --baseline base --exact exact --json io.json");
      return [o] { return run(*o); };
    }};

}  // namespace cmd_bench_io
