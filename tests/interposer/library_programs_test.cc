// cuRAND, NVTX and cuDNN under emulation: every function the real libcurand.so.10 and
// libcudnn.so.9 export is defined by the interposer (hand-written or a stub reporting the call),
// and the test programs' traces are checked operation by operation.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "interposer_test_util.h"

namespace powertrain::testing_emu {
namespace {

using nlohmann::json;

class LibraryPrograms : public EmulationTest {
 protected:
  std::map<std::string, char> functions(const std::string& library) {
    const ProgramRun run = run_shell("nm -D --defined-only " + shell_quote(library), dir_);
    EXPECT_EQ(run.exit_code, 0) << run.err;
    std::map<std::string, char> symbols;
    std::istringstream lines(run.out);
    std::string address, type, name;
    while (lines >> address >> type >> name) {
      if (type == "T" || type == "W" || type == "i") {
        symbols[name.substr(0, name.find('@'))] = type[0];
      }
    }
    return symbols;
  }

  // Checks that every function of the real `file` (next to libcudart) whose name starts with
  // `prefix` is defined by the interposer and that `hand_written` are not stubs.
  void check_coverage(const std::string& file, std::size_t at_least,
                      const std::vector<std::string>& hand_written,
                      const std::string& prefix = "") {
    const std::string real = (std::filesystem::path(kRealCudart).parent_path() / file).string();
    if (!std::filesystem::exists(real)) GTEST_SKIP() << real << " not found";
    auto theirs = functions(real);
    std::erase_if(theirs, [&](const auto& entry) { return entry.first.rfind(prefix, 0) != 0; });
    ASSERT_GE(theirs.size(), at_least) << real;
    const auto ours = functions(kInterposerPath);
    std::size_t strong = 0;
    for (const auto& [name, type] : theirs) {
      const auto it = ours.find(name);
      if (it == ours.end()) {
        ADD_FAILURE() << "libpowertrain_cuda.so does not define " << name << " of " << file;
      } else if (it->second == 'T') {
        ++strong;
      }
    }
    std::printf("%s: %zu functions, %zu hand-written, %zu generated stubs\n", file.c_str(),
                theirs.size(), strong, theirs.size() - strong);
    for (const std::string& name : hand_written) {
      const auto it = ours.find(name);
      ASSERT_NE(it, ours.end()) << name;
      EXPECT_EQ(it->second, 'T') << name << " is only a generated stub";
    }
  }

