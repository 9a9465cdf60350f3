// End-to-end tests of the CUDA runtime interposer: the CUDA programs in tests/emulate/programs
// (built with nvcc -cudart shared) run on this GPU-less machine under emulation, exit 0, and
// their traces contain exactly the expected operations — kernel names and geometry, streams,
// event record/wait pairs that form the intended dependencies, allocations and OOM, misuse and
// unsupported calls named by API.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "interposer_test_util.h"

namespace powertrain::testing_emu {
namespace {

using nlohmann::json;

class CudartPrograms : public EmulationTest {};

// Records that enqueue device work (they carry a correlation id).
bool is_work(const json& r) {
  const std::string op = r.value("op", "");
  return op == "kernel" || op == "memcpy" || op == "memset" || op == "host_func";
}

// For every work record, the correlation ids of all work it must wait for: earlier work on its
// stream plus, through stream_wait_event, everything before the matching event_record (applied
// transitively). Keys are the work's correlation ids.
std::map<std::int64_t, std::set<std::int64_t>> dependencies(const Trace& trace) {
  std::map<std::int64_t, std::set<std::int64_t>> stream_state;  // stream → completed-before set
  std::map<std::int64_t, std::set<std::int64_t>> event_state;
  std::map<std::int64_t, std::set<std::int64_t>> result;
  for (const json& r : trace.lines) {
    const std::string op = r.value("op", "");
    if (is_work(r)) {
      const std::int64_t stream = r.at("stream");
      result[r.at("corr")] = stream_state[stream];
      stream_state[stream].insert(r.at("corr").get<std::int64_t>());
    } else if (op == "event_record") {
      event_state[r.at("event")] = stream_state[r.at("stream")];
    } else if (op == "stream_wait_event") {
      const auto& waited = event_state[r.at("event")];
      stream_state[r.at("stream")].insert(waited.begin(), waited.end());
    }
  }
  return result;
}

void expect_well_formed(const Trace& trace) {
  ASSERT_GE(trace.lines.size(), 2u);
  EXPECT_EQ(trace.lines.front().at("op"), "process");
  EXPECT_EQ(trace.lines.front().at("version"), 1);
  EXPECT_EQ(trace.lines.back().at("op"), "exit");
  EXPECT_EQ(trace.lines.back().at("records"), static_cast<int>(trace.lines.size()) - 2);
  std::int64_t last_corr = 0;
  for (std::size_t i = 1; i + 1 < trace.lines.size(); ++i) {
    const json& r = trace.lines[i];
    EXPECT_TRUE(r.contains("t") && r.contains("dt") && r.contains("tid") && r.contains("dev"))
        << r.dump();
    EXPECT_GE(r.at("dt").get<std::int64_t>(), 0) << r.dump();
    if (r.contains("corr") && r.value("tid", 0) == 0) {
      // One thread: correlation ids increase in record order.
      EXPECT_GT(r.at("corr").get<std::int64_t>(), last_corr) << r.dump();
      last_corr = r.at("corr");
    }
  }
}

void check_streams_events(const ProgramRun& run, const Trace& trace) {
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("round trip of 1024 bytes verified"), std::string::npos) << run.out;
  EXPECT_EQ(run.err, "");
  expect_well_formed(trace);
  EXPECT_TRUE(trace.of("misuse").empty());
  EXPECT_TRUE(trace.of("unsupported").empty());

  std::map<std::string, std::string> display;
  for (const json& r : trace.of("register")) display[r.at("name")] = r.at("display");
  EXPECT_EQ(display["_Z5scalePfif"], "scale(float*, int, float)");
  EXPECT_EQ(display["_Z9block_sumPKfPfi"], "block_sum(float const*, float*, int)");
  EXPECT_EQ(display["_Z3addPfPKfS1_i"], "add(float*, float const*, float const*, int)");

