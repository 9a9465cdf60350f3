// How a program links the CUDA runtime, read from its ELF file: programs built with
// `-cudart static` carry the runtime inside the executable, where LD_PRELOAD cannot replace it, so
// the launcher refuses them with an explanation instead of running them on the real runtime.
#pragma once

#include <string>

#include "core/result.h"

namespace powertrain::emulate {

enum class CudartLinkage {
  kNotElf,  // a script or another format: nothing to check
  kNone,    // an ELF file that neither needs nor contains the CUDA runtime
  kShared,  // DT_NEEDED libcudart.so.* (or imports its symbols from a library that does)
  kStatic,  // the runtime is linked in (defined cudart symbols, or its strings without imports)
};

struct CudartInspection {
  CudartLinkage linkage = CudartLinkage::kNotElf;
  std::string evidence;  // e.g. "DT_NEEDED libcudart.so.13" or "defines cudaLaunchKernel"
};

/// Reads the ELF headers, the dynamic section and the symbol tables of `path` (64-bit
/// little-endian ELF; others are kNotElf). Errors: the file cannot be read. Malformed ELF files
/// are kNotElf, never a crash. O(file size).
core::Result<CudartInspection> inspect_cudart(const std::string& path);

/// The one-line explanation the launcher gives for a statically linked runtime.
std::string static_cudart_message(const std::string& program, const CudartInspection& found);

}  // namespace powertrain::emulate
