// The driver API (cu*, the fake libcuda.so.1) under emulation: the export surface against the
// toolkit's stubs/libcuda.so, and the driver_api test program's trace operation by operation.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "interposer_test_util.h"

namespace powertrain::testing_emu {
namespace {

using nlohmann::json;

class DriverApi : public EmulationTest {
 protected:
  static std::string driver_dir() {
    return (std::filesystem::path(kInterposerPath).parent_path() / "driver").string();
  }

  // name → nm type letter of the defined dynamic functions of `library`.
  std::map<std::string, char> functions(const std::string& library) {
    const ProgramRun run = run_shell("nm -D --defined-only " + shell_quote(library), dir_);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    std::map<std::string, char> symbols;
    std::istringstream lines(run.out);
    std::string address, type, name;
    while (lines >> address >> type >> name) {
      if (type == "T" || type == "W" || type == "i")
        symbols[name.substr(0, name.find('@'))] = type[0];
    }
    return symbols;
  }
};

TEST_F(DriverApi, EveryDriverFunctionIsDefined) {
  const std::string real =
      (std::filesystem::path(kRealCudart).parent_path() / "stubs" / "libcuda.so").string();
  if (!std::filesystem::exists(real)) GTEST_SKIP() << real << " not found";
  const auto theirs = functions(real);
  ASSERT_GT(theirs.size(), 500u) << "CUDA 13's libcuda exports about 637 functions";
  const auto ours = functions(kInterposerPath);
  std::size_t hand_written = 0;
  for (const auto& [name, type] : theirs) {
    const auto it = ours.find(name);
    if (it == ours.end()) {
      ADD_FAILURE() << "libpowertrain_cuda.so does not define " << name;
      continue;
    }
    if (it->second == 'T') ++hand_written;
  }
  std::printf("libcuda.so: %zu driver functions, %zu hand-written, %zu generated stubs\n",
              theirs.size(), hand_written, theirs.size() - hand_written);
  for (const char* name : {"cuInit",
                           "cuDeviceGet",
                           "cuDevicePrimaryCtxRetain",
                           "cuCtxSetCurrent",
                           "cuModuleLoadData",
                           "cuModuleLoadDataEx",
                           "cuModuleGetFunction",
                           "cuLaunchKernel",
                           "cuLaunchKernelEx",
                           "cuMemAlloc_v2",
                           "cuMemFree_v2",
                           "cuMemAddressReserve",
                           "cuMemCreate",
                           "cuMemMap",
                           "cuMemSetAccess",
                           "cuMemUnmap",
                           "cuMemRelease",
                           "cuEventRecord",
                           "cuStreamCreate",
                           "cuStreamWaitEvent",
                           "cuGetProcAddress_v2",
                           "cuGetProcAddress",
                           "cudaGetDriverEntryPoint",
                           "cudaGetDriverEntryPointByVersion"}) {
    const auto it = ours.find(name);
    ASSERT_NE(it, ours.end()) << name;
    EXPECT_EQ(it->second, 'T') << name << " is only a generated stub";
  }
  // The thin libcuda.so.1 only forwards to the preload library.
  const ProgramRun dynamic =
      run_shell("readelf -d " + shell_quote(driver_dir() + "/libcuda.so.1"), dir_);
  EXPECT_NE(dynamic.out.find("Library soname: [libcuda.so.1]"), std::string::npos) << dynamic.out;
  EXPECT_NE(dynamic.out.find("[libpowertrain_cuda.so]"), std::string::npos) << dynamic.out;
}

TEST_F(DriverApi, PtxModuleLaunchesAndVirtualMemoryAreRecorded) {
  if (!std::filesystem::exists(program_path("driver_api"))) GTEST_SKIP() << "not built";
  const std::string cubin = program_path("driver_module.cubin");
  const std::string fatbin = program_path("driver_module.fatbin");
  const ProgramRun run =
      run_program("driver_api", Mode::kPreload, {{"LD_LIBRARY_PATH", driver_dir()}},
                  shell_quote(cubin) + " " + shell_quote(fatbin));
  ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
  EXPECT_NE(run.out.find("driver_api: NVIDIA H100 80GB HBM3, 132 SMs"), std::string::npos)
      << run.out;
  const Trace trace = only_trace();

  // The modules: PTX, then nvcc's cubin (cuModuleLoad) and fat binary (cuModuleLoadData), with
  // their kernels named; each name registered once when first looked up.
  const auto loads = trace.of("module_load");
  ASSERT_EQ(loads.size(), 5u);
  EXPECT_EQ(loads[3].at("api"), "cuLibraryLoadData");
  EXPECT_EQ(loads[3].at("format"), "ptx");
  EXPECT_EQ(loads[4].at("api"), "cuLibraryLoadFromFile");
  EXPECT_EQ(loads[4].at("format"), "cubin");
  EXPECT_EQ(loads[0].at("format"), "ptx");
  EXPECT_EQ(loads[0].at("api"), "cuModuleLoadData");
  EXPECT_EQ(loads[0].at("kernels"), json::array({"add_one_kernel", "scale_kernel"}));
  EXPECT_EQ(loads[1].at("format"), "cubin");
  EXPECT_EQ(loads[1].at("api"), "cuModuleLoad");
  EXPECT_EQ(loads[2].at("format"), "fatbin");
  for (const json& load : loads) EXPECT_TRUE(load.at("names_known").get<bool>()) << load.dump();
  for (int i : {1, 2}) {
    EXPECT_EQ(loads[i].at("kernels"), json::array({"_Z15templated_scalePfi", "saxpy"}));
    EXPECT_EQ(loads[i].at("globals"), json({{"coeffs", 64}, {"counter", 4}}));
  }
  EXPECT_EQ(loads[0].at("globals"), json({{"gain", 4}, {"table", 64}}));
  const auto registers = trace.of("register");
  ASSERT_EQ(registers.size(), 4u);
  EXPECT_EQ(registers[0].at("name"), "scale_kernel");
  EXPECT_EQ(registers[1].at("name"), "add_one_kernel");
  EXPECT_EQ(registers[2].at("name"), "saxpy");
  EXPECT_EQ(registers[3].at("name"), "_Z15templated_scalePfi");
  EXPECT_EQ(registers[3].at("display"), "templated_scale(float*, int)");

  // Launches, one by one: name, grid, block, shared memory, stream, API.
  struct Launch {
    const char* name;
    unsigned grid, block, shmem;
    std::int64_t stream;
  };
  const Launch expected[] = {{"scale_kernel", 4, 256, 0, 0},
                             {"add_one_kernel", 8, 128, 512, 1},  // created stream 1
                             {"scale_kernel", 2, 64, 0, 2},       // the runtime's stream 2
                             {"add_one_kernel", 1, 32, 0, 2},     // via cudaGetDriverEntryPoint
                             {"add_one_kernel", 16, 256, 0, 0},   // on the VMM mapping
                             {"saxpy", 8, 128, 0, 0},             // from the cubin
                             {"_Z15templated_scalePfi", 8, 128, 0, 0},
                             {"saxpy", 8, 128, 0, 0},  // from the fat binary
                             {"_Z15templated_scalePfi", 8, 128, 0, 0},
                             {"scale_kernel", 1, 64, 0, 0},  // from cuLibraryLoadData
                             {"saxpy", 2, 64, 0, 0}};        // cudaLibrary*, cudaLaunchKernel
  const auto kernels = trace.of("kernel");
  ASSERT_EQ(kernels.size(), std::size(expected));
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    SCOPED_TRACE(kernels[i].dump());
    EXPECT_EQ(kernels[i].at("name"), expected[i].name);
    EXPECT_EQ(kernels[i].at("grid"), json::array({expected[i].grid, 1, 1}));
    EXPECT_EQ(kernels[i].at("block"), json::array({expected[i].block, 1, 1}));
    EXPECT_EQ(kernels[i].at("shmem"), expected[i].shmem);
    EXPECT_EQ(kernels[i].at("stream"), expected[i].stream);
    EXPECT_EQ(kernels[i].at("api"),
              i + 1 == kernels.size() ? "cudaLaunchKernel" : "cuLaunchKernel");
  }
  // The event dependency between the NULL stream and stream 1 is recorded like the runtime's.
  const auto records = trace.of("event_record");
  const auto waits = trace.of("stream_wait_event");
  ASSERT_EQ(records.size(), 1u);
  ASSERT_EQ(waits.size(), 1u);
  EXPECT_EQ(records[0].at("api"), "cuEventRecord");
  EXPECT_EQ(records[0].at("stream"), 0);
  EXPECT_EQ(waits[0].at("stream"), 1);
  EXPECT_EQ(waits[0].at("event"), records[0].at("event"));

