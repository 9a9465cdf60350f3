// A synthetic data-parallel training job as normalized traces (one RankTrace per rank), timed the
// way the hardware would have run it: forward on the main thread, backward on an autograd thread,
// one all-reduce per layer on a communication stream (joined across ranks: it ends when the last
// rank has arrived plus the wire time), an optimizer that waits for the last all-reduce, and a
// stream synchronize at the end of each ProfilerStep. For replay tests and speed measurements.
#pragma once

#include <cstdint>
#include <vector>

#include "trace/trace_events.h"

namespace powertrain::test_support {

struct SyntheticJobSpec {
  int ranks = 2;
  int steps = 2;
  int layers = 8;
  int kernels_per_layer = 4;               // forward kernels; backward launches twice as many
  std::int64_t kernel_ns = 40'000;         // mean kernel duration (each varies 0.5–1.5×)
  std::int64_t launch_ns = 5'000;          // cudaLaunchKernel call
  std::int64_t op_overhead_ns = 3'000;     // host time of an op before its launch
  std::int64_t launch_latency_ns = 4'000;  // launch start → kernel start on an idle stream
  std::int64_t allreduce_ns = 60'000;      // mean wire time of a layer's all-reduce
  double rank_skew = 0.2;                  // rank r's host is 1 + skew × r / ranks times slower
  bool sync_records = true;                // cuda_sync records (2024+ traces) for waits and syncs
  std::uint64_t seed = 1;
};

/// Deterministic for a given spec. About ranks × steps × layers × (9 × kernels_per_layer + 9)
/// events.
std::vector<trace::RankTrace> make_synthetic_job(const SyntheticJobSpec& spec);

}  // namespace powertrain::test_support
