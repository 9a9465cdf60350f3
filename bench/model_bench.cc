// Plans without a GPU: generating a modelled profile, and emulating GPT-3 175B on 1,024-8,192
// A100s (Perseus §6.3) from the built-in model.
#include <benchmark/benchmark.h>

#include "profile/model_profile.h"
#include "study/cluster.h"

namespace powertrain::frontier {
namespace {

profile::ModelJobRequest gpt3_175b_slice() {
  profile::ModelJobRequest request;
  request.model = "gpt3-175b";
  request.gpu = "a100-sxm";
  request.tp = 8;
  request.pp = 8;
  request.num_layers = 32;
  request.partition = "uniform";
  return request;
}

void BM_ModelProfile_GPT3_175B_A100(benchmark::State& state) {
  for (auto _ : state) {
    auto job = profile::build_model_job(gpt3_175b_slice());
    profile::Profile profile = profile::generate_profile(*job);
    benchmark::DoNotOptimize(profile);
  }
}
BENCHMARK(BM_ModelProfile_GPT3_175B_A100)->Unit(benchmark::kMillisecond);

void BM_Cluster_GPT3_175B_A100_1024_to_8192(benchmark::State& state) {
  const profile::Profile profile =
      profile::generate_profile(*profile::build_model_job(gpt3_175b_slice()));
  std::vector<study::ClusterConfig> configs;
  for (int gpus : {1024, 2048, 4096, 8192}) configs.push_back({gpus, 8, 8, 1536, 1});
  study::ClusterSettings settings;
  settings.planning.p_blocking_w = 83.64;
  for (auto _ : state) {
    auto emulation = study::emulate_cluster(profile, configs, settings);
    if (!emulation) state.SkipWithError(emulation.error().message.c_str());
    benchmark::DoNotOptimize(emulation);
  }
}
BENCHMARK(BM_Cluster_GPT3_175B_A100_1024_to_8192)->Unit(benchmark::kSecond)->Iterations(1);

}  // namespace
}  // namespace powertrain::frontier

BENCHMARK_MAIN();
