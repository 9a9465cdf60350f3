// Cost of an intercepted CUDA runtime call (issue 5: < 1 µs median). The preload library
// (libpowertrain_cuda.so) is dlopen'ed into this process, a fake kernel is registered the way
// nvcc's generated code does it, and the hot entry points are called in a loop. Records are
// formatted and written exactly as in a real run, to POWERTRAIN_EMU_DIR=/dev/null (discarded),
// so the numbers include the amortised cost of writing the trace.
//   build/interposer_bench --benchmark_repetitions=5   # median over repetitions
#include <benchmark/benchmark.h>
#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>

namespace {

// The CUDA ABI types the calls need, without the CUDA headers (the bench builds without CUDA).
struct Dim3 {
  unsigned x, y, z;
};
using Stream = void*;
using Event = void*;
using LaunchKernel = int (*)(const void*, Dim3, Dim3, void**, size_t, Stream);
using CudaLaunchKernel = int (*)(const void*, Dim3, Dim3, void**, size_t, Stream);
using PushConfig = unsigned (*)(Dim3, Dim3, size_t, Stream);
using PopConfig = int (*)(Dim3*, Dim3*, size_t*, void*);
using GetKernel = int (*)(void**, const void*);
using EventRecord = int (*)(Event, Stream);
using StreamWaitEvent = int (*)(Stream, Event, unsigned);
using Malloc = int (*)(void**, size_t);
using Free = int (*)(void*);
using GetLastError = int (*)();
using StreamCreate = int (*)(Stream*);
using EventCreateWithFlags = int (*)(Event*, unsigned);
using RegisterFatBinary = void** (*)(void*);
using RegisterFunction = void (*)(void**, const char*, char*, const char*, int, void*, void*, void*,
                                  void*, int*);

void fake_kernel_stub() {}  // stands in for nvcc's host stub of a __global__ function

struct Api {
  bool ok = false;
  CudaLaunchKernel cuda_launch_kernel = nullptr;
  LaunchKernel launch_kernel = nullptr;  // __cudaLaunchKernel
  PushConfig push = nullptr;
  PopConfig pop = nullptr;
  EventRecord event_record = nullptr;
  StreamWaitEvent stream_wait_event = nullptr;
  Malloc malloc = nullptr;
  Free free = nullptr;
  GetLastError get_last_error = nullptr;
  void* kernel_handle = nullptr;
  Stream stream = nullptr;
  Event event = nullptr;
};

template <typename F>
F symbol(void* library, const char* name, bool* ok) {
  void* address = dlsym(library, name);
  if (address == nullptr) *ok = false;
  return reinterpret_cast<F>(address);
}

const Api& api() {
  static const Api loaded = [] {
    Api a;
#ifdef POWERTRAIN_INTERPOSER_PATH
    setenv("POWERTRAIN_EMU_DIR", "/dev/null", 1);  // format everything, keep nothing
    void* library = dlopen(POWERTRAIN_INTERPOSER_PATH, RTLD_NOW | RTLD_LOCAL);
    if (library == nullptr) {
      std::fprintf(stderr, "cannot load %s: %s\n", POWERTRAIN_INTERPOSER_PATH, dlerror());
      return a;
    }
    bool ok = true;
    a.cuda_launch_kernel = symbol<CudaLaunchKernel>(library, "cudaLaunchKernel", &ok);
    a.launch_kernel = symbol<LaunchKernel>(library, "__cudaLaunchKernel", &ok);
    a.push = symbol<PushConfig>(library, "__cudaPushCallConfiguration", &ok);
    a.pop = symbol<PopConfig>(library, "__cudaPopCallConfiguration", &ok);
    a.event_record = symbol<EventRecord>(library, "cudaEventRecord", &ok);
    a.stream_wait_event = symbol<StreamWaitEvent>(library, "cudaStreamWaitEvent", &ok);
    a.malloc = symbol<Malloc>(library, "cudaMalloc", &ok);
    a.free = symbol<Free>(library, "cudaFree", &ok);
    a.get_last_error = symbol<GetLastError>(library, "cudaGetLastError", &ok);
    auto register_fatbin = symbol<RegisterFatBinary>(library, "__cudaRegisterFatBinary", &ok);
    auto register_function = symbol<RegisterFunction>(library, "__cudaRegisterFunction", &ok);
    auto get_kernel = symbol<GetKernel>(library, "__cudaGetKernel", &ok);
    auto stream_create = symbol<StreamCreate>(library, "cudaStreamCreate", &ok);
    auto event_create = symbol<EventCreateWithFlags>(library, "cudaEventCreateWithFlags", &ok);
    if (!ok) return a;
    static char fatbin[16] = {};
    void** module = register_fatbin(fatbin);
    static char device_name[] = "_Z11bench_kernelPfi";
    register_function(module, reinterpret_cast<const char*>(&fake_kernel_stub), device_name,
                      device_name, -1, nullptr, nullptr, nullptr, nullptr, nullptr);
    ok = get_kernel(&a.kernel_handle, reinterpret_cast<const void*>(&fake_kernel_stub)) == 0 &&
         stream_create(&a.stream) == 0 && event_create(&a.event, 2 /* DisableTiming */) == 0;
    a.ok = ok;
#endif
    return a;
  }();
  return loaded;
}

bool ready(benchmark::State& state) {
  if (api().ok) return true;
  state.SkipWithError("the interposer library is not built or failed to load");
  return false;
}

void BM_CudaLaunchKernel(benchmark::State& state) {
  if (!ready(state)) return;
  const Api& a = api();
  float* data = nullptr;
  int n = 1 << 20;
  void* args[] = {&data, &n};
  for (auto _ : state) {
    benchmark::DoNotOptimize(a.cuda_launch_kernel(reinterpret_cast<const void*>(&fake_kernel_stub),
                                                  Dim3{4096, 1, 1}, Dim3{256, 1, 1}, args, 0,
                                                  a.stream));
  }
}
BENCHMARK(BM_CudaLaunchKernel);

// What `kernel<<<grid, block, 0, stream>>>(args)` costs with CUDA 13's generated code.
void BM_TripleChevronLaunch(benchmark::State& state) {
  if (!ready(state)) return;
  const Api& a = api();
  float* data = nullptr;
  int n = 1 << 20;
  void* args[] = {&data, &n};
  for (auto _ : state) {
    a.push(Dim3{4096, 1, 1}, Dim3{256, 1, 1}, 0, a.stream);
    Dim3 grid, block;
    size_t shmem = 0;
    Stream stream = nullptr;
    a.pop(&grid, &block, &shmem, &stream);
    benchmark::DoNotOptimize(a.launch_kernel(a.kernel_handle, grid, block, args, shmem, stream));
  }
}
BENCHMARK(BM_TripleChevronLaunch);

void BM_CudaEventRecord(benchmark::State& state) {
  if (!ready(state)) return;
  const Api& a = api();
  for (auto _ : state) benchmark::DoNotOptimize(a.event_record(a.event, a.stream));
}
BENCHMARK(BM_CudaEventRecord);

void BM_CudaStreamWaitEvent(benchmark::State& state) {
  if (!ready(state)) return;
  const Api& a = api();
  for (auto _ : state) benchmark::DoNotOptimize(a.stream_wait_event(a.stream, a.event, 0));
}
BENCHMARK(BM_CudaStreamWaitEvent);

// One iteration = cudaMalloc + cudaFree of 4 KiB (two intercepted calls, two records).
void BM_CudaMallocFree(benchmark::State& state) {
  if (!ready(state)) return;
  const Api& a = api();
  for (auto _ : state) {
    void* p = nullptr;
    benchmark::DoNotOptimize(a.malloc(&p, 4096));
    benchmark::DoNotOptimize(a.free(p));
  }
}
BENCHMARK(BM_CudaMallocFree);

// A call that records nothing, for reference.
void BM_CudaGetLastError(benchmark::State& state) {
  if (!ready(state)) return;
  const Api& a = api();
  for (auto _ : state) benchmark::DoNotOptimize(a.get_last_error());
}
BENCHMARK(BM_CudaGetLastError);

}  // namespace

BENCHMARK_MAIN();
