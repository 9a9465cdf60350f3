// File reading and gzip inflation (zlib) for trace files.
#include "trace/gzip.h"

#include "core/input_limits.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <simdjson.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>

namespace powertrain::trace {

static_assert(PaddedBuffer::kPadding >= simdjson::SIMDJSON_PADDING);

bool is_gzip(std::string_view bytes) {
  return bytes.size() >= 2 && static_cast<unsigned char>(bytes[0]) == 0x1f &&
         static_cast<unsigned char>(bytes[1]) == 0x8b;
}

namespace {

// Closes the descriptor on every path out of read_file_padded.
struct FileCloser {
  int fd;
  ~FileCloser() { ::close(fd); }
};

std::string os_reason() { return std::strerror(errno); }

}  // namespace

core::Result<PaddedBuffer> read_file_padded(const std::string& path, std::size_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return core::Error{fmt::format("{}: cannot open: {}", path, os_reason())};
  FileCloser closer{fd};
  struct stat info {};
  if (::fstat(fd, &info) != 0) {
    return core::Error{fmt::format("{}: cannot stat: {}", path, os_reason())};
  }
  if (S_ISDIR(info.st_mode)) return core::Error{fmt::format("{}: is a directory", path)};
  // Regular files: read exactly st_size bytes; pipes and the like report 0, so grow as needed.
  std::size_t expected = S_ISREG(info.st_mode) ? static_cast<std::size_t>(info.st_size) : 0;
  if (expected > max_bytes) {
    return core::Error{fmt::format("{}: file is {} bytes, {}", path, expected,
                                   core::limit_text(max_bytes))};
  }
  // Large regular files are mapped: no copy, no zero-filling of fresh pages.
  if (S_ISREG(info.st_mode) && expected >= (std::size_t{1} << 20)) {
    return PaddedBuffer::map_file(fd, expected, path);
  }
  PaddedBuffer buffer;
  // One byte more than expected, so that reading up to end of file never needs to grow.
  buffer.reserve(std::max<std::size_t>(expected + 1, 1 << 16));
  std::size_t size = 0;
  while (true) {
    if (size == buffer.capacity() - PaddedBuffer::kPadding) {
      if (size > max_bytes) break;
      buffer.reserve(std::min(max_bytes + 1, size + size / 2 + 1));
    }
    const std::size_t room = std::min<std::size_t>(
        buffer.capacity() - PaddedBuffer::kPadding - size, std::size_t{1} << 30);
    const ssize_t got = ::read(fd, buffer.data() + size, room);
    if (got < 0) {
      if (errno == EINTR) continue;
      return core::Error{fmt::format("{}: read failed: {}", path, os_reason())};
    }
    if (got == 0) break;
    // A device or pipe has no size to check first: a stream that starts with a NUL byte is no
    // JSON, gzip or tar (e.g. /dev/zero), so stop before reading it up to the limit.
    if (size == 0 && buffer.data()[0] == '\0') {
      return core::Error{fmt::format("{}: not a JSON, gzip or tar file (starts with a NUL byte)",
                                     path)};
    }
    size += static_cast<std::size_t>(got);
  }
  if (size > max_bytes) {
    return core::Error{fmt::format("{}: file is {}", path, core::limit_text(max_bytes))};
  }
  buffer.set_size(size);
  return buffer;
}

namespace {

// Ends the zlib stream on every path out of gunzip.
struct InflateGuard {
  z_stream* stream;
  ~InflateGuard() { inflateEnd(stream); }
};

// The gzip trailer's ISIZE (uncompressed size mod 2^32) of the last member: a good first guess
// for the output size of the common single-member file under 4 GiB.
std::size_t size_hint(std::string_view compressed) {
  if (compressed.size() < 18) return 0;
  const auto* tail =
      reinterpret_cast<const unsigned char*>(compressed.data() + compressed.size() - 4);
  return static_cast<std::size_t>(tail[0]) | static_cast<std::size_t>(tail[1]) << 8 |
         static_cast<std::size_t>(tail[2]) << 16 | static_cast<std::size_t>(tail[3]) << 24;
}

}  // namespace

core::Result<PaddedBuffer> gunzip(std::string_view compressed, const std::string& source,
                                  std::size_t max_output_bytes) {
  if (!is_gzip(compressed)) return core::Error{fmt::format("{}: not gzip data", source)};
  z_stream stream{};
  if (inflateInit2(&stream, 16 + MAX_WBITS) != Z_OK) {
    return core::Error{fmt::format("{}: cannot initialize zlib", source)};
  }
  InflateGuard guard{&stream};
  PaddedBuffer out;
  // One byte more than the hint: an exact hint then never triggers a needless growth at the end.
  // The hint comes from untrusted bytes: never beyond deflate's maximum ratio (1032:1).
  const std::size_t most =
      compressed.size() > SIZE_MAX / 1032 ? SIZE_MAX : compressed.size() * 1032;
  out.reserve(std::min(
      {max_output_bytes, most, std::max<std::size_t>(size_hint(compressed) + 1, 1 << 16)}));
  std::size_t in_pos = 0;
  std::size_t out_size = 0;
  while (true) {
    if (out_size == out.capacity() - PaddedBuffer::kPadding) {
      if (out_size >= max_output_bytes) {
        return core::Error{fmt::format("{}: gzip data inflates to {}", source,
                                       core::limit_text(max_output_bytes))};
      }
      out.reserve(std::min(max_output_bytes, out_size + out_size / 2 + (1 << 16)));
    }
    // zlib counts in 32-bit unsigned ints: feed inputs and outputs over 4 GiB in pieces.
    const std::size_t in_chunk = std::min<std::size_t>(compressed.size() - in_pos, UINT_MAX);
    const std::size_t out_chunk =
        std::min<std::size_t>(out.capacity() - PaddedBuffer::kPadding - out_size, UINT_MAX);
    stream.next_in =
        reinterpret_cast<Bytef*>(const_cast<char*>(compressed.data() + in_pos));  // zlib API
    stream.avail_in = static_cast<uInt>(in_chunk);
    stream.next_out = reinterpret_cast<Bytef*>(out.data() + out_size);
    stream.avail_out = static_cast<uInt>(out_chunk);
    const int status = inflate(&stream, Z_NO_FLUSH);
    in_pos += in_chunk - stream.avail_in;
    out_size += out_chunk - stream.avail_out;
    if (status == Z_STREAM_END) {
      if (in_pos == compressed.size()) break;
      const std::string_view rest = compressed.substr(in_pos);
      if (is_gzip(rest)) {  // another member follows
        if (inflateReset(&stream) != Z_OK) {
          return core::Error{fmt::format("{}: cannot reset zlib", source)};
        }
        continue;
      }
      // gzip(1) tolerates zero padding after the last member (tape blocks); so do we.
      if (std::all_of(rest.begin(), rest.end(), [](char c) { return c == 0; })) break;
      return core::Error{fmt::format(
          "{}: corrupt gzip data: {} bytes of trailing garbage after the gzip stream at "
          "compressed byte {}",
          source, rest.size(), in_pos)};
    }
    if (status == Z_DATA_ERROR || status == Z_NEED_DICT || status == Z_STREAM_ERROR) {
      return core::Error{fmt::format("{}: corrupt gzip data at compressed byte {}: {}", source,
                                     in_pos, stream.msg != nullptr ? stream.msg : "invalid data")};
    }
    if (status == Z_MEM_ERROR) {
      return core::Error{fmt::format("{}: out of memory while inflating gzip data", source)};
    }
    // Z_OK or Z_BUF_ERROR: progress is possible only with more output room or more input.
    if (in_pos == compressed.size() && stream.avail_out > 0) {
      return core::Error{fmt::format(
          "{}: truncated gzip data: the input ends after {} compressed bytes ({} inflated) "
          "before the end of the gzip stream",
          source, compressed.size(), out_size)};
    }
  }
  out.set_size(out_size);
  return out;
}

}  // namespace powertrain::trace