  const auto streams = trace.of("stream_create");
  ASSERT_EQ(streams.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(streams[i].at("stream"), i + 1);
    EXPECT_EQ(streams[i].at("flags"), 1);  // cudaStreamNonBlocking
  }
  const auto events = trace.of("event_create");
  ASSERT_EQ(events.size(), 3u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(events[i].at("event"), i + 1);

  // Exactly these kernels, in this order, with this geometry and stream.
  const auto kernels = trace.of("kernel");
  ASSERT_EQ(kernels.size(), 4u);
  const json expected_kernels[] = {
      {{"name", "_Z5scalePfif"},
       {"grid", {4096, 1, 1}},
       {"block", {256, 1, 1}},
       {"shmem", 0},
       {"stream", 1}},
      {{"name", "_Z5scalePfif"},
       {"grid", {4096, 1, 1}},
       {"block", {256, 1, 1}},
       {"shmem", 0},
       {"stream", 2}},
      {{"name", "_Z9block_sumPKfPfi"},
       {"grid", {64, 1, 1}},
       {"block", {128, 1, 1}},
       {"shmem", 512},
       {"stream", 2}},
      {{"name", "_Z3addPfPKfS1_i"},
       {"grid", {1024, 4, 1}},
       {"block", {64, 4, 1}},
       {"shmem", 0},
       {"stream", 3}},
  };
  for (int i = 0; i < 4; ++i) {
    for (const auto& [key, value] : expected_kernels[i].items()) {
      EXPECT_EQ(kernels[i].at(key), value) << "kernel " << i << " " << key;
    }
    EXPECT_EQ(kernels[i].at("api"), "__cudaLaunchKernel");
  }

  // Copies: two 4 MiB uploads and the download (async), then the 1 KiB round trip.
  const auto copies = trace.of("memcpy");
  ASSERT_EQ(copies.size(), 6u);
  const std::vector<std::tuple<std::string, int, int, bool>> expected_copies = {
      {"HtoD", 4 << 20, 1, true}, {"HtoD", 4 << 20, 2, true}, {"DtoH", 4 << 20, 1, true},
      {"HtoD", 1024, 0, false},   {"DtoD", 1024, 2, true},    {"DtoH", 1024, 0, false}};
  for (std::size_t i = 0; i < copies.size(); ++i) {
    const auto& [kind, bytes, stream, async] = expected_copies[i];
    EXPECT_EQ(copies[i].at("kind"), kind) << i;
    EXPECT_EQ(copies[i].at("bytes"), bytes) << i;
    EXPECT_EQ(copies[i].at("stream"), stream) << i;
    EXPECT_EQ(copies[i].at("async"), async) << i;
  }

  // Event record/wait pairs: the consumer waits for both producers, the download for it.
  const auto records = trace.of("event_record");
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].at("stream"), 1);
  EXPECT_EQ(records[0].at("event"), 1);
  EXPECT_EQ(records[1].at("stream"), 2);
  EXPECT_EQ(records[1].at("event"), 2);
  EXPECT_EQ(records[2].at("stream"), 3);
  EXPECT_EQ(records[2].at("event"), 3);
  const auto waits = trace.of("stream_wait_event");
  ASSERT_EQ(waits.size(), 3u);
  EXPECT_EQ(waits[0].at("stream"), 3);
  EXPECT_EQ(waits[0].at("event"), 1);
  EXPECT_EQ(waits[1].at("stream"), 3);
  EXPECT_EQ(waits[1].at("event"), 2);
  EXPECT_EQ(waits[2].at("stream"), 1);
  EXPECT_EQ(waits[2].at("event"), 3);

  const auto deps = dependencies(trace);
  const std::int64_t upload_a = copies[0].at("corr"), upload_b = copies[1].at("corr");
  const std::int64_t scale_a = kernels[0].at("corr"), scale_b = kernels[1].at("corr");
  const std::int64_t reduce = kernels[2].at("corr"), add = kernels[3].at("corr");
  const std::int64_t download = copies[2].at("corr");
  EXPECT_EQ(deps.at(add), (std::set<std::int64_t>{upload_a, scale_a, upload_b, scale_b, reduce}));
  EXPECT_TRUE(deps.at(download).count(add) == 1);
  EXPECT_TRUE(deps.at(scale_b).count(scale_a) == 0) << "the producers are independent";
  EXPECT_TRUE(deps.at(scale_a).count(scale_b) == 0);

  EXPECT_EQ(trace.of("stream_sync").size(), 2u);
  EXPECT_EQ(trace.of("device_sync").size(), 1u);
  EXPECT_EQ(trace.of("stream_destroy").size(), 3u);
  EXPECT_EQ(trace.of("event_destroy").size(), 3u);

  // Allocations: accounted, freed, and the exit line agrees.
  const auto mallocs = trace.of("malloc");
  const auto frees = trace.of("free");
  ASSERT_EQ(mallocs.size(), 7u);
  EXPECT_EQ(frees.size(), 7u);
  std::int64_t used = 0;
  for (const json& m : mallocs) {
    EXPECT_TRUE(m.at("ok").get<bool>());
    if (m.at("kind") == "device") used += m.at("bytes").get<std::int64_t>();
    EXPECT_EQ(m.at("used"), used);
  }
  EXPECT_EQ(trace.lines.back().at("peak_used"), json::array({3 * (4 << 20) + 256 + 2048}));
  EXPECT_EQ(trace.lines.back().at("used"), json::array({0}));
}

TEST_F(CudartPrograms, StreamsAndEventsUnderPreload) {
  const ProgramRun run = run_program("streams_events");
  const Trace trace = only_trace();
  check_streams_events(run, trace);
  EXPECT_EQ(trace.lines.front().at("abi"), 13);
}

TEST_F(CudartPrograms, StreamsAndEventsUnderDropInRuntime) {
  // No LD_PRELOAD: the program's libcudart.so.13 is the emulator's (LD_LIBRARY_PATH). Had the
  // real runtime been loaded, the program would fail (no GPU) and write no trace.
  const ProgramRun run = run_program("streams_events", Mode::kDropIn);
  check_streams_events(run, only_trace());
}

