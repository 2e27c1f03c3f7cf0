// The fixture loader on arbitrary bytes as an HDF5 file: validation with
// /block (what `touchstone fixture validate` and `reference` run first) must
// end in a summary or an InputError. HDF5 opens files by name, so each input
// is written to one scratch file per process (in /dev/shm when it exists).
//
// The product reads untrusted files first in a forked child
// (fixtures/isolated_read) that turns a libhdf5 crash or endless loop into an
// InputError. A child per input would cost ~70 ms here, and its coverage
// would never reach libFuzzer; so the reads run in one persistent worker
// (fuzz/persistent_worker, which hands coverage back) with that isolation
// off: the code the product's child runs. When libhdf5 kills or hangs the
// worker, the input goes through the product's own isolated read, which must
// end in an InputError (every one of the first 50 such inputs, then one in
// 50), and a new worker takes over.
//
// A sanitizer report about touchstone's own code is a finding wherever it
// happens: the dying process exits with kSanitizerExit and the fuzzer aborts
// (the report is on stderr above). A report whose stack reaches libhdf5
// before touchstone's own code (ASan's memcpy checks on the library's corrupt
// heaps, or on what zlib or a filter plugin decodes for it; its allocations
// of 2^41 bytes; a SEGV inside it) is the library's defect that the isolation
// exists for: that process dies like a crashed one (fuzz/crash_attribution
// holds the rule). Built without ASan (TOUCHSTONE_FUZZ_SANITIZERS=undefined,
// for counted runs), fatal signals are classified the same way by their
// stack.
#include <fcntl.h>
#include <execinfo.h>
#include <pthread.h>
#include <sanitizer/common_interface_defs.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#include <sanitizer/asan_interface.h>
#define TS_FUZZ_ASAN 1
#endif
#endif

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <map>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "core/error.hpp"
#include "fixtures/fixture.hpp"
#include "crash_attribution.hpp"
#include "persistent_worker.hpp"

namespace {
constexpr int kSanitizerExit = 86;

bool g_library_fault = false;

// The report's stack decides (fuzz/crash_attribution: whose frames).
#ifdef TS_FUZZ_ASAN
void classify_report(const char* report) { g_library_fault = ts::fuzz::library_fault(ts::fuzz::report_stack(report)); }
#endif

// Dies like a crashed child. This runs inside ASan's SIGSEGV handler when
// the report was a SEGV, where SIGSEGV is blocked: unblock it first.
void child_death() {
  if (g_library_fault) {
    ::signal(SIGSEGV, SIG_DFL);
    sigset_t segv;
    sigemptyset(&segv);
    sigaddset(&segv, SIGSEGV);
    ::pthread_sigmask(SIG_UNBLOCK, &segv, nullptr);
    ::raise(SIGSEGV);
  }
  ::_exit(kSanitizerExit);
}
// A fatal signal without a sanitizer report (any SIGABRT; every signal in a
// build without ASan, whose own handlers would otherwise report it) is
// classified by its stack the same way.
// Nothing here allocates: the heap may be what libhdf5 damaged (a free() in
// this handler once aborted on it, and the abort's stack, which runs through
// this handler, then read as touchstone's).
void on_fatal_signal(int sig) {
  void* frames[64];
  const int n = ::backtrace(frames, 64);
  g_library_fault = n > 1 && ts::fuzz::library_fault(frames + 1, static_cast<size_t>(n - 1));
  if (!g_library_fault) {
    char line[96];
    const int len = std::snprintf(line, sizeof line, "fuzz_fixture: signal %d in touchstone's own code:\n", sig);
    if (len > 0) (void)!::write(2, line, static_cast<size_t>(len));
    ::backtrace_symbols_fd(frames, n, 2);
  }
  child_death();
}
void in_child() {
#ifdef TS_FUZZ_ASAN
  __asan_set_error_report_callback(classify_report);
  const std::initializer_list<int> own = {SIGABRT};
#else
  const std::initializer_list<int> own = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT};
#endif
  __sanitizer_set_death_callback(child_death);
  // glibc loads the unwinder (dlopen, malloc) on the first backtrace(): not in the handler.
  void* warm[1];
  (void)::backtrace(warm, 1);
  for (int sig : own) {
    struct sigaction sa {};
    sa.sa_handler = on_fatal_signal;
    sa.sa_flags = SA_RESETHAND | SA_NODEFER;
    ::sigaction(sig, &sa, nullptr);
  }
}

// The product's child caps its address space so that a corrupt size fails an
// allocation; the worker does the same (ASan reserves terabytes of shadow
// up front and refuses huge allocations itself).
void limit_worker_memory() {
#ifndef TS_FUZZ_ASAN
  std::ifstream statm("/proc/self/statm");
  unsigned long long pages = 0;
  if (!(statm >> pages)) return;
  const unsigned long long budget = pages * static_cast<unsigned long long>(::sysconf(_SC_PAGESIZE)) + (4ull << 30);
  struct rlimit lim {budget, budget};
  ::setrlimit(RLIMIT_AS, &lim);
#endif
}

