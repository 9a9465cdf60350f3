#include "cli/cluster_flags.h"

#include <fmt/core.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <system_error>
#include <utility>

#include "cli/flags.h"

namespace powertrain::cli {
namespace {

core::Result<long long> parse_count(const std::string& flag, const std::string& text) {
  const std::string item = trimmed(text);
  long long value = 0;
  auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
  if (item.empty() || ec != std::errc() || ptr != item.data() + item.size() || value <= 0 ||
      value > 1'000'000'000LL) {
    return core::Error{
        fmt::format("{}: expected a positive integer up to 1e9, got '{}'", flag, text)};
  }
  return value;
}

core::Result<double> parse_number(const std::string& flag, const std::string& text) {
  const std::string item = trimmed(text);
  double value = 0.0;
  auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), value);
  if (item.empty() || ec != std::errc() || ptr != item.data() + item.size() ||
      !std::isfinite(value)) {
    return core::Error{fmt::format("{}: expected a number, got '{}'", flag, text)};
  }
  return value;
}

// "1024,2048" -> items; empty items are errors (a stray comma is more likely a typo than intent).
template <typename T, typename Parse>
core::Result<std::vector<T>> parse_list(const std::string& flag, const std::string& text,
                                        Parse parse) {
  std::vector<T> values;
  std::size_t begin = 0;
  while (true) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    auto value = parse(flag, text.substr(begin, end - begin));
    if (!value) {
      return core::Error{fmt::format("{} (in '{}')", value.error().message, text)};
    }
    values.push_back(static_cast<T>(*value));
    if (end == text.size()) break;
    begin = end + 1;
  }
  return values;
}

}  // namespace

core::Status check_required_cluster_flags(const ClusterFlags& flags) {
  if (flags.profile.empty() && !flags.model_mode)
    return core::Error{
        "--profile or --model/--gpu: required (a Perseus profile CSV, or a built-in model on a "
        "GPU type)"};
  if (!flags.profile.empty() && flags.model_mode)
    return core::Error{"give either --profile or --model/--gpu, not both"};
  if (flags.p_blocking_w.empty() && !flags.model_mode)
    return core::Error{
        "--p-blocking-w: required (power in W of a GPU blocked on P2P communication)"};
  if (flags.gpus.empty()) return core::Error{"--gpus: required (e.g. 1024,2048,4096,8192)"};
  if (flags.global_batch.empty())
    return core::Error{"--global-batch: required (samples per iteration of the whole job)"};
  return core::Ok{};
}

// Errors are usage errors (exit 2), naming the flag.
core::Result<ClusterNumbers> parse_cluster_numbers(const ClusterFlags& flags) {
  ClusterNumbers n;
  auto p_blocking = flags.p_blocking_w.empty() ? core::Result<double>(0.0)
                                               : parse_number("--p-blocking-w", flags.p_blocking_w);
  if (!p_blocking) return p_blocking.error();
  auto unit_time = parse_number("--unit-time-s", flags.unit_time_s);
  if (!unit_time) return unit_time.error();
  if (!(*unit_time > 0.0 && *unit_time <= 3600.0)) {
    return core::Error{fmt::format("--unit-time-s: expected a number > 0 and <= 3600, got '{}'",
                                   flags.unit_time_s)};
  }
  if (*p_blocking < 0.0 || *p_blocking > 1e5) {
    return core::Error{fmt::format("--p-blocking-w: expected a number from 0 to 1e5, got '{}'",
                                   flags.p_blocking_w)};
  }
  n.p_blocking_w = *p_blocking;
  n.unit_time_s = *unit_time;
  const std::pair<const char*, std::pair<const std::string*, long long*>> counts[] = {
      {"--tp", {&flags.tp, &n.tp}},
      {"--global-batch", {&flags.global_batch, &n.global_batch}},
      {"--microbatch-size", {&flags.microbatch_size, &n.microbatch}},
      {"--chunks", {&flags.chunks, &n.chunks}},
  };
  for (const auto& [name, field] : counts) {
    auto parsed = parse_count(name, *field.first);
    if (!parsed) return parsed.error();
    *field.second = *parsed;
  }
  auto gpus = parse_list<long long>("--gpus", flags.gpus, parse_count);
  if (!gpus) return gpus.error();
  n.gpus = std::move(*gpus);
  auto slowdowns = parse_list<double>("--slowdowns", flags.slowdowns, parse_number);
  if (!slowdowns) return slowdowns.error();
  for (double s : *slowdowns) {
    if (s < 1.0 || s > 100.0) {
      return core::Error{fmt::format(
          "--slowdowns: expected straggler slowdowns T'/T_min from 1 to 100, got {} (in '{}')", s,
          flags.slowdowns)};
    }
  }
  n.slowdowns = std::move(*slowdowns);
  auto choices = study::parse_planning_choices(flags.schedule, flags.cost_model, flags.quantization,
                                               flags.max_flow);
  if (!choices) return choices.error();
  n.choices = *choices;
  if (!flags.stages.empty()) {
    auto parsed = parse_count("--pp", flags.stages);
    if (!parsed) return parsed.error();
    n.stages = *parsed;
  }
  return n;
}

}  // namespace powertrain::cli
