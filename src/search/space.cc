#include "search/space.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <utility>

#include "search/emulation_trial.h"

namespace powertrain::search {
namespace {

constexpr std::array<std::string_view, kNumKnobs> kKnobNames = {"tp",
                                                                "pp",
                                                                "microbatch_size",
                                                                "virtual_stages",
                                                                "recompute",
                                                                "sequence_parallel",
                                                                "distributed_optimizer"};

bool is_boolean_knob(int knob) { return knob >= kRecompute; }

core::Error field_error(const std::string& source, const std::string& field,
                        const std::string& what) {
  return core::Error{fmt::format("{}: field '{}' {}", source, field, what)};
}

core::Result<int> positive_int(const nlohmann::json& value, const std::string& source,
                               const std::string& field, int max) {
  if (!value.is_number_integer() || value.get<long long>() < 1 || value.get<long long>() > max)
    return field_error(source, field, fmt::format("must be an integer from 1 to {}", max));
  return static_cast<int>(value.get<long long>());
}

core::Result<std::string> string_field(const nlohmann::json& value, const std::string& source,
                                       const std::string& field) {
  if (!value.is_string() || value.get<std::string>().empty())
    return field_error(source, field, "must be a non-empty string");
  return value.get<std::string>();
}

}  // namespace

std::string_view knob_name(int knob) { return kKnobNames[static_cast<std::size_t>(knob)]; }

std::string_view objective_name(Objective objective) {
  switch (objective) {
    case Objective::kTime:
      return "time";
    case Objective::kEnergy:
      return "energy";
    case Objective::kBoth:
      return "both";
  }
  return "?";
}

std::string_view algorithm_name(Algorithm algorithm) {
  switch (algorithm) {
    case Algorithm::kGrid:
      return "grid";
    case Algorithm::kRandom:
      return "random";
    case Algorithm::kCmaes:
      return "cmaes";
    case Algorithm::kNsga2:
      return "nsga2";
  }
  return "?";
}

long long SearchSpec::grid_size() const {
  long long n = 1;
  for (const auto& v : values) n *= static_cast<long long>(v.size());
  return n;
}

SearchSpec default_search_spec() {
  SearchSpec spec;
  spec.values[kTp] = {1, 2, 4, 8};
  spec.values[kPp] = {1, 2, 4, 8};
  spec.values[kMicrobatchSize] = {1, 2, 4, 6, 8};
  spec.values[kVirtualStages] = {1, 2, 4};
  spec.values[kRecompute] = {0, 1};
  spec.values[kSequenceParallel] = {0, 1};
  spec.values[kDistributedOptimizer] = {0, 1};
  return spec;
}

namespace {

// "early_stop": false, or {"top": n, "patience": n}.
core::Status parse_early_stop(const nlohmann::json& value, const std::string& source,
                              const std::string& key, SearchSpec& spec) {
  if (value.is_boolean() && !value.get<bool>()) {
    spec.early_stop_patience = 0;
    return core::Ok{};
  }
  if (!value.is_object())
    return field_error(source, key, "must be false or an object {\"top\": n, \"patience\": n}");
  for (const auto& [k, v] : value.items()) {
    const std::string field = "early_stop." + k;
    if (k != "top" && k != "patience")
      return field_error(source, field, "is unknown (known: top, patience)");
    auto n = positive_int(v, source, field, 1 << 20);
    if (!n) return n.error();
    (k == "top" ? spec.early_stop_top : spec.early_stop_patience) = *n;
  }
  return core::Ok{};
}

// A string field naming one of `names` (several names may give one value); `expected` lists
// them for the error.
template <typename Enum, std::size_t N>
core::Status parse_named(const nlohmann::json& value, const std::string& source,
                         const std::string& key,
                         const std::pair<std::string_view, Enum> (&names)[N],
                         std::string_view expected, Enum& out) {
  auto s = string_field(value, source, key);
  if (!s) return s.error();
  for (const auto& [name, named] : names) {
    if (*s == name) {
      out = named;
      return core::Ok{};
    }
  }
  return field_error(source, key, fmt::format("must be {}, got '{}'", expected, *s));
}

// "objective": time, energy or both.
core::Status parse_objective(const nlohmann::json& value, const std::string& source,
                             const std::string& key, SearchSpec& spec) {
  static constexpr std::pair<std::string_view, Objective> kNames[] = {
      {"time", Objective::kTime}, {"energy", Objective::kEnergy}, {"both", Objective::kBoth}};
  return parse_named(value, source, key, kNames, "time, energy or both", spec.objective);
}

// "algorithm": grid, random, cmaes or nsga2.
core::Status parse_algorithm(const nlohmann::json& value, const std::string& source,
                             const std::string& key, SearchSpec& spec) {
  static constexpr std::pair<std::string_view, Algorithm> kNames[] = {
      {"grid", Algorithm::kGrid},   {"random", Algorithm::kRandom},
      {"cmaes", Algorithm::kCmaes}, {"cma-es", Algorithm::kCmaes},
      {"nsga2", Algorithm::kNsga2}, {"nsga-ii", Algorithm::kNsga2}};
  return parse_named(value, source, key, kNames, "grid, random, cmaes or nsga2", spec.algorithm);
}

// "knobs": {name: [values]}, each list sorted and deduplicated.
core::Status parse_knobs(const nlohmann::json& value, const std::string& source,
                         const std::string& key, SearchSpec& spec) {
  if (!value.is_object()) return field_error(source, key, "must be an object");
  for (const auto& [name, list] : value.items()) {
    const std::string field = "knobs." + name;
    const auto it = std::find(kKnobNames.begin(), kKnobNames.end(), name);
    if (it == kKnobNames.end())
      return field_error(source, field,
                         "is unknown (known: tp, pp, microbatch_size, virtual_stages, "
                         "recompute, sequence_parallel, distributed_optimizer)");
    const int knob = static_cast<int>(it - kKnobNames.begin());
    if (!list.is_array() || list.empty())
      return field_error(source, field, "must be a non-empty array");
    std::set<int> chosen;
    for (const auto& item : list) {
      if (is_boolean_knob(knob)) {
        if (!item.is_boolean()) return field_error(source, field, "must be an array of true/false");
        chosen.insert(item.get<bool>() ? 1 : 0);
      } else {
        auto n = positive_int(item, source, field, 1 << 16);
        if (!n) return field_error(source, field, "must be an array of integers from 1 to 65536");
        chosen.insert(*n);
      }
    }
    spec.values[static_cast<std::size_t>(knob)].assign(chosen.begin(), chosen.end());
  }
  return core::Ok{};
}

}  // namespace

core::Result<SearchSpec> parse_search_spec(std::string_view text, const std::string& source) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    std::string what = e.what();
    if (const auto pos = what.find("] "); pos != std::string::npos) what = what.substr(pos + 2);
    return core::Error{source + ": invalid JSON: " + what};
  }
  if (!doc.is_object()) return core::Error{source + ": expected a JSON object"};
  SearchSpec spec = default_search_spec();
  spec.source = source;
  for (const auto& [key, value] : doc.items()) {
    if (key == "model") {
      auto s = string_field(value, source, key);
      if (!s) return s.error();
      spec.model = *s;
    } else if (key == "gpu") {
      auto s = string_field(value, source, key);
      if (!s) return s.error();
      spec.gpu = *s;
    } else if (key == "precision") {
      auto s = string_field(value, source, key);
      if (!s) return s.error();
      spec.precision = *s;
    } else if (key == "num_gpus") {
      auto n = positive_int(value, source, key, 1 << 16);
      if (!n) return n.error();
      spec.num_gpus = *n;
    } else if (key == "global_batch") {
      auto n = positive_int(value, source, key, 1 << 20);
      if (!n) return n.error();
      spec.global_batch = *n;
    } else if (key == "seq_len") {
      auto n = positive_int(value, source, key, 1 << 22);
      if (!n) return n.error();
      spec.seq_len = *n;
    } else if (key == "seed") {
      if (!value.is_number_unsigned())
        return field_error(source, key, "must be a non-negative integer");
      spec.seed = value.get<std::uint64_t>();
    } else if (key == "max_trials") {
      auto n = positive_int(value, source, key, 1 << 24);
      if (!n) return n.error();
      spec.max_trials = *n;
    } else if (key == "tau_steps") {
      auto n = positive_int(value, source, key, 100000);
      if (!n) return n.error();
      spec.tau_steps = *n;
    } else if (key == "cmaes_population") {
      auto n = positive_int(value, source, key, 10000);
      if (!n) return n.error();
      if (*n < 2) return field_error(source, key, "must be at least 2");
      spec.cmaes_population = *n;
    } else if (key == "cmaes_margin") {
      if (!value.is_boolean()) return field_error(source, key, "must be true or false");
      spec.cmaes_margin = value.get<bool>();
    } else if (key == "pruning") {
      if (!value.is_boolean()) return field_error(source, key, "must be true or false");
      spec.pruning = value.get<bool>();
    } else if (key == "early_stop") {
      if (auto parsed = parse_early_stop(value, source, key, spec); !parsed) return parsed.error();
    } else if (key == "objective") {
      if (auto parsed = parse_objective(value, source, key, spec); !parsed) return parsed.error();
    } else if (key == "algorithm") {
      if (auto parsed = parse_algorithm(value, source, key, spec); !parsed) return parsed.error();
    } else if (key == "knobs") {
      if (auto parsed = parse_knobs(value, source, key, spec); !parsed) return parsed.error();
    } else if (key == "emulation") {
      if (auto parsed = parse_emulation_spec(value, source, key, spec.emulation); !parsed)
        return parsed.error();
    } else {
      return field_error(source, key,
                         "is unknown (known: model, gpu, num_gpus, global_batch, seq_len, "
                         "precision, knobs, objective, algorithm, seed, max_trials, pruning, "
                         "early_stop, tau_steps, cmaes_population, cmaes_margin, emulation)");
    }
  }
  if (spec.grid_size() > 10'000'000)
    return core::Error{fmt::format("{}: field 'knobs' spans {} configurations (at most 10^7)",
                                   source, spec.grid_size())};
  return spec;
}

