// The Profiler interface and its model backend: the search evaluates every candidate through it.
#include "kareus/profiler.h"

#include <gtest/gtest.h>

#include <chrono>
#include <map>

#include "kareus/search.h"
#include "kareus_test_jobs.h"
#include "profile/model_profile.h"

namespace powertrain::kareus {
namespace {

PartitionType mlp_partition() {
  const MicrobatchWork mb = test_jobs::llama_tp8_stage1_forward();
  for (const PartitionType& p : mb.partitions)
    if (p.count > 10) return p;
  ADD_FAILURE() << "no repeated partition";
  return {};
}

// Counts calls per schedule and can fail on the n-th call.
class CountingProfiler final : public Profiler {
 public:
  explicit CountingProfiler(Profiler& inner, int fail_at = -1) : inner_(inner), fail_at_(fail_at) {}
  std::string name() const override { return "counting"; }
  double static_power_w() const override { return inner_.static_power_w(); }
  core::Result<Cost> measure(const PartitionType& p, const Schedule& s) override {
    if (calls_++ == fail_at_) return core::Error{"fake: measurement failed"};
    ++seen_[{s.clock_mhz, s.comm_sms, s.launch_slot}];
    return inner_.measure(p, s);
  }
  int calls() const { return calls_; }
  const std::map<std::tuple<int, int, int>, int>& seen() const { return seen_; }

 private:
  Profiler& inner_;
  int fail_at_;
  int calls_ = 0;
  std::map<std::tuple<int, int, int>, int> seen_;
};

TEST(KareusProfiler, ModelBackendIsTheConcurrencyModel) {
  const device::GpuSpec gpu = *device::find_gpu("a100-sxm");
  const ConcurrencyParams params;
  const PartitionType p = mlp_partition();
  ModelProfiler model(gpu, params);
  EXPECT_EQ(model.name(), "model");
  EXPECT_DOUBLE_EQ(model.static_power_w(), gpu.dvfs.static_power_w);
  const Schedule s{1200, 12, 1};
  const Cost direct = evaluate_partition(gpu, params, p, s);
  auto measured = model.measure(p, s);
  ASSERT_TRUE(measured);
  EXPECT_EQ(measured->time_s, direct.time_s);
  EXPECT_EQ(measured->energy_j, direct.energy_j);
  EXPECT_NEAR(measured->static_j, model.static_power_w() * measured->time_s, 1e-12);
  EXPECT_NEAR(measured->static_j + measured->dynamic_j, measured->energy_j, 1e-9);
}

TEST(KareusProfiler, SearchEvaluatesEveryCandidateOnceThroughTheProfiler) {
  const device::GpuSpec gpu = *device::find_gpu("a100-sxm");
  const ConcurrencyParams params;
  const PartitionType p = mlp_partition();
  const SearchSpace space = default_search_space(gpu, params, p);
  ModelProfiler model(gpu, params);
  CountingProfiler counting(model);
  auto via_profiler = run_mbo(counting, p, space, app_c_options(p, 3));
  ASSERT_TRUE(via_profiler) << via_profiler.error().message;
  auto via_model = run_mbo(gpu, params, p, space, app_c_options(p, 3));
  ASSERT_TRUE(via_model);
  // The overload without a profiler is the model backend: same candidates, same costs.
  ASSERT_EQ(via_profiler->evaluated.size(), via_model->evaluated.size());
  for (std::size_t i = 0; i < via_model->evaluated.size(); ++i) {
    EXPECT_EQ(via_profiler->evaluated[i].index, via_model->evaluated[i].index);
    EXPECT_EQ(via_profiler->evaluated[i].cost.energy_j, via_model->evaluated[i].cost.energy_j);
  }
  // One measurement per evaluated candidate, none repeated.
  EXPECT_EQ(counting.calls(), static_cast<int>(via_profiler->evaluated.size()));
  for (const auto& [schedule, n] : counting.seen()) EXPECT_EQ(n, 1);

  CountingProfiler all(model);
  auto ex = exhaustive(all, p, space);
  ASSERT_TRUE(ex);
  EXPECT_EQ(all.calls(), static_cast<int>(space.size()));
  const std::vector<Evaluated> reference = exhaustive(gpu, params, p, space);
  for (std::size_t i = 0; i < space.size(); i += 37)
    EXPECT_EQ((*ex)[i].cost.time_s, reference[i].cost.time_s);
}

TEST(KareusProfiler, AFailedMeasurementStopsTheSearchWithItsMessage) {
  const device::GpuSpec gpu = *device::find_gpu("a100-sxm");
  const PartitionType p = mlp_partition();
  const SearchSpace space = default_search_space(gpu, ConcurrencyParams{}, p);
  ModelProfiler model(gpu, ConcurrencyParams{});
  for (int fail_at : {0, 5, 60}) {  // initial sample and first batch
    CountingProfiler failing(model, fail_at);
    auto result = run_mbo(failing, p, space, app_c_options(p, 1));
    ASSERT_FALSE(result) << fail_at;
    EXPECT_EQ(result.error().message, "fake: measurement failed");
    EXPECT_EQ(failing.calls(), fail_at + 1);
  }
  CountingProfiler failing(model, 7);
  auto ex = exhaustive(failing, p, space);
  ASSERT_FALSE(ex);
  EXPECT_EQ(ex.error().message, "fake: measurement failed");
}

// "Microseconds per candidate": a loose bound that still fails if the model gets 100× slower
// (measured numbers: bench/kareus_profiler_bench.cc, docs/benchmarks.md).
TEST(KareusProfiler, ModelBackendTakesMicrosecondsPerCandidate) {
  const device::GpuSpec gpu = *device::find_gpu("a100-sxm");
  const PartitionType p = mlp_partition();
  const SearchSpace space = default_search_space(gpu, ConcurrencyParams{}, p);
  ModelProfiler model(gpu, ConcurrencyParams{});
  const auto start = std::chrono::steady_clock::now();
  auto all = exhaustive(model, p, space);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(all);
  EXPECT_LT(s / double(space.size()), 1e-3) << space.size() << " candidates in " << s << " s";
}

}  // namespace
}  // namespace powertrain::kareus
