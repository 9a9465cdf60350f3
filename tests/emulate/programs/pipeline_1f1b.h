// The 1F1B pipeline both NCCL pipeline programs run (nccl_pipeline.cu, nccl_pipeline_search.cu):
// a stage's buffers and point-to-point transfers, Megatron's non-interleaved 1F1B order, and the
// job around them (communicator, buffers, schedule, teardown). A program supplies the stage's
// forward and backward kernels: a struct deriving from pipeline_1f1b::StageTransfers with
// forward(mb) and backward(mb).
#pragma once

#include <algorithm>
#include <vector>

#include "nccl_program_util.h"

namespace pipeline_1f1b {

constexpr int kHidden = 1 << 16;  // activation elements per microbatch (buffers)
constexpr int kBlock = 256;

struct StageTransfers {
  int stage = 0;
  int stages = 1;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  std::vector<float*> input, output, grad_output, grad_input;  // per microbatch

  bool first() const { return stage == 0; }
  bool last() const { return stage == stages - 1; }

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
  // In the steady state each send is grouped with the receive it overlaps, which keeps real NCCL
  // deadlock free.
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

// min(S - s - 1, M) warm-up forwards, then one forward / one backward alternately, then the
// remaining backwards. Returns the warm-up count.
template <class Stage>
int run_schedule(Stage& s, int microbatches) {
  const int warmup = std::min(s.stages - s.stage - 1, microbatches);
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
  return warmup;
}

// One iteration of the job on stage `s` (stage and stages set): the communicator from the unique
// id in `id_file` (under argv[1] or $POWERTRAIN_EMU_DIR), the buffers, the input and loss
// gradient, the schedule, and the teardown. Returns the warm-up count.
template <class Stage>
int run_job(Stage& s, int microbatches, const char* id_file, int argc, char** argv) {
  const ncclUniqueId id = exchange_unique_id(exchange_dir(argc, argv), id_file, s.stage);
  NCCL_CHECK(ncclCommInitRank(&s.comm, s.stages, id, s.stage));
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
  const int warmup = run_schedule(s, microbatches);
  EMU_CHECK(cudaStreamSynchronize(s.stream));
  for (auto* buffers : {&s.input, &s.output, &s.grad_output, &s.grad_input}) {
    for (float* buffer : *buffers) EMU_CHECK(cudaFree(buffer));
  }
  NCCL_CHECK(ncclCommDestroy(s.comm));
  EMU_CHECK(cudaStreamDestroy(s.stream));
  return warmup;
}

}  // namespace pipeline_1f1b
