// The synthetic job is generated step by step: every rank's host and compute stream first (they do
// not depend on other ranks within a step), then the step's all-reduces in order across ranks
// (each starts on a rank when its launch, its gradients and the previous all-reduce allow, and all
// end at the join plus the wire time), then each rank's optimizer and synchronize.
#include "synthetic_job.h"

#include <fmt/core.h>

#include <algorithm>
#include <utility>

#include "graph/trace_builder.h"

namespace powertrain::test_support {
namespace {

constexpr std::int64_t kComputeStream = 7;
constexpr std::int64_t kCommStream = 20;
constexpr std::int64_t kMainThread = 1;
constexpr std::int64_t kBackwardThread = 2;

// Deterministic 0.5–1.5 factor for item `i` (same on every rank: ranks run the same model).
double vary(std::uint64_t seed, std::uint64_t i) {
  std::uint64_t x = (seed + 1) * 0x9E3779B97F4A7C15ULL ^ (i + 1) * 0xBF58476D1CE4E5B9ULL;
  x ^= x >> 31;
  x *= 0x94D049BB133111EBULL;
  x ^= x >> 29;
  return 0.5 + static_cast<double>(x % 1000) / 1000.0;
}

struct PendingCollective {
  std::int64_t launch_ns;
  std::int64_t producer_end_ns;
  std::int64_t correlation;
};

struct RankState {
  explicit RankState(graph::RankTraceBuilder b) : builder(std::move(b)) {}
  graph::RankTraceBuilder builder;
  double host_factor = 1.0;
  std::int64_t main_ns = 0;      // main thread clock
  std::int64_t backward_ns = 0;  // autograd thread clock
  std::int64_t compute_free_ns = 0;
  std::int64_t comm_free_ns = 0;
  std::int64_t correlation = 1;
  std::int64_t step_start_ns = 0;
  std::vector<PendingCollective> collectives;
};

class Generator {
 public:
  explicit Generator(const SyntheticJobSpec& spec) : spec_(spec) {}

  std::vector<trace::RankTrace> run() {
    for (int r = 0; r < spec_.ranks; ++r) {
      RankState state(graph::RankTraceBuilder(r, spec_.ranks, fmt::format("synthetic rank {}", r)));
      state.host_factor = 1.0 + spec_.rank_skew * r / std::max(spec_.ranks, 1);
      state.main_ns = 1'000'000'000'000 + 5'000 * r;  // ranks start a little apart
      ranks_.push_back(std::move(state));
    }
    for (int step = 0; step < spec_.steps; ++step) {
      for (RankState& rank : ranks_) forward_and_backward(rank);
      all_reduces();
      for (RankState& rank : ranks_) optimizer(rank, step);
    }
    std::vector<trace::RankTrace> traces;
    for (RankState& rank : ranks_) traces.push_back(rank.builder.build());
    return traces;
  }

 private:
  std::int64_t host(const RankState& rank, std::int64_t ns) const {
    return static_cast<std::int64_t>(static_cast<double>(ns) * rank.host_factor);
  }

  // An op with one kernel launch on the compute stream; returns the op's end.
  std::int64_t launch_op(RankState& rank, std::int64_t tid, std::int64_t t, std::uint64_t item,
                         const char* op_name, const char* kernel_name, double kernel_scale) {
    const std::int64_t pre = host(rank, spec_.op_overhead_ns);
    const std::int64_t launch = host(rank, spec_.launch_ns);
    const std::int64_t post = host(rank, spec_.op_overhead_ns / 2);
    const std::int64_t corr = rank.correlation++;
    rank.builder.op(op_name, t, pre + launch + post, tid);
    rank.builder.runtime("cudaLaunchKernel", t + pre, launch, corr, tid);
    const auto duration = static_cast<std::int64_t>(static_cast<double>(spec_.kernel_ns) *
                                                    kernel_scale * vary(spec_.seed, item));
    const std::int64_t start = std::max(t + pre + spec_.launch_latency_ns, rank.compute_free_ns);
    rank.builder.kernel(kernel_name, start, duration, corr, kComputeStream);
    rank.compute_free_ns = start + duration;
    return t + pre + launch + post;
  }

