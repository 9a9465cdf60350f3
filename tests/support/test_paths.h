// Build paths the tests need (source tree, CLI binary, fake libraries, emulation programs).
// Force-included into every test file. The values live in one object (test_paths.cc) so that no
// other test object's compile line carries an absolute path: compiler caches can then share test
// objects between checkouts in different folders.
#pragma once

namespace powertrain_test_paths {
extern const char* const kSourceDir;
extern const char* const kCliPath;
extern const char* const kFakeNvmlPath;
extern const char* const kClientLibraryPath;
extern const char* const kFakeCudaPath;
#ifdef POWERTRAIN_HAVE_EMULATION
extern const char* const kInterposerPath;
extern const char* const kCudartDir;
extern const char* const kEmuProgramDir;
extern const char* const kRealCudart;
#endif
}  // namespace powertrain_test_paths

#define POWERTRAIN_SOURCE_DIR (::powertrain_test_paths::kSourceDir)
#define POWERTRAIN_CLI_PATH (::powertrain_test_paths::kCliPath)
#define POWERTRAIN_FAKE_NVML_PATH (::powertrain_test_paths::kFakeNvmlPath)
#define POWERTRAIN_CLIENT_LIBRARY_PATH (::powertrain_test_paths::kClientLibraryPath)
#define POWERTRAIN_FAKE_CUDA_PATH (::powertrain_test_paths::kFakeCudaPath)
#ifdef POWERTRAIN_HAVE_EMULATION
#define POWERTRAIN_INTERPOSER_PATH (::powertrain_test_paths::kInterposerPath)
#define POWERTRAIN_CUDART_DIR (::powertrain_test_paths::kCudartDir)
#define POWERTRAIN_EMU_PROGRAM_DIR (::powertrain_test_paths::kEmuProgramDir)
#define POWERTRAIN_REAL_CUDART (::powertrain_test_paths::kRealCudart)
#endif
