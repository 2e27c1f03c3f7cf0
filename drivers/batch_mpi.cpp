#include "drivers/batch_mpi.hpp"

#include <cstdlib>

#include "core/error.hpp"

#ifdef TOUCHSTONE_HAVE_MPI
#include <mpi.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <thread>

#include "drivers/batch_workers.hpp"
#endif

namespace ts {

bool mpi_launched() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"})
    if (std::getenv(v)) return true;
  return false;
}

#ifndef TOUCHSTONE_HAVE_MPI

bool mpi_built() { return false; }
MpiOutcome run_mpi(const BatchPlan&, const MpiRunOptions&) {
  throw InputError("this touchstone was built without MPI (cmake -DTOUCHSTONE_MPI=ON with libopenmpi-dev installed)");
}
void mpi_finish(const MpiOutcome&, int) {}

#else

namespace {

constexpr int kTagResults = 1;
constexpr int kTagHeartbeat = 2;
constexpr double kHeartbeatS = 1.0;

using SteadyClock = std::chrono::steady_clock;

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  throw InternalError(std::string(what) + ": " + std::string(msg, static_cast<size_t>(len)));
}

// Sends a byte to `to` every kHeartbeatS until stopped, so that the other
// side can tell a rank that is busy from one that is gone.
class Heartbeat {
 public:
  explicit Heartbeat(std::vector<int> to) : to_(std::move(to)) {
    thread_ = std::thread([this] {
      // Non-blocking, and at most one in flight a peer: a send to a dead rank
      // must neither block this thread nor pile up.
      static const char b = 1;
      std::vector<MPI_Request> req(to_.size(), MPI_REQUEST_NULL);
      while (!stop_) {
        for (size_t i = 0; i < to_.size(); ++i) {
          int done = 1;
          if (req[i] != MPI_REQUEST_NULL && MPI_Test(&req[i], &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) continue;
          if (done) MPI_Isend(&b, 1, MPI_CHAR, to_[i], kTagHeartbeat, MPI_COMM_WORLD, &req[i]);
        }
        for (int i = 0; i < 10 && !stop_; ++i) std::this_thread::sleep_for(std::chrono::duration<double>(kHeartbeatS / 10));
      }
      for (auto& r : req)
        if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
    });
  }
  ~Heartbeat() { stop(); }
  void stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::vector<int> to_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// Drains heartbeats from `from`; true when one came.
bool drain_heartbeats(int from) {
  bool got = false;
  while (true) {
    int flag = 0;
    MPI_Status st;
    if (MPI_Iprobe(from, kTagHeartbeat, MPI_COMM_WORLD, &flag, &st) != MPI_SUCCESS || !flag) return got;
    char b;
    if (MPI_Recv(&b, 1, MPI_CHAR, from, kTagHeartbeat, MPI_COMM_WORLD, MPI_STATUS_IGNORE) != MPI_SUCCESS) return got;
    got = true;
  }
}

}  // namespace

bool mpi_built() { return true; }

MpiOutcome run_mpi(const BatchPlan& plan, const MpiRunOptions& o) {
  int provided = 0;
  check(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided), "MPI_Init_thread");
  // Errors come back as codes: a dead peer must not abort the survivors.
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MpiOutcome out;
  MPI_Comm_rank(MPI_COMM_WORLD, &out.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &out.size);
  out.root = out.rank == 0;
  if (provided < MPI_THREAD_MULTIPLE)
    throw InputError("the MPI library gives no MPI_THREAD_MULTIPLE (heartbeats need it)");

  // Every rank expanded the plan itself: they must agree, or shards would overlap.
  char digest[17] = {0};
  std::snprintf(digest, sizeof digest, "%s", plan.digest.c_str());
  char root_digest[17] = {0};
  std::memcpy(root_digest, digest, sizeof digest);
  check(MPI_Bcast(root_digest, 17, MPI_CHAR, 0, MPI_COMM_WORLD), "MPI_Bcast");
  if (std::string(root_digest) != plan.digest)
    throw InputError(plan.path + ": rank " + std::to_string(out.rank) + " expanded the plan to digest " + plan.digest +
                     ", rank 0 to " + root_digest + " (different files or folders?)");

  const auto units = work_units(plan, out.size);
  const auto shard_of = assign_shards(units, out.size);
  std::vector<std::vector<std::string>> assigned(static_cast<size_t>(out.size));
  for (size_t u = 0; u < units.size(); ++u)
    for (size_t i : units[u].cases) assigned[static_cast<size_t>(shard_of[u])].push_back(plan.cases[i].id);
  for (const auto& id : assigned[static_cast<size_t>(out.rank)])
    if (!o.skip.count(id)) {
      std::error_code ec;
      std::filesystem::remove(std::filesystem::path(o.results_dir) / (id + ".json"), ec);
    }

  std::vector<int> beat_to;
  if (out.root)
    for (int r = 1; r < out.size; ++r) beat_to.push_back(r);
  else
    beat_to.push_back(0);
  Heartbeat beat(beat_to);

