// Kareus on the paper's Table 3 set: the 12 workloads × 5 systems (target < 60 s on one core),
// and must-show 1 on every partition type of every Table 3 workload (MBO ≥ 99 % of the exhaustive
// hypervolume evaluating ≤ 10 % of App. B's space), reported as counters.
#include <benchmark/benchmark.h>

#include <algorithm>

#include "kareus/systems.h"

namespace powertrain::kareus {
namespace {

std::vector<profile::ModelJob> table3_jobs() {
  std::vector<profile::ModelJob> jobs;
  for (const Table3Workload& w : table3_workloads()) jobs.push_back(*build_table3_job(w));
  return jobs;
}

// The whole set, as `powertrain kareus --table3 --no-table7` runs it (one search cache).
void BM_Kareus_Table3_12Workloads_5Systems(benchmark::State& state) {
  const std::vector<profile::ModelJob> jobs = table3_jobs();
  std::size_t points = 0, searches = 0, reused = 0;
  for (auto _ : state) {
    SearchCache cache;
    for (const profile::ModelJob& job : jobs) {
      auto r = run_systems(job, job.parallel.num_microbatches, {}, &cache);
      if (!r) {
        state.SkipWithError(r.error().message.c_str());
        return;
      }
      for (const SystemFrontier& f : r->systems) points += f.points.size();
    }
    searches = cache.misses;
    reused = cache.hits;
  }
  state.counters["partition_searches"] = double(searches);
  state.counters["reused_types"] = double(reused);
  state.counters["frontier_points"] = double(points) / double(state.iterations());
}
BENCHMARK(BM_Kareus_Table3_12Workloads_5Systems)->Unit(benchmark::kSecond)->Iterations(1);

// Must-show 1 on all types (the unit test runs a subset).
void BM_Kareus_MustShow1_AllTable3PartitionTypes(benchmark::State& state) {
  const std::vector<profile::ModelJob> jobs = table3_jobs();
  const ConcurrencyParams params;
  double worst_ratio = 1.0, worst_fraction = 0.0;
  int types = 0, failing = 0;
  for (auto _ : state) {
    for (const profile::ModelJob& job : jobs) {
      for (const PartitionType& p : unique_partition_types(job)) {
        const SearchSpace space = global_search_space(job.gpu, p);
        const std::vector<Evaluated> all = exhaustive(job.gpu, params, p, space);
        auto mbo = run_mbo(job.gpu, params, p, space, app_c_options(p, 1));
        if (!mbo) {
          state.SkipWithError(mbo.error().message.c_str());
          return;
        }
        const double fraction = double(mbo->evaluated.size()) / double(space.size());
        const double ratio = hypervolume_ratio(mbo->evaluated, all);
        worst_ratio = std::min(worst_ratio, ratio);
        worst_fraction = std::max(worst_fraction, fraction);
        failing += (ratio < 0.99 || fraction > 0.10) ? 1 : 0;
        ++types;
      }
    }
  }
  state.counters["types"] = types;
  state.counters["failing"] = failing;
  state.counters["worst_hv_ratio"] = worst_ratio;
  state.counters["worst_evaluated_fraction"] = worst_fraction;
}
BENCHMARK(BM_Kareus_MustShow1_AllTable3PartitionTypes)->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace
}  // namespace powertrain::kareus

BENCHMARK_MAIN();
