// The search's test workload (docs/search.md, emulation backend): nccl_pipeline's 1F1B
// pipeline of WORLD_SIZE stages, with knobs: argv[1] the NCCL id directory, argv[2] the
// microbatch count, argv[3] the microbatch size (sequences; scales every kernel's grid). Each
// instruction is a GEMM-named kernel (tensor-core work: its time follows the clock) and an
// elementwise one (memory-bound), so the plan of each configuration has a real time-energy
// frontier.
#include "pipeline_1f1b.h"

__global__ void fwd_stage_gemm(const float* in, float* out, int n, int stage) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 0.5f * in[i] + static_cast<float>(stage);
}

__global__ void fwd_stage_bias(float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] += 1.0f;
}

__global__ void bwd_stage_gemm(const float* grad_out, const float* activation, float* grad_in,
                               int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) grad_in[i] = 0.5f * grad_out[i] + 0.001f * activation[i];
}

namespace {

using pipeline_1f1b::kBlock;
using pipeline_1f1b::kHidden;

// Threads per sequence of a microbatch: the emulator sizes a GEMM-named kernel at 8192 flop per
// thread (about 0.14 ms per sequence on an H100) and an elementwise one at 16 bytes per thread.
constexpr int kGemmBlocksPerSequence = (1 << 24) / kBlock;
constexpr int kBiasBlocksPerSequence = (1 << 22) / kBlock;

struct Stage : pipeline_1f1b::StageTransfers {
  int sequences = 1;  // microbatch size

  void forward(int mb) {
    fwd_stage_gemm<<<kGemmBlocksPerSequence * sequences, kBlock, 0, stream>>>(input[mb], output[mb],
                                                                              kHidden, stage);
    EMU_CHECK(cudaGetLastError());
    fwd_stage_bias<<<kBiasBlocksPerSequence * sequences, kBlock, 0, stream>>>(output[mb], kHidden);
    EMU_CHECK(cudaGetLastError());
  }
  void backward(int mb) {
    bwd_stage_gemm<<<2 * kGemmBlocksPerSequence * sequences, kBlock, 0, stream>>>(
        grad_output[mb], output[mb], grad_input[mb], kHidden);
    EMU_CHECK(cudaGetLastError());
  }
};

}  // namespace

int main(int argc, char** argv) {
  const int rank = env_int("RANK", 0);
  const int world = env_int("WORLD_SIZE", 1);
  const int local_rank = env_int("LOCAL_RANK", rank);
  const int microbatches = argc > 2 ? std::atoi(argv[2]) : 8;
  const int sequences = argc > 3 ? std::atoi(argv[3]) : 1;
  EMU_REQUIRE(world >= 2 && rank >= 0 && rank < world && microbatches >= 1 && sequences >= 1 &&
              sequences <= 64);
  select_device(local_rank);

  Stage s;
  s.stage = rank;
  s.stages = world;
  s.sequences = sequences;
  const int warmup = pipeline_1f1b::run_job(s, microbatches, "nccl_pipeline_search.id", argc, argv);
  std::printf("stage %d/%d: ok (%d microbatches of %d, %d warm-up)\n", rank, world, microbatches,
              sequences, warmup);
  return 0;
}
