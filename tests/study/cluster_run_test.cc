// prepare_cluster: the profile's stage count against the asked one, P_blocking from a modelled
// job's GPU, one configuration per GPU count.
#include "study/cluster_run.h"

#include <fmt/core.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "profile/example_profile.h"

namespace powertrain::study {
namespace {

namespace fs = std::filesystem;

class PrepareClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("prepare_cluster_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
    csv_ = (dir_ / "example.csv").string();
    std::ofstream(csv_) << profile::example_profile_csv();
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
  std::string csv_;
};

TEST_F(PrepareClusterTest, CsvStagesAndConfigurations) {
  ClusterRequest request;
  request.profile_path = csv_;
  request.p_blocking_w = 80.0;
  request.tp = 2;
  request.global_batch_samples = 64;
  request.gpus = {16, 32};
  auto inputs = prepare_cluster(request, ClusterSettings{}, {});
  ASSERT_TRUE(inputs.ok()) << inputs.error().message;
  const int stages = profile::ExampleDefaults{}.stages;
  EXPECT_EQ(inputs->profile.num_stages(), stages);
  EXPECT_TRUE(inputs->stages_from_profile);
  EXPECT_DOUBLE_EQ(inputs->p_blocking_w, 80.0);
  ASSERT_EQ(inputs->configs.size(), 2u);
  EXPECT_EQ(inputs->configs[1].gpus, 32);
  EXPECT_EQ(inputs->configs[1].tensor_parallel, 2);
  EXPECT_EQ(inputs->configs[1].pipeline_stages, stages);
  EXPECT_EQ(inputs->configs[1].global_batch_samples, 64);

  // Asking for another stage count than the file has is an error naming both.
  request.stages = stages + 1;
  auto mismatched = prepare_cluster(request, ClusterSettings{}, {});
  ASSERT_FALSE(mismatched.ok());
  EXPECT_NE(mismatched.error().message.find(fmt::format("has {} stage(s)", stages)),
            std::string::npos)
      << mismatched.error().message;
  request.stages = stages;
  auto matched = prepare_cluster(request, ClusterSettings{}, {});
  ASSERT_TRUE(matched.ok()) << matched.error().message;
  EXPECT_FALSE(matched->stages_from_profile);
}

TEST(PrepareCluster, ModelledJobGivesPBlockingAndSaysSo) {
  ClusterRequest request;
  request.job = profile::ModelJobRequest{};
  request.job->model = "gpt3-1.3b";
  request.job->gpu = "a100-sxm";
  request.stages = 2;
  request.global_batch_samples = 16;
  request.gpus = {4};
  std::string said;
  auto inputs = prepare_cluster(request, ClusterSettings{},
                                [&said](const std::string& line) { said += line; });
  ASSERT_TRUE(inputs.ok()) << inputs.error().message;
  EXPECT_GT(inputs->p_blocking_w, 0.0);
  EXPECT_EQ(inputs->profile.num_stages(), 2);
  EXPECT_FALSE(inputs->stages_from_profile);
  EXPECT_EQ(said.rfind("profile modelled for ", 0), 0u) << said;
}

}  // namespace
}  // namespace powertrain::study