TEST_F(CudartPrograms, OutOfMemoryIsReportedAndAccounted) {
  const ProgramRun run = run_program("oom");
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  // 80 GiB of device memory less the context's 0.5 GiB hold 26 blocks of 3 GiB; 1.5 GiB stay free.
  EXPECT_NE(run.out.find("out of memory after 26 allocations of 3 GiB (1610612736 of "
                         "85899345920 bytes free): out of memory"),
            std::string::npos)
      << run.out;
  const Trace trace = only_trace();
  expect_well_formed(trace);
  const auto mallocs = trace.of("malloc");
  ASSERT_EQ(mallocs.size(), 28u);  // 26 + the failure + 1 MiB afterwards
  constexpr std::int64_t kChunk = std::int64_t{3} << 30;
  for (int i = 0; i < 26; ++i) {
    EXPECT_TRUE(mallocs[i].at("ok").get<bool>());
    EXPECT_EQ(mallocs[i].at("used"), (i + 1) * kChunk);
  }
  EXPECT_FALSE(mallocs[26].at("ok").get<bool>());
  EXPECT_EQ(mallocs[26].at("bytes"), kChunk);
  EXPECT_EQ(mallocs[26].at("ptr"), 0);
  EXPECT_EQ(mallocs[26].at("used"), 26 * kChunk);
  EXPECT_TRUE(mallocs[27].at("ok").get<bool>());
  EXPECT_EQ(trace.of("free").size(), 27u);
  EXPECT_EQ(trace.lines.back().at("peak_used"), json::array({26 * kChunk + (1 << 20)}));
  EXPECT_TRUE(trace.of("misuse").empty());
}

// A host-only .cpp built by nvcc -cudart shared carries an empty .nv_fatbin and registers
// nothing: not a static-runtime program. Pinned memory is bounded; free memory starts 0.5 GiB
// (the context, POWERTRAIN_EMU_RESERVED_BYTES) below the total.
TEST_F(CudartPrograms, HostOnlyProgramMemoryFigures) {
  if (!std::filesystem::exists(program_path("host_memory"))) GTEST_SKIP() << "not built";
  const ProgramRun run = run_program("host_memory");
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_EQ(run.err.find("static CUDA runtime"), std::string::npos) << run.err;
  EXPECT_NE(run.out.find("fresh device: 85362475008 of 85899345920 bytes free (536870912 held by "
                         "the context)"),
            std::string::npos)
      << run.out;
  const Trace trace = only_trace();
  expect_well_formed(trace);
  EXPECT_TRUE(trace.of("unsupported").empty());
  const auto mallocs = trace.of("malloc");
  ASSERT_EQ(mallocs.size(), 4u);  // 2 refused pinned, 1 pinned, 1 device
  EXPECT_FALSE(mallocs[0].at("ok").get<bool>());
  EXPECT_EQ(mallocs[0].at("kind"), "host");
  EXPECT_FALSE(mallocs[1].at("ok").get<bool>());
  EXPECT_TRUE(mallocs[2].at("ok").get<bool>());

  // The pinned limit from the environment: 1 MiB still holds the program's 1 MiB buffer.
  const ProgramRun limited =
      run_program("host_memory", Mode::kPreload,
                  {{"POWERTRAIN_EMU_HOST_MEMORY_BYTES", std::to_string(1 << 20)}});
  EXPECT_EQ(limited.exit_code, 0) << limited.out << limited.err;
  const ProgramRun reserved =
      run_program("host_memory", Mode::kPreload, {{"POWERTRAIN_EMU_RESERVED_BYTES", "0"}});
  EXPECT_NE(reserved.err.find("requirement failed: free_bytes < total"), std::string::npos)
      << reserved.err;
}

