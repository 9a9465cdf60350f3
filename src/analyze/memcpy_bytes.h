// Memcpy byte counts (args.bytes) that the trace reader does not keep: a second, light pass over
// the same document that reads only gpu_memcpy events' correlation and bytes.
#pragma once

#include <cstddef>
#include <string>

#include "analyze/analyze.h"
#include "core/result.h"

namespace powertrain::analyze {

/// Reads the memcpy sizes of the trace named by `source` (a RankTrace::source: a path, plain JSON
/// or gzip, or "archive:member" for a tar / tar.gz member). Documents larger than `max_bytes`
/// after inflation are refused (the pass indexes the whole document). Errors: unreadable input,
/// invalid JSON, no traceEvents.
core::Result<MemcpyBytes> read_memcpy_bytes(const std::string& source,
                                            std::size_t max_bytes = std::size_t{512} << 20);

/// The same from a JSON document in memory.
core::Result<MemcpyBytes> parse_memcpy_bytes(std::string_view json, const std::string& source);

}  // namespace powertrain::analyze
