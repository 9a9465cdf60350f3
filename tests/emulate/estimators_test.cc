// Kernel duration estimators: collective bus bytes, copies, raw kernels,
// the kernel table (parsing, errors, precedence in a chain).
#include "emulate/estimators.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <span>

#include "emulate_test_util.h"

namespace powertrain::emulate {
namespace {

const device::GpuSpec& h100() {
  static const device::GpuSpec gpu = *device::find_gpu("h100");
  return gpu;
}

double seconds(const KernelEstimator& e, const Record& r, int n = 1, bool spans = false,
               std::string_view name = "") {
  KernelQuery q;
  q.record = &r;
  q.name = name;
  q.group_size = n;
  q.spans_nodes = spans;
  const auto estimate = e.estimate(q, h100());
  EXPECT_TRUE(estimate.has_value());
  return estimate ? estimate->seconds : -1.0;
}

TEST(Estimators, BusBytesFollowNcclFactors) {
  EXPECT_DOUBLE_EQ(collective_bus_bytes(Collective::kAllReduce, 800, 8), 2.0 * 7 / 8 * 800);
  // Per-rank counts: the full all-gather buffer is n × bytes.
  EXPECT_DOUBLE_EQ(collective_bus_bytes(Collective::kAllGather, 100, 8), 700);
  EXPECT_DOUBLE_EQ(collective_bus_bytes(Collective::kReduceScatter, 100, 4), 300);
  EXPECT_DOUBLE_EQ(collective_bus_bytes(Collective::kAllToAll, 800, 8), 700);
  EXPECT_DOUBLE_EQ(collective_bus_bytes(Collective::kBroadcast, 100, 8), 100);
  EXPECT_DOUBLE_EQ(collective_bus_bytes(Collective::kSend, 100, 2), 100);
  EXPECT_DOUBLE_EQ(collective_bus_bytes(Collective::kAllReduce, 100, 1), 0);
}

// Collective durations: tests/emulate/collective_model_test.cc.

TEST(Estimators, CopiesMemsetsAndRawKernels) {
  const DeviceModelEstimator model;
  Record copy;
  copy.op = OpKind::kMemcpy;
  copy.copy = CopyKind::kHtoD;
  copy.bytes = 25'000'000;
  EXPECT_NEAR(seconds(model, copy), 2e-6 + 1e-3, 1e-12);
  copy.copy = CopyKind::kDtoD;
  EXPECT_NEAR(seconds(model, copy), 2.0 * 25e6 / (3350e9 * 0.8), 1e-12);
  Record set;
  set.op = OpKind::kMemset;
  set.bytes = 1 << 30;
  EXPECT_NEAR(seconds(model, set), (1 << 30) / (3350e9 * 0.8), 1e-12);
  Record kernel;
  kernel.op = OpKind::kKernel;
  kernel.grid[0] = 1 << 16;
  kernel.block[0] = 256;
  const double threads = (1 << 16) * 256.0;
  EXPECT_NEAR(seconds(model, kernel, 1, false, "vectorized_elementwise_kernel"),
              threads * 16 / (3350e9 * 0.8), 1e-12);
  // A GEMM-named raw kernel: 8192 flop/thread at bf16 tensor rate (compute-bound here).
  const double gemm_s = seconds(model, kernel, 1, false, "sm90_xmma_gemm_bf16");
  EXPECT_NEAR(gemm_s, threads * 8192 / (989.5e12 * h100().dvfs.matmul_efficiency), 1e-12);
  kernel.grid[0] = 1;
  kernel.block[0] = 32;
  EXPECT_DOUBLE_EQ(seconds(model, kernel, 1, false, "tiny"), 3e-6);  // the floor
}

TEST(Estimators, GemmPrecisionFromDtypeAndComputeType) {
  const DeviceModelEstimator model;
  Record g;
  g.op = OpKind::kGemm;
  g.m = g.n = g.k = 8192;
  g.dtype_a = g.dtype_b = g.dtype_c = Dtype::kFloat32;
  g.flops = 2.0 * 8192 * 8192 * 8192;
  KernelQuery q;
  q.record = &g;
  const double fp32 = model.estimate(q, h100())->seconds;
  q.compute = "CUBLAS_COMPUTE_32F_FAST_TF32";
  const double tf32 = model.estimate(q, h100())->seconds;
  EXPECT_NEAR(fp32 / tf32, 494.5 / 67, 1e-6);
  EXPECT_EQ(model.estimate(q, h100())->kernel_class, sim::KernelClass::kMatmul);
}

TEST(Estimators, TableParsesQuotedNamesAndRejectsBadRows) {
  auto table = TableEstimator::from_csv_text(
      "name,duration_us,notes\n\"void k<int, float>(int)\",12.5,x\nplain,3,\n", "k.csv");
  ASSERT_TRUE(table.ok()) << table.error().message;
  EXPECT_EQ(table->size(), 2u);
  Record r;
  r.op = OpKind::kKernel;
  EXPECT_DOUBLE_EQ(seconds(*table, r, 1, false, "void k<int, float>(int)"), 12.5e-6);
  // By the name before '('.
  EXPECT_DOUBLE_EQ(seconds(*table, r, 1, false, "plain(float*, int)"), 3e-6);
  KernelQuery unknown;
  unknown.record = &r;
  unknown.name = "other";
  EXPECT_FALSE(table->estimate(unknown, h100()).has_value());
  Record copy;
  copy.op = OpKind::kMemcpy;
  unknown.record = &copy;
  unknown.name = "plain";
  EXPECT_FALSE(table->estimate(unknown, h100()).has_value());  // only kernels and GEMMs

  auto no_column = TableEstimator::from_csv_text("kernel,time\nk,1\n", "k.csv");
  ASSERT_FALSE(no_column.ok());
  EXPECT_EQ(no_column.error().message,
            "k.csv: expected a header with 'name' (or 'kernel') and 'duration_us' columns");
  auto negative = TableEstimator::from_csv_text("name,duration_us\nk,-1\n", "k.csv");
  ASSERT_FALSE(negative.ok());
  EXPECT_EQ(negative.error().message,
            "k.csv:2: field 'duration_us': expected a number >= 0, got -1");
  auto twice = TableEstimator::from_csv_text("name,duration_us\nk,1\nk,2\n", "k.csv");
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error().message, "k.csv:3: kernel 'k' listed twice with different durations");
  EXPECT_FALSE(TableEstimator::from_csv_text("name,duration_us\nk,abc\n", "k.csv").ok());
}

TEST(Estimators, ChainAsksInOrder) {
  auto table = TableEstimator::from_csv_text("name,duration_us\nk,42\n", "k.csv");
  ASSERT_TRUE(table.ok());
  EstimatorChain chain;
  chain.add(std::make_shared<TableEstimator>(std::move(*table)));
  chain.add(std::make_shared<DeviceModelEstimator>());
  Record r;
  r.op = OpKind::kKernel;
  KernelQuery q;
  q.record = &r;
  q.name = "k";
  auto [known, by] = chain.estimate(q, h100());
  EXPECT_EQ(by, 0);
  EXPECT_DOUBLE_EQ(known.seconds, 42e-6);
  q.name = "unknown";
  auto [modelled, by_model] = chain.estimate(q, h100());
  EXPECT_EQ(by_model, 1);
  EXPECT_DOUBLE_EQ(modelled.seconds, 3e-6);
}

// A library kernel with its own FLOPs and bytes (cuFFT, cuSPARSE) is timed by the roofline of the
// two, not by its grid: bytes over HBM while they bind, FLOPs at the fp32 peak once they do.
TEST(Estimators, LibraryKernelsUseTheRooflineOfTheirFlopsAndBytes) {
  const DeviceModelEstimator model;
  const double memory_rate = h100().memory_bandwidth_gb_s * 1e9 * h100().dvfs.memory_efficiency;
  const double fp32_rate = h100().peak_tflops_fp32 * 1e12;
  Record k;
  k.op = OpKind::kKernel;
  k.grid[0] = 1;  // the grid no longer decides
  k.block[0] = 256;
  // A 2^20-point Z2Z FFT: 5·2^20·20 FLOPs, 2 passes over 16 MiB in + out: memory-bound.
  k.flops = 5.0 * (1 << 20) * 20;
  k.bytes = 2LL * 2 * 16 * (1 << 20);
  EXPECT_NEAR(seconds(model, k, 1, false, "cufft_z2z_float64"), k.bytes / memory_rate, 1e-12);
  EXPECT_GT(k.bytes / memory_rate, k.flops / fp32_rate);
  // An SpMM with 512 nonzeros per row and 256 right-hand sides (2^16 rows, fp32): FLOPs
  // 2·nnz·256 against nnz·8 + (rows+1)·4 + 3·rows·256·4 bytes — the FLOPs bind.
  const double rows = 1 << 16, nnz = rows * 512;
  k.flops = 2.0 * nnz * 256;
  k.bytes = static_cast<std::int64_t>(nnz * 8 + (rows + 1) * 4 + 3 * rows * 256 * 4);
  const double flop_s = k.flops / fp32_rate;
  ASSERT_GT(flop_s, k.bytes / memory_rate);
  EXPECT_NEAR(seconds(model, k, 1, false, "cusparse_spmm_csr_float32"), flop_s, 1e-12);
  // Without the fields the same record is a raw kernel again (16 bytes per thread, the floor).
  k.flops = 0.0;
  k.bytes = 0;
  EXPECT_DOUBLE_EQ(seconds(model, k, 1, false, "cusparse_spmm_csr_float32"), 3e-6);
}

}  // namespace
}  // namespace powertrain::emulate

