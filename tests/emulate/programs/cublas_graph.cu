// cuBLAS GEMMs inside a CUDA graph, as PyTorch's CUDA graphs capture a model's matmuls: two
// SGEMMs and a bias kernel are captured on a stream (cublasSetStream), the graph is instantiated
// and launched 3 times with a synchronize after each. The GEMMs are graph nodes, replayed at
// every launch, not work of the capture.
// Valid CUDA: the same binary runs on a real GPU.
#include <cublas_v2.h>

#include "emu_check.h"

#define BLAS_CHECK(call)                                                        \
  do {                                                                          \
    const cublasStatus_t blas_status = (call);                                  \
    if (blas_status != CUBLAS_STATUS_SUCCESS) {                                 \
      std::fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, \
                   static_cast<int>(blas_status));                              \
      std::exit(1);                                                             \
    }                                                                           \
  } while (0)

__global__ void add_bias(float* c, const float* bias, int rows, int cols) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < rows * cols) c[i] += bias[i % rows];
}

int main() {
  const int m = 1024, n = 512, k = 256;
  float *a, *b, *c, *d, *bias;
  EMU_CHECK(cudaMalloc(&a, sizeof(float) * m * k));
  EMU_CHECK(cudaMalloc(&b, sizeof(float) * k * n));
  EMU_CHECK(cudaMalloc(&c, sizeof(float) * m * n));
  EMU_CHECK(cudaMalloc(&d, sizeof(float) * m * n));
  EMU_CHECK(cudaMalloc(&bias, sizeof(float) * m));
  cudaStream_t stream;
  EMU_CHECK(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking));
  cublasHandle_t blas;
  BLAS_CHECK(cublasCreate(&blas));
  BLAS_CHECK(cublasSetStream(blas, stream));
  const float one = 1.0f, zero = 0.0f;

  cudaGraph_t graph;
  EMU_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeGlobal));
  BLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_N, m, n, k, &one, a, m, b, k, &zero, c, m));
  add_bias<<<(m * n + 255) / 256, 256, 0, stream>>>(c, bias, m, n);
  BLAS_CHECK(cublasSgemm(blas, CUBLAS_OP_N, CUBLAS_OP_T, m, n, n, &one, c, m, c, m, &zero, d, m));
  EMU_CHECK(cudaStreamEndCapture(stream, &graph));
  size_t nodes = 0;
  EMU_CHECK(cudaGraphGetNodes(graph, nullptr, &nodes));
  EMU_REQUIRE(nodes == 3);
  cudaGraphExec_t exec;
  EMU_CHECK(cudaGraphInstantiate(&exec, graph, 0));
  for (int i = 0; i < 3; ++i) {
    EMU_CHECK(cudaGraphLaunch(exec, stream));
    EMU_CHECK(cudaStreamSynchronize(stream));
  }
  EMU_CHECK(cudaGraphExecDestroy(exec));
  EMU_CHECK(cudaGraphDestroy(graph));
  BLAS_CHECK(cublasDestroy(blas));
  for (float* p : {a, b, c, d, bias}) EMU_CHECK(cudaFree(p));
  EMU_CHECK(cudaStreamDestroy(stream));
  std::printf("cublas_graph: 3 launches of 2 GEMMs and a kernel\n");
  return 0;
}
