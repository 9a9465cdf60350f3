// What `powertrain search` prints: the progress line and the run's summary (its files are
// search/outputs.h's).
#pragma once

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "search/batch.h"
#include "search/search.h"

namespace powertrain::report {

/// "search: 120/960 trials, 85.3 trials/s, best tp2 pp1 mb4 v1 1.2345 s, ETA 10 s" on stderr: in
/// place on a terminal, every 5 s otherwise.
class SearchProgressLine {
 public:
  explicit SearchProgressLine(bool enabled);
  void update(const search::SearchSpec& spec, const search::SearchProgress& p,
              const std::vector<search::TrialResult>& trials, bool final_line = false);

 private:
  using Clock = std::chrono::steady_clock;
  bool enabled_;
  bool terminal_;
  Clock::time_point started_ = Clock::now();
  Clock::time_point last_ = Clock::now() - std::chrono::hours(1);
};

/// The run's summary: counts, measured time, the ranked table (`top` rows), the frontier's ends,
/// the energy-aware choice and the files in `out`.
void print_search_summary(std::FILE* to, const search::SearchSpec& spec,
                          const search::SearchResult& result, const search::MpiWorld& world,
                          int threads, const search::BatchStats& stats,
                          const std::filesystem::path& out, int top);

}  // namespace powertrain::report
