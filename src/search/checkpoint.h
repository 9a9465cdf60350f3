// Checkpoint/resume of a search: an append-only JSON Lines log of finished trials, so a restarted
// search skips them; and the one-line trial encoding it shares with the MPI runner.
#pragma once

#include <cstdio>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "search/space.h"
#include "search/trial.h"

namespace powertrain::search {

/// One trial as one line of JSON (no newline). Doubles round-trip exactly.
std::string encode_trial(const TrialResult& trial);
/// The inverse; errors name `where` (e.g. "ckpt.jsonl:12") and the field.
core::Result<TrialResult> decode_trial(std::string_view line, const std::string& where);

/// What a trial's result depends on (model, GPUs, batch, knob values, τ, emulation template):
/// a checkpoint written for another such spec is refused. Algorithm, seed and pruning are left
/// out: a finished trial is valid for any of them.
std::string checkpoint_fingerprint(const SearchSpec& spec);

/// The log: line 1 is {"powertrain_search_checkpoint": 1, "spec": fingerprint}, then one
/// encode_trial line per finished trial, each written with one write(2) and fdatasync'd, so a
/// search killed at any moment leaves every earlier line intact; a torn last line is dropped
/// (and cut off, with a warning) when the log is reopened. A file whose line 1 is not the header
/// is refused as not a checkpoint, and left alone. Thread-safe.
class Checkpoint {
 public:
  /// Opens `path`, creating it (with the header) when missing, else reading its trials.
  static core::Result<std::unique_ptr<Checkpoint>> open(const std::string& path,
                                                        const SearchSpec& spec);
  ~Checkpoint();
  Checkpoint(const Checkpoint&) = delete;
  Checkpoint& operator=(const Checkpoint&) = delete;

  /// The finished trial of `config`, if the log has it.
  const TrialResult* find(const Config& config) const;
  core::Status append(const TrialResult& trial);
  std::size_t restored() const { return restored_; }  // trials read when opened
  const std::string& path() const { return path_; }
  /// What open() tolerated (a truncated last line), one line each, naming file:line.
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  Checkpoint() = default;
  std::string path_;
  int fd_ = -1;
  std::map<Config, TrialResult> done_;
  std::size_t restored_ = 0;
  std::vector<std::string> warnings_;
  mutable std::mutex mutex_;
};

}  // namespace powertrain::search
