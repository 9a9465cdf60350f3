// Emulation traces of small training programs, written as the interposer would record them (for
// tests and benchmarks; no GPU, interposer or CUDA needed): a data-parallel job with per-layer
// gradient all-reduces on a communication stream, and a 1F1B pipeline with NCCL send/recv.
#pragma once

#include <cstdint>
#include <string>

namespace powertrain::emulate {

struct DataParallelSpec {
  int layers = 4;
  int iterations = 3;
  std::int64_t m = 4096, n = 4096, k = 4096;  // each layer's GEMM (bf16)
  std::int64_t gradient_elements = 16 << 20;  // bf16 elements all-reduced per layer
  std::int64_t host_work_ns = 20'000;         // host work before each op
  std::int64_t batch_bytes = 8 << 20;         // input copied to the GPU per iteration
};

/// One rank of a DDP-style job: per iteration an input copy, L forward GEMMs on stream 0, L × 2
/// backward GEMMs with an all-reduce per layer on stream 1 (event record on 0, wait on 1), the
/// optimizer after stream 0 waits for the last all-reduce, then a blocking loss copy (the host
/// sync that ends the iteration). Deterministic: identical ranks give identical traces.
std::string data_parallel_program(int rank, int world_size, const DataParallelSpec& spec = {});

struct PipelineSpec {
  int stages = 4;
  int microbatches = 4;
  int iterations = 1;
  std::int64_t activation_elements = 15'750'000;  // bf16 elements sent between stages
  std::int64_t host_work_ns = 2'000;
  std::int64_t comm_setup_ns = 0;  // host work before comm_init
  /// Data parallelism: `data_parallel` pipelines; this process is stage `stage` of pipeline
  /// `replica` (rank replica × stages + stage), and each iteration ends with an all-reduce of
  /// `gradient_elements` among the same stage of every pipeline.
  int data_parallel = 1;
  int replica = 0;
  std::int64_t gradient_elements = 1 << 20;
};

/// Stage `stage` of a 1F1B pipeline in Megatron's order (warm-up forwards, steady 1F1B with
/// send_forward_recv_backward and send_backward_recv_forward as ncclGroupStart/End blocks,
/// cool-down backwards), everything on stream 0. Forward kernels are named "forward_step" and
/// backward kernels "backward_step" (give their durations with a kernel table). Each iteration
/// ends with the data-parallel all-reduce (when data_parallel > 1) and cudaDeviceSynchronize.
std::string pipeline_program(int stage, const PipelineSpec& spec = {});

}  // namespace powertrain::emulate
