#include "profile/model_profile.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "core/csv.h"

namespace powertrain::profile {
namespace {

core::Result<device::Precision> parse_precision(const std::string& name) {
  if (name == "bf16") return device::Precision::kBf16;
  if (name == "fp16") return device::Precision::kFp16;
  if (name == "fp32") return device::Precision::kFp32;
  if (name == "tf32") return device::Precision::kTf32;
  if (name == "fp8") return device::Precision::kFp8;
  return core::Error{
      fmt::format("unknown precision '{}' (known: bf16, fp16, fp32, tf32, fp8)", name)};
}

const std::vector<workload::Op>* ops_for(const workload::StageWork& stage,
                                         pipeline::InstructionKind kind) {
  switch (kind) {
    case pipeline::InstructionKind::kForward:
      return &stage.forward;
    case pipeline::InstructionKind::kBackward:
      return &stage.backward;
    case pipeline::InstructionKind::kRecompute:
      return &stage.recompute;
    default:
      return nullptr;
  }
}

std::string_view kind_name(pipeline::InstructionKind kind) {
  switch (kind) {
    case pipeline::InstructionKind::kForward:
      return "forward";
    case pipeline::InstructionKind::kBackward:
      return "backward";
    case pipeline::InstructionKind::kRecompute:
      return "recompute";
    default:
      return "other";
  }
}

}  // namespace

// Reads the "params" object of a calibration JSON; every field is optional and must be a
// positive number (voltage_min and efficiencies at most 1).
core::Status load_gpu_params(const std::string& path, device::GpuSpec& gpu) {
  auto text = core::read_text_file(path);
  if (!text) return text.error();
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(*text);
  } catch (const nlohmann::json::exception& e) {
    // Syntax errors and out-of-range numbers (nlohmann throws the latter even when told not to).
    std::string what = e.what();
    if (const auto pos = what.find("] "); pos != std::string::npos) what = what.substr(pos + 2);
    return core::Error{path + ": invalid JSON: " + what};
  }
  if (!doc.is_object() || !doc.contains("params") || !doc["params"].is_object())
    return core::Error{path +
                       ": expected a JSON object with a \"params\" object (from "
                       "powertrain calibrate --out)"};
  if (doc.contains("gpu")) {
    // Parameters of one GPU type describe its clocks and power; on another they are wrong.
    if (!doc["gpu"].is_string()) return core::Error{path + ": \"gpu\" must be a GPU name"};
    const std::string calibrated_for = doc["gpu"].get<std::string>();
    if (calibrated_for != gpu.name) {
      return core::Error{
          fmt::format("{}: calibrated for {}, not for {} (--gpu); calibrate {} or "
                      "drop --gpu-params",
                      path, calibrated_for, gpu.name, gpu.name)};
    }
  }
  device::DvfsParams& p = gpu.dvfs;
  const nlohmann::json& params = doc["params"];
  for (const device::DvfsParamField& field : device::dvfs_param_fields()) {
    if (!params.contains(field.name)) continue;
    const nlohmann::json& value = params[field.name];
    if (!value.is_number() || !std::isfinite(value.get<double>()) || value.get<double>() < 0.0)
      return core::Error{
          fmt::format("{}: params.{} must be a non-negative number", path, field.name)};
    p.*field.member = value.get<double>();
  }
  for (double fraction : {p.matmul_efficiency, p.attention_efficiency, p.memory_efficiency,
                          p.link_efficiency, p.backward_link_efficiency, p.voltage_min}) {
    if (!(fraction > 0.0 && fraction <= 1.0))
      return core::Error{path + ": efficiencies and voltage_min must be in (0, 1]"};
  }
  if (!(p.power_limit_w > 0.0)) return core::Error{path + ": params.power_limit_w must be > 0"};
  gpu.calibrated = true;
  gpu.calibration = "parameters from " + path;
  return core::Ok{};
}

