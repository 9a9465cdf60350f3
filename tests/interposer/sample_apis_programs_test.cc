// The runtime calls of NVIDIA's cuda-samples that the emulator used to answer with a stub
// (issue 18): memory pools (streamOrderedAllocation[P2P]), graph structure queries and capture
// into an existing graph (the graph samples print their graphs), IPC handles (simpleIPC). Each
// test program runs under the interposer and its results and trace records are checked one by one.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "interposer_test_util.h"

namespace powertrain::testing_emu {
namespace {

using nlohmann::json;

class SampleApiPrograms : public EmulationTest {
 protected:
  void skip_unless_built(const std::string& name) {
    if (!std::filesystem::exists(program_path(name))) GTEST_SKIP() << name << " not built";
  }
};

// A pool made on device 1, opened to device 0, allocates on its own device from a device-0
// stream; its used/high counters follow the allocation and the reset; attributes read back as
// set. Three misuses are refused by name; nothing is unsupported.
TEST_F(SampleApiPrograms, MemoryPoolsAreCreatedOpenedAndCounted) {
  skip_unless_built("mem_pools");
  const ProgramRun run =
      run_program("mem_pools", Mode::kPreload, {{"POWERTRAIN_EMU_DEVICES", "2"}});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("mem_pools: threshold_max 1 follow 1 peer_rw 1 own_rw 1 device 1 "
                         "used 1048576 reserved 1048576 after_free 0 high 1048576 "
                         "high_after_reset 0"),
            std::string::npos)
      << run.out;
  const Trace trace = only_trace();
  EXPECT_TRUE(trace.of("unsupported").empty());
  std::vector<std::tuple<std::string, int, std::int64_t>> mallocs;
  for (const json& m : trace.of("malloc")) {
    if (m.at("ok").get<bool>()) mallocs.emplace_back(m.at("api"), m.at("dev"), m.at("bytes"));
  }
  EXPECT_EQ(mallocs, (std::vector<std::tuple<std::string, int, std::int64_t>>{
                         {"cudaMallocAsync", 0, 4096}, {"cudaMallocFromPoolAsync", 1, 1 << 20}}));
  std::vector<std::string> misuse;
  for (const json& m : trace.of("misuse")) misuse.push_back(m.at("api"));
  EXPECT_EQ(misuse, (std::vector<std::string>{"cudaMemPoolSetAccess", "cudaMemPoolDestroy",
                                              "cudaMallocFromPoolAsync"}));
  EXPECT_EQ(trace.of("free").size(), 2u);
}

// cudaGraphDestroyNode removes a node with its edges (a side memset, then a child graph node with
// its inlined memset and kernel); each launch runs what is left. The child node's graph reads back
// its two nodes; an edit of it is refused by name (the emulator's copy would not reach the node),
// and a destroyed node's handle is refused.
TEST_F(SampleApiPrograms, GraphNodesAreDestroyedWithTheirEdges) {
  skip_unless_built("graph_edit");
  const ProgramRun run = run_program("graph_edit");
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("graph_edit: nodes 4 -> 3 -> 2, edges 3 -> 2 -> 0, child nodes 2, "
                         "child edit refused"),
            std::string::npos)
      << run.out;
  const Trace trace = only_trace();
  std::vector<std::string> kernels;
  for (const json& k : trace.of("kernel")) kernels.push_back(k.at("name"));
  EXPECT_EQ(kernels,
            (std::vector<std::string>{"_Z5firstPfi", "_Z5innerPfi", "_Z4lastPfi", "_Z5firstPfi",
                                      "_Z5innerPfi", "_Z4lastPfi", "_Z5firstPfi", "_Z4lastPfi"}));
  EXPECT_EQ(trace.of("memset").size(), 3u);  // the child's twice, the side memset once
  std::vector<std::string> unsupported;
  for (const json& u : trace.of("unsupported")) unsupported.push_back(u.at("api"));
  EXPECT_EQ(unsupported,
            std::vector<std::string>{"cudaGraphAddEmptyNode (editing a child graph node's graph)"});
  std::vector<std::string> misuse;
  for (const json& m : trace.of("misuse")) misuse.push_back(m.at("api"));
  EXPECT_EQ(misuse, std::vector<std::string>{"cudaGraphNodeGetType"});
}

