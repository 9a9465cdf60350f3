// Shared by the emulation test programs: every CUDA call is checked, and a failure prints the
// call, the file:line and the runtime's error string, and exits non-zero.
#pragma once

#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#define EMU_CHECK(call)                                                                     \
  do {                                                                                      \
    const cudaError_t emu_check_error = (call);                                             \
    if (emu_check_error != cudaSuccess) {                                                   \
      std::fprintf(stderr, "%s:%d: %s failed: %s (%d)\n", __FILE__, __LINE__, #call,        \
                   cudaGetErrorString(emu_check_error), static_cast<int>(emu_check_error)); \
      std::exit(1);                                                                         \
    }                                                                                       \
  } while (0)

// Checks that `call` fails with exactly `expected`.
#define EMU_EXPECT_ERROR(call, expected)                                                           \
  do {                                                                                             \
    const cudaError_t emu_check_error = (call);                                                    \
    if (emu_check_error != (expected)) {                                                           \
      std::fprintf(stderr, "%s:%d: %s returned %s (%d), expected %s\n", __FILE__, __LINE__, #call, \
                   cudaGetErrorName(emu_check_error), static_cast<int>(emu_check_error),           \
                   cudaGetErrorName(expected));                                                    \
      std::exit(1);                                                                                \
    }                                                                                              \
  } while (0)

#define EMU_REQUIRE(condition)                                                                 \
  do {                                                                                         \
    if (!(condition)) {                                                                        \
      std::fprintf(stderr, "%s:%d: requirement failed: %s\n", __FILE__, __LINE__, #condition); \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)
