// The search's test workload (docs/search.md, emulation backend): nccl_pipeline's 1F1B
// pipeline of WORLD_SIZE stages, with knobs: argv[1] the NCCL id directory, argv[2] the
// microbatch count, argv[3] the microbatch size (sequences; scales every kernel's grid). Each
// instruction is a GEMM-named kernel (tensor-core work: its time follows the clock) and an
// elementwise one (memory-bound), so the plan of each configuration has a real time-energy
// frontier.
#include <algorithm>
#include <vector>

#include "nccl_program_util.h"

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

constexpr int kHidden = 1 << 16;  // activation elements per microbatch (buffers)
constexpr int kBlock = 256;
// Threads per sequence of a microbatch: the emulator sizes a GEMM-named kernel at 8192 flop per
// thread (about 0.14 ms per sequence on an H100) and an elementwise one at 16 bytes per thread.
constexpr int kGemmBlocksPerSequence = (1 << 24) / kBlock;
constexpr int kBiasBlocksPerSequence = (1 << 22) / kBlock;

struct Stage {
  int stage = 0;
  int stages = 1;
  int sequences = 1;  // microbatch size
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  std::vector<float*> input, output, grad_output, grad_input;  // per microbatch

  bool first() const { return stage == 0; }
  bool last() const { return stage == stages - 1; }

  void forward(int mb) {
    fwd_stage_gemm<<<kGemmBlocksPerSequence * sequences, kBlock, 0, stream>>>(
        input[mb], output[mb], kHidden, stage);
    EMU_CHECK(cudaGetLastError());
    fwd_stage_bias<<<kBiasBlocksPerSequence * sequences, kBlock, 0, stream>>>(output[mb], kHidden);
    EMU_CHECK(cudaGetLastError());
  }
  void backward(int mb) {
    bwd_stage_gemm<<<2 * kGemmBlocksPerSequence * sequences, kBlock, 0, stream>>>(
        grad_output[mb], output[mb], grad_input[mb], kHidden);
    EMU_CHECK(cudaGetLastError());
  }
  void recv_forward(int mb) {
    if (!first()) NCCL_CHECK(ncclRecv(input[mb], kHidden, ncclFloat32, stage - 1, comm, stream));
  }
  void send_forward(int mb) {
    if (!last()) NCCL_CHECK(ncclSend(output[mb], kHidden, ncclFloat32, stage + 1, comm, stream));
  }
  void recv_backward(int mb) {
    if (!last()) {
      NCCL_CHECK(ncclRecv(grad_output[mb], kHidden, ncclFloat32, stage + 1, comm, stream));
    }
  }
  void send_backward(int mb) {
    if (!first()) {
      NCCL_CHECK(ncclSend(grad_input[mb], kHidden, ncclFloat32, stage - 1, comm, stream));
    }
  }
  void send_forward_recv_backward(int fwd_mb, int bwd_mb) {
    NCCL_CHECK(ncclGroupStart());
    send_forward(fwd_mb);
    recv_backward(bwd_mb);
    NCCL_CHECK(ncclGroupEnd());
  }
  void send_backward_recv_forward(int bwd_mb, int fwd_mb) {
    NCCL_CHECK(ncclGroupStart());
    send_backward(bwd_mb);
    recv_forward(fwd_mb);
    NCCL_CHECK(ncclGroupEnd());
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
  const ncclUniqueId id = exchange_unique_id(exchange_dir(argc, argv), "nccl_pipeline_search.id", rank);
  NCCL_CHECK(ncclCommInitRank(&s.comm, world, id, rank));
  EMU_CHECK(cudaStreamCreate(&s.stream));
  for (auto* buffers : {&s.input, &s.output, &s.grad_output, &s.grad_input}) {
    buffers->resize(microbatches);
    for (float*& buffer : *buffers) EMU_CHECK(cudaMalloc(&buffer, kHidden * sizeof(float)));
  }
  if (s.first()) {  // the data loader's input for stage 0
    for (float* buffer : s.input) {
      EMU_CHECK(cudaMemsetAsync(buffer, 0, kHidden * sizeof(float), s.stream));
    }
  }
  if (s.last()) {  // the loss gradient for the last stage
    for (float* buffer : s.grad_output) {
      EMU_CHECK(cudaMemsetAsync(buffer, 0, kHidden * sizeof(float), s.stream));
    }
  }

  const int warmup = std::min(world - rank - 1, microbatches);
  const int remaining = microbatches - warmup;
  int f = 0;  // next forward microbatch
  int b = 0;  // next backward microbatch
  for (int i = 0; i < warmup; ++i, ++f) {
    s.recv_forward(f);
    s.forward(f);
    s.send_forward(f);
  }
  if (remaining > 0) s.recv_forward(f);
  for (int i = 0; i < remaining; ++i, ++b) {
    s.forward(f);
    s.send_forward_recv_backward(f, b);
    ++f;
    s.backward(b);
    if (i == remaining - 1) {
      s.send_backward(b);
    } else {
      s.send_backward_recv_forward(b, f);
    }
  }
  for (int i = 0; i < warmup; ++i, ++b) {
    s.recv_backward(b);
    s.backward(b);
    s.send_backward(b);
  }
  EMU_REQUIRE(f == microbatches && b == microbatches);
  EMU_CHECK(cudaStreamSynchronize(s.stream));

  for (auto* buffers : {&s.input, &s.output, &s.grad_output, &s.grad_input}) {
    for (float* buffer : *buffers) EMU_CHECK(cudaFree(buffer));
  }
  NCCL_CHECK(ncclCommDestroy(s.comm));
  EMU_CHECK(cudaStreamDestroy(s.stream));
  std::printf("stage %d/%d: ok (%d microbatches of %d, %d warm-up)\n", rank, world, microbatches,
              sequences, warmup);
  return 0;
}
