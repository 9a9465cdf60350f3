// Kernels compiled at run time, as CuPy, Numba and NVIDIA's *_nvrtc and ptxjit samples make them:
// NVRTC compiles a source (a templated kernel looked up by its lowered name, a __device__ array)
// to PTX and to a cubin, each loaded with cuModuleLoadData[Ex]; the JIT linker (cuLink*) joins a
// hand-written PTX and the NVRTC cubin into one image, refusing a missing file and text that is
// not PTX; the linked module's kernels are enumerated, traced back to their module and launched;
// a library's kernels and globals are found through the cuLibrary* calls.
// Valid CUDA: the same binary runs on a real GPU.
#include <cuda.h>
#include <nvrtc.h>

#include <cstring>
#include <set>
#include <string>
#include <vector>

#include "emu_driver_check.h"

#define NVRTC_CHECK(call)                                                       \
  do {                                                                          \
    const nvrtcResult nvrtc_check_result = (call);                              \
    if (nvrtc_check_result != NVRTC_SUCCESS) {                                  \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, \
                   nvrtcGetErrorString(nvrtc_check_result));                    \
      std::exit(1);                                                             \
    }                                                                           \
  } while (0)

const char* kSource = R"(
__device__ float bias[32];
extern "C" __global__ void add_bias(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += bias[i % 32];
}
template <typename T>
__global__ void scale(T* x, T factor, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= factor;
}
)";

// One hand-written PTX kernel for the link, with a global of its own.
const char* kLinkPtx = R"(
.version 8.0
.target sm_90
.address_size 64

.visible .global .align 8 .b8 histogram[256];

.visible .entry count_bytes(
	.param .u64 count_bytes_param_0,
	.param .u32 count_bytes_param_1
)
{
	ret;
}
)";

// Compiles kSource for the device's architecture: PTX (compute_XY) or a cubin (sm_XY). Returns
// the image and sets `lowered` to scale<float>'s mangled name.
std::vector<char> compile(int major, int minor, bool cubin, std::string* lowered) {
  nvrtcProgram program;
  NVRTC_CHECK(nvrtcCreateProgram(&program, kSource, "jit_kernels.cu", 0, nullptr, nullptr));
  NVRTC_CHECK(nvrtcAddNameExpression(program, "scale<float>"));
  const std::string arch = std::string("--gpu-architecture=") + (cubin ? "sm_" : "compute_") +
                           std::to_string(major) + std::to_string(minor);
  const char* options[] = {arch.c_str(), "--std=c++17"};
  const nvrtcResult compiled = nvrtcCompileProgram(program, 2, options);
  if (compiled != NVRTC_SUCCESS) {
    size_t log_size = 0;
    nvrtcGetProgramLogSize(program, &log_size);
    std::string log(log_size, '\0');
    nvrtcGetProgramLog(program, log.data());
    std::fprintf(stderr, "driver_jit: NVRTC failed: %s\n", log.c_str());
    std::exit(1);
  }
  const char* name = nullptr;
  NVRTC_CHECK(nvrtcGetLoweredName(program, "scale<float>", &name));
  *lowered = name;
  size_t size = 0;
  std::vector<char> image;
  if (cubin) {
    NVRTC_CHECK(nvrtcGetCUBINSize(program, &size));
    image.resize(size);
    NVRTC_CHECK(nvrtcGetCUBIN(program, image.data()));
  } else {
    NVRTC_CHECK(nvrtcGetPTXSize(program, &size));
    image.resize(size);
    NVRTC_CHECK(nvrtcGetPTX(program, image.data()));
  }
  NVRTC_CHECK(nvrtcDestroyProgram(&program));
  return image;
}

void launch(CUfunction f, CUdeviceptr x, int n) {
  float factor = 2.0f;
  void* scale_args[] = {&x, &factor, &n};
  void* bias_args[] = {&x, &n};
  const char* name = nullptr;
  CU_CHECK(cuFuncGetName(&name, f));
  void** args = std::strcmp(name, "add_bias") == 0 ? bias_args : scale_args;
  CU_CHECK(cuLaunchKernel(f, (n + 255) / 256, 1, 1, 256, 1, 1, 0, nullptr, args, nullptr));
}

