// Shared by the cuDNN test programs: every cuDNN call is checked (DNN_CHECK exits non-zero with
// the call, its file:line and cuDNN's status string).
#pragma once

#include <cudnn.h>

#include "emu_check.h"

#define DNN_CHECK(call)                                                         \
  do {                                                                          \
    const cudnnStatus_t dnn_status = (call);                                    \
    if (dnn_status != CUDNN_STATUS_SUCCESS) {                                   \
      std::fprintf(stderr, "%s:%d: %s failed: %s\n", __FILE__, __LINE__, #call, \
                   cudnnGetErrorString(dnn_status));                            \
      std::exit(1);                                                             \
    }                                                                           \
  } while (0)
