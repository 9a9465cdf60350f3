// Kernel parameter layouts (cudaFuncGetParamInfo, cuFuncGetParamInfo, cuKernelGetParamInfo):
// this program's own kernel from its fat binary (the cubin's parameter attributes), a PTX module's
// kernel from its `.param` list, and the same PTX through a library. The layouts are the ones the
// CUDA ABI gives: each parameter at the next multiple of its alignment.
#include <cuda.h>
#include <cuda_runtime.h>

#include <cstdio>

#include "emu_check.h"
#include "emu_driver_check.h"

struct Twelve {
  char bytes[12];
};

__global__ void mixed(int count, double* out, Twelve tag, char last) {
  if (count > 0) out[0] = tag.bytes[0] + last;
}

__global__ void no_parameters() {}

namespace {

const char* kPtx = R"(
.version 8.0
.target sm_90
.address_size 64

.visible .entry scale(
  .param .u64 .ptr .global .align 1 scale_param_0,
  .param .f32 scale_param_1,
  .param .align 8 .b8 scale_param_2[24],
  .param .u16 scale_param_3
)
{
  ret;
}
)";

int checks = 0;

void expect_slot(const char* api, size_t index, size_t got_offset, size_t got_size, size_t offset,
                 size_t size) {
  if (got_offset != offset || got_size != size) {
    std::fprintf(stderr, "%s parameter %zu: offset %zu size %zu, expected %zu and %zu\n", api,
                 index, got_offset, got_size, offset, size);
    std::exit(1);
  }
  ++checks;
}

void expect_runtime(const void* func, size_t index, size_t offset, size_t size) {
  size_t got_offset = 99, got_size = 99;
  EMU_CHECK(cudaFuncGetParamInfo(func, index, &got_offset, &got_size));
  expect_slot("cudaFuncGetParamInfo", index, got_offset, got_size, offset, size);
}

void expect_driver(CUfunction function, size_t index, size_t offset, size_t size) {
  size_t got_offset = 99, got_size = 99;
  CU_CHECK(cuFuncGetParamInfo(function, index, &got_offset, &got_size));
  expect_slot("cuFuncGetParamInfo", index, got_offset, got_size, offset, size);
}

}  // namespace

int main() {
  // int at 0, double* at 8, the 12-byte struct at 16, char at 28.
  const void* kernel = reinterpret_cast<const void*>(mixed);
  expect_runtime(kernel, 0, 0, 4);
  expect_runtime(kernel, 1, 8, 8);
  expect_runtime(kernel, 2, 16, 12);
  expect_runtime(kernel, 3, 28, 1);
  size_t offset = 0, size = 0;
  EMU_EXPECT_ERROR(cudaFuncGetParamInfo(kernel, 4, &offset, &size), cudaErrorInvalidValue);
  EMU_EXPECT_ERROR(
      cudaFuncGetParamInfo(reinterpret_cast<const void*>(no_parameters), 0, &offset, &size),
      cudaErrorInvalidValue);
  cudaGetLastError();
  checks += 2;

  // The PTX module's kernel: pointer at 0, float at 8, the 24-byte array aligned to 8 at 16, the
  // 16-bit value at 40.
  CUdevice device;
  current_primary_context(&device);
  CUmodule module;
  CU_CHECK(cuModuleLoadData(&module, kPtx));
  CUfunction scale;
  CU_CHECK(cuModuleGetFunction(&scale, module, "scale"));
  expect_driver(scale, 0, 0, 8);
  expect_driver(scale, 1, 8, 4);
  expect_driver(scale, 2, 16, 24);
  expect_driver(scale, 3, 40, 2);
  EMU_REQUIRE(cuFuncGetParamInfo(scale, 4, &offset, &size) == CUDA_ERROR_INVALID_VALUE);
  ++checks;

  // The same kernel through a library (CUkernel).
  CUlibrary library;
  CU_CHECK(cuLibraryLoadData(&library, kPtx, nullptr, nullptr, 0, nullptr, nullptr, 0));
  CUkernel library_kernel;
  CU_CHECK(cuLibraryGetKernel(&library_kernel, library, "scale"));
  CU_CHECK(cuKernelGetParamInfo(library_kernel, 2, &offset, &size));
  EMU_REQUIRE(offset == 16 && size == 24);
  ++checks;

  CU_CHECK(cuLibraryUnload(library));
  CU_CHECK(cuModuleUnload(module));
  CU_CHECK(cuDevicePrimaryCtxRelease(device));
  std::printf("driver_param_info: %d checks passed\n", checks);
  return 0;
}
