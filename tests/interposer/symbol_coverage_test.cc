// Symbol coverage of the interposer: every function the real CUDA runtime exports must be
// defined by the preload library and by both drop-in runtimes (a missing one would silently fall
// through to the real runtime), the hand-written entry points must not be generated stubs, the
// drop-ins must carry their version nodes, and nothing but the C API may be exported.
#include <gtest/gtest.h>

#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <string>

#include "interposer_test_util.h"

namespace powertrain::testing_emu {
namespace {

class SymbolCoverage : public EmulationTest {
 protected:
  // name → nm type letter (T strong, W weak = generated stub) of the defined dynamic symbols.
  std::map<std::string, char> defined_symbols(const std::string& library) {
    const ProgramRun run = run_shell("nm -D --defined-only " + shell_quote(library), dir_);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    std::map<std::string, char> symbols;
    std::istringstream lines(run.out);
    std::string address, type, name;
    while (lines >> address >> type >> name) {
      if (type.size() != 1) continue;
      const std::size_t at = name.find('@');
      symbols[name.substr(0, at)] = type[0];
    }
    return symbols;
  }

  // Function names of the real runtime (cuda*, __cuda*).
  std::set<std::string> runtime_functions() {
    std::set<std::string> names;
    for (const auto& [name, type] : defined_symbols(kRealCudart)) {
      if ((type == 'T' || type == 'W' || type == 'i') &&
          (name.rfind("cuda", 0) == 0 || name.rfind("__cuda", 0) == 0)) {
        names.insert(name);
      }
    }
    return names;
  }
};

TEST_F(SymbolCoverage, EveryRuntimeFunctionIsDefinedByEveryBuild) {
  const std::set<std::string> real = runtime_functions();
  ASSERT_GT(real.size(), 400u) << "libcudart.so.13 exports about 422 functions";
  for (const std::string& library :
       {std::string(kInterposerPath), std::string(kCudartDir) + "/libcudart.so.13",
        std::string(kCudartDir) + "/libcudart.so.12"}) {
    const auto ours = defined_symbols(library);
    std::size_t hand_written = 0;
    std::size_t stubs = 0;
    for (const std::string& name : real) {
      const auto it = ours.find(name);
      if (it == ours.end()) {
        ADD_FAILURE() << library << " does not define " << name;
        continue;
      }
      (it->second == 'W' ? stubs : hand_written) += 1;
    }
    std::printf("%s: %zu runtime functions, %zu hand-written, %zu generated stubs\n",
                library.c_str(), real.size(), hand_written, stubs);
  }
}

TEST_F(SymbolCoverage, CoreEntryPointsAreHandWritten) {
  const auto ours = defined_symbols(kInterposerPath);
  for (const char* name : {"cudaMalloc",
                           "cudaFree",
                           "cudaMallocHost",
                           "cudaFreeHost",
                           "cudaHostAlloc",
                           "cudaMallocManaged",
                           "cudaMallocAsync",
                           "cudaFreeAsync",
                           "cudaMallocPitch",
                           "cudaMemGetInfo",
                           "cudaMemcpy",
                           "cudaMemcpyAsync",
                           "cudaMemcpy2D",
                           "cudaMemset",
                           "cudaMemsetAsync",
                           "cudaMemcpyToSymbol",
                           "cudaMemcpyFromSymbol",
                           "cudaStreamCreate",
                           "cudaStreamCreateWithFlags",
                           "cudaStreamCreateWithPriority",
                           "cudaStreamDestroy",
                           "cudaStreamQuery",
                           "cudaStreamSynchronize",
                           "cudaStreamWaitEvent",
                           "cudaEventCreate",
                           "cudaEventCreateWithFlags",
                           "cudaEventRecord",
                           "cudaEventQuery",
                           "cudaEventSynchronize",
                           "cudaEventElapsedTime",
                           "cudaEventDestroy",
                           "cudaLaunchKernel",
                           "cudaLaunchKernelExC",
                           "cudaLaunchCooperativeKernel",
                           "cudaLaunchHostFunc",
                           "__cudaGetKernel",
                           "__cudaLaunchKernel",
                           "__cudaLaunchKernel_ptsz",
                           "__cudaPushCallConfiguration",
                           "__cudaPopCallConfiguration",
                           "__cudaRegisterFatBinary",
                           "__cudaRegisterFatBinaryEnd",
                           "__cudaUnregisterFatBinary",
                           "__cudaRegisterFunction",
                           "__cudaRegisterVar",
                           "__cudaRegisterManagedVar",
                           "cudaGetDeviceCount",
                           "cudaSetDevice",
                           "cudaGetDevice",
                           "cudaGetDeviceProperties",
                           "cudaGetDeviceProperties_v2",
                           "cudaDeviceGetAttribute",
                           "cudaDeviceSynchronize",
                           "cudaDeviceReset",
                           "cudaRuntimeGetVersion",
                           "cudaDriverGetVersion",
                           "cudaGetLastError",
                           "cudaPeekAtLastError",
                           "cudaGetErrorString",
                           "cudaGetErrorName",
                           "cudaFuncGetAttributes",
                           "cudaFuncSetAttribute",
                           "cudaOccupancyMaxActiveBlocksPerMultiprocessor",
                           "cudaCreateChannelDesc",
                           "cudaMemcpy_ptds",
                           "cudaMemcpyAsync_ptsz",
                           "cudaLaunchKernel_ptsz",
                           "cudaStreamSynchronize_ptsz",
                           "cudaEventRecord_ptsz",
                           "cudaStreamWaitEvent_ptsz",
                           "cudaMemPoolCreate",
                           "cudaMemPoolSetAccess",
                           "cudaMallocFromPoolAsync",
                           "cudaStreamBeginCaptureToGraph",
                           "cudaGraphGetEdges",
                           "cudaGraphGetRootNodes",
                           "cudaGraphNodeGetDependencies",
                           "cudaGraphNodeGetDependentNodes",
                           "cudaIpcGetMemHandle",
                           "cudaIpcOpenMemHandle",
                           "cudaIpcCloseMemHandle",
                           "cudaIpcGetEventHandle",
                           "cudaIpcOpenEventHandle",
                           "cudaGraphInstantiateWithParams",
                           "cudaGraphExecGetFlags",
                           "cudaStreamUpdateCaptureDependencies",
                           "cudaGraphDebugDotPrint"}) {
    const auto it = ours.find(name);
    ASSERT_NE(it, ours.end()) << name;
    EXPECT_EQ(it->second, 'T') << name << " is only a generated stub";
  }
}

TEST_F(SymbolCoverage, OnlyTheCApiIsExported) {
  for (const auto& [name, type] : defined_symbols(kInterposerPath)) {
    const bool driver = name.size() > 2 && name.rfind("cu", 0) == 0 && name[2] >= 'A' &&
                        name[2] <= 'Z';  // cuInit, cuLaunchKernel, ...
    const bool api = name.rfind("cuda", 0) == 0 || name.rfind("__cuda", 0) == 0 ||
                     name.rfind("nccl", 0) == 0 || name.rfind("pnccl", 0) == 0 ||
                     name.rfind("cublas", 0) == 0 || name.rfind("curand", 0) == 0 ||
                     name.rfind("cudnn", 0) == 0 || name.rfind("cufft", 0) == 0 ||
                     name.rfind("cusparse", 0) == 0 || name.rfind("cupti", 0) == 0 ||
                     name.rfind("cusolver", 0) == 0 || name.rfind("nvtx", 0) == 0 ||
                     name.rfind("nvml", 0) == 0 ||  // NVML (nvml_emu.cc)
                     name.rfind("fftw", 0) == 0 ||  // cuFFTW (cufftw_emu.cc)
                     name.rfind("cudlibMg", 0) == 0 ||  // libcusolverMg's undocumented export
                     name == "InitializeInjectionNvtx2" || driver;
    EXPECT_TRUE(api) << name << " (" << type << ") is exported; internals must be hidden";
  }
}

TEST_F(SymbolCoverage, DropInsCarryTheirVersionNodes) {
  for (const std::string& version : {std::string("13"), std::string("12")}) {
    const std::string library = std::string(kCudartDir) + "/libcudart.so." + version;
    const ProgramRun symbols = run_shell("objdump -T " + shell_quote(library), dir_);
    ASSERT_EQ(symbols.exit_code, 0) << symbols.err;
    EXPECT_NE(symbols.out.find("libcudart.so." + version + " cudaMalloc\n"), std::string::npos)
        << "cudaMalloc@@libcudart.so." << version << " missing";
    const ProgramRun dynamic = run_shell("readelf -d " + shell_quote(library), dir_);
    EXPECT_NE(dynamic.out.find("Library soname: [libcudart.so." + version + "]"), std::string::npos)
        << dynamic.out;
    EXPECT_EQ(dynamic.out.find("libcudart.so.1" + std::string(version == "13" ? "2" : "3")),
              std::string::npos);
  }
  // Nothing beyond the C/C++ runtime: never the real CUDA libraries or powertrain's own.
  const ProgramRun needed = run_shell("readelf -d " + shell_quote(kInterposerPath), dir_);
  for (const char* forbidden : {"libcudart", "libcuda.so", "libnccl", "libcublas", "libfmt"}) {
    EXPECT_EQ(needed.out.find(forbidden), std::string::npos) << forbidden;
  }
}

}  // namespace
}  // namespace powertrain::testing_emu
