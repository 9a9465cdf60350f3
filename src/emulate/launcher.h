// Starts an unmodified CUDA program as an emulated multi-GPU job: one process per rank (or per
// group of devices with devices_per_process > 1) with the usual distributed environment and the
// interposer preloaded, forwards their output line by line with a "[rank N] " prefix, and reports
// how each process ended. The analysis of the traces they write is emulate.h's.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "device/gpu.h"

namespace powertrain::emulate {

/// What the command line asked for; 0 = not given. resolve_layout turns it into a job.
struct LayoutRequest {
  int gpus = 0;                 // --gpus: GPUs of the whole job
  int ranks = 0;                // --ranks: processes
  int nodes = 0;                // --nodes
  int gpus_per_node = 0;        // --gpus-per-node
  int devices_per_process = 0;  // --devices-per-process (older spelling of gpus / ranks)
};

struct Layout {
  int nodes = 1;
  int gpus_per_node = 1;
  int devices_per_process = 1;
  int processes = 1;
  int gpus() const { return nodes * gpus_per_node; }
  std::string explanation;  // one sentence: what starts and why (the launcher's first line)
};

/// The default is one process that sees all the job's GPUs (--gpus, default 1), because most
/// programs are either single-GPU or drive their devices from one process; --ranks N starts N
/// processes (torchrun-style) with G / N devices each. Without --gpus the GPU count follows
/// --nodes × --gpus-per-node, or --ranks × --devices-per-process; without --nodes each node has
/// up to 8 GPUs. Errors (one line naming the flags): counts that do not divide, a process whose
/// devices would straddle two nodes, --nodes × --gpus-per-node different from --gpus.
core::Result<Layout> resolve_layout(const LayoutRequest& request);

struct LaunchOptions {
  std::vector<std::string> command;  // program and arguments
  std::string gpu = "h100";          // catalog name
  int nodes = 1;
  int gpus_per_node = 8;
  int devices_per_process = 1;      // divides gpus_per_node or is a multiple of it
  std::filesystem::path trace_dir;  // POWERTRAIN_EMU_DIR (created if missing)
  std::string interposer;           // path of libpowertrain_cuda.so (find_interposer)
  std::string job_id;               // POWERTRAIN_EMU_JOB; empty: derived from pid and time
  double timeout_s = 0.0;           // > 0: SIGTERM (then SIGKILL after 5 s) when exceeded
  bool check_static_cudart = true;
  /// Second pass of `emulate --two-pass`: the directory of predicted event times (rank-N.tsv,
  /// write_predicted_events) that the interposer reports to cudaEventElapsedTime. Empty: none.
  std::filesystem::path event_times_dir;
  /// Receives every output line of every process (without the newline); default: written to
  /// this process's stdout/stderr as "[rank N] line".
  std::function<void(int rank, bool is_stderr, std::string_view line)> on_line;
};

struct ProcessExit {
  int rank = 0;
  std::int64_t pid = 0;
  int exit_code = -1;  // when it exited
  int signal = 0;      // when a signal ended it
  bool timed_out = false;
  bool ok() const { return signal == 0 && exit_code == 0; }
  std::string describe() const;  // "exit code 0", "killed by signal 11 (Segmentation fault)"
};

struct LaunchResult {
  std::vector<ProcessExit> processes;  // by rank
  int world_size = 0;                  // processes
  int gpus = 0;                        // processes × devices_per_process
  int master_port = 0;
  double wall_s = 0.0;
  bool all_ok() const;
};

/// The environment of rank `rank` (added to the inherited one): RANK, WORLD_SIZE, LOCAL_RANK,
/// LOCAL_WORLD_SIZE, NODE_RANK, MASTER_ADDR=127.0.0.1, MASTER_PORT, LD_PRELOAD (interposer first,
/// then any inherited entries), POWERTRAIN_EMU_DIR/_GPU/_GPU_NAME/_MEMORY_BYTES/_SM_COUNT/_CC/
/// _CLOCK_MHZ/_DEVICES/_JOB/_EVENT_TIMES. Entries are "NAME=value".
std::vector<std::string> rank_environment(const LaunchOptions& options, const device::GpuSpec& gpu,
                                          int rank, int world_size, int master_port);

/// CUDA compute capability of a catalog GPU ("9.0" for h100-sxm/h200, "8.0" for A100, "8.6" for
/// A40, "7.0" for V100).
std::string compute_capability(const device::GpuSpec& gpu);

/// Finds the interposer: `explicit_path` (--interposer) if given, else $POWERTRAIN_INTERPOSER,
/// else libpowertrain_cuda.so next to `self_dir` (the powertrain binary's directory), in its
/// src/interposer/ or interposer/ subdirectory, or ../lib[/powertrain]/. Errors: an explicit path
/// that does not exist; nothing found (the message lists where it looked and how to fix it).
core::Result<std::string> find_interposer(const std::string& explicit_path,
                                          const std::filesystem::path& self_dir);

/// Resolves a program name like execvp does (a name without '/' is searched in $PATH).
/// Errors: not found or not executable.
core::Result<std::string> resolve_program(const std::string& name);

/// A free TCP port on 127.0.0.1 (bound and released; another process could still take it).
int free_port();

/// Starts nodes × gpus_per_node / devices_per_process processes with posix_spawn, forwards their
/// output, waits for all of them. Errors (before anything starts): empty command, bad topology,
/// unknown GPU, program not found, a program linked with the static CUDA runtime, interposer
/// missing, trace directory not creatable, spawn failure. A process that fails is reported in
/// the result, not as an error.
core::Result<LaunchResult> launch(const LaunchOptions& options);

}  // namespace powertrain::emulate
