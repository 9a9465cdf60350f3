// Perseus plans straight from a trace (issue 17 item 4): the GPU work of each rank of a
// pipeline-parallel trace is grouped into 1F1B instructions (forward/backward of microbatch m on
// stage s), each instruction's time and energy at every clock of the target GPU is modelled from
// its kernel mix, and the result is a profile::Profile the frontier solver takes like a measured
// CSV profile.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"
#include "device/gpu.h"
#include "frontier/problem.h"
#include "frontier/solver.h"
#include "graph/execution_graph.h"
#include "pipeline/operation_dag.h"
#include "profile/profile.h"

namespace powertrain::study {

/// One pipeline instruction found in a timeline (times from that timeline, seconds).
struct TraceInstruction {
  int stage = 0;
  int microbatch = 0;
  pipeline::InstructionKind kind = pipeline::InstructionKind::kForward;
  std::vector<std::int32_t> tasks;  // its GPU compute tasks, in start order
  double start_s = 0.0;             // first task's start (timeline clock)
  double end_s = 0.0;               // last task's end
  double matmul_s = 0.0;            // busy time of GEMM/attention-class kernels
  double memory_s = 0.0;            // busy time of memory-bound kernels, copies, memsets
  double idle_s = 0.0;              // span minus busy time (host-bound gaps inside)
  double receive_s = 0.0;           // wire time of the transfer it waits for (0 if none)
  double send_s = 0.0;  // wire time of a send after it on its own stream (holds the stage)
  double time_at_max_s() const { return receive_s + (end_s - start_s) + send_s; }
};

struct TracePipeline {
  int stages = 0;
  int microbatches = 0;
  std::vector<TraceInstruction> instructions;  // stage-major, in each stage's order
  double makespan_s = 0.0;  // first instruction start to last instruction end (all ranks)
};

/// Groups each rank's GPU work into the instructions of a synchronous 1F1B pipeline (one rank per
/// stage, in rank order), with `start_ns`/`end_ns` the timeline to read (e.g. a replay). GPU
/// tasks that are not NCCL work are split at the rank's send/recv tasks (the pipeline transfers;
/// other collectives are ignored); work before a stage's first receive and after its last send
/// (set-up, optimizer) is left out; a
/// group holding two instructions (stage 0: a backward then the next forward; last stage: a
/// forward and its backward) is split by the forward task count of the stage's pure forwards, else
/// by the kernel names seen in pure forwards and backwards. Each transfer adds its wire time (the
/// job's shortest send/recv) once: to the sending instruction when sends run on the compute
/// stream (they hold the stage), else to the receiving one. Errors (one line, saying why): fewer
/// than 2 ranks, a rank without send/recv, group counts that no microbatch count explains.
core::Result<TracePipeline> find_pipeline(const graph::ExecutionGraph& graph,
                                          const std::vector<std::int64_t>& start_ns,
                                          const std::vector<std::int64_t>& end_ns);

/// Time and energy of one instruction at `clock_mhz` on `gpu`: GEMM-class busy time runs as
/// tensor-core work and memory-bound busy time as HBM work through device::estimate_work (so the
/// former scales with 1/clock, the latter not, power-capped as the model says; scaled so that the
/// top clock takes the measured busy time, as the model may cap even there); idle gaps and the
/// received transfer keep their time, at static power and at static + collective activity.
device::WorkEstimate model_instruction(const TraceInstruction& instruction,
                                       const device::GpuSpec& gpu, double clock_mhz);

/// The profile of `pipeline` on `gpu`: per (stage, kind), the median instruction over
/// microbatches, at every clock of the GPU. Source string: `source`.
profile::Profile trace_profile(const TracePipeline& pipeline, const device::GpuSpec& gpu,
                               const std::string& source);

/// A frontier planned from a timeline: the pipeline found, its modelled profile, the planning
/// problem and its solved frontier.
struct TracePlan {
  TracePipeline pipeline;
  profile::Profile profile;
  double replayed_step_s = 0.0;  // the timeline's step (replayed from the trace)
  double outside_s = 0.0;        // step minus the instructions' makespan: kept as measured
  frontier::PlanningProblem problem;
  frontier::Frontier frontier;
  bool fastest_point_pinned = false;
  double t_min_s() const;  // planned time of the fastest point
};

struct TracePlanOptions {
  double unit_time_s = 0.0;    // τ; ≤ 0: the step / 4000 (quantization well under 1 %)
  double p_blocking_w = -1.0;  // < 0: the GPU's p_blocking_w
  frontier::SolverOptions solver;
};

/// find_pipeline + trace_profile + the frontier solver (1F1B, exponential fit, ceil
/// quantization, as `powertrain frontier`). The time outside the instructions (before the first,
/// after the last) becomes the schedule's constant data-loading node. Errors: those of
/// find_pipeline and build_planning_problem.
core::Result<TracePlan> plan_from_timeline(const graph::ExecutionGraph& graph,
                                           const std::vector<std::int64_t>& start_ns,
                                           const std::vector<std::int64_t>& end_ns,
                                           double replayed_step_s, const device::GpuSpec& gpu,
                                           const std::string& source,
                                           const TracePlanOptions& options = {});

}  // namespace powertrain::study