  // Memory: cuMemAlloc (4 KiB), cuMemCreate (4 MiB, accounted), the dlopen'ed cuMemAlloc (1 MiB).
  const auto mallocs = trace.of("malloc");
  ASSERT_EQ(mallocs.size(), 3u);
  EXPECT_EQ(mallocs[0].at("api"), "cuMemAlloc_v2");
  EXPECT_EQ(mallocs[0].at("bytes"), 4096);
  EXPECT_EQ(mallocs[1].at("api"), "cuMemCreate");
  EXPECT_EQ(mallocs[1].at("bytes"), 4 << 20);
  EXPECT_EQ(mallocs[1].at("used"), 4096 + (4 << 20));
  EXPECT_EQ(mallocs[2].at("api"), "cuMemAlloc_v2");
  EXPECT_EQ(mallocs[2].at("bytes"), 1 << 20);
  const auto maps = trace.of("mem_map");
  const auto unmaps = trace.of("mem_unmap");
  ASSERT_EQ(maps.size(), 1u);
  ASSERT_EQ(unmaps.size(), 1u);
  EXPECT_EQ(maps[0].at("bytes"), 4 << 20);
  EXPECT_EQ(maps[0].at("handle"), mallocs[1].at("ptr"));
  EXPECT_EQ(unmaps[0].at("ptr"), maps[0].at("ptr"));
  // Copies through the mapping: the runtime's cudaMemcpy sees it as device memory.
  // Copies, in order: the PTX module's `table` global, x, the VMM mapping (runtime copies), the
  // compiled modules' `coeffs` global.
  struct Copy {
    const char* api;
    const char* kind;
    std::int64_t bytes;
  };
  const Copy expected_copies[] = {
      {"cuMemcpyHtoD_v2", "HtoD", 64},   {"cuMemcpyDtoH_v2", "DtoH", 64},
      {"cuMemcpyHtoD_v2", "HtoD", 4096}, {"cuMemcpyDtoH_v2", "DtoH", 4096},
      {"cudaMemcpy", "HtoD", 4 << 20},   {"cudaMemcpy", "DtoH", 4 << 20},
      {"cuMemcpyHtoD_v2", "HtoD", 64},   {"cuMemcpyHtoD_v2", "HtoD", 64}};
  const auto copies = trace.of("memcpy");
  ASSERT_EQ(copies.size(), std::size(expected_copies));
  for (std::size_t i = 0; i < copies.size(); ++i) {
    SCOPED_TRACE(copies[i].dump());
    EXPECT_EQ(copies[i].at("api"), expected_copies[i].api);
    EXPECT_EQ(copies[i].at("kind"), expected_copies[i].kind);
    EXPECT_EQ(copies[i].at("bytes"), expected_copies[i].bytes);
  }
  // cudaFree of the mapped range is refused (one misuse), nothing is unsupported.
  const auto misuse = trace.of("misuse");
  ASSERT_EQ(misuse.size(), 1u);
  EXPECT_EQ(misuse[0].at("api"), "cudaFree");
  EXPECT_TRUE(trace.of("unsupported").empty());
  const auto frees = trace.of("free");
  ASSERT_EQ(frees.size(), 3u);
  EXPECT_EQ(frees[0].at("api"), "cuMemRelease");
  EXPECT_EQ(frees[1].at("api"), "cudaFree");  // the dlopen'ed allocation, freed by the runtime
  EXPECT_EQ(frees[2].at("api"), "cuMemFree_v2");
  EXPECT_EQ(trace.lines.back().at("peak_used"), json::array({4096 + (4 << 20) + 0}));
  EXPECT_EQ(trace.lines.back().at("used"), json::array({0}));
}

// Run-time compilation: NVRTC's PTX and cubin, the JIT linker's image and a library, each with
// its kernels named; NVRTC's probe of the driver's private tables is not reported.
TEST_F(DriverApi, NvrtcModulesAndTheJitLinkerAreRecorded) {
  if (!std::filesystem::exists(program_path("driver_jit"))) GTEST_SKIP() << "not built";
  const ProgramRun run =
      run_program("driver_jit", Mode::kPreload, {{"LD_LIBRARY_PATH", driver_dir()}});
  ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
  const std::string scale = "_Z5scaleIfEvPT_S0_i";  // scale<float>, as NVRTC lowers it
  EXPECT_NE(run.out.find("driver_jit: " + scale + " compiled to PTX and sm_90"), std::string::npos)
      << run.out;
  const Trace trace = only_trace();
  const auto loads = trace.of("module_load");
  ASSERT_EQ(loads.size(), 4u);
  const json nvrtc_kernels = json::array({scale, "add_bias"});
  EXPECT_EQ(loads[0].at("api"), "cuModuleLoadData");
  EXPECT_EQ(loads[0].at("format"), "ptx");
  EXPECT_EQ(loads[0].at("kernels"), nvrtc_kernels);
  EXPECT_EQ(loads[0].at("globals"), json({{"bias", 128}}));
  EXPECT_EQ(loads[1].at("api"), "cuModuleLoadDataEx");
  EXPECT_EQ(loads[1].at("format"), "cubin");
  EXPECT_EQ(loads[1].at("kernels"), nvrtc_kernels);
  // The linked image: the PTX input's kernel and global joined with the cubin's.
  EXPECT_EQ(loads[2].at("api"), "cuModuleLoadData");
  EXPECT_EQ(loads[2].at("format"), "linked");
  EXPECT_EQ(loads[2].at("kernels"), json::array({scale, "add_bias", "count_bytes"}));
  EXPECT_EQ(loads[2].at("globals"), json({{"bias", 128}, {"histogram", 256}}));
  EXPECT_EQ(loads[3].at("api"), "cuLibraryLoadData");
  EXPECT_EQ(loads[3].at("kernels"), nvrtc_kernels);
  for (const json& load : loads) EXPECT_TRUE(load.at("names_known").get<bool>()) << load.dump();

  struct Launch {
    std::string name;
    unsigned grid, block;
  };
  const Launch expected[] = {
      {"add_bias", 16, 256}, {scale, 16, 256}, {scale, 16, 256}, {"count_bytes", 64, 128}};
  const auto kernels = trace.of("kernel");
  ASSERT_EQ(kernels.size(), std::size(expected));
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    SCOPED_TRACE(kernels[i].dump());
    EXPECT_EQ(kernels[i].at("name"), expected[i].name);
    EXPECT_EQ(kernels[i].at("grid"), json::array({expected[i].grid, 1, 1}));
    EXPECT_EQ(kernels[i].at("block"), json::array({expected[i].block, 1, 1}));
    EXPECT_EQ(kernels[i].at("api"), "cuLaunchKernel");
  }
  // The text that is not PTX is refused by name; the missing file is an error code only.
  const auto misuse = trace.of("misuse");
  ASSERT_EQ(misuse.size(), 1u);
  EXPECT_EQ(misuse[0].at("api"), "cuLinkAddData_v2");
  EXPECT_EQ(misuse[0].at("what"), "the PTX input has no .version line");
  EXPECT_TRUE(trace.of("unsupported").empty()) << "NVRTC's cuGetExportTable probe is expected";
}