  void forward_and_backward(RankState& rank) {
    rank.step_start_ns = rank.main_ns;
    std::int64_t t = rank.main_ns + host(rank, 2'000);
    std::uint64_t item = 0;
    for (int l = 0; l < spec_.layers; ++l) {
      for (int k = 0; k < spec_.kernels_per_layer; ++k) {
        t = launch_op(rank, kMainThread, t, item++, "aten::linear",
                      "ampere_sgemm_128x64_nn(float*, ...)", 1.0) +
            host(rank, 1'000);
      }
    }
    rank.main_ns = t;
    // The autograd thread wakes up after the forward (a gap, then its first task).
    t = std::max(rank.backward_ns, t) + host(rank, 30'000);
    rank.collectives.clear();
    for (int l = spec_.layers - 1; l >= 0; --l) {
      for (int k = 0; k < 2 * spec_.kernels_per_layer; ++k) {
        t = launch_op(rank, kBackwardThread, t, item++, "aten::mm",
                      k % 2 ? "void at::native::vectorized_elementwise_kernel<4>(...)"
                            : "ampere_sgemm_64x64_nt(float*, ...)",
                      k % 2 ? 0.3 : 1.0) +
            host(rank, 1'000);
      }
      // Gradient all-reduce: record on the compute stream, the comm stream waits, NCCL launch.
      const std::int64_t record_corr = rank.correlation++;
      const std::int64_t producer_end = rank.compute_free_ns;
      rank.builder.runtime("cudaEventRecord", t, host(rank, 2'000), record_corr, kBackwardThread);
      t += host(rank, 3'000);
      const std::int64_t wait_corr = rank.correlation++;
      rank.builder.runtime("cudaStreamWaitEvent", t, host(rank, 2'000), wait_corr, kBackwardThread);
      if (spec_.sync_records) {
        rank.builder.sync_record(trace::SyncKind::kStreamWaitEvent, t, 1'000, wait_corr,
                                 kCommStream, kComputeStream, record_corr);
      }
      t += host(rank, 3'000);
      const std::int64_t nccl_corr = rank.correlation++;
      const std::int64_t launch = host(rank, spec_.launch_ns);
      rank.builder.host(trace::EventKind::kUserAnnotation, "nccl:all_reduce", t,
                        launch + host(rank, 2'000), kBackwardThread);
      rank.builder.runtime("cudaLaunchKernel", t + host(rank, 1'000), launch, nccl_corr,
                           kBackwardThread);
      rank.collectives.push_back({t + host(rank, 1'000), producer_end, nccl_corr});
      t += launch + host(rank, 3'000);
    }
    rank.backward_ns = t;
  }

  void all_reduces() {
    for (int l = 0; l < spec_.layers; ++l) {
      std::int64_t join = 0;
      std::vector<std::int64_t> arrival(ranks_.size());
      for (std::size_t r = 0; r < ranks_.size(); ++r) {
        const PendingCollective& c = ranks_[r].collectives[l];
        arrival[r] = std::max(
            {c.launch_ns + spec_.launch_latency_ns, c.producer_end_ns, ranks_[r].comm_free_ns});
        join = std::max(join, arrival[r]);
      }
      const auto wire = static_cast<std::int64_t>(static_cast<double>(spec_.allreduce_ns) *
                                                  vary(spec_.seed + 7, l));
      for (std::size_t r = 0; r < ranks_.size(); ++r) {
        RankState& rank = ranks_[r];
        rank.builder.nccl_kernel("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, ...)",
                                 arrival[r], join + wire - arrival[r],
                                 rank.collectives[l].correlation, kCommStream);
        rank.comm_free_ns = join + wire;
      }
    }
  }

  void optimizer(RankState& rank, int step) {
    // The main thread resumes once backward is done (a gap: the cross-thread rule links it).
    std::int64_t t = std::max(rank.main_ns, rank.backward_ns) + host(rank, 60'000);
    const std::int64_t record_corr = rank.correlation++;
    rank.builder.runtime("cudaEventRecord", t, host(rank, 2'000), record_corr, kMainThread);
    t += host(rank, 3'000);
    const std::int64_t wait_corr = rank.correlation++;
    rank.builder.runtime("cudaStreamWaitEvent", t, host(rank, 2'000), wait_corr, kMainThread);
    if (spec_.sync_records) {
      rank.builder.sync_record(trace::SyncKind::kStreamWaitEvent, t, 1'000, wait_corr,
                               kComputeStream, kCommStream, record_corr);
    }
    rank.compute_free_ns = std::max(rank.compute_free_ns, rank.comm_free_ns);
    t += host(rank, 3'000);
    std::uint64_t item = 1'000'000;
    for (int l = 0; l < spec_.layers; ++l) {
      t = launch_op(rank, kMainThread, t, item++, "Optimizer.step",
                    "void at::native::multi_tensor_apply_kernel(...)", 0.2) +
          host(rank, 1'000);
    }
    const std::int64_t sync_corr = rank.correlation++;
    const std::int64_t sync_end = std::max(t + host(rank, 3'000), rank.compute_free_ns + 2'000);
    rank.builder.runtime("cudaStreamSynchronize", t, sync_end - t, sync_corr, kMainThread);
    if (spec_.sync_records) {
      rank.builder.sync_record(trace::SyncKind::kStreamSync, t, sync_end - t, sync_corr,
                               kComputeStream);
    }
    t = sync_end + host(rank, 2'000);
    rank.builder.step(step, rank.step_start_ns, t - rank.step_start_ns, kMainThread);
    rank.main_ns = t + host(rank, 1'000);
  }

  const SyntheticJobSpec& spec_;
  std::vector<RankState> ranks_;
};

}  // namespace

std::vector<trace::RankTrace> make_synthetic_job(const SyntheticJobSpec& spec) {
  return Generator(spec).run();
}

}  // namespace powertrain::test_support
