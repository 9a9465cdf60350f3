// Synthetic Kineto traces shaped like real torch.profiler output (2024 format), for benchmarks,
// tests and fuzz seeds: no data files needed, any size, deterministic.
#pragma once

#include <cstdint>
#include <string>

namespace powertrain::trace {

struct SyntheticTraceSpec {
  /// Approximate number of trace events to write (duration events plus flow records). Each
  /// "op" writes a cpu_op, a python_function, a cudaLaunchKernel, its kernel and two ac2g flows.
  std::int64_t target_events = 100'000;
  int rank = 0;
  int world_size = 1;
  /// Relative float µs with baseTimeNanoseconds (2024+), or absolute integer epoch µs (older).
  bool relative_time = true;
  int streams = 2;              // compute streams; NCCL work uses one more
  int ops_per_step = 2000;      // a ProfilerStep#N annotation spans this many ops
  int ops_per_collective = 50;  // every n-th op is an all-reduce (record_param_comms + NCCL)
  /// The job's seed: give every rank of one job the same seed (each rank's timeline is derived
  /// from it and the rank, and all-reduces end together on all ranks, as NCCL's do).
  std::uint64_t seed = 1;
};

/// Writes rank `rank`'s trace JSON. O(target_events × world_size) time (every rank's timeline is
/// generated, only this rank's written); about 300 bytes per event.
std::string make_synthetic_kineto_trace(const SyntheticTraceSpec& spec);

}  // namespace powertrain::trace