// --default-stream per-thread: the *_ptsz / *_ptds entry points put each thread's NULL-stream
// work on that thread's own stream, under their own names.
TEST_F(DriverApi, PerThreadDefaultStreamEntryPoints) {
  if (!std::filesystem::exists(program_path("driver_per_thread"))) GTEST_SKIP() << "not built";
  const ProgramRun run =
      run_program("driver_per_thread", Mode::kPreload, {{"LD_LIBRARY_PATH", driver_dir()}});
  ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
  const Trace trace = only_trace();
  constexpr int kPerThreadStreamBase = 1000000;  // + the thread index
  const auto kernels = trace.of("kernel");
  ASSERT_EQ(kernels.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    SCOPED_TRACE(kernels[i].dump());
    EXPECT_EQ(kernels[i].at("tid"), i + 1);
    EXPECT_EQ(kernels[i].at("stream"), kPerThreadStreamBase + i + 1);
    EXPECT_EQ(kernels[i].at("api"), "cuLaunchKernel_ptsz");
    EXPECT_EQ(kernels[i].at("grid"), json::array({i + 1, 1, 1}));
  }
  std::vector<std::string> copy_apis;
  for (const json& c : trace.of("memcpy")) {
    copy_apis.push_back(c.at("api"));
    EXPECT_EQ(c.at("stream"), kPerThreadStreamBase + c.at("tid").get<int>()) << c.dump();
  }
  EXPECT_EQ(copy_apis,
            (std::vector<std::string>{"cuMemcpyHtoDAsync_v2_ptsz", "cuMemcpyDtoH_v2_ptds",
                                      "cuMemcpyHtoDAsync_v2_ptsz", "cuMemcpyDtoH_v2_ptds"}));
  const auto memsets = trace.of("memset");
  ASSERT_EQ(memsets.size(), 2u);
  for (const json& m : memsets) {
    EXPECT_EQ(m.at("api"), "cuMemsetD32_v2_ptds");
    EXPECT_EQ(m.at("stream"), kPerThreadStreamBase + m.at("tid").get<int>());
  }
  const auto records = trace.of("event_record");
  ASSERT_EQ(records.size(), 2u);
  for (const json& r : records) {
    EXPECT_EQ(r.at("api"), "cuEventRecord_ptsz");
    EXPECT_EQ(r.at("stream"), kPerThreadStreamBase + r.at("tid").get<int>());
  }
  // The workers' syncs, then the main thread's through cuGetProcAddress: per-thread, legacy.
  const auto syncs = trace.of("stream_sync");
  ASSERT_EQ(syncs.size(), 4u);
  EXPECT_EQ(syncs[0].at("stream"), kPerThreadStreamBase + 1);
  EXPECT_EQ(syncs[1].at("stream"), kPerThreadStreamBase + 2);
  EXPECT_EQ(syncs[2].at("stream"), kPerThreadStreamBase);
  EXPECT_EQ(syncs[3].at("stream"), 0);
  EXPECT_TRUE(trace.of("unsupported").empty());
}