// Stream capture records nothing while capturing; each cudaGraphLaunch writes a graph_launch
// record and replays the nodes as records of that call (same t, dt 0, `graph` = exec id), with
// event records and waits between the branches' lanes. The program checks the host function
// runs at each launch, not at capture, and the capture queries.
TEST_F(CudartPrograms, GraphCaptureAndLaunch) {
  if (!std::filesystem::exists(program_path("graph_capture"))) GTEST_SKIP() << "not built";
  const ProgramRun run = run_program("graph_capture", Mode::kPreload, {}, "graph");
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_EQ(run.err.find("not supported"), std::string::npos) << run.err;
  const Trace trace = only_trace();
  expect_well_formed(trace);
  const auto launches = trace.of("graph_launch");
  ASSERT_EQ(launches.size(), 8u);  // 2 of the small graph, 6 of the iteration
  EXPECT_EQ(launches[0].at("nodes"), 3);
  EXPECT_EQ(launches[2].at("nodes"), 17);
  // Outside launches, the capture wrote no kernel: the only kernels carry `graph`.
  const auto kernel_records = trace.of("kernel");
  ASSERT_EQ(kernel_records.size(), 2u * 1 + 6u * 17);
  std::map<std::int64_t, int> per_stream;
  for (const auto& k : kernel_records) {
    ASSERT_TRUE(k.contains("graph")) << k.dump();
    ++per_stream[k.at("stream").get<std::int64_t>()];
  }
  // Branch B runs on an internal lane stream (not the program's s2 = 2): stream 1 holds A and
  // the tail, the lane holds B.
  ASSERT_EQ(per_stream.size(), 2u);
  EXPECT_EQ(per_stream[1], 2 + 6 * 9);
  EXPECT_EQ(per_stream.rbegin()->second, 6 * 8);
  EXPECT_GT(per_stream.rbegin()->first, 2);
  EXPECT_EQ(trace.of("host_func").size(), 2u);
  EXPECT_EQ(trace.of("memset").size(), 2u);
  // Replayed records share the launch's entry time.
  const auto& first = launches[2];
  int same_time = 0;
  for (const auto& line : trace.lines)
    same_time +=
        line.value("graph", 0) == first.at("graph").get<int>() && line.at("t") == first.at("t");
  EXPECT_GE(same_time, 17);
}

// Graphs built node by node: the setup graph's memcpy, memset, host and event record nodes and
// the iteration graph's event wait, 8 + 8 kernels (branch B through a child graph) and tail are
// replayed at every launch in dependency order, lanes joined with internal events; the
// conditional node without a handle is refused (misuse), as a GPU refuses it.
TEST_F(CudartPrograms, ExplicitGraphNodesReplayAtLaunch) {
  if (!std::filesystem::exists(program_path("graph_explicit"))) GTEST_SKIP() << "not built";
  const ProgramRun run = run_program("graph_explicit");
  ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
  EXPECT_NE(run.out.find("conditional node: cudaErrorInvalidValue"), std::string::npos) << run.out;
  const Trace trace = only_trace();
  EXPECT_TRUE(trace.of("unsupported").empty());
  const auto misuse = trace.of("misuse");
  ASSERT_EQ(misuse.size(), 1u);
  EXPECT_EQ(misuse[0].at("api"), "cudaGraphAddNode");

  const auto launches = trace.of("graph_launch");
  ASSERT_EQ(launches.size(), 7u);  // setup + 6 iterations
  EXPECT_EQ(launches[0].at("nodes"), 4);
  const int setup = launches[0].at("graph").get<int>();
  const int iteration = launches[1].at("graph").get<int>();
  EXPECT_EQ(launches[1].at("nodes"), 18);  // wait, 8 A, 8 B, tail (empty nodes dropped)
  // Nothing was recorded when the nodes were added: every kernel, copy, memset and host
  // function carries its launch's graph id.
  for (const char* op : {"kernel", "memcpy", "memset", "host_func"}) {
    for (const json& r : trace.of(op)) EXPECT_TRUE(r.contains("graph")) << r.dump();
  }
  // The setup launch, operation by operation (lane streams and internal events aside).
  std::vector<json> setup_work;
  for (const json& line : trace.lines) {
    if (line.value("graph", 0) == setup && line.at("op") != "graph_launch" &&
        line.value("api", "") != "cudaGraphLaunch" && line.at("op") != "stream_create") {
      setup_work.push_back(line);
    }
  }
  ASSERT_EQ(setup_work.size(), 4u);
  EXPECT_EQ(setup_work[0].at("op"), "memcpy");
  EXPECT_EQ(setup_work[0].at("kind"), "HtoD");
  EXPECT_EQ(setup_work[0].at("bytes"), 128);
  EXPECT_EQ(setup_work[0].at("api"), "cudaGraphAddMemcpyNode1D");
  EXPECT_EQ(setup_work[1].at("op"), "memset");
  EXPECT_EQ(setup_work[1].at("bytes"), 128);
  EXPECT_EQ(setup_work[2].at("op"), "host_func");
  EXPECT_EQ(setup_work[2].at("api"), "cudaGraphAddHostNode");
  EXPECT_EQ(setup_work[3].at("op"), "event_record");
  EXPECT_EQ(setup_work[3].at("event"), 1);  // the program's event `ready`
  EXPECT_EQ(setup_work[3].at("api"), "cudaGraphAddEventRecordNode");
  // The memcpy and memset run in parallel (two lanes); the host node waits for both.
  EXPECT_NE(setup_work[0].at("stream"), setup_work[1].at("stream"));

  // Each iteration launch: the wait for `ready`, A x 8 on the launch stream, B x 8 on a lane,
  // the tail after both.
  std::map<int, std::vector<json>> per_launch;  // corr of the graph_launch → its records
  int current = -1;
  for (const json& line : trace.lines) {
    if (line.at("op") == "graph_launch") {
      current = line.at("graph") == iteration ? line.at("corr").get<int>() : -1;
    } else if (current >= 0 && line.value("graph", 0) == iteration) {
      per_launch[current].push_back(line);
    }
  }
  ASSERT_EQ(per_launch.size(), 6u);
  for (const auto& [corr, records] : per_launch) {
    std::vector<std::string> work;
    std::vector<int> a_grids;
    std::int64_t a_stream = -1, b_stream = -1;
    for (const json& r : records) {
      if (r.at("op") == "kernel") {
        const std::string name = r.at("name");
        work.push_back(name);
        if (name == "_Z8branch_aPfi") a_grids.push_back(r.at("grid")[0].get<int>());
        if (name == "_Z8branch_aPfi") a_stream = r.at("stream");
        if (name == "_Z8branch_bPfi") b_stream = r.at("stream");
        if (name == "_Z6tail_cPfPKfi") {
          EXPECT_EQ(r.at("api"), "cudaGraphAddNode");
        }
      } else if (r.at("op") == "stream_wait_event" && r.at("event") == 1) {
        work.push_back("wait ready");
        EXPECT_EQ(r.at("api"), "cudaGraphAddEventWaitNode");
      }
    }
    std::vector<std::string> expected = {"wait ready"};
    for (int k = 0; k < 8; ++k) expected.push_back("_Z8branch_aPfi");
    for (int k = 0; k < 8; ++k) expected.push_back("_Z8branch_bPfi");
    expected.push_back("_Z6tail_cPfPKfi");
    EXPECT_EQ(work, expected) << "launch " << corr;
    // cudaGraphExecKernelNodeSetParams gave the exec's first A kernel 2 blocks.
    EXPECT_EQ(a_grids, (std::vector<int>{2, 1, 1, 1, 1, 1, 1, 1})) << "launch " << corr;
    EXPECT_EQ(a_stream, launches[1].at("stream").get<std::int64_t>());
    EXPECT_NE(b_stream, a_stream);
  }
}

