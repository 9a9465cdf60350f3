// In-vivo profiling (Perseus §5) as the server drives it: each pipeline stage sweeps its clocks
// from the highest down, a few iterations per clock, and an instruction stops being profiled once
// its energy rose `stop_after_rises` times in a row below the middle of the clock range (lower
// clocks are slower and costlier: Pareto-suboptimal). P_blocking is measured once before the sweep
// when it is not given. Pure state, no locking: the Service serializes updates.
#pragma once

#include <map>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"

namespace powertrain::serve {

struct SweepSettings {
  int iterations_per_clock = 5;
  int stop_after_rises = 5;
};

/// One profiled clock of one instruction: means over the iterations measured there.
struct SweepPoint {
  int frequency_mhz = 0;
  double time_s = 0.0;    // measured, mean per instruction
  double energy_j = 0.0;  // measured, mean per instruction
};

/// The sweep of one pipeline stage (run by every rank of the stage; the stage's profiling rank —
/// its lowest registered rank — reports).
class StageSweep {
 public:
  StageSweep() = default;
  StageSweep(int stage, int reporting_rank, std::vector<int> clocks_mhz,
             std::vector<std::string> instructions, SweepSettings settings);

  int stage() const { return stage_; }
  int reporting_rank() const { return reporting_rank_; }
  bool done() const { return done_; }
  /// The clock every instruction of the stage runs at now (the last one once done).
  int clock_mhz() const { return clocks_[index_]; }
  int max_clock_mhz() const { return clocks_.front(); }
  int iterations_at_clock() const { return iterations_; }
  const std::vector<std::string>& instructions() const { return instructions_; }
  /// Measured points per instruction, highest clock first.
  const std::vector<SweepPoint>& points(const std::string& instruction) const;
  bool stopped(const std::string& instruction) const;

  /// Adds `iterations` measured iterations at the current clock: per instruction, the sums of the
  /// instruction's times (s) and energies (J) and how many instruction runs they cover. Every
  /// instruction still being profiled must be present. Moves to the next clock after
  /// iterations_per_clock iterations. Errors name the instruction.
  core::Status add(int iterations,
                   const std::map<std::string, std::tuple<double, double, long long>>& sums);

  nlohmann::json to_json() const;
  static core::Result<StageSweep> from_json(const nlohmann::json& j);

 private:
  struct Series {
    std::vector<SweepPoint> points;
    int rises = 0;  // consecutive energy increases
    bool stopped = false;
    double time_sum = 0.0, energy_sum = 0.0;  // accumulating at the current clock
    long long runs = 0;
  };
  void finish_clock();

  int stage_ = 0;
  int reporting_rank_ = 0;
  std::vector<int> clocks_;  // descending
  std::vector<std::string> instructions_;
  SweepSettings settings_;
  std::map<std::string, Series> series_;
  std::size_t index_ = 0;
  int iterations_ = 0;
  bool done_ = false;
};

/// A job's whole in-vivo profiling run.
struct InVivoProfiling {
  enum class Phase { kPBlocking, kSweep, kDone };
  Phase phase = Phase::kSweep;
  SweepSettings settings;
  int microbatches = 0;
  double unit_time_s = 1e-3;
  std::string schedule = "1f1b";
  std::optional<double> p_blocking_w;  // given, or measured in the P_blocking phase
  int p_blocking_rank = 0;             // who measures it (stage 0's reporting rank)
  std::vector<StageSweep> stages;
  long long profile_generation = 0;  // the profile generation the finished sweep became

  bool sweep_done() const;

  /// The profile CSV `stage,instruction,frequency,time,energy` of every measured point, stages
  /// and instructions in order, clocks highest first (what `powertrain frontier --profile` reads).
  std::string profile_csv() const;
  nlohmann::json to_json() const;
  static core::Result<InVivoProfiling> from_json(const nlohmann::json& j);
};

const char* phase_name(InVivoProfiling::Phase phase);

}  // namespace powertrain::serve