// The driver's forms of runtime calls (managed, pitched, registered and pool memory, pointer
// attributes, stream callbacks, occupancy, peer access) on 2 devices.
TEST_F(DriverApi, MemoryStreamsAndOccupancyThroughTheDriver) {
  if (!std::filesystem::exists(program_path("driver_memory_streams"))) GTEST_SKIP() << "not built";
  const ProgramRun run =
      run_program("driver_memory_streams", Mode::kPreload,
                  {{"LD_LIBRARY_PATH", driver_dir()}, {"POWERTRAIN_EMU_DEVICES", "2"}});
  ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
  // 512 threads (the limit given) with 4 resident blocks per SM fill the H100's 132 SMs.
  EXPECT_NE(
      run.out.find("driver_memory_streams: pitch 1024, block 512 x grid 528, 5 CUDA 12-only calls"),
      std::string::npos)
      << run.out;
  const Trace trace = only_trace();
  struct Allocation {
    const char* kind;
    std::int64_t bytes;
  };
  const Allocation expected[] = {{"managed", 1 << 20}, {"device", 1024 * 64}, {"async", 3 << 20}};
  const auto mallocs = trace.of("malloc");
  ASSERT_EQ(mallocs.size(), std::size(expected));
  for (std::size_t i = 0; i < mallocs.size(); ++i) {
    SCOPED_TRACE(mallocs[i].dump());
    EXPECT_EQ(mallocs[i].at("kind"), expected[i].kind);
    EXPECT_EQ(mallocs[i].at("bytes"), expected[i].bytes);
  }
  EXPECT_EQ(trace.of("free").size(), 3u);
  const auto copies = trace.of("memcpy");
  ASSERT_EQ(copies.size(), 1u);
  EXPECT_EQ(copies[0].at("bytes"), 16384);  // from the registered host buffer
  const auto callbacks = trace.of("host_func");
  ASSERT_EQ(callbacks.size(), 1u);
  EXPECT_EQ(callbacks[0].at("api"), "cuStreamAddCallback");
  const auto kernels = trace.of("kernel");
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(kernels[0].at("grid"), json::array({528, 1, 1}));
  EXPECT_EQ(kernels[0].at("block"), json::array({512, 1, 1}));
  // The refused element size is the one misuse; nothing is unsupported.
  const auto misuse = trace.of("misuse");
  ASSERT_EQ(misuse.size(), 1u);
  EXPECT_EQ(misuse[0].at("api"), "cuMemAllocPitch_v2");
  EXPECT_TRUE(trace.of("unsupported").empty());
}

