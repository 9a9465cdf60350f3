#include "search/mpi_runner.h"

#include <fmt/core.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>

#include "search/checkpoint.h"

#ifdef POWERTRAIN_HAVE_MPI
// The C API only: OpenMPI's deprecated C++ bindings do not compile cleanly with -Wextra.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

namespace powertrain::search {
namespace {

// Launched by mpirun/mpiexec (OpenMPI, or PMI/PMIx launchers)?
int launched_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"}) {
    if (const char* v = std::getenv(name); v != nullptr && *v != '\0') return std::atoi(v);
  }
  return 0;
}

// Evaluates trials from the shared queue until it is empty (one thread's share).
void drain_queue(std::vector<TrialResult>& batch, const std::vector<std::size_t>& todo,
                 std::atomic<std::size_t>& next, const TrialFunction& evaluate,
                 const std::function<void(std::size_t)>& on_done, std::mutex& done_mutex) {
  for (std::size_t k = next++; k < todo.size(); k = next++) {
    const std::size_t i = todo[k];
    TrialResult r = evaluate(batch[i]);
    std::lock_guard<std::mutex> lock(done_mutex);
    batch[i] = std::move(r);
    if (on_done) on_done(i);
  }
}

// Local trials: threads pull from the shared queue until it is empty.
void run_local(std::vector<TrialResult>& batch, const std::vector<std::size_t>& todo,
               std::atomic<std::size_t>& next, int threads, const TrialFunction& evaluate,
               const std::function<void(std::size_t)>& on_done, std::mutex& done_mutex,
               std::vector<std::thread>& pool) {
  auto work = [&]() { drain_queue(batch, todo, next, evaluate, on_done, done_mutex); };
  for (int t = 0; t < threads; ++t) pool.emplace_back(work);
}

#ifdef POWERTRAIN_HAVE_MPI
constexpr int kTagTask = 1;
constexpr int kTagResult = 2;
constexpr int kTagStop = 3;

// Waits for a message without spinning a core (OpenMPI's blocking receive busy-polls, which
// would take the CPU from the trials running beside it).
bool wait_message(int source, int tag, MPI_Status* status, bool block) {
  while (true) {
    int flag = 0;
    MPI_Iprobe(source, tag, MPI_COMM_WORLD, &flag, status);
    if (flag) return true;
    if (!block) return false;
    std::this_thread::sleep_for(std::chrono::microseconds(500));
  }
}

std::string receive_string(const MPI_Status& probed) {
  int count = 0;
  MPI_Get_count(&probed, MPI_CHAR, &count);
  std::string text(static_cast<std::size_t>(std::max(count, 0)), '\0');
  MPI_Recv(text.data(), count, MPI_CHAR, probed.MPI_SOURCE, probed.MPI_TAG, MPI_COMM_WORLD,
           MPI_STATUS_IGNORE);
  return text;
}

void send_string(const std::string& text, int dest, int tag) {
  MPI_Send(text.data(), static_cast<int>(text.size()), MPI_CHAR, dest, tag, MPI_COMM_WORLD);
}

// "index\n" + encoded trial.
std::string frame(std::size_t index, const TrialResult& trial) {
  return fmt::format("{}\n{}", index, encode_trial(trial));
}

bool unframe(const std::string& text, std::size_t* index, TrialResult* trial, std::string* error) {
  const std::size_t newline = text.find('\n');
  if (newline == std::string::npos) {
    *error = "MPI message without a trial index";
    return false;
  }
  *index = static_cast<std::size_t>(std::strtoull(text.c_str(), nullptr, 10));
  auto decoded = decode_trial(std::string_view(text).substr(newline + 1), "MPI message");
  if (!decoded) {
    *error = decoded.error().message;
    return false;
  }
  *trial = std::move(*decoded);
  return true;
}
#endif

}  // namespace

bool mpi_compiled() {
#ifdef POWERTRAIN_HAVE_MPI
  return true;
#else
  return false;
#endif
}

