// Cluster emulation (Perseus §6.3): N data-parallel copies of one pipeline, one of them a
// straggler, and how much energy Perseus and EnvPipe save across the whole cluster per iteration,
// split into intrinsic bloat (removed at T_min) and extrinsic bloat (removed by slowing the
// non-stragglers towards T_opt = min(T*, T′), §3.1).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "core/result.h"
#include "frontier/problem.h"
#include "frontier/solver.h"
#include "pipeline/schedule.h"
#include "profile/profile.h"

namespace powertrain::study {

/// One cluster configuration (a row of Perseus Table 5).
struct ClusterConfig {
  long long gpus = 0;       // all GPUs of the job
  int tensor_parallel = 1;  // GPUs per pipeline stage (each runs the stage's plan)
  int pipeline_stages = 1;  // GPUs along one pipeline
  long long global_batch_samples = 0;
  long long microbatch_samples = 1;
};

/// What a configuration means for one pipeline.
struct ClusterShape {
  long long pipelines = 0;            // N = gpus / (tp × pp), data-parallel replicas
  int microbatches_per_pipeline = 0;  // M = global batch / (N × microbatch size)
};

/// Largest number of microbatches per pipeline accepted (bounds solve time and memory).
inline constexpr int kMaxClusterMicrobatches = 4096;

/// N and M of a configuration. Errors (one line, naming the numbers): non-positive sizes, GPUs not
/// a multiple of tp × pp, global batch not a multiple of N × microbatch size, M above
/// kMaxClusterMicrobatches.
core::Result<ClusterShape> cluster_shape(const ClusterConfig& config);

/// Straggler slowdowns T′/T_min used when none are given (1.0 = a straggler exactly as fast as the
/// others, i.e. intrinsic savings only).
std::vector<double> default_cluster_slowdowns();

struct ClusterSettings {
  frontier::PlanningSettings planning;
  /// Schedule, chunks and constant-time nodes of every pipeline; num_gpus and num_microbatches are
  /// set per configuration from pipeline_stages and M.
  pipeline::PipelineSpec pipeline;
  /// Straggler slowdowns T′/T_min; sorted and de-duplicated by emulate_cluster. Each ≥ 1, ≤ 100.
  std::vector<double> slowdowns = default_cluster_slowdowns();
  frontier::MaxFlowEngine engine = frontier::MaxFlowEngine::kDinic;
  /// Called before each configuration's solve (index, count, config, shape) — the solves take
  /// seconds, so callers can show progress. Configurations with the same pipeline share a solve.
  std::function<void(std::size_t, std::size_t, const ClusterConfig&, const ClusterShape&)>
      on_config_start;
  /// Called after each configuration with its solve time in seconds (0 when reused).
  std::function<void(std::size_t, std::size_t, double)> on_config_done;
};

/// Energy of one way of running the cluster for one iteration at one slowdown.
/// Cluster energy = tp × (Σ over the N − 1 non-straggler pipelines + the straggler pipeline).
struct ClusterEnergy {
  double iteration_time_s = 0.0;   // the job's iteration: max(T′, the non-stragglers' own time)
  double pipeline_energy_j = 0.0;  // one non-straggler pipeline (one GPU per stage), blocking incl.
  double cluster_energy_j = 0.0;   // all GPUs of the job
  double savings_fraction = 0.0;   // 1 − cluster energy / baseline cluster energy
  double pipeline_savings_fraction = 0.0;  // 1 − pipeline energy / baseline pipeline energy
};

/// One (configuration, slowdown) outcome. Planned energies are compared with a baseline in the
/// planned time frame (T′ = slowdown × planned T_min) and measured ones with a baseline in the
/// measured frame (T′ = slowdown × measured all-max-clock time), so that quantization (planned
/// T_min is up to τ per critical instruction shorter than measured) never counts as a slowdown.
struct ClusterSlowdownResult {
  double slowdown = 1.0;                   // T′ / T_min
  double straggler_time_s = 0.0;           // T′ = slowdown × T_min (planned T_min)
  double measured_straggler_time_s = 0.0;  // slowdown × measured all-max-clock iteration time
  double target_time_s = 0.0;              // T_opt = min(T*, T′)
  std::size_t point = 0;                   // frontier point deployed on every non-straggler
  double planned_time_s = 0.0;             // its planned iteration time (≤ T_opt)
  /// Every pipeline at its highest measured clock, finishing at T_min and blocking until T′
  /// (measured energies, planned T_min: Perseus Table 6 definition).
  ClusterEnergy baseline;
  /// Non-stragglers run the frontier point for T_opt (planned energy of the fitted model).
  ClusterEnergy perseus;
  /// Non-stragglers keep the T_min point whatever T′ is: the intrinsic part of Perseus's savings.
  ClusterEnergy intrinsic_only;
  /// Every pipeline at its highest clock, measured time and energy, blocking until the measured T′.
  ClusterEnergy measured_baseline;
  /// Perseus's point run with its discrete measured clocks (vs measured_baseline).
  ClusterEnergy perseus_realized;
  /// EnvPipe's single point (measured), blocking until the measured T′, or slowing the job when it
  /// is slower than that (vs measured_baseline).
  ClusterEnergy envpipe;
  /// Perseus's planned savings split (fractions of the baseline): intrinsic + extrinsic = total.
  double intrinsic_fraction = 0.0;
  double extrinsic_fraction = 0.0;
};

/// Everything computed for one configuration.
struct ClusterConfigResult {
  ClusterConfig config;
  ClusterShape shape;
  double t_min_s = 0.0;   // planned, fastest frontier point
  double t_star_s = 0.0;  // planned, least-energy frontier point
  std::size_t frontier_points = 0;
  double solve_seconds = 0.0;
  bool fastest_point_pinned = false;  // pin_fastest_point moved T_min's plan to max-clock speed
  /// Per pipeline without any straggler (Perseus Table 6): T_min point planned vs max clock.
  double pipeline_max_clock_energy_j = 0.0;  // measured clocks, lasting T_min
  double pipeline_t_min_energy_j = 0.0;      // planned
  double pipeline_intrinsic_fraction = 0.0;
  double max_clock_time_s = 0.0;    // measured all-max-clock iteration time
  double max_clock_energy_j = 0.0;  // measured, one pipeline
  double envpipe_time_s = 0.0;      // measured
  double envpipe_energy_j = 0.0;    // measured, one pipeline
  double envpipe_fraction = 0.0;    // 1 − EnvPipe / max clock, both measured, one pipeline
  std::string envpipe_label;
  std::vector<ClusterSlowdownResult> slowdowns;  // ascending
  /// The ★ of Perseus Figure 8: the outcome at T′ = T* (slowdown T*/T_min), where savings peak.
  ClusterSlowdownResult at_t_star;
};

struct ClusterEmulation {
  std::string profile_source;
  frontier::PlanningSettings planning;
  pipeline::PipelineSpec pipeline;  // as given (per-config sizes left out)
  std::vector<double> slowdowns;
  std::vector<ClusterConfigResult> configs;  // in input order
};

/// Checks every configuration and the slowdowns, builds each pipeline's planning problem (so that
/// bad input fails before any solve), then solves each distinct pipeline's frontier and evaluates
/// every slowdown. Errors: those of cluster_shape, fewer than 2 pipelines, those of
/// build_planning_problem (prefixed with the configuration), bad slowdowns, no configurations.
core::Result<ClusterEmulation> emulate_cluster(const profile::Profile& profile,
                                               const std::vector<ClusterConfig>& configs,
                                               const ClusterSettings& settings);

}  // namespace powertrain::study