// streamOrderedAllocationIPC's pool and pointer export: the forked child (its trace names its
// parent) imports the pool and a stand-in of the exported 1 MiB allocation, clears and frees it;
// the exporting process gets its own pointer back; a pool without a shareable handle type is
// refused its export (one misuse). Nothing is unsupported.
TEST_F(SampleApiPrograms, MemoryPoolsAndTheirAllocationsAreSharedWithAnotherProcess) {
  skip_unless_built("pool_ipc");
  const ProgramRun run = run_program("pool_ipc");
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("pool_ipc: exported 1048576 bytes, child exit 0, own import same 1, "
                         "plain pool refused 1"),
            std::string::npos)
      << run.out;
  const std::vector<Trace> traces = load_traces(trace_dir());
  ASSERT_EQ(traces.size(), 2u);
  int children = 0;
  for (const Trace& trace : traces) {
    EXPECT_TRUE(trace.of("unsupported").empty());
    const bool child = trace.lines.front().contains("forked_from");
    std::vector<std::string> mallocs;
    for (const json& m : trace.of("malloc")) mallocs.push_back(m.at("api"));
    if (child) {
      ++children;
      EXPECT_EQ(mallocs, std::vector<std::string>{"cudaMemPoolImportPointer"});
      EXPECT_EQ(trace.of("malloc")[0].at("bytes"), 1 << 20);
      EXPECT_EQ(trace.of("free").size(), 1u);
      EXPECT_TRUE(trace.of("misuse").empty());
    } else {
      EXPECT_EQ(mallocs, std::vector<std::string>{"cudaMallocFromPoolAsync"});
      std::vector<std::string> misuse;
      for (const json& m : trace.of("misuse")) misuse.push_back(m.at("api"));
      EXPECT_EQ(misuse, std::vector<std::string>{"cudaMemPoolExportToShareableHandle"});
    }
  }
  EXPECT_EQ(children, 1);
}

// cudaMemcpyBatchAsync moves four blocks (three in from the host, one on the device) as four
// copies on the batch's stream, refusing the legacy default stream; the batched prefetch and
// discard are accepted hints; a created pool made current serves cudaMallocAsync, and destroying
// it makes the default pool current again.
TEST_F(SampleApiPrograms, BatchedCopiesAndTheCurrentMemoryPool) {
  skip_unless_built("batch_copies");
  const ProgramRun run = run_program("batch_copies", Mode::kPreload, {});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("batch_copies: 4 copies in one batch, 3 MiB from the current pool"),
            std::string::npos)
      << run.out;
  const Trace trace = only_trace();
  std::vector<std::pair<std::string, std::int64_t>> batch;
  std::set<std::int64_t> streams;
  for (const json& c : trace.of("memcpy")) {
    if (c.at("api") != "cudaMemcpyBatchAsync") continue;
    batch.emplace_back(c.at("kind"), c.at("bytes"));
    streams.insert(c.at("stream").get<std::int64_t>());
  }
  EXPECT_EQ(batch, (std::vector<std::pair<std::string, std::int64_t>>{
                       {"HtoD", 65536}, {"HtoD", 65536}, {"HtoD", 65536}, {"DtoD", 65536}}));
  ASSERT_EQ(streams.size(), 1u);
  EXPECT_NE(*streams.begin(), 0);
  std::vector<std::string> misuse;
  for (const json& m : trace.of("misuse")) misuse.push_back(m.at("api"));
  EXPECT_EQ(misuse, std::vector<std::string>{"cudaMemcpyBatchAsync"});
  EXPECT_TRUE(trace.of("unsupported").empty());
  bool pool_allocation = false;
  for (const json& m : trace.of("malloc")) {
    pool_allocation =
        pool_allocation || (m.at("api") == "cudaMallocAsync" && m.at("bytes") == (3 << 20));
  }
  EXPECT_TRUE(pool_allocation);
}

