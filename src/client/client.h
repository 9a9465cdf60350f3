// The training-side plan client: registers a job/rank with a Perseus/Zeus plan server, fetches the
// rank's frequency schedule, and around each pipeline instruction sets the planned GPU clock on a
// separate clock thread (NVML), measuring iteration time and energy and posting them back.
// No call made by the training thread waits on the network or on NVML.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "client/protocol.h"
#include "core/result.h"

namespace powertrain::client {

struct ClientOptions {
  std::string server_url;  ///< "http://host:port[/prefix]"; empty: no server (measure only)
  std::string job_id;      ///< empty: rank 0 registers the job (other ranks must be given the id)
  int rank = 0, dp_rank = 0, pp_rank = 0, tp_rank = 0;
  int dp_degree = 1, pp_degree = 1, tp_degree = 1, world_size = 1;
  int device_id = 0;  ///< NVML device index
  std::string job_metadata;
  int num_microbatches = 0;    ///< sent at registration (powertrain serve extension) when > 0
  std::string nvml_library;    ///< "" → $POWERTRAIN_NVML_LIBRARY or libnvidia-ml.so.1
  bool use_nvml = true;        ///< false: no NVML at all (no clocks, no energy)
  bool control_clocks = true;  ///< false: measure only, never lock clocks
  bool reset_clocks_on_close = true;
  int report_every_iterations = 0;  ///< post a ProfilingResult every N iterations; 0: never
  int refresh_schedule_every_iterations =
      0;                               ///< re-fetch the schedule every N iterations; 0: never
  double power_sample_period_s = 0.1;  ///< power sampling when the energy counter is missing
  double request_timeout_s = 10.0;
  double schedule_timeout_s = 3600.0;          ///< the server may hold /schedule until it has one
  std::vector<int> available_frequencies_mhz;  ///< overrides NVML's list (needed without NVML)
  bool quiet = false;                          ///< no stderr line when NVML is missing
  /// In-vivo profiling (docs/client.md): expect the server to profile this job. While it does,
  /// the schedule is fetched after every step and the stage's reporting rank posts every swept
  /// iteration with its per-instruction time and energy; afterwards the client polls GET /job
  /// until the frontier is characterized and then follows the planned schedule. (A schedule
  /// carrying a profiling directive starts this even when false.)
  bool profile_in_vivo = false;
  /// POST /profiling/{job} with these settings once registered (retried while other stages'
  /// ranks are not registered yet). Usually rank 0's; implies profile_in_vivo.
  std::optional<ProfilingRequest> start_profiling;
  double job_poll_period_s = 0.25;  ///< GET /job at most this often while waiting on the server
};

/// A clock the clock thread applied (for tests and logs).
struct AppliedClock {
  int mhz = 0;
  long thread_id = 0;  ///< gettid() of the thread that called NVML
};

struct IterationMeasurement {
  double time_s = 0.0;     ///< measured wall time between on_step_begin and on_step_end
  double energy_j = -1.0;  ///< measured GPU energy over the same window; < 0 when unavailable
};

struct ClientStatus {
  bool nvml_loaded = false;
  std::string energy_source;  ///< "energy counter", "power sampling" or "none"
  bool job_registered = false;
  bool schedule_received = false;
  int schedule_length = 0;
  long long iterations = 0;
  long long results_posted = 0;
  long long network_errors = 0;
  long long clock_errors = 0;
  /// In-vivo profiling: "off", "waiting" (for the server to start it), "p_blocking", "sweep",
  /// "characterizing" (the server solves the frontier) or "planned" (following its plan).
  std::string profiling_phase;
  int profiling_clock_mhz = 0;             ///< the sweep clock of the schedule in effect
  long long profiling_results_posted = 0;  ///< swept iterations and P_blocking windows accepted
  long long stale_results = 0;  ///< 409: swept iterations at a clock the server had already left
  long long sweep_iterations_skipped = 0;  ///< not posted: the clock had enough, or no energy
  long long apportioned_iterations = 0;    ///< per-instruction energy split by time (counter flat)
  std::string nvml_message;                ///< why NVML is unavailable ("" when loaded)
  std::string last_background_error;       ///< the latest network/NVML error of a worker thread
};

class Client {
 public:
  /// Validates the options, loads NVML (a missing NVML prints one line and disables clock control
  /// and energy), starts the clock and network threads and queues job/rank registration and the
  /// schedule fetch. Errors: bad options or URL only; the network is never waited for.
  static core::Result<std::unique_ptr<Client>> create(const ClientOptions& options);
  /// Stops both threads (cancelling a request in flight) and resets locked clocks.
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  /// Blocks until the job id is known (rank 0: registered) or `timeout_s` passes; "" on timeout.
  std::string wait_for_job_id(double timeout_s) const;
  /// Blocks until a schedule has arrived or `timeout_s` passes. The schedule takes effect at the
  /// next on_step_begin; before that instructions run at whatever clock the GPU has.
  bool wait_for_schedule(double timeout_s) const;

  /// Zeus's callbacks. Instructions must follow the schedule (name of the next pair); on_step_end
  /// checks that the iteration consumed it exactly. Errors say which pair was expected. O(1), no
  /// I/O: clock changes and energy reads are queued to the clock thread.
  core::Status on_step_begin();
  core::Status on_step_end();
  core::Status on_instruction_begin(const std::string& name);
  core::Status on_instruction_end(const std::string& name);

  /// In-vivo profiling: queues POST /profiling/{job} (see ClientOptions::start_profiling).
  core::Status start_profiling(const ProfilingRequest& request);
  /// True when the schedule in effect asks this rank to measure P_blocking and it has not yet:
  /// then, between two steps, call on_p_blocking_begin(), keep the GPU blocked on P2P
  /// communication (e.g. a recv whose peer sleeps), and on_p_blocking_end(). The window's
  /// measured time and energy are posted as the P_blocking measurement.
  bool p_blocking_requested() const;
  core::Status on_p_blocking_begin();
  core::Status on_p_blocking_end();

  /// Adds an iteration measured elsewhere (time s, energy J) to the next posted result.
  core::Status report_iteration(double time_s, double energy_j);
  /// Queues POST /straggler/{job} (the server then serves T_opt = min(T*, T')). Errors: a report
  /// that is not exactly one of rank/pipeline and one of slowdown/delay_s (see StragglerReport).
  core::Status report_straggler(const StragglerReport& report);
  /// Queues DELETE /straggler/{job}: every rank returns to T_min's plan.
  core::Status clear_stragglers();
  /// Uses `schedule` from the next on_step_begin (offline use: a plan written by
  /// `powertrain frontier`, no server).
  void set_schedule(Schedule schedule);
  /// Queues a new schedule fetch (e.g. after a straggler report); it applies at a step boundary.
  core::Status refresh_schedule();
  /// GET /frontier/{job}, waiting at most timeout_s: blocking, not for the training loop.
  core::Result<std::string> fetch_frontier(double timeout_s);
  /// Waits until both queues are empty (everything queued so far is done); false on timeout.
  bool flush(double timeout_s);

  ClientStatus status() const;
  std::vector<AppliedClock> applied_clocks() const;
  std::vector<IterationMeasurement> iterations() const;
  Schedule schedule() const;  ///< the schedule in effect (empty until one applies)
  long clock_thread_id() const;
  std::string job_id() const;

 private:
  struct State;
  explicit Client(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace powertrain::client