  std::vector<std::pair<std::string, std::string>> nvtx_env() const {
    return {{"NVTX_INJECTION64_PATH", kInterposerPath}};
  }
};

TEST_F(LibraryPrograms, EveryCurandFunctionIsDefined) {
  check_coverage("libcurand.so.10", 25,
                 {"curandCreateGenerator", "curandCreateGeneratorHost", "curandDestroyGenerator",
                  "curandSetStream", "curandSetPseudoRandomGeneratorSeed", "curandGenerate",
                  "curandGenerateUniform", "curandGenerateNormal", "curandGenerateLogNormal",
                  "curandGeneratePoisson", "curandGetVersion"});
}

TEST_F(LibraryPrograms, EveryCudnnFunctionIsDefined) {
  check_coverage("libcudnn.so.9", 200,
                 {"cudnnCreate",
                  "cudnnDestroy",
                  "cudnnSetStream",
                  "cudnnGetVersion",
                  "cudnnGetErrorString",
                  "cudnnCreateTensorDescriptor",
                  "cudnnSetTensor4dDescriptor",
                  "cudnnSetTensorNdDescriptor",
                  "cudnnCreateFilterDescriptor",
                  "cudnnSetFilter4dDescriptor",
                  "cudnnCreateConvolutionDescriptor",
                  "cudnnSetConvolution2dDescriptor",
                  "cudnnSetConvolutionGroupCount",
                  "cudnnSetConvolutionMathType",
                  "cudnnGetConvolution2dForwardOutputDim",
                  "cudnnGetConvolutionForwardAlgorithm_v7",
                  "cudnnGetConvolutionForwardWorkspaceSize",
                  "cudnnConvolutionForward",
                  "cudnnConvolutionBackwardData",
                  "cudnnConvolutionBackwardFilter"});
}

// libcufftw's whole FFTW3 interface (both precisions) is written by hand: the real library
// carries its own static runtime, so none of it can run under the emulator.
TEST_F(LibraryPrograms, EveryCufftwFunctionIsDefinedByHand) {
  check_coverage(
      "libcufftw.so.12", 70,
      {"fftw_plan_dft_1d", "fftw_plan_many_dft", "fftw_plan_guru64_dft_c2r", "fftw_execute",
       "fftw_execute_dft_r2c", "fftw_destroy_plan", "fftw_malloc", "fftwf_plan_dft_r2c_3d",
       "fftwf_plan_guru_dft", "fftwf_execute_dft_c2r", "fftwf_flops", "fftwf_cleanup"},
      "fftw");
  const std::string real =
      (std::filesystem::path(kRealCudart).parent_path() / "libcufftw.so.12").string();
  if (!std::filesystem::exists(real)) return;
  const auto ours = functions(kInterposerPath);
  for (const auto& [name, type] : functions(real)) {
    if (name.rfind("fftw", 0) != 0) continue;
    const auto it = ours.find(name);
    EXPECT_TRUE(it != ours.end() && it->second == 'T') << name << " is not hand-written";
  }
}

// libcusolverMg: its API is written by hand (cusolver_mg_emu.cc), its internal exports are
// generated stubs.
TEST_F(LibraryPrograms, EveryCusolverMgFunctionIsDefined) {
  check_coverage("libcusolverMg.so", 19,
                 {"cusolverMgCreate", "cusolverMgDestroy", "cusolverMgDeviceSelect",
                  "cusolverMgCreateDeviceGrid", "cusolverMgDestroyGrid",
                  "cusolverMgCreateMatrixDesc", "cusolverMgDestroyMatrixDesc",
                  "cusolverMgGetrf_bufferSize", "cusolverMgGetrf", "cusolverMgGetrs_bufferSize",
                  "cusolverMgGetrs", "cusolverMgPotrf_bufferSize", "cusolverMgPotrf",
                  "cusolverMgPotrs_bufferSize", "cusolverMgPotrs", "cusolverMgPotri_bufferSize",
                  "cusolverMgPotri", "cusolverMgSyevd_bufferSize", "cusolverMgSyevd"},
                 "cusolverMg");
}

TEST_F(LibraryPrograms, EveryCufftFunctionIsDefined) {
  check_coverage("libcufft.so.12", 50,
                 {"cufftCreate",
                  "cufftDestroy",
                  "cufftPlan1d",
                  "cufftPlan2d",
                  "cufftPlan3d",
                  "cufftPlanMany",
                  "cufftMakePlan1d",
                  "cufftMakePlan2d",
                  "cufftMakePlan3d",
                  "cufftMakePlanMany",
                  "cufftMakePlanMany64",
                  "cufftEstimate1d",
                  "cufftGetSize",
                  "cufftGetSizeMany64",
                  "cufftSetStream",
                  "cufftSetWorkArea",
                  "cufftSetAutoAllocation",
                  "cufftExecC2C",
                  "cufftExecR2C",
                  "cufftExecC2R",
                  "cufftExecZ2Z",
                  "cufftExecD2Z",
                  "cufftExecZ2D",
                  "cufftGetVersion"});
}

TEST_F(LibraryPrograms, EveryCusparseFunctionIsDefined) {
  check_coverage("libcusparse.so", 300,
                 {"cusparseCreate",
                  "cusparseDestroy",
                  "cusparseSetStream",
                  "cusparseGetStream",
                  "cusparseGetErrorName",
                  "cusparseGetErrorString",
                  "cusparseCreateCsr",
                  "cusparseCreateDnVec",
                  "cusparseCreateDnMat",
                  "cusparseDestroySpMat",
                  "cusparseDestroyDnVec",
                  "cusparseDestroyDnMat",
                  "cusparseSpMV_bufferSize",
                  "cusparseSpMV",
                  "cusparseSpMM_bufferSize",
                  "cusparseSpMM",
                  "cusparseCreateCoo",
                  "cusparseCreateBsr",
                  "cusparseSpMatGetSize",
                  "cusparseSpMatSetAttribute",
                  "cusparseSpSV_solve",
                  "cusparseSpSM_solve",
                  "cusparseSpGEMM_compute",
                  "cusparseSDDMM",
                  "cusparseScatter",
                  "cusparseCsr2cscEx2",
                  "cusparseCreateMatDescr",
                  "cusparseScsrilu02",
                  "cusparseZcsric02",
                  "cusparseDbsrilu02",
                  "cusparseXcsrilu02_zeroPivot"});
}

TEST_F(LibraryPrograms, EveryCusolverFunctionIsDefined) {
  // The cuSOLVER API only: libcusolver also exports internal cublas*batch* helpers of its own,
  // which programs never call.
  check_coverage("libcusolver.so.12", 700,
                 {"cusolverDnCreate",
                  "cusolverDnDestroy",
                  "cusolverDnSetStream",
                  "cusolverDnGetStream",
                  "cusolverDnCreateParams",
                  "cusolverDnDestroyParams",
                  "cusolverGetProperty",
                  "cusolverDnDgetrf_bufferSize",
                  "cusolverDnDgetrf",
                  "cusolverDnDgetrs",
                  "cusolverDnSpotrf",
                  "cusolverDnSpotrs",
                  "cusolverDnZgeqrf",
                  "cusolverDnDormqr",
                  "cusolverDnCunmqr",
                  "cusolverDnDsyevd",
                  "cusolverDnZheevd",
                  "cusolverDnDgesvd",
                  "cusolverDnXgetrf_bufferSize",
                  "cusolverDnXgetrf",
                  "cusolverDnXgetrs",
                  "cusolverDnXpotrf",
                  "cusolverDnXpotrs",
                  "cusolverDnXgeqrf",
                  "cusolverDnXsyevd",
                  "cusolverSpCreate",
                  "cusolverSpXcsrissymHost",
                  "cusolverSpXcsrsymrcmHost",
                  "cusolverSpXcsrpermHost",
                  "cusolverSpDcsrlsvcholHost",
                  "cusolverSpZcsrlsvqr",
                  "cusolverSpDcsrqrsvBatched",
                  "cusolverSpXcsrcholAnalysisHost",
                  "cusolverSpZcsrcholSolve",
                  "cusolverSpCcsrqrSetupHost",
                  "cusolverSpDcsrqrFactor",
                  "cusolverSpScsrluExtractHost",
                  "cusolverSpXcsrluNnzHost",
                  "cusolverRfSetupHost",
                  "cusolverRfRefactor",
                  "cusolverRfBatchSolve",
                  "cusolverRfExtractSplitFactorsHost"},
                 "cusolver");
}

TEST_F(LibraryPrograms, EveryCuptiFunctionIsDefined) {
  // The CUPTI API only: libcupti also exports its own NVTX injection entry points
  // (InitializeInjectionNvtx*), which only a program pointing NVTX_INJECTION64_PATH at libcupti
  // would reach.
  check_coverage("libcupti.so", 150,
                 {"cuptiGetResultString", "cuptiGetVersion", "cuptiGetTimestamp",
                  "cuptiActivityFlushAll", "cuptiFinalize"},
                 "cupti");
}

// Implicit-GEMM records of each convolution, in order, with shapes, dtypes and FLOPs.
TEST_F(LibraryPrograms, CudnnConvolutionsAreRecordedWithShapesAndFlops) {
  if (!std::filesystem::exists(program_path("cudnn_conv"))) GTEST_SKIP() << "not built";
  const ProgramRun run = run_program("cudnn_conv");
  ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
  EXPECT_NE(run.out.find("cudnn_conv: cuDNN 9"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("4 memory-bound ops"), std::string::npos) << run.out;
  const Trace trace = only_trace();
  EXPECT_TRUE(trace.of("unsupported").empty());
  const auto misuse = trace.of("misuse");  // the deliberately mismatched output descriptor
  ASSERT_EQ(misuse.size(), 1u);
  EXPECT_EQ(misuse[0].at("api"), "cudnnConvolutionForward");

  // FLOPs by hand: 2·N·K·P·Q·(C/g)·R·S.
  const std::int64_t dense = 2LL * 8 * 128 * 56 * 56 * 64 * 3 * 3;    // 3,699,376,128
  const std::int64_t grouped = 2LL * 8 * 128 * 28 * 28 * 32 * 3 * 3;  // 462,422,016
  struct Expected {
    const char* api;
    const char* direction;
    std::int64_t m, n, k, batch, flops;
    const char* dtype;
    const char* compute;
  };
  const Expected step[] = {
      {"cudnnConvolutionForward", "forward", 8 * 56 * 56, 128, 64 * 9, 1, dense, "float32",
       "float32_fast_tf32"},
      {"cudnnConvolutionForward", "forward", 8 * 28 * 28, 32, 32 * 9, 4, grouped, "float16",
       "float32"},
      {"cudnnConvolutionBackwardData", "backward_data", 8 * 56 * 56, 64 * 9, 128, 1, dense,
       "float32", "float32_fast_tf32"},
      {"cudnnConvolutionBackwardFilter", "backward_filter", 128, 64 * 9, 8 * 56 * 56, 1, dense,
       "float32", "float32_fast_tf32"},
  };
  const auto gemms = trace.of("gemm");
  ASSERT_EQ(gemms.size(), 12u);  // 3 steps x 4
  for (std::size_t i = 0; i < gemms.size(); ++i) {
    const Expected& e = step[i % 4];
    const json& g = gemms[i];
    SCOPED_TRACE(g.dump());
    EXPECT_EQ(g.at("api"), e.api);
    EXPECT_EQ(g.at("m"), e.m);
    EXPECT_EQ(g.at("n"), e.n);
    EXPECT_EQ(g.at("k"), e.k);
    EXPECT_EQ(g.at("batch"), e.batch);
    EXPECT_EQ(g.at("flops"), e.flops);
    EXPECT_EQ(g.at("flops").get<std::int64_t>(), 2 * e.m * e.n * e.k * e.batch);
    EXPECT_EQ(g.at("dtype_a"), e.dtype);
    EXPECT_EQ(g.at("compute"), e.compute);
    EXPECT_EQ(g.at("stream"), 1);
    const json& conv = g.at("conv");
    EXPECT_EQ(conv.at("direction"), e.direction);
    if (i % 4 == 1) {
      EXPECT_EQ(conv.at("input"), json::array({8, 128, 56, 56}));
      EXPECT_EQ(conv.at("filter"), json::array({128, 32, 3, 3}));
      EXPECT_EQ(conv.at("output"), json::array({8, 128, 28, 28}));
      EXPECT_EQ(conv.at("stride"), json::array({2, 2}));
      EXPECT_EQ(conv.at("groups"), 4);
    } else {
      EXPECT_EQ(conv.at("input"), json::array({8, 64, 56, 56}));
      EXPECT_EQ(conv.at("filter"), json::array({128, 64, 3, 3}));
      EXPECT_EQ(conv.at("output"), json::array({8, 128, 56, 56}));
      EXPECT_EQ(conv.at("pad"), json::array({1, 1}));
      EXPECT_EQ(conv.at("groups"), 1);
    }
  }
  EXPECT_EQ(trace.of("stream_sync").size(), 3u);

  // Bias, ReLU, pooling and softmax: memory-bound kernels sized by their tensors' bytes (16
  // bytes per thread, 256 threads per block).
  const std::int64_t y = 8LL * 128 * 56 * 56 * 4, pooled = 8LL * 128 * 28 * 28 * 4;
  const auto blocks = [](std::int64_t bytes) { return ((bytes + 15) / 16 + 255) / 256; };
  const std::vector<std::pair<std::string, std::int64_t>> ops = {
      {"cudnn_add_tensor_float32", 128 * 4 + 2 * y},  // bias read, y read and written
      {"cudnn_relu_fwd_float32", 2 * y},
      {"cudnn_pool_max_fwd_float32", y + pooled},
      {"cudnn_softmax_fwd_float32", 2 * pooled}};
  const auto kernels = trace.of("kernel");
  ASSERT_EQ(kernels.size(), 12u);
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    SCOPED_TRACE(kernels[i].dump());
    EXPECT_EQ(kernels[i].at("name"), ops[i % 4].first);
    EXPECT_EQ(kernels[i].at("grid")[0].get<std::int64_t>(), blocks(ops[i % 4].second));
    EXPECT_EQ(kernels[i].at("block"), json::array({256, 1, 1}));
    EXPECT_EQ(kernels[i].at("stream"), 1);
  }
  // Each step's memory-bound ops come after its first convolution and before the grouped one.
  const auto gemm_lines = trace.of("gemm");
  EXPECT_LT(gemm_lines[0].at("t").get<std::int64_t>(), kernels[0].at("t").get<std::int64_t>());
  EXPECT_GT(gemm_lines[1].at("t").get<std::int64_t>(), kernels[3].at("t").get<std::int64_t>());
}

// cuBLAS GEMMs on a capturing stream are graph nodes: nothing is recorded at capture, and each
// launch replays both GEMMs (with the graph's id, in order with the kernel between them).
TEST_F(LibraryPrograms, CublasGemmsAreCapturedIntoGraphs) {
  if (!std::filesystem::exists(program_path("cublas_graph"))) GTEST_SKIP() << "not built";
  const ProgramRun run = run_program("cublas_graph");
  ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
  const Trace trace = only_trace();
  EXPECT_TRUE(trace.of("unsupported").empty());
  EXPECT_TRUE(trace.of("misuse").empty());
  const auto launches = trace.of("graph_launch");
  ASSERT_EQ(launches.size(), 3u);
  EXPECT_EQ(launches[0].at("nodes"), 3);
  std::vector<std::string> work;
  json launch_t;  // entry time of the latest graph_launch
  for (const json& line : trace.lines) {
    const std::string op = line.at("op");
    if (op == "graph_launch") launch_t = line.at("t");
    if (op == "gemm" || op == "kernel") {
      ASSERT_TRUE(line.contains("graph")) << "recorded outside a launch: " << line.dump();
      EXPECT_EQ(line.at("t"), launch_t) << line.dump();  // replayed as part of the launch call
      work.push_back(op == "gemm" ? "gemm " + std::to_string(line.at("k").get<int>())
                                  : line.at("name").get<std::string>());
    }
  }
  std::vector<std::string> expected;
  for (int i = 0; i < 3; ++i) {
    for (const char* w : {"gemm 256", "_Z8add_biasPfPKfii", "gemm 512"}) expected.push_back(w);
  }
  EXPECT_EQ(work, expected);
  for (const json& g : trace.of("gemm")) {
    EXPECT_EQ(g.at("m"), 1024);
    EXPECT_EQ(g.at("n"), 512);
    EXPECT_EQ(g.at("api"), "cublasSgemm_v2");
    EXPECT_NE(g.at("stream"), 0);  // the launch stream (or a lane), never the capture's own id
  }
}

// cuRAND calls become a `curand` record plus a kernel sized by the output; NVTX ranges, marks and
// domains are `nvtx` records, nested per thread.
TEST_F(LibraryPrograms, CurandKernelsAndNvtxRangesAreRecorded) {
  if (!std::filesystem::exists(program_path("curand_nvtx"))) GTEST_SKIP() << "not built";
  const ProgramRun run = run_program("curand_nvtx", Mode::kPreload, nvtx_env());
  ASSERT_EQ(run.exit_code, 0) << run.err << run.out;
  EXPECT_NE(run.out.find("curand_nvtx: mean of 1048576 uniform numbers 0.50"), std::string::npos)
      << run.out;
  const Trace trace = only_trace();
  EXPECT_TRUE(trace.of("unsupported").empty());

  const auto calls = trace.of("curand");
  const auto kernels = trace.of("kernel");
  ASSERT_EQ(calls.size(), 6u);  // 3 steps x (uniform, normal); the odd-length call is refused
  ASSERT_EQ(kernels.size(), 6u);
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const bool uniform = i % 2 == 0;
    SCOPED_TRACE(calls[i].dump());
    EXPECT_EQ(calls[i].at("api"), uniform ? "curandGenerateUniform" : "curandGenerateNormal");
    EXPECT_EQ(calls[i].at("count"), 1 << 20);
    EXPECT_EQ(calls[i].at("dtype"), "float32");
    EXPECT_EQ(calls[i].at("generator"), 161);  // CURAND_RNG_PSEUDO_PHILOX4_32_10
    EXPECT_EQ(calls[i].at("stream"), 1);
    EXPECT_EQ(kernels[i].at("name"), uniform ? "curand_uniform_float32" : "curand_normal_float32");
    // 4 MiB of output at 16 bytes per thread, 256 threads per block: 1024 blocks.
    EXPECT_EQ(kernels[i].at("grid"), json::array({1024, 1, 1}));
    EXPECT_EQ(kernels[i].at("block"), json::array({256, 1, 1}));
    EXPECT_EQ(kernels[i].at("stream"), 1);
    EXPECT_EQ(kernels[i].at("t"), calls[i].at("t"));
  }
  const auto misuse = trace.of("misuse");
  ASSERT_EQ(misuse.size(), 1u);
  EXPECT_EQ(misuse[0].at("api"), "curandGenerateNormal");

  // NVTX, in order: setup push/pop, then per step: push step, push dropout (domain trainer),
  // pop, mark, start/end sync, pop.
  std::vector<std::string> seen;
  for (const json& r : trace.of("nvtx")) {
    // Appended piece by piece (GCC 12 warns falsely about `"literal" + std::string`).
    std::string text = r.at("kind").get<std::string>();
    if (r.contains("name")) text.append(" ").append(r.at("name").get<std::string>());
    if (r.contains("domain")) text.append(" @").append(r.at("domain").get<std::string>());
    if (r.contains("depth")) text.append(" ").append(std::to_string(r.at("depth").get<int>()));
    seen.push_back(text);
  }
  std::vector<std::string> expected = {"push setup 0", "pop 0"};
  for (int step = 0; step < 3; ++step) {
    for (const char* s : {"push step 0", "push dropout @trainer 1", "pop @trainer 1",
                          "mark generated", "start sync", "end", "pop 0"}) {
      expected.push_back(s);
    }
  }
  EXPECT_EQ(seen, expected);
}

}  // namespace
}  // namespace powertrain::testing_emu
