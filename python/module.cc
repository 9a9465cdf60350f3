// `import powertrain` (the _core extension): Perseus frontiers, Kineto replay summaries and the
// training-side plan client, calling the same library as the CLI.
#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>

#include "client/client.h"
#include "core/csv.h"
#include "device/gpu.h"
#include "frontier/cost_model.h"
#include "frontier/evaluate.h"
#include "frontier/problem.h"
#include "frontier/solver.h"
#include "graph/graph_builder.h"
#include "pipeline/schedule.h"
#include "profile/example_profile.h"
#include "profile/model_profile.h"
#include "report/frontier_report.h"
#include "sim/energy.h"
#include "sim/metrics.h"
#include "sim/simulator.h"
#include "study/frontier_run.h"
#include "trace/kineto_reader.h"

namespace py = pybind11;
using namespace powertrain;  // NOLINT: one translation unit, bindings only

namespace {

template <typename T>
T unwrap(core::Result<T> result) {
  if (!result) throw py::value_error(result.error().message);
  return std::move(*result);
}

void check(const core::Status& status) {
  if (!status) throw std::runtime_error(status.error().message);
}

// POST /profiling settings from keywords; unknown keys are a ValueError (a typo must not be a
// silently ignored setting).
client::ProfilingRequest profiling_request(const py::dict& settings) {
  client::ProfilingRequest r;
  for (const auto& [key, value] : settings) {
    const std::string name = py::str(key);
    if (name == "p_blocking_w") {
      r.p_blocking_w = value.cast<double>();
    } else if (name == "microbatches") {
      r.microbatches = value.cast<int>();
    } else if (name == "iterations_per_clock") {
      r.iterations_per_clock = value.cast<int>();
    } else if (name == "stop_after_rises") {
      r.stop_after_rises = value.cast<int>();
    } else if (name == "unit_time_s") {
      r.unit_time_s = value.cast<double>();
    } else if (name == "schedule") {
      r.schedule = value.cast<std::string>();
    } else {
      throw py::value_error("start_profiling: unknown setting '" + name +
                            "' (p_blocking_w, microbatches, iterations_per_clock, "
                            "stop_after_rises, unit_time_s, schedule)");
    }
  }
  return r;
}

py::array_t<double> array(const std::vector<double>& values) {
  py::array_t<double> out(static_cast<py::ssize_t>(values.size()));
  std::copy(values.begin(), values.end(), out.mutable_data());
  return out;
}

py::list plan_list(const std::vector<std::vector<std::pair<std::string, int>>>& plan) {
  py::list gpus;
  for (const auto& gpu : plan) {
    py::list pairs;
    for (const auto& [name, mhz] : gpu) pairs.append(py::make_tuple(name, mhz));
    gpus.append(pairs);
  }
  return gpus;
}

py::dict frontier_py(std::optional<std::string> profile_path, std::optional<std::string> model,
                     std::optional<std::string> gpu, std::optional<int> pp, int tp,
                     std::optional<int> microbatches, std::optional<double> p_blocking_w,
                     double unit_time_s, const std::string& schedule, const std::string& cost_model,
                     const std::string& quantization) {
  if (profile_path && (model || gpu)) throw py::value_error("give either profile or model/gpu");
  profile::ExampleDefaults example;
  std::optional<profile::ModelJob> job;
  profile::Profile profile;
  std::string basis = "measured";
  if (model || gpu) {
    profile::ModelJobRequest request;
    if (model) request.model = *model;
    if (gpu) request.gpu = *gpu;
    if (pp) request.pp = *pp;
    request.tp = tp;
    if (microbatches) request.microbatches = *microbatches;
    job = unwrap(profile::build_model_job(request));
    profile = profile::generate_profile(*job);
    basis = "modelled";
  } else if (profile_path) {
    if (!p_blocking_w)
      throw py::value_error("p_blocking_w: required with a profile (W of a GPU blocked on P2P)");
    profile = unwrap(profile::read_profile(*profile_path));
  } else {
    auto table = unwrap(core::parse_csv(profile::example_profile_csv(), "<built-in example>"));
    profile = unwrap(profile::parse_profile(table));
    basis = "built-in example";
  }
  pipeline::PipelineSpec spec;
  auto kind =
      pipeline::parse_schedule(job && job->parallel.recompute ? "1f1b-recompute" : schedule);
  if (!kind)
    throw py::value_error("schedule: unknown '" + schedule +
                          "'; known: " + pipeline::known_schedules());
  spec.schedule = *kind;
  spec.num_gpus = job ? job->parallel.pp : pp ? *pp : profile.num_stages();
  spec.num_microbatches = microbatches ? *microbatches : example.microbatches;
  frontier::PlanningSettings settings;
  auto cost = frontier::parse_cost_model(cost_model);
  auto quant = frontier::parse_quantization(quantization);
  if (!cost)
    throw py::value_error("cost_model: unknown '" + cost_model + "'; known: exponential, pwl");
  if (!quant)
    throw py::value_error("quantization: unknown '" + quantization + "'; known: ceil, floor");
  settings.cost_model = *cost;
  settings.quantization = *quant;
  if (!(unit_time_s > 0.0)) throw py::value_error("unit_time_s: must be > 0");
  settings.unit_time_s = unit_time_s;
  settings.p_blocking_w = p_blocking_w ? *p_blocking_w
                          : job        ? job->gpu.p_blocking_w
                                       : example.p_blocking_w;
  if (profile.num_stages() != spec.num_profile_stages()) {
    throw py::value_error(profile.source + ": has " + std::to_string(profile.num_stages()) +
                          " stage(s) but the pipeline needs " +
                          std::to_string(spec.num_profile_stages()));
  }
  auto problem = unwrap(frontier::build_planning_problem(profile, spec, settings));
  frontier::Frontier solved;
  {
    py::gil_scoped_release release;
    solved = frontier::solve_frontier(problem);
    if (settings.quantization == frontier::Quantization::kCeil)
      frontier::pin_fastest_point(problem, solved);
  }
  study::FrontierRun run = study::analyze(problem, solved, profile.source, &profile);
  std::vector<double> time, energy, realized_time, realized_energy;
  for (std::size_t i = 0; i < solved.points.size(); ++i) {
    time.push_back(solved.points[i].time_units * unit_time_s);
    energy.push_back(solved.points[i].energy_j);
    realized_time.push_back(run.realized[i].time_s);
    realized_energy.push_back(run.realized[i].energy_j);
  }
  const std::size_t last = solved.points.size() - 1;
  py::dict summary;
  summary["basis"] = basis;
  summary["source"] = profile.source;
  summary["stages"] = spec.num_gpus;
  summary["microbatches"] = spec.num_microbatches;
  summary["p_blocking_w"] = settings.p_blocking_w;
  summary["unit_time_s"] = unit_time_s;
  summary["points"] = solved.points.size();
  summary["t_min_s"] = time.back();
  summary["t_star_s"] = time.front();
  summary["planned_energy_at_t_min_j"] = energy.back();
  summary["planned_energy_at_t_star_j"] = energy.front();
  summary["baseline_all_max_clock_time_s"] = run.baseline.time_s;
  summary["baseline_all_max_clock_energy_j"] = run.baseline.energy_j;
  py::list stragglers;
  for (const auto& s : run.stragglers) {
    py::dict d;
    d["slowdown"] = s.slowdown;
    d["straggler_time_s"] = s.straggler_time_s;
    d["point"] = s.point;
    d["planned_time_s"] = s.planned_time_s;
    d["planned_energy_j"] = s.energy_j;
    d["savings_fraction"] = s.savings_fraction;
    stragglers.append(d);
  }
  summary["stragglers"] = stragglers;
  if (job) summary["job"] = job->description;
  py::dict out;
  out["time_s"] = array(time);
  out["energy_j"] = array(energy);
  out["realized_time_s"] = array(realized_time);
  out["realized_energy_j"] = array(realized_energy);
  out["summary"] = summary;
  out["plan_t_min"] = plan_list(report::gpu_plans_at(problem, solved.durations_at(last)));
  out["plan_t_star"] = plan_list(report::gpu_plans_at(problem, solved.durations_at(0)));
  return out;
}

py::dict breakdown(const sim::Breakdown& b) {
  py::dict d;
  d["exposed_compute"] = b.exposed_compute;
  d["exposed_communication"] = b.exposed_communication;
  d["overlapped"] = b.overlapped;
  d["other"] = b.other;
  return d;
}

py::dict replay_py(const std::vector<std::string>& paths, const std::string& gpu_name) {
  if (paths.empty()) throw py::value_error("give one or more trace files or directories");
  auto gpu = unwrap(device::find_gpu(gpu_name));
  auto traces = unwrap(trace::read_kineto_traces(paths));
  for (const auto& t : traces)
    if (t.events.empty()) throw py::value_error(t.source + ": no duration events to replay");
  auto graph = unwrap(graph::build_execution_graph(traces));
  py::gil_scoped_release release;
  const sim::ReplayResult result = sim::replay(graph, {});
  const sim::StepMetrics input = sim::metrics_of_input(graph);
  const sim::StepMetrics replayed = sim::metrics_of_replay(graph, result);
  const sim::ReplayAccuracy accuracy = sim::compare_replay(graph, result, input, replayed);
  const sim::Verdict verdict = sim::judge_replay(graph, result, input, replayed, accuracy);
  const sim::EnergyReport energy = sim::replay_energy(graph, result, replayed, gpu);
  py::gil_scoped_acquire acquire;
  py::dict out;
  out["units"] = "seconds, joules; fractions in [0, 1]";
  out["faithful"] = verdict.faithful;
  out["complete"] = result.outcome == sim::ReplayOutcome::kComplete;
  py::list reasons;
  for (const auto& r : verdict.reasons) reasons.append(r.text);
  out["reasons"] = reasons;
  py::list ranks;
  for (std::size_t r = 0; r < graph.ranks.size(); ++r) {
    py::dict d;
    d["rank"] = graph.ranks[r].rank;
    d["source"] = graph.ranks[r].source;
    d["measured_step_s"] = input.ranks[r].step_time_ns * 1e-9;
    d["replayed_step_s"] = replayed.ranks[r].step_time_ns * 1e-9;
    d["measured_breakdown"] = breakdown(input.ranks[r].breakdown);
    d["replayed_breakdown"] = breakdown(replayed.ranks[r].breakdown);
    d["measured_gpu_utilization"] = input.ranks[r].mean_utilization;
    d["replayed_gpu_utilization"] = replayed.ranks[r].mean_utilization;
    ranks.append(d);
  }
  out["ranks"] = ranks;
  out["measured_step_s"] = input.job_step_time_ns * 1e-9;
  out["replayed_step_s"] = replayed.job_step_time_ns * 1e-9;
  out["replay_step_error_percent"] = accuracy.job_step_time_error_pct;
  py::dict e;
  e["gpu"] = energy.gpu;
  e["clock_mhz"] = energy.clock_mhz;
  e["static_j"] = energy.static_j;
  e["dynamic_j"] = energy.dynamic_j;
  e["total_j"] = energy.total_j;
  e["total_j_per_step"] = energy.total_j_per_step;
  out["energy_modelled"] = e;
  return out;
}

}  // namespace