// Under the CUDA 12 drop-in cudaMemcpyBatchAsync has CUDA 12.8's parameters (failIdx before the
// stream). In a child that dlopens libcudart.so.12: a two-copy batch lands and leaves failIdx at
// SIZE_MAX; a batch whose second copy overruns its allocation fails with failIdx 1. Returns the
// failing step, 0 when all passed.
TEST_F(SampleApiPrograms, Cuda12DropInReadsTheCuda12BatchCopyArguments) {
  const int code = in_child_with_cuda12(dir_, [](void* lib) {
    using Malloc = int (*)(void**, size_t);
    using StreamCreate = int (*)(void**);
    using Sync = int (*)(void*);
    using Copy = int (*)(void*, const void*, size_t, int);
    // cudaMemcpyAttributes: srcAccessOrder, srcLocHint, dstLocHint (type, id), flags.
    struct Attributes {
      int src_access_order;
      int src_hint[2];
      int dst_hint[2];
      unsigned flags;
    };
    using Batch12 = int (*)(void* const*, const void* const*, const size_t*, size_t, Attributes*,
                            size_t*, size_t, size_t*, void*);
    auto malloc_device = reinterpret_cast<Malloc>(::dlsym(lib, "cudaMalloc"));
    auto stream_create = reinterpret_cast<StreamCreate>(::dlsym(lib, "cudaStreamCreate"));
    auto sync = reinterpret_cast<Sync>(::dlsym(lib, "cudaStreamSynchronize"));
    auto copy = reinterpret_cast<Copy>(::dlsym(lib, "cudaMemcpy"));
    auto batch = reinterpret_cast<Batch12>(::dlsym(lib, "cudaMemcpyBatchAsync"));
    if (!malloc_device || !stream_create || !sync || !copy || !batch) return 1;
    void* stream = nullptr;
    void* device = nullptr;
    if (stream_create(&stream) != 0 || malloc_device(&device, 4096) != 0) return 2;
    int a[256], b[256], back[512];
    for (int i = 0; i < 256; ++i) {
      a[i] = i;
      b[i] = -i;
    }
    void* dsts[2] = {device, static_cast<char*>(device) + 1024};
    const void* srcs[2] = {a, b};
    size_t sizes[2] = {1024, 1024};
    Attributes attrs = {};
    attrs.src_access_order = 1;  // cudaMemcpySrcAccessOrderStream
    size_t index = 0;
    size_t fail = 7;
    if (batch(dsts, srcs, sizes, 2, &attrs, &index, 1, &fail, stream) != 0) return 3;
    if (fail != static_cast<size_t>(-1)) return 4;
    if (sync(stream) != 0 || copy(back, device, 2048, 2) != 0) return 5;
    if (back[10] != 10 || back[256 + 10] != -10) return 6;
    sizes[1] = 8192;  // overruns the 4 KiB allocation
    if (batch(dsts, srcs, sizes, 2, &attrs, &index, 1, &fail, stream) == 0) return 7;
    return fail == 1 ? 0 : 8;
  });
  EXPECT_EQ(code, 0) << "see the step numbers in the test body";
}

