// The client against the real plan server (src/serve) in-process on loopback: four ranks register,
// a profile is posted, each rank gets its stage's T_min plan and applies it through the fake NVML;
// results are accepted; a straggler report moves every rank to the T_opt plan.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "../support/in_process_server.h"
#include "client/client.h"
#include "client/http.h"
#include "core/csv.h"
#include "frontier/evaluate.h"
#include "frontier/problem.h"
#include "frontier/solver.h"
#include "profile/example_profile.h"
#include "report/frontier_report.h"

namespace powertrain::client {
namespace {

struct Reference {
  frontier::PlanningProblem problem;
  frontier::Frontier solved;
};

// The example profile's frontier as `powertrain frontier` computes it (4 stages, 8 microbatches).
Reference reference() {
  auto table = core::parse_csv(profile::example_profile_csv(), "example");
  auto profile = profile::parse_profile(*table);
  pipeline::PipelineSpec spec;
  spec.num_gpus = 4;
  spec.num_microbatches = 8;
  frontier::PlanningSettings settings;
  settings.p_blocking_w = 120.0;
  auto problem = frontier::build_planning_problem(*profile, spec, settings);
  Reference ref{std::move(*problem), {}};
  ref.solved = frontier::solve_frontier(ref.problem);
  frontier::pin_fastest_point(ref.problem, ref.solved);
  return ref;
}

void run_iteration(Client& client, const Schedule& schedule) {
  ASSERT_TRUE(client.on_step_begin());
  for (const auto& [name, mhz] : schedule) {
    auto begun = client.on_instruction_begin(name);
    ASSERT_TRUE(begun) << begun.error().message;
    ASSERT_TRUE(client.on_instruction_end(name));
  }
  auto ended = client.on_step_end();
  ASSERT_TRUE(ended) << ended.error().message;
}

TEST(ClientWithServe, RegisterScheduleResultsAndStraggler) {
  serve::ServiceOptions service_options;
  service_options.background = false;
  testing_support::InProcessServer server(service_options);
  ASSERT_TRUE(server.started());
  const std::string url = server.url();

  std::vector<std::unique_ptr<Client>> ranks;
  std::string job_id;
  for (int rank = 0; rank < 4; ++rank) {
    ClientOptions o;
    o.server_url = url;
    o.job_id = job_id;
    o.rank = o.pp_rank = rank;
    o.pp_degree = o.world_size = 4;
    o.nvml_library = POWERTRAIN_FAKE_NVML_PATH;
    o.report_every_iterations = 1;
    o.refresh_schedule_every_iterations = 1;
    auto created = Client::create(o);
    ASSERT_TRUE(created) << created.error().message;
    ranks.push_back(std::move(*created));
    if (rank == 0) {
      job_id = ranks[0]->wait_for_job_id(10.0);
      ASSERT_FALSE(job_id.empty()) << ranks[0]->status().last_background_error;
      EXPECT_NE(job_id.find("+dp1+pp4+tp1+"), std::string::npos) << job_id;
    }
  }
  // The infrastructure posts the profile (not the client's job).
  HttpClient http(*parse_url(url));
  const nlohmann::json profile = {
      {"csv", profile::example_profile_csv()}, {"microbatches", 8}, {"p_blocking_w", 120.0}};
  auto posted = http.request("POST", "/profile/" + job_id, profile.dump(), 60.0);
  ASSERT_TRUE(posted) << posted.error().message;
  ASSERT_EQ(posted->status, 202) << posted->body;

  const Reference ref = reference();
  const std::size_t last = ref.solved.points.size() - 1;
  const auto t_min_plans = report::gpu_plans_at(ref.problem, ref.solved.durations_at(last));
  for (int rank = 0; rank < 4; ++rank) {
    Client& c = *ranks[rank];
    ASSERT_TRUE(c.wait_for_schedule(30.0)) << c.status().last_background_error;
    // A schedule fetched before the profile was solved may be the all-max-clock plan; the
    // refresh after the profile brings T_min's plan, which applies from the next step.
    ASSERT_TRUE(c.refresh_schedule());
    ASSERT_TRUE(c.flush(30.0));
    run_iteration(c, t_min_plans[rank]);
    ASSERT_EQ(c.schedule(), t_min_plans[rank]) << "rank " << rank;
    ASSERT_TRUE(c.flush(10.0));
    const auto status = c.status();
    EXPECT_EQ(status.network_errors, 0) << status.last_background_error;
    EXPECT_EQ(status.results_posted, 1) << "rank " << rank;
  }
  // The clocks the fake driver was asked for are the plan's, consecutive repeats merged.
  std::vector<int> expected_mhz;
  for (const auto& [name, mhz] : t_min_plans[0])
    if (expected_mhz.empty() || expected_mhz.back() != mhz) expected_mhz.push_back(mhz);
  std::vector<int> applied;
  for (const auto& a : ranks[0]->applied_clocks()) applied.push_back(a.mhz);
  EXPECT_EQ(applied, expected_mhz);

  // A 1.2x straggler: every rank moves to the slowest point no slower than min(T*, 1.2 T_min).
  StragglerReport report;
  report.pipeline = 0;
  report.slowdown = 1.2;
  ASSERT_TRUE(ranks[0]->report_straggler(report));
  ASSERT_TRUE(ranks[0]->flush(10.0));
  const double tau = 1e-3;
  const double target = std::min(ref.solved.points[0].time_units * tau,
                                 1.2 * ref.solved.points[last].time_units * tau);
  std::size_t point = last;
  for (std::size_t p = 0; p <= last; ++p) {
    if (ref.solved.points[p].time_units * tau <= target + 1e-12) {
      point = p;
      break;
    }
  }
  ASSERT_LT(point, last);
  const auto straggler_plans = report::gpu_plans_at(ref.problem, ref.solved.durations_at(point));
  for (int rank = 0; rank < 4; ++rank) {
    Client& c = *ranks[rank];
    // The refresh queued by the last step end ran before the report; fetch again.
    ASSERT_TRUE(c.refresh_schedule());
    ASSERT_TRUE(c.flush(30.0));
    run_iteration(c, straggler_plans[rank]);  // the new schedule applies at this step
    EXPECT_EQ(c.schedule(), straggler_plans[rank]) << "rank " << rank;
    // The periodic refresh (every step) keeps it.
    ASSERT_TRUE(c.flush(30.0));
    run_iteration(c, straggler_plans[rank]);
    EXPECT_EQ(c.status().network_errors, 0) << c.status().last_background_error;
  }
  auto frontier_json = ranks[0]->fetch_frontier(10.0);
  ASSERT_TRUE(frontier_json) << frontier_json.error().message;
  EXPECT_EQ(nlohmann::json::parse(*frontier_json)["serving"]["point"], point);

  ranks.clear();
  server.stop();
}

}  // namespace
}  // namespace powertrain::client
