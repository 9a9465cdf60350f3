// Atomic outputs: a failure half-way must not leave a frontier.csv without its plans, and an output
// flag must never cost a user their files.
#include "core/atomic_output.h"

#include <dirent.h>
#include <fcntl.h>
#include <fmt/core.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <system_error>

namespace powertrain::core {
namespace fs = std::filesystem;

namespace {

// ---- removal on signals -------------------------------------------------------------------------
// The handler may run at any point (inside malloc too), so it only uses async-signal-safe calls:
// open/openat, getdents64, unlinkat, close, and fixed buffers registered ahead of time.

constexpr int kMaxCleanupPaths = 16;
constexpr std::size_t kMaxPathBytes = 4096;
char cleanup_paths[kMaxCleanupPaths][kMaxPathBytes];
std::atomic<bool> cleanup_used[kMaxCleanupPaths];
// Set by the handler before it cleans up: the signal may run it on another thread while this one
// is creating a staging directory, so creation checks it afterwards (see create).
std::atomic<bool> terminating_by_signal{false};
std::mutex cleanup_mutex;  // registration only; never taken by the handler

// struct linux_dirent64: d_ino (8 bytes), d_off (8), d_reclen (2), d_type (1), then the name.
constexpr std::size_t kDirentReclenOffset = 16;
constexpr std::size_t kDirentTypeOffset = 18;
constexpr std::size_t kDirentNameOffset = 19;

// Removes everything below the directory `dir_fd` (depth-limited; our staging trees are shallow).
void remove_children_signal_safe(int dir_fd, int depth) {
  alignas(8) char buffer[4096];
  for (;;) {
    const long bytes = ::syscall(SYS_getdents64, dir_fd, buffer, sizeof buffer);
    if (bytes <= 0) return;
    bool removed_any = false;
    for (long offset = 0; offset < bytes;) {
      const char* entry = buffer + offset;
      unsigned short record_bytes = 0;
      std::memcpy(&record_bytes, entry + kDirentReclenOffset, sizeof record_bytes);
      const auto type = static_cast<unsigned char>(entry[kDirentTypeOffset]);
      offset += record_bytes;
      const char* name = entry + kDirentNameOffset;
      if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'))) continue;
      if (type == DT_DIR && depth < 8) {
        const int child = ::openat(dir_fd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (child >= 0) {
          remove_children_signal_safe(child, depth + 1);
          ::close(child);
        }
        if (::unlinkat(dir_fd, name, AT_REMOVEDIR) == 0) removed_any = true;
      } else if (::unlinkat(dir_fd, name, 0) == 0) {
        removed_any = true;
      }
    }
    if (removed_any) ::lseek(dir_fd, 0, SEEK_SET);  // entries moved; read the rest again
  }
}

void remove_path_signal_safe(const char* path) {
  const int fd = ::open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) {
    remove_children_signal_safe(fd, 0);
    ::close(fd);
    ::rmdir(path);
  } else {
    ::unlink(path);
  }
}

constexpr int kCleanupSignals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGSEGV,
                                   SIGBUS, SIGFPE,  SIGILL, SIGABRT};

void cleanup_on_signal(int signal_number) {
  // `timeout` and shells send a signal to the process and to its group, so a second one can reach
  // another thread while the first handler is still removing files: it waits for that handler to
  // end the process instead of ending it half-way through the cleanup.
  if (terminating_by_signal.exchange(true)) {
    for (;;) ::pause();
  }
  for (int slot = 0; slot < kMaxCleanupPaths; ++slot) {
    if (cleanup_used[slot].load(std::memory_order_acquire))
      remove_path_signal_safe(cleanup_paths[slot]);
  }
  // End the process the way the signal meant to: default action, delivered once the handler
  // returns (the signal is blocked while it runs).
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigemptyset(&default_action.sa_mask);
  ::sigaction(signal_number, &default_action, nullptr);
  ::raise(signal_number);
}

void install_signal_handlers_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int signal_number : kCleanupSignals) {
      struct sigaction current {};
      if (::sigaction(signal_number, nullptr, &current) != 0) continue;
      // Leave handlers the embedding program installed (and ignored signals) alone.
      if (current.sa_handler != SIG_DFL) continue;
      struct sigaction action {};
      action.sa_handler = cleanup_on_signal;
      // Every cleanup signal is blocked on the handling thread while it runs.
      sigemptyset(&action.sa_mask);
      for (int blocked : kCleanupSignals) sigaddset(&action.sa_mask, blocked);
      action.sa_flags = 0;
      ::sigaction(signal_number, &action, nullptr);
    }
  });
}