// The 3D batch under the CUDA 12 drop-in has CUDA 12.8's failIdx before the flags: 64 packed bytes
// into rows of 32 on the device and back arrive whole; a zero extent fails with failIdx 0.
// Returns the failing step.
TEST_F(SampleApiPrograms, Cuda12DropInReadsTheCuda12Batch3DArguments) {
  const int code = in_child_with_cuda12(dir_, [](void* lib) {
    using Malloc = int (*)(void**, size_t);
    using StreamCreate = int (*)(void**);
    using Sync = int (*)(void*);
    // cudaMemcpy3DBatchOp as driver_types.h lays it out (pointer operands only here).
    struct Operand {
      int type;  // cudaMemcpyOperandTypePointer = 1
      struct {
        void* ptr;
        size_t row_length;
        size_t layer_height;
        int hint[2];  // cudaMemLocation
      } ptr;
    };
    struct BatchOp {
      Operand src;
      Operand dst;
      size_t extent[3];
      int src_access_order;  // cudaMemcpySrcAccessOrderStream = 1
      unsigned flags;
    };
    static_assert(sizeof(BatchOp) == 112);
    using Batch3D12 = int (*)(size_t, BatchOp*, size_t*, unsigned long long, void*);
    auto malloc_device = reinterpret_cast<Malloc>(::dlsym(lib, "cudaMalloc"));
    auto stream_create = reinterpret_cast<StreamCreate>(::dlsym(lib, "cudaStreamCreate"));
    auto sync = reinterpret_cast<Sync>(::dlsym(lib, "cudaStreamSynchronize"));
    auto batch = reinterpret_cast<Batch3D12>(::dlsym(lib, "cudaMemcpy3DBatchAsync"));
    if (!malloc_device || !stream_create || !sync || !batch) return 1;
    void* stream = nullptr;
    void* device = nullptr;
    if (stream_create(&stream) != 0 || malloc_device(&device, 4096) != 0) return 2;
    unsigned char in[64], out[64] = {};
    for (int i = 0; i < 64; ++i) in[i] = static_cast<unsigned char>(200 - i);
    BatchOp op = {};
    op.src.type = 1;
    op.src.ptr.ptr = in;
    op.dst.type = 1;
    op.dst.ptr.ptr = device;
    op.dst.ptr.row_length = 32;
    op.extent[0] = 16;
    op.extent[1] = 2;
    op.extent[2] = 2;
    op.src_access_order = 1;
    size_t fail = 7;
    if (batch(1, &op, &fail, 0, stream) != 0) return 3;
    BatchOp back = op;
    back.src = op.dst;
    back.dst = op.src;
    back.dst.ptr.ptr = out;
    if (batch(1, &back, &fail, 0, stream) != 0 || sync(stream) != 0) return 4;
    for (int i = 0; i < 64; ++i) {
      if (out[i] != in[i]) return 5;
    }
    back.extent[0] = 0;
    if (batch(1, &back, &fail, 0, stream) == 0) return 6;
    return fail == 0 ? 0 : 7;
  });
  EXPECT_EQ(code, 0) << "see the step numbers in the test body";
}

// cudaGetDriverEntryPoint asks for the runtime's CUDA version: under the CUDA 12 drop-in a driver
// function renamed in CUDA 13 comes in its CUDA 12.8 form (cuMemcpyBatchAsync with failIdx,
// cuCtxGetDevice without a context), under CUDA 13 in the newest. Returns the failing step.
TEST_F(SampleApiPrograms, DriverEntryPointsFollowTheRuntimeVersion) {
  const auto forms = [](void* lib, const char* batch_form, const char* device_form) {
    using EntryPoint = int (*)(const char*, void**, unsigned long long, int*);
    auto entry = reinterpret_cast<EntryPoint>(::dlsym(lib, "cudaGetDriverEntryPoint"));
    if (entry == nullptr) return 1;
    void* batch = nullptr;
    void* device = nullptr;
    int status = -1;
    if (entry("cuMemcpyBatchAsync", &batch, 0, &status) != 0 || status != 0) return 2;
    if (entry("cuCtxGetDevice", &device, 0, &status) != 0 || status != 0) return 3;
    if (batch != ::dlsym(lib, batch_form)) return 4;
    return device == ::dlsym(lib, device_form) ? 0 : 5;
  };
  const int cuda12 = in_child_with_cuda12(
      dir_, [&](void* lib) { return forms(lib, "cuMemcpyBatchAsync", "cuCtxGetDevice"); });
  EXPECT_EQ(cuda12, 0) << "CUDA 12 drop-in: see the step numbers in the test body";
  // The CUDA 13 drop-in, in a child too (the library's constructor must not run in this binary).
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setenv("POWERTRAIN_EMU_DIR", (dir_ / "trace13").c_str(), 1);
    void* lib = ::dlopen((std::string(kCudartDir) + "/libcudart.so.13").c_str(), RTLD_NOW);
    ::_exit(lib == nullptr ? 100 : forms(lib, "cuMemcpyBatchAsync_v2", "cuCtxGetDevice_v2"));
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  EXPECT_EQ(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0) << "CUDA 13 drop-in";
}

