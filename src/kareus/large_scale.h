// Kareus large-scale emulation (§6.3, Tables 6–8): one pipeline's Kareus and Megatron-LM +
// Perseus frontiers composed from partition searches, replicated over the data-parallel pipelines
// of each strong-scaling configuration (study::cluster_shape: N = GPUs / (tp × pp), M = global
// batch / (N × microbatch size)). Cluster energy = tp × N × one pipeline's energy (the cluster
// emulation's accounting with no straggler: §6.3 has none).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "profile/model_profile.h"
#include "study/cluster.h"

namespace powertrain::kareus {

class Profiler;

/// A method's iteration on the whole cluster.
struct ClusterPoint {
  double time_s = 0.0;
  double energy_j = 0.0;  // all GPUs, one iteration (realized)
};

/// One Table 6 row with the Table 7 and Table 8 metrics.
struct LargeScaleRow {
  study::ClusterConfig config;
  study::ClusterShape shape;
  ClusterPoint megatron;              // sequential, max clock
  std::vector<ClusterPoint> perseus;  // Megatron-LM + Perseus frontier (realized)
  std::vector<ClusterPoint> kareus;   // Kareus frontier (realized)
  ClusterPoint perseus_fastest, kareus_fastest;
  // Table 7: max-throughput reductions vs Megatron-LM, percent.
  double perseus_time_reduction_pct = 0.0, kareus_time_reduction_pct = 0.0;
  double perseus_energy_reduction_pct = 0.0, kareus_energy_reduction_pct = 0.0;
  // Table 8 vs M+P (nullopt: no Kareus point meets M+P's fastest time / least energy).
  std::optional<double> iso_time_energy_reduction_pct, iso_energy_time_reduction_pct;
  double solve_s = 0.0;  // both iteration frontiers
};

struct LargeScaleResult {
  std::string description;          // the job
  std::string profiler;             // Profiler::name()
  std::size_t partition_types = 0;  // distinct ones searched
  std::size_t evaluated = 0, space = 0;
  double search_s = 0.0;            // partition searches and microbatch frontiers
  std::vector<LargeScaleRow> rows;  // input order
  /// Per-pipeline microbatch options as Perseus profiles (option codes 1..n in the frequency
  /// column, slowest first): input for `powertrain cluster --profile` (stragglers on top of §6.3).
  profile::Profile megatron_profile, kareus_profile;
};

struct LargeScaleOptions {
  profile::ModelJobRequest request;  // model, GPU, tp, pp, microbatch size, sequence length
  /// Samples per iteration. Table 6 lists M = 2048 / N microbatches per pipeline, which with
  /// microbatch size 4 is 8192 samples (the text's "global batch 2048" counts microbatches; with
  /// 2048 samples M would be 512 / N). We follow Table 6.
  long long global_batch = 8192;
  std::vector<long long> gpus = {10240, 5120, 2560, 1280};
  bool exhaustive = false;  // per-partition search: MBO (Alg. 1, App. C) or every candidate
  std::uint64_t seed = 1;
};

/// §6.3's setting: Llama 3.3 70B on A100 SXM, TP 8 × PP 10, microbatch 4 × 4096, Table 6's 2048
/// microbatches per iteration (8192 samples), 10,240 / 5,120 / 2,560 / 1,280 GPUs.
LargeScaleOptions paper_large_scale_options();
/// One pipeline of that setting with `microbatches` per iteration (Tables 7-8 of `kareus
/// --table3`).
profile::ModelJobRequest table7_request(int microbatches);

/// Searches every distinct partition type once (identical stages share results) through
/// `profiler`, composes both methods' microbatch options per stage, then solves both iteration
/// frontiers per distinct M. Errors: the job's, cluster_shape's (prefixed), search or solver
/// errors.
core::Result<LargeScaleResult> emulate_large_scale(const LargeScaleOptions& options,
                                                   Profiler& profiler);

/// Paper values for a row (M = 16, 32, 64, 128), nullopt for other M.
struct PaperLargeScaleRow {
  double mp_time_pct, kareus_time_pct, mp_energy_pct, kareus_energy_pct;  // Table 7
  double iso_time_energy_pct, iso_energy_time_pct;                        // Table 8
};
std::optional<PaperLargeScaleRow> paper_large_scale_row(int microbatches);

}  // namespace powertrain::kareus
