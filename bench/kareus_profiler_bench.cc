// Kareus: the model profiler's cost per candidate, and the §6.3 large-scale emulation.
#include <benchmark/benchmark.h>

#include "kareus/job_run.h"
#include "kareus/profiler.h"
#include "kareus/search.h"
#include "profile/model_profile.h"

namespace powertrain::kareus {
namespace {

PartitionType llama_3b_partition() {
  auto job = profile::build_model_job(JobRunSettings::default_job_request());
  MicrobatchWork mb = build_microbatch_work(job->stages[1].forward, false, 8);
  for (const PartitionType& p : mb.partitions)
    if (p.count > 10 && p.compute.size() >= 4) return p;
  return mb.partitions.front();
}

// One candidate (clock, comm SMs, launch slot) of Llama 3.2 3B's attention partition on the model.
void BM_ModelProfiler_Candidate(benchmark::State& state) {
  const device::GpuSpec gpu = *device::find_gpu("a100-sxm");
  const PartitionType p = llama_3b_partition();
  const SearchSpace space = default_search_space(gpu, ConcurrencyParams{}, p);
  ModelProfiler model(gpu, ConcurrencyParams{});
  std::size_t i = 0;
  for (auto _ : state) {
    auto cost = model.measure(p, space.at(i++ % space.size()));
    benchmark::DoNotOptimize(cost);
  }
}
BENCHMARK(BM_ModelProfiler_Candidate)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace powertrain::kareus

#include "kareus/large_scale.h"

namespace powertrain::kareus {
namespace {

// §6.3 on 10,240 GPUs (128 pipelines × 16 microbatches): MBO over every distinct partition type,
// microbatch frontiers, and the Kareus and M+P iteration frontiers.
void BM_KareusLargeScale_10240(benchmark::State& state) {
  LargeScaleOptions o = paper_large_scale_options();
  o.gpus = {10240};
  auto job = profile::build_model_job(o.request);
  ModelProfiler model(job->gpu, ConcurrencyParams{});
  for (auto _ : state) {
    auto result = emulate_large_scale(o, model);
    if (!result) state.SkipWithError(result.error().message.c_str());
    benchmark::DoNotOptimize(result);
  }
}
BENCHMARK(BM_KareusLargeScale_10240)->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace
}  // namespace powertrain::kareus
BENCHMARK_MAIN();
