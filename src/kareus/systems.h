// The five systems of Kareus §6.1 on one job (Megatron-LM, Megatron-LM + Perseus, Nanobatching,
// Nanobatching + Perseus, Kareus), their comparison metrics (§6.1, Figure 8) and the Table 3
// workload set, all on the model backend.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"
#include "kareus/compose.h"
#include "kareus/plans.h"
#include "kareus/profiler.h"
#include "profile/model_profile.h"
#include "workload/memory.h"

namespace powertrain::kareus {

enum SystemIndex : int {
  kMegatron = 0,
  kMegatronPerseus = 1,
  kNanobatching = 2,
  kNanobatchingPerseus = 3,
  kKareus = 4,
  kNumSystems = 5
};
const char* system_name(int system);

/// A system's realized iteration points for the whole job: (time s, energy J of all GPUs),
/// slowest first (one point for Megatron-LM and Nanobatching).
struct SystemFrontier {
  std::string name;
  std::vector<std::pair<double, double>> points;
};

/// Search results of partition types, shared by every stage and workload that has a byte-identical
/// type (the layers of both stages of a job, mostly). Keyed by everything a result depends on: the
/// GPU's constants and clocks, the concurrency constants, the search settings and the partition's
/// kernels to the bit. Not thread-safe: one per thread.
class SearchCache {
 public:
  struct Entry {
    std::vector<Evaluated> found;     // Kareus's candidates (MBO or exhaustive)
    std::vector<Evaluated> defaults;  // Nanobatching's schedule at every clock
    std::size_t space_size = 0;
  };
  /// nullptr when absent.
  const Entry* find(const std::string& key) const;
  const Entry& insert(const std::string& key, Entry entry);
  std::size_t hits = 0, misses = 0;

 private:
  std::map<std::string, Entry> entries_;
};

struct SystemsOptions {
  bool exhaustive = false;  // exhaustive per-partition search instead of MBO
  std::uint64_t seed = 1;
  ConcurrencyParams params;
  // Measures the partition candidates (solo kernels and sequential microbatches stay modelled);
  // null: the concurrency model with `params`.
  Profiler* profiler = nullptr;
};

struct SystemsResult {
  std::array<SystemFrontier, kNumSystems> systems;
  long long gpus = 0;         // tp × cp × dp × pp (validate_job bounds each, dp × cp ≤ 2^16)
  std::size_t evaluated = 0;  // partition schedules evaluated by Kareus's search (cache misses)
  std::size_t space_total = 0;      // candidates in the searched spaces (cache misses)
  std::size_t partition_types = 0;  // per (stage, direction), summed
  std::vector<int> clocks_mhz;      // the App. C clock grid
  // What the Perseus-planned systems (M+P, N+P, Kareus) chose at each frontier point, for the
  // plan files; realized point i of systems[k] is plans[k]->iteration.realized[i]. Null for
  // Megatron-LM and Nanobatching (one all-max-clock point).
  std::array<std::shared_ptr<const SystemPlans>, kNumSystems> plans;
};

/// Builds the microbatch options of every system and solves the Perseus iteration frontiers.
/// Energies are for all GPUs (a pipeline's × tp × cp × dp: every rank of a TP/CP group runs the
/// same plan). `cache` may be null. Errors: the job has no collective to overlap (tp and cp 1),
/// MBO or planning failures.
core::Result<SystemsResult> run_systems(const profile::ModelJob& job, int microbatches,
                                        const SystemsOptions& options, SearchCache* cache);

/// Fastest point (least energy among equally fast ones).
std::pair<double, double> fastest_point(const SystemFrontier& f);
/// Least energy within `time_s` (nullopt: no point meets it).
std::optional<double> energy_within(const SystemFrontier& f, double time_s);
/// Least time within `energy_j`.
std::optional<double> time_within(const SystemFrontier& f, double energy_j);

/// Figure 8 metrics of `other` against the baseline frontier `base` (M+P), in %: energy reduction
/// at base's minimum time, and time reduction at base's minimum energy (nullopt: "—").
struct FrontierImprovement {
  std::optional<double> iso_time_energy_reduction_pct;
  std::optional<double> iso_energy_time_reduction_pct;
};
FrontierImprovement frontier_improvement(const SystemFrontier& base, const SystemFrontier& other);

/// True when every point of `dominated` has a point of `f` no slower and using no more energy,
/// each within the relative tolerance.
bool frontier_dominates(const SystemFrontier& f, const SystemFrontier& dominated,
                        double tolerance = 1e-9);

/// App. B's global space of a partition: every supported clock from 900 MHz (0.64 f_max) up, 1..30
/// communication SMs and every launch slot (A100: 35 × 30 × slots). Must-show 1 measures MBO's
/// evaluated fraction against it.
SearchSpace global_search_space(const device::GpuSpec& gpu, const PartitionType& partition);

/// The distinct partition types of a job's stages (forward and backward), by kernels and group.
std::vector<PartitionType> unique_partition_types(const profile::ModelJob& job);

// ---- Table 3 --------------------------------------------------------------------------------

/// One testbed workload of Table 3 (PP 2, 8 microbatches, A100).
struct Table3Workload {
  std::string model;  // model zoo name
  int tp = 8;
  int cp = 1;
  int microbatch_size = 8;
  int seq_len = 4096;
  std::string label() const;  // "llama3.2-3b TP8 8x4K" / "qwen3-1.7b CP2+TP4 16x4K"
};
/// The 12 workloads in Table 3's order (Llama 3.2 3B then Qwen 3 1.7B; TP8 then CP2+TP4;
/// 8×4K, 8×8K, 16×4K).
std::vector<Table3Workload> table3_workloads();
/// The job request of a Table 3 workload: PP 2, 8 microbatches, a100-sxm, bf16,
/// min-imbalance stages ("as balanced as possible", §6.1).
profile::ModelJobRequest table3_request(const Table3Workload& w);
/// GPU memory of the testbed: AWS p4d.24xlarge = A100 SXM4 40 GB (§6.1).
inline constexpr double kTable3GpuMemoryGib = 40.0;
/// Board power limit of the testbed GPU: an A100 SXM4 40 GB's default and maximum power limit is
/// its 400 W TDP (NVIDIA A100 datasheet), while the catalog's a100-sxm keeps the 500 W of the
/// HGX system the Perseus profile it is calibrated on was measured with. The paper's §6.2.1 case
/// study (overlap at 1,410 MHz throttles to ~1,350 MHz) is this limit at work.
inline constexpr double kTable3PowerLimitW = 400.0;
/// table3_request built (profile::build_model_job) on the testbed GPU: kTable3PowerLimitW.
core::Result<profile::ModelJob> build_table3_job(const Table3Workload& w);
/// The paper trains with activation checkpointing (§6.1); the memory check uses this setting
/// (the time model of run_systems has no recompute ops either way, as in the paper's tables).
inline constexpr bool kTable3Recompute = true;
/// Per-GPU memory of the job on the testbed GPU (kTable3GpuMemoryGib) with kTable3Recompute.
core::Result<workload::MemoryEstimate> table3_memory(const profile::ModelJob& job,
                                                     bool recompute = kTable3Recompute);

}  // namespace powertrain::kareus
