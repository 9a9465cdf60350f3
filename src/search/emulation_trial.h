// The emulation trial backend (Maya mode): a trial runs the spec's command template, filled with
// the configuration's knobs, under `powertrain emulate` (a real CUDA program is the workload),
// takes its predicted step as the trial's time, and plans the configuration's Perseus frontier
// from the emulated timeline with `powertrain plan --emulated`.
#pragma once

#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "core/result.h"
#include "search/space.h"
#include "search/trial.h"

namespace powertrain::search {

/// Parses "emulation": {"command": "...", "ranks": "{pp}", "gpu": "h100", "kernel_table": "k.csv",
/// "max_host_gap_us": 10, "timeout_s": 600}; a placeholder outside the list is an error naming
/// the field.
core::Status parse_emulation_spec(const nlohmann::json& value, const std::string& source,
                                  const std::string& key, EmulationSpec& out);

/// `text` with every {placeholder} replaced by the configuration's value ({work_dir} by
/// `work_dir`). `fits` supplies dp and the microbatch count (check_config's).
std::string expand_template(const std::string& text, const SearchSpec& spec,
                            const TrialResult& fits, const std::string& work_dir);

/// What makes two trials the same emulation: the expanded ranks, command and GPU ({work_dir}
/// left as is). Configurations with one key share one emulation (dedup).
std::string emulation_key(const SearchSpec& spec, const TrialResult& fits);

struct EmulationRunner {
  std::string powertrain;  // the powertrain binary that runs `emulate` and `plan`
  std::string interposer;  // `emulate --interposer`; empty: its default search
  std::string work_root;   // parent of the per-trial directories; empty: $TMPDIR or /tmp
  bool keep = false;       // keep each trial's directory (emulation and plan outputs)

  /// Emulates and plans one configuration that passed check_config (`fits`). Thread-safe: each
  /// trial has a directory of its own. A failed emulation is kInvalid with the first error line;
  /// an out-of-memory report from the emulator is kOom.
  TrialResult evaluate(const SearchSpec& spec, const TrialResult& fits) const;
};

/// The result of `leader`'s emulation for `follower` (same emulation_key): the follower's own
/// configuration, dp and microbatches; energies rescaled to its tp × dp pipelines.
TrialResult reuse_emulation(const TrialResult& leader, const TrialResult& follower);

}  // namespace powertrain::search
