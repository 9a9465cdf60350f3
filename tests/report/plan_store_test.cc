// report::read_frontier_directory (the frontier-directory parser) and the straggler lookup on a
// hand-written directory: plans by hand, decisions against a brute-force scan, and one error per
// rule with its file:line text.
#include "report/plan_store.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

namespace powertrain::report {
namespace {

namespace fs = std::filesystem;

constexpr const char* kFrontier =
    "time,energy,realized_time,realized_energy\n"
    "3,30,3,31\n"
    "2,40,2,41\n"
    "1,50,1,52\n";
constexpr const char* kPlans =
    "point,gpu,slot,stage,instruction,microbatch,frequency_mhz\n"
    "0,0,0,0,forward,0,900\n"
    "0,0,1,0,backward,0,900\n"
    "0,1,0,1,forward,0,1000\n"
    "1,0,1,0,backward,0,1200\n"
    "2,0,0,0,forward,0,1400\n"
    "2,1,0,1,forward,0,1410\n";

class PlanStoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           (std::string("powertrain_plan_store_") +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void write(const char* frontier, const char* plans) {
    std::ofstream(dir_ / "frontier.csv") << frontier;
    std::ofstream(dir_ / "plans.csv") << plans;
  }
  std::string error_of(const char* frontier, const char* plans) {
    write(frontier, plans);
    auto stored = read_frontier_directory(dir_.string());
    return stored ? "" : stored.error().message;
  }
  std::string file(const char* name) const { return (dir_ / name).string(); }
  fs::path dir_;
};

TEST_F(PlanStoreTest, ReadsPointsAndReplaysPlanChanges) {
  write(kFrontier, kPlans);
  auto stored = read_frontier_directory(dir_.string());
  ASSERT_TRUE(stored) << stored.error().message;
  ASSERT_EQ(stored->points.size(), 3u);
  EXPECT_EQ(stored->points[1].time_s, 2.0);
  EXPECT_EQ(stored->points[2].realized_energy_j, 52.0);
  using Plan = std::vector<std::vector<std::pair<std::string, int>>>;
  EXPECT_EQ(stored->plan_at(0), (Plan{{{"forward", 900}, {"backward", 900}}, {{"forward", 1000}}}));
  EXPECT_EQ(stored->plan_at(1),
            (Plan{{{"forward", 900}, {"backward", 1200}}, {{"forward", 1000}}}));
  EXPECT_EQ(stored->plan_at(2),
            (Plan{{{"forward", 1400}, {"backward", 1200}}, {{"forward", 1410}}}));
}

TEST_F(PlanStoreTest, DecisionIsTheSlowestPointNotSlowerThanTopt) {
  write(kFrontier, kPlans);
  auto stored = read_frontier_directory(dir_.string());
  ASSERT_TRUE(stored);
  for (double straggler : {0.5, 1.0, 1.5, 2.0, 2.5, 3.0, 4.0}) {
    const LookupDecision d = decide(*stored, straggler);
    const double t_opt = std::min(3.0, straggler);
    std::size_t expected = stored->points.size() - 1;  // brute force: first (slowest) that fits
    for (std::size_t i = 0; i < stored->points.size(); ++i) {
      if (stored->points[i].time_s <= t_opt) {
        expected = i;
        break;
      }
    }
    EXPECT_EQ(d.point, expected) << straggler;
    EXPECT_EQ(d.target_time_s, t_opt);
    EXPECT_EQ(d.faster_than_t_min, straggler < 1.0);
  }
}

TEST_F(PlanStoreTest, ErrorsNameFileLineAndField) {
  EXPECT_EQ(error_of("time,energy,realized_time\n1,2,3\n", kPlans),
            file("frontier.csv") + ":1: missing column 'realized_energy'");
  EXPECT_EQ(
      error_of("time,energy,realized_time,realized_energy\n1,1,1,1\n2,1,1,1\n", kPlans),
      file("frontier.csv") + ":3: field 'time': expected times to decrease (slowest first), got 2");
  EXPECT_EQ(error_of("time,energy,realized_time,realized_energy\n", kPlans),
            file("frontier.csv") + ": no frontier points");
  EXPECT_EQ(error_of(kFrontier,
                     "point,gpu,slot,stage,instruction,microbatch,frequency_mhz\n"
                     "0,0,0,0,forward,0,900\n5,0,0,0,forward,0,900\n"),
            file("plans.csv") + ":3: field 'point': expected 0 to 2, got 5");
  EXPECT_EQ(error_of(kFrontier,
                     "point,gpu,slot,stage,instruction,microbatch,frequency_mhz\n"
                     "0,0,0,0,forward,0,900\n1,0,7,0,forward,0,900\n"),
            file("plans.csv") + ":3: gpu 0 slot 7 was not listed at point 0");
  EXPECT_EQ(error_of(kFrontier,
                     "point,gpu,slot,stage,instruction,microbatch,frequency_mhz\n"
                     "0,0,1,0,forward,0,900\n"),
            file("plans.csv") + ": gpu 0 has no slot 0 at point 0");
  EXPECT_EQ(error_of(kFrontier, "point,gpu,slot,stage,instruction,microbatch,frequency_mhz\n"),
            file("plans.csv") + ": no plan rows for point 0");
  EXPECT_EQ(error_of(kFrontier, "point,gpu,slot,stage,instruction,microbatch\n0,0,0,0,forward,0\n"),
            file("plans.csv") + ":1: missing column 'frequency_mhz'");
}

TEST_F(PlanStoreTest, TruncatedCorruptedAndEmptyFiles) {
  struct Case {
    const char* frontier;
    const char* plans;
    const char* file;
    std::string message;  // after "<dir>/<file>"
  };
  const Case cases[] = {
      // Cut inside the last row.
      {"time,energy,realized_time,realized_energy\n3,30,3,31\n2,40", kPlans, "frontier.csv",
       ":3: expected 4 fields as in the header, got 2"},
      {kFrontier,
       "point,gpu,slot,stage,instruction,microbatch,frequency_mhz\n0,0,0,0,forward,0,900\n1,0,0",
       "plans.csv", ":3: expected 7 fields as in the header, got 3"},
      // A corrupted number.
      {"time,energy,realized_time,realized_energy\n3,3x0,3,31\n", kPlans, "frontier.csv",
       ":2: field 'energy': expected a number, got '3x0'"},
      // Empty files.
      {"", kPlans, "frontier.csv", ": empty file"},
      {kFrontier, "", "plans.csv", ": empty file"},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(error_of(c.frontier, c.plans), file(c.file) + c.message) << c.frontier;
  }
}

}  // namespace
}  // namespace powertrain::report