core::Result<SearchSpec> read_search_spec(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return core::Error{path + ": cannot open"};
  std::ostringstream text;
  text << in.rdbuf();
  if (text.str().size() > (std::size_t{1} << 20))
    return core::Error{path + ": larger than 1 MiB; not a search spec"};
  return parse_search_spec(text.str(), path);
}

ConfigValues values_of(const SearchSpec& spec, const Config& config) {
  auto v = [&](int knob) {
    return spec.values[static_cast<std::size_t>(knob)]
                      [static_cast<std::size_t>(config.index[static_cast<std::size_t>(knob)])];
  };
  ConfigValues out;
  out.tp = v(kTp);
  out.pp = v(kPp);
  out.microbatch_size = v(kMicrobatchSize);
  out.virtual_stages = v(kVirtualStages);
  out.recompute = v(kRecompute) != 0;
  out.sequence_parallel = v(kSequenceParallel) != 0;
  out.distributed_optimizer = v(kDistributedOptimizer) != 0;
  return out;
}

std::string config_label(const SearchSpec& spec, const Config& config) {
  const ConfigValues c = values_of(spec, config);
  std::string label =
      fmt::format("tp{} pp{} mb{} v{}", c.tp, c.pp, c.microbatch_size, c.virtual_stages);
  if (c.recompute) label += " rc";
  if (c.sequence_parallel) label += " sp";
  if (c.distributed_optimizer) label += " dopt";
  return label;
}