core::Result<ModelJob> build_model_job(const ModelJobRequest& request) {
  ModelJob job;
  auto model = workload::resolve_model(request.model);
  if (!model) return model.error();
  job.model = std::move(*model);
  if (request.num_layers < 0) return core::Error{"--num-layers must be positive"};
  if (request.num_layers > 0) {
    if (job.model.architecture == workload::Architecture::kEncoderDecoder)
      return core::Error{fmt::format(
          "--num-layers: {} is an encoder-decoder model; change its depth in a custom JSON model",
          job.model.name)};
    if (request.num_layers > workload::kMaxLayers)
      return core::Error{fmt::format("--num-layers: at most {}", workload::kMaxLayers)};
    job.model.num_layers = request.num_layers;
  }
  auto gpu = device::find_gpu(request.gpu);
  if (!gpu) return gpu.error();
  job.gpu = std::move(*gpu);
  if (!request.gpu_params.empty()) {
    if (auto loaded = load_gpu_params(request.gpu_params, job.gpu); !loaded)
      return core::Error{"--gpu-params: " + loaded.error().message};
  }
  auto precision = parse_precision(request.precision);
  if (!precision) return precision.error();
  if (job.gpu.peak_tflops(*precision) <= 0.0)
    return core::Error{fmt::format("{} has no {} tensor support", job.gpu.name, request.precision)};

  workload::ParallelConfig& parallel = job.parallel;
  parallel = workload::make_parallel_config(job.model);
  parallel.tp = request.tp;
  parallel.pp = request.pp;
  parallel.dp = request.dp;
  parallel.cp = request.cp;
  parallel.microbatch_size = request.microbatch_size;
  if (request.seq_len > 0) parallel.seq_len = request.seq_len;
  parallel.num_microbatches = request.microbatches;
  parallel.precision = *precision;
  parallel.recompute = request.recompute;
  parallel.sequence_parallel = request.sequence_parallel;
  parallel.distributed_optimizer = request.distributed_optimizer;
  if (auto valid = workload::validate_job(job.model, parallel); !valid) return valid.error();

  const std::vector<workload::LayerUnit> units = workload::layer_units(job.model, parallel);
  const int num_units = static_cast<int>(units.size());
  // Unit costs for partitioning: modelled forward time at the highest clock (Perseus partitions
  // by measured forward latency).
  std::vector<double>& unit_forward_s = job.unit_forward_s;
  for (const workload::LayerUnit& unit : units) {
    const std::vector<device::Work> works = workload::works_of(unit.forward);
    unit_forward_s.push_back(device::estimate_work(job.gpu, works, job.gpu.max_clock_mhz()).time_s);
  }
  if (request.partition == "min-imbalance") {
    auto best = workload::min_imbalance_partition(unit_forward_s, parallel.pp);
    if (!best) return core::Error{"--partition min-imbalance: " + best.error().message};
    job.partition = best->partition;
  } else if (request.partition == "uniform") {
    auto uniform = workload::uniform_partition(num_units, parallel.pp);
    if (!uniform) return core::Error{"--partition uniform: " + uniform.error().message};
    job.partition = *uniform;
  } else {
    auto given = workload::parse_partition(request.partition, num_units, parallel.pp);
    if (!given) return core::Error{"--partition: " + given.error().message};
    job.partition = *given;
  }
  job.imbalance_ratio = workload::imbalance_ratio(unit_forward_s, job.partition);

  for (int s = 0; s < parallel.pp; ++s) {
    workload::StageWork stage =
        workload::build_stage_work(job.model, parallel, units, job.partition, s);
    for (workload::Op& op : stage.backward) op.work.backward = true;
    job.stages.push_back(std::move(stage));
  }
  job.description =
      fmt::format("{} on {}, TP {}{} x PP {}, microbatch {} x {} tokens, {} layers, {}{}{}",
                  job.model.name, job.gpu.name, parallel.tp,
                  parallel.cp > 1 ? fmt::format(" x CP {}", parallel.cp) : std::string(),
                  parallel.pp, parallel.microbatch_size, parallel.seq_len, job.model.num_layers,
                  request.precision, parallel.recompute ? ", recompute" : "",
                  parallel.sequence_parallel ? ", sequence parallel" : "");
  return job;
}