struct Scratch {
  std::string path;
  Scratch() {
    const std::filesystem::path dir =
        std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : std::filesystem::temp_directory_path();
    path = (dir / ("ts_fuzz_fixture_" + std::to_string(::getpid()) + ".h5")).string();
  }
  ~Scratch() { std::remove(path.c_str()); }
};

ts::LoadOptions load_options() {
  ts::LoadOptions opts;
  opts.load_block = true;
  return opts;
}

// A valid input reads in a few milliseconds (tens under ASan); libhdf5's
// endless loop on a corrupt global heap (H5HG deserialisation) meets about
// one mutated input in twenty, so the limit is short: a slow valid read
// taken for a loop costs only a new worker. TS_FUZZ_WORKER_TIMEOUT_S sets it.
double worker_timeout_s() {
  const char* v = std::getenv("TS_FUZZ_WORKER_TIMEOUT_S");
  const double s = v ? std::atof(v) : 0.0;
#ifdef TS_FUZZ_ASAN
  return s > 0 ? s : 0.5;
#else
  return s > 0 ? s : 0.05;
#endif
}

// What this process is waiting on, for the watchdog: every step below has a
// limit of its own (the worker's timeout, the product's stall limit, the
// judge's), so one that lasts a minute is a finding of its own, and a fuzzer
// stuck without a word is one nobody can triage: the watchdog names the step
// and aborts, so that libFuzzer keeps the input.
enum Phase : int { kIdle, kWorker, kJudge, kIsolatedRead };
std::atomic<int> g_phase{kIdle};
std::atomic<long long> g_phase_since{0};
constexpr int kStuckS = 60;

long long now_s() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
struct InPhase {
  int before;
  explicit InPhase(Phase p) : before(g_phase.exchange(p)) { g_phase_since = now_s(); }
  ~InPhase() {
    g_phase = before;
    g_phase_since = now_s();
  }
};
void start_watchdog() {
  // libFuzzer's -timeout is a SIGALRM that only its own thread may take.
  sigset_t alarm, before;
  sigemptyset(&alarm);
  sigaddset(&alarm, SIGALRM);
  ::pthread_sigmask(SIG_BLOCK, &alarm, &before);
  std::thread([] {
    static const char* const names[] = {"idle", "the persistent worker", "the ASan judge",
                                        "the product's isolated read"};
    for (;;) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      const int p = g_phase;
      if (p != kIdle && now_s() - g_phase_since > kStuckS) {
        std::fprintf(stderr, "fuzz_fixture: stuck for %d s in %s (a finding: each has a shorter limit)\n", kStuckS,
                     names[p]);
        std::abort();
      }
    }
  }).detach();
  ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
}