// Structure queries answer with the program's own nodes and edges (a child graph is one node,
// depending on what it was added after); capture into the graph appends after the child node and
// returns the same graph, its dependencies read and extended (one more edge, D → the second
// captured kernel); the 4 + 2 + 2 kernels replay at each of the 2 launches.
TEST_F(SampleApiPrograms, GraphStructureQueriesAndCaptureIntoAGraph) {
  skip_unless_built("graph_structure");
  const ProgramRun run = run_program("graph_structure");
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("graph_structure: nodes 5 edges 5 roots 1 root_is_a 1 deps_of_d 2 "
                         "dependents_of_a 2 child_deps 1 captured_into_same 1 nodes_after 7 "
                         "edges_after 8 dot_nodes 7 dot_edges 8"),
            std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("graph_structure: host runs 0 0 1"), std::string::npos) << run.out;
  EXPECT_EQ(run.err.find("not supported"), std::string::npos) << run.err;
  const Trace trace = only_trace();
  EXPECT_TRUE(trace.of("unsupported").empty());
  EXPECT_TRUE(trace.of("misuse").empty());
  auto launches = trace.of("graph_launch");
  ASSERT_EQ(launches.size(), 3u);
  EXPECT_EQ(launches.back().at("nodes"), 1);  // the host-node graph
  EXPECT_EQ(trace.of("host_func").size(), 1u);
  launches.pop_back();
  for (const json& l : launches) EXPECT_EQ(l.at("nodes"), 8) << l.dump();
  const auto kernels = trace.of("kernel");
  ASSERT_EQ(kernels.size(), 16u);  // nothing was launched outside the graph
  for (const json& k : kernels) EXPECT_TRUE(k.contains("graph")) << k.dump();
}

// The same process and a forked child open the exported buffer itself; a fresh process opens a
// stand-in allocation of the same size (recorded in its trace, freed on close) and is told once
// that emulated processes share no memory. The refused misuses are recorded by name.
TEST_F(SampleApiPrograms, IpcHandlesOpenAcrossProcesses) {
  skip_unless_built("ipc_handles");
  const ProgramRun run = run_program("ipc_handles");
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("ipc: same process same_pointer 1 device_memory 1"), std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("ipc: forked child same_pointer 1 device_memory 1"), std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("ipc: other process same_pointer 0 device_memory 1"), std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("ipc: parent done"), std::string::npos) << run.out;
  EXPECT_NE(run.err.find("emulated processes share no memory"), std::string::npos) << run.err;
  const std::vector<Trace> traces = load_traces(trace_dir());
  ASSERT_EQ(traces.size(), 3u);
  int stand_ins = 0;
  std::multiset<std::string> misuse;
  for (const Trace& t : traces) {
    EXPECT_TRUE(t.of("unsupported").empty());
    for (const json& m : t.of("malloc")) stand_ins += m.at("api") == "cudaIpcOpenMemHandle";
    for (const json& f : t.of("free")) {
      if (f.at("api") == "cudaIpcCloseMemHandle") {
        EXPECT_EQ(f.at("bytes"), 1 << 20);
      }
    }
    for (const json& m : t.of("misuse")) misuse.insert(m.at("api").get<std::string>());
  }
  EXPECT_EQ(stand_ins, 1);
  EXPECT_EQ(misuse, (std::multiset<std::string>{"cudaIpcGetEventHandle", "cudaIpcGetMemHandle",
                                                "cudaIpcCloseMemHandle"}));
}

