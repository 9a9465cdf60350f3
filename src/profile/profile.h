// Perseus/Zeus profile CSVs: time and energy of each pipeline instruction at each GPU clock.
#pragma once

#include <string>
#include <vector>

#include "core/csv.h"
#include "core/result.h"
#include "pipeline/operation_dag.h"

namespace powertrain::profile {

/// One measurement: an instruction run at one SM clock.
struct MeasuredOption {
  int frequency_mhz = 0;
  double time_s = 0.0;
  double energy_j = 0.0;
  int line = 0;  // source line, for error messages
};

/// All measurements of one (stage, instruction).
struct InstructionProfile {
  int stage = 0;
  pipeline::InstructionKind kind = pipeline::InstructionKind::kForward;
  std::vector<MeasuredOption> options;  // in file order
};

/// A whole profile. Entries are sorted by (stage, kind).
struct Profile {
  std::string source;
  std::vector<InstructionProfile> entries;
  // Repeated (stage, instruction, frequency) rows are averaged (repeated measurements).
  int merged_duplicate_rows = 0;
  int first_duplicate_line = 0;

  /// The entry for (stage, kind), or nullptr.
  const InstructionProfile* find(int stage, pipeline::InstructionKind kind) const;
  /// 1 + the largest stage id.
  int num_stages() const;
};

/// Limits on untrusted profiles; every number is checked against them before any conversion.
inline constexpr int kMaxProfileStages = 4096;
inline constexpr int kMaxProfileFrequencyMhz = 100000;
inline constexpr double kMaxProfileTimeS = 86400.0;  // one instruction longer than a day
inline constexpr double kMaxProfileEnergyJ = 1e12;

/// Parses `stage,instruction,frequency,time,energy` (MHz, s, J; extra columns ignored; column
/// order free). Errors (one line, source:line: field 'name': ...): missing column, non-integer
/// stage or frequency, stage outside [0, kMaxProfileStages), frequency outside
/// [1, kMaxProfileFrequencyMhz], unknown instruction, time not finite or outside
/// (0, kMaxProfileTimeS], energy not finite or outside (0, kMaxProfileEnergyJ], empty profile.
/// Rows repeating a (stage, instruction, frequency) are averaged, not refused.
core::Result<Profile> parse_profile(const core::CsvTable& table);
core::Result<Profile> read_profile(const std::string& path);

/// Checks that every stage in [0, num_stages) has every needed instruction with at least two
/// distinct clocks, and that the profile has no stages beyond. `needs_recompute` adds recompute.
core::Status validate_profile_for_pipeline(const Profile& profile, int num_stages,
                                           bool needs_recompute);

}  // namespace powertrain::profile
