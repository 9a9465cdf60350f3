// The `search` flow as one call: read the spec, apply the command line's overrides, start MPI
// (rank 0 searches, the other ranks evaluate the trials it sends), open the checkpoint and run
// the search on the model or emulation backend. The caller writes the result (search/outputs.h,
// report/search_report.h).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/flow_error.h"
#include "core/result.h"
#include "search/batch.h"
#include "search/mpi_runner.h"
#include "search/search.h"
#include "search/space.h"

namespace powertrain::search {

/// What is asked for, as plain values (the command line's); empty, negative or 0: the spec's.
struct SearchSettings {
  std::string spec;       // the search space JSON file
  std::string algorithm;  // overrides the spec's
  std::string objective;
  long long seed = -1;
  int max_trials = 0;
  int threads = 0;  // 0: the machine's cores shared by its ranks
  bool no_pruning = false;
  std::string checkpoint;  // append-only trial log; resumes from it when it exists
  std::string interposer;  // emulation backend: `emulate --interposer`
  std::string work_dir;    // emulation backend: parent of the per-trial directories
  bool keep_trials = false;
};

/// Where the caller steps in (rank 0 only); each may be empty.
struct SearchHooks {
  std::function<core::Status()> before_search;      // e.g. create the output directory; errors stop
  std::function<void(const std::string&)> warning;  // the checkpoint's
  std::function<void(const SearchSpec&, const SearchProgress&, const std::vector<TrialResult>&,
                     bool final_line)>
      progress;
};

/// Stops the workers (rank 0) and finalizes MPI when it goes, after the caller's writing.
class MpiSession {
 public:
  explicit MpiSession(MpiWorld world) : world_(world) {}
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;
  ~MpiSession();
  const MpiWorld& world() const { return world_; }

 private:
  MpiWorld world_;
};

struct SearchRun {
  std::unique_ptr<MpiSession> mpi;
  bool worker = false;  // this rank evaluated rank 0's trials; nothing to write
  SearchSpec spec;
  SearchResult result;
  int threads = 1;
  BatchStats stats;
};

/// Runs the search `settings` ask for (under mpirun on every rank).
core::FlowResult<std::unique_ptr<SearchRun>> run_search_settings(const SearchSettings& settings,
                                                                 const SearchHooks& hooks);

}  // namespace powertrain::search