// ---- target checks ------------------------------------------------------------------------------

bool is_same_or_ancestor(const fs::path& ancestor, const fs::path& path) {
  auto a = ancestor.begin();
  auto p = path.begin();
  for (; a != ancestor.end(); ++a, ++p) {
    if (p == path.end() || *a != *p) return false;
  }
  return true;
}

fs::path normalized_absolute(const fs::path& target) {
  fs::path absolute = fs::absolute(target).lexically_normal();
  while (absolute.has_relative_path() && absolute.filename().empty())
    absolute = absolute.parent_path();
  return absolute;
}

bool process_alive(long pid) {
  if (pid <= 0) return false;
  return ::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM;
}

// Removes "<target>.partial-<pid>" siblings left by powertrain runs that were killed outright.
void remove_stale_staging(const fs::path& target) {
  std::error_code ec;
  const fs::path parent = target.parent_path();
  const std::string prefix = target.filename().string() + ".partial-";
  for (fs::directory_iterator it(parent, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (name.rfind(prefix, 0) != 0) continue;
    char* parsed_end = nullptr;
    const long pid = std::strtol(name.c_str() + prefix.size(), &parsed_end, 10);
    if (parsed_end == nullptr || *parsed_end != '\0' || process_alive(pid)) continue;
    std::error_code inner;
    if (!fs::is_symlink(it->symlink_status(inner)) &&
        fs::exists(it->path() / kOutputMarkerName, inner)) {
      fs::remove_all(it->path(), inner);
    }
  }
}

Status write_contents(const fs::path& path, std::string_view contents, const fs::path& shown) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return Error{fmt::format("{}: cannot write: {}", shown.string(), std::strerror(errno))};
  out.write(contents.data(), static_cast<std::streamsize>(contents.size()));
  out.close();
  if (!out) return Error{fmt::format("{}: write failed (disk full?)", shown.string())};
  return Ok{};
}

}  // namespace

int register_cleanup_path(const fs::path& path) {
  install_signal_handlers_once();
  const std::string text = path.string();
  if (text.size() + 1 > kMaxPathBytes) return -1;
  std::lock_guard lock(cleanup_mutex);
  for (int slot = 0; slot < kMaxCleanupPaths; ++slot) {
    if (cleanup_used[slot].load(std::memory_order_relaxed)) continue;
    std::memcpy(cleanup_paths[slot], text.c_str(), text.size() + 1);
    cleanup_used[slot].store(true, std::memory_order_release);
    return slot;
  }
  return -1;
}

void unregister_cleanup_path(int slot) {
  if (slot < 0 || slot >= kMaxCleanupPaths) return;
  std::lock_guard lock(cleanup_mutex);
  cleanup_used[slot].store(false, std::memory_order_release);
}

