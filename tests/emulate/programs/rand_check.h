// RAND_CHECK for cuRAND calls, in the style of EMU_CHECK (emu_check.h): a failure prints the call,
// the file:line and the curandStatus_t, and exits non-zero.
#pragma once

#include <curand.h>

#include "emu_check.h"

#define RAND_CHECK(call)                                                        \
  do {                                                                          \
    const curandStatus_t rand_status = (call);                                  \
    if (rand_status != CURAND_STATUS_SUCCESS) {                                 \
      std::fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, \
                   static_cast<int>(rand_status));                              \
      std::exit(1);                                                             \
    }                                                                           \
  } while (0)
