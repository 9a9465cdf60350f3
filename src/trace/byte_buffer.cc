// Heap and file-mapped padded buffers.
#include "trace/byte_buffer.h"

#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace powertrain::trace {

void detail::ReleaseBuffer::operator()(char* data) const {
  if (mapped_bytes > 0) {
    ::munmap(data, mapped_bytes);
  } else {
    delete[] data;
  }
}

void PaddedBuffer::reserve(std::size_t bytes) {
  if (bytes + kPadding <= capacity_) return;
  const std::size_t capacity = bytes + kPadding;
  constexpr std::size_t kLarge = std::size_t{64} << 20;
  if (capacity >= kLarge) {
    // Large buffers (inflated traces) come from mmap, so that growing one is a remap, not a copy.
    // Pages are faulted in as they are filled (not populated up front: the size may be a guess
    // from untrusted bytes). Transparent huge pages were slower here: madvise'd regions stall on
    // compaction.
    void* grown = MAP_FAILED;
    if (data_ != nullptr && data_.get_deleter().mapped_bytes > 0) {
      grown = ::mremap(data_.get(), data_.get_deleter().mapped_bytes, capacity, MREMAP_MAYMOVE);
      if (grown != MAP_FAILED) (void)data_.release();
    } else {
      grown = ::mmap(nullptr, capacity, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      if (grown != MAP_FAILED && size_ > 0) std::memcpy(grown, data_.get(), size_);
    }
    if (grown != MAP_FAILED) {
      data_ = std::unique_ptr<char[], detail::ReleaseBuffer>(static_cast<char*>(grown),
                                                             detail::ReleaseBuffer{capacity});
      capacity_ = capacity;
      return;
    }
    // Fall through to the heap when mapping fails.
  }
  std::unique_ptr<char[], detail::ReleaseBuffer> grown(new char[capacity]);
  if (size_ > 0) std::memcpy(grown.get(), data_.get(), size_);
  data_ = std::move(grown);
  capacity_ = capacity;
}

core::Result<PaddedBuffer> PaddedBuffer::map_file(int fd, std::size_t size,
                                                  const std::string& source) {
  const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
  const std::size_t total = (size + kPadding + page - 1) / page * page;
  // Reserve the whole range with anonymous zero pages, then map the file over its start: the
  // bytes after the end of file in its last page read as zero, and the pages after it are the
  // anonymous ones, so the padding is always there and zero.
  void* region = ::mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (region == MAP_FAILED) {
    return core::Error{
        fmt::format("{}: cannot map {} bytes: {}", source, total, std::strerror(errno))};
  }
  PaddedBuffer buffer;
  buffer.data_ = std::unique_ptr<char[], detail::ReleaseBuffer>(static_cast<char*>(region),
                                                                detail::ReleaseBuffer{total});
  buffer.size_ = size;
  buffer.capacity_ = total;
  if (size == 0) return buffer;
#ifdef MADV_POPULATE_READ
  // Writable from the start, its page tables filled by read faults: the pages stay shared with
  // the page cache and only those the parser writes to get copied. (MAP_POPULATE on a writable
  // private mapping would copy every page; populating read-only and then mprotect'ing walked
  // every page table entry a second time.)
  if (::mmap(region, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_FIXED, fd, 0) == MAP_FAILED) {
    return core::Error{fmt::format("{}: cannot map the file: {}", source, std::strerror(errno))};
  }
  if (::madvise(region, size, MADV_POPULATE_READ) == 0) return buffer;
  // A file that shrank since fstat or cannot be read (EFAULT, EIO) is reported now rather than as
  // SIGBUS while parsing; otherwise (an older kernel: EINVAL; EINTR) pages fault in as read.
  if (errno == EFAULT || errno == EIO) {
    return core::Error{fmt::format("{}: cannot read the file: {}", source, std::strerror(errno))};
  }
  return buffer;
#else
  // Populate read-only (a writable private mapping would be populated by copying every page),
  // then allow the few writes the parser makes: only those pages get copied.
  if (::mmap(region, size, PROT_READ, MAP_PRIVATE | MAP_FIXED | MAP_POPULATE, fd, 0) ==
          MAP_FAILED ||
      ::mprotect(region, size, PROT_READ | PROT_WRITE) != 0) {
    return core::Error{fmt::format("{}: cannot map the file: {}", source, std::strerror(errno))};
  }
  return buffer;
#endif
}

}  // namespace powertrain::trace
