#include "cli/model_job_options.h"

#include <fmt/core.h>

#include "cli/flags.h"
#include "device/gpu.h"
#include "workload/memory.h"

namespace powertrain::cli {

void add_model_job_options(CLI::App& app, profile::ModelJobRequest& request, bool with_pp) {
  app.add_option("--model", request.model,
                 "Built-in model (gpt3-175b, llama3.3-70b, ...) or a custom model JSON file");
  app.add_option("--gpu", request.gpu, "GPU type: a100-sxm, a100-pcie, a40, h100-sxm, h200, v100");
  app.add_option("--gpu-params", request.gpu_params,
                 "DVFS parameters JSON from `powertrain calibrate --out` (default: catalog's)");
  add_option_with_aliases(app, "--tp", {}, request.tp, "Tensor-parallel degree (default 1)",
                          integer_in(1, 65536));
  if (with_pp) {
    add_option_with_aliases(app, "--pp", {"--stages"}, request.pp,
                            "Pipeline stages (GPUs per pipeline; default 4, or the profile's)",
                            integer_in(1, 100000));
  }
  add_option_with_aliases(app, "--dp", {}, request.dp,
                          "Data-parallel degree (memory model only; default 1)",
                          integer_in(1, 10'000'000));
  add_option_with_aliases(app, "--microbatch-size", {}, request.microbatch_size,
                          "Sequences per microbatch (1)", integer_in(1, 1'000'000));
  add_option_with_aliases(app, "--seq-len", {}, request.seq_len,
                          "Tokens per sequence (default: the model's)", integer_in(1, 100'000'000));
  add_option_with_aliases(app, "--num-layers", {}, request.num_layers,
                          "Override the number of Transformer layers (a slice, or a what-if depth)",
                          integer_in(1, 100'000));
  app.add_option("--partition", request.partition,
                 "min-imbalance (Perseus App. B.1, default), uniform, or boundaries like "
                 "[0,6,12,19,25]");
  app.add_option("--precision", request.precision, "bf16 (default), fp16, fp32, tf32, fp8");
  app.add_flag("--recompute", request.recompute, "Full activation recomputation");
  app.add_flag("--sequence-parallel", request.sequence_parallel,
               "Megatron sequence parallelism (reduce-scatter + all-gather)");
  app.add_flag("--distributed-optimizer", request.distributed_optimizer,
               "Shard optimizer state over data-parallel ranks");
}

void print_job_summary(const profile::ModelJob& job) {
  fmt::print("  job           {}\n", job.description);
  fmt::print("  gpu           {} ({})\n", job.gpu.display_name,
             job.gpu.calibrated ? "calibrated: " + job.gpu.calibration : job.gpu.calibration);
  fmt::print("  partition     {} (imbalance ratio {:.3f}, modelled forward time max/min)\n",
             workload::to_string(job.partition), job.imbalance_ratio);
  auto memory = workload::estimate_memory(job.model, job.parallel, job.partition,
                                          job.gpu.memory_gib * 1024.0 * 1024.0 * 1024.0);
  if (memory) fmt::print("  memory        {} (modelled)\n", memory->verdict);
  for (const workload::StageWork& stage : job.stages) {
    const auto f =
        device::estimate_work(job.gpu, workload::works_of(stage.forward), job.gpu.max_clock_mhz());
    const auto b =
        device::estimate_work(job.gpu, workload::works_of(stage.backward), job.gpu.max_clock_mhz());
    fmt::print(
        "  stage {:<3d}     units [{}, {}): forward {:.2f} ms {:.1f} J, backward {:.2f} ms {:.1f} "
        "J "
        "at {} MHz (modelled)\n",
        stage.stage, stage.first_unit, stage.end_unit, f.time_s * 1e3, f.energy_j, b.time_s * 1e3,
        b.energy_j, job.gpu.max_clock_mhz());
  }
}

}  // namespace powertrain::cli
