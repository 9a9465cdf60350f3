// The batch evaluation of `powertrain search` (SearchOptions::evaluate_batch): finished trials
// come from the checkpoint, identical emulations run once (dedup), the rest are spread over
// threads and MPI ranks, and every new result is appended to the checkpoint as it arrives.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "search/checkpoint.h"
#include "search/emulation_trial.h"
#include "search/mpi_runner.h"
#include "search/search.h"

namespace powertrain::search {

struct BatchStats {
  long long evaluated = 0;     // trials run in this process (all ranks)
  long long restored = 0;      // taken from the checkpoint
  long long deduplicated = 0;  // took an earlier trial's emulation
};

class BatchEvaluator {
 public:
  /// `emulation`: the emulation backend when spec.emulation is enabled, else the model backend
  /// (evaluate_config). `checkpoint` may be null.
  BatchEvaluator(const SearchSpec& spec, MpiWorld world, int threads, EmulationRunner emulation,
                 Checkpoint* checkpoint);

  /// For SearchOptions::evaluate_batch. Errors writing the checkpoint are kept (error()).
  void operator()(const SearchSpec& spec, std::vector<TrialResult>& batch, const BoundFilter& skip);
  /// One trial on this rank (the workers' function too, without `skip`: they do not hold the
  /// frontier; run_search applies the bound tactic to their results).
  TrialResult evaluate_one(const TrialResult& fits, const BoundFilter& skip = {}) const;

  const BatchStats& stats() const { return stats_; }
  const std::string& error() const { return error_; }

 private:
  const SearchSpec& spec_;
  MpiWorld world_;
  int threads_;
  EmulationRunner emulation_;
  Checkpoint* checkpoint_;
  std::map<std::string, TrialResult> emulated_;  // emulation_key → first result (dedup)
  BatchStats stats_;
  std::string error_;
};

}  // namespace powertrain::search
