#include "drivers/batch_workers.hpp"

#include <fcntl.h>
#include <omp.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <filesystem>
#include <sstream>
#include <thread>

#include "core/error.hpp"
#include "core/write_file.hpp"

namespace ts {
namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep))
    if (!item.empty()) out.push_back(item);
  return out;
}

// GPUs this process may use: CUDA_VISIBLE_DEVICES when set, else the lines
// of `nvidia-smi -L` (none when it is absent or fails).
std::vector<std::string> visible_gpus() {
  if (const char* v = std::getenv("CUDA_VISIBLE_DEVICES")) return split(v, ',');
  std::vector<std::string> out;
  FILE* p = ::popen("nvidia-smi -L 2>/dev/null", "r");
  if (!p) return out;
  char line[512];
  int n = 0;
  while (std::fgets(line, sizeof line, p))
    if (std::strncmp(line, "GPU ", 4) == 0) out.push_back(std::to_string(n++));
  if (::pclose(p) != 0) out.clear();
  return out;
}

int machine_threads() {
  if (const char* v = std::getenv("OMP_NUM_THREADS")) {
    const int n = std::atoi(v);
    if (n > 0) return n;
  }
  const unsigned h = std::thread::hardware_concurrency();
  return h ? static_cast<int>(h) : 1;
}

std::string signal_words(int sig) {
  const char* d = ::strsignal(sig);
  return "signal " + std::to_string(sig) + " (" + (d ? d : "?") + ")";
}

struct Running {
  pid_t pid = 0;
  size_t slot = 0;
  WorkUnit unit;
  bool retry = false;  // a case run alone after its unit's worker died
};

pid_t spawn(const BatchPlan& plan, const WorkUnit& u, const WorkerSlot& slot, size_t slot_index,
            const LocalRunOptions& o) {
  std::string ids;
  for (size_t i : u.cases) ids += (ids.empty() ? "" : ",") + plan.cases[i].id;
  const std::string exe = o.exe.empty() ? "/proc/self/exe" : o.exe;
  const std::string label = "w" + std::to_string(slot_index);
  // The worker reads the expanded plan the parent wrote (no second validation
  // of every fixture and spec: that would be most of a small case's cost).
  const std::string plan_file = (std::filesystem::path(o.results_dir) / (".plan-" + plan.digest + ".json")).string();
  std::vector<std::string> args = {"touchstone",      "batch",       plan.path,    "--worker",
                                   ids,               "--results",   o.results_dir, "--worker-digest",
                                   plan.digest,       "--worker-plan", plan_file,  "--worker-label",
                                   o.label + ":" + label};
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) throw InternalError(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    if (!slot.cuda_visible_devices.empty()) ::setenv("CUDA_VISIBLE_DEVICES", slot.cuda_visible_devices.c_str(), 1);
    ::setenv("OMP_NUM_THREADS", std::to_string(slot.threads).c_str(), 1);
    ::setenv("TOUCHSTONE_NO_PROGRESS", "1", 1);
    // The worker's stdout is its parent's business only through the records.
    const int devnull = ::open("/dev/null", O_WRONLY);
    if (devnull >= 0) ::dup2(devnull, STDOUT_FILENO);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    ::execv(exe.c_str(), argv.data());
    std::fprintf(stderr, "touchstone batch: cannot run %s: %s\n", exe.c_str(), std::strerror(errno));
    ::_exit(127);
  }
  return pid;
}

}  // namespace

std::vector<WorkerSlot> default_slots(int workers) {
  const std::vector<std::string> gpus = visible_gpus();
  const int n = workers > 0 ? workers : std::max<int>(1, static_cast<int>(gpus.size()));
  const int threads = std::max(1, machine_threads() / n);
  std::vector<WorkerSlot> slots(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    slots[static_cast<size_t>(i)].threads = threads;
    if (!gpus.empty()) slots[static_cast<size_t>(i)].cuda_visible_devices = gpus[static_cast<size_t>(i) % gpus.size()];
  }
  return slots;
}

std::string bind_local_rank() {
  const char* lr = nullptr;
  for (const char* v : {"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID"})
    if (!lr) lr = std::getenv(v);
  if (!lr) return "";
  const int local = std::atoi(lr);
  const char* ls = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  const int local_size = ls ? std::max(1, std::atoi(ls)) : 1;
  std::string what;
  if (!std::getenv("CUDA_VISIBLE_DEVICES")) {
    const std::vector<std::string> gpus = visible_gpus();
    if (!gpus.empty()) {
      const std::string g = gpus[static_cast<size_t>(local) % gpus.size()];
      ::setenv("CUDA_VISIBLE_DEVICES", g.c_str(), 1);
      what = "CUDA_VISIBLE_DEVICES=" + g;
    }
  }
  if (!std::getenv("OMP_NUM_THREADS") && local_size > 1) {
    // libgomp read the environment when it loaded: set the count directly.
    const int n = std::max(1, machine_threads() / local_size);
    omp_set_num_threads(n);
    what += (what.empty() ? "" : ", ") + std::to_string(n) + " threads";
  }
  return what;
}