PYBIND11_MODULE(_core, m) {
  m.doc() = "powertrain: Perseus frontiers, Kineto replay and the training-side plan client";

  m.def(
      "frontier", &frontier_py, py::arg("profile") = py::none(), py::kw_only(),
      py::arg("model") = py::none(), py::arg("gpu") = py::none(), py::arg("pp") = py::none(),
      py::arg("tp") = 1, py::arg("microbatches") = py::none(), py::arg("p_blocking_w") = py::none(),
      py::arg("unit_time_s") = 1e-3, py::arg("schedule") = "1f1b",
      py::arg("cost_model") = "exponential", py::arg("quantization") = "ceil",
      "Perseus time-energy frontier from a profile CSV (stage,instruction,frequency,time,energy), "
      "a built-in model (model=, gpu=) or the built-in example. Returns a dict: numpy arrays "
      "time_s, energy_j (planned), realized_time_s, realized_energy_j (slowest first), summary, "
      "plan_t_min and plan_t_star (per GPU, (instruction, MHz) in execution order).");

  m.def("replay", &replay_py, py::arg("paths"), py::kw_only(), py::arg("gpu") = "a100-sxm",
        "Replay PyTorch Kineto traces (files or directories): measured vs replayed step time, "
        "breakdown, utilization and modelled energy, as a dict.");

  py::class_<client::Client>(m, "Client",
                             "Training-side plan client (see PipelineFrequencyOptimizer).")
      .def(
          py::init([](const std::string& server_url, const std::string& job_id, int rank,
                      int dp_rank, int pp_rank, int tp_rank, int dp_degree, int pp_degree,
                      int tp_degree, int world_size, int device_id, const std::string& job_metadata,
                      const std::string& nvml_library, bool use_nvml, bool control_clocks,
                      int report_every_iterations, double power_sample_period_s,
                      double request_timeout_s, std::vector<int> available_frequencies_mhz,
                      bool quiet, int refresh_schedule_every_iterations, bool profile_in_vivo,
                      std::optional<py::dict> start_profiling, int num_microbatches,
                      double job_poll_period_s) {
            client::ClientOptions o;
            o.server_url = server_url;
            o.job_id = job_id;
            o.rank = rank;
            o.dp_rank = dp_rank;
            o.pp_rank = pp_rank;
            o.tp_rank = tp_rank;
            o.dp_degree = dp_degree;
            o.pp_degree = pp_degree;
            o.tp_degree = tp_degree;
            o.world_size = world_size;
            o.device_id = device_id;
            o.job_metadata = job_metadata;
            o.nvml_library = nvml_library;
            o.use_nvml = use_nvml;
            o.control_clocks = control_clocks;
            o.report_every_iterations = report_every_iterations;
            o.power_sample_period_s = power_sample_period_s;
            o.request_timeout_s = request_timeout_s;
            o.available_frequencies_mhz = std::move(available_frequencies_mhz);
            o.quiet = quiet;
            o.refresh_schedule_every_iterations = refresh_schedule_every_iterations;
            o.profile_in_vivo = profile_in_vivo;
            if (start_profiling) o.start_profiling = profiling_request(*start_profiling);
            o.num_microbatches = num_microbatches;
            o.job_poll_period_s = job_poll_period_s;
            return unwrap(client::Client::create(o));
          }),
          py::kw_only(), py::arg("server_url") = "", py::arg("job_id") = "", py::arg("rank") = 0,
          py::arg("dp_rank") = 0, py::arg("pp_rank") = 0, py::arg("tp_rank") = 0,
          py::arg("dp_degree") = 1, py::arg("pp_degree") = 1, py::arg("tp_degree") = 1,
          py::arg("world_size") = 1, py::arg("device_id") = 0, py::arg("job_metadata") = "",
          py::arg("nvml_library") = "", py::arg("use_nvml") = true,
          py::arg("control_clocks") = true, py::arg("report_every_iterations") = 0,
          py::arg("power_sample_period_s") = 0.1, py::arg("request_timeout_s") = 10.0,
          py::arg("available_frequencies_mhz") = std::vector<int>{}, py::arg("quiet") = false,
          py::arg("refresh_schedule_every_iterations") = 0, py::arg("profile_in_vivo") = false,
          py::arg("start_profiling") = py::none(), py::arg("num_microbatches") = 0,
          py::arg("job_poll_period_s") = 0.25)
      .def("on_step_begin", [](client::Client& c) { check(c.on_step_begin()); })
      .def("on_step_end", [](client::Client& c) { check(c.on_step_end()); })
      .def("on_instruction_begin",
           [](client::Client& c, const std::string& name) { check(c.on_instruction_begin(name)); })
      .def("on_instruction_end",
           [](client::Client& c, const std::string& name) { check(c.on_instruction_end(name)); })
      .def("wait_for_schedule", &client::Client::wait_for_schedule, py::arg("timeout_s"),
           py::call_guard<py::gil_scoped_release>())
      .def("wait_for_job_id", &client::Client::wait_for_job_id, py::arg("timeout_s"),
           py::call_guard<py::gil_scoped_release>())
      .def("flush", &client::Client::flush, py::arg("timeout_s") = 10.0,
           py::call_guard<py::gil_scoped_release>())
      .def("set_schedule", &client::Client::set_schedule, py::arg("schedule"))
      .def(
          "report_iteration",
          [](client::Client& c, double t, double e) { check(c.report_iteration(t, e)); },
          py::arg("time_s"), py::arg("energy_j"))
      .def(
          "report_straggler",
          [](client::Client& c, std::optional<int> rank, std::optional<int> pipeline,
             std::optional<double> slowdown, std::optional<double> delay_s) {
            check(c.report_straggler({rank.value_or(-1), pipeline.value_or(-1),
                                      slowdown.value_or(0.0), delay_s.value_or(-1.0)}));
          },
          py::kw_only(), py::arg("rank") = py::none(), py::arg("pipeline") = py::none(),
          py::arg("slowdown") = py::none(), py::arg("delay_s") = py::none(),
          "POST /straggler: exactly one of rank/pipeline and one of slowdown/delay_s.")
      .def("clear_stragglers", [](client::Client& c) { check(c.clear_stragglers()); })
      .def(
          "start_profiling",
          [](client::Client& c, const py::kwargs& settings) {
            check(c.start_profiling(profiling_request(settings)));
          },
          "POST /profiling/{job}: in-vivo profiling with p_blocking_w=, microbatches=, "
          "iterations_per_clock=, stop_after_rises=, unit_time_s=, schedule= (absent: server "
          "defaults; no p_blocking_w: measured first).")
      .def_property_readonly("p_blocking_requested", &client::Client::p_blocking_requested,
                             "True when the schedule in effect asks this rank to measure "
                             "P_blocking now (between steps: on_p_blocking_begin, block, end).")
      .def("on_p_blocking_begin", [](client::Client& c) { check(c.on_p_blocking_begin()); })
      .def("on_p_blocking_end", [](client::Client& c) { check(c.on_p_blocking_end()); })
      .def("refresh_schedule", [](client::Client& c) { check(c.refresh_schedule()); })
      .def(
          "fetch_frontier",
          [](client::Client& c, double timeout_s) {
            core::Result<std::string> body = [&] {
              py::gil_scoped_release release;
              return c.fetch_frontier(timeout_s);
            }();
            if (!body) throw std::runtime_error(body.error().message);
            return py::module_::import("json").attr("loads")(*body);
          },
          py::arg("timeout_s") = 30.0)
      .def_property_readonly("job_id", &client::Client::job_id)
      .def_property_readonly("schedule", &client::Client::schedule)
      .def_property_readonly("clock_thread_id", &client::Client::clock_thread_id)
      .def_property_readonly("applied_clocks_mhz",
                             [](const client::Client& c) {
                               std::vector<int> mhz;
                               for (const auto& a : c.applied_clocks()) mhz.push_back(a.mhz);
                               return mhz;
                             })
      .def_property_readonly(
          "iterations",
          [](const client::Client& c) {
            py::list out;
            for (const auto& it : c.iterations())
              out.append(py::make_tuple(it.time_s, it.energy_j));
            return out;
          },
          "Measured (time s, energy J) per iteration; energy < 0 if unknown.")
      .def_property_readonly("status", [](const client::Client& c) {
        const auto s = c.status();
        py::dict d;
        d["nvml_loaded"] = s.nvml_loaded;
        d["nvml_message"] = s.nvml_message;
        d["energy_source"] = s.energy_source;
        d["job_registered"] = s.job_registered;
        d["schedule_received"] = s.schedule_received;
        d["schedule_length"] = s.schedule_length;
        d["iterations"] = s.iterations;
        d["results_posted"] = s.results_posted;
        d["network_errors"] = s.network_errors;
        d["clock_errors"] = s.clock_errors;
        d["last_background_error"] = s.last_background_error;
        d["profiling_phase"] = s.profiling_phase;
        d["profiling_clock_mhz"] = s.profiling_clock_mhz;
        d["profiling_results_posted"] = s.profiling_results_posted;
        d["stale_results"] = s.stale_results;
        d["sweep_iterations_skipped"] = s.sweep_iterations_skipped;
        d["apportioned_iterations"] = s.apportioned_iterations;
        return d;
      });
}
