// Output directories that appear whole or not at all.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "core/result.h"

namespace powertrain::core {

/// Stages files in a sibling directory "<target>.partial-<pid>" and moves it into place on
/// commit(). If the object is destroyed without commit() (an error, an exception), the staging
/// directory is removed and the target is left as it was. Not thread-safe; one writer per target.
class AtomicOutputDirectory {
 public:
  /// Creates the staging directory. Errors: parent missing and not creatable, not writable.
  static Result<AtomicOutputDirectory> create(const std::filesystem::path& target);

  AtomicOutputDirectory(AtomicOutputDirectory&& other) noexcept;
  AtomicOutputDirectory& operator=(AtomicOutputDirectory&&) = delete;
  AtomicOutputDirectory(const AtomicOutputDirectory&) = delete;
  ~AtomicOutputDirectory();

  /// Writes one file (relative name) into the staging directory.
  Status write_file(const std::string& name, std::string_view contents);

  /// Replaces the target with the staged directory. An existing target directory is replaced as a
  /// whole (it is renamed aside first and removed after the swap).
  Status commit();

  const std::filesystem::path& target() const { return target_; }
  const std::filesystem::path& staging() const { return staging_; }

 private:
  AtomicOutputDirectory(std::filesystem::path target, std::filesystem::path staging)
      : target_(std::move(target)), staging_(std::move(staging)) {}

  std::filesystem::path target_;
  std::filesystem::path staging_;
  bool committed_ = false;
};

/// Writes one file atomically (temporary sibling + rename).
Status write_file_atomically(const std::filesystem::path& path, std::string_view contents);

}  // namespace powertrain::core
