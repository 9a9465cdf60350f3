// CU_CHECK for driver API calls, in the style of EMU_CHECK (emu_check.h): a failure prints the
// call, the file:line and the driver's error name and number, and exits non-zero.
#pragma once

#include <cuda.h>

#include "emu_check.h"

#define CU_CHECK(call)                                                                   \
  do {                                                                                   \
    const CUresult cu_check_error = (call);                                              \
    if (cu_check_error != CUDA_SUCCESS) {                                                \
      const char* cu_check_name = nullptr;                                               \
      cuGetErrorName(cu_check_error, &cu_check_name);                                    \
      std::fprintf(stderr, "%s:%d: %s failed: %s (%d)\n", __FILE__, __LINE__, #call,     \
                   cu_check_name != nullptr ? cu_check_name : "?", int(cu_check_error)); \
      std::exit(1);                                                                      \
    }                                                                                    \
  } while (0)

// cuInit, then device 0's primary context retained and made current; returns it (and the device,
// for cuDevicePrimaryCtxRelease).
inline CUcontext current_primary_context(CUdevice* device) {
  CU_CHECK(cuInit(0));
  CU_CHECK(cuDeviceGet(device, 0));
  CUcontext context;
  CU_CHECK(cuDevicePrimaryCtxRetain(&context, *device));
  CU_CHECK(cuCtxSetCurrent(context));
  return context;
}