// The graph edge calls whose signatures changed in CUDA 13 (edge data added; CUDA 12 has the old
// form under the plain name and the edge-data form as `_v2`): the CUDA 12 drop-in reads a plain
// call with CUDA 12's parameters. Run in a child that dlopens libcudart.so.12 (its constructor
// must not run in the test binary): two empty nodes, one edge added the CUDA 12 way and one with
// `_v2`, then counted back with both forms. Returns the failing step, 0 when all passed.
TEST_F(SampleApiPrograms, Cuda12DropInReadsTheCuda12GraphEdgeSignatures) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setenv("POWERTRAIN_EMU_DIR", (dir_ / "trace").c_str(), 1);
    void* lib = ::dlopen((std::string(kCudartDir) + "/libcudart.so.12").c_str(), RTLD_NOW);
    if (lib == nullptr) ::_exit(100);
    using Create = int (*)(void**, unsigned);
    using AddEmpty = int (*)(void**, void*, const void* const*, size_t);
    using Add12 = int (*)(void*, const void* const*, const void* const*, size_t);
    using Add13 = int (*)(void*, const void* const*, const void* const*, const void*, size_t);
    using Edges12 = int (*)(void*, void**, void**, size_t*);
    using Edges13 = int (*)(void*, void**, void**, void*, size_t*);
    using Deps12 = int (*)(void*, void**, size_t*);
    using Deps13 = int (*)(void*, void**, void*, size_t*);
    auto create = reinterpret_cast<Create>(::dlsym(lib, "cudaGraphCreate"));
    auto add_empty = reinterpret_cast<AddEmpty>(::dlsym(lib, "cudaGraphAddEmptyNode"));
    auto add12 = reinterpret_cast<Add12>(::dlsym(lib, "cudaGraphAddDependencies"));
    auto add13 = reinterpret_cast<Add13>(::dlsym(lib, "cudaGraphAddDependencies_v2"));
    auto edges12 = reinterpret_cast<Edges12>(::dlsym(lib, "cudaGraphGetEdges"));
    auto edges13 = reinterpret_cast<Edges13>(::dlsym(lib, "cudaGraphGetEdges_v2"));
    auto deps12 = reinterpret_cast<Deps12>(::dlsym(lib, "cudaGraphNodeGetDependencies"));
    auto deps13 = reinterpret_cast<Deps13>(::dlsym(lib, "cudaGraphNodeGetDependencies_v2"));
    auto users12 = reinterpret_cast<Deps12>(::dlsym(lib, "cudaGraphNodeGetDependentNodes"));
    if (!create || !add_empty || !add12 || !add13 || !edges12 || !edges13 || !deps12 || !deps13 ||
        !users12) {
      ::_exit(1);
    }
    void* graph = nullptr;
    void* a = nullptr;
    void* b = nullptr;
    void* c = nullptr;
    if (create(&graph, 0) != 0 || add_empty(&a, graph, nullptr, 0) != 0 ||
        add_empty(&b, graph, nullptr, 0) != 0 || add_empty(&c, graph, nullptr, 0) != 0) {
      ::_exit(2);
    }
    if (add12(graph, &a, &b, 1) != 0) ::_exit(3);           // a → b, CUDA 12 form
    if (add13(graph, &b, &c, nullptr, 1) != 0) ::_exit(4);  // b → c, edge-data form
    size_t count = 0;
    if (edges12(graph, nullptr, nullptr, &count) != 0 || count != 2) ::_exit(5);
    count = 0;
    if (edges13(graph, nullptr, nullptr, nullptr, &count) != 0 || count != 2) ::_exit(6);
    void* from[2] = {};
    void* to[2] = {};
    count = 2;
    if (edges12(graph, from, to, &count) != 0 || count != 2 || from[0] != a || to[0] != b ||
        from[1] != b || to[1] != c) {
      ::_exit(7);
    }
    void* dep = nullptr;
    count = 1;
    if (deps12(c, &dep, &count) != 0 || count != 1 || dep != b) ::_exit(8);
    count = 0;
    if (deps13(b, nullptr, nullptr, &count) != 0 || count != 1) ::_exit(9);
    count = 1;
    if (users12(a, &dep, &count) != 0 || count != 1 || dep != b) ::_exit(10);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "see the step numbers in the test body";
}