Profile generate_profile(const ModelJob& job) {
  Profile profile;
  profile.source = fmt::format("model:{}", job.description);
  std::vector<pipeline::InstructionKind> kinds = {pipeline::InstructionKind::kForward,
                                                  pipeline::InstructionKind::kBackward};
  if (job.parallel.recompute) kinds.push_back(pipeline::InstructionKind::kRecompute);
  std::sort(kinds.begin(), kinds.end());
  for (int s = 0; s < static_cast<int>(job.stages.size()); ++s) {
    for (pipeline::InstructionKind kind : kinds) {
      InstructionProfile entry;
      entry.stage = s;
      entry.kind = kind;
      const std::vector<device::Work> works = workload::works_of(*ops_for(job.stages[s], kind));
      for (int clock : job.gpu.clocks_mhz) {
        const device::WorkEstimate e = device::estimate_work(job.gpu, works, clock);
        entry.options.push_back({clock, e.time_s, e.energy_j, 0});
      }
      profile.entries.push_back(std::move(entry));
    }
  }
  return profile;
}

core::Result<std::vector<device::CalibrationSample>> calibration_samples(const ModelJob& job,
                                                                         const Profile& measured) {
  std::vector<device::CalibrationSample> samples;
  auto same_rows = [](const InstructionProfile& a, const InstructionProfile& b) {
    if (a.kind != b.kind || a.options.size() != b.options.size()) return false;
    for (std::size_t i = 0; i < a.options.size(); ++i) {
      if (a.options[i].frequency_mhz != b.options[i].frequency_mhz ||
          a.options[i].time_s != b.options[i].time_s ||
          a.options[i].energy_j != b.options[i].energy_j)
        return false;
    }
    return true;
  };
  for (std::size_t e = 0; e < measured.entries.size(); ++e) {
    const InstructionProfile& entry = measured.entries[e];
    // Profiles that replicate one measured stage (Perseus's stages 0-6) count it once, so the
    // fit weighs distinct measurements equally.
    // The last copy is kept: replicated stages stand for middle stages, and the job's first
    // stage also runs the embedding.
    bool replica = false;
    for (std::size_t later = e + 1; later < measured.entries.size() && !replica; ++later)
      replica = same_rows(measured.entries[later], entry);
    if (replica) continue;
    if (entry.stage >= static_cast<int>(job.stages.size()))
      return core::Error{fmt::format("{}: stage {} is beyond the job's {} pipeline stages",
                                     measured.source, entry.stage, job.stages.size())};
    const std::vector<workload::Op>* ops = ops_for(job.stages[entry.stage], entry.kind);
    if (ops == nullptr || ops->empty())
      return core::Error{fmt::format("{}: the job runs no {} on stage {} (enable --recompute?)",
                                     measured.source, kind_name(entry.kind), entry.stage)};
    const std::vector<device::Work> works = workload::works_of(*ops);
    for (const MeasuredOption& option : entry.options) {
      samples.push_back({fmt::format("stage {} {}", entry.stage, kind_name(entry.kind)), works,
                         static_cast<double>(option.frequency_mhz), option.time_s,
                         option.energy_j});
    }
  }
  return samples;
}

std::string profile_csv(const Profile& profile) {
  std::string text = "stage,instruction,frequency,time,energy\n";
  for (const InstructionProfile& entry : profile.entries) {
    for (const MeasuredOption& option : entry.options) {
      text += fmt::format("{},{},{},{:.9g},{:.9g}\n", entry.stage, kind_name(entry.kind),
                          option.frequency_mhz, option.time_s, option.energy_j);
    }
  }
  return text;
}

}  // namespace powertrain::profile