TEST_F(CudartPrograms, DeviceMemorySizeComesFromTheEnvironment) {
  const ProgramRun run = run_program("oom", Mode::kPreload,
                                     {{"POWERTRAIN_EMU_MEMORY_BYTES", std::to_string(16ll << 30)}});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("out of memory after 5 allocations"), std::string::npos) << run.out;
}

TEST_F(CudartPrograms, MisuseIsReportedNotCrashed) {
  const ProgramRun run = run_program("misuse");
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.err.find("powertrain-emu: cudaImportExternalMemory is not supported by the GPU "
                         "emulator; it returns cudaErrorNotSupported (801)"),
            std::string::npos)
      << run.err;
  EXPECT_NE(run.err.find("cudaFree: double free"), std::string::npos) << run.err;
  const Trace trace = only_trace();
  expect_well_formed(trace);

  const auto misuses = trace.of("misuse");
  const std::vector<std::pair<std::string, std::string>> expected = {
      {"cudaStreamSynchronize", "invalid stream handle 0x1234"},
      {"cudaStreamQuery", "stream 1 (0x"},
      {"cudaFree", "double free"},
      {"cudaFree", "was not allocated by the CUDA runtime"},
      {"cudaEventRecord", "event 1 (0x"},
      {"cudaEventDestroy", "was already destroyed"},
      {"__cudaLaunchKernel", "invalid block (2048,1,1)"},
      {"cudaMemcpy", "destination 0x10 is not device memory"},
      {"cudaSetDevice", "device 5 does not exist"},
  };
  ASSERT_EQ(misuses.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(misuses[i].at("api"), expected[i].first) << i;
    EXPECT_NE(misuses[i].at("what").get<std::string>().find(expected[i].second), std::string::npos)
        << misuses[i].dump();
  }
  const auto unsupported = trace.of("unsupported");
  ASSERT_EQ(unsupported.size(), 1u);
  EXPECT_EQ(unsupported[0].at("api"), "cudaImportExternalMemory");
  // Only the valid launch ran; the invalid one was rejected.
  const auto kernels = trace.of("kernel");
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(kernels[0].at("name"), "_Z4noopv");
  EXPECT_EQ(kernels[0].at("block"), json::array({32, 1, 1}));
  EXPECT_EQ(trace.lines.back().at("misuse"), 9);
}