// Managed-memory advice and prefetch destinations are kept per page and read back by range
// (cudaMemRangeGetAttribute(s) and the driver's forms): partial ranges, page rounding, accessor
// lists, batched and driver prefetches, a __managed__ variable; misuse fails as on a GPU.
TEST_F(DriverApi, ManagedAdviceAndPrefetchLocationsReadBack) {
  if (!std::filesystem::exists(program_path("driver_managed_advice"))) {
    GTEST_SKIP() << "not built";
  }
  const ProgramRun run =
      run_program("driver_managed_advice", Mode::kPreload,
                  {{"LD_LIBRARY_PATH", driver_dir()}, {"POWERTRAIN_EMU_DEVICES", "2"}});
  ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
  EXPECT_NE(run.out.find("driver_managed_advice: 49 checks passed"), std::string::npos) << run.out;
  const Trace trace = only_trace();
  std::vector<std::string> misuse;
  for (const json& m : trace.of("misuse")) misuse.push_back(m.at("api"));
  EXPECT_EQ(misuse,
            (std::vector<std::string>{"cudaMemAdvise", "cudaMemAdvise", "cudaMemRangeGetAttribute",
                                      "cudaMemRangeGetAttribute", "cudaMemRangeGetAttribute",
                                      "cudaMemAdvise", "cudaMemRangeGetAttribute", "cudaMemAdvise",
                                      "cudaMemRangeGetAttribute", "cudaMemPrefetchAsync"}));
  std::vector<std::string> managed;
  for (const json& m : trace.of("malloc")) {
    if (m.at("kind") == "managed") managed.push_back(std::to_string(m.at("bytes").get<long>()));
  }
  EXPECT_EQ(managed, (std::vector<std::string>{"4194304", "12288", "100"}));
  EXPECT_TRUE(trace.of("unsupported").empty());
}

// Kernel parameter layouts: the program's own kernel from the cubin in its fat binary, a PTX
// module's and a library's kernel from the `.param` list; an index past the last parameter is
// refused with a misuse record naming the count.
TEST_F(DriverApi, KernelParameterLayoutsComeFromTheImages) {
  if (!std::filesystem::exists(program_path("driver_param_info"))) GTEST_SKIP() << "not built";
  const ProgramRun run =
      run_program("driver_param_info", Mode::kPreload, {{"LD_LIBRARY_PATH", driver_dir()}});
  ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
  EXPECT_NE(run.out.find("driver_param_info: 12 checks passed"), std::string::npos) << run.out;
  const Trace trace = only_trace();
  std::vector<std::string> what;
  for (const json& m : trace.of("misuse")) what.push_back(m.at("what"));
  EXPECT_EQ(what, (std::vector<std::string>{
                      "paramIndex 4 is not below the 4 parameters of _Z5mixediPd6Twelvec",
                      "paramIndex 0 is not below the 0 parameters of _Z13no_parametersv",
                      "paramIndex 4 is not below the 4 parameters of scale"}));
  EXPECT_TRUE(trace.of("unsupported").empty());
}

