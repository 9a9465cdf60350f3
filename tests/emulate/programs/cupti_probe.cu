// A CUPTI client as a profiler (PyTorch's Kineto, NVIDIA's activity_trace_async sample) starts:
// version, activity buffers, kernel activity, a callback subscription, timestamps; then it runs
// a kernel and flushes. Every failed call is reported with cuptiGetResultString and the program
// carries on without a profiler, as Kineto does. Under the emulator the tracing calls return
// CUPTI_ERROR_NOT_SUPPORTED ("no profiler") and the kernel is still recorded; on a real GPU the
// same binary gets its kernel activity records. Written for the emulator's tests.
#include <cupti.h>

#include <cstdint>
#include <cstdlib>

#include "emu_check.h"

namespace {

int g_records = 0;
int g_failures = 0;

// Reports a failed CUPTI call and goes on (profiling is optional).
bool cupti_ok(CUptiResult result, const char* call) {
  if (result == CUPTI_SUCCESS) return true;
  const char* text = nullptr;
  if (cuptiGetResultString(result, &text) != CUPTI_SUCCESS || text == nullptr) text = "?";
  std::printf("cupti_probe: %s -> %d (%s)\n", call, static_cast<int>(result), text);
  ++g_failures;
  return false;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 1 << 16;
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, *size));
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* record = nullptr;
  while (valid > 0 && cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
    ++g_records;
  }
  std::free(buffer);
}

void CUPTIAPI on_api(void*, CUpti_CallbackDomain, CUpti_CallbackId, const void*) {}

__global__ void scale(float* x, float a, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= a;
}

}  // namespace

int main() {
  uint32_t version = 0;
  if (cuptiGetVersion(&version) != CUPTI_SUCCESS) return 1;
  bool tracing = cupti_ok(cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed),
                          "cuptiActivityRegisterCallbacks");
  tracing =
      cupti_ok(cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "cuptiActivityEnable") &&
      tracing;
  CUpti_SubscriberHandle subscriber{};
  const bool subscribed =
      cupti_ok(cuptiSubscribe(&subscriber, reinterpret_cast<CUpti_CallbackFunc>(on_api), nullptr),
               "cuptiSubscribe");
  uint64_t start = 0, end = 0;
  if (cuptiGetTimestamp(&start) != CUPTI_SUCCESS) return 1;

  const int n = 1 << 20;
  float* x = nullptr;
  EMU_CHECK(cudaMalloc(&x, n * sizeof(float)));
  scale<<<n / 256, 256>>>(x, 2.0f, n);
  EMU_CHECK(cudaGetLastError());
  EMU_CHECK(cudaDeviceSynchronize());
  if (cuptiGetTimestamp(&end) != CUPTI_SUCCESS || end < start) return 1;
  if (cuptiActivityFlushAll(1) != CUPTI_SUCCESS) return 1;
  if (subscribed) cupti_ok(cuptiUnsubscribe(subscriber), "cuptiUnsubscribe");
  if (tracing) cupti_ok(cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL), "disable");
  if (cuptiFinalize() != CUPTI_SUCCESS) return 1;
  EMU_CHECK(cudaFree(x));
  std::printf("cupti_probe: CUPTI API %u, profiler %s, %d activity records, %d failed calls\n",
              version, tracing ? "available" : "unavailable", g_records, g_failures);
  return 0;
}