TEST_F(CudartPrograms, GemmChainThroughAllLaunchPaths) {
  const ProgramRun run = run_program("gemm_chain");
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const Trace trace = only_trace();
  expect_well_formed(trace);
  const auto kernels = trace.of("kernel");
  ASSERT_EQ(kernels.size(), 8u);
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    EXPECT_EQ(kernels[i].at("name"), "_Z11sgemm_naivePKfS0_Pfi");
    EXPECT_EQ(kernels[i].at("grid"), json::array({32, 32, 1}));
    EXPECT_EQ(kernels[i].at("block"), json::array({16, 16, 1}));
    EXPECT_EQ(kernels[i].at("stream"), 1);
    EXPECT_EQ(kernels[i].at("api"), i < 6    ? "__cudaLaunchKernel"
                                    : i == 6 ? "cudaLaunchKernel"
                                             : "cudaLaunchKernelExC");
  }
  // The chain is serial: every GEMM depends on all earlier ones.
  const auto deps = dependencies(trace);
  for (std::size_t i = 1; i < kernels.size(); ++i) {
    EXPECT_EQ(deps.at(kernels[i].at("corr")).size(), i);
  }
  // Timed by two events on the same stream around the chain.
  const auto records = trace.of("event_record");
  ASSERT_EQ(records.size(), 2u);
  EXPECT_LT(records[0].at("corr").get<std::int64_t>(), kernels.front().at("corr"));
  EXPECT_GT(records[1].at("corr").get<std::int64_t>(), kernels.back().at("corr"));
  EXPECT_EQ(trace.of("event_sync").size(), 1u);
}

TEST_F(CudartPrograms, PerThreadDefaultStreamEntryPoints) {
  const ProgramRun run = run_program("ptds");
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const Trace trace = only_trace();
  expect_well_formed(trace);
  const auto kernels = trace.of("kernel");
  ASSERT_EQ(kernels.size(), 5u);
  // Worker threads 1 and 2 (the main thread registered the kernels first: thread 0).
  for (int i = 0; i < 4; ++i) {
    const int tid = i < 2 ? 1 : 2;
    EXPECT_EQ(kernels[i].at("tid"), tid);
    EXPECT_EQ(kernels[i].at("stream"), 1000000 + tid);
    EXPECT_EQ(kernels[i].at("api"), "__cudaLaunchKernel_ptsz");
  }
  EXPECT_EQ(kernels[4].at("stream"), 0) << "cudaStreamLegacy is the legacy default stream";
  std::vector<std::string> copy_apis;
  for (const json& c : trace.of("memcpy")) {
    copy_apis.push_back(c.at("api"));
    EXPECT_EQ(c.at("stream"), 1000000 + c.at("tid").get<int>());
  }
  EXPECT_EQ(copy_apis, (std::vector<std::string>{"cudaMemcpyAsync_ptsz", "cudaMemcpy_ptds",
                                                 "cudaMemcpyAsync_ptsz", "cudaMemcpy_ptds"}));
  const auto syncs = trace.of("stream_sync");
  ASSERT_EQ(syncs.size(), 3u);
  EXPECT_EQ(syncs[0].at("stream"), 1000001);
  EXPECT_EQ(syncs[1].at("stream"), 1000002);
  EXPECT_EQ(syncs[2].at("stream"), 0);
}

TEST_F(CudartPrograms, DevicePropertiesFollowTheConfiguration) {
  const ProgramRun run = run_program("device_query", Mode::kPreload,
                                     {{"POWERTRAIN_EMU_DEVICES", "4"},
                                      {"POWERTRAIN_EMU_GPU", "a100-sxm"},
                                      {"POWERTRAIN_EMU_GPU_NAME", "NVIDIA A100-SXM4-40GB"},
                                      {"POWERTRAIN_EMU_MEMORY_BYTES", "42949672960"},
                                      {"POWERTRAIN_EMU_SM_COUNT", "108"},
                                      {"POWERTRAIN_EMU_CC", "8.0"},
                                      {"POWERTRAIN_EMU_CLOCK_MHZ", "1410"},
                                      {"RANK", "3"},
                                      {"WORLD_SIZE", "8"},
                                      {"LOCAL_RANK", "3"}});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  for (const char* line :
       {"device_count=4\n", "runtime_version=13000\n", "driver_version=13000\n",
        "name=NVIDIA A100-SXM4-40GB\n", "total_global_mem=42949672960\n", "sm_count=108\n",
        "cc=8.0\n", "attr_sm_count=108\n", "attr_cc=8.0\n", "attr_clock_khz=1410000\n",
        "warp_size=32\n", "shared_optin=166912\n", "max_threads_per_block=1024\n"}) {
    EXPECT_NE(run.out.find(line), std::string::npos) << line << " in\n" << run.out;
  }
  const Trace trace = only_trace();
  const json& process = trace.lines.front();
  EXPECT_EQ(process.at("rank"), 3);
  EXPECT_EQ(process.at("world_size"), 8);
  EXPECT_EQ(process.at("local_rank"), 3);
  EXPECT_EQ(process.at("devices"), 4);
  EXPECT_EQ(process.at("gpu"), "a100-sxm");
  // One 1 MiB allocation per device, each after selecting it.
  const auto mallocs = trace.of("malloc");
  ASSERT_EQ(mallocs.size(), 4u);
  for (int d = 0; d < 4; ++d) {
    EXPECT_EQ(mallocs[d].at("dev"), d);
    EXPECT_EQ(mallocs[d].at("used"), 1 << 20);
  }
  const auto set_devices = trace.of("set_device");
  ASSERT_EQ(set_devices.size(), 4u);  // 1, 2, 3 and back to 0 (0 → 0 is not a change)
  EXPECT_EQ(set_devices[0].at("dev"), 1);
  EXPECT_EQ(set_devices[3].at("dev"), 0);
  EXPECT_EQ(trace.lines.back().at("peak_used"), json::array({1 << 20, 1 << 20, 1 << 20, 1 << 20}));
  ASSERT_EQ(trace.of("misuse").size(), 1u);  // the unknown attribute the program probes
  EXPECT_EQ(trace.of("misuse")[0].at("api"), "cudaDeviceGetAttribute");
}