// A GEMM record with `bytes` (a fused cuDNN graph's matmul: its result stays on chip) is timed
// with those bytes instead of A + B + C: at the roofline, by hand from device::estimate_work.
namespace powertrain::emulate {
namespace {

TEST(Estimators, GemmBytesFieldReplacesTheOperandBytes) {
  const DeviceModelEstimator model;
  Record r;
  r.op = OpKind::kGemm;
  r.m = 1024, r.n = 1024, r.k = 64, r.batch = 16;
  r.dtype_a = r.dtype_b = r.dtype_c = Dtype::kBfloat16;
  r.flops = 2.0 * 16 * 1024 * 1024 * 64;
  const auto roofline = [&](double bytes) {
    device::Work w;
    w.kind = device::WorkKind::kMatmul;
    w.precision = device::Precision::kBf16;
    w.flops = r.flops;
    w.memory_bytes = bytes;
    return std::max(3e-6,
                    device::estimate_work(h100(), std::span(&w, 1), h100().max_clock_mhz()).time_s);
  };
  const double operands = 16.0 * 2 * (1024 * 64 + 64 * 1024 + 1024 * 1024);
  EXPECT_NEAR(seconds(model, r), roofline(operands), 1e-12);
  r.bytes = 16 * 2 * 2 * 1024 * 64;  // Q and K only
  EXPECT_NEAR(seconds(model, r), roofline(static_cast<double>(r.bytes)), 1e-12);
  EXPECT_LT(seconds(model, r), roofline(operands));
}

}  // namespace
}  // namespace powertrain::emulate