Status check_output_directory(const fs::path& target, const OutputPolicy& policy) {
  if (target.empty()) return Error{"output directory: empty path"};
  const fs::path absolute = normalized_absolute(target);
  const std::string shown = target.string();
  std::error_code ec;
  const fs::path cwd = fs::current_path(ec).lexically_normal();
  if (!absolute.has_relative_path()) {
    return Error{fmt::format("{}: refusing to write output over the root directory", shown)};
  }
  if (!ec && is_same_or_ancestor(absolute, cwd)) {
    return Error{fmt::format(
        "{}: refusing to replace the current directory or one of its parents; give a new "
        "directory, e.g. --out {}/out",
        shown, shown == "." ? "." : shown)};
  }
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0') {
    if (normalized_absolute(home) == absolute) {
      return Error{fmt::format("{}: refusing to replace the home directory", shown)};
    }
  }
  const fs::file_status status = fs::symlink_status(absolute, ec);
  if (ec || !fs::exists(status)) return Ok{};  // a new directory
  if (fs::is_symlink(status)) {
    return Error{fmt::format(
        "{}: is a symbolic link; give a new directory (powertrain does not replace links)", shown)};
  }
  if (!fs::is_directory(status)) {
    return Error{fmt::format("{}: exists and is not a directory; give a new directory", shown)};
  }
  if (fs::exists(absolute / kOutputMarkerName, ec)) return Ok{};  // our own earlier output
  if (fs::is_empty(absolute, ec) && !ec) return Ok{};
  if (ec) return Error{fmt::format("{}: cannot read directory: {}", shown, ec.message())};
  if (policy.force) return Ok{};
  return Error{fmt::format(
      "{}: directory exists, is not empty and was not written by powertrain; give a new or empty "
      "directory, or --force to replace it",
      shown)};
}

Result<AtomicOutputDirectory> AtomicOutputDirectory::create(const fs::path& target,
                                                            const OutputPolicy& policy) {
  if (auto checked = check_output_directory(target, policy); !checked) return checked.error();
  const fs::path absolute = normalized_absolute(target);
  std::error_code ec;
  fs::create_directories(absolute.parent_path(), ec);
  if (ec) {
    return Error{
        fmt::format("{}: cannot create parent directory: {}", target.string(), ec.message())};
  }
  remove_stale_staging(absolute);
  fs::path staging = absolute;
  staging += fmt::format(".partial-{}", static_cast<long>(::getpid()));
  if (fs::exists(fs::symlink_status(staging, ec))) {
    // Ours from an earlier writer in this process that did not clean up; never a user's file
    // unless it lacks the marker.
    if (!fs::exists(staging / kOutputMarkerName, ec)) {
      return Error{fmt::format("{}: staging path {} exists and is not powertrain's",
                               target.string(), staging.string())};
    }
    fs::remove_all(staging, ec);
  }
  // Registered before it exists: a signal between creating and registering would leave it.
  const int slot = register_cleanup_path(staging);
  if (!fs::create_directory(staging, ec) || ec) {
    unregister_cleanup_path(slot);
    return Error{fmt::format("{}: cannot create output directory: {}", target.string(),
                             ec ? ec.message() : "already exists")};
  }
  auto remove_staging = [&] {
    std::error_code ignored;
    fs::remove_all(staging, ignored);
    unregister_cleanup_path(slot);
  };
  if (::access(staging.c_str(), W_OK) != 0) {
    remove_staging();
    return Error{fmt::format("{}: output directory is not writable", target.string())};
  }
  if (auto marked = write_contents(
          staging / kOutputMarkerName,
          "This directory was written by powertrain; a later run with the same --out may replace "
          "it.\n",
          target);
      !marked) {
    remove_staging();
    return marked.error();
  }
  // A handler that ran on another thread before the directory existed could not remove it.
  if (terminating_by_signal.load()) {
    remove_staging();
    return Error{fmt::format("{}: interrupted by a signal", target.string())};
  }
  AtomicOutputDirectory directory(absolute, staging, policy);
  directory.cleanup_slot_ = slot;
  return directory;
}

AtomicOutputDirectory::AtomicOutputDirectory(AtomicOutputDirectory&& other) noexcept
    : target_(std::move(other.target_)),
      staging_(std::move(other.staging_)),
      policy_(other.policy_),
      committed_(other.committed_),
      cleanup_slot_(other.cleanup_slot_) {
  other.committed_ = true;  // the moved-from object owns nothing
  other.staging_.clear();
  other.cleanup_slot_ = -1;
}