TEST_F(CudartPrograms, StaticRuntimeIsDetectedAndExplained) {
  const ProgramRun run = run_program("static_runtime");
  EXPECT_NE(run.exit_code, 0) << "a statically linked runtime cannot be emulated";
  EXPECT_NE(run.err.find("linked with the static CUDA runtime"), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("nvcc -cudart shared"), std::string::npos) << run.err;
  const Trace trace = only_trace();
  const auto unsupported = trace.of("unsupported");
  ASSERT_EQ(unsupported.size(), 1u);
  EXPECT_EQ(unsupported[0].at("api"), "static-cudart");
}

// A shared library with its own static runtime (built with nvcc's default) cannot be emulated:
// the program's own calls are, the library's fail, and the emulator names the library and says
// how to rebuild it (its runtime asks the driver for export tables the emulator does not have).
TEST_F(CudartPrograms, StaticRuntimeInsideASharedLibraryIsNamed) {
  const std::filesystem::path driver =
      std::filesystem::path(kInterposerPath).parent_path() / "driver";
  if (!std::filesystem::exists(program_path("static_plugin_host")) ||
      !std::filesystem::exists(driver / "libcuda.so.1")) {
    GTEST_SKIP() << "static_plugin_host or the emulator's libcuda.so.1 not built";
  }
  const ProgramRun run =
      run_program("static_plugin_host", Mode::kPreload, {{"LD_LIBRARY_PATH", driver.string()}});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("own runtime 0, 1 device(s)"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("plugin cudaMalloc -> 801"), std::string::npos) << run.out;
  EXPECT_NE(run.err.find("libstatic_plugin.so carries its own static CUDA runtime"),
            std::string::npos)
      << run.err;
  EXPECT_NE(run.err.find("nvcc -cudart shared"), std::string::npos) << run.err;
  const Trace trace = only_trace();
  const auto unsupported = trace.of("unsupported");
  ASSERT_FALSE(unsupported.empty());
  EXPECT_EQ(unsupported[0].at("api"), "cuGetExportTable from libstatic_plugin.so");
}

// Thrust and CUB run to their end: every algorithm's kernels are recorded in program order (CUB's
// kernel families by name; their grids follow CUB's tuning for the emulated H100), CUB's
// temporary-storage queries and runs both succeed, the reduction's result comes back as a 4-byte
// copy, and every device vector is freed. Nothing is unsupported or misused.
TEST_F(CudartPrograms, ThrustAndCubAlgorithmsRunWithTheirKernelsRecorded) {
  if (!std::filesystem::exists(program_path("thrust_cub"))) GTEST_SKIP() << "thrust_cub not built";
  const ProgramRun run = run_program("thrust_cub");
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("thrust_cub: 1048576 values copied back"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("thrust_cub: done"), std::string::npos) << run.out;
  const Trace trace = only_trace();
  expect_well_formed(trace);
  EXPECT_TRUE(trace.of("unsupported").empty());
  EXPECT_TRUE(trace.of("misuse").empty());
  // The order of the algorithms' kernel families (consecutive launches of one family merged).
  const std::vector<std::string> families = {"for_each",           "transform_kernel",
                                             "DeviceReduceKernel", "DeviceReduceSingleTileKernel",
                                             "DeviceRadixSort",    "DeviceScan"};
  std::vector<std::string> seen;
  for (const json& k : trace.of("kernel")) {
    const std::string name = k.at("name");
    for (const std::string& family : families) {
      if (name.find(family) != std::string::npos) {
        if (seen.empty() || seen.back() != family) seen.push_back(family);
        break;
      }
    }
  }
  const std::vector<std::string> expected = {"for_each",
                                             "transform_kernel",
                                             "DeviceReduceKernel",
                                             "DeviceReduceSingleTileKernel",
                                             "DeviceRadixSort",
                                             "DeviceScan",
                                             "for_each",
                                             "DeviceReduceKernel",
                                             "DeviceReduceSingleTileKernel",
                                             "for_each",
                                             "DeviceRadixSort"};
  EXPECT_EQ(seen, expected);
  // thrust::reduce returns its result with a 4-byte copy; the host_vector copy is 4 MiB.
  std::vector<std::int64_t> to_host;
  for (const json& m : trace.of("memcpy")) {
    if (m.at("kind") == "DtoH") to_host.push_back(m.at("bytes"));
  }
  EXPECT_EQ(to_host, (std::vector<std::int64_t>{4, 4 << 20}));
  EXPECT_EQ(trace.of("malloc").size(), trace.of("free").size());
  EXPECT_EQ(trace.lines.back().at("used"), json::array({0}));
}

