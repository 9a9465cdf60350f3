// `powertrain emulate` on the library test programs of issue 18 (cuFFT, CUPTI, NCCL in stream
// capture, ...): real nvcc-built programs run through the launcher and the interposer with no
// GPU; their recorded operations are checked one by one in the kept trace and their predicted
// kernels against the device model by hand. Skips when the emulation or a program is not built.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <span>
#include <string>
#include <vector>

#include "cli_runner.h"
#include "device/gpu.h"
#include "device/work.h"
#include "emulation_cli_test.h"

namespace powertrain {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing_cli::CliRun;
using testing_cli::slurp;

class EmulateLibrariesTest : public testing_cli::EmulationCliTest {
 protected:
  bool built(const std::string& program) const { return fs::exists(programs_ / program); }

  // Runs `program` under `powertrain emulate --keep-traces` into dir_/out; the summary is parsed.
  CliRun emulate(const std::string& program, std::vector<std::string> flags = {}) {
    std::vector<std::string> args = {"emulate",       "--interposer", interposer_.string(),
                                     "--quiet",       "--gpu",        "h100",
                                     "--keep-traces", "--out",        out().string()};
    args.insert(args.end(), flags.begin(), flags.end());
    args.push_back("--");
    args.push_back((programs_ / program).string());
    CliRun r = run(args);
    if (fs::exists(out() / "summary.json")) summary_ = json::parse(slurp(out() / "summary.json"));
    return r;
  }

  fs::path out() const { return dir_ / "out"; }

  // Records of `op` in the one kept trace, in file order.
  std::vector<json> kept(const std::string& op) const {
    std::vector<json> records;
    std::vector<fs::path> files;
    for (const auto& entry : fs::directory_iterator(out() / "traces")) {
      if (entry.path().extension() == ".jsonl") files.push_back(entry.path());
    }
    EXPECT_EQ(files.size(), 1u);
    if (files.empty()) return records;
    std::ifstream in(files.front());
    std::string line;
    while (std::getline(in, line)) {
      json record = json::parse(line);
      if (record.value("op", "") == op) records.push_back(std::move(record));
    }
    return records;
  }

  // Predicted durations (µs) of the timeline's kernels named `name`, in time order.
  std::vector<double> predicted_us(const std::string& name) const {
    const json trace = json::parse(slurp(out() / "emulated_trace.json"));
    std::vector<std::pair<double, double>> found;
    for (const auto& e : trace["traceEvents"]) {
      if (e.value("ph", "") == "X" && e.value("name", "") == name) {
        found.emplace_back(e["ts"].get<double>(), e["dur"].get<double>());
      }
    }
    std::sort(found.begin(), found.end());
    std::vector<double> durations;
    for (const auto& [start, duration] : found) durations.push_back(duration);
    return durations;
  }

