// Trials spread over MPI ranks (`mpirun -np N powertrain search ...`, Debian's OpenMPI): rank 0
// runs the search and keeps a dynamic work queue; every rank, rank 0 included, evaluates trials
// and sends the results back. Without MPI (or not under mpirun) the same queue runs on threads.
// Built without MPI (no libopenmpi-dev at configure time), only the threaded path exists.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "core/result.h"
#include "search/trial.h"

namespace powertrain::search {

struct MpiWorld {
  int rank = 0;
  int size = 1;
  int local_size = 1;   // ranks on this machine (to share its cores)
  bool active = false;  // MPI initialized (launched by mpirun)
};

/// Whether this build has MPI.
bool mpi_compiled();

/// Initializes MPI when the process was launched by mpirun/mpiexec (their environment
/// variables), else returns a world of one. An error when mpirun started several ranks of a
/// build without MPI.
core::Result<MpiWorld> mpi_start();
/// Finalizes MPI if mpi_start initialized it.
void mpi_finish(const MpiWorld& world);

/// One trial: the configuration that passed check_config in, its result out. Thread-safe.
using TrialFunction = std::function<TrialResult(const TrialResult& fits)>;

/// Evaluates batch[i] for every i in `todo`: on `threads` local threads and, on rank 0 of an
/// active world, on every other rank too, one trial at a time from a shared queue. `on_done(i)`
/// runs on the calling rank, one call at a time, as each result arrives.
void distribute_trials(const MpiWorld& world, std::vector<TrialResult>& batch,
                       const std::vector<std::size_t>& todo, int threads,
                       const TrialFunction& evaluate,
                       const std::function<void(std::size_t)>& on_done);

/// Ranks > 0: evaluate what rank 0 sends until it says stop.
core::Status mpi_worker_loop(const MpiWorld& world, const TrialFunction& evaluate);
/// Rank 0: tells every worker to return from mpi_worker_loop.
void mpi_stop_workers(const MpiWorld& world);

}  // namespace powertrain::search
