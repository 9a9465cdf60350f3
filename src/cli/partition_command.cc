// `powertrain partition`: split a model's layer units into pipeline stages and report the balance.
#include <fmt/core.h>

#include "cli/commands.h"
#include "cli/model_job_options.h"
#include "profile/model_profile.h"
#include "workload/partition.h"

namespace powertrain::cli {
namespace {

constexpr const char* kCommand = "partition";

int run_partition(const profile::ModelJobRequest& request) {
  auto job = profile::build_model_job(request);
  if (!job) return fail(kCommand, job.error().message);
  const std::vector<double>& unit_s = job->unit_forward_s;
  fmt::print("powertrain partition: {}\n", job->description);
  fmt::print(
      "  units         {} (Transformer layers, then the LM head; the embedding rides with "
      "the first layer)\n",
      unit_s.size());
  fmt::print("  unit forward  layer {:.3f} ms, LM head {:.3f} ms at {} MHz (modelled)\n",
             unit_s.size() > 1 ? unit_s[1] * 1e3 : unit_s[0] * 1e3, unit_s.back() * 1e3,
             job->gpu.max_clock_mhz());
  auto print_line = [&](const char* name, const workload::Partition& partition) {
    const std::vector<double> stage_s = workload::stage_costs(unit_s, partition);
    std::string times;
    for (double s : stage_s) times += fmt::format("{}{:.1f}", times.empty() ? "" : " ", s * 1e3);
    fmt::print("  {:<13s} {}  imbalance {:.3f}  stage forward ms: {}\n", name,
               workload::to_string(partition), workload::imbalance_ratio(unit_s, partition), times);
  };
  if (auto uniform = workload::uniform_partition(static_cast<int>(unit_s.size()), request.pp))
    print_line("uniform", *uniform);
  auto best = workload::min_imbalance_partition(unit_s, request.pp);
  if (!best) return fail(kCommand, best.error().message);
  print_line("min-imbalance", best->partition);
  if (request.partition != "min-imbalance" && request.partition != "uniform")
    print_line("given", job->partition);
  fmt::print(
      "  imbalance = slowest / fastest stage forward time (Perseus App. B.1); ties broken "
      "by the smallest slowest stage, then the smallest boundaries\n");
  return 0;
}

}  // namespace

Action add_partition_command(CLI::App& app) {
  auto request = std::make_shared<profile::ModelJobRequest>();
  add_model_job_options(app, *request);
  return [request]() { return run_partition(*request); };
}

}  // namespace powertrain::cli
