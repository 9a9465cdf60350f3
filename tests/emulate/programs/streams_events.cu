// Three non-blocking streams with cross-stream event dependencies (the shape of a data-parallel
// step: two producers, one consumer, a copy back that waits for the consumer), then a small
// HtoD → DtoD → DtoH round trip whose data the host checks: under emulation only copies move
// data, so what comes back must equal what went in. Valid CUDA: it runs on a real GPU too.
#include <cstring>

#include "emu_check.h"

__global__ void scale(float* x, int n, float factor) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= factor;
}

__global__ void block_sum(const float* x, float* partial, int n) {
  extern __shared__ float cache[];
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  cache[threadIdx.x] = i < n ? x[i] : 0.0f;
  __syncthreads();
  for (int step = blockDim.x / 2; step > 0; step /= 2) {
    if (threadIdx.x < step) cache[threadIdx.x] += cache[threadIdx.x + step];
    __syncthreads();
  }
  if (threadIdx.x == 0) partial[blockIdx.x] = cache[0];
}

__global__ void add(float* out, const float* a, const float* b, int n) {
  const int block = blockIdx.y * gridDim.x + blockIdx.x;
  const int i = block * (blockDim.x * blockDim.y) + threadIdx.y * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}

int main() {
  constexpr int n = 1 << 20;
  constexpr size_t bytes = n * sizeof(float);
  cudaStream_t streams[3];
  for (cudaStream_t& s : streams) EMU_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t ready_a, ready_b, done;
  EMU_CHECK(cudaEventCreateWithFlags(&ready_a, cudaEventDisableTiming));
  EMU_CHECK(cudaEventCreateWithFlags(&ready_b, cudaEventDisableTiming));
  EMU_CHECK(cudaEventCreateWithFlags(&done, cudaEventDisableTiming));

  float *a = nullptr, *b = nullptr, *c = nullptr, *partial = nullptr, *host = nullptr;
  EMU_CHECK(cudaMalloc(&a, bytes));
  EMU_CHECK(cudaMalloc(&b, bytes));
  EMU_CHECK(cudaMalloc(&c, bytes));
  EMU_CHECK(cudaMalloc(&partial, 64 * sizeof(float)));
  EMU_CHECK(cudaMallocHost(&host, bytes));
  for (int i = 0; i < n; ++i) host[i] = static_cast<float>(i);

  // Producer 1 on stream 0, producer 2 (+ a reduction with dynamic shared memory) on stream 1.
  EMU_CHECK(cudaMemcpyAsync(a, host, bytes, cudaMemcpyHostToDevice, streams[0]));
  scale<<<n / 256, 256, 0, streams[0]>>>(a, n, 2.0f);
  EMU_CHECK(cudaGetLastError());
  EMU_CHECK(cudaEventRecord(ready_a, streams[0]));
  EMU_CHECK(cudaMemcpyAsync(b, host, bytes, cudaMemcpyHostToDevice, streams[1]));
  scale<<<n / 256, 256, 0, streams[1]>>>(b, n, 3.0f);
  block_sum<<<64, 128, 128 * sizeof(float), streams[1]>>>(b, partial, 64 * 128);
  EMU_CHECK(cudaGetLastError());
  EMU_CHECK(cudaEventRecord(ready_b, streams[1]));

  // The consumer on stream 2 waits for both producers.
  EMU_CHECK(cudaStreamWaitEvent(streams[2], ready_a, 0));
  EMU_CHECK(cudaStreamWaitEvent(streams[2], ready_b, 0));
  add<<<dim3(1024, 4), dim3(64, 4), 0, streams[2]>>>(c, a, b, n);
  EMU_CHECK(cudaGetLastError());
  EMU_CHECK(cudaEventRecord(done, streams[2]));

  // The copy back on stream 0 waits for the consumer.
  EMU_CHECK(cudaStreamWaitEvent(streams[0], done, 0));
  EMU_CHECK(cudaMemcpyAsync(host, c, bytes, cudaMemcpyDeviceToHost, streams[0]));
  EMU_CHECK(cudaStreamSynchronize(streams[0]));

  // Round trip: host → device (default stream) → device (stream 1) → host.
  int sent[256];
  int received[256];
  for (int i = 0; i < 256; ++i) sent[i] = i * 7 + 1;
  std::memset(received, 0, sizeof received);
  int *d1 = nullptr, *d2 = nullptr;
  EMU_CHECK(cudaMalloc(&d1, sizeof sent));
  EMU_CHECK(cudaMalloc(&d2, sizeof sent));
  EMU_CHECK(cudaMemcpy(d1, sent, sizeof sent, cudaMemcpyHostToDevice));
  EMU_CHECK(cudaMemcpyAsync(d2, d1, sizeof sent, cudaMemcpyDeviceToDevice, streams[1]));
  EMU_CHECK(cudaStreamSynchronize(streams[1]));
  EMU_CHECK(cudaMemcpy(received, d2, sizeof received, cudaMemcpyDeviceToHost));
  EMU_REQUIRE(std::memcmp(sent, received, sizeof sent) == 0);
  EMU_CHECK(cudaDeviceSynchronize());

  for (void* p : {static_cast<void*>(a), static_cast<void*>(b), static_cast<void*>(c),
                  static_cast<void*>(partial), static_cast<void*>(d1), static_cast<void*>(d2)}) {
    EMU_CHECK(cudaFree(p));
  }
  EMU_CHECK(cudaFreeHost(host));
  for (cudaEvent_t e : {ready_a, ready_b, done}) EMU_CHECK(cudaEventDestroy(e));
  for (cudaStream_t s : streams) EMU_CHECK(cudaStreamDestroy(s));
  std::printf("streams_events ok: round trip of %zu bytes verified\n", sizeof sent);
  return 0;
}
