// Output directories and files that appear whole or not at all, and never replace a user's data.
#pragma once

#include <filesystem>
#include <string>
#include <string_view>

#include "core/result.h"

namespace powertrain::core {

/// Name of the marker file powertrain writes into every output directory it creates. A directory
/// that holds it was written by powertrain and may be replaced by the next run.
inline constexpr std::string_view kOutputMarkerName = ".powertrain-output";

/// What may be replaced at the target.
struct OutputPolicy {
  /// Replace an existing non-empty directory (or file, for single-file outputs) that powertrain did
  /// not create. The current directory, its ancestors, the home directory and "/" are never
  /// replaced.
  bool force = false;
};

/// Checks that `target` may receive a new output directory under `policy`, without touching it:
/// a missing path, an empty directory or a directory with powertrain's marker are fine; a file, a
/// symbolic link, a user's non-empty directory (without force), the current directory or one of
/// its ancestors are not.
Status check_output_directory(const std::filesystem::path& target, const OutputPolicy& policy);

/// Stages files in a sibling directory "<target>.partial-<pid>" and moves it into place on
/// commit(). If the object is destroyed without commit() (an error, an exception), or the process
/// is ended by a signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT, or a crash), the staging directory is
/// removed and the target is left as it was. Staging directories of processes that were killed
/// outright (SIGKILL) are removed by the next run that writes next to them. Not thread-safe; one
/// writer per target.
class AtomicOutputDirectory {
 public:
  /// Checks the target (check_output_directory) and creates the staging directory with the marker.
  /// Errors: parent missing and not creatable, not writable, target not replaceable.
  static Result<AtomicOutputDirectory> create(const std::filesystem::path& target,
                                              const OutputPolicy& policy = {});

  AtomicOutputDirectory(AtomicOutputDirectory&& other) noexcept;
  AtomicOutputDirectory& operator=(AtomicOutputDirectory&&) = delete;
  AtomicOutputDirectory(const AtomicOutputDirectory&) = delete;
  ~AtomicOutputDirectory();

  /// Writes one file (relative name) into the staging directory.
  Status write_file(const std::string& name, std::string_view contents);

  /// Replaces the target with the staged directory. The target is checked again (it may have
  /// changed since create()); an existing replaceable target is renamed aside and removed after
  /// the swap.
  Status commit();

  const std::filesystem::path& target() const { return target_; }
  const std::filesystem::path& staging() const { return staging_; }

 private:
  AtomicOutputDirectory(std::filesystem::path target, std::filesystem::path staging,
                        OutputPolicy policy)
      : target_(std::move(target)), staging_(std::move(staging)), policy_(policy) {}

  std::filesystem::path target_;
  std::filesystem::path staging_;
  OutputPolicy policy_;
  bool committed_ = false;
  int cleanup_slot_ = -1;  // register_cleanup_path slot of the staging directory
};

/// Checks that a single output file may be written at `path`: an existing file is replaced only
/// with policy.force; directories and symbolic links never.
Status check_output_file(const std::filesystem::path& path, const OutputPolicy& policy);

/// Writes one file atomically (temporary sibling + rename). Refuses to replace an existing file
/// unless policy.force.
Status write_file_atomically(const std::filesystem::path& path, std::string_view contents,
                             const OutputPolicy& policy = {});

/// Writes a file powertrain owns inside its own staging or output directory (replaces silently).
Status write_owned_file_atomically(const std::filesystem::path& path, std::string_view contents);

/// Registers a path to be removed if the process is ended by a signal; returns a slot for
/// unregister_cleanup_path. At most 16 paths at once; extra registrations are ignored (-1).
int register_cleanup_path(const std::filesystem::path& path);
void unregister_cleanup_path(int slot);

}  // namespace powertrain::core
