// A byte buffer that always keeps spare, writable, readable bytes after its contents, so that a
// JSON document read, mapped or inflated into it is parsed in place by simdjson without a copy.
#pragma once

#include <cstddef>
#include <cstring>
#include <memory>
#include <string_view>

#include "core/result.h"

namespace powertrain::trace {

namespace detail {
/// Frees a PaddedBuffer's memory: munmap for mappings, delete[] otherwise.
struct ReleaseBuffer {
  std::size_t mapped_bytes = 0;  // 0: heap memory
  void operator()(char* data) const;
};
}  // namespace detail

/// Bytes plus at least kPadding zeroed bytes after them; heap-allocated, or a private writable
/// mapping of a file (changes never reach the file).
class PaddedBuffer {
 public:
  /// simdjson needs 64 bytes; the windowed Kineto walk writes one more byte after the end.
  static constexpr std::size_t kPadding = 128;

  PaddedBuffer() = default;

  /// Maps `size` bytes of the open file `fd` privately and writably, with zeroed padding after
  /// them. No copy and no zero-filling of fresh memory: pages come straight from the page cache.
  /// Errors: the mapping fails (with the OS reason). `source` names the file in errors.
  static core::Result<PaddedBuffer> map_file(int fd, std::size_t size, const std::string& source);

  const char* data() const { return data_.get(); }
  char* data() { return data_.get(); }
  std::size_t size() const { return size_; }
  /// Readable and writable bytes from data(), padding included (simdjson's "capacity").
  std::size_t capacity() const { return capacity_; }
  std::string_view view() const { return {data_.get(), size_}; }

  /// Makes room for `bytes` content bytes (plus padding), keeping the contents. Contents beyond
  /// size() are uninitialized. Heap buffers only.
  void reserve(std::size_t bytes);

  /// Sets the content size (≤ what was reserved) and zeroes the padding after it.
  void set_size(std::size_t bytes) {
    reserve(bytes);
    size_ = bytes;
    std::memset(data_.get() + size_, 0, kPadding);
  }

 private:
  std::unique_ptr<char[], detail::ReleaseBuffer> data_;
  std::size_t size_ = 0;
  std::size_t capacity_ = 0;
};

}  // namespace powertrain::trace
