// Atomic outputs: a failure half-way must not leave a frontier.csv without its plans.
#include "core/atomic_output.h"

#include <fmt/core.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <system_error>

namespace powertrain::core {
namespace fs = std::filesystem;

Result<AtomicOutputDirectory> AtomicOutputDirectory::create(const fs::path& target) {
  if (target.empty()) return Error{"output directory: empty path"};
  fs::path absolute = fs::absolute(target).lexically_normal();
  if (absolute.filename().empty()) absolute = absolute.parent_path();
  std::error_code ec;
  if (fs::exists(absolute, ec) && !fs::is_directory(absolute, ec)) {
    return Error{fmt::format("{}: exists and is not a directory", target.string())};
  }
  fs::create_directories(absolute.parent_path(), ec);
  if (ec) {
    return Error{
        fmt::format("{}: cannot create parent directory: {}", target.string(), ec.message())};
  }
  fs::path staging = absolute;
  staging += fmt::format(".partial-{}", static_cast<long>(::getpid()));
  fs::remove_all(staging, ec);
  if (!fs::create_directory(staging, ec) || ec) {
    return Error{fmt::format("{}: cannot create output directory: {}", target.string(),
                             ec ? ec.message() : "already exists")};
  }
  if (::access(staging.c_str(), W_OK) != 0) {
    fs::remove_all(staging, ec);
    return Error{fmt::format("{}: output directory is not writable", target.string())};
  }
  return AtomicOutputDirectory(absolute, staging);
}

AtomicOutputDirectory::AtomicOutputDirectory(AtomicOutputDirectory&& other) noexcept
    : target_(std::move(other.target_)),
      staging_(std::move(other.staging_)),
      committed_(other.committed_) {
  other.committed_ = true;  // the moved-from object owns nothing
  other.staging_.clear();
}

AtomicOutputDirectory::~AtomicOutputDirectory() {
  if (!committed_ && !staging_.empty()) {
    std::error_code ec;
    fs::remove_all(staging_, ec);
  }
}

Status AtomicOutputDirectory::write_file(const std::string& name, std::string_view contents) {
  const fs::path path = staging_ / name;
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) {
    return Error{
        fmt::format("{}: cannot write {}: {}", target_.string(), name, std::strerror(errno))};
  }
  out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  out.close();
  if (!out)
    return Error{fmt::format("{}: write of {} failed (disk full?)", target_.string(), name)};
  return Ok{};
}

Status AtomicOutputDirectory::commit() {
  std::error_code ec;
  fs::path aside;
  if (fs::exists(target_, ec)) {
    aside = target_;
    aside += fmt::format(".old-{}", static_cast<long>(::getpid()));
    fs::remove_all(aside, ec);
    fs::rename(target_, aside, ec);
    if (ec) {
      return Error{
          fmt::format("{}: cannot replace existing directory: {}", target_.string(), ec.message())};
    }
  }
  fs::rename(staging_, target_, ec);
  if (ec) {
    if (!aside.empty()) fs::rename(aside, target_, ec);
    return Error{
        fmt::format("{}: cannot move output into place: {}", target_.string(), ec.message())};
  }
  committed_ = true;
  if (!aside.empty()) fs::remove_all(aside, ec);
  return Ok{};
}

Status write_file_atomically(const fs::path& path, std::string_view contents) {
  fs::path temporary = path;
  temporary += fmt::format(".partial-{}", static_cast<long>(::getpid()));
  {
    std::ofstream out(temporary, std::ios::binary | std::ios::trunc);
    if (!out)
      return Error{fmt::format("{}: cannot write: {}", path.string(), std::strerror(errno))};
    out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
    out.close();
    if (!out) {
      std::error_code ec;
      fs::remove(temporary, ec);
      return Error{fmt::format("{}: write failed (disk full?)", path.string())};
    }
  }
  std::error_code ec;
  fs::rename(temporary, path, ec);
  if (ec) {
    fs::remove(temporary, ec);
    return Error{fmt::format("{}: cannot move into place: {}", path.string(), ec.message())};
  }
  return Ok{};
}

}  // namespace powertrain::core