core::Result<MpiWorld> mpi_start() {
  MpiWorld world;
  const int size = launched_size();
  if (size <= 0) return world;
#ifdef POWERTRAIN_HAVE_MPI
  int provided = 0;
  if (MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
    return core::Error{"MPI_Init_thread failed"};
  MPI_Comm_rank(MPI_COMM_WORLD, &world.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &world.size);
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
  MPI_Comm_size(local, &world.local_size);
  MPI_Comm_free(&local);
  world.active = true;
  return world;
#else
  if (size > 1)
    return core::Error{
        fmt::format("launched as {} MPI ranks, but this powertrain was built without MPI (install "
                    "libopenmpi-dev and re-run cmake); run it without mpirun to use threads",
                    size)};
  return world;
#endif
}

void mpi_finish(const MpiWorld& world) {
#ifdef POWERTRAIN_HAVE_MPI
  if (world.active) MPI_Finalize();
#else
  (void)world;
#endif
}

void distribute_trials(const MpiWorld& world, std::vector<TrialResult>& batch,
                       const std::vector<std::size_t>& todo, int threads,
                       const TrialFunction& evaluate,
                       const std::function<void(std::size_t)>& on_done) {
  if (todo.empty()) return;
  std::atomic<std::size_t> next{0};
  std::mutex done_mutex;
  std::vector<std::thread> pool;
  const bool remote = world.active && world.size > 1 && world.rank == 0;
  if (!remote) {
    // Threads only; the calling thread is one of them.
    const int extra =
        std::clamp(threads, 1, static_cast<int>(std::min<std::size_t>(todo.size(), 256))) - 1;
    run_local(batch, todo, next, extra, evaluate, on_done, done_mutex, pool);
    drain_queue(batch, todo, next, evaluate, on_done, done_mutex);
    for (auto& t : pool) t.join();
    return;
  }
#ifdef POWERTRAIN_HAVE_MPI
  // Rank 0: local threads evaluate; this thread feeds the workers one trial at a time from the
  // same queue and collects their results (it alone calls MPI).
  run_local(batch, todo, next, std::max(threads, 1), evaluate, on_done, done_mutex, pool);
  int outstanding = 0;
  auto give = [&](int worker) {
    const std::size_t k = next++;
    if (k >= todo.size()) return false;
    send_string(frame(todo[k], batch[todo[k]]), worker, kTagTask);
    ++outstanding;
    return true;
  };
  for (int w = 1; w < world.size; ++w)
    if (!give(w)) break;
  while (outstanding > 0) {
    MPI_Status status;
    wait_message(MPI_ANY_SOURCE, kTagResult, &status, true);
    const std::string text = receive_string(status);
    --outstanding;
    std::size_t index = 0;
    TrialResult result;
    std::string error;
    if (unframe(text, &index, &result, &error) && index < batch.size()) {
      std::lock_guard<std::mutex> lock(done_mutex);
      batch[index] = std::move(result);
      if (on_done) on_done(index);
    } else {
      // Not expected between ranks of one build; stop rather than guess which trial it was.
      fmt::print(stderr, "powertrain search: error: rank {}: {}\n", status.MPI_SOURCE, error);
      MPI_Abort(MPI_COMM_WORLD, 1);
    }
    give(status.MPI_SOURCE);
  }
  for (auto& t : pool) t.join();
#endif
}

core::Status mpi_worker_loop(const MpiWorld& world, const TrialFunction& evaluate) {
#ifdef POWERTRAIN_HAVE_MPI
  (void)world;
  while (true) {
    MPI_Status status;
    wait_message(0, MPI_ANY_TAG, &status, true);
    const std::string text = receive_string(status);
    if (status.MPI_TAG == kTagStop) return core::Ok{};
    std::size_t index = 0;
    TrialResult fits;
    std::string error;
    if (!unframe(text, &index, &fits, &error)) return core::Error{error};
    send_string(frame(index, evaluate(fits)), 0, kTagResult);
  }
#else
  (void)world;
  (void)evaluate;
  return core::Error{"built without MPI"};
#endif
}

void mpi_stop_workers(const MpiWorld& world) {
#ifdef POWERTRAIN_HAVE_MPI
  if (!world.active || world.rank != 0) return;
  for (int w = 1; w < world.size; ++w) send_string("", w, kTagStop);
#else
  (void)world;
#endif
}

}  // namespace powertrain::search
