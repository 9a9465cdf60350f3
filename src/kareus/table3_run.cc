#include "kareus/table3_run.h"

#include "kareus/large_scale.h"

namespace powertrain::kareus {
namespace {

constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;

}  // namespace

core::Result<Table3Run> run_table3(
    const SystemsOptions& options, bool with_table7,
    const std::function<core::Status(const Table3Outcome&, const profile::ModelJob&)>&
        on_workload) {
  Table3Run run;
  SearchCache cache;
  for (const Table3Workload& w : table3_workloads()) {
    Table3Outcome o;
    o.workload = w;
    auto job = build_table3_job(w);
    if (!job) return core::Error{w.label() + ": " + job.error().message};
    auto memory = table3_memory(*job);
    if (!memory) return core::Error{w.label() + ": " + memory.error().message};
    o.oom = !memory->fits;
    o.memory_verdict = memory->verdict;
    o.peak_gib = memory->stages[static_cast<std::size_t>(memory->peak_stage)].total_bytes / kGiB;
    auto no_recompute = table3_memory(*job, false);
    if (!no_recompute) return core::Error{w.label() + ": " + no_recompute.error().message};
    o.peak_gib_no_recompute =
        no_recompute->stages[static_cast<std::size_t>(no_recompute->peak_stage)].total_bytes / kGiB;
    o.ready_power_w = job->gpu.idle_power_w;
    auto r = run_systems(*job, job->parallel.num_microbatches, options, &cache);
    if (!r) return core::Error{w.label() + ": " + r.error().message};
    r->plans = {};  // plan files come from single-job runs; free the solved frontiers
    o.result = std::move(*r);
    if (on_workload) {
      if (auto done = on_workload(o, *job); !done) return done.error();
    }
    run.outcomes.push_back(std::move(o));
  }
  if (with_table7) {
    for (int microbatches : kTable7Microbatches) {
      auto job = profile::build_model_job(table7_request(microbatches));
      if (!job) return job.error();
      auto r = run_systems(*job, microbatches, options, &cache);
      if (!r) return r.error();
      r->plans = {};
      run.table7.push_back(std::move(*r));
    }
  }
  run.searches_run = cache.misses;
  run.searches_reused = cache.hits;
  return run;
}

}  // namespace powertrain::kareus
