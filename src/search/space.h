// Energy-aware configuration search (Maya-Search's Megatron-LM space, docs/search.md): the search
// space read from JSON, and one configuration of it.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace powertrain::search {

/// The knobs, in a fixed order (the order of Config::index and of the CMA-ES coordinates).
enum Knob : int {
  kTp = 0,
  kPp,
  kMicrobatchSize,  // Maya's "microbatch multiplier": sequences per microbatch
  kVirtualStages,   // interleaved 1F1B chunks per GPU (1 = plain 1F1B)
  kRecompute,
  kSequenceParallel,
  kDistributedOptimizer,
  kNumKnobs
};
std::string_view knob_name(int knob);

enum class Objective { kTime, kEnergy, kBoth };
enum class Algorithm { kGrid, kRandom, kCmaes, kNsga2 };
std::string_view objective_name(Objective objective);
std::string_view algorithm_name(Algorithm algorithm);

/// The emulation trial backend (Maya mode, docs/search.md): each trial runs a real CUDA program
/// under `powertrain emulate` and plans its frontier with `plan --emulated`. Templates take
/// {tp} {pp} {dp} {mb} {microbatches} {v} {rc} {sp} {dopt} {gpus} {work_dir}.
struct EmulationSpec {
  std::string command;         // program and arguments, split at spaces; empty: model backend
  std::string ranks = "{pp}";  // `emulate --ranks`
  std::string gpu;             // `emulate --gpu`; empty: the spec's gpu
  std::string kernel_table;    // `--kernel-table CSV` for both emulate and plan; empty: none
  double max_host_gap_us = 10.0;
  // "model": every host gap between calls is modelled_host_gap_us, so a trial's numbers do not
  // depend on this machine's load (identical across runs); "measured": the program's own host
  // time as it ran here (capped by max_host_gap_us), which varies from run to run.
  std::string host_time = "model";
  double modelled_host_gap_us = 1.0;
  double timeout_s = 600.0;  // per emulation
  bool enabled() const { return !command.empty(); }
};

struct SearchSpec {
  std::string source;  // file name, for messages
  std::string model = "gpt3-2.7b";
  std::string gpu = "h100-sxm";
  int num_gpus = 8;
  int global_batch = 64;  // sequences per iteration
  int seq_len = 0;        // 0 = the model's
  std::string precision = "bf16";
  /// Values of every knob (booleans as 0/1), each sorted ascending, no repeats.
  std::array<std::vector<int>, kNumKnobs> values;
  Objective objective = Objective::kBoth;
  Algorithm algorithm = Algorithm::kGrid;
  std::uint64_t seed = 1;
  int max_trials = 0;            // 0: grid = all, random/cmaes = 15 % of the grid
  bool pruning = true;           // Maya's fidelity-preserving tactics
  int early_stop_top = 5;        // early stop when the best `top` are unchanged for
  int early_stop_patience = 20;  // `patience` consecutive valid trials (0 = never)
  int tau_steps = 10;            // τ = shortest instruction at the highest clock / tau_steps
  int cmaes_population = 0;      // 0 = 8 (CMA-ES λ; NSGA-II: 0 = 24)
  bool cmaes_margin = true;      // CMA-ES with Margin on the (all discrete) knob coordinates
  EmulationSpec emulation;       // "emulation": {...}; unset: the model backend

  /// Grid size: product of the value counts.
  long long grid_size() const;
};

/// Defaults: Maya's Table 3 knob ranges (TP 1/2/4/8, PP 1/2/4/8, microbatch 1/2/4/6/8, virtual
/// stages 1/2/4, recompute, sequence parallel and distributed optimizer on/off).
SearchSpec default_search_spec();

/// Parses the JSON spec; every field optional with the defaults above. Errors are one line naming
/// the source and field, e.g. "s.json: field 'knobs.tp' must be a non-empty array of positive
/// integers"; unknown fields are errors.
core::Result<SearchSpec> parse_search_spec(std::string_view text, const std::string& source);
core::Result<SearchSpec> read_search_spec(const std::string& path);

/// One configuration: the value index of every knob.
struct Config {
  std::array<int, kNumKnobs> index{};
  bool operator==(const Config&) const = default;
  auto operator<=>(const Config&) const = default;
};

/// Knob values of a configuration.
struct ConfigValues {
  int tp = 1, pp = 1, microbatch_size = 1, virtual_stages = 1;
  bool recompute = false, sequence_parallel = false, distributed_optimizer = false;
};
ConfigValues values_of(const SearchSpec& spec, const Config& config);
/// "tp2 pp4 mb1 v2 sp dopt" (recompute "rc"), for tables and labels.
std::string config_label(const SearchSpec& spec, const Config& config);

/// Every configuration in lexicographic index order (tp slowest). O(grid).
std::vector<Config> grid_configs(const SearchSpec& spec);

/// The configuration nearest a point of the unit cube (coordinate k picks value
/// floor(x_k × count_k), clamped): the CMA-ES relaxation.
Config decode_unit_point(const SearchSpec& spec, const std::vector<double>& x);

/// The structurally valid configuration a CMA-ES proposal stands for, so the relaxation never
/// lands in an impossible region: sequence parallelism with tp 1 and the distributed optimizer
/// with dp 1 are switched off (Megatron runs them as without); pp, then tp, step down until tp·pp
/// divides the GPU count; the microbatch steps down until microbatch·dp divides the global batch;
/// virtual stages drop to the least value when interleaving is impossible (pp 1, recomputation,
/// microbatches not a multiple of pp). Valid configurations are returned unchanged. Megatron's
/// model-dependent rules are not repaired (those proposals stay invalid).
Config repair_config(const SearchSpec& spec, Config config);

}  // namespace powertrain::search