  // This rank's share, in process (a crash here is the rank's death).
  const nlohmann::json exec = {{"mode", "mpi"}, {"rank", out.rank}, {"size", out.size}};
  std::map<std::string, BatchRecord> mine;
  int done_units = 0;
  const auto t0 = SteadyClock::now();
  for (size_t u = 0; u < units.size(); ++u) {
    if (shard_of[u] != out.rank) continue;
    WorkUnit w;
    for (size_t i : units[u].cases)
      if (!o.skip.count(plan.cases[i].id)) w.cases.push_back(i);
    if (!w.cases.empty())
      for (auto& r : judge_unit(plan, w, exec)) {
        write_result(o.results_dir, r);
        mine.emplace(r.id, std::move(r));
      }
    inject_fault_for_rank(out.rank, ++done_units);
    if (o.progress)
      std::fprintf(stderr, "touchstone batch: rank %d/%d: %zu of %zu cases, %s\n", out.rank, out.size, mine.size(),
                   assigned[static_cast<size_t>(out.rank)].size(),
                   format_duration(std::chrono::duration<double>(SteadyClock::now() - t0).count()).c_str());
  }

  if (!out.root) {
    nlohmann::json bundle = nlohmann::json::array();
    for (const auto& [id, r] : mine) bundle.push_back(r.to_json());
    const std::string text = bundle.dump();
    MPI_Request req;
    check(MPI_Isend(text.data(), static_cast<int>(text.size()), MPI_CHAR, 0, kTagResults, MPI_COMM_WORLD, &req),
          "MPI_Isend");
    // Rank 0 takes it when its own share is done; meanwhile its heartbeats say it lives.
    auto last = SteadyClock::now();
    while (true) {
      int flag = 0;
      if (MPI_Test(&req, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) break;
      if (flag) break;
      if (drain_heartbeats(0)) last = SteadyClock::now();
      if (std::chrono::duration<double>(SteadyClock::now() - last).count() > o.rank_timeout_s) {
        std::fprintf(stderr, "touchstone batch: rank %d: rank 0 silent for %.0f s; its records are in %s\n", out.rank,
                     o.rank_timeout_s, o.results_dir.c_str());
        out.peers_lost = true;
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    beat.stop();
    return out;
  }

  // Rank 0: gather every peer's records, or give it up after rank_timeout_s
  // without a heartbeat.
  std::map<std::string, BatchRecord> all = mine;
  std::map<std::string, std::string> missing;
  std::vector<bool> done(static_cast<size_t>(out.size), false);
  std::vector<SteadyClock::time_point> last(static_cast<size_t>(out.size), SteadyClock::now());
  done[0] = true;
  int open = out.size - 1;
  while (open > 0) {
    for (int r = 1; r < out.size; ++r) {
      if (done[static_cast<size_t>(r)]) continue;
      if (drain_heartbeats(r)) last[static_cast<size_t>(r)] = SteadyClock::now();
      int flag = 0;
      MPI_Status st;
      if (MPI_Iprobe(r, kTagResults, MPI_COMM_WORLD, &flag, &st) == MPI_SUCCESS && flag) {
        int n = 0;
        MPI_Get_count(&st, MPI_CHAR, &n);
        std::string text(static_cast<size_t>(n), '\0');
        if (MPI_Recv(text.data(), n, MPI_CHAR, r, kTagResults, MPI_COMM_WORLD, MPI_STATUS_IGNORE) == MPI_SUCCESS) {
          for (const auto& j : nlohmann::json::parse(text)) {
            BatchRecord c = BatchRecord::from_json(j, "rank " + std::to_string(r));
            if (c.digest == plan.digest) all[c.id] = c;
          }
          done[static_cast<size_t>(r)] = true;
          --open;
          continue;
        }
      }
      const double silent = std::chrono::duration<double>(SteadyClock::now() - last[static_cast<size_t>(r)]).count();
      if (silent > o.rank_timeout_s) {
        done[static_cast<size_t>(r)] = true;
        --open;
        out.peers_lost = true;
        char why[160];
        std::snprintf(why, sizeof why, "rank %d of %d did not report it: no heartbeat for %.0f s (the rank died or hung)",
                      r, out.size, silent);
        for (const auto& id : assigned[static_cast<size_t>(r)]) missing[id] = why;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  beat.stop();
  // What a lost rank finished before it died is on disk when the folder is shared.
  for (auto& [id, r] : read_results(o.results_dir, plan))
    if (!all.count(id) || (!all[id].run && r.run)) all[id] = r;
  const double wall = std::chrono::duration<double>(SteadyClock::now() - t0).count();
  out.report = assemble_report(plan, all, missing,
                               {{"mode", "mpi"}, {"ranks", out.size}, {"host", host_name()}, {"wall_s", wall},
                                {"ranks_lost", out.peers_lost}});
  return out;
}

void mpi_finish(const MpiOutcome& o, int code) {
  int init = 0, fin = 0;
  MPI_Initialized(&init);
  MPI_Finalized(&fin);
  if (!init || fin) return;
  // MPI_Finalize would wait for the dead, and mpirun for a clean exit: the
  // report is written, so end the job with its exit code.
  if (o.peers_lost) MPI_Abort(MPI_COMM_WORLD, code);
  MPI_Finalize();
}

#endif

}  // namespace ts
