// Reading trace files: whole files into a padded buffer, and gzip (RFC 1952) decompression with a
// size cap and errors that name the file.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "core/result.h"
#include "trace/byte_buffer.h"

namespace powertrain::trace {

/// True when `bytes` starts with the gzip magic 1f 8b.
bool is_gzip(std::string_view bytes);

/// Reads the whole file at `path` into a padded buffer. Errors: the file cannot be opened or read
/// (with the OS reason), or it is larger than `max_bytes`. O(file size).
core::Result<PaddedBuffer> read_file_padded(const std::string& path, std::size_t max_bytes);

/// Inflates gzip data (one or more concatenated members, as `gzip` writes and `cat a.gz b.gz`
/// makes) into a padded buffer. `source` names the input in errors. Errors: corrupt data (with
/// the compressed byte offset and zlib's reason, e.g. a CRC mismatch), a truncated stream (input
/// ends before the gzip trailer), trailing non-gzip bytes, or output beyond `max_output_bytes`.
/// O(input + output).
core::Result<PaddedBuffer> gunzip(std::string_view compressed, const std::string& source,
                                  std::size_t max_output_bytes);

}  // namespace powertrain::trace
