// The one test object compiled with the build's absolute paths (see test_paths.h).
#include "test_paths.h"

namespace powertrain_test_paths {
const char* const kSourceDir = PT_PATH_SOURCE_DIR;
const char* const kCliPath = PT_PATH_CLI;
const char* const kFakeNvmlPath = PT_PATH_FAKE_NVML;
const char* const kClientLibraryPath = PT_PATH_CLIENT_LIBRARY;
const char* const kFakeCudaPath = PT_PATH_FAKE_CUDA;
#ifdef POWERTRAIN_HAVE_EMULATION
const char* const kInterposerPath = PT_PATH_INTERPOSER;
const char* const kCudartDir = PT_PATH_CUDART_DIR;
const char* const kEmuProgramDir = PT_PATH_EMU_PROGRAM_DIR;
const char* const kRealCudart = PT_PATH_REAL_CUDART;
#endif
}  // namespace powertrain_test_paths
