// The plan server's logic without the network: Zeus routes and shapes, validation naming fields,
// profile → frontier, T_opt = min(T*, T′) on a straggler, and persistence across a restart.
#include "serve/service.h"

#include <fmt/core.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <regex>

#include "core/csv.h"
#include "frontier/evaluate.h"
#include "frontier/problem.h"
#include "frontier/solver.h"
#include "profile/example_profile.h"
#include "report/frontier_report.h"
#include "service_test_util.h"

namespace powertrain::serve {
namespace {

using nlohmann::json;

using test::call;
using test::make_service;

std::string register_job(Service& s, int dp, int pp, int tp, json extra = json::object()) {
  json body = {{"job_id", ""},
               {"pp_degree", pp},
               {"dp_degree", dp},
               {"tp_degree", tp},
               {"world_size", dp * pp * tp}};
  body.update(extra);
  Response r = call(s, "POST", "/register_job", body);
  EXPECT_EQ(r.status, 200) << r.body;
  return json::parse(r.body).get<std::string>();
}

void register_ranks(Service& s, const std::string& id, int dp, int pp, int tp) {
  for (int d = 0; d < dp; ++d) {
    for (int p = 0; p < pp; ++p) {
      for (int t = 0; t < tp; ++t) {
        const int rank = d * pp * tp + p * tp + t;
        Response r = call(s, "POST", "/register_rank/" + id,
                          {{"rank", rank},
                           {"dp_rank", d},
                           {"pp_rank", p},
                           {"tp_rank", t},
                           {"available_frequencies", {1410, 1380, 1350, 750}}});
        ASSERT_EQ(r.status, 200) << r.body;
        EXPECT_EQ(r.body, "null");
      }
    }
  }
}

std::string field_of(const Response& r) { return json::parse(r.body).at("field"); }

// The reference: the library's own frontier for the example profile, as `powertrain frontier`
// computes it (ceil quantization, fastest point pinned).
struct Reference {
  frontier::PlanningProblem problem;
  frontier::Frontier solved;
};
Reference reference(int microbatches) {
  auto table = core::parse_csv(profile::example_profile_csv(), "example");
  auto profile = profile::parse_profile(*table);
  pipeline::PipelineSpec spec;
  spec.num_gpus = 4;
  spec.num_microbatches = microbatches;
  frontier::PlanningSettings settings;
  settings.p_blocking_w = 120.0;
  auto problem = frontier::build_planning_problem(*profile, spec, settings);
  Reference ref{std::move(*problem), {}};
  ref.solved = frontier::solve_frontier(ref.problem);
  frontier::pin_fastest_point(ref.problem, ref.solved);
  return ref;
}

json plan_rows(const std::vector<std::pair<std::string, int>>& plan) {
  json rows = json::array();
  for (const auto& [n, f] : plan) rows.push_back({n, f});
  return rows;
}

TEST(ServeService, JobIdHasZeusFormat) {
  auto s = make_service();
  const std::string id = register_job(*s, 2, 4, 2, {{"job_metadata", "gpt3"}});
  EXPECT_TRUE(std::regex_match(
      id, std::regex(R"(\d{4}-\d\d-\d\d-\d\d-\d\d-\d\d\+dp2\+pp4\+tp2\+PerseusOnline\+gpt3)")))
      << id;
  // Same shape in the same second: a distinct id, not an overwrite.
  const std::string again = register_job(*s, 2, 4, 2, {{"job_metadata", "gpt3"}});
  EXPECT_NE(again, id);
  Response info = call(*s, "GET", "/info");
  EXPECT_EQ(info.status, 200);
  EXPECT_EQ(json::parse(info.body)["scheduler"], "PerseusOnline");
}

TEST(ServeService, ValidationNamesTheField) {
  auto s = make_service();
  json job = {
      {"job_id", ""}, {"pp_degree", 4}, {"dp_degree", 2}, {"tp_degree", 2}, {"world_size", 15}};
  Response r = call(*s, "POST", "/register_job", job);
  EXPECT_EQ(r.status, 422);
  EXPECT_EQ(field_of(r), "world_size");
  EXPECT_EQ(json::parse(r.body)["detail"][0]["loc"][1], "world_size");
  job["world_size"] = 16;
  job["job_id"] = "mine";
  EXPECT_EQ(field_of(call(*s, "POST", "/register_job", job)), "job_id");
  job["job_id"] = "";
  job["pp_degree"] = "4";
  EXPECT_EQ(field_of(call(*s, "POST", "/register_job", job)), "pp_degree");
  job.erase("pp_degree");
  EXPECT_EQ(field_of(call(*s, "POST", "/register_job", job)), "pp_degree");
  r = s->handle({"POST", "/register_job", "{not json", "application/json"});
  EXPECT_EQ(r.status, 422);

  const std::string id = register_job(*s, 2, 4, 2);
  r = call(*s, "POST", "/register_rank/" + id,
           {{"rank", 3},
            {"dp_rank", 0},
            {"pp_rank", 4},
            {"tp_rank", 0},
            {"available_frequencies", {1410}}});
  EXPECT_EQ(r.status, 422);
  EXPECT_EQ(field_of(r), "pp_rank");
  r = call(*s, "POST", "/register_rank/" + id,
           {{"rank", 3},
            {"dp_rank", 0},
            {"pp_rank", 1},
            {"tp_rank", 0},
            {"available_frequencies", {1410, "fast"}}});
  EXPECT_EQ(field_of(r), "available_frequencies");
  r = call(*s, "POST", "/result/" + id, {{"rank", 0}, {"iter_time", {0.5}}});
  EXPECT_EQ(field_of(r), "iter_energy");
  r = call(*s, "GET", "/schedule/" + id);
  EXPECT_EQ(r.status, 422);
  EXPECT_EQ(field_of(r), "rank");
  r = call(*s, "GET", "/schedule/" + id + "?rank=x");
  EXPECT_EQ(field_of(r), "rank");
  r = call(*s, "POST", "/straggler/" + id, {{"rank", 0}, {"slowdown", 0.5}});
  EXPECT_EQ(field_of(r), "slowdown");
  r = call(*s, "POST", "/profile/" + id,
           {{"csv", "stage,instruction\n0,forward\n"}, {"microbatches", 8}, {"p_blocking_w", 100}});
  EXPECT_EQ(r.status, 422);
  EXPECT_EQ(field_of(r), "profile");
  r = call(*s, "POST", "/profile/" + id,
           {{"csv", profile::example_profile_csv()}, {"microbatches", 8}});
  EXPECT_EQ(field_of(r), "p_blocking_w");
}

TEST(ServeService, UnknownJobsRoutesAndMethods) {
  auto s = make_service();
  for (const auto& [method, target] :
       std::vector<std::pair<std::string, std::string>>{{"GET", "/schedule/nope?rank=0"},
                                                        {"POST", "/register_rank/nope"},
                                                        {"POST", "/result/nope"},
                                                        {"GET", "/frontier/nope"},
                                                        {"POST", "/straggler/nope"},
                                                        {"DELETE", "/straggler/nope"},
                                                        {"POST", "/profile/nope"}}) {
    EXPECT_EQ(s->handle({method, target, "{}", "application/json"}).status, 404) << target;
  }
  EXPECT_EQ(call(*s, "GET", "/nothing").status, 404);
  EXPECT_EQ(call(*s, "GET", "/register_job").status, 405);
}

TEST(ServeService, ScheduleBeforeAnyProfile) {
  auto s = make_service();
  const std::string id = register_job(*s, 1, 4, 1);
  register_ranks(*s, id, 1, 4, 1);
  Response r = call(*s, "GET", "/schedule/" + id + "?rank=0");
  EXPECT_EQ(r.status, 503);  // nothing to schedule yet: the server would make the client wait
  EXPECT_TRUE(r.schedule_pending);
  EXPECT_EQ(r.retry_after_s, 1);

  const std::string known = register_job(*s, 1, 4, 1, {{"num_microbatches", 8}});
  register_ranks(*s, known, 1, 4, 1);
  r = call(*s, "GET", "/schedule/" + known + "?rank=3");
  ASSERT_EQ(r.status, 200) << r.body;
  const json body = json::parse(r.body);
  EXPECT_EQ(body["rank"], 3);
  // Last stage of 1F1B with 8 microbatches: F B alternating, 16 instructions, all at 1410 MHz.
  ASSERT_EQ(body["frequencies"].size(), 16u);
  for (std::size_t i = 0; i < 16; ++i) {
    EXPECT_EQ(body["frequencies"][i][0], i % 2 == 0 ? "forward" : "backward");
    EXPECT_EQ(body["frequencies"][i][1], 1410);
  }
  EXPECT_EQ(call(*s, "GET", "/schedule/" + known + "?rank=4").status, 422);  // outside the job
}

TEST(ServeService, ProfileFrontierAndStragglerFollowTopt) {
  auto s = make_service();
  const std::string id = register_job(*s, 2, 4, 2);
  register_ranks(*s, id, 2, 4, 2);
  Response r =
      call(*s, "POST", "/profile/" + id,
           {{"csv", profile::example_profile_csv()}, {"microbatches", 8}, {"p_blocking_w", 120.0}});
  ASSERT_EQ(r.status, 202) << r.body;
  const Reference ref = reference(8);
  const double tau = 1e-3;
  const std::size_t last = ref.solved.points.size() - 1;
  json f = json::parse(call(*s, "GET", "/frontier/" + id).body);
  ASSERT_EQ(f["status"], "ready") << f.dump();
  ASSERT_EQ(f["points"].size(), ref.solved.points.size());
  for (std::size_t p = 0; p <= last; ++p) {
    EXPECT_NEAR(f["points"][p]["planned_time_s"].get<double>(),
                ref.solved.points[p].time_units * tau, 1e-12);
    EXPECT_NEAR(f["points"][p]["planned_energy_j"].get<double>(), ref.solved.points[p].energy_j,
                1e-9);
  }
  auto expect_schedules_at = [&](std::size_t point) {
    const auto plans = report::gpu_plans_at(ref.problem, ref.solved.durations_at(point));
    for (int rank = 0; rank < 16; ++rank) {
      const int stage = (rank / 2) % 4;
      Response sr = call(*s, "GET", fmt::format("/schedule/{}?rank={}", id, rank));
      ASSERT_EQ(sr.status, 200);
      EXPECT_EQ(json::parse(sr.body)["frequencies"], plan_rows(plans[stage]))
          << "rank " << rank << " point " << point;
    }
  };
  expect_schedules_at(last);  // no straggler: T_min's plan

  // A 1.2× straggler: T′ = 1.2 T_min; brute force the slowest point not slower than min(T*, T′).
  r = call(*s, "POST", "/straggler/" + id, {{"pipeline", 1}, {"slowdown", 1.2}});
  ASSERT_EQ(r.status, 200) << r.body;
  const double t_min = ref.solved.points[last].time_units * tau;
  const double t_star = ref.solved.points[0].time_units * tau;
  const double target = std::min(t_star, 1.2 * t_min);
  std::size_t expected = last;
  for (std::size_t p = 0; p <= last; ++p) {
    if (ref.solved.points[p].time_units * tau <= target + 1e-12) {
      expected = p;
      break;
    }
  }
  EXPECT_LT(expected, last);  // the example frontier spans more than 20 %: the plan moves
  const json prediction = json::parse(r.body)["prediction"];
  EXPECT_EQ(prediction["point"], expected);
  EXPECT_NEAR(prediction["straggler_time_s"].get<double>(), 1.2 * t_min, 1e-12);
  // Hand check of the predicted saving against the T_min plan blocking until T′.
  const double blocking_w = 120.0 * 4;
  const double chosen = ref.solved.points[expected].energy_j +
                        blocking_w * (1.2 * t_min - ref.solved.points[expected].time_units * tau);
  const double stay = ref.solved.points[last].energy_j + blocking_w * (0.2 * t_min);
  EXPECT_NEAR(prediction["saving_vs_t_min_plan_j"].get<double>(), stay - chosen, 1e-6);
  EXPECT_GT(prediction["saving_vs_t_min_plan_j"].get<double>(), 0.0);
  expect_schedules_at(expected);
  EXPECT_EQ(json::parse(call(*s, "GET", "/frontier/" + id).body)["serving"]["point"], expected);

  EXPECT_EQ(call(*s, "DELETE", "/straggler/" + id).status, 200);
  expect_schedules_at(last);
}

// delay_s stragglers: T′ = T_min + delay; with several stragglers the slowest sets T′; a delay past
// T* − T_min serves T* (T_opt = min(T*, T′)); clearing returns to T_min's plan.
TEST(ServeService, DelayStragglersFollowTopt) {
  auto s = make_service();
  const std::string id = register_job(*s, 2, 4, 1);
  register_ranks(*s, id, 2, 4, 1);
  ASSERT_EQ(
      call(*s, "POST", "/profile/" + id,
           {{"csv", profile::example_profile_csv()}, {"microbatches", 8}, {"p_blocking_w", 120.0}})
          .status,
      202);
  const Reference ref = reference(8);
  const double tau = 1e-3;
  const std::size_t last = ref.solved.points.size() - 1;
  const double t_min = ref.solved.points[last].time_units * tau;
  const double t_star = ref.solved.points[0].time_units * tau;
  auto brute_force = [&](double t_prime) {  // slowest point not slower than min(T*, T′)
    const double target = std::min(t_star, t_prime);
    for (std::size_t p = 0; p <= last; ++p) {
      if (ref.solved.points[p].time_units * tau <= target + 1e-12) return p;
    }
    return last;
  };
  auto serving = [&] {
    return json::parse(call(*s, "GET", "/frontier/" + id).body)["serving"]["point"];
  };
  auto schedule_of = [&](int rank) {
    return json::parse(call(*s, "GET", fmt::format("/schedule/{}?rank={}", id, rank)).body);
  };
  const double delay = 0.1 * t_min;
  Response r = call(*s, "POST", "/straggler/" + id, {{"rank", 5}, {"delay_s", delay}});
  ASSERT_EQ(r.status, 200) << r.body;
  json body = json::parse(r.body);
  EXPECT_NEAR(body["prediction"]["straggler_time_s"].get<double>(), t_min + delay, 1e-12);
  const std::size_t at_delay = brute_force(t_min + delay);
  EXPECT_LT(at_delay, last);
  EXPECT_EQ(body["serving_point"], at_delay);
  EXPECT_EQ(serving(), at_delay);
  const auto plans = report::gpu_plans_at(ref.problem, ref.solved.durations_at(at_delay));
  for (int rank = 0; rank < 8; ++rank) {
    EXPECT_EQ(schedule_of(rank)["frequencies"],
              plan_rows(plans[static_cast<std::size_t>(rank % 4)]))
        << "rank " << rank;
  }
  // A second, milder straggler (slowdown 1.05 < 1.1): T′ stays T_min + delay.
  ASSERT_EQ(call(*s, "POST", "/straggler/" + id, {{"pipeline", 0}, {"slowdown", 1.05}}).status,
            200);
  EXPECT_EQ(serving(), at_delay);
  // Replacing rank 5's delay with one far past T*: T_opt = T*, the slowest point.
  r = call(*s, "POST", "/straggler/" + id, {{"rank", 5}, {"delay_s", 10.0 * t_star}});
  body = json::parse(r.body);
  EXPECT_EQ(body["serving_point"], 0);
  EXPECT_NEAR(body["prediction"]["target_time_s"].get<double>(), t_star, 1e-12);
  EXPECT_EQ(json::parse(call(*s, "GET", "/job/" + id).body)["stragglers"].size(), 2u);
  EXPECT_EQ(call(*s, "DELETE", "/straggler/" + id).status, 200);
  EXPECT_EQ(serving(), last);
  const auto fastest = report::gpu_plans_at(ref.problem, ref.solved.durations_at(last));
  EXPECT_EQ(schedule_of(3)["frequencies"], plan_rows(fastest[3]));
  // Validation: negative delay names the field; both forms at once is refused.
  EXPECT_EQ(field_of(call(*s, "POST", "/straggler/" + id, {{"rank", 1}, {"delay_s", -1.0}})),
            "delay_s");
  EXPECT_EQ(call(*s, "POST", "/straggler/" + id, {{"rank", 1}, {"delay_s", 1.0}, {"slowdown", 1.1}})
                .status,
            422);
}

TEST(ServeService, EverythingSurvivesARestart) {
  const std::string db =
      (std::filesystem::path(::testing::TempDir()) / fmt::format("serve-{}.db", ::getpid()))
          .string();
  std::filesystem::remove(db);
  std::string id;
  std::string frontier_before, schedule_before;
  {
    auto s = make_service(db);
    id = register_job(*s, 1, 4, 1);
    register_ranks(*s, id, 1, 4, 1);
    ASSERT_EQ(call(*s, "POST", "/profile/" + id,
                   {{"rows", json::array()}, {"microbatches", 8}, {"p_blocking_w", 120.0}})
                  .status,
              422);
    // JSON rows instead of CSV text.
    auto table = core::parse_csv(profile::example_profile_csv(), "example");
    json rows = json::array();
    for (std::size_t i = 0; i < table->rows.size(); ++i) {
      rows.push_back({{"stage", std::stoi(table->rows[i].fields[0])},
                      {"instruction", table->rows[i].fields[1]},
                      {"frequency", std::stoi(table->rows[i].fields[2])},
                      {"time", std::stod(table->rows[i].fields[3])},
                      {"energy", std::stod(table->rows[i].fields[4])}});
    }
    Response r = call(*s, "POST", "/profile/" + id,
                      {{"rows", rows}, {"microbatches", 8}, {"p_blocking_w", 120.0}});
    ASSERT_EQ(r.status, 202) << r.body;
    ASSERT_EQ(call(*s, "POST", "/straggler/" + id, {{"rank", 2}, {"delay_s", 0.05}}).status, 200);
    ASSERT_EQ(call(*s, "POST", "/result/" + id,
                   {{"rank", 1}, {"iter_time", {0.5, 0.4}}, {"iter_energy", {100.0, 90.0}}})
                  .status,
              200);
    frontier_before = call(*s, "GET", "/frontier/" + id).body;
    schedule_before = call(*s, "GET", "/schedule/" + id + "?rank=2").body;
  }
  auto s = make_service(db);
  EXPECT_EQ(call(*s, "GET", "/frontier/" + id).body, frontier_before);
  EXPECT_EQ(call(*s, "GET", "/schedule/" + id + "?rank=2").body, schedule_before);
  const json job = json::parse(call(*s, "GET", "/job/" + id).body);
  EXPECT_EQ(job["ranks"].size(), 4u);
  EXPECT_EQ(job["results"], 1);
  EXPECT_EQ(job["stragglers"].size(), 1u);
  std::filesystem::remove(db);
}

}  // namespace
}  // namespace powertrain::serve
