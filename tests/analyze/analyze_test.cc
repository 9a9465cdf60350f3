// HTA-definition quantities on hand-built traces whose answers are computed by hand.
#include "analyze/analyze.h"

#include <gtest/gtest.h>

#include <string>

#include "analyze/diff.h"
#include "analyze/memcpy_bytes.h"
#include "trace/kineto_reader.h"

namespace powertrain::analyze {
namespace {

// One "X" event; times in µs.
std::string event(const std::string& cat, const std::string& name, double ts, double dur, int pid,
                  int tid, int correlation, const std::string& extra_args = "") {
  std::string args = correlation >= 0 ? "\"correlation\": " + std::to_string(correlation) : "";
  if (!extra_args.empty()) args += (args.empty() ? "" : ", ") + extra_args;
  return "{\"ph\": \"X\", \"cat\": \"" + cat + "\", \"name\": \"" + name +
         "\", \"pid\": " + std::to_string(pid) + ", \"tid\": " + std::to_string(tid) +
         ", \"ts\": " + std::to_string(ts) + ", \"dur\": " + std::to_string(dur) + ", \"args\": {" +
         args + "}}";
}

std::string document(const std::vector<std::string>& events) {
  std::string json = "{\"traceEvents\": [\n";
  for (std::size_t i = 0; i < events.size(); ++i)
    json += events[i] + (i + 1 < events.size() ? ",\n" : "\n");
  return json + "]}";
}

trace::RankTrace parse(const std::vector<std::string>& events) {
  auto t = trace::parse_kineto_json(document(events), "test.json", 0);
  EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
  return std::move(*t);
}

// Window [100, 200) µs. Stream 7: compute 100–140, compute 150–170; stream 20: NCCL 130–160,
// memcpy 180–200. Launches on host thread 1 at 90 (k1), 95 (nccl), 145 (k2, after k1 ended),
// 175 (memcpy).
trace::RankTrace two_stream_trace() {
  return parse({
      event("cuda_runtime", "cudaLaunchKernel", 90, 2, 1, 1, 1),
      event("cuda_runtime", "cudaLaunchKernel", 95, 2, 1, 1, 2),
      event("cuda_runtime", "cudaLaunchKernel", 145, 2, 1, 1, 3),
      event("cuda_runtime", "cudaMemcpyAsync", 175, 2, 1, 1, 4),
      event("kernel", "gemm_kernel", 100, 40, 0, 7, 1),
      event("kernel", "ncclDevKernel_AllReduce_Sum_f32", 130, 30, 0, 20, 2),
      event("kernel", "elementwise_kernel", 150, 20, 0, 7, 3),
      event("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 180, 20, 0, 20, 4,
            "\"bytes\": 4000000"),
  });
}

TEST(Analyze, CommunicationLibrariesByName) {
  EXPECT_EQ(comm_library("ncclKernel_AllReduce_RING_LL_Sum_float"), CommLibrary::kNccl);
  EXPECT_EQ(comm_library("ncclDevKernel_AllGather_RING_LL"), CommLibrary::kNccl);
  EXPECT_EQ(comm_library("void deep_ep::intranode::dispatch<8, 768>(int4*)"), CommLibrary::kDeepEp);
  EXPECT_EQ(comm_library("nvshmemi_transfer_rma_kernel"), CommLibrary::kNvshmem);
  EXPECT_EQ(comm_library("void nvshmem_putmem_kernel(void*)"), CommLibrary::kNvshmem);
  EXPECT_EQ(comm_library("rcclGenericKernel<1, false>"), CommLibrary::kRccl);
  EXPECT_EQ(comm_library("mscclKernel_Sum_float_LL"), CommLibrary::kRccl);
  EXPECT_EQ(comm_library("gloo:all_reduce"), CommLibrary::kGloo);
  EXPECT_EQ(comm_library("void at::native::vectorized_elementwise_kernel<4>"), CommLibrary::kNone);
  // "nccl" elsewhere than the start is not enough (HTA's rule is a prefix).
  EXPECT_EQ(comm_library("my_unccl_like_kernel"), CommLibrary::kNone);
  EXPECT_EQ(kernel_type(trace::EventKind::kGpuMemset, "Memset (Device)"), KernelType::kMemory);
  EXPECT_EQ(kernel_type(trace::EventKind::kKernel, "deep_ep::combine"), KernelType::kCommunication);
}

TEST(Analyze, TemporalBreakdownOverlapAndStatesByHand) {
  const RankAnalysis r = analyze_rank(two_stream_trace());
  EXPECT_EQ(r.window.start_ns, 100'000);
  EXPECT_EQ(r.window.end_ns, 200'000);
  // Busy: 100–170 and 180–200 = 90 µs; idle 10. Compute union: 100–140, 150–170 = 60.
  EXPECT_EQ(r.temporal.idle_ns, 10'000);
  EXPECT_EQ(r.temporal.compute_ns, 60'000);
  EXPECT_EQ(r.temporal.non_compute_ns, 30'000);
  EXPECT_DOUBLE_EQ(r.temporal.pct(r.temporal.idle_ns), 10.0);
  // NCCL 130–160 overlaps compute on 130–140 and 150–160: 20 of 30 µs.
  EXPECT_EQ(r.communication_ns, 30'000);
  EXPECT_EQ(r.overlap_ns, 20'000);
  EXPECT_NEAR(r.comm_comp_overlap_pct(), 200.0 / 3.0, 1e-12);
  // States: compute only 100–130 + 160–170 = 40; comm+compute 20; comm only 140–150 = 10;
  // memory only 20.
  EXPECT_EQ(r.types.state_ns[1], 40'000);
  EXPECT_EQ(r.types.state_ns[3], 20'000);
  EXPECT_EQ(r.types.state_ns[2], 10'000);
  EXPECT_EQ(r.types.state_ns[4], 20'000);
  EXPECT_EQ(r.types.busy_ns(), 90'000);
  EXPECT_EQ(state_name(3), "computation+communication");
  ASSERT_EQ(r.libraries.size(), 1u);
  EXPECT_EQ(r.libraries[0].library, CommLibrary::kNccl);
  EXPECT_EQ(r.libraries[0].count, 1);
  // Kernels by total time: gemm 40, nccl 30, then the 20 µs ones by name.
  ASSERT_EQ(r.kernels.size(), 4u);
  EXPECT_EQ(r.kernels[0].name, "gemm_kernel");
  EXPECT_EQ(r.kernels[1].type, KernelType::kCommunication);
  EXPECT_EQ(r.kernels[2].name, "Memcpy HtoD (Pinned -> Device)");
  EXPECT_EQ(r.kernels[3].name, "elementwise_kernel");
}

TEST(Analyze, StreamsQueueLaunchDelayAndIdleCategories) {
  AnalyzeOptions options;
  options.consecutive_kernel_delay_ns = 30'000;
  const RankAnalysis r = analyze_rank(two_stream_trace(), options);
  ASSERT_EQ(r.streams.size(), 2u);
  const StreamStats& s7 = r.streams[0];
  EXPECT_EQ(s7.stream, 7);
  EXPECT_EQ(s7.gpu_events, 2);
  // Launch delays: 100 − 90 = 10 µs, 150 − 145 = 5 µs.
  EXPECT_EQ(s7.launch_delay.count, 2);
  EXPECT_DOUBLE_EQ(s7.launch_delay.mean_ns, 7'500.0);
  EXPECT_EQ(s7.launch_delay.p50_ns, 5'000);
  EXPECT_EQ(s7.launch_delay.p95_ns, 10'000);
  EXPECT_EQ(s7.launch_delay.max_ns, 10'000);
  // Gap 140–150: the next kernel was launched at 145 > 140 → host wait.
  EXPECT_EQ(s7.idle_host_wait_ns, 10'000);
  EXPECT_EQ(s7.idle_kernel_wait_ns + s7.idle_other_ns, 0);
  // Queue on stream 7 inside [100, 200): 1 during 100–140 (launched at 90), 0 until 145, 1 until
  // 170: (40 + 25) / 100.
  EXPECT_EQ(s7.max_queue_length, 1);
  EXPECT_NEAR(s7.mean_queue_length, 0.65, 1e-12);
  const StreamStats& s20 = r.streams[1];
  // Stream 20: NCCL launched at 95 (queued from 95, inside the window from 100) until 160, memcpy
  // 175–200: (60 + 25) / 100. Gap 160–180: memcpy launched at 175 > 160 → host wait.
  EXPECT_NEAR(s20.mean_queue_length, 0.85, 1e-12);
  EXPECT_EQ(s20.idle_host_wait_ns, 20'000);

  // The same gap is kernel wait when the launch came before the previous kernel ended and the
  // gap is short, and "other" when it is long.
  const trace::RankTrace early = parse({
      event("cuda_runtime", "cudaLaunchKernel", 0, 1, 1, 1, 1),
      event("cuda_runtime", "cudaLaunchKernel", 2, 1, 1, 1, 2),
      event("cuda_runtime", "cudaLaunchKernel", 4, 1, 1, 1, 3),
      event("kernel", "a", 10, 10, 0, 7, 1), event("kernel", "b", 25, 10, 0, 7, 2),  // 5 µs gap
      event("kernel", "c", 100, 10, 0, 7, 3),                                        // 65 µs gap
  });
  options.consecutive_kernel_delay_ns = 30'000;
  const RankAnalysis e = analyze_rank(early, options);
  ASSERT_EQ(e.streams.size(), 1u);
  EXPECT_EQ(e.streams[0].idle_kernel_wait_ns, 5'000);
  EXPECT_EQ(e.streams[0].idle_other_ns, 65'000);
  EXPECT_EQ(e.streams[0].idle_host_wait_ns, 0);
  EXPECT_EQ(e.streams[0].max_queue_length, 3);  // all three launched before the first ran
}

TEST(Analyze, WindowsStepsAndWhole) {
  std::vector<std::string> events = {
      event("user_annotation", "ProfilerStep#1", 50, 100, 1, 1, -1),
      event("cpu_op", "aten::mm", 60, 10, 1, 1, -1),
      event("cuda_runtime", "cudaLaunchKernel", 62, 2, 1, 1, 1),
      event("kernel", "gemm", 80, 40, 0, 7, 1),
      event("cpu_op", "aten::late", 160, 40, 1, 1, -1),
  };
  const trace::RankTrace t = parse(events);
  AnalyzeOptions options;
  options.window = WindowKind::kSteps;
  RankAnalysis r = analyze_rank(t, options);
  EXPECT_EQ(r.window.used, WindowKind::kSteps);
  EXPECT_EQ(r.window.length_ns(), 100'000);
  EXPECT_EQ(r.window.steps, 1);
  EXPECT_EQ(r.temporal.idle_ns, 60'000);
  options.window = WindowKind::kWhole;
  r = analyze_rank(t, options);
  EXPECT_EQ(r.window.start_ns, 50'000);
  EXPECT_EQ(r.window.end_ns, 200'000);
  EXPECT_EQ(r.temporal.idle_ns, 110'000);
  options.window = WindowKind::kGpuSpan;
  r = analyze_rank(t, options);
  EXPECT_EQ(r.window.length_ns(), 40'000);
  EXPECT_EQ(r.temporal.idle_ns, 0);
  // No ProfilerStep: steps falls back to the GPU span.
  events.erase(events.begin());
  options.window = WindowKind::kSteps;
  r = analyze_rank(parse(events), options);
  EXPECT_EQ(r.window.used, WindowKind::kGpuSpan);
  EXPECT_EQ(r.window.length_ns(), 40'000);
}

TEST(Analyze, MemcpyBandwidthFromArgs) {
  const std::string json = document({
      event("cuda_runtime", "cudaMemcpyAsync", 0, 1, 1, 1, 4),
      event("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 10, 20, 0, 7, 4, "\"bytes\": 4000000"),
      event("gpu_memcpy", "Memcpy DtoH (Device -> Pinned)", 40, 10, 0, 7, 5),
  });
  auto bytes = parse_memcpy_bytes(json, "test.json");
  ASSERT_TRUE(bytes.ok()) << bytes.error().message;
  ASSERT_EQ(bytes->size(), 1u);
  EXPECT_EQ(bytes->at(4), 4'000'000);
  auto t = trace::parse_kineto_json(json, "test.json", 0);
  ASSERT_TRUE(t.ok());
  const RankAnalysis r = analyze_rank(*t, {}, &*bytes);
  ASSERT_EQ(r.memcpy.size(), 2u);
  EXPECT_EQ(r.memcpy[0].direction, "DtoH");
  EXPECT_EQ(r.memcpy[0].with_bytes, 0);
  EXPECT_EQ(r.memcpy[1].direction, "HtoD");
  EXPECT_DOUBLE_EQ(r.memcpy[1].gb_s(), 200.0);  // 4 MB in 20 µs
  EXPECT_FALSE(parse_memcpy_bytes("{\"traceEvents\": [", "bad.json").ok());
}

TEST(Analyze, DelayStatsNearestRank) {
  std::vector<std::int64_t> v;
  for (int i = 1; i <= 100; ++i) v.push_back(i);
  const DelayStats d = delay_stats(v);
  EXPECT_EQ(d.p50_ns, 50);
  EXPECT_EQ(d.p95_ns, 95);
  EXPECT_EQ(d.max_ns, 100);
  EXPECT_DOUBLE_EQ(d.mean_ns, 50.5);
  EXPECT_EQ(delay_stats({}).count, 0);
}

TEST(Analyze, SpanHelpersAgreeWithBruteForce) {
  // Random spans on a 1 ns grid: union and intersection against a per-nanosecond count.
  std::uint64_t seed = 12345;
  auto next = [&]() {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<std::int64_t>((seed >> 33) % 500);
  };
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<Span> a, b;
    std::vector<int> in_a(600, 0), in_b(600, 0);
    for (int i = 0; i < 8; ++i) {
      const std::int64_t s = next(), l = next() % 60;
      a.push_back({s, s + l});
      for (std::int64_t x = s; x < s + l; ++x) in_a[x] = 1;
      const std::int64_t s2 = next(), l2 = next() % 60;
      b.push_back({s2, s2 + l2});
      for (std::int64_t x = s2; x < s2 + l2; ++x) in_b[x] = 1;
    }
    std::int64_t ua = 0, both = 0;
    for (int x = 0; x < 600; ++x) {
      ua += in_a[x];
      both += in_a[x] & in_b[x];
    }
    const auto ma = merge_spans(a), mb = merge_spans(b);
    EXPECT_EQ(total_length(ma), ua);
    EXPECT_EQ(intersection_length(ma, mb), both);
  }
}

TEST(Diff, AddedRemovedAndSortedByDelta) {
  const trace::RankTrace a = parse({
      event("cpu_op", "aten::mm", 0, 10, 1, 1, -1),
      event("kernel", "gemm", 0, 30, 0, 7, -1),
      event("kernel", "old_kernel", 40, 5, 0, 7, -1),
  });
  const trace::RankTrace b = parse({
      event("cpu_op", "aten::mm", 0, 12, 1, 1, -1),
      event("kernel", "gemm", 0, 10, 0, 7, -1),
      event("kernel", "gemm", 20, 10, 0, 7, -1),
      event("kernel", "new_kernel", 40, 50, 0, 7, -1),
  });
  const TraceDiff d = diff_traces({a}, {b});
  ASSERT_EQ(d.rows.size(), 4u);
  EXPECT_EQ(d.rows[0].name, "new_kernel");  // +50
  EXPECT_EQ(d.rows[0].status, DiffStatus::kAdded);
  EXPECT_EQ(d.rows[1].name, "gemm");  // 30 → 20 µs: −10
  EXPECT_EQ(d.rows[1].count_b, 2);
  EXPECT_EQ(d.rows[1].delta_ns(), -10'000);
  EXPECT_EQ(d.rows[2].name, "old_kernel");  // −5
  EXPECT_EQ(d.rows[2].status, DiffStatus::kRemoved);
  EXPECT_EQ(d.rows[3].name, "aten::mm");  // +2
  EXPECT_EQ(d.added, 1);
  EXPECT_EQ(d.removed, 1);
}

}  // namespace
}  // namespace powertrain::analyze
