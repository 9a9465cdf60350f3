// CUDA graphs through stream capture. One iteration forks from stream s onto s2 (event e1),
// launches kernels A on s and B on s2 (N each, interleaved), joins back (event e2) and runs a
// tail kernel C on s; then cudaStreamSynchronize(s). argv[1] "graph": the iteration is captured
// once (global mode) and replayed with cudaGraphLaunch; "plain": the same calls are issued each
// iteration. Before the loop, "graph" also checks a captured host function (it runs at each
// launch, not at capture), a captured memset, capture queries and cudaGraphExecUpdate.
// Valid CUDA: the same binary runs on a real GPU.
#include <cstring>

#include "emu_check.h"
#include "graph_iteration.h"

void iteration(cudaStream_t s, cudaStream_t s2, cudaEvent_t e1, cudaEvent_t e2, float* x, float* y,
               int n) {
  EMU_CHECK(cudaEventRecord(e1, s));
  EMU_CHECK(cudaStreamWaitEvent(s2, e1, 0));
  for (int k = 0; k < kKernels; ++k) {
    branch_a<<<1, 32, 0, s>>>(x, n);
    branch_b<<<1, 32, 0, s2>>>(y, n);
  }
  EMU_CHECK(cudaEventRecord(e2, s2));
  EMU_CHECK(cudaStreamWaitEvent(s, e2, 0));
  tail_c<<<1, 32, 0, s>>>(x, y, n);
  EMU_CHECK(cudaGetLastError());
}

int main(int argc, char** argv) {
  const bool graph_mode = argc > 1 && std::strcmp(argv[1], "graph") == 0;
  const int n = 32;
  float *x = nullptr, *y = nullptr;
  EMU_CHECK(cudaMalloc(&x, n * sizeof(float)));
  EMU_CHECK(cudaMalloc(&y, n * sizeof(float)));
  cudaStream_t s, s2;
  EMU_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  EMU_CHECK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  cudaEvent_t e1, e2;
  EMU_CHECK(cudaEventCreateWithFlags(&e1, cudaEventDisableTiming));
  EMU_CHECK(cudaEventCreateWithFlags(&e2, cudaEventDisableTiming));

  if (!graph_mode) {
    for (int i = 0; i <= kIterations; ++i) {
      iteration(s, s2, e1, e2, x, y, n);
      EMU_CHECK(cudaStreamSynchronize(s));
    }
    std::printf("plain: %d iterations\n", kIterations + 1);
    return 0;
  }

  // A small graph first: memset + kernel + host function.
  int calls = 0;
  cudaStreamCaptureStatus status = cudaStreamCaptureStatusNone;
  EMU_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal));
  EMU_CHECK(cudaStreamIsCapturing(s, &status));
  EMU_REQUIRE(status == cudaStreamCaptureStatusActive);
  EMU_CHECK(cudaMemsetAsync(x, 0, n * sizeof(float), s));
  branch_a<<<1, 32, 0, s>>>(x, n);
  EMU_CHECK(cudaLaunchHostFunc(s, count_call, &calls));
  cudaGraph_t small;
  EMU_CHECK(cudaStreamEndCapture(s, &small));
  EMU_CHECK(cudaStreamIsCapturing(s, &status));
  EMU_REQUIRE(status == cudaStreamCaptureStatusNone);
  EMU_REQUIRE(calls == 0);  // captured, not run
  size_t nodes = 0;
  EMU_CHECK(cudaGraphGetNodes(small, nullptr, &nodes));
  EMU_REQUIRE(nodes == 3);
  cudaGraphExec_t small_exec;
  EMU_CHECK(cudaGraphInstantiate(&small_exec, small, 0));
  EMU_CHECK(cudaGraphLaunch(small_exec, s));
  EMU_CHECK(cudaGraphLaunch(small_exec, s));
  EMU_CHECK(cudaStreamSynchronize(s));
  EMU_REQUIRE(calls == 2);
  EMU_CHECK(cudaGraphExecDestroy(small_exec));
  EMU_CHECK(cudaGraphDestroy(small));
  EMU_EXPECT_ERROR(cudaGraphLaunch(small_exec, s), cudaErrorInvalidResourceHandle);
  (void)cudaGetLastError();

  // The iteration, captured across two streams.
  cudaGraph_t graph;
  EMU_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
  iteration(s, s2, e1, e2, x, y, n);
  EMU_CHECK(cudaStreamEndCapture(s, &graph));
  EMU_CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
  EMU_REQUIRE(nodes == 2 * kKernels + 1);
  cudaGraphExec_t exec;
  EMU_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  // Same topology captured again: the update succeeds.
  cudaGraph_t again;
  EMU_CHECK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
  iteration(s, s2, e1, e2, x, y, n);
  EMU_CHECK(cudaStreamEndCapture(s, &again));
  cudaGraphExecUpdateResultInfo info;
  EMU_CHECK(cudaGraphExecUpdate(exec, again, &info));
  EMU_REQUIRE(info.result == cudaGraphExecUpdateSuccess);
  for (int i = 0; i <= kIterations; ++i) {
    EMU_CHECK(cudaGraphLaunch(exec, s));
    EMU_CHECK(cudaStreamSynchronize(s));
  }
  EMU_CHECK(cudaGraphExecDestroy(exec));
  EMU_CHECK(cudaGraphDestroy(again));
  EMU_CHECK(cudaGraphDestroy(graph));
  std::printf("graph: %d iterations\n", kIterations + 1);
  return 0;
}
