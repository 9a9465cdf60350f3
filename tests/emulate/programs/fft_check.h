// FFT_CHECK for cuFFT calls, in the style of EMU_CHECK (emu_check.h): a failure prints the call,
// the file:line and the cufftResult, and exits non-zero.
#pragma once

#include <cufft.h>

#include "emu_check.h"

#define FFT_CHECK(call)                                                         \
  do {                                                                          \
    const cufftResult fft_status = (call);                                      \
    if (fft_status != CUFFT_SUCCESS) {                                          \
      std::fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, \
                   static_cast<int>(fft_status));                               \
      std::exit(1);                                                             \
    }                                                                           \
  } while (0)
