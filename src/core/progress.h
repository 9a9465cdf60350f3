// Progress of long work on stderr: one line updated in place on a terminal (percent, rate, ETA),
// plain lines at most every few seconds otherwise (logs, CI), nothing when quiet.
#pragma once

#include <chrono>
#include <cstdio>
#include <string>

namespace powertrain::core {

class ProgressLine {
 public:
  /// `label` starts the line ("planning"), `unit` names what is counted ("units of tau").
  /// `enabled` false prints nothing; `terminal` defaults to whether stderr is a terminal.
  ProgressLine(std::string label, std::string unit, bool enabled);
  ProgressLine(std::string label, std::string unit, bool enabled, bool terminal,
               std::FILE* stream, double plain_interval_s);
  ~ProgressLine();
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  /// `done` of `total` so far; cheap when nothing is due to be printed.
  void update(long long done, long long total);
  /// Ends the line (a newline on a terminal; a last plain line otherwise). Idempotent.
  void finish();

 private:
  using Clock = std::chrono::steady_clock;
  void print(long long done, long long total, bool final_line);

  std::string label_;
  std::string unit_;
  bool enabled_;
  bool terminal_;
  std::FILE* stream_;
  double plain_interval_s_;
  Clock::time_point started_;
  Clock::time_point last_print_;
  long long last_done_ = -1;
  long long last_total_ = 0;
  bool printed_ = false;
  bool finished_ = false;
};

/// "3 s", "2 min 05 s", "1 h 02 min".
std::string format_duration(double seconds);

}  // namespace powertrain::core
