// search::run_search_settings, the library entry of `powertrain search` (without mpirun: one
// rank): command-line overrides as usage errors, the hooks, and the same trials as run_search
// called by hand on the same spec.
#include "search/search_run.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace powertrain::search {
namespace {

// The flow's error (an empty one, after a failed expectation, when it succeeded).
template <typename T>
core::FlowError failure(const core::FlowResult<T>& result) {
  EXPECT_FALSE(result);
  return result ? core::FlowError{} : result.error();
}

namespace fs = std::filesystem;

// Two configurations (pp 1 and 2) of a small job: a fraction of a second to plan.
constexpr const char* kSpec = R"({"model": "gpt3-1.3b", "gpu": "h100-sxm", "num_gpus": 4,
  "global_batch": 16, "knobs": {"tp": [2], "pp": [1, 2], "microbatch_size": [2],
  "virtual_stages": [1], "recompute": [false], "sequence_parallel": [false],
  "distributed_optimizer": [false]}, "algorithm": "grid"})";

class SearchRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("powertrain_search_run_test_" +
            std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
    std::ofstream(dir_ / "spec.json") << kSpec;
    settings_.spec = (dir_ / "spec.json").string();
    settings_.threads = 1;
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  SearchSettings settings_;
};

TEST_F(SearchRunTest, OverridesAreUsageErrorsAndAMissingSpecIsNot) {
  core::FlowError error;
  SearchSettings bad_algorithm = settings_;
  bad_algorithm.algorithm = "annealing";
  error = failure(run_search_settings(bad_algorithm, {}));
  EXPECT_TRUE(error.usage);
  EXPECT_NE(error.message.find("--algorithm"), std::string::npos);

  SearchSettings missing = settings_;
  missing.spec = (dir_ / "absent.json").string();
  error = failure(run_search_settings(missing, {}));
  EXPECT_FALSE(error.usage);

  // The caller's output directory failing stops the search before any trial.
  bool progressed = false;
  const SearchHooks refuse{
      .before_search = []() -> core::Status { return core::Error{"out: not empty"}; },
      .warning = {},
      .progress = [&](const SearchSpec&, const SearchProgress&, const std::vector<TrialResult>&,
                      bool) { progressed = true; }};
  error = failure(run_search_settings(settings_, refuse));
  EXPECT_FALSE(error.usage);
  EXPECT_EQ(error.message, "out: not empty");
  EXPECT_FALSE(progressed);
}

TEST_F(SearchRunTest, SearchesLikeRunSearchByHand) {
  int before = 0;
  bool last_was_final = false;
  const SearchHooks hooks{
      .before_search = [&]() -> core::Status {
        ++before;
        return core::Ok{};
      },
      .warning = {},
      .progress = [&](const SearchSpec&, const SearchProgress&, const std::vector<TrialResult>&,
                      bool final_line) { last_was_final = final_line; }};
  SearchSettings settings = settings_;
  settings.seed = 5;  // overrides the spec's
  const auto searched = run_search_settings(settings, hooks);
  ASSERT_TRUE(searched) << searched.error().message;
  const auto& run = *searched;
  EXPECT_FALSE(run->worker);
  EXPECT_EQ(run->mpi->world().rank, 0);
  EXPECT_EQ(run->threads, 1);
  EXPECT_EQ(run->spec.seed, 5u);
  EXPECT_EQ(before, 1);
  EXPECT_TRUE(last_was_final);

  auto spec = read_search_spec(settings_.spec);
  ASSERT_TRUE(spec) << spec.error().message;
  spec->seed = 5;
  SearchOptions options;
  options.threads = 1;
  const SearchResult by_hand = run_search(*spec, options);
  ASSERT_EQ(run->result.trials.size(), by_hand.trials.size());
  ASSERT_EQ(by_hand.trials.size(), 2u);
  for (std::size_t i = 0; i < by_hand.trials.size(); ++i) {
    EXPECT_EQ(run->result.trials[i].status, by_hand.trials[i].status);
    EXPECT_DOUBLE_EQ(run->result.trials[i].t_min_s, by_hand.trials[i].t_min_s);
    EXPECT_DOUBLE_EQ(run->result.trials[i].energy_at_t_star_j,
                     by_hand.trials[i].energy_at_t_star_j);
  }
}

}  // namespace
}  // namespace powertrain::search
