// The Kineto reader on the real traces in ../shared/data/traces (HTA, PARAM, TraceLens). Counts
// are pinned; they were cross-checked event by event (times, ids, kinds, links) against an
// independent Python reading with exact decimal arithmetic.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>

#include "trace/kineto_reader.h"

namespace powertrain::trace {
namespace {

namespace fs = std::filesystem;

fs::path data_dir() {
  return fs::path(POWERTRAIN_SOURCE_DIR) / ".." / "shared" / "data" / "traces";
}

struct Counts {
  std::size_t events = 0, cpu_ops = 0, runtime = 0, driver = 0, kernels = 0, memcpys = 0,
              memsets = 0, syncs = 0, python = 0, nccl = 0, gpu_with_launch = 0;
};

Counts count(const RankTrace& trace) {
  Counts c;
  std::map<std::int64_t, int> launches;
  for (const TraceEvent& e : trace.events) {
    if (e.kind == EventKind::kCudaRuntime || e.kind == EventKind::kCudaDriver) {
      ++launches[e.correlation];
    }
  }
  for (const TraceEvent& e : trace.events) {
    ++c.events;
    c.cpu_ops += e.kind == EventKind::kCpuOp;
    c.runtime += e.kind == EventKind::kCudaRuntime;
    c.driver += e.kind == EventKind::kCudaDriver;
    c.kernels += e.kind == EventKind::kKernel;
    c.memcpys += e.kind == EventKind::kGpuMemcpy;
    c.memsets += e.kind == EventKind::kGpuMemset;
    c.syncs += e.kind == EventKind::kCudaSync;
    c.python += e.kind == EventKind::kPythonFunction;
    c.nccl += e.nccl;
    c.gpu_with_launch += is_gpu_work(e.kind) && launches.count(e.correlation) > 0;
  }
  return c;
}

std::int64_t warning_count(const RankTrace& trace, std::string_view kind_part) {
  std::int64_t total = 0;
  for (const TraceWarning& w : trace.warnings) {
    if (w.kind.find(kind_part) != std::string::npos) total += w.count;
  }
  return total;
}

RankTrace read_or_skip(const std::string& relative) {
  const fs::path path = data_dir() / relative;
  if (!fs::exists(path)) return RankTrace{};
  auto trace = read_kineto_trace(path.string(), 0);
  EXPECT_TRUE(trace.ok()) << trace.error().message;
  return trace.ok() ? std::move(*trace) : RankTrace{};
}

#define SKIP_WITHOUT(relative)                                              \
  if (!fs::exists(data_dir() / (relative))) {                               \
    GTEST_SKIP() << "real trace not found at " << (data_dir() / (relative)) \
                 << " (needs ../shared/data/traces)";                       \
  }

TEST(KinetoRealTraces, EveryFileReads) {
  if (!fs::exists(data_dir())) GTEST_SKIP() << "no real traces at " << data_dir();
  std::size_t files = 0;
  for (const auto& entry : fs::recursive_directory_iterator(data_dir())) {
    if (!entry.is_regular_file() || entry.path().extension() != ".gz") continue;
    auto traces = read_kineto_traces({entry.path().string()});
    ASSERT_TRUE(traces.ok()) << traces.error().message;
    EXPECT_FALSE(traces->empty()) << entry.path();
    for (const RankTrace& trace : *traces) {
      EXPECT_GT(trace.events.size(), 0u) << trace.source;
      EXPECT_TRUE(std::is_sorted(trace.events.begin(), trace.events.end(),
                                 [](const TraceEvent& a, const TraceEvent& b) {
                                   return a.start_ns < b.start_ns ||
                                          (a.start_ns == b.start_ns &&
                                           a.duration_ns > b.duration_ns);
                                 }))
          << trace.source;
    }
    ++files;
  }
  EXPECT_EQ(files, 8u);
}

struct Expected {
  const char* file;
  Counts counts;
  std::int64_t launches_without_gpu_work;
  std::int64_t gpu_work_without_launch;
};

class KinetoRealTraceCounts : public ::testing::TestWithParam<Expected> {};

TEST_P(KinetoRealTraceCounts, AreAsPinned) {
  const Expected& expected = GetParam();
  SKIP_WITHOUT(expected.file);
  const RankTrace trace = read_or_skip(expected.file);
  const Counts c = count(trace);
  const Counts& e = expected.counts;
  EXPECT_EQ(c.events, e.events);
  EXPECT_EQ(c.cpu_ops, e.cpu_ops);
  EXPECT_EQ(c.runtime, e.runtime);
  EXPECT_EQ(c.driver, e.driver);
  EXPECT_EQ(c.kernels, e.kernels);
  EXPECT_EQ(c.memcpys, e.memcpys);
  EXPECT_EQ(c.memsets, e.memsets);
  EXPECT_EQ(c.syncs, e.syncs);
  EXPECT_EQ(c.python, e.python);
  EXPECT_EQ(c.nccl, e.nccl);
  EXPECT_EQ(c.gpu_with_launch, e.gpu_with_launch);
  EXPECT_EQ(warning_count(trace, "launch without GPU work"), expected.launches_without_gpu_work);
  EXPECT_EQ(warning_count(trace, "GPU work without a launch"), expected.gpu_work_without_launch);
  EXPECT_EQ(warning_count(trace, "unknown category"), 0);
  EXPECT_EQ(warning_count(trace, "X event"), 0);
  // Every GPU event of these files has its launch, except where pinned above.
  EXPECT_EQ(c.gpu_with_launch + static_cast<std::size_t>(expected.gpu_work_without_launch),
            c.kernels + c.memcpys + c.memsets);
}

// events, cpu_ops, runtime, driver, kernels, memcpys, memsets, syncs, python, nccl, gpu_with_launch
INSTANTIATE_TEST_SUITE_P(
    KinetoPinned, KinetoRealTraceCounts,
    ::testing::Values(
        Expected{
            "hta/alexnet_critical_path.json.gz", {868, 359, 361, 0, 79, 16, 3, 41, 0, 0, 98}, 2, 0},
        Expected{"hta/simple_add.json.gz", {838, 359, 331, 0, 79, 16, 3, 41, 0, 0, 98}, 2, 0},
        Expected{"hta/cuda_event_sync.json.gz", {33, 10, 12, 0, 4, 1, 0, 4, 0, 0, 5}, 0, 0},
        Expected{
            "hta/cuda_event_sync_multi_stream.json.gz", {57, 6, 39, 0, 3, 0, 3, 5, 0, 0, 6}, 0, 0},
        Expected{
            "hta/nccl_data.json.gz", {26933, 14346, 8740, 0, 2700, 960, 114, 0, 0, 90, 3774}, 3, 0},
        Expected{"param/resnet_kineto.json.gz",
                 {75548, 39416, 25928, 0, 9628, 123, 362, 0, 0, 0, 10113},
                 210,
                 0},
        Expected{"tracelens/b200_eager_rank0.json.gz",
                 {22355, 4809, 1151, 221, 768, 161, 0, 0, 15230, 4, 929},
                 0,
                 0}),
    [](const ::testing::TestParamInfo<Expected>& info) {
      std::string name = fs::path(info.param.file).stem().stem().string();
      for (char& ch : name) {
        if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
      }
      return name;
    });

TEST(KinetoRealTraces, NcclDataCollectivesAndRelativeTimes) {
  SKIP_WITHOUT("hta/nccl_data.json.gz");
  const RankTrace trace = read_or_skip("hta/nccl_data.json.gz");
  EXPECT_EQ(trace.rank, 0);
  EXPECT_EQ(trace.world_size, 2);
  EXPECT_EQ(trace.collectives.size(), 69u);  // 27 record_param_comms, 21 nccl:*, 21 kernels
  EXPECT_EQ(
      trace.step_starts_ns,
      (std::vector<std::int64_t>{1716423322416788066, 1716423322639291351, 1716423322859077781}));
  EXPECT_EQ(trace.step_ends_ns.front(), 1716423322639230257);
  int nccl_kernels = 0;
  for (const TraceEvent& e : trace.events) {
    if (e.kind != EventKind::kKernel || !e.nccl) continue;
    ++nccl_kernels;
    ASSERT_GE(e.collective, 0);
    const CollectiveInfo& c = trace.collectives[e.collective];
    EXPECT_TRUE(c.name == "allreduce" || c.name == "broadcast") << c.name;
    EXPECT_GT(c.in_elements, 0);
    EXPECT_EQ(c.group_size, 2);
    EXPECT_EQ(c.process_group, "0");
    EXPECT_EQ(c.process_group_description, "default_pg");
    EXPECT_EQ(c.process_group_ranks, (std::vector<std::int64_t>{0, 1}));
    if (e.correlation == 60047) {  // exact: base + relative float µs
      EXPECT_EQ(e.start_ns, 1716423323009853422);
      EXPECT_EQ(e.duration_ns, 2636669);
      EXPECT_EQ(e.tid, 40);
      EXPECT_EQ(c.in_elements, 6637568);
      EXPECT_EQ(c.element_bytes, 4);
    }
  }
  EXPECT_EQ(nccl_kernels, 21);
  std::size_t waits = 0;
  for (const TraceEvent& e : trace.events) waits += e.sync == SyncKind::kStreamWaitEvent;
  EXPECT_EQ(waits, 84u);  // cudaStreamWaitEvent calls (this trace has no cuda_sync records)
}

TEST(KinetoRealTraces, B200NcclDevKernelsAreRecognized) {
  SKIP_WITHOUT("tracelens/b200_eager_rank0.json.gz");
  const RankTrace trace = read_or_skip("tracelens/b200_eager_rank0.json.gz");
  EXPECT_EQ(trace.world_size, 8);
  int found = 0;
  for (const TraceEvent& e : trace.events) {
    if (e.kind != EventKind::kKernel || trace.name_of(e).rfind("ncclDevKernel_", 0) != 0) continue;
    ++found;
    EXPECT_TRUE(e.nccl);
    ASSERT_GE(e.collective, 0);
    const CollectiveInfo& c = trace.collectives[e.collective];
    EXPECT_EQ(c.name, "_allgather_base");
    EXPECT_EQ(c.in_elements, 25136);
    EXPECT_EQ(c.out_elements, 201088);
    EXPECT_EQ(c.element_bytes, 2);
    EXPECT_EQ(c.group_size, 8);
    EXPECT_EQ(c.process_group, "3");
    EXPECT_EQ(e.start_ns, 1768554939949863953);
    EXPECT_EQ(e.duration_ns, 21953);
    EXPECT_EQ(e.correlation, 15270);
  }
  EXPECT_EQ(found, 1);
  EXPECT_TRUE(trace.string_ids.empty());
}

TEST(KinetoRealTraces, CudaSyncRecordsOfTheHtaTraces) {
  SKIP_WITHOUT("hta/alexnet_critical_path.json.gz");
  const RankTrace trace = read_or_skip("hta/alexnet_critical_path.json.gz");
  std::map<SyncKind, int> kinds;
  for (const TraceEvent& e : trace.events) {
    if (e.kind == EventKind::kCudaSync) ++kinds[e.sync];
    if (e.kind == EventKind::kCudaSync && e.correlation == 5170) {
      EXPECT_EQ(e.sync, SyncKind::kStreamWaitEvent);
      EXPECT_EQ(e.start_ns, 1695835585751488000);
      EXPECT_EQ(e.duration_ns, 3000);
      EXPECT_EQ(e.tid, 20);
      EXPECT_EQ(e.wait_on_stream, 7);
      EXPECT_EQ(e.wait_on_event_correlation, 5169);
      EXPECT_EQ(e.cuda_event, 1);
    }
  }
  EXPECT_EQ(kinds[SyncKind::kStreamWaitEvent], 20);
  EXPECT_EQ(kinds[SyncKind::kStreamSync], 16);
  EXPECT_EQ(kinds[SyncKind::kContextSync], 5);
  const RankTrace events = read_or_skip("hta/cuda_event_sync.json.gz");
  int event_syncs = 0;
  for (const TraceEvent& e : events.events) {
    if (e.kind != EventKind::kCudaSync || e.sync != SyncKind::kEventSync) continue;
    ++event_syncs;
    EXPECT_EQ(e.wait_on_stream, 7);
    EXPECT_EQ(e.wait_on_event_correlation, 1533);
  }
  EXPECT_EQ(event_syncs, 2);
  EXPECT_EQ(events.step_starts_ns, std::vector<std::int64_t>{1707417525509335000});
  EXPECT_EQ(events.step_ends_ns, std::vector<std::int64_t>{1707417525512489000});
}

TEST(KinetoRealTraces, DlrmTarballYieldsEightRanksWithCollectives) {
  SKIP_WITHOUT("param/dlrm_kineto_8ranks.tar.gz");
  auto traces = read_kineto_traces({(data_dir() / "param" / "dlrm_kineto_8ranks.tar.gz").string()});
  ASSERT_TRUE(traces.ok()) << traces.error().message;
  ASSERT_EQ(traces->size(), 8u);
  // Each rank's 8 INVALID runtime records are kept (their timing is usable).
  const std::size_t events[8] = {2460, 2527, 2449, 2552, 2470, 2440, 2451, 2440};
  for (int rank = 0; rank < 8; ++rank) {
    const RankTrace& trace = (*traces)[rank];
    EXPECT_EQ(trace.rank, rank);
    EXPECT_EQ(trace.world_size, 8);
    EXPECT_NE(trace.source.find("worker" + std::to_string(rank) + "_step_12"), std::string::npos);
    EXPECT_EQ(trace.events.size(), events[rank]);
    EXPECT_EQ(trace.step_starts_ns.size(), 1u);
    EXPECT_EQ(warning_count(trace, "'INVALID' records kept as plain calls"), 8);
    EXPECT_EQ(warning_count(trace, "GPU work without a launch"), rank == 1 || rank == 3 ? 64 : 0);
    // 3 all-reduces and 5 all-to-alls, each an NCCL kernel with the metadata of the nccl:*
    // annotation around its launch (possibly on the autograd thread).
    std::map<std::string, int> kernels;
    for (const TraceEvent& e : trace.events) {
      if (e.kind != EventKind::kKernel || !e.nccl) continue;
      ASSERT_GE(e.collective, 0);
      const CollectiveInfo& c = trace.collectives[e.collective];
      ++kernels[c.name];
      EXPECT_GT(c.in_elements, 0);
      EXPECT_TRUE(c.element_bytes == 4 || c.element_bytes == 8) << c.element_bytes;
    }
    EXPECT_EQ(kernels, (std::map<std::string, int>{{"all_reduce", 3}, {"all_to_all", 5}}));
    EXPECT_EQ(trace.collectives.size(), 16u);
  }
}

TEST(KinetoRealTraces, WindowedReadingMatchesWholeDocumentReading) {
  SKIP_WITHOUT("hta/nccl_data.json.gz");
  for (const char* file : {"hta/nccl_data.json.gz", "hta/simple_add.json.gz"}) {
    const std::string path = (data_dir() / file).string();
    ReadOptions whole;
    whole.window_bytes = SIZE_MAX / 4;
    ReadOptions small;
    small.window_bytes = 2000;
    auto a = read_kineto_trace(path, 0, whole);
    auto b = read_kineto_trace(path, 0, small);
    ASSERT_TRUE(a.ok() && b.ok());
    ASSERT_EQ(a->events.size(), b->events.size());
    for (std::size_t i = 0; i < a->events.size(); ++i) {
      ASSERT_EQ(a->events[i].start_ns, b->events[i].start_ns) << i;
      ASSERT_EQ(a->events[i].correlation, b->events[i].correlation) << i;
      ASSERT_EQ(a->events[i].external_id, b->events[i].external_id) << i;
    }
    EXPECT_EQ(a->collectives.size(), b->collectives.size());
  }
}

}  // namespace
}  // namespace powertrain::trace