int main() {
  CU_CHECK(cuInit(0));
  CUdevice device;
  CU_CHECK(cuDeviceGet(&device, 0));
  int major = 0, minor = 0;
  CU_CHECK(cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, device));
  CU_CHECK(cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, device));
  CUcontext ctx;
  CU_CHECK(cuDevicePrimaryCtxRetain(&ctx, device));
  CU_CHECK(cuCtxSetCurrent(ctx));
  const int n = 4096;
  CUdeviceptr x;
  CU_CHECK(cuMemAlloc(&x, n * sizeof(float)));
  CU_CHECK(cuMemsetD32(x, 0, n));

  // 1. NVRTC → PTX, loaded as it is; the templated kernel by its lowered name.
  std::string lowered;
  const std::vector<char> ptx = compile(major, minor, false, &lowered);
  CUmodule ptx_module;
  CU_CHECK(cuModuleLoadData(&ptx_module, ptx.data()));
  CUfunction add_bias, scale;
  CU_CHECK(cuModuleGetFunction(&add_bias, ptx_module, "add_bias"));
  CU_CHECK(cuModuleGetFunction(&scale, ptx_module, lowered.c_str()));
  CUdeviceptr bias;
  size_t bias_bytes = 0;
  CU_CHECK(cuModuleGetGlobal(&bias, &bias_bytes, ptx_module, "bias"));
  EMU_REQUIRE(bias_bytes == 32 * sizeof(float));
  const float ones[32] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                          1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
  CU_CHECK(cuMemcpyHtoD(bias, ones, sizeof ones));
  launch(add_bias, x, n);
  launch(scale, x, n);

  // 2. NVRTC → cubin, loaded with JIT log options (nothing to JIT for a cubin).
  std::string cubin_lowered;
  const std::vector<char> cubin = compile(major, minor, true, &cubin_lowered);
  EMU_REQUIRE(cubin_lowered == lowered);
  char info[256] = "untouched";
  CUjit_option load_options[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES};
  void* load_values[] = {info, reinterpret_cast<void*>(sizeof info)};
  CUmodule cubin_module;
  CU_CHECK(cuModuleLoadDataEx(&cubin_module, cubin.data(), 2, load_options, load_values));
  CUfunction cubin_scale;
  CU_CHECK(cuModuleGetFunction(&cubin_scale, cubin_module, lowered.c_str()));
  launch(cubin_scale, x, n);

  // 3. The JIT linker: the hand-written PTX and the NVRTC cubin make one module.
  char link_info[512], link_error[512];
  float wall_ms = -1.0f;
  CUjit_option link_options[] = {CU_JIT_INFO_LOG_BUFFER, CU_JIT_INFO_LOG_BUFFER_SIZE_BYTES,
                                 CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES,
                                 CU_JIT_WALL_TIME};
  void* link_values[] = {link_info, reinterpret_cast<void*>(sizeof link_info), link_error,
                         reinterpret_cast<void*>(sizeof link_error), nullptr};
  CUlinkState link;
  CU_CHECK(cuLinkCreate(5, link_options, link_values, &link));
  CU_CHECK(cuLinkAddData(link, CU_JIT_INPUT_PTX, const_cast<char*>(kLinkPtx),
                         std::strlen(kLinkPtx) + 1, "count_bytes.ptx", 0, nullptr, nullptr));
  CU_CHECK(cuLinkAddData(link, CU_JIT_INPUT_CUBIN, const_cast<char*>(cubin.data()), cubin.size(),
                         "jit_kernels.cubin", 0, nullptr, nullptr));
  EMU_REQUIRE(cuLinkAddFile(link, CU_JIT_INPUT_PTX, "/nonexistent/kernels.ptx", 0, nullptr,
                            nullptr) == CUDA_ERROR_FILE_NOT_FOUND);
  char not_ptx[] = "this is not PTX";
  EMU_REQUIRE(cuLinkAddData(link, CU_JIT_INPUT_PTX, not_ptx, sizeof not_ptx, "bad.ptx", 0, nullptr,
                            nullptr) == CUDA_ERROR_INVALID_PTX);
  void* linked = nullptr;
  size_t linked_bytes = 0;
  CU_CHECK(cuLinkComplete(link, &linked, &linked_bytes));
  EMU_REQUIRE(linked != nullptr && linked_bytes > 0);
  std::memcpy(&wall_ms, &link_values[4], sizeof wall_ms);
  EMU_REQUIRE(wall_ms >= 0.0f);
  CUmodule linked_module;
  CU_CHECK(cuModuleLoadData(&linked_module, linked));
  CU_CHECK(cuLinkDestroy(link));  // the loaded module outlives the link's image
  unsigned count = 0;
  CU_CHECK(cuModuleGetFunctionCount(&count, linked_module));
  EMU_REQUIRE(count == 3);
  CUfunction functions[3];
  CU_CHECK(cuModuleEnumerateFunctions(functions, count, linked_module));
  std::set<std::string> names;
  for (CUfunction f : functions) {
    const char* name = nullptr;
    CU_CHECK(cuFuncGetName(&name, f));
    names.insert(name);
    CUmodule owner = nullptr;
    CU_CHECK(cuFuncGetModule(&owner, f));
    EMU_REQUIRE(owner == linked_module);
    CUfunctionLoadingState loading;
    CU_CHECK(cuFuncIsLoaded(&loading, f));
    EMU_REQUIRE(loading == CU_FUNCTION_LOADING_STATE_LOADED);
  }
  EMU_REQUIRE(names == (std::set<std::string>{"add_bias", "count_bytes", lowered}));
  CUdeviceptr histogram;
  size_t histogram_bytes = 0;
  CU_CHECK(cuModuleGetGlobal(&histogram, &histogram_bytes, linked_module, "histogram"));
  EMU_REQUIRE(histogram_bytes == 256);
  CUfunction count_bytes;
  CU_CHECK(cuModuleGetFunction(&count_bytes, linked_module, "count_bytes"));
  int length = n;
  void* count_args[] = {&x, &length};
  CU_CHECK(cuLaunchKernel(count_bytes, 64, 1, 1, 128, 1, 1, 0, nullptr, count_args, nullptr));

  // 4. The same PTX as a library: kernels enumerated, each knows its library.
  CUlibrary library;
  CU_CHECK(cuLibraryLoadData(&library, ptx.data(), nullptr, nullptr, 0, nullptr, nullptr, 0));
  unsigned kernel_count = 0;
  CU_CHECK(cuLibraryGetKernelCount(&kernel_count, library));
  EMU_REQUIRE(kernel_count == 2);
  CUkernel kernels[2];
  CU_CHECK(cuLibraryEnumerateKernels(kernels, kernel_count, library));
  for (CUkernel k : kernels) {
    CUlibrary owner = nullptr;
    CU_CHECK(cuKernelGetLibrary(&owner, k));
    EMU_REQUIRE(owner == library);
  }
  CUdeviceptr library_bias;
  size_t library_bias_bytes = 0;
  CU_CHECK(cuLibraryGetGlobal(&library_bias, &library_bias_bytes, library, "bias"));
  EMU_REQUIRE(library_bias_bytes == 32 * sizeof(float));

  CU_CHECK(cuCtxSynchronize());
  CU_CHECK(cuModuleUnload(linked_module));
  CU_CHECK(cuModuleUnload(cubin_module));
  CU_CHECK(cuModuleUnload(ptx_module));
  CU_CHECK(cuLibraryUnload(library));
  CU_CHECK(cuMemFree(x));
  std::printf("driver_jit: %s compiled to PTX and sm_%d%d, linked %zu bytes\n", lowered.c_str(),
              major, minor, linked_bytes);
  return 0;
}