// CUDA's error log: misuse and unsupported calls reach the runtime's and the driver's
// callbacks (a callback's own misuse does not call it again) and the dumps, to memory (newest
// kept after a notice when the buffer is short; refused when nothing fits) and to a file.
TEST_F(DriverApi, MisuseAndUnsupportedCallsReachTheErrorLog) {
  if (!std::filesystem::exists(program_path("driver_error_log"))) GTEST_SKIP() << "not built";
  const ProgramRun run =
      run_program("driver_error_log", Mode::kPreload, {{"LD_LIBRARY_PATH", driver_dir()}});
  ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
  EXPECT_NE(run.out.find("driver_error_log: 6 messages to the runtime callback, 1 to the driver's"),
            std::string::npos)
      << run.out;
  const Trace trace = only_trace();
  std::vector<std::string> unsupported;
  for (const json& u : trace.of("unsupported")) unsupported.push_back(u.at("api"));
  EXPECT_EQ(unsupported, std::vector<std::string>{"cudaImportExternalMemory"});
  std::vector<std::string> misuse;
  for (const json& m : trace.of("misuse")) misuse.push_back(m.at("api"));
  EXPECT_EQ(misuse, (std::vector<std::string>{
                        "cudaMemAdvise", "cudaMemAdvise", "cudaMemAdvise", "cudaMemAdvise",
                        "cudaLogsDumpToMemory", "cudaLogsUnregisterCallback", "cudaMemAdvise",
                        "cudaMemAdvise", "cuLogsUnregisterCallback", "cuLogsCurrent"}));
}

// Element memsets (1-D and 2-D) write their pattern, peer copies move between two devices'
// contexts, IPC handles are made, and stream memory operations order one stream after another:
// each write is a 4/8-byte memset plus an event record on its stream, each wait a wait on that
// event; a flag the host raised needs no wait, and a wait enqueued before its write is accepted
// and reported as not modelled (the trace is written in host order).
TEST_F(DriverApi, StreamMemoryOperationsPeerCopiesAndElementMemsets) {
  if (!std::filesystem::exists(program_path("driver_memops"))) GTEST_SKIP() << "not built";
  const ProgramRun run =
      run_program("driver_memops", Mode::kPreload,
                  {{"LD_LIBRARY_PATH", driver_dir()}, {"POWERTRAIN_EMU_DEVICES", "2"}});
  ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
  EXPECT_NE(run.out.find("driver_memops: patterns, 2-D rows, peer copies and 4 stream waits"),
            std::string::npos)
      << run.out;
  const Trace trace = only_trace();
  std::vector<std::pair<std::string, std::int64_t>> memsets;
  for (const json& m : trace.of("memset")) memsets.emplace_back(m.at("api"), m.at("bytes"));
  const std::vector<std::pair<std::string, std::int64_t>> expected_memsets = {
      {"cuMemsetD32_v2", 16384},       {"cuMemsetD2D8_v2", 512 * 8},
      {"cuMemsetD2D16Async", 200 * 8}, {"cuMemsetD8_v2", 64},
      {"cuStreamWriteValue32_v2", 4},  {"cuStreamBatchMemOp_v2", 8},
      {"cuStreamWriteValue32_v2", 4}};
  EXPECT_EQ(memsets, expected_memsets);
  std::vector<std::string> copy_apis;
  for (const json& c : trace.of("memcpy")) copy_apis.push_back(c.at("api"));
  EXPECT_EQ(std::count(copy_apis.begin(), copy_apis.end(), "cuMemcpyPeer"), 1);
  EXPECT_EQ(std::count(copy_apis.begin(), copy_apis.end(), "cuMemcpyPeerAsync"), 1);
  // Writes record on the first stream, waits wait on the second for the same events.
  std::vector<json> writes, waits;
  for (const json& r : trace.of("event_record")) {
    if (r.at("api") != "cuEventRecord_v2" && r.at("api") != "cuEventRecord") writes.push_back(r);
  }
  for (const json& w : trace.of("stream_wait_event")) waits.push_back(w);
  ASSERT_EQ(writes.size(), 3u);
  ASSERT_EQ(waits.size(), 2u);  // the host's flag and the later write need none
  EXPECT_EQ(waits[0].at("api"), "cuStreamWaitValue32_v2");
  EXPECT_EQ(waits[0].at("event"), writes[0].at("event"));
  EXPECT_EQ(waits[1].at("api"), "cuStreamBatchMemOp_v2");
  EXPECT_EQ(waits[1].at("event"), writes[1].at("event"));
  for (const json& w : waits) EXPECT_NE(w.at("stream"), writes[0].at("stream"));
  const auto unsupported = trace.of("unsupported");
  ASSERT_EQ(unsupported.size(), 1u);
  EXPECT_EQ(unsupported[0].at("api"), "cuStreamWaitValue32_v2 (value written later)");
  const auto misuse = trace.of("misuse");  // the overflowing count
  ASSERT_EQ(misuse.size(), 1u);
  EXPECT_EQ(misuse[0].at("api"), "cuMemsetD32_v2");
}

