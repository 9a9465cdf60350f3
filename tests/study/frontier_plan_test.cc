// study::plan_frontier, the library entry of `powertrain frontier`: its checks (usage errors
// apart from data errors), the order it calls its hooks in, and the points it picks, on the
// built-in example.
#include "study/frontier_plan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace powertrain::study {
namespace {

// The flow's error (an empty one, after a failed expectation, when it succeeded).
template <typename T>
core::FlowError failure(const core::FlowResult<T>& result) {
  EXPECT_FALSE(result);
  return result ? core::FlowError{} : result.error();
}

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
  const auto planned = plan_frontier(example(), hooks);
  ASSERT_TRUE(planned) << planned.error().message;
  const auto& plan = *planned;
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
  error = failure(plan_frontier(both, {}));
  EXPECT_TRUE(error.usage);
  EXPECT_EQ(error.message, "give either --profile or --model/--gpu, not both");

  FrontierSettings no_p_blocking = example();
  no_p_blocking.profile = "profile.csv";
  error = failure(plan_frontier(no_p_blocking, {}));
  EXPECT_TRUE(error.usage);
  EXPECT_EQ(error.message, std::string(kFrontierPBlockingRequired));

  FrontierSettings schedule = example();
  schedule.schedule = "zigzag";
  error = failure(plan_frontier(schedule, {}));
  EXPECT_TRUE(error.usage);
  EXPECT_NE(error.message.find("--schedule: unknown 'zigzag'"), std::string::npos);

  FrontierSettings far_point = example();
  far_point.timeline_point = 1'000'000;
  error = failure(plan_frontier(far_point, {}));
  EXPECT_TRUE(error.usage);
  EXPECT_EQ(error.message.rfind("--timeline-point: expected 0 to ", 0), 0u);

  FrontierSettings missing = example();
  missing.profile = "/nonexistent/profile.csv";
  missing.p_blocking_w = 80.0;
  error = failure(plan_frontier(missing, {}));
  EXPECT_FALSE(error.usage);

  // A hook's error stops the flow before the solve, as a data error.
  bool solved = false;
  const FrontierHooks refuse{
      .before_load = {},
      .profile_loaded = {},
      .before_solve = []() -> core::Status { return core::Error{"out: not empty"}; },
      .solved = [&](const profile::Profile&, const frontier::PlanningProblem&) { solved = true; }};
  error = failure(plan_frontier(example(), refuse));
  EXPECT_FALSE(error.usage);
  EXPECT_EQ(error.message, "out: not empty");
  EXPECT_FALSE(solved);
}

}  // namespace
}  // namespace powertrain::study
