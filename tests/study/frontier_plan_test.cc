// study::plan_frontier, the library entry of `powertrain frontier`: its checks (usage errors
// apart from data errors), the order it calls its hooks in, and the points it picks, on the
// built-in example.
#include "study/frontier_plan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace powertrain::study {
namespace {

FrontierSettings example(const std::string& emit = "tstar,tmin") {
  FrontierSettings settings;
  settings.emit_plans = emit;
  settings.quiet = true;
  return settings;
}

TEST(FrontierPlanTest, PlansTheExampleCallingTheHooksInOrder) {
  std::vector<std::string> calls;
  const FrontierHooks hooks{
      .before_load = [&]() -> core::Status {
        calls.push_back("before_load");
        return core::Ok{};
      },
      .profile_loaded =
          [&](const ProfileSource& source) {
            EXPECT_TRUE(source.builtin);
            calls.push_back("profile_loaded");
          },
      .before_solve = [&]() -> core::Status {
        calls.push_back("before_solve");
        return core::Ok{};
      },
      .solved = [&](const profile::Profile&,
                    const frontier::PlanningProblem&) { calls.push_back("solved"); }};
  core::FlowError error;
  const auto plan = plan_frontier(example(), hooks, error);
  ASSERT_TRUE(plan) << error.message;
  EXPECT_EQ(calls,
            (std::vector<std::string>{"before_load", "profile_loaded", "before_solve", "solved"}));
  ASSERT_GE(plan->frontier.points.size(), 2u);
  // The run points into the plan's own problem and frontier.
  EXPECT_EQ(plan->run.problem, &plan->problem);
  EXPECT_EQ(plan->run.frontier, &plan->frontier);
  // Default timeline: the last point (T_min); tstar and tmin are the first and the last point.
  const std::size_t last = plan->frontier.points.size() - 1;
  EXPECT_EQ(plan->timeline_point, last);
  EXPECT_EQ(plan->emit, (std::vector<std::size_t>{0, last}));
}

TEST(FrontierPlanTest, CommandLineMistakesAreUsageErrorsAndDataOnesAreNot) {
  core::FlowError error;
  FrontierSettings both = example();
  both.profile = "profile.csv";
  both.model_mode = true;
  EXPECT_FALSE(plan_frontier(both, {}, error));
  EXPECT_TRUE(error.usage);
  EXPECT_EQ(error.message, "give either --profile or --model/--gpu, not both");

  FrontierSettings no_p_blocking = example();
  no_p_blocking.profile = "profile.csv";
  EXPECT_FALSE(plan_frontier(no_p_blocking, {}, error));
  EXPECT_TRUE(error.usage);
  EXPECT_EQ(error.message, std::string(kFrontierPBlockingRequired));

  FrontierSettings schedule = example();
  schedule.schedule = "zigzag";
  EXPECT_FALSE(plan_frontier(schedule, {}, error));
  EXPECT_TRUE(error.usage);
  EXPECT_NE(error.message.find("--schedule: unknown 'zigzag'"), std::string::npos);

  FrontierSettings far_point = example();
  far_point.timeline_point = 1'000'000;
  EXPECT_FALSE(plan_frontier(far_point, {}, error));
  EXPECT_TRUE(error.usage);
  EXPECT_EQ(error.message.rfind("--timeline-point: expected 0 to ", 0), 0u);

  FrontierSettings missing = example();
  missing.profile = "/nonexistent/profile.csv";
  missing.p_blocking_w = 80.0;
  EXPECT_FALSE(plan_frontier(missing, {}, error));
  EXPECT_FALSE(error.usage);

  // A hook's error stops the flow before the solve, as a data error.
  bool solved = false;
  const FrontierHooks refuse{
      .before_load = {},
      .profile_loaded = {},
      .before_solve = []() -> core::Status { return core::Error{"out: not empty"}; },
      .solved = [&](const profile::Profile&, const frontier::PlanningProblem&) { solved = true; }};
  EXPECT_FALSE(plan_frontier(example(), refuse, error));
  EXPECT_FALSE(error.usage);
  EXPECT_EQ(error.message, "out: not empty");
  EXPECT_FALSE(solved);
}

}  // namespace
}  // namespace powertrain::study