TEST_F(CudartPrograms, ConcurrentLaunchesLoseNothing) {
  const ProgramRun run = run_program("concurrent_launch");
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const Trace trace = only_trace();
  expect_well_formed(trace);
  const auto kernels = trace.of("kernel");
  ASSERT_EQ(kernels.size(), 4u * 20000u);
  std::set<std::int64_t> corrs;
  std::map<std::int64_t, std::set<std::int64_t>> streams_of_thread;
  std::map<std::int64_t, std::int64_t> last_corr_of_thread;
  for (const json& k : kernels) {
    const std::int64_t corr = k.at("corr");
    const std::int64_t tid = k.at("tid");
    EXPECT_TRUE(corrs.insert(corr).second) << "duplicate correlation id " << corr;
    streams_of_thread[tid].insert(k.at("stream").get<std::int64_t>());
    EXPECT_GT(corr, last_corr_of_thread[tid]) << "per-thread order";
    last_corr_of_thread[tid] = corr;
  }
  ASSERT_EQ(streams_of_thread.size(), 4u);
  std::set<std::int64_t> all_streams;
  for (const auto& [tid, streams] : streams_of_thread) {
    ASSERT_EQ(streams.size(), 1u) << "thread " << tid << " used its own stream only";
    all_streams.insert(*streams.begin());
  }
  EXPECT_EQ(all_streams, (std::set<std::int64_t>{1, 2, 3, 4}));
  EXPECT_EQ(trace.of("event_record").size(), 4u * 20u);
  EXPECT_EQ(trace.of("stream_sync").size(), 4u);
}

TEST_F(CudartPrograms, ForkedChildWritesItsOwnTrace) {
  const ProgramRun run = run_program("fork_child");
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  const std::vector<Trace> traces = load_traces(trace_dir());
  ASSERT_EQ(traces.size(), 2u);
  int parents = 0;
  int children = 0;
  for (const Trace& trace : traces) {
    expect_well_formed(trace);
    std::vector<std::string> names;
    for (const json& k : trace.of("kernel")) names.push_back(k.at("name"));
    if (names.size() == 2) {
      ++parents;
      EXPECT_EQ(names, (std::vector<std::string>{"_Z13parent_kernelv", "_Z13parent_kernelv"}));
      EXPECT_EQ(trace.of("kernel")[1].at("grid"), json::array({3, 1, 1}));
    } else {
      ++children;
      EXPECT_EQ(names, (std::vector<std::string>{"_Z12child_kernelv"}));
      EXPECT_TRUE(trace.of("register").empty()) << "the parent's records are not repeated";
    }
  }
  EXPECT_EQ(parents, 1);
  EXPECT_EQ(children, 1);
}

TEST_F(CudartPrograms, Cuda12DropInPresentsTheCuda12Abi) {
  const int code = in_child_with_cuda12(dir_, [](void* library) {
    using Version = int (*)(int*);
    using Properties = int (*)(void*, int);
    auto runtime_version = reinterpret_cast<Version>(::dlsym(library, "cudaRuntimeGetVersion"));
    auto properties_v2 =
        reinterpret_cast<Properties>(::dlsym(library, "cudaGetDeviceProperties_v2"));
    if (runtime_version == nullptr || properties_v2 == nullptr) return 1;
    int version = 0;
    if (runtime_version(&version) != 0 || version != 12080) return 2;
    // CUDA 12's cudaDeviceProp: 1032 bytes; clockRate at offset 348, major/minor at 360/364,
    // multiProcessorCount at 388, memoryClockRate at 608 (driver_types.h of CUDA 12).
    alignas(8) unsigned char prop[1032 + 64];
    std::memset(prop, 0xab, sizeof prop);
    if (properties_v2(prop, 0) != 0) return 3;
    int value = 0;
    if (std::strcmp(reinterpret_cast<const char*>(prop), "NVIDIA H100 80GB HBM3") != 0) return 4;
    std::memcpy(&value, prop + 348, 4);
    if (value != 1980000) return 5;
    std::memcpy(&value, prop + 360, 4);
    if (value != 9) return 6;
    std::memcpy(&value, prop + 388, 4);
    if (value != 132) return 7;
    std::memcpy(&value, prop + 608, 4);
    if (value != 2619000) return 8;
    if (prop[1032] != 0xab) return 9;  // nothing written past the CUDA 12 struct
    return 0;
  });
  EXPECT_EQ(code, 0) << "see the step numbers in the test body";
}

}  // namespace
}  // namespace powertrain::testing_emu