// An allocation exported as a POSIX file descriptor is imported again in the same process and,
// after fork(), in a child that maps and writes it; an allocation made without that handle type
// is refused its export (one misuse). Each process's trace has its own mapping of the memory.
TEST_F(DriverApi, VirtualMemoryIsSharedThroughFileDescriptors) {
  if (!std::filesystem::exists(program_path("driver_vmm_share"))) GTEST_SKIP() << "not built";
  const ProgramRun run =
      run_program("driver_vmm_share", Mode::kPreload, {{"LD_LIBRARY_PATH", driver_dir()}});
  ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
  EXPECT_NE(run.out.find("driver_vmm_share: exported, imported here and in the child (exit 0), "
                         "unshareable refused"),
            std::string::npos)
      << run.out;
  const std::vector<Trace> traces = load_traces(trace_dir());
  ASSERT_EQ(traces.size(), 2u);
  int with_misuse = 0;
  for (const Trace& trace : traces) {
    const auto maps = trace.of("mem_map");
    ASSERT_EQ(maps.size(), 1u);
    EXPECT_EQ(maps[0].at("bytes"), 4 * 2 * 1024 * 1024);
    EXPECT_EQ(trace.of("mem_unmap").size(), 1u);
    EXPECT_EQ(trace.of("memset").size(), 1u);
    EXPECT_TRUE(trace.of("unsupported").empty());
    const auto misuse = trace.of("misuse");
    if (!misuse.empty()) {
      ++with_misuse;
      ASSERT_EQ(misuse.size(), 1u);
      EXPECT_EQ(misuse[0].at("api"), "cuMemExportToShareableHandle");
    }
  }
  EXPECT_EQ(with_misuse, 1);
}

// A graph built node by node through the driver (XLA's way), launched twice with a kernel
// node's grid changed in between, and a graph captured from a stream: each launch replays its
// nodes with their dependencies, as runtime graphs do.
TEST_F(DriverApi, GraphsBuiltAndCapturedThroughTheDriverReplayAtEachLaunch) {
  if (!std::filesystem::exists(program_path("driver_graph"))) GTEST_SKIP() << "not built";
  const ProgramRun run =
      run_program("driver_graph", Mode::kPreload, {{"LD_LIBRARY_PATH", driver_dir()}});
  ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
  EXPECT_NE(run.out.find("driver_graph: 8 nodes, 8 edges, host node ran 3 times"),
            std::string::npos)
      << run.out;
  const Trace trace = only_trace();
  const auto launches = trace.of("graph_launch");
  ASSERT_EQ(launches.size(), 6u);
  const int nodes[] = {7, 7, 7, 2, 1, 1};  // the empty join node does no work
  for (std::size_t i = 0; i < launches.size(); ++i) {
    EXPECT_EQ(launches[i].at("api"), "cuGraphLaunch");
    EXPECT_EQ(launches[i].at("nodes"), nodes[i]);
  }
  struct Kernel {
    const char* name;
    unsigned grid;
    int graph;
  };
  // Launch 2 runs consume on 128 blocks (exec kernel-node parameters); launch 3 with consume
  // disabled; then the captured graph; then the generic-parameter graph (48, then 16 blocks).
  const Kernel expected[] = {{"produce", 256, 1}, {"consume", 64, 1},  {"consume", 8, 1},
                             {"produce", 256, 1}, {"consume", 128, 1}, {"consume", 8, 1},
                             {"produce", 256, 1}, {"consume", 8, 1},   {"produce", 256, 2},
                             {"consume", 64, 2},  {"produce", 48, 3},  {"produce", 16, 3}};
  const auto kernels = trace.of("kernel");
  ASSERT_EQ(kernels.size(), std::size(expected));
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    SCOPED_TRACE(kernels[i].dump());
    EXPECT_EQ(kernels[i].at("name"), expected[i].name);
    EXPECT_EQ(kernels[i].at("grid"), json::array({expected[i].grid, 1, 1}));
    EXPECT_EQ(kernels[i].at("graph"), expected[i].graph);
  }
  // The child graph's kernel runs beside the main chain (its own lane), after the memset.
  EXPECT_NE(kernels[2].at("stream"), kernels[1].at("stream"));
  const auto copies = trace.of("memcpy");
  ASSERT_EQ(copies.size(), 3u);
  for (const json& c : copies) {
    EXPECT_EQ(c.at("kind"), "DtoH");
    EXPECT_EQ(c.at("bytes"), 262144);
  }
  // The third launch's memset is the exec's halved one.
  const auto memsets = trace.of("memset");
  ASSERT_EQ(memsets.size(), 3u);
  EXPECT_EQ(memsets[0].at("bytes"), 262144);
  EXPECT_EQ(memsets[1].at("bytes"), 262144);
  EXPECT_EQ(memsets[2].at("bytes"), 131072);
  EXPECT_EQ(trace.of("host_func").size(), 3u);
  // Removing the edge a second time is refused by name; nothing is unsupported.
  const auto misuse = trace.of("misuse");
  ASSERT_EQ(misuse.size(), 1u);
  EXPECT_EQ(misuse[0].at("api"), "cudaGraphRemoveDependencies_v2");  // the edge-data form
  EXPECT_TRUE(trace.of("unsupported").empty());
}

