// A fake CUDA driver (libcuda) for the Kareus GPU-profiler tests (built as libcuda-fake.so). It
// implements the calls the profiler makes, runs nothing, and logs launches, event records and
// waits per stream (powertrain_fake_cuda_log). cuCtxSynchronize sleeps
// POWERTRAIN_FAKE_CUDA_SYNC_US microseconds (default 1000) so a measurement window holds a bounded
// number of runs. POWERTRAIN_FAKE_CUDA_FAIL=<call> makes that call fail (cuModuleLoadData with
// CUDA_ERROR_INVALID_PTX = 218, others with CUDA_ERROR_UNKNOWN = 999).
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <thread>

namespace {

struct Object {
  int id;
};

struct State {
  std::mutex mutex;
  std::string log;
  std::string ptx;
  std::map<const void*, std::string> functions;
  std::map<const void*, int> ids;  // streams and events
  int next_id = 1;
  unsigned long long next_ptr = 0x10000;
};

State& state() {
  static State s;
  return s;
}

Object g_context{0}, g_module{0};
Object g_functions[8];
int g_function_count = 0;

int fail(const char* call) {
  const char* which = std::getenv("POWERTRAIN_FAKE_CUDA_FAIL");
  if (which == nullptr || std::strcmp(which, call) != 0) return 0;
  return std::strcmp(call, "cuModuleLoadData") == 0 ? 218 : 999;
}

}  // namespace

extern "C" {

int cuInit(unsigned) { return fail("cuInit"); }
int cuDeviceGet(int* device, int ordinal) {
  if (ordinal != 0) return 101;  // CUDA_ERROR_INVALID_DEVICE
  *device = 0;
  return fail("cuDeviceGet");
}
int cuDeviceGetAttribute(int* value, int attribute, int) {
  switch (attribute) {
    case 16:
      *value = 108;
      break;  // SMs (A100)
    case 81:
      *value = 167936;
      break;  // shared memory per SM
    case 97:
      *value = 166912;
      break;  // per block, opt-in
    default:
      *value = 0;
  }
  return fail("cuDeviceGetAttribute");
}
int cuDeviceGetName(char* name, int size, int) {
  std::strncpy(name, "Fake A100", static_cast<size_t>(size));
  return fail("cuDeviceGetName");
}
int cuDevicePrimaryCtxRetain(void** context, int) {
  *context = &g_context;
  return fail("cuDevicePrimaryCtxRetain");
}
int cuDevicePrimaryCtxRelease_v2(int) { return 0; }
int cuCtxSetCurrent(void*) { return fail("cuCtxSetCurrent"); }
int cuCtxSynchronize() {
  const char* us = std::getenv("POWERTRAIN_FAKE_CUDA_SYNC_US");
  std::this_thread::sleep_for(std::chrono::microseconds(us != nullptr ? std::atol(us) : 1000));
  return fail("cuCtxSynchronize");
}
int cuModuleLoadData(void** module, const void* image) {
  if (int e = fail("cuModuleLoadData")) return e;
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.ptx = static_cast<const char*>(image);
  *module = &g_module;
  return 0;
}
int cuModuleUnload(void*) { return 0; }
int cuModuleGetFunction(void** function, void*, const char* name) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (s.ptx.find(std::string(".entry ") + name + "(") == std::string::npos)
    return 500;  // NOT_FOUND
  for (const auto& [ptr, fn] : s.functions)
    if (fn == name) {
      *function = const_cast<void*>(ptr);
      return 0;
    }
  if (g_function_count >= 8) return 2;
  Object* f = &g_functions[g_function_count++];
  s.functions[f] = name;
  *function = f;
  return fail("cuModuleGetFunction");
}
int cuFuncSetAttribute(void*, int, int) { return fail("cuFuncSetAttribute"); }
int cuMemAlloc_v2(unsigned long long* ptr, size_t bytes) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  *ptr = s.next_ptr;
  s.next_ptr += (bytes + 255) / 256 * 256;
  return fail("cuMemAlloc_v2");
}
int cuMemFree_v2(unsigned long long) { return 0; }
static int create(void** object, const char* call) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  auto* o = new Object{s.next_id++};
  s.ids[o] = o->id;
  *object = o;
  return fail(call);
}
static int destroy(void* object) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (s.ids.erase(object) == 0) return 400;  // INVALID_HANDLE
  delete static_cast<Object*>(object);
  return 0;
}
int cuStreamCreate(void** stream, unsigned) { return create(stream, "cuStreamCreate"); }
int cuStreamDestroy_v2(void* stream) { return destroy(stream); }
int cuEventCreate(void** event, unsigned) { return create(event, "cuEventCreate"); }
int cuEventDestroy_v2(void* event) { return destroy(event); }
static int id_of(State& s, const void* o) {
  auto it = s.ids.find(o);
  return it == s.ids.end() ? -1 : it->second;
}
int cuEventRecord(void* event, void* stream) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.log += "record event " + std::to_string(id_of(s, event)) + " stream " +
           std::to_string(id_of(s, stream)) + "\n";
  return fail("cuEventRecord");
}
int cuStreamWaitEvent(void* stream, void* event, unsigned) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.log += "wait stream " + std::to_string(id_of(s, stream)) + " event " +
           std::to_string(id_of(s, event)) + "\n";
  return fail("cuStreamWaitEvent");
}
int cuLaunchKernel(void* function, unsigned gx, unsigned, unsigned, unsigned bx, unsigned, unsigned,
                   unsigned shared, void* stream, void** params, void**) {
  if (int e = fail("cuLaunchKernel")) return e;
  State& s = state();
  std::lock_guard lock(s.mutex);
  auto fn = s.functions.find(function);
  if (fn == s.functions.end() || params == nullptr) return 400;
  s.log += "launch " + fn->second + " grid " + std::to_string(gx) + " block " + std::to_string(bx) +
           " shared " + std::to_string(shared) + " stream " + std::to_string(id_of(s, stream));
  if (fn->second == "kareus_fma") {
    s.log += " iters " + std::to_string(*static_cast<int*>(params[1]));
  } else {
    s.log += " n " + std::to_string(*static_cast<long long*>(params[2])) + " passes " +
             std::to_string(*static_cast<int*>(params[3]));
  }
  s.log += "\n";
  return 0;
}
int cuGetErrorName(int error, const char** name) {
  switch (error) {
    case 218:
      *name = "CUDA_ERROR_INVALID_PTX";
      return 0;
    case 999:
      *name = "CUDA_ERROR_UNKNOWN";
      return 0;
    case 500:
      *name = "CUDA_ERROR_NOT_FOUND";
      return 0;
    default:
      *name = nullptr;
      return 1;
  }
}

size_t powertrain_fake_cuda_log(char* buffer, size_t size) {
  State& s = state();
  std::lock_guard lock(s.mutex);
  if (buffer != nullptr && size > 0) {
    const size_t n = std::min(size - 1, s.log.size());
    std::memcpy(buffer, s.log.data(), n);
    buffer[n] = '\0';
  }
  return s.log.size();
}
void powertrain_fake_cuda_clear_log() {
  State& s = state();
  std::lock_guard lock(s.mutex);
  s.log.clear();
}

}  // extern "C"
