// Flags shared by the subcommands that build a job from a built-in model and GPU.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

#include "profile/model_profile.h"

namespace powertrain::cli {

/// Registers --model, --gpu, --tp, --pp, --microbatch-size, --seq-len, --num-layers,
/// --partition, --precision, --recompute, --sequence-parallel, --distributed-optimizer, --dp.
/// --pp is left out when `with_pp` is false (commands that take --stages instead).
void add_model_job_options(CLI::App& app, profile::ModelJobRequest& request, bool with_pp = true);

/// Prints the job's stages: layer units, forward/backward time at the highest clock (modelled).
void print_job_summary(const profile::ModelJob& job);

}  // namespace powertrain::cli
