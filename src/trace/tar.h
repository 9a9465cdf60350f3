// A minimal reader of tar archives (POSIX ustar, GNU and pax long names) held in memory: enough to
// take the per-rank JSON files out of a gunzipped trace tarball without unpacking it to disk.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace powertrain::trace {

/// A regular file inside an archive: its path and where its bytes lie in the archive.
struct TarMember {
  std::string name;
  std::size_t offset = 0;  // of the first data byte, from the start of the archive
  std::size_t size = 0;    // bytes
};

/// True when `bytes` starts with a tar header: "ustar" magic at byte 257 and a valid checksum.
bool is_tar(std::string_view bytes);

/// Lists the regular files of a tar archive, in archive order. Directories, links and pax global
/// headers are skipped; GNU ('L') and pax ('x' path=) long names apply to the next member.
/// `source` names the archive in errors. Errors: a header with a bad checksum or size field, or a
/// member that runs past the end of the data (truncated archive), each with its byte offset.
/// At most `max_members` members. O(number of headers).
core::Result<std::vector<TarMember>> list_tar_members(std::string_view archive,
                                                      const std::string& source,
                                                      std::size_t max_members = 1 << 20);

}  // namespace powertrain::trace
