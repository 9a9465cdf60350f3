// EMU_CHECK (emu_check.h) for cuBLAS calls: a failure prints the call, the file:line and
// cuBLAS's status string, and exits non-zero.
#pragma once

#include <cublas_v2.h>

#include "emu_check.h"

#define EMU_CUBLAS_CHECK(call)                                                  \
  do {                                                                          \
    const cublasStatus_t emu_cublas_status = (call);                            \
    if (emu_cublas_status != CUBLAS_STATUS_SUCCESS) {                           \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, \
                   cublasGetStatusString(emu_cublas_status));                   \
      std::exit(1);                                                             \
    }                                                                           \
  } while (0)