// Without ASan, libhdf5's out-of-bounds writes on a corrupt file go unseen
// until glibc or touchstone trips over the damaged heap later ("free():
// invalid pointer" in a destructor of ours). Such a death, in the worker or
// in the product's isolated read, is handed to the ASan build of this target
// (TS_FUZZ_ASAN_JUDGE, its path), which sees the library's write where it
// happens: its clean exit means the fault was libhdf5's. Without a judge
// every such death is a finding.
bool asan_judges_library_fault(const std::string& input) {
#ifdef TS_FUZZ_ASAN
  (void)input;
  return false;
#else
  const char* judge = std::getenv("TS_FUZZ_ASAN_JUDGE");
  if (!judge || !*judge) return false;
  // Its reports of the library's faults would bury the findings in the log:
  // they are kept aside and printed only when it does not clear the input.
  const InPhase phase(kJudge);
  const std::string said = input + ".judge";
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setenv("TS_FUZZ_WORKER_TIMEOUT_S", "5", 1);
    ::unsetenv("GLIBC_TUNABLES");
    const int null = ::open("/dev/null", O_WRONLY);
    if (null >= 0) ::dup2(null, 1);
    const int err = ::open(said.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (err >= 0) ::dup2(err, 2);
    ::execl(judge, judge, "-detect_leaks=0", "-runs=1", input.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int st = 0;
  while (pid > 0 && ::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
  }
  const bool library = pid > 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
  if (!library) {
    std::ifstream in(said);
    std::fprintf(stderr, "%s", std::string(std::istreambuf_iterator<char>(in), {}).c_str());
  }
  std::remove(said.c_str());
  std::fprintf(stderr, "fuzz_fixture: the ASan build %s this death\n", library ? "puts libhdf5 behind" : "does not clear");
  return library;
#endif
}

bool names_sanitizer_exit(const std::string& what) {
  return what.find("exit status " + std::to_string(kSanitizerExit)) != std::string::npos;
}

struct Tally {
  long inputs = 0, library_crashes = 0, hangs = 0, confirmed = 0, not_reproduced = 0, judged_library = 0;
  std::map<std::string, long> deaths;
  ~Tally() {
    std::fprintf(stderr,
                 "fuzz_fixture: %ld inputs in the worker; libhdf5 crashed it %ld times and hung it %ld times; "
                 "%ld of those inputs given to the product's isolated read, all InputErrors but %ld that "
                 "passed there\n",
                 inputs, library_crashes, hangs, confirmed, not_reproduced);
    if (judged_library)
      std::fprintf(stderr, "fuzz_fixture: %ld deaths in touchstone's frames put on libhdf5's heap damage by the ASan build\n",
                   judged_library);
    for (const auto& [how, n] : deaths) std::fprintf(stderr, "fuzz_fixture: worker deaths by %s: %ld\n", how.c_str(), n);
  }
};

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  ::pthread_atfork(nullptr, nullptr, in_child);
  start_watchdog();
  // The product's isolated read stops a stuck libhdf5 well inside
  // libFuzzer's -timeout; so does the worker's own limit. A valid read steps
  // (an object, an attribute, a slab) every few milliseconds (tens under
  // ASan); a stall taken for a loop only makes another InputError.
#ifdef TS_FUZZ_ASAN
  ::setenv("TOUCHSTONE_READ_STALL_S", "0.25", 0);
#else
  ::setenv("TOUCHSTONE_READ_STALL_S", "0.1", 0);
#endif
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const Scratch scratch;
  static Tally tally;
  const std::string& path = scratch.path;
  static ts::fuzz::PersistentWorker worker(
      []() -> std::pair<char, std::string> {
        static const bool once = [] {
          ts::set_isolated_reads(false);
          limit_worker_memory();
          return true;
        }();
        (void)once;
        try {
          (void)ts::validate_fixture(scratch.path, load_options());
          return {'0', ""};
        } catch (const ts::InputError& e) {
          return {'I', e.what()};
        } catch (const std::bad_alloc&) {
          return {'M', ""};
        } catch (const std::exception& e) {
          return {'X', e.what()};
        }
      },
      worker_timeout_s());
  {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  }
  ++tally.inputs;
  ts::fuzz::PersistentWorker::Outcome outcome;
  {
    const InPhase phase(kWorker);
    outcome = worker.run();
  }
  switch (outcome) {
    case ts::fuzz::PersistentWorker::Outcome::kDone:
      if (worker.status() == 'X') {
        std::fprintf(stderr, "fuzz_fixture: not an InputError: %s\n", worker.message().c_str());
        std::abort();
      }
      return 0;
    case ts::fuzz::PersistentWorker::Outcome::kDied: {
      // Any other death is libhdf5's crash or an allocation past libFuzzer's
      // -malloc_limit_mb, which the product's child meets as a memory limit.
      const int st = worker.wait_status();
      if (WIFEXITED(st) && WEXITSTATUS(st) == kSanitizerExit) {
        if (!asan_judges_library_fault(scratch.path)) {
          std::fprintf(stderr, "fuzz_fixture: a sanitizer report in the worker (above)\n");
          std::abort();
        }
        ++tally.judged_library;
      }
      ++tally.library_crashes;
      ++tally.deaths[WIFSIGNALED(st) ? "signal " + std::to_string(WTERMSIG(st))
                                      : "exit " + std::to_string(WEXITSTATUS(st))];
      break;
    }
    case ts::fuzz::PersistentWorker::Outcome::kHung:
      ++tally.hangs;
      // For triage: which libhdf5 loop (or slow read) this was.
      if (const char* dir = std::getenv("TS_FUZZ_HANG_DIR")) {
        std::ofstream keep(std::string(dir) + "/hang-" + std::to_string(tally.hangs) + ".h5", std::ios::binary);
        keep.write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
      }
      break;
  }
  // libhdf5 crashed or looped on this input: the product must turn it into
  // one InputError through its isolated read. That costs a fork of this large
  // process and, for a loop, the product's stall limit, so after the first
  // ones a sample is checked (the product's side has its own tests).
  const long events = tally.library_crashes + tally.hangs;
  if (events > 50 && events % 50 != 0) return 0;
  ++tally.confirmed;
  try {
    const InPhase phase(kIsolatedRead);
    ts::set_isolated_reads(true);
    (void)ts::validate_fixture(path, load_options());
    ++tally.not_reproduced;
  } catch (const ts::InputError& e) {
    // The product's child meets the same heap damage as the worker (seen on
    // the GPU machine: a UBSan report in std::construct_at after libhdf5's
    // overlapping memcpy in H5HG_read), so the ASan build judges it the same way.
    if (names_sanitizer_exit(e.what())) {
      if (!asan_judges_library_fault(path)) {
        std::fprintf(stderr, "fuzz_fixture: a sanitizer report in the isolated read: %s\n", e.what());
        std::abort();
      }
      ++tally.judged_library;
    }
  }
  return 0;
}