// cuGetProcAddress by version: each renamed function's form of the version asked for, "version
// not sufficient" for a caller older than the function, and the older and the CUDA 13 forms run
// (driver_proc_versions.cu). Nothing is unsupported.
TEST_F(DriverApi, ProcAddressGivesTheFormOfTheVersionAskedFor) {
  if (!std::filesystem::exists(program_path("driver_proc_versions"))) GTEST_SKIP() << "not built";
  const ProgramRun run =
      run_program("driver_proc_versions", Mode::kPreload, {{"LD_LIBRARY_PATH", driver_dir()}});
  ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
  EXPECT_NE(run.out.find("driver_proc_versions: 30 checks passed"), std::string::npos) << run.out;
  const std::vector<json> assumed = only_trace().of("assumption");
  ASSERT_EQ(assumed.size(), 1u);
  EXPECT_EQ(assumed[0].at("api"), "cuCtxCreate_v3");
  const Trace trace = only_trace();
  EXPECT_TRUE(trace.of("unsupported").empty());
  std::vector<std::string> misuse;
  for (const json& m : trace.of("misuse")) misuse.push_back(m.at("api"));
  EXPECT_EQ(misuse, std::vector<std::string>{"cuMemcpyBatchAsync_v2"});  // the NULL stream
  std::vector<std::string> copies;
  for (const json& m : trace.of("memcpy")) {
    copies.push_back(m.at("api").get<std::string>() + " " + m.at("kind").get<std::string>());
  }
  EXPECT_EQ(copies,
            (std::vector<std::string>{"cuMemcpyBatchAsync HtoD", "cuMemcpyBatchAsync HtoD",
                                      "cuMemcpyBatchAsync_v2 DtoH", "cuMemcpyBatchAsync_v2 DtoH",
                                      "cuMemcpy3DBatchAsync HtoD", "cuMemcpy3DBatchAsync_v2 DtoH",
                                      "cuMemcpy3DPeer DtoD", "cuMemcpy3DPeerAsync DtoD"}));
  EXPECT_EQ(trace.of("graph_launch").size(), 2u);
  // The captured memset and stream write (a 4-byte memset) replay at the launch.
  std::vector<std::string> replayed;
  for (const json& m : trace.of("memset")) {
    if (m.contains("graph")) replayed.push_back(m.at("api"));
  }
  EXPECT_EQ(replayed, (std::vector<std::string>{"cuMemsetD8Async", "cuStreamWriteValue32_v2"}));
}

// Green contexts (driver_green_contexts.cu, FlashInfer's split): 132 SMs split into groups of
// 16 and a remainder of 84, a count of 13 rounded up to Hopper's step of 8, a split's result
// refused for a second split; each green context's stream runs its kernel, and the first green
// context is one assumption record saying the kernels are timed on the whole device.
TEST_F(DriverApi, GreenContextsKeepTheirSmPartition) {
  if (!std::filesystem::exists(program_path("driver_green_contexts"))) {
    GTEST_SKIP() << "not built";
  }
  const ProgramRun run =
      run_program("driver_green_contexts", Mode::kPreload, {{"LD_LIBRARY_PATH", driver_dir()}});
  ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
  for (const char* line : {"green context 0 has 16 SMs", "green context 2 has 16 SMs",
                           "green context 3 has 84 SMs", "driver_green_contexts: done"}) {
    EXPECT_NE(run.out.find(line), std::string::npos) << line << "\n" << run.out;
  }
  const Trace trace = only_trace();
  EXPECT_TRUE(trace.of("unsupported").empty());
  const auto assumed = trace.of("assumption");
  ASSERT_EQ(assumed.size(), 1u);
  EXPECT_NE(assumed[0].at("what").get<std::string>().find("16 of 132"), std::string::npos);
  std::vector<std::string> misuse;
  for (const json& m : trace.of("misuse")) misuse.push_back(m.at("api"));
  EXPECT_EQ(misuse, (std::vector<std::string>{"cuDevSmResourceSplitByCount",
                                              "cuDevResourceGenerateDesc", "cuGreenCtxCreate",
                                              "cuGreenCtxStreamCreate", "cuGreenCtxDestroy"}));
  std::set<long> streams;
  for (const json& k : trace.of("kernel")) streams.insert(k.at("stream").get<long>());
  EXPECT_EQ(streams.size(), 4u);  // one per green context
}

}  // namespace
}  // namespace powertrain::testing_emu