// cudaMemPrefetchAsync under the CUDA 12 drop-in has CUDA 12's parameters (devPtr, count,
// dstDevice, stream): the stream is the fourth argument, where CUDA 13 has the flags. And the
// driver's graph edge calls, built into the drop-in too, keep their edge-data arguments there.
// cudaMemAdvise takes CUDA 12's int device, and both hints read back by range.
// In a child that dlopens libcudart.so.12. Returns the failing step, 0 when all passed.
TEST_F(SampleApiPrograms, Cuda12DropInReadsTheCuda12PrefetchAndKeepsDriverEdgeCalls) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setenv("POWERTRAIN_EMU_DIR", (dir_ / "trace").c_str(), 1);
    void* lib = ::dlopen((std::string(kCudartDir) + "/libcudart.so.12").c_str(), RTLD_NOW);
    if (lib == nullptr) ::_exit(100);
    using StreamCreate = int (*)(void**);
    using MallocManaged = int (*)(void**, size_t, unsigned);
    using Prefetch12 = int (*)(const void*, size_t, int, void*);
    using GraphCreate = int (*)(void**, unsigned);
    using AddEmpty = int (*)(void**, void*, const void* const*, size_t);
    using AddEdges = int (*)(void*, const void* const*, const void* const*, const void*, size_t);
    using GetEdges = int (*)(void*, void**, void**, void*, size_t*);
    auto stream_create = reinterpret_cast<StreamCreate>(::dlsym(lib, "cudaStreamCreate"));
    auto malloc_managed = reinterpret_cast<MallocManaged>(::dlsym(lib, "cudaMallocManaged"));
    auto prefetch = reinterpret_cast<Prefetch12>(::dlsym(lib, "cudaMemPrefetchAsync"));
    auto graph_create = reinterpret_cast<GraphCreate>(::dlsym(lib, "cuGraphCreate"));
    auto add_empty = reinterpret_cast<AddEmpty>(::dlsym(lib, "cuGraphAddEmptyNode"));
    auto add_edges = reinterpret_cast<AddEdges>(::dlsym(lib, "cuGraphAddDependencies_v2"));
    auto get_edges = reinterpret_cast<GetEdges>(::dlsym(lib, "cuGraphGetEdges_v2"));
    if (!stream_create || !malloc_managed || !prefetch || !graph_create || !add_empty ||
        !add_edges || !get_edges) {
      ::_exit(1);
    }
    void* stream = nullptr;
    void* managed = nullptr;
    if (stream_create(&stream) != 0 || malloc_managed(&managed, 1 << 20, 1) != 0) ::_exit(2);
    if (prefetch(managed, 1 << 20, 0, stream) != 0) ::_exit(3);  // the created stream
    if (prefetch(managed, 1 << 20, 0, reinterpret_cast<void*>(0x7)) == 0) ::_exit(4);  // invalid
    void* graph = nullptr;
    void* a = nullptr;
    void* b = nullptr;
    if (graph_create(&graph, 0) != 0 || add_empty(&a, graph, nullptr, 0) != 0 ||
        add_empty(&b, graph, nullptr, 0) != 0) {
      ::_exit(5);
    }
    if (add_edges(graph, &a, &b, nullptr, 1) != 0) ::_exit(6);  // a → b with (no) edge data
    void* from[2] = {};
    void* to[2] = {};
    size_t count = 2;
    if (get_edges(graph, from, to, nullptr, &count) != 0 || count != 1 || from[0] != a ||
        to[0] != b) {
      ::_exit(7);
    }
    // CUDA 12's cudaMemAdvise names a device as an int (cudaCpuDeviceId -1 for the host), and
    // the prefetch to device 0 above is the range's last prefetch location.
    using Advise12 = int (*)(const void*, size_t, int, int);
    using RangeAttribute = int (*)(void*, size_t, int, const void*, size_t);
    auto advise = reinterpret_cast<Advise12>(::dlsym(lib, "cudaMemAdvise"));
    auto range_attribute =
        reinterpret_cast<RangeAttribute>(::dlsym(lib, "cudaMemRangeGetAttribute"));
    if (!advise || !range_attribute) ::_exit(8);
    constexpr int kSetPreferredLocation = 3, kPreferred = 2, kLastPrefetch = 4;
    int where = 99;
    if (advise(managed, 1 << 20, kSetPreferredLocation, 0) != 0 ||
        range_attribute(&where, 4, kPreferred, managed, 1 << 20) != 0 || where != 0) {
      ::_exit(9);
    }
    if (advise(managed, 4096, kSetPreferredLocation, -1) != 0 ||
        range_attribute(&where, 4, kPreferred, managed, 4096) != 0 || where != -1) {
      ::_exit(10);
    }
    if (range_attribute(&where, 4, kLastPrefetch, managed, 1 << 20) != 0 || where != 0) ::_exit(11);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "see the step numbers in the test body";
}

