// SPARSE_CHECK for cuSPARSE calls, in the style of EMU_CHECK (emu_check.h): a failure prints the
// call, the file:line and cuSPARSE's status string, and exits non-zero. Define
// DISABLE_CUSPARSE_DEPRECATED before including it where a program uses the deprecated API.
#pragma once

#include <cusparse.h>

#include "emu_check.h"

#define SPARSE_CHECK(call)                                                      \
  do {                                                                          \
    const cusparseStatus_t sparse_status = (call);                              \
    if (sparse_status != CUSPARSE_STATUS_SUCCESS) {                             \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, \
                   cusparseGetErrorString(sparse_status));                      \
      std::exit(1);                                                             \
    }                                                                           \
  } while (0)
