// `powertrain cluster`'s flags: numeric ones are read as text so that every bad value gets a
// one-line usage error naming the flag (lists such as --gpus 1024,2048 included).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "profile/model_profile.h"
#include "study/planning_choices.h"

namespace powertrain::cli {

struct ClusterFlags {
  std::string profile;
  profile::ModelJobRequest job;  // --model/--gpu: profile modelled instead of read
  bool model_mode = false;
  std::string p_blocking_w;
  std::string unit_time_s = "0.001";
  std::string stages;
  std::string tp = "1";
  std::string gpus;
  std::string global_batch;
  std::string microbatch_size = "1";
  std::string slowdowns = "1,1.05,1.1,1.2,1.3,1.4,1.5";
  std::string schedule = "1f1b";
  std::string chunks = "1";
  std::string cost_model = "exponential";
  std::string quantization = "ceil";
  std::string max_flow = "dinic";
  std::string out = "powertrain-cluster-out";
  bool quiet = false;
  bool force = false;
};

// The numeric flags, parsed and range-checked.
struct ClusterNumbers {
  double p_blocking_w = 0.0;
  double unit_time_s = 0.0;
  long long tp = 1, global_batch = 0, microbatch = 1, chunks = 1;
  std::vector<long long> gpus;
  std::vector<double> slowdowns;
  study::PlanningChoices choices;
  std::optional<long long> stages;  // --pp when given
};

// The flags the command cannot run without (a source, --p-blocking-w with a profile, --gpus,
// --global-batch), and not both sources. Errors are usage errors (exit 2), naming the flag.
core::Status check_required_cluster_flags(const ClusterFlags& flags);

// Errors are usage errors (exit 2), naming the flag.
core::Result<ClusterNumbers> parse_cluster_numbers(const ClusterFlags& flags);

}  // namespace powertrain::cli
