#include "study/frontier_inputs.h"

#include <fmt/core.h>

#include <algorithm>
#include <set>

#include "core/csv.h"
#include "profile/example_profile.h"

namespace powertrain::study {

core::Result<ProfileSource> load_profile(const FrontierRequest& request) {
  ProfileSource source;
  source.builtin = request.profile_path.empty() && !request.job.has_value();
  if (request.job.has_value()) {
    profile::ModelJobRequest job_request = *request.job;
    if (request.microbatches > 0) job_request.microbatches = request.microbatches;
    auto built = profile::build_model_job(job_request);
    if (!built) return built.error();
    source.job = std::move(*built);
    source.profile = profile::generate_profile(*source.job);
    return source;
  }
  if (source.builtin) {
    auto table = core::parse_csv(profile::example_profile_csv(), "<built-in example profile>");
    if (!table) return table.error();
    auto parsed = profile::parse_profile(*table);
    if (!parsed) return parsed.error();
    source.profile = std::move(*parsed);
    return source;
  }
  auto read = profile::read_profile(request.profile_path);
  if (!read) return read.error();
  source.profile = std::move(*read);
  return source;
}

int chunks_per_gpu(const FrontierRequest& request, pipeline::ScheduleKind schedule) {
  return schedule == pipeline::ScheduleKind::kInterleavedOneFOneB ? std::max(1, request.chunks) : 1;
}

pipeline::PipelineSpec pipeline_spec(const FrontierRequest& request,
                                     pipeline::ScheduleKind schedule, const ProfileSource& source) {
  const profile::ExampleDefaults example;
  pipeline::PipelineSpec spec;
  spec.schedule = schedule;
  spec.chunks_per_gpu = request.chunks;
  const int chunks = chunks_per_gpu(request, spec.schedule);
  spec.num_gpus = source.job   ? source.job->parallel.pp
                  : request.pp ? *request.pp
                               : std::max(1, source.profile.num_stages() / chunks);
  spec.num_microbatches = request.microbatches > 0 ? request.microbatches : example.microbatches;
  spec.data_loading_time_s = request.data_loading_s;
  spec.optimizer_step_time_s = request.optimizer_step_s;
  spec.p2p_time_s = request.p2p_s;
  return spec;
}

core::Result<frontier::PlanningSettings> planning_settings(const FrontierRequest& request,
                                                           frontier::CostModelKind cost_model,
                                                           frontier::Quantization quantization,
                                                           const ProfileSource& source) {
  const profile::ExampleDefaults example;
  frontier::PlanningSettings settings;
  auto fit_method = frontier::parse_fit_method(request.fit);
  if (!fit_method)
    return core::Error{fmt::format("--fit: unknown '{}'; known: reference, global", request.fit)};
  settings.fit_method = *fit_method;
  settings.cost_model = cost_model;
  settings.quantization = quantization;
  settings.unit_time_s = request.unit_time_s > 0.0 ? request.unit_time_s : example.unit_time_s;
  if (request.p_blocking_w >= 0.0) {
    settings.p_blocking_w = request.p_blocking_w;
  } else if (source.job) {
    settings.p_blocking_w = source.job->gpu.p_blocking_w;
  } else if (source.builtin) {
    settings.p_blocking_w = example.p_blocking_w;
  } else {
    return core::Error{std::string(kFrontierPBlockingRequired)};
  }
  return settings;
}

core::Result<std::vector<std::size_t>> parse_plan_points(const std::string& spec,
                                                         const FrontierRun& run) {
  std::set<std::size_t> points;
  const std::size_t last = run.frontier->points.size() - 1;
  std::size_t begin = 0;
  while (begin <= spec.size()) {
    std::size_t end = spec.find(',', begin);
    if (end == std::string::npos) end = spec.size();
    const std::string item = spec.substr(begin, end - begin);
    begin = end + 1;
    if (item.empty() || item == "none") continue;
    if (item == "all") {
      for (std::size_t p = 0; p <= last; ++p) points.insert(p);
    } else if (item == "tstar") {
      points.insert(0);
    } else if (item == "tmin") {
      points.insert(last);
    } else if (item == "stragglers") {
      for (const auto& s : run.stragglers) points.insert(s.point);
    } else {
      auto index = core::parse_integer(item, "--emit-plans", 0, "point");
      if (!index || *index < 0 || static_cast<std::size_t>(*index) > last) {
        return core::Error{
            fmt::format("--emit-plans: expected tstar, tmin, stragglers, all, none or a point 0 to "
                        "{}, got '{}'",
                        last, item)};
      }
      points.insert(static_cast<std::size_t>(*index));
    }
  }
  return std::vector<std::size_t>(points.begin(), points.end());
}

}  // namespace powertrain::study