// cudaStreamUpdateCaptureDependencies_ptsz (per-thread default stream programs) under the CUDA 12
// drop-in has CUDA 12's parameters (stream, nodes, count, flags), as the plain name; CUDA 12's
// `_v2_ptsz` takes the edge data. In a child that dlopens libcudart.so.12: a memset captured on a
// created stream is the capture's one dependency; a CUDA 12 set to none leaves 0, an add of the
// memset node 1, an edge-data add of the same node still 1. Returns the failing step, 0 when all
// passed.
TEST_F(SampleApiPrograms, Cuda12DropInReadsTheCuda12CaptureDependencyUpdatePtsz) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::setenv("POWERTRAIN_EMU_DIR", (dir_ / "trace").c_str(), 1);
    void* lib = ::dlopen((std::string(kCudartDir) + "/libcudart.so.12").c_str(), RTLD_NOW);
    if (lib == nullptr) ::_exit(100);
    using Malloc = int (*)(void**, size_t);
    using StreamCreate = int (*)(void**);
    using Begin = int (*)(void*, int);
    using MemsetAsync = int (*)(void*, int, size_t, void*);
    using Info12 = int (*)(void*, int*, unsigned long long*, void**, const void* const**, size_t*);
    using Update12 = int (*)(void*, const void* const*, size_t, unsigned);
    using Update13 = int (*)(void*, const void* const*, const void*, size_t, unsigned);
    auto malloc_device = reinterpret_cast<Malloc>(::dlsym(lib, "cudaMalloc"));
    auto stream_create = reinterpret_cast<StreamCreate>(::dlsym(lib, "cudaStreamCreate"));
    auto begin = reinterpret_cast<Begin>(::dlsym(lib, "cudaStreamBeginCapture_ptsz"));
    auto memset_async = reinterpret_cast<MemsetAsync>(::dlsym(lib, "cudaMemsetAsync_ptsz"));
    auto info = reinterpret_cast<Info12>(::dlsym(lib, "cudaStreamGetCaptureInfo_v2_ptsz"));
    auto update12 =
        reinterpret_cast<Update12>(::dlsym(lib, "cudaStreamUpdateCaptureDependencies_ptsz"));
    auto update13 =
        reinterpret_cast<Update13>(::dlsym(lib, "cudaStreamUpdateCaptureDependencies_v2_ptsz"));
    if (!malloc_device || !stream_create || !begin || !memset_async || !info || !update12 ||
        !update13) {
      ::_exit(1);
    }
    void* buffer = nullptr;
    void* stream = nullptr;
    if (malloc_device(&buffer, 4096) != 0 || stream_create(&stream) != 0) ::_exit(2);
    if (begin(stream, 0 /* global */) != 0 || memset_async(buffer, 0, 4096, stream) != 0) {
      ::_exit(3);
    }
    int status = 0;
    const void* const* deps = nullptr;
    size_t count = 0;
    if (info(stream, &status, nullptr, nullptr, &deps, &count) != 0 || count != 1) ::_exit(4);
    const void* memset_node = deps[0];
    if (update12(stream, nullptr, 0, 1 /* set */) != 0) ::_exit(5);
    if (info(stream, &status, nullptr, nullptr, &deps, &count) != 0 || count != 0) ::_exit(6);
    if (update12(stream, &memset_node, 1, 0 /* add */) != 0) ::_exit(7);
    if (info(stream, &status, nullptr, nullptr, &deps, &count) != 0 || count != 1 ||
        deps[0] != memset_node) {
      ::_exit(8);
    }
    if (update13(stream, &memset_node, nullptr, 1, 0) != 0) ::_exit(9);
    if (info(stream, &status, nullptr, nullptr, &deps, &count) != 0 || count != 1) ::_exit(10);
    ::_exit(0);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "see the step numbers in the test body";
}

}  // namespace
}  // namespace powertrain::testing_emu