std::map<std::string, std::string> run_local(const BatchPlan& plan, const std::vector<WorkUnit>& units,
                                             const std::set<std::string>& skip, const LocalRunOptions& o) {
  std::map<std::string, std::string> missing;
  // Largest first, so the long units do not start last.
  std::vector<WorkUnit> todo;
  for (const auto& u : units) {
    WorkUnit w;
    for (size_t i : u.cases)
      if (!skip.count(plan.cases[i].id)) w.cases.push_back(i);
    if (w.cases.empty()) continue;
    w.cost_s = u.cost_s;
    todo.push_back(std::move(w));
  }
  std::stable_sort(todo.begin(), todo.end(), [](const WorkUnit& a, const WorkUnit& b) { return a.cost_s > b.cost_s; });
  std::deque<std::pair<WorkUnit, bool>> queue;
  double total_cost = 0, done_cost = 0;
  size_t total_cases = 0, done_cases = 0, lost = 0;
  for (auto& u : todo) {
    total_cost += u.cost_s;
    total_cases += u.cases.size();
    queue.emplace_back(std::move(u), false);
  }
  write_file_atomic((std::filesystem::path(o.results_dir) / (".plan-" + plan.digest + ".json")).string(),
                    plan.to_json().dump());
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<Running> running;
  std::vector<bool> busy(o.slots.size(), false);
  auto start_next = [&]() {
    for (size_t s = 0; s < o.slots.size() && !queue.empty(); ++s) {
      if (busy[s]) continue;
      auto [u, retry] = std::move(queue.front());
      queue.pop_front();
      Running r;
      r.pid = spawn(plan, u, o.slots[s], s, o);
      r.slot = s;
      r.unit = std::move(u);
      r.retry = retry;
      busy[s] = true;
      running.push_back(std::move(r));
    }
  };
  start_next();
  while (!running.empty()) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      throw InternalError(std::string("waitpid failed: ") + std::strerror(errno));
    }
    const auto it = std::find_if(running.begin(), running.end(), [&](const Running& r) { return r.pid == pid; });
    if (it == running.end()) continue;  // not ours
    Running r = std::move(*it);
    running.erase(it);
    busy[r.slot] = false;
    std::vector<size_t> without;
    for (size_t i : r.unit.cases)
      if (!read_result(o.results_dir, plan, plan.cases[i])) without.push_back(i);
    const bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
    if (!without.empty()) {
      std::string how = WIFSIGNALED(status) ? "died on " + signal_words(WTERMSIG(status))
                        : WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status)) + " and no result"
                                            : "stopped";
      if (clean) how = "finished without writing a result";
      if (without.size() > 1 || (!r.retry && r.unit.cases.size() > 1)) {
        // Which case killed it is not known: each runs again alone.
        for (size_t i : without) queue.emplace_front(WorkUnit{{i}, plan.cases[i].cost_s + plan.group_cost_s[i]}, true);
      } else {
        const BatchCase& c = plan.cases[without.front()];
        BatchRecord nr;
        nr.id = c.id;
        nr.key = c.key;
        nr.digest = plan.digest;
        nr.reason = "its worker (pid " + std::to_string(pid) + ") " + how + " while judging it";
        nr.execution = {{"mode", o.label}, {"worker", "w" + std::to_string(r.slot)}, {"host", host_name()}};
        write_result(o.results_dir, nr);
        missing[c.id] = nr.reason;
        ++lost;
        done_cases += 1;
        done_cost += c.cost_s + plan.group_cost_s[without.front()];
      }
    }
    done_cases += r.unit.cases.size() - without.size();
    if (without.empty()) done_cost += r.unit.cost_s;
    if (o.progress) {
      const double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::fprintf(stderr, "touchstone batch: %zu/%zu cases done (%zu not judged), %zu worker(s), %s elapsed",
                   done_cases, total_cases, lost, o.slots.size(), format_duration(el).c_str());
      if (done_cost > 0 && done_cases < total_cases)
        std::fprintf(stderr, ", about %s left", format_duration(el * std::max(0.0, total_cost - done_cost) / done_cost).c_str());
      std::fprintf(stderr, "\n");
    }
    start_next();
  }
  return missing;
}

void run_worker(const BatchPlan& plan, const std::vector<std::string>& ids, const std::string& results_dir,
                const nlohmann::json& execution) {
  WorkUnit u;
  for (const auto& id : ids) {
    const auto it = std::find_if(plan.cases.begin(), plan.cases.end(), [&](const BatchCase& c) { return c.id == id; });
    if (it == plan.cases.end()) throw InputError("--worker: the plan has no case " + id);
    u.cases.push_back(static_cast<size_t>(it - plan.cases.begin()));
    inject_fault_for_case(id);
  }
  for (const auto& r : judge_unit(plan, u, execution)) write_result(results_dir, r);
}

void inject_fault_for_case(const std::string& id) {
  const char* f = std::getenv("TOUCHSTONE_BATCH_FAULT");
  if (f && std::string(f) == "crash:" + id) ::raise(SIGSEGV);
}

void inject_fault_for_rank(int rank, int units_done) {
  const char* f = std::getenv("TOUCHSTONE_BATCH_FAULT");
  if (!f) return;
  int r = -1, k = -1;
  if (std::sscanf(f, "rank:%d:after:%d", &r, &k) == 2 && r == rank && units_done >= k) ::raise(SIGKILL);
}

}  // namespace ts