  json summary_;
};

// The device model's time (µs) of a memory-bound kernel of `blocks` x 256 threads moving 16 bytes
// each (the raw-kernel estimate), at least the 3 µs kernel floor.
double memory_bound_us(std::int64_t blocks) {
  const device::GpuSpec gpu = *device::find_gpu("h100");
  device::Work work;
  work.kind = device::WorkKind::kMemoryBound;
  work.memory_bytes = static_cast<double>(blocks) * 256.0 * 16.0;
  const double s = device::estimate_work(gpu, std::span(&work, 1), gpu.max_clock_mhz()).time_s;
  return std::max(s, 3e-6) * 1e6;
}

// simpleCUFFT-style program: every cuFFT execution is an `fft` record with its shape, FLOPs
// (5·N·log2 N complex, 2.5·N·log2 N real, × batch) and bytes (passes × (in + out)), followed by
// a memory-bound kernel moving those bytes; plans with more than one pass allocate their work
// area as device memory; the wrong-type execution and cufftXtSetGPUs naming a GPU the one-GPU
// run lacks are misuse.
TEST_F(EmulateLibrariesTest, CufftPlansAndExecutionsAreRecordedWithShapesFlopsAndBytes) {
  if (!built("cufft_convolution")) GTEST_SKIP() << "cufft_convolution not built";
  const CliRun r = emulate("cufft_convolution");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_EQ(summary_["warnings"].size(), 0u) << summary_["warnings"].dump();
  EXPECT_TRUE(summary_["unsupported_calls"].empty()) << summary_["unsupported_calls"].dump();

  struct Expected {
    const char* api;
    const char* type;
    const char* direction;  // "" for real transforms
    std::vector<int> n;
    std::int64_t batch, flops, bytes, passes;
    const char* dtype;
    const char* kernel;
  };
  const std::int64_t big = 1 << 20;
  // clang-format off
  const Expected expected[] = {
      // 4096-point C2C, in place: 5·4096·12 FLOPs; 1 pass over 32 KiB in + 32 KiB out.
      {"cufftExecC2C", "C2C", "forward", {4096}, 1, 245760, 65536, 1, "complex64",
       "cufft_c2c_float32"},
      {"cufftExecC2C", "C2C", "forward", {4096}, 1, 245760, 65536, 1, "complex64",
       "cufft_c2c_float32"},
      {"cufftExecC2C", "C2C", "inverse", {4096}, 1, 245760, 65536, 1, "complex64",
       "cufft_c2c_float32"},
      // 256 x 512 R2C: 2.5·131072·17 FLOPs; 2 passes over 512 KiB in + 256·257·8 out.
      {"cufftExecR2C", "R2C", "", {256, 512}, 1, 5570560, 2 * (524288 + 526336), 2, "complex64",
       "cufft_r2c_float32"},
      // 64 x 1024-point D2Z and Z2D: 2.5·1024·10·64 FLOPs; 1 pass, 64·(1024·8 + 513·16) bytes.
      {"cufftExecD2Z", "D2Z", "", {1024}, 64, 1638400, 524288 + 525312, 1, "complex128",
       "cufft_d2z_float64"},
      {"cufftExecZ2D", "Z2D", "", {1024}, 64, 1638400, 525312 + 524288, 1, "complex128",
       "cufft_z2d_float64"},
      // 2^20-point Z2Z: 5·2^20·20 FLOPs; 2 passes over 16 MiB in + 16 MiB out.
      {"cufftExecZ2Z", "Z2Z", "forward", {1 << 20}, 1, 5 * big * 20, 2 * 2 * 16 * big, 2,
       "complex128", "cufft_z2z_float64"},
      {"cufftExecZ2Z", "Z2Z", "inverse", {1 << 20}, 1, 5 * big * 20, 2 * 2 * 16 * big, 2,
       "complex128", "cufft_z2z_float64"},
      // cufftXt, 8 x 1024-point fp16 C2C: 5·1024·10·8 FLOPs; 1 pass over 32 KiB in + out.
      {"cufftXtExec", "C2C", "forward", {1024}, 8, 409600, 65536, 1, "complex32",
       "cufft_c2c_float16"},
  };
  // clang-format on
  const auto ffts = kept("fft");
  const auto kernels = kept("kernel");
  ASSERT_EQ(ffts.size(), std::size(expected));
  // The program's own pointwise kernel comes after the second forward transform.
  ASSERT_EQ(kernels.size(), std::size(expected) + 1);
  std::size_t k = 0;
  for (std::size_t i = 0; i < ffts.size(); ++i) {
    const Expected& e = expected[i];
    const json& f = ffts[i];
    SCOPED_TRACE(f.dump());
    EXPECT_EQ(f["api"], e.api);
    EXPECT_EQ(f["type"], e.type);
    if (*e.direction != '\0') {
      EXPECT_EQ(f["direction"], e.direction);
    } else {
      EXPECT_FALSE(f.contains("direction"));
    }
    EXPECT_EQ(f["n"], json(e.n));
    EXPECT_EQ(f["rank"], e.n.size());
    EXPECT_EQ(f["batch"], e.batch);
    EXPECT_EQ(f["flops"].get<std::int64_t>(), e.flops);
    EXPECT_EQ(f["bytes"].get<std::int64_t>(), e.bytes);
    EXPECT_EQ(f["passes"], e.passes);
    EXPECT_EQ(f["dtype"], e.dtype);
    // Stream: the default stream, except the 2D plan bound to the program's stream (id 1).
    EXPECT_EQ(f["stream"], i == 3 ? 1 : 0);
    if (i == 2) {
      EXPECT_EQ(kernels[k]["name"], "_Z31complex_pointwise_mul_and_scaleP6float2PKS_if");
      ++k;
    }
    const json& kernel = kernels[k++];
    EXPECT_EQ(kernel["name"], e.kernel);
    EXPECT_EQ(kernel["t"], f["t"]);
    EXPECT_EQ(kernel["stream"], f["stream"]);
    EXPECT_EQ(kernel["grid"][0].get<std::int64_t>(), (e.bytes + 4095) / 4096);
  }

  // Work areas: the 2-pass plans allocate one output's size, freed by cufftDestroy.
  std::vector<std::pair<std::string, std::int64_t>> allocations, frees;
  for (const json& m : kept("malloc")) {
    const std::string api = m.value("api", "");
    if (api.rfind("cufft", 0) == 0) allocations.emplace_back(api, m["bytes"].get<std::int64_t>());
  }
  for (const json& m : kept("free")) {
    const std::string api = m.value("api", "");
    if (api.rfind("cufft", 0) == 0) frees.emplace_back(api, m["bytes"].get<std::int64_t>());
  }
  using Calls = std::vector<std::pair<std::string, std::int64_t>>;
  EXPECT_EQ(allocations, (Calls{{"cufftMakePlan2d", 256 * 257 * 8}, {"cufftPlan1d", 16 * big}}));
  EXPECT_EQ(frees, (Calls{{"cufftDestroy", 256 * 257 * 8}, {"cufftDestroy", 16 * big}}));
  EXPECT_NE(r.out.find("work areas 526336 (2D R2C) and 16777216 bytes (2^20 Z2Z, estimated "
                       "16777216), wrong type -> 3, cufftXtSetGPUs -> 11"),
            std::string::npos)
      << r.out;

  const auto misuse = kept("misuse");
  ASSERT_EQ(misuse.size(), 2u);
  EXPECT_EQ(misuse[0]["api"], "cufftExecR2C");
  EXPECT_NE(misuse[0]["what"].get<std::string>().find("is C2C, not R2C"), std::string::npos);
  EXPECT_EQ(misuse[1]["api"], "cufftXtSetGPUs");
  EXPECT_NE(misuse[1]["what"].get<std::string>().find("GPU 1 is not one of the 1 emulated devices"),
            std::string::npos);

  // Predicted: each transform's kernel at the memory-bound roofline of its bytes (the 2^20
  // Z2Z moves 64 MiB: ~20 µs on the H100 model; the small ones sit at the 3 µs floor).
  const std::vector<double> z2z = predicted_us("cufft_z2z_float64");
  ASSERT_EQ(z2z.size(), 2u);
  const double z2z_us = memory_bound_us((2 * 2 * 16 * big) / 4096);
  for (double d : z2z) EXPECT_NEAR(d, z2z_us, 0.01);
  EXPECT_GT(z2z_us, 10.0);
  const std::vector<double> c2c = predicted_us("cufft_c2c_float32");
  ASSERT_EQ(c2c.size(), 3u);
  for (double d : c2c) EXPECT_NEAR(d, memory_bound_us(16), 0.01);
  std::printf(
      "predicted (H100 model): 2^20-point Z2Z %.2f us, 4096-point C2C %.2f us, R2C "
      "256x512 %.2f us\n",
      z2z_us, memory_bound_us(16), memory_bound_us(513));
}

// cuFFTW (the FFTW3 interface; libcufftw carries its own static runtime, so it is emulated at its
// API): the program compares every result with a direct DFT (so the spectrum is computed, in
// both precisions, for the basic, advanced and guru64 plans, in-place real transforms, 1-point
// and 1 x n shapes, and an in-place plan writing its input transposed). Each
// execution on host arrays is a host-to-device copy of the logical input, an `fft` record named
// after the fftw call with the plan's shape, and a device-to-host copy of the output; the
// execution on device memory adds no copies (the two around it are the program's own). Device
// buffers are freed with their plans; the rank-4 plan is refused as misuse.
TEST_F(EmulateLibrariesTest, CufftwExecutesHostArraysThroughCopiesAndComputesTheSpectrum) {
  if (!built("cufftw_host")) GTEST_SKIP() << "cufftw_host not built";
  const CliRun r = emulate("cufftw_host");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_TRUE(summary_["unsupported_calls"].empty()) << summary_["unsupported_calls"].dump();
  std::size_t ok = 0;
  for (std::size_t at = r.out.find(" ok\n"); at != std::string::npos;
       at = r.out.find(" ok\n", at + 1)) {
    ++ok;
  }
  EXPECT_EQ(ok, 10u) << r.out;
  EXPECT_EQ(r.out.find("FAILED"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cufftw_host: flops 49829\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("cufftw_host: rank 4 plan refused"), std::string::npos) << r.out;

  // memcpy and fft records in file order: "HtoD 8000", "fft fftwf_execute C2C forward [1000] 1".
  std::vector<std::string> sequence;
  for (const fs::directory_entry& entry : fs::directory_iterator(out() / "traces")) {
    if (entry.path().extension() != ".jsonl") continue;
    std::ifstream in(entry.path());
    std::string line;
    while (std::getline(in, line)) {
      const json record = json::parse(line);
      const std::string op = record.value("op", "");
      if (op == "memcpy") {
        sequence.push_back(record["kind"].get<std::string>() + " " +
                           std::to_string(record["bytes"].get<std::int64_t>()));
      } else if (op == "fft") {
        sequence.push_back("fft " + record["api"].get<std::string>() + " " +
                           record["type"].get<std::string>() + " " +
                           record.value("direction", "-") + " " + record["n"].dump() + " " +
                           std::to_string(record["batch"].get<std::int64_t>()));
      }
    }
  }
  const std::vector<std::string> expected = {
      // 1000-point C2C: 8 bytes per complex64 point each way.
      "HtoD 8000", "fft fftwf_execute C2C forward [1000] 1", "DtoH 8000",
      // 24 x 36 Z2Z in place, forward then backward: 864 complex128 points.
      "HtoD 13824", "fft fftw_execute Z2Z forward [24,36] 1", "DtoH 13824", "HtoD 13824",
      "fft fftw_execute Z2Z inverse [24,36] 1", "DtoH 13824",
      // 12 x 10 D2Z in place: 120 reals in, 12 x 6 complex out; Z2D the reverse.
      "HtoD 960", "fft fftw_execute D2Z - [12,10] 1", "DtoH 1152", "HtoD 1152",
      "fft fftw_execute Z2D - [12,10] 1", "DtoH 960",
      // 3 interleaved 64-point C2C (the copies carry the logical elements).
      "HtoD 1536", "fft fftwf_execute C2C inverse [64] 3", "DtoH 1536",
      // Guru64 R2C 2 x 30 on host arrays, then on device memory (the program's own copies).
      "HtoD 240", "fft fftwf_execute R2C - [30] 2", "DtoH 256", "HtoD 240",
      "fft fftwf_execute_dft_r2c R2C - [30] 2", "DtoH 256",
      // A 1-point and a 1 x 8 transform (16 bytes per complex128 point).
      "HtoD 16", "fft fftw_execute Z2Z forward [1] 1", "DtoH 16", "HtoD 128",
      "fft fftw_execute Z2Z inverse [1,8] 1", "DtoH 128",
      // 3 x 4 points in place with a transposed output: the copies carry the 12 points.
      "HtoD 192", "fft fftw_execute Z2Z forward [4] 3", "DtoH 192",
      // On device memory read backwards: the transform alone.
      "fft fftwf_execute C2C forward [16] 1"};
  EXPECT_EQ(sequence, expected);

  // The FLOPs of the 1000-point transform: 5·N·log2 N, as fftwf_flops reported.
  const auto ffts = kept("fft");
  ASSERT_FALSE(ffts.empty());
  EXPECT_EQ(ffts[0]["flops"].get<std::int64_t>(), 49829);
  // Every device buffer and work area is freed by the end.
  EXPECT_EQ(kept("malloc").size(), kept("free").size());
  const auto misuse = kept("misuse");
  ASSERT_EQ(misuse.size(), 1u);
  EXPECT_EQ(misuse[0]["api"], "fftw_plan_dft");
  EXPECT_NE(misuse[0]["what"].get<std::string>().find("rank 4 is not supported"),
            std::string::npos);
}

// A CUDA program that uses the CPU FFTW library (libfftw3): its fftw_* calls reach libfftw3 (a
// real-to-real DCT cuFFTW lacks, a complex DFT, both right), none is recorded as GPU work, and
// its own CUDA upload is.
TEST_F(EmulateLibrariesTest, CpuFftwCallsPassThroughToLibfftw3) {
  if (!built("fftw3_cpu")) GTEST_SKIP() << "fftw3_cpu not built (no libfftw3)";
  const CliRun r = emulate("fftw3_cpu");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("fftw3_cpu: DCT-II of 8 ones: 16.0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("|X[3]| = 16.0, |X[0]| = 0.0, 1 device(s)"), std::string::npos) << r.out;
  EXPECT_TRUE(kept("fft").empty());
  EXPECT_TRUE(kept("misuse").empty());
  EXPECT_TRUE(summary_["unsupported_calls"].empty()) << summary_["unsupported_calls"].dump();
  ASSERT_EQ(kept("memcpy").size(), 1u);
  EXPECT_EQ(kept("memcpy")[0]["bytes"], 256);
}

// A program that records nothing (no CUDA work at all) is told so in one line, exit 1, and no
// empty "<out>.traces" directory is left behind.
TEST_F(EmulateLibrariesTest, AProgramWithoutCudaWorkIsToldThereIsNothingToPredict) {
  const CliRun r = run({"emulate", "--interposer", interposer_.string(), "--quiet", "--out",
                        out().string(), "--", "/bin/true"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("the program wrote no trace"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out()));
  EXPECT_FALSE(fs::exists(out().string() + ".traces"));
}

// cuSOLVERMg on 2 GPUs, as the CUDALibrarySamples call it (611 x 611, tiles of 256 columns:
// tiles 0 and 2 — 355 columns — on GPU 0, tile 1 — 256 — on GPU 1). Each routine is one `gemm`
// record per GPU with the share of the LAPACK FLOPs its columns carry (getrf 2/3·n³, getrs and
// potrs 2·n²·nrhs, potrf n³/3, potri 2/3·n³, syevd 9·n³ with vectors), after peer copies of A's
// tiles: every tile to the other GPU for the factorizations, only GPU 1's tile to GPU 0 (which
// owns B) for the solves. Workspaces are one 611 x 256 panel (twice for potri, plus n·nrhs for
// the solves, plus half of dsyevd's 1 + 6n + 2n² for syevd); pivots come back as the identity;
// a missing device and (IA, JA) = (2, 1) are misuse (CUSOLVER_STATUS_INVALID_VALUE, 3).
TEST_F(EmulateLibrariesTest, CusolverMgSplitsEachRoutineOverTheGridWithItsPanelCopies) {
  if (!built("cusolverMg_linear")) GTEST_SKIP() << "cusolverMg_linear not built";
  const CliRun r = emulate("cusolverMg_linear", {"--gpus", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_TRUE(summary_["unsupported_calls"].empty()) << summary_["unsupported_calls"].dump();
  EXPECT_NE(r.out.find("2 device(s), lwork getrf 156416 getrs 157027, ipiv[0..2] 1 2 3"),
            std::string::npos)
      << r.out;
  const std::int64_t n = 611, panel = 611 * 256;
  const std::int64_t syevd_work = panel + (1 + 6 * n + 2 * n * n) / 2;
  EXPECT_NE(r.out.find("lwork potrf " + std::to_string(panel) + " potrs 157027 potri " +
                       std::to_string(2 * panel) + " syevd " + std::to_string(syevd_work)),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("device 2 -> 3, IA 2 -> 3"), std::string::npos) << r.out;

  const double cube = static_cast<double>(n) * n * n;
  struct Expected {
    const char* api;
    double flops;  // the whole routine's
  };
  const Expected routines[] = {
      {"cusolverMgGetrf", 2.0 / 3.0 * cube}, {"cusolverMgGetrs", 2.0 * n * n},
      {"cusolverMgPotrf", cube / 3.0},       {"cusolverMgPotrs", 2.0 * n * n},
      {"cusolverMgPotri", 2.0 / 3.0 * cube}, {"cusolverMgSyevd", 9.0 * cube}};
  const auto gemms = kept("gemm");
  ASSERT_EQ(gemms.size(), 2 * std::size(routines));
  for (std::size_t i = 0; i < gemms.size(); ++i) {
    const json& g = gemms[i];
    SCOPED_TRACE(g.dump());
    const Expected& e = routines[i / 2];
    const int device = static_cast<int>(i % 2);
    const std::int64_t owned = device == 0 ? 355 : 256;
    EXPECT_EQ(g["api"], e.api);
    EXPECT_EQ(g["dev"], device);
    EXPECT_EQ(g["n"], owned);
    EXPECT_EQ(g["flops"].get<std::int64_t>(),
              static_cast<std::int64_t>(e.flops * static_cast<double>(owned) / n));
    EXPECT_EQ(g["bytes"].get<std::int64_t>(), n * owned * 8 * 2);
    EXPECT_EQ(g["solver"]["devices"], 2);
  }
  // Peer copies: 3 per factorization (tile 0 and 2 from GPU 0, tile 1 from GPU 1), 1 per solve.
  std::vector<std::pair<int, std::int64_t>> copies;
  for (const json& m : kept("memcpy")) {
    if (m.value("api", "") == "cudaMemcpyPeerAsync") {
      copies.emplace_back(m["dev"].get<int>(), m["bytes"].get<std::int64_t>());
    }
  }
  const std::pair<int, std::int64_t> tile0{0, n * 256 * 8}, tile1{1, n * 256 * 8},
      tile2{0, n * 99 * 8};
  using Copies = std::vector<std::pair<int, std::int64_t>>;
  const Copies factor = {tile0, tile1, tile2};
  Copies expected;
  for (const Copies& part : {factor, Copies{tile1}, factor, Copies{tile1}, factor, factor}) {
    expected.insert(expected.end(), part.begin(), part.end());
  }
  EXPECT_EQ(copies, expected);
  const auto misuse = kept("misuse");
  ASSERT_EQ(misuse.size(), 2u);
  EXPECT_EQ(misuse[0]["api"], "cusolverMgDeviceSelect");
  EXPECT_EQ(misuse[1]["api"], "cusolverMgGetrf");
  EXPECT_NE(misuse[1]["what"].get<std::string>().find("supports only 1, 1"), std::string::npos);
}

// conjugateGradient's solve: with cusparseSpMV computed where its arrays are backed (as the
// cuBLAS level-1 calls are), the CG loop converges as on a GPU — 8 iterations for this matrix —
// and the program's own host check of max |A·x − b| passes; one SpMV record per matrix-vector
// product (the initial residual and one per iteration). A small SpMM (row-major B, column-major
// C, α and β) and a transposed double-precision COO SpMV come out exact.
TEST_F(EmulateLibrariesTest, ConjugateGradientConvergesWithComputedSpmv) {
  if (!built("cusparse_cg_solve")) GTEST_SKIP() << "cusparse_cg_solve not built";
  const CliRun r = emulate("cusparse_cg_solve");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("cusparse_cg_solve: 8 iterations"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(" ok\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("SpMM error 0.0e+00, transposed COO SpMV error 0.0e+00 ok"),
            std::string::npos)
      << r.out;
  const auto sparse = kept("sparse");
  ASSERT_EQ(sparse.size(), 11u);  // 9 SpMV of the solve, then the SpMM and the COO SpMV
  for (std::size_t i = 0; i < 9; ++i) EXPECT_EQ(sparse[i]["api"], "cusparseSpMV");
  EXPECT_EQ(sparse[9]["api"], "cusparseSpMM");
  EXPECT_EQ(sparse[10]["format"], "coo");
}

// cuBLAS GEMM results, as simpleCUBLAS, matrixMulCUBLAS and batchCUBLAS check them: with the
// operands in backed device memory, sgemm/dgemm (transposes, padded leading dimensions),
// strided-batched and pointer-array batched GEMMs, GemmEx in fp32 and device-resident alpha and
// beta all match the program's own host GEMM; each call is still one `gemm` record.
TEST_F(EmulateLibrariesTest, CublasGemmResultsMatchTheProgramsHostGemm) {
  if (!built("cublas_gemm_values")) GTEST_SKIP() << "cublas_gemm_values not built";
  const CliRun r = emulate("cublas_gemm_values");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("cublas_gemm_values: all ok"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("FAILED"), std::string::npos) << r.out;
  const auto gemms = kept("gemm");
  ASSERT_EQ(gemms.size(), 6u);
  EXPECT_EQ(gemms[2]["batch"], 3);
  EXPECT_EQ(gemms[3]["batch"], 2);
  EXPECT_TRUE(summary_["warnings"].empty()) << summary_["warnings"].dump();
}

// Host computation taken out of the trace clock must not reorder threads: thread A's GEMMs are
// computed on the host while thread B launches and then records an event, which A waits on
// afterwards; A's wait carries a time no earlier than B's record and the prediction keeps the
// dependency (no "event never recorded" in the timeline).
TEST_F(EmulateLibrariesTest, HostComputationKeepsRecordsOfThreadsInOrder) {
  if (!built("cublas_threads_clock")) GTEST_SKIP() << "cublas_threads_clock not built";
  const CliRun r = emulate("cublas_threads_clock");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("C[0] = 640"), std::string::npos) << r.out;  // the GEMM was computed
  const auto records = kept("event_record");
  const auto waits = kept("stream_wait_event");
  ASSERT_EQ(records.size(), 1u);
  ASSERT_EQ(waits.size(), 1u);
  EXPECT_GE(waits[0]["t"].get<std::int64_t>(), records[0]["t"].get<std::int64_t>());
  EXPECT_EQ(slurp(out() / "emulated_trace.json").find("event never recorded"), std::string::npos);
}

// cuSOLVER LU and Cholesky computed where the memory is backed: every residual of the program's
// own check is at rounding level (getrs plain and transposed, potrs of both triangles, single
// precision, the 64-bit API), pivoting exchanges rows, and info reports a singular matrix's first
// zero pivot (3) and an indefinite matrix's first non-positive minor (2). Each call is still one
// `gemm` record with its `solver` routine.
TEST_F(EmulateLibrariesTest, CusolverLuAndCholeskyResultsSolveTheSystems) {
  if (!built("cusolver_values")) GTEST_SKIP() << "cusolver_values not built";
  const CliRun r = emulate("cusolver_values");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("cusolver_values: all ok"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("dgetrf info 0, rows exchanged"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("singular getrf info 3, indefinite potrf info 2"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("getrs without getrf leaves B unchanged"), std::string::npos) << r.out;
  std::vector<std::string> routines;
  for (const json& g : kept("gemm")) routines.push_back(g["solver"]["routine"]);
  const std::vector<std::string> expected = {"getrf", "getrs", "getrs", "potrf", "potrs",
                                             "potrf", "potrs", "getrf", "getrs", "getrf",
                                             "getrs", "getrs", "syevd", "getrf", "potrf"};
  EXPECT_EQ(routines, expected);
}

// CUPTI under emulation is "no profiler": the tracing calls return CUPTI_ERROR_NOT_SUPPORTED with a
// result string that says so, are reported unsupported by name, and the client carries on; its
// kernel is recorded and predicted as usual.
TEST_F(EmulateLibrariesTest, CuptiReportsNoProfilerAndTheClientCarriesOn) {
  if (!built("cupti_probe")) GTEST_SKIP() << "cupti_probe not built";
  const CliRun r = emulate("cupti_probe");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  for (const char* call :
       {"cuptiActivityRegisterCallbacks", "cuptiActivityEnable", "cuptiSubscribe"}) {
    EXPECT_NE(r.out.find(std::string("cupti_probe: ") + call +
                         " -> 27 (CUPTI_ERROR_NOT_SUPPORTED: no profiler under the powertrain "
                         "GPU emulator)"),
              std::string::npos)
        << call << "\n"
        << r.out;
  }
  EXPECT_NE(r.out.find("cupti_probe: CUPTI API 130001, profiler unavailable, 0 activity records, "
                       "3 failed calls"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.err.find("cuptiActivityEnable is not supported by the GPU emulator; it returns "
                       "CUPTI_ERROR_NOT_SUPPORTED (27): no profiler"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(summary_["warnings"].size(), 0u) << summary_["warnings"].dump();
  EXPECT_EQ(summary_["unsupported_calls"], json({{"cuptiActivityEnable", 1},
                                                 {"cuptiActivityRegisterCallbacks", 1},
                                                 {"cuptiSubscribe", 1}}));
  EXPECT_TRUE(kept("misuse").empty());
  const auto kernels = kept("kernel");
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_NE(kernels[0]["name"].get<std::string>().find("scale"), std::string::npos);
  EXPECT_EQ(kernels[0]["grid"], json::array({4096, 1, 1}));
  EXPECT_EQ(kernels[0]["block"], json::array({256, 1, 1}));
}

// NCCL calls on a capturing stream are graph nodes: nothing is recorded at capture; every
// cudaGraphLaunch replays the all-reduce with the communicator's next sequence number (so the two
// devices' launches pair up call by call) and a group id of its own; the uncaptured all-reduce
// afterwards continues the sequence. The pipeline joins every replayed collective.
TEST_F(EmulateLibrariesTest, NcclCallsCapturedInAGraphAreReplayedAtEachLaunch) {
  if (!built("nccl_graph")) GTEST_SKIP() << "nccl_graph not built";
  const CliRun r = emulate("nccl_graph", {"--gpus", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("nccl_graph: 2 devices, 3 launches of a captured all-reduce: ok"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(summary_["warnings"].size(), 0u) << summary_["warnings"].dump();
  EXPECT_TRUE(summary_["unsupported_calls"].empty()) << summary_["unsupported_calls"].dump();
  EXPECT_TRUE(kept("misuse").empty());

  const auto launches = kept("graph_launch");
  ASSERT_EQ(launches.size(), 6u);  // 3 steps x 2 devices
  const auto calls = kept("nccl");
  ASSERT_EQ(calls.size(), 8u);         // 6 replayed + 2 uncaptured
  std::map<std::int64_t, int> groups;  // group id → calls
  for (std::size_t i = 0; i < calls.size(); ++i) {
    const json& c = calls[i];
    SCOPED_TRACE(c.dump());
    EXPECT_EQ(c["coll"], "allreduce");
    EXPECT_EQ(c["api"], "ncclAllReduce");
    EXPECT_EQ(c["count"], 1 << 20);
    EXPECT_EQ(c["bytes"], 4 << 20);
    EXPECT_EQ(c["comm_size"], 2);
    EXPECT_EQ(c["comm_rank"], i % 2);  // device order within each launch round
    EXPECT_EQ(c["dev"], i % 2);
    EXPECT_EQ(c["seq"], static_cast<int>(i / 2));
    if (i < 6) {
      // Replayed by the launch just before it, with that launch's entry time and graph.
      EXPECT_EQ(c["t"], launches[i]["t"]);
      EXPECT_EQ(c["graph"], launches[i]["graph"]);
      EXPECT_EQ(c["stream"], launches[i]["stream"]);
    } else {
      EXPECT_FALSE(c.contains("graph"));
    }
    EXPECT_NE(c["group"], 0);
    ++groups[c["group"].get<std::int64_t>()];
  }
  // Each launch's replay is its own group; the uncaptured pair is one group.
  EXPECT_EQ(groups.size(), 7u);
  const auto kernels = kept("kernel");
  ASSERT_EQ(kernels.size(), 6u);
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    EXPECT_EQ(kernels[i]["graph"], launches[i]["graph"]);
    EXPECT_NE(kernels[i]["name"].get<std::string>().find("produce_gradient"), std::string::npos);
  }
  // Joined across the two devices: 3 launches + the uncaptured call.
  EXPECT_EQ(summary_["job"]["collectives_joined"].get<int>(), 4) << summary_["job"].dump();
}

// conjugateGradient-style cuSPARSE program: each SpMV and the SpMM is a `sparse` record with its
// shape, nnz, FLOPs and bytes by hand, followed by a memory-bound kernel moving those bytes, on
// the handle's stream; a COO descriptor is created and destroyed.
TEST_F(EmulateLibrariesTest, CusparseSpmvAndSpmmAreRecordedWithNnzAndShapes) {
  if (!built("cusparse_cg")) GTEST_SKIP() << "cusparse_cg not built";
  const CliRun r = emulate("cusparse_cg");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("cusparse_cg: 1048576 rows, 3145726 nonzeros, 5 CG iterations, SpMM with 8 "
                       "columns, cusparseCreateCoo -> CUSPARSE_STATUS_SUCCESS"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(summary_["warnings"].size(), 0u) << summary_["warnings"].dump();
  EXPECT_TRUE(summary_["unsupported_calls"].empty()) << summary_["unsupported_calls"].dump();
  EXPECT_TRUE(kept("misuse").empty());

  const std::int64_t n = 1 << 20, nnz = 3 * n - 2;
  const std::int64_t matrix = nnz * (4 + 4) + (n + 1) * 4;  // values + columns + offsets
  const std::int64_t spmv_bytes = matrix + n * 4 + 2 * n * 4;
  const std::int64_t spmm_bytes = matrix + n * 8 * 4 + 2 * n * 8 * 4;
  const auto products = kept("sparse");
  ASSERT_EQ(products.size(), 6u);
  std::vector<std::string> kernel_names;
  for (const json& k : kept("kernel")) kernel_names.push_back(k["name"]);
  ASSERT_EQ(kernel_names.size(), 11u);  // 5 x (SpMV, update) + SpMM
  for (std::size_t i = 0; i < products.size(); ++i) {
    const json& p = products[i];
    SCOPED_TRACE(p.dump());
    const bool spmm = i == 5;
    EXPECT_EQ(p["api"], spmm ? "cusparseSpMM" : "cusparseSpMV");
    EXPECT_EQ(p["format"], "csr");
    EXPECT_EQ(p["op_a"], "N");
    EXPECT_EQ(p["rows"], n);
    EXPECT_EQ(p["cols"], n);
    EXPECT_EQ(p["nnz"], nnz);
    EXPECT_EQ(p["dtype"], "float32");
    EXPECT_EQ(p["compute"], "float32");
    EXPECT_EQ(p["flops"].get<std::int64_t>(), spmm ? 2 * nnz * 8 : 2 * nnz);
    EXPECT_EQ(p["bytes"].get<std::int64_t>(), spmm ? spmm_bytes : spmv_bytes);
    EXPECT_EQ(p["stream"], 1);
    if (spmm) {
      EXPECT_EQ(p["n"], 8);
    }
    EXPECT_EQ(kernel_names[2 * i],
              spmm ? "cusparse_spmm_csr_float32" : "cusparse_spmv_csr_float32");
    if (!spmm) {
      EXPECT_NE(kernel_names[2 * i + 1].find("cg_update"), std::string::npos);
    }
  }
  // Predicted at the memory-bound roofline of the bytes: about 16 µs per SpMV on the H100 model.
  const std::vector<double> spmv = predicted_us("cusparse_spmv_csr_float32");
  ASSERT_EQ(spmv.size(), 5u);
  const double spmv_us = memory_bound_us((spmv_bytes + 4095) / 4096);
  for (double d : spmv) EXPECT_NEAR(d, spmv_us, 0.01);
  const std::vector<double> spmm = predicted_us("cusparse_spmm_csr_float32");
  ASSERT_EQ(spmm.size(), 1u);
  EXPECT_NEAR(spmm[0], memory_bound_us((spmm_bytes + 4095) / 4096), 0.01);
  std::printf("predicted (H100 model): SpMV 2^20 rows, 3.1M nnz %.2f us; SpMM x8 %.2f us\n",
              spmv_us, spmm[0]);
}

// conjugateGradient/simpleCUBLAS-style cuBLAS level 1 and 2: values computed on the copied-in
// data (checked by the program itself), one memory-bound kernel per call carrying its FLOPs and
// bytes by hand (n = 4096 floats: dot 2n FLOPs over 2n·4 bytes, axpy 2n over 3n·4, ...), a
// stream synchronization named after each reduction that returns its scalar to the host, none
// for the one in device pointer mode, a TRSM as the GEMM of its FLOPs, and a misuse for a host
// array.
TEST_F(EmulateLibrariesTest, CublasLevel1And2AreComputedAndRecorded) {
  if (!built("cublas_level12")) GTEST_SKIP() << "cublas_level12 not built";
  const CliRun r = emulate("cublas_level12");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("cublas_level12: dot 8390656 nrm2 4.5552 amax 4096 gemv_n 5 7 9 gemv_t 6 "
                       "15 ddot 16384 device_dot 3 bad CUBLAS_STATUS_EXECUTION_FAILED"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(summary_["warnings"].size(), 0u) << summary_["warnings"].dump();
  EXPECT_TRUE(summary_["unsupported_calls"].empty()) << summary_["unsupported_calls"].dump();
  const auto misuse = kept("misuse");
  ASSERT_EQ(misuse.size(), 1u);
  EXPECT_EQ(misuse[0]["api"], "cublasSscal_v2");

  const std::int64_t n = 4096;
  struct Expected {
    const char* name;
    std::int64_t flops, bytes;  // flops 0: a plain copy kernel (no work fields)
  };
  const Expected expected[] = {
      {"cublas_dot_float32", 2 * n, 2 * n * 4},
      {"cublas_axpy_float32", 2 * n, 3 * n * 4},
      {"cublas_scal_float32", n, 2 * n * 4},
      {"cublas_copy_float32", 0, 2 * n * 4},
      {"cublas_nrm2_float32", 6, 12},
      {"cublas_iamax_float32", n, n * 4},
      {"cublas_gemv_float32", 12, (6 + 2 + 3) * 4},
      {"cublas_gemv_float32", 12, (6 + 3 + 2) * 4},
      {"cublas_dot_float64", 2 * n, 2 * n * 8},
      {"cublas_dot_float32", 6, 24},
  };
  const auto kernels = kept("kernel");
  ASSERT_EQ(kernels.size(), std::size(expected));
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    const json& k = kernels[i];
    SCOPED_TRACE(k.dump());
    EXPECT_EQ(k["name"], expected[i].name);
    EXPECT_EQ(k["stream"], 1);
    if (expected[i].flops > 0) {
      EXPECT_EQ(k["flops"].get<std::int64_t>(), expected[i].flops);
      EXPECT_EQ(k["bytes"].get<std::int64_t>(), expected[i].bytes);
    } else {
      EXPECT_FALSE(k.contains("flops"));
      EXPECT_EQ(k["grid"][0], expected[i].bytes / 16 / 256);  // 16 bytes per thread
    }
  }
  // The triangular solve: the GEMM of the same FLOPs (2·64·8·32 = 64²·8).
  const auto gemms = kept("gemm");
  ASSERT_EQ(gemms.size(), 1u);
  EXPECT_EQ(gemms[0]["api"], "cublasStrsm_v2");
  EXPECT_EQ(gemms[0]["m"], 64);
  EXPECT_EQ(gemms[0]["n"], 8);
  EXPECT_EQ(gemms[0]["k"], 32);
  std::vector<std::string> waits;
  for (const json& s : kept("stream_sync")) waits.push_back(s.value("api", "(plain)"));
  EXPECT_EQ(waits, (std::vector<std::string>{"cublasSdot_v2", "cublasSnrm2_v2", "cublasIsamax_v2",
                                             "(plain)", "cublasDdot_v2"}));
}

// CUDALibrarySamples/simpleCUBLAS_LU-style level 3 and extensions: each level-3 routine is the
// `gemm` record of the GEMM of its FLOPs (complex: 8 real FLOPs per product; a triangle n(n+1)k
// as n × ⌈(n+1)/2⌉ × k; TRMM/TRSM order/2 deep), GEAM/DGMM/TPTTR/TRTTP and the batched LU,
// inverse, getrs computed on the copied-in data (checked by the program) and recorded as kernels
// with the LAPACK FLOPs and their bytes by hand (10 matrices 4 × 4: getrf 10·2·64/3 FLOPs,
// 2·160 doubles + 10·5 ints of bytes).
TEST_F(EmulateLibrariesTest, CublasLevel3AndBatchedExtensionsAreRecordedAndLuComputed) {
  if (!built("cublas_level3")) GTEST_SKIP() << "cublas_level3 not built";
  const CliRun r = emulate("cublas_level3");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("cublas_level3: geam/dgmm/tpttr/trttp computed (yes); getrf 10 x 4x4 P*A = "
                       "L*U within 1e-12 (yes), getrs/getri/matinv within 1e-12 (yes); symm lda < "
                       "m -> 7"),
            std::string::npos)
      << r.out;
  EXPECT_TRUE(summary_["unsupported_calls"].empty()) << summary_["unsupported_calls"].dump();
  const auto misuse = kept("misuse");
  ASSERT_EQ(misuse.size(), 1u);
  EXPECT_EQ(misuse[0]["api"], "cublasSsymm_v2");

  struct Shape {
    const char* api;
    std::int64_t m, n, k, batch;
    const char* dtype;
    std::int64_t flops;
  };
  const Shape expected[] = {
      {"cublasCgemm_v2", 64, 32, 16, 1, "complex64", 8 * 64 * 32 * 16},
      {"cublasZgemmStridedBatched", 16, 16, 16, 4, "complex128", 8 * 16 * 16 * 16 * 4},
      {"cublasCgemm3m", 64, 32, 16, 1, "complex64", 8 * 64 * 32 * 16},
      {"cublasSsymm_v2", 64, 32, 64, 1, "float32", 2 * 64 * 32 * 64},
      {"cublasChemm_v2", 64, 32, 32, 1, "complex64", 8 * 64 * 32 * 32},
      {"cublasDsyrk_v2", 32, 17, 16, 1, "float64", 2 * 32 * 17 * 16},
      {"cublasZherk_v2", 32, 17, 16, 1, "complex128", 8 * 32 * 17 * 16},
      {"cublasSsyr2k_v2", 32, 17, 32, 1, "float32", 2 * 32 * 17 * 32},
      {"cublasCsyrkx", 32, 17, 16, 1, "complex64", 8 * 32 * 17 * 16},
      {"cublasDtrmm_v2", 32, 16, 16, 1, "float64", 2 * 32 * 16 * 16},
      {"cublasZtrsm_v2", 16, 32, 16, 1, "complex128", 8 * 16 * 32 * 16},
      {"cublasStrsmBatched", 32, 8, 16, 3, "float32", 2 * 32 * 8 * 16 * 3},
  };
  const auto gemms = kept("gemm");
  ASSERT_EQ(gemms.size(), std::size(expected));
  for (std::size_t i = 0; i < gemms.size(); ++i) {
    SCOPED_TRACE(gemms[i].dump());
    EXPECT_EQ(gemms[i]["api"], expected[i].api);
    EXPECT_EQ(gemms[i]["m"], expected[i].m);
    EXPECT_EQ(gemms[i]["n"], expected[i].n);
    EXPECT_EQ(gemms[i]["k"], expected[i].k);
    EXPECT_EQ(gemms[i]["batch"], expected[i].batch);
    EXPECT_EQ(gemms[i]["dtype_a"], expected[i].dtype);
    EXPECT_EQ(gemms[i]["flops"], expected[i].flops);
    EXPECT_EQ(gemms[i]["stream"], 1);
  }
  struct Work {
    const char* name;
    std::int64_t flops, bytes;
  };
  const std::int64_t lu_bytes = 2 * 160 * 8 + 10 * 5 * 4;
  const Work work[] = {
      {"cublas_geam_float32", 3 * 15, 3 * 15 * 4},
      {"cublas_dgmm_float32", 15, (2 * 15 + 3) * 4},
      {"cublas_getrf_batched_float64", 10 * 2 * 64 / 3, lu_bytes},
      {"cublas_getrs_batched_float64", 10 * 2 * 16, lu_bytes + 2 * 40 * 8},
      {"cublas_getri_batched_float64", 10 * 4 * 64 / 3, lu_bytes + 2 * 160 * 8},
      {"cublas_matinv_batched_float64", 10 * 2 * 64, lu_bytes + 2 * 160 * 8},
      {"cublas_geqrf_batched_float64", 2133 /* 10·(2·8·4² − 2·4³/3), truncated */,
       2 * 320 * 8 + 10 * 5 * 4},
  };
  std::vector<json> kernels;
  for (const json& k : kept("kernel")) {
    if (k.contains("flops")) kernels.push_back(k);
  }
  ASSERT_EQ(kernels.size(), 8u);  // the above and gels
  for (std::size_t i = 0; i < std::size(work); ++i) {
    SCOPED_TRACE(kernels[i].dump());
    EXPECT_EQ(kernels[i]["name"], work[i].name);
    EXPECT_EQ(kernels[i]["flops"], work[i].flops);
    EXPECT_EQ(kernels[i]["bytes"], work[i].bytes);
  }
  EXPECT_EQ(kernels[7]["name"], "cublas_gels_batched_float64");
}

// CUDALibrarySamples-style level 2 (every storage and matrix kind, the batched GEMVs): the
// program compares each result with its host computation on the dense matrix (18 checks); each
// call is one memory-bound kernel with 2 FLOPs per multiply-add of the nonzero structure (complex
// × 4) and the bytes of the stored matrix (twice for updates), x and y (twice when beta ≠ 0).
TEST_F(EmulateLibrariesTest, CublasLevel2IsComputedForEveryStorageAndRecorded) {
  if (!built("cublas_level2")) GTEST_SKIP() << "cublas_level2 not built";
  const CliRun r = emulate("cublas_level2");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("cublas_level2: 18 results match the host within tolerance"),
            std::string::npos)
      << r.out;
  EXPECT_TRUE(summary_["unsupported_calls"].empty()) << summary_["unsupported_calls"].dump();
  EXPECT_TRUE(kept("misuse").empty());
  struct Work {
    const char* name;
    std::int64_t flops, bytes;
  };
  const Work expected[] = {
      // GBMV 6 × 5, kl 1, ku 2: 5 columns × 4 diagonals; band span 4·4 + 4, x 5, y 6 read+written.
      {"cublas_gbmv_float64", 2 * 5 * 4, (20 + 5 + 2 * 6) * 8},
      {"cublas_gemv_complex64", 8 * 16, (16 + 4 + 4) * 8},
      {"cublas_hemv_complex64", 8 * 16, (16 + 4 + 4) * 8},
      // HBMV n 5, k 1: 5·3 logical nonzeros; span 2·4 + 2.
      {"cublas_hbmv_complex128", 8 * 15, (10 + 5 + 5) * 16},
      {"cublas_spmv_float32", 2 * 25, (15 + 5 + 5) * 4},
      // TRMV/TRSV n 6: the triangle 21, x read and written.
      {"cublas_trmv_float64", 2 * 21, (36 + 12) * 8},
      {"cublas_trsv_float64", 2 * 21, (36 + 12) * 8},
      {"cublas_tbsv_complex128", 8 * 12, (12 + 12) * 16},
      {"cublas_tpmv_complex128", 8 * 21, (21 + 12) * 16},
      // Updates: the matrix read and written.
      {"cublas_ger_float32", 2 * 12, (2 * 12 + 4 + 3) * 4},
      {"cublas_gerc_complex64", 8 * 12, (2 * 12 + 4 + 3) * 8},
      {"cublas_syr_float64", 2 * 10, (2 * 16 + 4) * 8},
      {"cublas_her_complex128", 8 * 10, (2 * 16 + 4) * 16},
      {"cublas_her2_complex64", 16 * 10, (2 * 16 + 4 + 4) * 8},
      {"cublas_spr2_float64", 4 * 10, (2 * 10 + 4 + 4) * 8},
      {"cublas_hpr_complex64", 8 * 10, (2 * 10 + 4) * 8},
      // Batched GEMV: 3 × (3 × 4), x 4, y 3 read and written each; strided Z 2 × (4 × 3)ᵀ.
      {"cublas_gemv_batched_float32", 3 * 2 * 12, 3 * (12 + 4 + 6) * 4},
      {"cublas_gemv_batched_complex128", 2 * 8 * 12, 2 * (12 + 3 + 8) * 16},
      {"cublas_gemv_batched_float16", 3 * 2 * 12, 3 * ((12 + 4) * 2 + 6 * 2)},
  };
  std::vector<json> kernels;
  for (const json& k : kept("kernel")) {
    if (k.contains("flops")) kernels.push_back(k);
  }
  ASSERT_EQ(kernels.size(), std::size(expected));
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    SCOPED_TRACE(kernels[i].dump());
    EXPECT_EQ(kernels[i]["name"], expected[i].name);
    EXPECT_EQ(kernels[i]["flops"], expected[i].flops);
    EXPECT_EQ(kernels[i]["bytes"], expected[i].bytes);
  }
}

// CUDALibrarySamples-style complex level 1 and rotations: values checked by the program against
// their definitions (reference BLAS rotg/rotmg); one kernel per vector call with FLOPs by hand
// (n = 5 complex doubles: dot 8n, nrm2 4n, asum and amax 2n, axpy 8n, Zdscal 2n, Zrot with a
// complex sine 20n), a stream sync after each scalar result in host pointer mode, and no kernel
// for rotg/rotmg in host pointer mode (computed on the host, as cuBLAS does); the Ex forms under
// their own names.
TEST_F(EmulateLibrariesTest, CublasComplexLevel1AndRotationsAreComputedAndRecorded) {
  if (!built("cublas_level1_complex")) GTEST_SKIP() << "cublas_level1_complex not built";
  const CliRun r = emulate("cublas_level1_complex");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("match their definitions (yes)"), std::string::npos) << r.out;
  EXPECT_TRUE(summary_["unsupported_calls"].empty()) << summary_["unsupported_calls"].dump();
  struct Work {
    const char* name;
    std::int64_t flops, bytes;
  };
  const std::int64_t n = 5, z = 16;
  const Work expected[] = {
      {"cublas_dotu_complex128", 8 * n, 2 * n * z},
      {"cublas_dotc_complex128", 8 * n, 2 * n * z},
      {"cublas_nrm2_complex128", 4 * n, n * z},
      {"cublas_asum_complex128", 2 * n, n * z},
      {"cublas_iamax_complex128", 2 * n, n * z},
      {"cublas_iamin_complex128", 2 * n, n * z},
      {"cublas_axpy_complex128", 8 * n, 3 * n * z},
      {"cublas_scal_complex128", 2 * n, 2 * n * z},
      {"cublas_rot_complex128", 20 * n, 4 * n * z},
      {"cublas_iamax_complex64", 2 * 3, 3 * 8},
      {"cublas_rot_float64", 6 * 3, 4 * 3 * 8},
      {"cublas_rotm_float64", 6 * 3, 4 * 3 * 8},
      // The Ex forms: AxpyEx on doubles, DotcEx on complex doubles, Nrm2Ex on 64 halves.
      {"cublas_axpy_float64", 2 * 3, 3 * 3 * 8},
      {"cublas_dotc_complex128", 8 * n, 2 * n * z},
      {"cublas_nrm2_float16", 2 * 64, 64 * 2},
  };
  std::vector<json> kernels;
  for (const json& k : kept("kernel")) {
    if (k.contains("flops")) kernels.push_back(k);
  }
  ASSERT_EQ(kernels.size(), std::size(expected));
  for (std::size_t i = 0; i < kernels.size(); ++i) {
    SCOPED_TRACE(kernels[i].dump());
    EXPECT_EQ(kernels[i]["name"], expected[i].name);
    EXPECT_EQ(kernels[i]["flops"], expected[i].flops);
    EXPECT_EQ(kernels[i]["bytes"], expected[i].bytes);
  }
  std::vector<std::string> waits;
  for (const json& s : kept("stream_sync")) waits.push_back(s.value("api", "(plain)"));
  EXPECT_EQ(waits,
            (std::vector<std::string>{"cublasZdotu_v2", "cublasZdotc_v2", "cublasDznrm2_v2",
                                      "cublasDzasum_v2", "cublasIzamax_v2", "cublasIzamin_v2",
                                      "cublasIcamax_v2", "cublasDotcEx", "cublasNrm2Ex"}));
  EXPECT_EQ(kernels[12]["api"], "cublasAxpyEx");
}

// simpleCUBLASXT-style cublasXt on 2 emulated GPUs: the GEMMs are computed on the host data (the
// program checks the SGEMM's relative error as the sample does, and the DGEMM and ZGEMM); each
// call is split by C's columns over the 2 devices, each half a `gemm` record on its device's
// legacy stream after the copies of its host operands (all of A, its columns of B and, for
// beta ≠ 0, of C) and before its columns of C come back.
TEST_F(EmulateLibrariesTest, CublasXtSplitsEachCallOverTheSelectedDevicesWithItsCopies) {
  if (!built("cublas_xt")) GTEST_SKIP() << "cublas_xt not built";
  const CliRun r = emulate("cublas_xt", {"--gpus", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("cublas_xt: 2 device(s); SGEMM 256x256 relative error"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("(below 1e-6: yes), DGEMM and ZGEMM exact (yes); device 99 -> 7"),
            std::string::npos)
      << r.out;
  EXPECT_TRUE(summary_["unsupported_calls"].empty()) << summary_["unsupported_calls"].dump();
  const auto gemms = kept("gemm");
  ASSERT_EQ(gemms.size(), 10u);  // 5 calls × 2 devices
  const std::int64_t halves[] = {128, 15, 4, 64, 8};
  for (std::size_t i = 0; i < gemms.size(); ++i) {
    SCOPED_TRACE(gemms[i].dump());
    EXPECT_EQ(gemms[i]["dev"], static_cast<int>(i % 2));
    EXPECT_EQ(gemms[i]["stream"], 0);
    if (i / 2 != 3) {  // SYRK: the triangle's 129 columns
      EXPECT_EQ(gemms[i]["n"], halves[i / 2]);
    }
  }
  EXPECT_EQ(gemms[0]["api"], "cublasXtSgemm");
  EXPECT_EQ(gemms[0]["flops"], 2 * 256 * 128 * 256);
  EXPECT_EQ(gemms[4]["dtype_a"], "complex128");
  EXPECT_EQ(gemms[4]["flops"], 8 * 16 * 4 * 16);
  // The SGEMM's copies on device 0: A (256², floats), its 128 columns of B and C in, C out.
  std::vector<std::pair<std::string, std::int64_t>> copies;
  for (const json& c : kept("memcpy")) {
    if (copies.size() < 4)
      copies.emplace_back(c["kind"].get<std::string>(), c["bytes"].get<std::int64_t>());
  }
  EXPECT_EQ(copies, (std::vector<std::pair<std::string, std::int64_t>>{{"HtoD", 256 * 256 * 4},
                                                                       {"HtoD", 256 * 128 * 4},
                                                                       {"HtoD", 256 * 128 * 4},
                                                                       {"DtoH", 256 * 128 * 4}}));
}

// simpleCUFFT_MGPU-style multi-GPU cuFFT on 2 emulated GPUs: descriptors split in equal shares
// (8192 of 16384 points each), host copies share by share (a round trip checked byte for byte by
// the program), and each execution as half its FLOPs and bytes per GPU, an all-to-all of peer
// copies (a 1/2 part of each share), and the other half; the forward transform leaves the
// shuffled subformat (3), and the device-to-device copy back to natural order is an all-to-all.
TEST_F(EmulateLibrariesTest, CufftMultiGpuPlansSplitDataAndExchangeItBetweenTheGpus) {
  if (!built("cufft_mgpu")) GTEST_SKIP() << "cufft_mgpu not built";
  const CliRun r = emulate("cufft_mgpu", {"--gpus", "2"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("cufft_mgpu: GPUs 0 1, sizes 8192 8192 elements, work 65536 65536 bytes, "
                       "forward leaves subformat 3, plain exec -> 1"),
            std::string::npos)
      << r.out;
  EXPECT_TRUE(summary_["unsupported_calls"].empty()) << summary_["unsupported_calls"].dump();
  const auto ffts = kept("fft");
  ASSERT_EQ(ffts.size(), 8u);  // 2 executions × 2 stages × 2 GPUs
  const std::int64_t n = 16384;
  for (std::size_t i = 0; i < ffts.size(); ++i) {
    SCOPED_TRACE(ffts[i].dump());
    EXPECT_EQ(ffts[i]["dev"], static_cast<int>(i % 2));
    EXPECT_EQ(ffts[i]["flops"], 5 * n * 14 / 4);     // 5·N·log2 N over 2 GPUs and 2 stages
    EXPECT_EQ(ffts[i]["bytes"], 2 * 2 * n * 8 / 4);  // 2 passes of in + out
  }
  std::int64_t peer = 0, peer_bytes = 0;
  for (const json& c : kept("memcpy")) {
    if (c["kind"] == "PtoP") ++peer, peer_bytes += c["bytes"].get<std::int64_t>();
  }
  EXPECT_EQ(peer, 6);  // 2 executions and 1 reorder, one copy each way
  EXPECT_EQ(peer_bytes, 6 * n / 2 / 2 * 8);
}

// CUDALibrarySamples-style dense cuSOLVER beyond LU/QR/gesvd: Jacobi SVD and eigensolvers count
// min(max sweeps, 10) sweeps (8 when set to 8, reported back by GetSweeps), the selective,
// generalized, batched Cholesky and auxiliary routines their LAPACK FLOPs; every info 0.
TEST_F(EmulateLibrariesTest, CusolverJacobiGeneralizedAndBatchedRoutinesAreRecorded) {
  if (!built("cusolver_jacobi")) GTEST_SKIP() << "cusolver_jacobi not built";
  const CliRun r = emulate("cusolver_jacobi");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("cusolver_jacobi: gesvdj workspace 768, sweeps 8, syevdx eigenvalues 5, "
                       "every info 0 (yes)"),
            std::string::npos)
      << r.out;
  EXPECT_TRUE(summary_["unsupported_calls"].empty()) << summary_["unsupported_calls"].dump();
  const auto gemms = kept("gemm");
  std::vector<std::string> routines;
  for (const json& g : gemms) routines.push_back(g["solver"]["routine"]);
  EXPECT_EQ(routines,
            (std::vector<std::string>{"gesvdj", "gesvdjBatched", "syevj", "syevjBatched", "sygvj",
                                      "syevdx", "sygvd", "potrfBatched", "potrsBatched", "orgqr",
                                      "potri", "sytrf", "gesvdaStridedBatched"}));
  ASSERT_EQ(gemms.size(), 13u);
  const std::int64_t m = 32, n = 16;
  EXPECT_EQ(gemms[0]["flops"], 8 * (3 * m * n * n + 3 * n * n * n));  // 8 sweeps, with vectors
  EXPECT_EQ(gemms[0]["solver"]["sweeps"], 8);
  EXPECT_EQ(gemms[1]["flops"], 4 * 8 * 3 * n * n * n);   // 4 matrices, no vectors
  EXPECT_EQ(gemms[3]["flops"], 4 * 10 * 6 * n * n * n);  // default: 10 sweeps
  EXPECT_EQ(gemms[8]["flops"], 4 * 2 * n * n);           // potrs, one rhs each
  EXPECT_EQ(gemms[12]["flops"], 4 * (2 * m * n * n + 9 * n * n * n + 2 * m * n * 4));
}

// The device model's time (µs) of a matmul of `flops` at `precision` moving `bytes`.
double matmul_us(double flops, double bytes, device::Precision precision) {
  const device::GpuSpec gpu = *device::find_gpu("h100");
  device::Work work;
  work.kind = device::WorkKind::kMatmul;
  work.precision = precision;
  work.flops = flops;
  work.memory_bytes = bytes;
  const double s = device::estimate_work(gpu, std::span(&work, 1), gpu.max_clock_mhz()).time_s;
  return std::max(s, 3e-6) * 1e6;
}

// cuSolverDn_LinearSolver-style program: each dense cuSOLVER call is a `gemm` record (the GEMM
// estimator times it by FLOPs and bytes) with a `solver` object; FLOPs are the LAPACK leading-order
// counts by hand, bytes every matrix argument once (A read and written); the _bufferSize answers
// are the documented LAPACK workspaces; cusolverDnDlauum_bufferSize is reported unsupported by
// name and a getrs with ldb < n is misuse.
TEST_F(EmulateLibrariesTest, CusolverDenseCallsAreRecordedWithShapesFlopsAndBytes) {
  if (!built("cusolver_lu")) GTEST_SKIP() << "cusolver_lu not built";
  const CliRun r = emulate("cusolver_lu");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  // Workspaces (elements): 64·n for getrf/potrf/geqrf, 64·8 for ormqr (side L: n = 8), dsyevd's
  // 1 + 6·64 + 2·64², dgesvd's max(3·64 + 128, 5·64); Xgetrf 64·8192 floats in bytes.
  EXPECT_NE(r.out.find("cusolver_lu: 64x64 LU solve, info 0, workspaces getrf 4096 potrf 4096 "
                       "geqrf 4096 ormqr 512 syevd 8577 gesvd 320 elements, Xgetrf 2097152 bytes; "
                       "Dlauum -> 9, ldb < n -> 3"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.err.find("cusolverDnDlauum_bufferSize is not supported by the GPU emulator; it "
                       "returns CUSOLVER_STATUS_NOT_SUPPORTED (9)"),
            std::string::npos)
      << r.err;
  EXPECT_EQ(summary_["warnings"].size(), 0u) << summary_["warnings"].dump();
  EXPECT_EQ(summary_["unsupported_calls"], json({{"cusolverDnDlauum_bufferSize", 1}}));
  const auto misuse = kept("misuse");
  ASSERT_EQ(misuse.size(), 1u);
  EXPECT_EQ(misuse[0]["api"], "cusolverDnDgetrs");

  struct Expected {
    const char* api;
    const char* routine;
    std::int64_t m, n, k, flops, bytes;
    const char* dtype;
  };
  const std::int64_t big = 8192;
  // clang-format off
  const Expected expected[] = {
      // LU 64 x 64: 2/3·64³ = 174,762.7; A read + written (2·64²·8) + 64 int pivots.
      {"cusolverDnDgetrf", "getrf", 64, 64, 64, 174763, 2 * 4096 * 8 + 64 * 4, "float64"},
      // Two triangular solves: 2·64²·1; A once, b read and written.
      {"cusolverDnDgetrs", "getrs", 64, 64, 1, 8192, (4096 + 2 * 64) * 8, "float64"},
      // Cholesky: 64³/3 = 87,381.3; one triangle read and written (64²·4).
      {"cusolverDnSpotrf", "potrf", 64, 64, 64, 87381, 4096 * 4, "float32"},
      {"cusolverDnSpotrs", "potrs", 64, 64, 4, 2 * 4096 * 4, (4096 + 2 * 64 * 4) * 4, "float32"},
      // QR 128 x 64: 2·128·64² − 2/3·64³ = 436,906.7; A read + written, tau.
      {"cusolverDnDgeqrf", "geqrf", 128, 64, 64, 436907, (2 * 128 * 64 + 64) * 8, "float64"},
      // Q^T·C, C 128 x 8 from 64 reflectors: 4·128·8·64 − 2·8·64²; reflectors, tau, C in and out.
      {"cusolverDnDormqr", "ormqr", 128, 8, 64, 196608, (128 * 64 + 64 + 2 * 128 * 8) * 8,
       "float64"},
      // Eigenvalues and vectors: 9·64³; A read + written, W.
      {"cusolverDnDsyevd", "syevd", 64, 64, 64, 9 * 262144, (2 * 4096 + 64) * 8, "float64"},
      // Singular values only, 128 x 64: 4·128·64² − 4/3·64³ = 1,747,626.7.
      {"cusolverDnDgesvd", "gesvd", 128, 64, 64, 1747627, (2 * 128 * 64 + 64) * 8, "float64"},
      // 64-bit API, 8192² floats: 2/3·8192³; 64-bit pivots.
      {"cusolverDnXgetrf", "getrf", big, big, big, 366503875925, 2 * big * big * 4 + big * 8,
       "float32"},
      {"cusolverDnXgetrs", "getrs", big, big, 1, 2 * big * big, (big * big + 2 * big) * 4,
       "float32"},
  };
  // clang-format on
  const auto gemms = kept("gemm");
  ASSERT_EQ(gemms.size(), std::size(expected));
  for (std::size_t i = 0; i < gemms.size(); ++i) {
    const json& g = gemms[i];
    const Expected& e = expected[i];
    SCOPED_TRACE(g.dump());
    EXPECT_EQ(g["api"], e.api);
    EXPECT_EQ(g["solver"]["routine"], e.routine);
    EXPECT_EQ(g["m"], e.m);
    EXPECT_EQ(g["n"], e.n);
    EXPECT_EQ(g["k"], e.k);
    EXPECT_EQ(g["flops"].get<std::int64_t>(), e.flops);
    EXPECT_EQ(g["bytes"].get<std::int64_t>(), e.bytes);
    EXPECT_EQ(g["dtype_a"], e.dtype);
    EXPECT_EQ(g["stream"], 1);  // the handle's stream
  }
  EXPECT_EQ(gemms[0]["solver"]["pivoting"], "partial");
  EXPECT_EQ(gemms[2]["solver"]["uplo"], "L");
  EXPECT_EQ(gemms[3]["solver"]["nrhs"], 4);
  EXPECT_EQ(gemms[5]["solver"]["side"], "L");
  EXPECT_EQ(gemms[5]["solver"]["trans"], "T");
  EXPECT_EQ(gemms[6]["solver"]["jobz"], "V");
  EXPECT_EQ(gemms[7]["solver"]["jobu"], "N");

  // The 8192² LU is compute-bound: predicted at the fp32 roofline of its FLOPs.
  const std::vector<double> lu = predicted_us("gemm_float32_m8192_n8192_k8192");
  ASSERT_EQ(lu.size(), 1u);
  const double lu_us =
      matmul_us(366503875925.0, 2.0 * big * big * 4 + big * 8, device::Precision::kFp32);
  EXPECT_NEAR(lu[0], lu_us, 0.01);
  std::printf("predicted (H100 model): sgetrf 8192 x 8192 %.1f us\n", lu[0]);
}

// cuDNN backend graphs: the fused attention (3 executions) and the fused convolution + bias +
// ReLU are `dnn_graph` records with their operations, FLOPs and bytes, and `gemm` records per
// matmul/convolution whose bytes are only the non-virtual tensors (Q+K, V+O; X+W+bias+Z), so
// the attention is predicted at the tensor-core roofline as flash attention runs; a graph with
// a resampling node is reported unsupported by name and a mismatched matmul is misuse.
TEST_F(EmulateLibrariesTest, CudnnGraphAttentionAndConvolutionAreRecordedWithShapesAndFlops) {
  if (!built("cudnn_graph_attention")) GTEST_SKIP() << "cudnn_graph_attention not built";
  const CliRun r = emulate("cudnn_graph_attention");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("workspaces 0 and 0 bytes, resampling graph -> "
                       "CUDNN_STATUS_NOT_SUPPORTED, mismatched matmul -> CUDNN_STATUS_BAD_PARAM"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(summary_["warnings"].size(), 0u) << summary_["warnings"].dump();
  EXPECT_EQ(summary_["unsupported_calls"],
            json({{"cudnnBackendFinalize(operation graph with "
                   "CUDNN_BACKEND_OPERATION_RESAMPLE_FWD_DESCRIPTOR)",
                   1}}));
  const auto misuse = kept("misuse");
  ASSERT_EQ(misuse.size(), 1u);
  EXPECT_EQ(misuse[0]["api"], "cudnnBackendFinalize");
  EXPECT_NE(misuse[0]["what"].get<std::string>().find("matmul shapes do not agree"),
            std::string::npos);

  // By hand. Attention, b·h = 16 heads of s = 1024, d = 64: each matmul 2·16·1024·1024·64 FLOPs,
  // 4 pointwise/reduction passes over the 16·1024·1024 scores; bf16 Q, K, V, O of 2 MiB each.
  const std::int64_t heads = 16, s = 1024, d = 64;
  const std::int64_t mm = 2 * heads * s * s * d;  // 2,147,483,648
  const std::int64_t qkvo = heads * s * d * 2;    // 2,097,152 bytes each
  // Convolution: 2·N·K·P·Q·C·R·S, and 2 epilogue passes over the 8·128·56·56 outputs.
  const std::int64_t conv = 2LL * 8 * 128 * 56 * 56 * 64 * 9;  // 3,699,376,128
  const std::int64_t outputs = 8LL * 128 * 56 * 56;
  const std::int64_t conv_bytes = 8LL * 64 * 56 * 56 * 2 + 128 * 64 * 9 * 2 + 128 * 2 + outputs * 2;
  const auto graphs = kept("dnn_graph");
  ASSERT_EQ(graphs.size(), 4u);
  for (int i = 0; i < 3; ++i) {
    SCOPED_TRACE(graphs[i].dump());
    EXPECT_EQ(graphs[i]["api"], "cudnnBackendExecute");
    EXPECT_EQ(graphs[i]["flops"].get<std::int64_t>(), 2 * mm + 4 * heads * s * s);
    EXPECT_EQ(graphs[i]["bytes"].get<std::int64_t>(), 4 * qkvo);
    ASSERT_EQ(graphs[i]["ops"].size(), 6u);
    std::vector<std::string> ops;
    for (const json& op : graphs[i]["ops"]) ops.push_back(op["op"]);
    EXPECT_EQ(ops, (std::vector<std::string>{"matmul", "pointwise", "pointwise", "reduction",
                                             "pointwise", "matmul"}));
    EXPECT_EQ(graphs[i]["ops"][0]["a"], json::array({2, 8, 1024, 64}));
    EXPECT_EQ(graphs[i]["ops"][0]["b"], json::array({2, 8, 64, 1024}));
    EXPECT_EQ(graphs[i]["ops"][0]["virtual"], json::array({false, false, true}));
    EXPECT_EQ(graphs[i]["stream"], 1);
  }
  EXPECT_EQ(graphs[3]["flops"].get<std::int64_t>(), conv + 2 * outputs);
  EXPECT_EQ(graphs[3]["bytes"].get<std::int64_t>(), conv_bytes);
  EXPECT_NE(graphs[3]["dnn_graph"], graphs[0]["dnn_graph"]);

  struct Gemm {
    std::int64_t m, n, k, batch, flops, bytes;
    const char* dtype;
  };
  const Gemm qk = {s, s, d, heads, mm, 2 * qkvo, "bfloat16"};
  const Gemm pv = {s, d, s, heads, mm, 2 * qkvo, "bfloat16"};
  const Gemm cv = {8 * 56 * 56, 128, 64 * 9, 1, conv, conv_bytes, "float16"};
  const Gemm expected[] = {qk, pv, qk, pv, qk, pv, cv};
  const auto gemms = kept("gemm");
  ASSERT_EQ(gemms.size(), std::size(expected));
  for (std::size_t i = 0; i < gemms.size(); ++i) {
    const json& g = gemms[i];
    SCOPED_TRACE(g.dump());
    EXPECT_EQ(g["api"], "cudnnBackendExecute");
    EXPECT_EQ(g["m"], expected[i].m);
    EXPECT_EQ(g["n"], expected[i].n);
    EXPECT_EQ(g["k"], expected[i].k);
    EXPECT_EQ(g["batch"], expected[i].batch);
    EXPECT_EQ(g["flops"].get<std::int64_t>(), expected[i].flops);
    EXPECT_EQ(g["bytes"].get<std::int64_t>(), expected[i].bytes);
    EXPECT_EQ(g["dtype_a"], expected[i].dtype);
    EXPECT_EQ(g["dnn_op"], i == 6 ? 0 : (i % 2 == 0 ? 0 : 5));
    EXPECT_EQ(g["stream"], 1);
  }
  EXPECT_EQ(gemms[6]["conv"]["direction"], "forward");
  EXPECT_EQ(gemms[6]["conv"]["output"], json::array({8, 128, 56, 56}));

  // Predicted: each matmul at the roofline of its FLOPs and its own bytes (no S materialized).
  const double qk_us = matmul_us(mm, 2 * qkvo, device::Precision::kBf16);
  const double unfused_us =
      matmul_us(mm, 2 * qkvo + heads * s * s * 4, device::Precision::kBf16);  // S written out
  for (const char* name :
       {"gemm_bfloat16_m1024_n1024_k64_b16", "gemm_bfloat16_m1024_n64_k1024_b16"}) {
    const std::vector<double> got = predicted_us(name);
    ASSERT_EQ(got.size(), 3u) << name;
    for (double t : got) EXPECT_NEAR(t, qk_us, 0.01) << name;
  }
  const std::vector<double> conv_us = predicted_us("gemm_float16_m25088_n128_k576");
  ASSERT_EQ(conv_us.size(), 1u);
  EXPECT_NEAR(conv_us[0], matmul_us(conv, conv_bytes, device::Precision::kFp16), 0.01);
  std::printf(
      "predicted (H100 model): fused attention matmul %.2f us (with S written to memory "
      "it would be %.2f us), fused conv+bias+ReLU %.2f us\n",
      qk_us, unfused_us, conv_us[0]);
}

// Causal attention as cudnn-frontend builds it (GEN_INDEX of S's rows and columns, CMP_GE,
// BINARY_SELECT of −inf): flash attention skips the masked tiles, so the two attention matmuls
// do only the kept fraction of the work. By hand for s = 4096: the mask keeps
// Σ_i min(i + 1, 4096) = 4096·4097/2 of the 4096² scores, a fraction 4097/8192, so each matmul
// carries 2·16·4096²·64 · 4097/8192 = 17,184,063,488 FLOPs instead of 34,359,738,368. The same
// graph without the mask (executed first) keeps the full count; the predicted matmul time halves
// with the FLOPs (compute-bound at these shapes: 57.9 µs → 28.9 µs on the H100 model).
TEST_F(EmulateLibrariesTest, CudnnGraphCausalMaskHalvesTheAttentionMatmuls) {
  if (!built("cudnn_graph_causal")) GTEST_SKIP() << "cudnn_graph_causal not built";
  const CliRun r = emulate("cudnn_graph_causal");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("cudnn_graph_causal: causal attention, 10 operations"), std::string::npos)
      << r.out;
  EXPECT_EQ(summary_["warnings"].size(), 0u) << summary_["warnings"].dump();
  EXPECT_TRUE(summary_["unsupported_calls"].empty()) << summary_["unsupported_calls"].dump();
  EXPECT_TRUE(kept("misuse").empty());

  const std::int64_t heads = 16, s = 4096, d = 64;
  const std::int64_t full = 2 * heads * s * s * d;  // 34,359,738,368
  const std::int64_t causal = full / (2 * s) * (s + 1);
  ASSERT_EQ(causal, 17'184'063'488);
  const auto gemms = kept("gemm");
  ASSERT_EQ(gemms.size(), 4u);
  for (std::size_t i = 0; i < gemms.size(); ++i) {
    SCOPED_TRACE(gemms[i].dump());
    EXPECT_EQ(gemms[i]["flops"].get<std::int64_t>(), i < 2 ? full : causal);
    EXPECT_EQ(gemms[i]["batch"], heads);
  }
  const auto graphs = kept("dnn_graph");
  ASSERT_EQ(graphs.size(), 2u);
  ASSERT_EQ(graphs[1]["ops"].size(), 10u);
  EXPECT_EQ(graphs[1]["ops"][0]["causal"], true);
  EXPECT_EQ(graphs[1]["ops"][9]["causal"], true);
  EXPECT_FALSE(graphs[0]["ops"][0].contains("causal"));
  // Total: the matmuls plus one FLOP per output element of each pointwise/reduction pass.
  const std::int64_t scores = heads * s * s;
  EXPECT_EQ(graphs[0]["flops"].get<std::int64_t>(), 2 * full + 4 * scores);
  EXPECT_EQ(graphs[1]["flops"].get<std::int64_t>(), 2 * causal + 8 * scores);

  const std::vector<double> qk = predicted_us("gemm_bfloat16_m4096_n4096_k64_b16");
  ASSERT_EQ(qk.size(), 2u);
  EXPECT_GT(qk[1], 0.45 * qk[0]);
  EXPECT_LT(qk[1], 0.55 * qk[0]);
  std::printf("predicted (H100 model): attention Q*K^T matmul %.2f us full, %.2f us causal\n",
              qk[0], qk[1]);
}

// The training-side backend nodes: LayerNorm forward/backward and RMSNorm forward are one
// kernel each carrying their modelled FLOPs (5 per element forward, 8 backward) and the bytes of
// their tensors (timed by the roofline: memory-bound); convolution backward data/filter are GEMM
// records oriented as the legacy API's; the SDPA forward/backward nodes are GEMM records with
// the flash-attention FLOPs (2·b·h·s²·(d + d_v) and 2·b·h·s²·(3d + 2d_v)) and only Q/K/V/O (and
// their gradients, the statistics) as bytes. Nothing is unsupported or misused.
TEST_F(EmulateLibrariesTest, CudnnGraphNormsConvolutionBackwardAndSdpaNodesAreRecorded) {
  if (!built("cudnn_graph_training")) GTEST_SKIP() << "cudnn_graph_training not built";
  const CliRun r = emulate("cudnn_graph_training");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_EQ(summary_["warnings"].size(), 0u) << summary_["warnings"].dump();
  EXPECT_TRUE(summary_["unsupported_calls"].empty()) << summary_["unsupported_calls"].dump();
  EXPECT_TRUE(kept("misuse").empty());

  const auto graphs = kept("dnn_graph");
  ASSERT_EQ(graphs.size(), 7u);
  const std::vector<std::string> ops = {"norm_forward",
                                        "norm_forward",
                                        "norm_backward",
                                        "convolution_backward_data",
                                        "convolution_backward_filter",
                                        "sdpa_forward",
                                        "sdpa_backward"};
  for (std::size_t i = 0; i < graphs.size(); ++i) {
    ASSERT_EQ(graphs[i]["ops"].size(), 1u);
    EXPECT_EQ(graphs[i]["ops"][0]["op"], ops[i]) << i;
  }
  EXPECT_EQ(graphs[0]["ops"][0]["mode"], "layer_norm");
  EXPECT_EQ(graphs[1]["ops"][0]["mode"], "rms_norm");

  // Normalizations, 4096 x 1024 bf16 (8 MiB per activation), fp32 scale/bias (4 KiB) and
  // statistics (16 KiB).
  const std::int64_t elements = 4096LL * 1024, act = elements * 2, vec = 1024 * 4, stat = 4096 * 4;
  const std::int64_t ln_fwd = act + 2 * vec + 2 * stat + act;  // X, scale, bias, mean, 1/σ, Y
  const std::int64_t rms_fwd = act + vec + act;                // X, scale, Y
  const std::int64_t ln_bwd = 2 * act + vec + 2 * stat + 2 * vec + act;  // X, dY, scale, stats,
                                                                         // dscale, dbias, dX
  EXPECT_EQ(graphs[0]["flops"].get<std::int64_t>(), 5 * elements);
  EXPECT_EQ(graphs[0]["bytes"].get<std::int64_t>(), ln_fwd);
  EXPECT_EQ(graphs[1]["bytes"].get<std::int64_t>(), rms_fwd);
  EXPECT_EQ(graphs[2]["flops"].get<std::int64_t>(), 8 * elements);
  EXPECT_EQ(graphs[2]["bytes"].get<std::int64_t>(), ln_bwd);
  std::vector<json> norm_kernels;
  for (const json& k : kept("kernel")) {
    if (k["name"] == "cudnn_graph_norm_bfloat16") norm_kernels.push_back(k);
  }
  ASSERT_EQ(norm_kernels.size(), 3u);
  const std::int64_t norm_flops[] = {5 * elements, 5 * elements, 8 * elements};
  const std::int64_t norm_bytes[] = {ln_fwd, rms_fwd, ln_bwd};
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(norm_kernels[i]["flops"].get<std::int64_t>(), norm_flops[i]) << i;
    EXPECT_EQ(norm_kernels[i]["bytes"].get<std::int64_t>(), norm_bytes[i]) << i;
  }
  // Memory-bound at the roofline: the bytes over HBM.
  const device::GpuSpec gpu = *device::find_gpu("h100");
  const std::vector<double> norm_us = predicted_us("cudnn_graph_norm_bfloat16");
  ASSERT_EQ(norm_us.size(), 3u);
  for (int i = 0; i < 3; ++i) {
    const double bytes_us = static_cast<double>(norm_bytes[i]) /
                            (gpu.memory_bandwidth_gb_s * 1e9 * gpu.dvfs.memory_efficiency) * 1e6;
    EXPECT_NEAR(norm_us[i], std::max(bytes_us, 3.0), 0.01) << i;
  }

  // Convolutions (8 x 64 x 56 x 56 fp16, 128 3x3): 2·N·K·P·Q·C·R·S either way.
  const std::int64_t conv = 2LL * 8 * 128 * 56 * 56 * 64 * 9;
  const std::int64_t x_bytes = 8LL * 64 * 56 * 56 * 2, w_bytes = 128 * 64 * 9 * 2,
                     dy_bytes = 8LL * 128 * 56 * 56 * 2;
  // Attention, b·h = 16 heads of 1024 tokens, d = 64: forward 2·16·1024²·128, backward
  // 2·16·1024²·320; bf16 tensors of 2 MiB, statistics 64 KiB.
  const std::int64_t heads = 16, s = 1024, qkvo = heads * s * 64 * 2, stats = heads * s * 4;
  struct Gemm {
    std::int64_t m, n, k, batch, flops, bytes;
    const char* dtype;
  };
  const Gemm expected[] = {
      {8 * 56 * 56, 64 * 9, 128, 1, conv, w_bytes + dy_bytes + x_bytes, "float16"},
      {128, 64 * 9, 8 * 56 * 56, 1, conv, x_bytes + dy_bytes + w_bytes, "float16"},
      {s, s, 64, heads, 2 * heads * s * s * 128, 4 * qkvo + stats, "bfloat16"},
      {s, s, 64, heads, 2 * heads * s * s * 320, 8 * qkvo + stats, "bfloat16"},
  };
  const auto gemms = kept("gemm");
  ASSERT_EQ(gemms.size(), std::size(expected));
  for (std::size_t i = 0; i < gemms.size(); ++i) {
    const json& g = gemms[i];
    SCOPED_TRACE(g.dump());
    EXPECT_EQ(g["m"], expected[i].m);
    EXPECT_EQ(g["n"], expected[i].n);
    EXPECT_EQ(g["k"], expected[i].k);
    EXPECT_EQ(g["batch"], expected[i].batch);
    EXPECT_EQ(g["flops"].get<std::int64_t>(), expected[i].flops);
    EXPECT_EQ(g["bytes"].get<std::int64_t>(), expected[i].bytes);
    EXPECT_EQ(g["dtype_a"], expected[i].dtype);
  }
  EXPECT_EQ(gemms[0]["conv"]["direction"], "backward_data");
  EXPECT_EQ(gemms[1]["conv"]["direction"], "backward_filter");
  // The SDPA forward is compute-bound at the bf16 tensor-core roofline.
  const std::vector<double> sdpa = predicted_us("gemm_bfloat16_m1024_n1024_k64_b16");
  ASSERT_EQ(sdpa.size(), 2u);
  EXPECT_NEAR(sdpa[0],
              matmul_us(2.0 * heads * s * s * 128, 4 * qkvo + stats, device::Precision::kBf16),
              0.01);
  EXPECT_NEAR(sdpa[1],
              matmul_us(2.0 * heads * s * s * 320, 8 * qkvo + stats, device::Precision::kBf16),
              0.01);
  std::printf(
      "predicted (H100 model): LayerNorm fwd %.2f us, bwd %.2f us; SDPA fwd %.2f us, "
      "bwd %.2f us\n",
      norm_us[0], norm_us[2], sdpa[0], sdpa[1]);
}

// The api of each `sparse` record, in order.
std::vector<std::string> apis(const std::vector<json>& records) {
  std::vector<std::string> out;
  for (const json& r : records) out.push_back(r["api"]);
  return out;
}

// CUDALibrarySamples-style cuSPARSE helpers: index conversions and sorting computed (checked by
// the program), tridiagonal solves with and without pivoting computed (residual below 1e-12), a
// strided batch of 4 SpMMs as one record of 4× the FLOPs and bytes, SpMV preprocessing reading
// the index arrays, SpGEMMreuse's structure (checked by the program) and two numeric passes; each
// a `sparse` record with its bytes by hand.
TEST_F(EmulateLibrariesTest, CusparseIndexConversionsTridiagonalSolvesAndBatchesAreEmulated) {
  if (!built("cusparse_more")) GTEST_SKIP() << "cusparse_more not built";
  const CliRun r = emulate("cusparse_more");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("cusparse_more: coosort/coo2csr/csr2coo checked (yes), tridiagonal "
                       "residual"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("(below 1e-12: yes), batched SpMM of 4"), std::string::npos) << r.out;
  EXPECT_TRUE(summary_["unsupported_calls"].empty()) << summary_["unsupported_calls"].dump();
  const auto records = kept("sparse");
  ASSERT_EQ(apis(records),
            (std::vector<std::string>{
                "cusparseCreateIdentityPermutation", "cusparseXcoosortByRow", "cusparseXcoo2csr",
                "cusparseXcsr2coo", "cusparseDgtsv2", "cusparseDgtsv2_nopivot",
                "cusparseDgtsv2StridedBatch", "cusparseSpMM", "cusparseSpMV_preprocess",
                "cusparseSpMV", "cusparseSpGEMMreuse_workEstimation", "cusparseSpGEMMreuse_nnz",
                "cusparseSpGEMMreuse_copy", "cusparseSpGEMMreuse_compute",
                "cusparseSpGEMMreuse_compute"}));
  EXPECT_EQ(records[2]["bytes"], 4 * (6 + 3 + 1));          // COO rows in, CSR offsets out
  EXPECT_EQ(records[4]["flops"], 8 * 8 * 2);                // 8 rows, 2 right-hand sides
  EXPECT_EQ(records[4]["bytes"], (3 * 8 + 2 * 8 * 2) * 8);  // diagonals + rhs read and written
  EXPECT_EQ(records[4]["dtype"], "float64");
  EXPECT_EQ(records[6]["flops"], 8 * 8 * 3);      // 3 systems of their own
  EXPECT_EQ(records[7]["flops"], 4 * 2 * 6 * 2);  // 4 × 2·nnz·n
  const std::int64_t csr = 6 * (4 + 4) + 4 * 4, dense = 3 * 2 * 4;
  EXPECT_EQ(records[7]["bytes"], 4 * (csr + dense + 2 * dense));
  EXPECT_EQ(records[8]["bytes"], 6 * 4 + 4 * 4);  // the index arrays
  // SpGEMMreuse of the 3 × 3 pattern (12 products, nnz(C) 8): the structure from the index arrays,
  // then each numeric pass 2 FLOPs per product over A, B and C.
  EXPECT_EQ(records[11]["bytes"], 2 * (6 * 4 + 4 * 4) + 4 * 4);
  EXPECT_EQ(records[13]["flops"], 2 * 12);
  EXPECT_EQ(records[13]["bytes"], 2 * (6 * 8 + 4 * 4) + 8 * 8 + 4 * 4);
}

// conjugateGradientPrecond-style program: plain CG (SpMV + cuBLAS level 1), then ILU(0) by the
// legacy csrilu02 API and preconditioned CG with two SpSV solves per iteration. Every cuSPARSE
// operation is a `sparse` record with FLOPs and bytes by hand (2D Laplacian, 128 x 128 grid):
//   SpSV solve      2·nnz FLOPs, the whole stored matrix + x + y
//   SpSV analysis   the index arrays
//   csrilu02        nnz²/m FLOPs, nnz·(2·4 + 4) + (m+1)·4 bytes
// and the zero pivot is -1. Nothing is unsupported or misused.
TEST_F(EmulateLibrariesTest, PreconditionedCgRecordsIluAndTriangularSolves) {
  if (!built("cusparse_pcg")) GTEST_SKIP() << "cusparse_pcg not built";
  const CliRun r = emulate("cusparse_pcg");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("cusparse_pcg: 16384 rows, 81408 nonzeros, 5 CG and 5 PCG iterations, "
                       "zero pivot -1"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(summary_["warnings"].size(), 0u) << summary_["warnings"].dump();
  EXPECT_TRUE(summary_["unsupported_calls"].empty()) << summary_["unsupported_calls"].dump();
  EXPECT_TRUE(kept("misuse").empty());

  const std::int64_t n = 16384, nnz = 81408;
  std::vector<std::string> expected(5, "cusparseSpMV");
  for (const char* api : {"cusparseScsrilu02_analysis", "cusparseScsrilu02",
                          "cusparseSpSV_analysis", "cusparseSpSV_analysis"}) {
    expected.push_back(api);
  }
  for (int i = 0; i < 5; ++i) {
    for (const char* api : {"cusparseSpSV_solve", "cusparseSpSV_solve", "cusparseSpMV"}) {
      expected.push_back(api);
    }
  }
  const auto records = kept("sparse");
  ASSERT_EQ(apis(records), expected);
  const std::int64_t structure = nnz * 4 + (n + 1) * 4;
  const std::int64_t matrix = nnz * 4 + structure;
  for (const json& p : records) {
    SCOPED_TRACE(p.dump());
    EXPECT_EQ(p["format"], "csr");
    EXPECT_EQ(p["rows"], n);
    EXPECT_EQ(p["nnz"], nnz);
    EXPECT_EQ(p["dtype"], "float32");
    const std::string api = p["api"];
    if (api == "cusparseSpSV_solve") {
      EXPECT_EQ(p["flops"], 2 * nnz);
      EXPECT_EQ(p["bytes"], matrix + 2 * n * 4);
    } else if (api == "cusparseSpSV_analysis" || api == "cusparseScsrilu02_analysis") {
      EXPECT_EQ(p["flops"], 0);
      EXPECT_EQ(p["bytes"], structure);
    } else if (api == "cusparseScsrilu02") {
      EXPECT_EQ(p["flops"], nnz * nnz / n);  // 404,496: about 5 nonzeros per row
      EXPECT_EQ(p["bytes"], nnz * (2 * 4 + 4) + (n + 1) * 4);
    }
  }
  std::vector<std::string> sparse_kernels;
  for (const json& k : kept("kernel")) {
    const std::string name = k["name"];
    if (name.rfind("cusparse_", 0) == 0) sparse_kernels.push_back(name);
  }
  ASSERT_EQ(sparse_kernels.size(), expected.size());
  EXPECT_EQ(sparse_kernels[5], "cusparse_csrilu02_analysis_csr_float32");
  EXPECT_EQ(sparse_kernels[6], "cusparse_csrilu02_csr_float32");
  EXPECT_EQ(sparse_kernels[9], "cusparse_spsv_solve_csr_float32");
  const std::vector<double> solves = predicted_us("cusparse_spsv_solve_csr_float32");
  ASSERT_EQ(solves.size(), 10u);
  for (double d : solves) {
    EXPECT_NEAR(d, memory_bound_us((matrix + 2 * n * 4 + 4095) / 4096), 0.01);
  }
}

// cuSolverSp_LinearSolver-style program: the host functions are computed (the program checks the
// symmetry, the RCM permutation, B = A(Q,Q) entry by entry and the host Cholesky/LU/QR residuals
// below 1e-12 itself); the device solves are `sparse` records of the cusolversp library with the
// envelope model by hand. The 32 x 32 grid Laplacian in natural order: rows 32.. reach 32 columns
// left of the diagonal, rows 1..31 one, so Σ w² = 992·32² + 31 and Σ (w+1) = 992·33 + 31·2 + 1.
TEST_F(EmulateLibrariesTest, CusolverSpHostSolvesAreComputedAndDeviceSolvesRecorded) {
  if (!built("cusolver_sp_linear")) GTEST_SKIP() << "cusolver_sp_linear not built";
  const CliRun r = emulate("cusolver_sp_linear");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("cusolver_sp_linear: n 1024 nnz 4992 issym 1 bandwidth A 32 B "),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("host chol/lu/qr residual below 1e-12 (yes), smallest eigenvalue "
                       "1.811231e-02, device singularity -1 -1"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(summary_["warnings"].size(), 0u) << summary_["warnings"].dump();
  EXPECT_TRUE(summary_["unsupported_calls"].empty()) << summary_["unsupported_calls"].dump();
  const auto misuse = kept("misuse");  // the program's repeated-index "permutation"
  ASSERT_EQ(misuse.size(), 1u);
  EXPECT_EQ(misuse[0]["api"], "cusolverSpXcsrpermHost");
  EXPECT_NE(misuse[0]["what"].get<std::string>().find("not a permutation"), std::string::npos);

  const auto records = kept("sparse");
  ASSERT_EQ(apis(records), (std::vector<std::string>{"cusolverSpDcsrlsvchol", "cusolverSpDcsrlsvqr",
                                                     "cusolverSpDcsreigvsi", "cusparseScatter",
                                                     "cusparseSpMV", "cusolverSpDcsrqrsvBatched"}));
  const std::int64_t n = 1024, nnz = 4992;
  const std::int64_t squares = 992 * 32 * 32 + 31, cells = 992 * 33 + 31 * 2 + 1;
  const std::int64_t solve_bytes = nnz * (8 + 4) + (n + 1) * 4 + 2 * cells * 8 + 2 * n * 8;
  EXPECT_EQ(records[0]["flops"], squares);
  EXPECT_EQ(records[0]["bytes"], solve_bytes);
  EXPECT_EQ(records[1]["flops"], 4 * squares);
  EXPECT_EQ(records[1]["bytes"], solve_bytes);
  // csreigvsi: one LU (2·Σ w²) and 100 iterations of a triangular pair (4·Σ (w+1)) and an SpMV.
  EXPECT_EQ(records[2]["flops"], 2 * squares + 100 * (4 * cells + 2 * nnz));
  EXPECT_EQ(records[2]["bytes"], solve_bytes + 100 * (2 * cells * 8 + nnz * (8 + 4) + 2 * n * 8));
  EXPECT_EQ(records[3]["format"], "vector");
  EXPECT_EQ(records[3]["nnz"], n);
  EXPECT_EQ(records[3]["bytes"], n * (4 + 2 * 8));
  EXPECT_EQ(records[5]["n"], 4);  // the batch
  EXPECT_EQ(records[5]["flops"], 4 * 4 * squares);
  EXPECT_EQ(records[5]["bytes"], 4 * solve_bytes);
  for (const json& p : records) {
    EXPECT_EQ(p["dtype"], "float64") << p.dump();
    EXPECT_EQ(p["stream"], 1) << p.dump();
  }
  std::vector<std::string> names;
  for (const json& k : kept("kernel")) names.push_back(k["name"]);
  ASSERT_EQ(names.size(), 6u);
  EXPECT_EQ(names[0], "cusolversp_csrlsvchol_csr_float64");
  EXPECT_EQ(names[2], "cusolversp_csreigvsi_csr_float64");
  EXPECT_EQ(names[5], "cusolversp_csrqrsvBatched_csr_float64");
}

// cuSolverSp_LowlevelCholesky/LowlevelQR/cuSolverRf-style program: the host Cholesky, QR (plain,
// shifted, tall) and LU are computed (the program checks their residuals, the least-squares
// gradient and P·A·Qᵀ = L·U entry by entry itself); the device factorizations and solves and
// cusolverRf's reset, refactor and solve are `sparse` records with the models by hand. The 32 x 32
// grid Laplacian: Σ w² = 992·32² + 31, Σ (w+1) = 992·33 + 31·2 + 1 (as above). The LU matrix is
// tridiagonal (n = 200) with every row exchanged: L has 199 entries below the diagonal, U three per
// row but the last two (597), so M = L + U has 796 and the refactorization's row updates are
// 2·(198·3 + 2) FLOPs.
TEST_F(EmulateLibrariesTest, CusolverSpLowLevelAndRefactorizationRunLikeTheSamples) {
  if (!built("cusolver_sp_lowlevel")) GTEST_SKIP() << "cusolver_sp_lowlevel not built";
  const CliRun r = emulate("cusolver_sp_lowlevel");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("cusolver_sp_lowlevel: n 1024 nnz 4992, host chol/qr residual below 1e-12 "
                       "(yes), tall qr gradient below 1e-10 (yes), device zero pivot -1 -1; lu n "
                       "200 row exchanges 200 nnz L 199 U 597, P*A*Q' = L*U within 1e-12 (yes); "
                       "cusolverRf nnz M 796"),
            std::string::npos)
      << r.out;
  EXPECT_TRUE(summary_["unsupported_calls"].empty()) << summary_["unsupported_calls"].dump();
  const auto misuse = kept("misuse");  // the program's factorization before its analysis
  ASSERT_EQ(misuse.size(), 1u);
  EXPECT_EQ(misuse[0]["api"], "cusolverSpDcsrcholFactor");
  EXPECT_EQ(misuse[0]["what"], "the analysis has not run on the info");

  const auto records = kept("sparse");
  ASSERT_EQ(apis(records),
            (std::vector<std::string>{"cusolverSpDcsrcholFactor", "cusolverSpDcsrcholSolve",
                                      "cusolverSpDcsrcholDiag", "cusolverSpDcsrqrFactor",
                                      "cusolverSpDcsrqrSolve", "cusolverRfResetValues",
                                      "cusolverRfRefactor", "cusolverRfSolve"}));
  const std::int64_t n = 1024, nnz = 4992;
  const std::int64_t squares = 992 * 32 * 32 + 31, cells = 992 * 33 + 31 * 2 + 1;
  const std::int64_t matrix = nnz * (8 + 4) + (n + 1) * 4;
  EXPECT_EQ(records[0]["flops"], squares);
  EXPECT_EQ(records[0]["bytes"], matrix + cells * 8);
  EXPECT_EQ(records[1]["flops"], 4 * cells);
  EXPECT_EQ(records[1]["bytes"], 2 * cells * 8 + 2 * n * 8);
  EXPECT_EQ(records[2]["bytes"], 2 * n * 8);
  EXPECT_EQ(records[3]["flops"], 4 * squares);
  EXPECT_EQ(records[3]["bytes"], matrix + cells * 8);
  EXPECT_EQ(records[4]["flops"], 4 * cells);
  for (std::size_t k = 0; k < 5; ++k) EXPECT_EQ(records[k]["stream"], 1) << records[k].dump();
  // cusolverRf on the legacy default stream: M = 796 nonzeros, A = 598.
  const std::int64_t m = 200, bundle = 796 * 12 + (m + 1) * 4, a = 598 * 12 + (m + 1) * 4;
  EXPECT_EQ(records[5]["nnz"], 796);
  EXPECT_EQ(records[5]["bytes"], a + bundle + 2 * m * 4);
  EXPECT_EQ(records[6]["flops"], 2 * (198 * 3 + 2));
  EXPECT_EQ(records[6]["bytes"], 2 * bundle + a);
  EXPECT_EQ(records[7]["flops"], 2 * (199 + 597));
  EXPECT_EQ(records[7]["bytes"], bundle + 4 * m * 8 + 2 * m * 4);
  for (std::size_t k = 5; k < 8; ++k) EXPECT_EQ(records[k]["stream"], 0) << records[k].dump();
  std::vector<std::string> names;
  for (const json& k : kept("kernel")) names.push_back(k["name"]);
  EXPECT_EQ(names,
            (std::vector<std::string>{
                "cusolversp_csrchol_factor_csr_float64", "cusolversp_csrchol_solve_csr_float64",
                "cusolversp_csrchol_diag_csr_float64", "cusolversp_csrqr_factor_csr_float64",
                "cusolversp_csrqr_solve_csr_float64", "cusolverrf_reset_values_csr_float64",
                "cusolverrf_refactor_csr_float64", "cusolverrf_solve_csr_float64"}));
}

// The rest of the generic API: each format's descriptor, SpGEMM's nnz(C) and structure,
// Csr2cscEx2, DenseToSparse's nnz, Gather/Scatter/SpVV values (checked by the program against the
// host); every operation a `sparse` record with its format and bytes by hand for the COO and BSR
// SpMVs and the SpGEMM (1D Laplacian T, n = 64: nnz 190; T·T has 2·2² + 62·3² = 566 products and
// 5n − 6 = 314 nonzeros) and the Sliced-ELL SpMV (192 padded values, 3 slice offsets);
// cusparseCreateColorInfo is reported unsupported by name.
TEST_F(EmulateLibrariesTest, CusparseGenericApiComputesStructureAndRecordsEveryOperation) {
  if (!built("cusparse_generic")) GTEST_SKIP() << "cusparse_generic not built";
  const CliRun r = emulate("cusparse_generic");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("cusparse_generic: SpGEMM nnz(C) 314, DenseToSparse nnz 10, SpVV 4062.50, "
                       "cusparseCreateColorInfo -> CUSPARSE_STATUS_NOT_SUPPORTED, SpSV solve "
                       "before its analysis -> CUSPARSE_STATUS_INVALID_VALUE"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(summary_["unsupported_calls"], json({{"cusparseCreateColorInfo", 1}}));
  const auto misuse = kept("misuse");
  ASSERT_EQ(misuse.size(), 1u);
  EXPECT_EQ(misuse[0]["api"], "cusparseSpSV_solve");

  const auto records = kept("sparse");
  ASSERT_EQ(apis(records), (std::vector<std::string>{"cusparseSpMV",
                                                     "cusparseSpMV",
                                                     "cusparseSpGEMM_workEstimation",
                                                     "cusparseSpGEMM_compute",
                                                     "cusparseSpGEMM_copy",
                                                     "cusparseCsr2cscEx2",
                                                     "cusparseDenseToSparse_analysis",
                                                     "cusparseDenseToSparse_convert",
                                                     "cusparseSparseToDense",
                                                     "cusparseGather",
                                                     "cusparseSpVV",
                                                     "cusparseScatter",
                                                     "cusparseAxpby",
                                                     "cusparseSDDMM",
                                                     "cusparseSpSM_analysis",
                                                     "cusparseSpSM_solve",
                                                     "cusparseSpMV",
                                                     "cusparseSpGEMM_workEstimation",
                                                     "cusparseSpGEMM_estimateMemory",
                                                     "cusparseSpGEMM_compute",
                                                     "cusparseSpGEMM_copy"}));
  // ALG3's buffers: work estimation 8·(n + 1); estimateMemory its own 8·(n + 1), then compute's
  // for a quarter of C's 314 nonzeros at 16 bytes each, plus 8·(n + 1).
  EXPECT_NE(r.out.find("SpGEMM ALG3 buffers 520 520 1776"), std::string::npos) << r.out;
  const std::int64_t n = 64, nnz = 190;
  EXPECT_EQ(records[18]["bytes"], 2 * ((n + 1) * 4 + nnz * 4));  // A's and B's index arrays
  // Sliced ELL: 192 padded values and column indices, 3 slice offsets; x read, y read and written.
  EXPECT_EQ(records[16]["format"], "sliced_ell");
  EXPECT_EQ(records[16]["flops"], 2 * 192);
  EXPECT_EQ(records[16]["bytes"], 192 * (4 + 4) + 3 * 4 + n * 4 + 2 * n * 4);
  // COO: values + row and column indices; x read, y read and written.
  EXPECT_EQ(records[0]["format"], "coo");
  EXPECT_EQ(records[0]["bytes"], nnz * (4 + 2 * 4) + n * 4 + 2 * n * 4);
  // BSR of 2 x 2 blocks: 94 blocks of 4 values, a block column index each, 33 block offsets.
  EXPECT_EQ(records[1]["format"], "bsr");
  EXPECT_EQ(records[1]["nnz"], 94 * 4);
  EXPECT_EQ(records[1]["flops"], 2 * 94 * 4);
  EXPECT_EQ(records[1]["bytes"], 94 * 4 * 4 + 94 * 4 + 33 * 4 + n * 4 + 2 * n * 4);
  const std::int64_t csr_t = nnz * 8 + (n + 1) * 4, csr_c = 314 * 8 + (n + 1) * 4;
  EXPECT_EQ(records[3]["flops"], 2 * 566);
  EXPECT_EQ(records[3]["bytes"], 2 * csr_t + csr_c);
  EXPECT_EQ(records[4]["bytes"], 2 * csr_c);
  EXPECT_EQ(records[13]["n"], 8);  // SDDMM's inner dimension
  EXPECT_EQ(records[13]["flops"], 2 * nnz * 8);
  EXPECT_EQ(records[15]["flops"], 2 * nnz * 8);  // SpSM with 8 right-hand sides
}

// mnistCUDNN-style legacy cuDNN calls around the convolutions: the program checks every getter
// and size query (strided, NHWC and padded tensors, filters, convolutions, pooling, activations,
// derived batch-norm statistics, dropout states and reserve); each operation is one memory-bound
// kernel moving its tensors' bytes (16 bytes per thread, 256 threads per block), the fused
// convolution an implicit GEMM with 2·N·K·H·W·C·R·S FLOPs and then a bias + ReLU kernel.
TEST_F(EmulateLibrariesTest, CudnnLegacyTensorNormalizationAndDropoutOpsAreRecorded) {
  if (!built("cudnn_legacy_ops")) GTEST_SKIP() << "cudnn_legacy_ops not built";
  const CliRun r = emulate("cudnn_legacy_ops");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  // 28672 = (3·2048 + 15·64 + 7·8 + 7 + 1) floats: the padded tensor's span, not its elements.
  EXPECT_NE(
      r.out.find("cudnn_legacy_ops: tensor 16384 bytes, padded 28672 bytes, reduction "
                 "workspace 16384 bytes, dropout states 1048576 bytes and reserve 4096 bytes, "
                 "getters checked"),
      std::string::npos)
      << r.out;
  EXPECT_TRUE(summary_["unsupported_calls"].empty()) << summary_["unsupported_calls"].dump();
  EXPECT_TRUE(kept("misuse").empty());

  const std::int64_t x = 4 * 16 * 8 * 8 * 4;  // one [4, 16, 8, 8] float tensor
  const std::int64_t channel = 16 * 4;        // one [1, 16, 1, 1] float vector
  const auto blocks = [](std::int64_t bytes) { return ((bytes + 15) / 16 + 255) / 256; };
  const std::vector<std::pair<std::string, std::int64_t>> expected = {
      {"cudnn_set_tensor_float32", x},
      {"cudnn_scale_tensor_float32", 2 * x},  // read and written
      {"cudnn_transform_tensor_float32", 2 * x},
      {"cudnn_op_tensor_float32", 4 * x},  // A, B, C read, C written
      {"cudnn_reduce_tensor_float32", x + 4},
      {"cudnn_bias_relu_float32", 3 * x + channel},  // z, bias, y read and written
      {"cudnn_lrn_fwd_float32", 2 * x},
      {"cudnn_lrn_bwd_float32", 4 * x},
      {"cudnn_dropout_init_states", 1 << 20},
      {"cudnn_dropout_fwd_float32", 2 * x + x / 4},  // one mask byte per element
      {"cudnn_dropout_bwd_float32", 2 * x + x / 4},
      {"cudnn_conv_bwd_bias_float32", x + channel}};
  std::vector<json> kernels;
  std::vector<std::string> batchnorm;
  for (const json& k : kept("kernel")) {
    const std::string name = k["name"];
    if (name.rfind("cudnn_batchnorm_", 0) == 0) {
      batchnorm.push_back(name);
    } else {
      kernels.push_back(k);
    }
  }
  EXPECT_EQ(batchnorm, (std::vector<std::string>{"cudnn_batchnorm_fwd_training_float32",
                                                 "cudnn_batchnorm_fwd_inference_float32",
                                                 "cudnn_batchnorm_bwd_float32"}));
  ASSERT_EQ(kernels.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE(kernels[i].dump());
    EXPECT_EQ(kernels[i]["name"], expected[i].first);
    EXPECT_EQ(kernels[i]["grid"][0].get<std::int64_t>(), blocks(expected[i].second));
  }
  const auto gemms = kept("gemm");
  ASSERT_EQ(gemms.size(), 1u);
  EXPECT_EQ(gemms[0]["api"], "cudnnConvolutionBiasActivationForward");
  EXPECT_EQ(gemms[0]["flops"], 2LL * 4 * 16 * 8 * 8 * 16 * 3 * 3);
}

// nn.LSTM-style cuDNN RNN calls: the program checks the weight space against PyTorch's parameter
// count and walks every matrix and bias through cudnnGetRNNWeightParams. The emulator records,
// per layer and direction, one input GEMM over all 15 tokens and, per time step, a recurrent GEMM
// over the sequences still running (lengths 5, 5, 3, 2: 4, 4, 3, 2, 2 rows), a pointwise kernel
// and, with a projection, the projection GEMM; the reverse direction walks the steps backwards
// and the data gradient walks layers and steps in reverse.
TEST_F(EmulateLibrariesTest, CudnnRnnForwardAndGradientsAreRecordedStepByStep) {
  if (!built("cudnn_rnn")) GTEST_SKIP() << "cudnn_rnn not built";
  const CliRun r = emulate("cudnn_rnn");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  // 58368 = 4·64·32 + 4·64·64 + 8·64 + 2·4·64·64 + 8·64; 38912 = 4·2·(4·32·16·2 + 16·32 + 8·32).
  EXPECT_NE(r.out.find("cudnn_rnn: LSTM weight space 233472 bytes (58368 parameters walked), "
                       "work 15360 bytes, reserve 47040 bytes; projected bidirectional LSTM "
                       "weight space 38912 bytes"),
            std::string::npos)
      << r.out;
  EXPECT_TRUE(summary_["unsupported_calls"].empty()) << summary_["unsupported_calls"].dump();
  EXPECT_TRUE(kept("misuse").empty());

  struct Gemm {
    std::string api, part;
    std::int64_t layer, direction, step, m, n, k;
  };
  std::vector<Gemm> expected;
  const std::int64_t rows[5] = {4, 4, 3, 2, 2}, tokens = 15, gates = 4 * 64;
  for (std::int64_t layer = 0; layer < 2; ++layer) {
    expected.push_back({"cudnnRNNForward", "input", layer, 0, -1, tokens, gates, layer ? 64 : 32});
    for (std::int64_t t = 0; t < 5; ++t) {
      expected.push_back({"cudnnRNNForward", "recurrent", layer, 0, t, rows[t], gates, 64});
    }
  }
  for (std::int64_t layer = 1; layer >= 0; --layer) {
    for (std::int64_t t = 4; t >= 0; --t) {
      expected.push_back(
          {"cudnnRNNBackwardData_v8", "recurrent_grad", layer, 0, t, rows[t], 64, gates});
    }
    expected.push_back(
        {"cudnnRNNBackwardData_v8", "input_grad", layer, 0, -1, tokens, layer ? 64 : 32, gates});
  }
  for (std::int64_t layer = 0; layer < 2; ++layer) {
    expected.push_back({"cudnnRNNBackwardWeights_v8", "input_weight_grad", layer, 0, -1, gates,
                        layer ? 64 : 32, tokens});
    expected.push_back(
        {"cudnnRNNBackwardWeights_v8", "recurrent_weight_grad", layer, 0, -1, gates, 64, tokens});
  }
  // Bidirectional, hidden 32 projected to 16, 2 sequences of 3 steps, inference.
  for (std::int64_t d = 0; d < 2; ++d) {
    expected.push_back({"cudnnRNNForward", "input", 0, d, -1, 6, 128, 16});
    for (std::int64_t i = 0; i < 3; ++i) {
      const std::int64_t t = d == 0 ? i : 2 - i;
      expected.push_back({"cudnnRNNForward", "recurrent", 0, d, t, 2, 128, 16});
      expected.push_back({"cudnnRNNForward", "projection", 0, d, t, 2, 16, 32});
    }
  }
  const auto gemms = kept("gemm");
  ASSERT_EQ(gemms.size(), expected.size());
  for (std::size_t i = 0; i < gemms.size(); ++i) {
    const json& g = gemms[i];
    const Gemm& e = expected[i];
    SCOPED_TRACE(g.dump());
    EXPECT_EQ(g["api"], e.api);
    EXPECT_EQ(g["rnn"]["cell"], "lstm");
    EXPECT_EQ(g["rnn"]["part"], e.part);
    EXPECT_EQ(g["rnn"]["layer"], e.layer);
    EXPECT_EQ(g["rnn"]["direction"], e.direction);
    EXPECT_EQ(g["rnn"].value("step", std::int64_t{-1}), e.step);
    EXPECT_EQ(g["m"], e.m);
    EXPECT_EQ(g["n"], e.n);
    EXPECT_EQ(g["k"], e.k);
    EXPECT_EQ(g["flops"], 2 * e.m * e.n * e.k);
    EXPECT_EQ(g["compute"], "float32_fast_tf32");
  }
  // Pointwise kernels: 10 forward steps, the dropout between the layers, 10 backward steps, 2
  // bias gradients, then 6 steps of the bidirectional LSTM.
  std::map<std::string, int> kernels;
  for (const json& k : kept("kernel")) ++kernels[k["name"].get<std::string>()];
  EXPECT_EQ(kernels["cudnn_rnn_lstm_fwd_float32"], 16);
  EXPECT_EQ(kernels["cudnn_rnn_lstm_dropout_float32"], 1);
  EXPECT_EQ(kernels["cudnn_rnn_lstm_bwd_float32"], 10);
  EXPECT_EQ(kernels["cudnn_rnn_lstm_bias_grad_float32"], 2);
}

// multiHeadAttention-style legacy attention: the program walks the weight buffer's 8 pieces. Each
// call is recorded as GEMMs: Q/K/V input projections over every token (14 = 8 + 6), the scores
// and the weighted values per head over the (query, key) pairs inside the windows (100 with full
// windows: 8·8 + 6·6; 57 causal: 36 + 21) as one GEMM per head with the bytes really moved, or
// as a batched GEMM per head and sequence when every query sees as many keys (decoding step 3:
// 1 query × 4 keys in each of 2 sequences), and the output projection.
TEST_F(EmulateLibrariesTest, CudnnMultiHeadAttentionIsRecordedOverItsWindows) {
  if (!built("cudnn_attention")) GTEST_SKIP() << "cudnn_attention not built";
  const CliRun r = emulate("cudnn_attention");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("cudnn_attention: weights 66560 bytes in 8 pieces (16640 parameters "
                       "walked)"),
            std::string::npos)
      << r.out;
  EXPECT_TRUE(summary_["unsupported_calls"].empty()) << summary_["unsupported_calls"].dump();
  EXPECT_TRUE(kept("misuse").empty());
  struct Gemm {
    const char* part;
    std::int64_t m, n, k, batch;
  };
  const std::int64_t scores_bytes = 4 * (14 * 16 + 14 * 16 + 100) * 4;  // heads × (Q, K, pairs)
  const std::vector<std::pair<std::string, std::vector<Gemm>>> calls = {
      {"cudnnMultiHeadAttnForward",
       {{"q_projection", 14, 64, 64, 1},
        {"k_projection", 14, 64, 64, 1},
        {"v_projection", 14, 64, 64, 1},
        {"scores", 100, 1, 16, 4},
        {"weighted_values", 100, 16, 1, 4},
        {"o_projection", 14, 64, 64, 1}}},
      {"cudnnMultiHeadAttnBackwardData",
       {{"o_projection_grad", 14, 64, 64, 1},
        {"probabilities_grad", 100, 1, 16, 4},
        {"q_grad", 100, 16, 1, 4},
        {"k_grad", 100, 16, 1, 4},
        {"v_grad", 100, 16, 1, 4},
        {"q_input_grad", 14, 64, 64, 1},
        {"k_input_grad", 14, 64, 64, 1},
        {"v_input_grad", 14, 64, 64, 1}}},
      {"cudnnMultiHeadAttnBackwardWeights",
       {{"q_weight_grad", 64, 64, 14, 1},
        {"k_weight_grad", 64, 64, 14, 1},
        {"v_weight_grad", 64, 64, 14, 1},
        {"o_weight_grad", 64, 64, 14, 1}}},
      {"cudnnMultiHeadAttnForward",
       {{"q_projection", 14, 64, 64, 1},
        {"k_projection", 14, 64, 64, 1},
        {"v_projection", 14, 64, 64, 1},
        {"scores", 57, 1, 16, 4},
        {"weighted_values", 57, 16, 1, 4},
        {"o_projection", 14, 64, 64, 1}}},
      {"cudnnMultiHeadAttnForward",
       {{"q_projection", 2, 64, 64, 1},
        {"k_projection", 14, 64, 64, 1},
        {"v_projection", 14, 64, 64, 1},
        {"scores", 1, 4, 16, 8},
        {"weighted_values", 1, 16, 4, 8},
        {"o_projection", 2, 64, 64, 1}}}};
  const auto gemms = kept("gemm");
  std::size_t i = 0;
  for (const auto& [api, parts] : calls) {
    for (const Gemm& e : parts) {
      ASSERT_LT(i, gemms.size());
      const json& g = gemms[i++];
      SCOPED_TRACE(g.dump());
      EXPECT_EQ(g["api"], api);
      EXPECT_EQ(g["attention"]["part"], e.part);
      EXPECT_EQ(g["attention"]["heads"], 4);
      EXPECT_EQ(g["m"], e.m);
      EXPECT_EQ(g["n"], e.n);
      EXPECT_EQ(g["k"], e.k);
      EXPECT_EQ(g["batch"], e.batch);
      EXPECT_EQ(g["flops"], 2 * e.m * e.n * e.k * e.batch);
    }
  }
  EXPECT_EQ(i, gemms.size());
  EXPECT_EQ(gemms[3]["bytes"], scores_bytes);
  std::map<std::string, int> kernels;
  for (const json& k : kept("kernel")) ++kernels[k["name"].get<std::string>()];
  EXPECT_EQ(kernels["cudnn_attn_softmax_fwd_float32"], 3);
  EXPECT_EQ(kernels["cudnn_attn_softmax_bwd_float32"], 1);
  EXPECT_EQ(kernels["cudnn_attn_residual_add_float32"], 1);  // the training pass only
  EXPECT_EQ(kernels["cudnn_attn_bias_grad_float32"], 1);
}

// The remaining legacy cuDNN helpers: one deliberate misuse (a negative extent) reaches the
// callback and cudnnGetLastErrorString; the transforms' destination shapes and the size queries
// are checked by the program; each operation is one memory-bound kernel sized by its bytes.
TEST_F(EmulateLibrariesTest, CudnnTransformsNormalizationAndSpatialTransformerAreRecorded) {
  if (!built("cudnn_transforms")) GTEST_SKIP() << "cudnn_transforms not built";
  const CliRun r = emulate("cudnn_transforms");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("cudnn_transforms: padded 6400 bytes, folded 4096 bytes, im2col 36864 "
                       "bytes, norm reserve 1024 bytes, errors seen by the callback 1"),
            std::string::npos)
      << r.out;
  EXPECT_TRUE(summary_["unsupported_calls"].empty()) << summary_["unsupported_calls"].dump();
  const auto misuse = kept("misuse");
  ASSERT_EQ(misuse.size(), 1u);
  EXPECT_EQ(misuse[0]["api"], "cudnnSetTensor4dDescriptor");

  const std::int64_t x = 2 * 8 * 8 * 8 * 4, padded = 2 * 8 * 10 * 10 * 4;
  const std::int64_t filter = 16 * 8 * 9 * 4, col = 8 * 9 * 2 * 8 * 8 * 4;
  const auto blocks = [](std::int64_t bytes) { return ((bytes + 15) / 16 + 255) / 256; };
  const std::vector<std::pair<std::string, std::int64_t>> expected = {
      {"cudnn_transform_tensor_ex_float32", x + padded},
      {"cudnn_transform_tensor_ex_float32", 2 * x},
      {"cudnn_transform_filter_float32", 2 * filter},
      {"cudnn_reorder_filter", 2 * (filter + 16 * 4)},
      {"cudnn_im2col_float32", x + col},
      {"cudnn_norm_fwd_training_float32", -1},
      {"cudnn_norm_fwd_inference_float32", -1},
      {"cudnn_norm_bwd_float32", -1},
      {"cudnn_divisive_norm_fwd_float32", 5 * x},  // x, means, temp, temp2, y
      {"cudnn_divisive_norm_bwd_float32", 6 * x},
      {"cudnn_spatial_tf_grid_fwd_float32", 2 * 6 * 4 + 2 * 6 * 6 * 2 * 4},
      {"cudnn_spatial_tf_sampler_fwd_float32", -1},
      {"cudnn_spatial_tf_sampler_bwd_float32", -1},
      {"cudnn_spatial_tf_grid_bwd_float32", 2 * 6 * 4 + 2 * 6 * 6 * 2 * 4},
      // probs read twice, alpha and beta tables written and read, costs and gradients written
      {"cudnn_ctc_loss_float32", 2 * 400 + 2 * 1120 + 8 + 400},
      {"cudnn_ctc_loss_float32", 2 * 400 + 2 * 1440 + 8}};
  const auto kernels = kept("kernel");
  ASSERT_EQ(kernels.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    SCOPED_TRACE(kernels[i].dump());
    EXPECT_EQ(kernels[i]["name"], expected[i].first);
    if (expected[i].second > 0) {
      EXPECT_EQ(kernels[i]["grid"][0].get<std::int64_t>(), blocks(expected[i].second));
    }
  }
  EXPECT_EQ(kernels[10]["flops"], 12 * 2 * 6 * 6);  // 2 × 6 multiply-adds per grid point
}

// CuPy-style legacy cuSPARSE helpers, computed on the host and checked by the program (nonzero
// counts, CSR compression, A + 2B with its total through a device pointer, gemvi, interleaved
// tridiagonal and pentadiagonal batches, a complex gtsv2), a Givens rotation and an SpMMOp with
// placeholder operators; each a `sparse` record whose FLOPs and bytes are counted here by hand.
TEST_F(EmulateLibrariesTest, CusparseLegacyHelpersAreComputedAndRecorded) {
  if (!built("cusparse_legacy")) GTEST_SKIP() << "cusparse_legacy not built";
  const CliRun r = emulate("cusparse_legacy");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("cusparse_legacy: nnz 5, compressed to 3 (yes), A + 2B has 5 entries "
                       "(yes), gemvi (yes), interleaved residual below 1e-12 (yes), complex gtsv2 "
                       "residual below 1e-5 (yes), BSR (yes)"),
            std::string::npos)
      << r.out;
  EXPECT_TRUE(summary_["unsupported_calls"].empty()) << summary_["unsupported_calls"].dump();
  EXPECT_TRUE(kept("misuse").empty());
  const auto records = kept("sparse");
  ASSERT_EQ(apis(records), (std::vector<std::string>{"cusparseSnnz",
                                                     "cusparseSnnz_compress",
                                                     "cusparseScsr2csr_compress",
                                                     "cusparseXcsrgeam2Nnz",
                                                     "cusparseDcsrgeam2",
                                                     "cusparseSgemvi",
                                                     "cusparseDgtsvInterleavedBatch",
                                                     "cusparseDgpsvInterleavedBatch",
                                                     "cusparseCgtsv2",
                                                     "cusparseXcsr2bsrNnz",
                                                     "cusparseDcsr2bsr",
                                                     "cusparseDbsrmv",
                                                     "cusparseDbsrmm",
                                                     "cusparseDbsr2csr",
                                                     "cusparseDbsric02_analysis",
                                                     "cusparseDbsric02",
                                                     "cusparseDbsrsv2_analysis",
                                                     "cusparseDbsrsv2_solve",
                                                     "cusparseRot",
                                                     "cusparseSpMMOp",
                                                     "cusparseDbsrxmv"}));
  EXPECT_EQ(records[0]["bytes"], 3 * 4 * 4 + 3 * 4);           // the dense matrix, the counts
  EXPECT_EQ(records[2]["bytes"], (6 + 3) * (4 + 4) + 4 * 11);  // A and C, offsets and counts
  EXPECT_EQ(records[4]["flops"], 3 * 5);                       // 3 per entry of C
  EXPECT_EQ(records[4]["bytes"], (3 + 4 + 5) * (8 + 4) + 3 * 4 * 4);
  EXPECT_EQ(records[5]["flops"], 2 * 2 * 3);  // 2 sparse entries × 3 rows
  EXPECT_EQ(records[6]["flops"], 8 * 6 * 3);  // Thomas: 8 per row, 3 systems
  EXPECT_EQ(records[6]["bytes"], (3 + 2) * 6 * 3 * 8);
  EXPECT_EQ(records[7]["flops"], 14 * 6 * 3);
  EXPECT_EQ(records[8]["dtype"], "complex64");
  EXPECT_EQ(records[8]["flops"], 4 * 8 * 4);           // complex arithmetic: 4 real operations each
  EXPECT_EQ(records[11]["flops"], 2 * 4 * 2 * 2);      // bsrmv: 2 per entry of 4 blocks of 2 x 2
  EXPECT_EQ(records[12]["flops"], 2 * 4 * 2 * 2 * 2);  // bsrmm: the same for 2 columns
  EXPECT_EQ(records[13]["nnz"], 4);                    // blocks
  EXPECT_EQ(records[17]["flops"], 2 * 4 * 2 * 2);      // bsrsv2: 2 per stored block entry
  EXPECT_EQ(records[18]["flops"], 6 * 2);              // Givens rotation of x's 2 entries
  EXPECT_EQ(records[18]["bytes"], 2 * (4 + 2 * 4) + 2 * 2 * 4);
  EXPECT_EQ(records[19]["flops"], 2 * 3 * 2);  // SpMMOp counted as the SpMM: 2·nnz·n
  EXPECT_EQ(records[19]["n"], 2);
  EXPECT_EQ(records[20]["flops"], 2 * 2 * 2 * 2);  // bsrxmv: half the blocks (1 of 2 block rows)
}

// The rest of cuSOLVER's 64-bit API: each routine is a `gemm` record with its routine and the
// leading-order FLOPs of LAPACK working note 41, written out here by hand.
TEST_F(EmulateLibrariesTest, CusolverXApiSvdsAndEigensolversAreRecorded) {
  if (!built("cusolver_x_api")) GTEST_SKIP() << "cusolver_x_api not built";
  const CliRun r = emulate("cusolver_x_api");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("cusolver_x_api: 8 routines, syevdx found 5 eigenvalues, 0 failed infos"),
            std::string::npos)
      << r.out;
  EXPECT_TRUE(summary_["unsupported_calls"].empty()) << summary_["unsupported_calls"].dump();
  EXPECT_TRUE(kept("misuse").empty());
  const auto gemms = kept("gemm");
  ASSERT_EQ(apis(gemms),
            (std::vector<std::string>{"cusolverDnXgesvd", "cusolverDnXgesvdp", "cusolverDnXgesvdr",
                                      "cusolverDnXsyevdx", "cusolverDnXsyevBatched",
                                      "cusolverDnXgeev", "cusolverDnXtrtri", "cusolverDnXsytrs"}));
  const double m = 64, n = 32, l = 8 + 4;
  const auto flops = [&](std::size_t i) { return gemms[i]["flops"].get<double>(); };
  EXPECT_EQ(flops(0), 4 * m * m * n + 8 * m * n * n + 9 * n * n * n);  // gesvd with vectors
  EXPECT_EQ(flops(1), flops(0));                                       // polar SVD as gesvd
  EXPECT_EQ(flops(2), 2 * m * n * l * (2 * 2 + 3) + 2 * m * l * l + 4 * n * l * l + 9 * l * l * l +
                          2 * m * l * 8);         // randomized, rank 8, 2 iterations
  EXPECT_EQ(flops(3), 9 * n * n * n);             // syevdx with vectors
  EXPECT_EQ(flops(4), 3 * 9 * n * n * n);         // 3 matrices
  EXPECT_NEAR(flops(5), 26.33 * n * n * n, 1.0);  // geev with right vectors
  EXPECT_NEAR(flops(6), n * n * n / 3, 1.0);      // trtri
  EXPECT_EQ(flops(7), 2 * n * n * 4);             // sytrs, 4 right-hand sides
  EXPECT_EQ(gemms[2]["solver"]["rank"], 8);
  EXPECT_EQ(gemms[4]["solver"]["batch"], 3);
}

// simpleCUFFT_callback-style plan properties and callbacks: the property is read back and reset,
// a bad value and an LTO callback after the plan was made are refused (the two misuses), and each
// execution's `fft` record names the callbacks installed at that time.
TEST_F(EmulateLibrariesTest, CufftPlanPropertiesAndCallbacksAreKeptOnThePlan) {
  if (!built("cufft_callbacks")) GTEST_SKIP() << "cufft_callbacks not built";
  const CliRun r = emulate("cufft_callbacks");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("cufft_callbacks: patient JIT read back and reset, LTO load callback "
                       "installed, store callback installed, late LTO callback refused (yes)"),
            std::string::npos)
      << r.out;
  EXPECT_TRUE(summary_["unsupported_calls"].empty()) << summary_["unsupported_calls"].dump();
  const auto misuse = kept("misuse");
  ASSERT_EQ(misuse.size(), 2u);
  EXPECT_EQ(misuse[0]["api"], "cufftSetPlanPropertyInt64");
  EXPECT_EQ(misuse[1]["api"], "cufftXtSetJITCallback");
  const auto ffts = kept("fft");
  ASSERT_EQ(ffts.size(), 3u);
  EXPECT_EQ(ffts[0]["callbacks"], json::array({"load_complex", "store_complex"}));
  EXPECT_EQ(ffts[1]["callbacks"], json::array({"load_complex"}));
  EXPECT_FALSE(ffts[2].contains("callbacks"));
  EXPECT_EQ(ffts[0]["flops"], ffts[2]["flops"]);  // the callbacks' own work is not known
}

// cuRAND's quasirandom tables (checked by the program for the Sobol' structure and 1D
// stratification) and Poisson histograms: device memory for the structure and, for lambda 4.5,
// a histogram of floor(4.5 + 10·sqrt(4.5) + 16) = 41 entries of 12 bytes; none for lambda 3000
// (the normal approximation); both freed; Poisson numbers by method as a `curand` record.
TEST_F(EmulateLibrariesTest, CurandDirectionVectorsAndPoissonHistogramsAreProvided) {
  if (!built("curand_quasi")) GTEST_SKIP() << "curand_quasi not built";
  const CliRun r = emulate("curand_quasi");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("curand_quasi: direction vectors structured (yes), 10 of 10 dimensions "
                       "stratified, scramble constants (yes)"),
            std::string::npos)
      << r.out;
  EXPECT_TRUE(summary_["unsupported_calls"].empty()) << summary_["unsupported_calls"].dump();
  std::vector<std::int64_t> histogram_bytes;
  for (const json& m : kept("malloc")) {
    if (m["api"] == "curandCreatePoissonDistribution") histogram_bytes.push_back(m["bytes"]);
  }
  ASSERT_EQ(histogram_bytes.size(), 3u);  // structure + histogram, then a structure alone
  EXPECT_EQ(histogram_bytes[1], 41 * 12);
  EXPECT_EQ(histogram_bytes[0], histogram_bytes[2]);
  int freed = 0;
  for (const json& f : kept("free")) freed += f["api"] == "curandDestroyDistribution";
  EXPECT_EQ(freed, 3);
  const auto generated = kept("curand");
  ASSERT_EQ(generated.size(), 1u);
  EXPECT_EQ(generated[0]["api"], "curandGeneratePoissonMethod");
  EXPECT_EQ(generated[0]["count"], 4096);
}

// Mixed-precision iterative refinement computed on the host: a half-precision LU refined to
// double accuracy (the program checks the backward error below 1e-14), a same-precision solve
// without refinement, a singular matrix's info, a complex half-precision solve, a least-squares
// solve from a single-precision QR, and a bfloat16 Hilbert solve that cannot converge in 3
// refinements (niters -(3 + 1)). Each call records the factorization at its low precision and
// the refinement (4n²·nrhs FLOPs per solve) at the main one; the fallback adds a main-precision
// factorization.
TEST_F(EmulateLibrariesTest, CusolverIterativeRefinementIsComputedAndRecordedByPrecision) {
  if (!built("cusolver_irs")) GTEST_SKIP() << "cusolver_irs not built";
  const CliRun r = emulate("cusolver_irs");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("(error below 1e-14: yes), DDgesv 0, singular info 6,"), std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("Hilbert bf16 niters -4 without and -4 with fallback, 0 failures"),
            std::string::npos)
      << r.out;
  EXPECT_TRUE(summary_["unsupported_calls"].empty()) << summary_["unsupported_calls"].dump();
  EXPECT_TRUE(kept("misuse").empty());
  const auto gemms = kept("gemm");
  ASSERT_EQ(gemms.size(), 15u);
  const double n = 64;
  EXPECT_EQ(gemms[0]["dtype_a"], "float16");  // DHgesv: LU in half precision
  EXPECT_EQ(gemms[0]["solver"]["routine"], "getrf");
  EXPECT_NEAR(gemms[0]["flops"].get<double>(), 2.0 / 3.0 * n * n * n, 1.0);
  EXPECT_EQ(gemms[1]["dtype_a"], "float64");  // refined in double
  const double refinements = gemms[1]["solver"]["iterations"].get<double>();
  EXPECT_GT(refinements, 0);
  EXPECT_EQ(gemms[1]["flops"].get<double>(), (1 + refinements) * 4 * n * n * 2);
  EXPECT_EQ(gemms[2]["dtype_a"], "float64");  // DDgesv: no refinement
  EXPECT_EQ(gemms[3]["solver"]["iterations"], 0);
  EXPECT_EQ(gemms[6]["dtype_a"], "complex32");        // ZKgesv
  EXPECT_EQ(gemms[8]["solver"]["routine"], "geqrf");  // DSgels
  EXPECT_EQ(gemms[8]["dtype_a"], "float32");
  EXPECT_NEAR(gemms[8]["flops"].get<double>(), 2.0 * 80 * 40 * 40 - 2.0 / 3.0 * 40 * 40 * 40, 1.0);
  EXPECT_EQ(gemms[10]["dtype_a"], "bfloat16");  // the expert interface's factorization
  EXPECT_EQ(gemms[11]["solver"]["iterations"], 3);
  EXPECT_EQ(gemms[14]["solver"]["fallback"], "yes");  // only the second Hilbert solve falls back
  EXPECT_EQ(gemms[14]["dtype_a"], "float64");
}

// The two-sided reductions and their orthogonal factors, sytri and sygvdx: each a `gemm` record
// with LAPACK working note 41's leading-order FLOPs, written out here.
TEST_F(EmulateLibrariesTest, CusolverReductionsAreRecordedWithLapackFlops) {
  if (!built("cusolver_reduce")) GTEST_SKIP() << "cusolver_reduce not built";
  const CliRun r = emulate("cusolver_reduce");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("sygvdx found 4 eigenvalues, 0 failed infos"), std::string::npos) << r.out;
  EXPECT_TRUE(summary_["unsupported_calls"].empty()) << summary_["unsupported_calls"].dump();
  EXPECT_TRUE(kept("misuse").empty());
  const auto gemms = kept("gemm");
  ASSERT_EQ(apis(gemms), (std::vector<std::string>{
                             "cusolverDnDgebrd", "cusolverDnDorgbr", "cusolverDnDorgbr",
                             "cusolverDnDsytrd", "cusolverDnDormtr", "cusolverDnDorgtr",
                             "cusolverDnDsytrf", "cusolverDnDsytri", "cusolverDnDsygvdx"}));
  const double m = 64, n = 32;
  const auto flops = [&](std::size_t i) { return gemms[i]["flops"].get<double>(); };
  EXPECT_NEAR(flops(0), 4 * m * n * n - 4.0 / 3 * n * n * n, 1);                        // gebrd
  EXPECT_NEAR(flops(1), 4 * m * n * n - 2 * (m + n) * n * n + 4.0 / 3 * n * n * n, 1);  // Q
  EXPECT_NEAR(flops(3), 4.0 / 3 * n * n * n, 1);                                        // sytrd
  EXPECT_EQ(flops(4), 2 * n * n * 8);                           // ormtr, left
  EXPECT_NEAR(flops(7), 2.0 / 3 * n * n * n, 1);                // sytri
  EXPECT_NEAR(flops(8), (9 + 1.0 / 3 + 2 + 1) * n * n * n, 1);  // sygvdx
  EXPECT_EQ(gemms[2]["solver"]["side"], "P");
}

// cuBLASLt with caller-chosen algorithms (CUDALibrarySamples LtSgemmCustomFind/LtMatrixTransform):
// four algorithm ids, each initialized, configured with split-K 4 reducing in the compute type
// (workspace 4 partial 256 x 64 fp32 products = 262,144 bytes) and checked; the GEMM with the
// chosen one; a transpose by cublasLtMatrixTransform as a memory-bound kernel moving A and C
// (2 x 64 x 256 x 4 = 131,072 bytes: 32 blocks of 256 threads at 16 bytes each); four misuses.
TEST_F(EmulateLibrariesTest, CublasLtAlgorithmsAndMatrixTransformAreEmulated) {
  if (!built("cublas_lt_algos")) GTEST_SKIP() << "cublas_lt_algos not built";
  const CliRun r = emulate("cublas_lt_algos");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("cublas_lt_algos: 4 algorithms, workspace 262144 bytes for split-K 4"),
            std::string::npos)
      << r.out;
  EXPECT_TRUE(summary_["unsupported_calls"].empty()) << summary_["unsupported_calls"].dump();
  const auto gemms = kept("gemm");
  ASSERT_EQ(gemms.size(), 1u);
  EXPECT_EQ(gemms[0]["api"], "cublasLtMatmul");
  EXPECT_EQ(gemms[0]["m"], 256);
  EXPECT_EQ(gemms[0]["n"], 64);
  EXPECT_EQ(gemms[0]["k"], 128);
  EXPECT_EQ(gemms[0]["flops"], 2 * 256 * 64 * 128);
  const auto kernels = kept("kernel");
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(kernels[0]["name"], "cublasLt_matrix_transform_float32");
  EXPECT_EQ(kernels[0]["grid"], json::array({32, 1, 1}));
  EXPECT_EQ(kernels[0]["block"], json::array({256, 1, 1}));
  std::vector<std::string> misused;
  for (const json& m : kept("misuse")) misused.push_back(m["api"]);
  EXPECT_EQ(misused, (std::vector<std::string>{
                         "cublasLtMatmulAlgoInit", "cublasLtMatmulAlgoConfigSetAttribute",
                         "cublasLtMatmulAlgoCheck", "cublasLtMatrixTransform"}));
}

// NVML under emulation (libnvidia-ml.so.1 opened at run time, as Zeus and the powertrain client
// do): the same compute-bound kernel at the default clock, locked to 990 MHz, and unlocked. The
// locked launch is predicted as the device model times that work at 990 MHz (1M threads of the
// raw-kernel model's GEMM work), the others at the GPU's highest clock; both locks are in the
// summary, and the energy counter (a measurement) is reported unsupported by name.
TEST_F(EmulateLibrariesTest, NvmlClockLocksTimeTheWorkLaunchedWhileLocked) {
  if (!built("nvml_clocks")) GTEST_SKIP() << "nvml_clocks not built";
  const CliRun r = emulate("nvml_clocks");
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("nvml_clocks: 1 device(s), 119 SM clocks 210-1980 MHz, power limit 700 W"),
            std::string::npos)
      << r.out;
  const json& locks = summary_["clock_locks"];
  ASSERT_EQ(locks.size(), 2u) << summary_.dump();
  EXPECT_EQ(locks[0]["max_mhz"], 990);
  EXPECT_EQ(locks[0]["min_mhz"], 990);
  EXPECT_EQ(locks[0]["api"], "nvmlDeviceSetGpuLockedClocks");
  EXPECT_EQ(locks[1]["max_mhz"], 0);
  EXPECT_EQ(locks[1]["api"], "nvmlDeviceResetGpuLockedClocks");
  EXPECT_EQ(summary_["unsupported_calls"], json({{"nvmlDeviceGetTotalEnergyConsumption", 1}}));

  const device::GpuSpec gpu = device::find_gpu("h100").value();
  device::Work work;
  work.kind = device::WorkKind::kMatmul;
  work.precision = device::Precision::kBf16;
  const double threads = 1 << 20;
  work.flops = threads * 8192.0;       // DeviceModelOptions::matmul_flops_per_thread
  work.memory_bytes = threads * 16.0;  // DeviceModelOptions::bytes_per_thread
  const auto at = [&](double mhz) {
    return device::estimate_work(gpu, std::span<const device::Work>(&work, 1), mhz).time_s * 1e6;
  };
  const std::vector<double> us = predicted_us("sgemm_tile_kernel(float*, int)");
  ASSERT_EQ(us.size(), 3u);
  EXPECT_NEAR(us[0], at(gpu.max_clock_mhz()), 0.01);
  EXPECT_NEAR(us[1], at(990.0), 0.01);
  EXPECT_NEAR(us[2], us[0], 1e-9);
  EXPECT_GT(us[1], 1.5 * us[0]) << "compute-bound work slows with the clock";
}

}  // namespace
}  // namespace powertrain