std::vector<Config> grid_configs(const SearchSpec& spec) {
  std::vector<Config> out;
  out.reserve(static_cast<std::size_t>(spec.grid_size()));
  Config c;
  while (true) {
    out.push_back(c);
    int k = kNumKnobs - 1;
    while (k >= 0) {
      auto& i = c.index[static_cast<std::size_t>(k)];
      if (++i < static_cast<int>(spec.values[static_cast<std::size_t>(k)].size())) break;
      i = 0;
      --k;
    }
    if (k < 0) break;
  }
  return out;
}

Config decode_unit_point(const SearchSpec& spec, const std::vector<double>& x) {
  Config c;
  for (int k = 0; k < kNumKnobs; ++k) {
    const int n = static_cast<int>(spec.values[static_cast<std::size_t>(k)].size());
    const double u =
        std::isfinite(x[static_cast<std::size_t>(k)]) ? x[static_cast<std::size_t>(k)] : 0.5;
    c.index[static_cast<std::size_t>(k)] =
        std::clamp(static_cast<int>(std::floor(u * n)), 0, n - 1);
  }
  return c;
}

Config repair_config(const SearchSpec& spec, Config c) {
  auto at = [&](int knob) -> int& { return c.index[static_cast<std::size_t>(knob)]; };
  auto value = [&](int knob) {
    return spec.values[static_cast<std::size_t>(knob)][static_cast<std::size_t>(at(knob))];
  };
  // Lowers a boolean knob to off when off is one of its values.
  auto switch_off = [&](int knob) {
    if (value(knob) != 0 && spec.values[static_cast<std::size_t>(knob)].front() == 0) at(knob) = 0;
  };
  while (spec.num_gpus % (value(kTp) * value(kPp)) != 0) {
    if (at(kPp) > 0)
      --at(kPp);
    else if (at(kTp) > 0)
      --at(kTp);
    else
      return c;  // nothing divides: left invalid
  }
  const int dp = spec.num_gpus / (value(kTp) * value(kPp));
  if (value(kTp) == 1) switch_off(kSequenceParallel);
  if (dp == 1) switch_off(kDistributedOptimizer);
  while (spec.global_batch % (value(kMicrobatchSize) * dp) != 0 && at(kMicrobatchSize) > 0)
    --at(kMicrobatchSize);
  const int microbatches = spec.global_batch % (value(kMicrobatchSize) * dp) == 0
                               ? spec.global_batch / (value(kMicrobatchSize) * dp)
                               : 0;
  if (value(kVirtualStages) > 1 &&
      (value(kPp) == 1 || value(kRecompute) != 0 || microbatches % value(kPp) != 0))
    at(kVirtualStages) = 0;
  return c;
}

}  // namespace powertrain::search
