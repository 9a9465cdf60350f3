// A 1F1B pipeline of STAGES ranks (run as 4 processes with RANK/WORLD_SIZE/LOCAL_RANK): each
// stage runs forward kernels (fwd_stage) for MICROBATCHES microbatches and sends activations to
// the next stage with ncclSend (the next stage receives them with ncclRecv); backward kernels
// (bwd_stage) send gradients the other way. The order is Megatron's non-interleaved 1F1B:
// min(S - s - 1, M) warm-up forwards, then one forward / one backward alternately, then the
// remaining backwards; in the steady state each send is grouped with the receive it overlaps
// (send_forward_recv_backward / send_backward_recv_forward), which keeps real NCCL deadlock
// free. argv[1] or $POWERTRAIN_EMU_DIR: directory for the unique id; argv[2]: microbatches.
#include "pipeline_1f1b.h"

__global__ void fwd_stage(const float* in, float* out, int n, int stage) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 0.5f * in[i] + static_cast<float>(stage);
}

__global__ void bwd_stage(const float* grad_out, const float* activation, float* grad_in, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) grad_in[i] = 0.5f * grad_out[i] + 0.001f * activation[i];
}

namespace {

using pipeline_1f1b::kBlock;
using pipeline_1f1b::kHidden;

struct Stage : pipeline_1f1b::StageTransfers {
  void forward(int mb) {
    fwd_stage<<<kHidden / kBlock, kBlock, 0, stream>>>(input[mb], output[mb], kHidden, stage);
    EMU_CHECK(cudaGetLastError());
  }
  void backward(int mb) {
    bwd_stage<<<kHidden / kBlock, kBlock, 0, stream>>>(grad_output[mb], output[mb], grad_input[mb],
                                                       kHidden);
    EMU_CHECK(cudaGetLastError());
  }
};

}  // namespace

int main(int argc, char** argv) {
  const int rank = env_int("RANK", 0);
  const int world = env_int("WORLD_SIZE", 1);
  const int local_rank = env_int("LOCAL_RANK", rank);
  const int microbatches = argc > 2 ? std::atoi(argv[2]) : 8;
  EMU_REQUIRE(world >= 2 && rank >= 0 && rank < world && microbatches >= 1);
  select_device(local_rank);

  Stage s;
  s.stage = rank;
  s.stages = world;
  const int warmup = pipeline_1f1b::run_job(s, microbatches, "nccl_pipeline.id", argc, argv);
  std::printf("stage %d/%d: ok (%d microbatches, %d warm-up)\n", rank, world, microbatches, warmup);
  return 0;
}