AtomicOutputDirectory::~AtomicOutputDirectory() {
  if (!committed_ && !staging_.empty()) {
    std::error_code ec;
    fs::remove_all(staging_, ec);
  }
  unregister_cleanup_path(cleanup_slot_);
}

Status AtomicOutputDirectory::write_file(const std::string& name, std::string_view contents) {
  const fs::path relative(name);
  if (relative.is_absolute() || name.find("..") != std::string::npos) {
    return Error{fmt::format("{}: refusing to write '{}' outside the output directory",
                             target_.string(), name)};
  }
  auto written = write_contents(staging_ / relative, contents, target_ / relative);
  if (!written) return written.error();
  return Ok{};
}

Status AtomicOutputDirectory::commit() {
  if (auto checked = check_output_directory(target_, policy_); !checked) return checked.error();
  std::error_code ec;
  fs::path aside;
  if (fs::exists(fs::symlink_status(target_, ec))) {
    aside = target_;
    aside += fmt::format(".old-{}", static_cast<long>(::getpid()));
    if (fs::exists(fs::symlink_status(aside, ec))) {
      return Error{fmt::format("{}: cannot set the old output aside: {} exists", target_.string(),
                               aside.string())};
    }
    fs::rename(target_, aside, ec);
    if (ec) {
      return Error{
          fmt::format("{}: cannot replace existing directory: {}", target_.string(), ec.message())};
    }
  }
  fs::rename(staging_, target_, ec);
  if (ec) {
    const std::string reason = ec.message();
    if (!aside.empty()) fs::rename(aside, target_, ec);
    return Error{fmt::format("{}: cannot move output into place: {}", target_.string(), reason)};
  }
  committed_ = true;
  unregister_cleanup_path(cleanup_slot_);
  cleanup_slot_ = -1;
  if (!aside.empty()) fs::remove_all(aside, ec);
  return Ok{};
}

Status check_output_file(const fs::path& path, const OutputPolicy& policy) {
  if (path.empty()) return Error{"output file: empty path"};
  std::error_code ec;
  const fs::file_status status = fs::symlink_status(path, ec);
  if (ec || !fs::exists(status)) return Ok{};
  if (fs::is_directory(status))
    return Error{fmt::format("{}: is a directory; give a file path", path.string())};
  if (fs::is_symlink(status)) {
    return Error{
        fmt::format("{}: is a symbolic link; powertrain does not replace links", path.string())};
  }
  if (!fs::is_regular_file(status))
    return Error{fmt::format("{}: exists and is not a regular file", path.string())};
  if (policy.force) return Ok{};
  return Error{
      fmt::format("{}: file exists; give a new path, or --force to replace it", path.string())};
}

namespace {

Status write_file_atomically_unchecked(const fs::path& path, std::string_view contents) {
  fs::path temporary = path;
  temporary += fmt::format(".partial-{}", static_cast<long>(::getpid()));
  const int slot = register_cleanup_path(temporary);
  if (auto written = write_contents(temporary, contents, path); !written) {
    std::error_code ec;
    fs::remove(temporary, ec);
    unregister_cleanup_path(slot);
    return written.error();
  }
  std::error_code ec;
  fs::rename(temporary, path, ec);
  if (ec) {
    const std::string reason = ec.message();
    fs::remove(temporary, ec);
    unregister_cleanup_path(slot);
    return Error{fmt::format("{}: cannot move into place: {}", path.string(), reason)};
  }
  unregister_cleanup_path(slot);
  return Ok{};
}

}  // namespace

Status write_file_atomically(const fs::path& path, std::string_view contents,
                             const OutputPolicy& policy) {
  if (auto checked = check_output_file(path, policy); !checked) return checked.error();
  return write_file_atomically_unchecked(path, contents);
}

Status write_owned_file_atomically(const fs::path& path, std::string_view contents) {
  return write_file_atomically_unchecked(path, contents);
}

}  // namespace powertrain::core
