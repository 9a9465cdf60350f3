// Calls the runtime itself (emulated: it links the shared runtime) and then the plugin with its
// own static runtime (not emulated: its call fails and the emulator names the plugin).
#include <cuda_runtime.h>

#include <cstdio>

extern "C" int static_plugin_allocate(void);

int main() {
  int devices = 0;
  const cudaError_t own = cudaGetDeviceCount(&devices);
  std::printf("static_plugin_host: own runtime %d, %d device(s)\n", static_cast<int>(own), devices);
  std::printf("static_plugin_host: plugin cudaMalloc -> %d\n", static_plugin_allocate());
  return 0;
}
