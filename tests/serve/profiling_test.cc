// In-vivo profiling end to end: the server measures P_blocking, hands out clock sweeps (highest
// clock down, a few iterations each, an instruction stops after its energy rose 5 times in a row
// in the lower half of the clocks), and builds the profile and frontier itself. The simulated
// client's time and energy per clock come from the calibrated A100 SXM device model; the test
// applies the stop rule itself (brute force) and runs `powertrain frontier` on the server's
// profile to check the served frontier.
#include "serve/profiling.h"

#include <fmt/core.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../cli/cli_runner.h"
#include "core/csv.h"
#include "device/gpu.h"
#include "serve/service.h"
#include "service_test_util.h"

namespace powertrain::serve {
namespace {

using nlohmann::json;

using test::call;
using test::make_service;

// Measured (modelled) time and energy of one run of an instruction of a stage at a clock.
struct Simulated {
  device::GpuSpec gpu;
  std::pair<double, double> run(int stage, const std::string& instruction, int mhz) const {
    device::Work work;
    work.kind = device::WorkKind::kMatmul;
    work.precision = device::Precision::kBf16;
    const double scale = (1.0 + 0.2 * stage) * (instruction == "backward" ? 2.0 : 1.0);
    work.flops = 4e12 * scale;
    work.memory_bytes = 6e9 * scale;
    const device::Work works[] = {work};
    const auto e = device::estimate_work(gpu, works, mhz);
    return {e.time_s, e.energy_j};
  }
};

// The stop rule by brute force: per (stage, instruction), clocks from the highest down.
std::vector<std::pair<int, std::pair<double, double>>> expected_sweep(
    const Simulated& sim, const std::vector<int>& clocks_desc, int stage,
    const std::string& instruction, int stop_after_rises) {
  std::vector<std::pair<int, std::pair<double, double>>> points;
  const double middle = 0.5 * (clocks_desc.front() + clocks_desc.back());
  int rises = 0;
  for (int mhz : clocks_desc) {
    const auto m = sim.run(stage, instruction, mhz);
    if (!points.empty()) rises = m.second > points.back().second.second ? rises + 1 : 0;
    points.emplace_back(mhz, m);
    if (mhz < middle && rises >= stop_after_rises) break;
  }
  return points;
}

class ServeProfiling : public testing_cli::CliTest {};

// One stage-0 instruction time at a clock of the fake sweep: 10 ms at 1410 MHz, scaling as 1/f.
double sweep_time_s(int mhz) { return 0.01 * 1410.0 / mhz; }

// Rank 0's POST /result at a clock: forward t, backward 2t (two microbatches each), the given
// energy per forward.
Response post_sweep_result(Service& s, const std::string& id, int mhz, double energy) {
  const double t1 = sweep_time_s(mhz);
  json t = {{"forward", {{t1, t1}}}, {"backward", {{2 * t1, 2 * t1}}}};
  json e = {{"forward", {{energy, energy}}}, {"backward", {{2 * energy, 2 * energy}}}};
  return call(s, "POST", "/result/" + id,
              {{"rank", 0},
               {"frequency_mhz", mhz},
               {"iter_time", {6 * t1}},
               {"iter_energy", {6 * energy}},
               {"time_breakdown", t},
               {"energy_breakdown", e}});
}

TEST_F(ServeProfiling, SweepBuildsTheProfileAndFrontierPowertrainFrontierGives) {
  auto gpu = device::find_gpu("a100-sxm");
  ASSERT_TRUE(gpu) << gpu.error().message;
  const Simulated sim{*gpu};
  std::vector<int> clocks = gpu->clocks_mhz;  // ascending; the Zeus client sends them descending
  std::vector<int> clocks_desc(clocks.rbegin(), clocks.rend());
  const int pp = 4, dp = 2, microbatches = 4, iterations_per_clock = 3;
  const std::string db = (dir_ / "plans.db").string();
  auto s = make_service(db);
  Response r = call(*s, "POST", "/register_job",
                    {{"job_id", ""},
                     {"pp_degree", pp},
                     {"dp_degree", dp},
                     {"tp_degree", 1},
                     {"world_size", pp * dp},
                     {"num_microbatches", microbatches}});
  ASSERT_EQ(r.status, 200) << r.body;
  const std::string id = json::parse(r.body);
  // Profiling needs every stage's ranks: refused with the field named before they register.
  r = call(*s, "POST", "/profiling/" + id, {{"iterations_per_clock", iterations_per_clock}});
  EXPECT_EQ(r.status, 422);
  EXPECT_EQ(json::parse(r.body)["field"], "ranks");
  for (int rank = 0; rank < pp * dp; ++rank) {
    ASSERT_EQ(call(*s, "POST", "/register_rank/" + id,
                   {{"rank", rank},
                    {"dp_rank", rank / pp},
                    {"pp_rank", rank % pp},
                    {"tp_rank", 0},
                    {"available_frequencies", clocks_desc}})
                  .status,
              200);
  }
  r = call(*s, "POST", "/profiling/" + id, {{"iterations_per_clock", iterations_per_clock}});
  ASSERT_EQ(r.status, 202) << r.body;
  EXPECT_EQ(json::parse(r.body)["phase"], "p_blocking");  // no p_blocking_w given: measure it
  EXPECT_EQ(json::parse(call(*s, "GET", "/job/" + id).body)["status"], "profiling");

  auto schedule = [&](int rank) {
    Response sr = call(*s, "GET", fmt::format("/schedule/{}?rank={}", id, rank));
    EXPECT_EQ(sr.status, 200) << sr.body;
    return json::parse(sr.body);
  };
  // P_blocking phase: everyone at the highest clock; stage 0's reporting rank (0) measures.
  json first = schedule(5);
  EXPECT_EQ(first["profiling"]["phase"], "p_blocking");
  EXPECT_EQ(first["profiling"]["measure_p_blocking_rank"], 0);
  EXPECT_EQ(first["frequencies"][0][1], clocks_desc.front());
  const double p_blocking_w = 83.64;
  ASSERT_EQ(call(*s, "POST", "/result/" + id,
                 {{"rank", 0},
                  {"measurement", "p_blocking"},
                  {"iter_time", {2.0, 3.0}},
                  {"iter_energy", {2.0 * p_blocking_w, 3.0 * p_blocking_w}}})
                .status,
            200);
  EXPECT_EQ(schedule(0)["profiling"]["phase"], "sweep");

  // The simulated training loop: every iteration, each stage's reporting rank fetches its
  // schedule, runs it (the device model) and posts the iteration with its breakdowns; a replica
  // posts too (stored, not used). One result per iteration, so the server accumulates them.
  int iterations = 0;
  for (; iterations < 2000; ++iterations) {
    const json state = json::parse(call(*s, "GET", "/profiling/" + id).body);
    if (state["phase"] == "done") break;
    for (int stage = 0; stage < pp; ++stage) {
      const json sched = schedule(stage);
      const json& prof = sched["profiling"];
      ASSERT_EQ(prof["reporting_rank"], stage);
      if (prof["stage_done"].get<bool>()) continue;
      const int mhz = prof["clock_mhz"];
      json times = json::object(), energies = json::object();
      double iter_time = 0.0, iter_energy = 0.0;
      for (const auto& pair : sched["frequencies"]) {
        ASSERT_EQ(pair[1], mhz);  // the whole stage runs the swept clock
        const std::string name = pair[0];
        const auto [t, e] = sim.run(stage, name, mhz);
        if (!times.contains(name)) {
          times[name] = json::array({json::array()});
          energies[name] = json::array({json::array()});
        }
        times[name][0].push_back(t);
        energies[name][0].push_back(e);
        iter_time += t;
        iter_energy += e;
      }
      r = call(*s, "POST", "/result/" + id,
               {{"rank", stage},
                {"frequency_mhz", mhz},
                {"iter_time", {iter_time}},
                {"iter_energy", {iter_energy}},
                {"time_breakdown", times},
                {"energy_breakdown", energies}});
      ASSERT_EQ(r.status, 200) << r.body;
      ASSERT_EQ(call(*s, "POST", "/result/" + id,
                     {{"rank", pp + stage}, {"iter_time", {iter_time}}, {"iter_energy", {1.0}}})
                    .status,
                200);
    }
  }
  const json state = json::parse(call(*s, "GET", "/profiling/" + id).body);
  ASSERT_EQ(state["phase"], "done") << "sweep did not finish in " << iterations << " iterations";
  EXPECT_NEAR(state["p_blocking_w"].get<double>(), p_blocking_w, 1e-12);
  // A stale result (a clock the stage no longer runs) after the sweep is just stored.

  // The server's profile equals the brute-force sweep of the same device model.
  bool some_stopped_early = false;
  std::size_t measured_rows = 0;
  for (int stage = 0; stage < pp; ++stage) {
    for (const std::string name : {"forward", "backward"}) {
      const auto expected = expected_sweep(sim, clocks_desc, stage, name, 5);
      const json& got = state["stages"][stage]["instructions"][name]["points"];
      ASSERT_EQ(got.size(), expected.size()) << "stage " << stage << " " << name;
      for (std::size_t i = 0; i < expected.size(); ++i) {
        EXPECT_EQ(got[i]["frequency_mhz"], expected[i].first);
        EXPECT_NEAR(got[i]["time_s"].get<double>(), expected[i].second.first,
                    1e-12 * expected[i].second.first);
        EXPECT_NEAR(got[i]["energy_j"].get<double>(), expected[i].second.second,
                    1e-12 * expected[i].second.second);
      }
      some_stopped_early = some_stopped_early || expected.size() < clocks_desc.size();
      EXPECT_EQ(state["stages"][stage]["instructions"][name]["stopped_early"].get<bool>(),
                expected.size() < clocks_desc.size());
      measured_rows += expected.size();
    }
  }
  EXPECT_TRUE(some_stopped_early) << "the device model never triggered the stop rule";
  fmt::print(
      "in-vivo sweep: {} iterations of {} clocks, {} measured points kept of {} (modelled "
      "A100 SXM)\n",
      iterations, clocks_desc.size(), measured_rows, 2 * pp * clocks_desc.size());
  const std::string csv = state["profile_csv"];
  EXPECT_EQ(static_cast<std::size_t>(std::count(csv.begin(), csv.end(), '\n')), measured_rows + 1);

  // The frontier the server solved equals `powertrain frontier` on the server's profile.
  const json f = json::parse(call(*s, "GET", "/frontier/" + id).body);
  ASSERT_EQ(f["status"], "ready") << f.dump().substr(0, 500);
  EXPECT_EQ(json::parse(call(*s, "GET", "/job/" + id).body)["profile_generation"], 1);
  {
    std::ofstream out(dir_ / "measured.csv");
    out << csv;
  }
  const auto run = this->run({"frontier", "--profile", (dir_ / "measured.csv").string(), "--pp",
                              std::to_string(pp), "--microbatches", std::to_string(microbatches),
                              "--p-blocking-w", fmt::format("{:.17g}", p_blocking_w),
                              "--unit-time-s", "0.001", "--out", (dir_ / "cli").string()});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto table = core::parse_csv(testing_cli::slurp(dir_ / "cli" / "frontier.csv"), "frontier.csv");
  ASSERT_TRUE(table) << table.error().message;
  ASSERT_EQ(table->rows.size(), f["points"].size());
  for (std::size_t p = 0; p < table->rows.size(); ++p) {
    const auto& row = table->rows[p].fields;
    const json& point = f["points"][p];
    EXPECT_NEAR(point["planned_time_s"].get<double>(), std::stod(row[0]), 1e-9) << p;
    EXPECT_NEAR(point["planned_energy_j"].get<double>(), std::stod(row[1]),
                1e-6 * std::stod(row[1]))
        << p;
    EXPECT_NEAR(point["realized_time_s"].get<double>(), std::stod(row[2]), 1e-6) << p;
    EXPECT_NEAR(point["realized_energy_j"].get<double>(), std::stod(row[3]),
                1e-6 * std::stod(row[3]))
        << p;
  }
  // After profiling, /schedule serves T_min's plan again (no profiling block).
  EXPECT_FALSE(schedule(1).contains("profiling"));

  // Everything survives a restart: the sweep state, the profile and the frontier.
  const std::string frontier_before = call(*s, "GET", "/frontier/" + id).body;
  const std::string profiling_before = call(*s, "GET", "/profiling/" + id).body;
  s.reset();
  s = make_service(db);
  EXPECT_EQ(call(*s, "GET", "/frontier/" + id).body, frontier_before);
  EXPECT_EQ(call(*s, "GET", "/profiling/" + id).body, profiling_before);
}

TEST(ServeProfilingState, ResultsMidSweepSurviveARestartAndStaleClocksAreRefused) {
  const std::string db =
      (std::filesystem::path(::testing::TempDir()) / fmt::format("profiling-{}.db", ::getpid()))
          .string();
  std::filesystem::remove(db);
  std::string id;
  const std::vector<int> clocks = {1410, 1200, 1000, 800, 600};
  auto post = [&](Service& s, int mhz, double energy) {
    return post_sweep_result(s, id, mhz, energy);
  };
  {
    auto s = make_service(db);
    Response r = call(*s, "POST", "/register_job",
                      {{"job_id", ""},
                       {"pp_degree", 1},
                       {"dp_degree", 1},
                       {"tp_degree", 1},
                       {"world_size", 1},
                       {"num_microbatches", 2}});
    id = json::parse(r.body);
    ASSERT_EQ(call(*s, "POST", "/register_rank/" + id,
                   {{"rank", 0},
                    {"dp_rank", 0},
                    {"pp_rank", 0},
                    {"tp_rank", 0},
                    {"available_frequencies", clocks}})
                  .status,
              200);
    r = call(*s, "POST", "/profiling/" + id,
             {{"iterations_per_clock", 2}, {"stop_after_rises", 1}, {"p_blocking_w", 60.0}});
    ASSERT_EQ(r.status, 202) << r.body;
    EXPECT_EQ(json::parse(r.body)["phase"], "sweep");
    ASSERT_EQ(post(*s, 1410, 1.0).status, 200);  // 1 of 2 iterations at 1410
    // Missing breakdowns from the reporting rank are refused with the field.
    r = call(*s, "POST", "/result/" + id,
             {{"rank", 0}, {"iter_time", {1.0}}, {"iter_energy", {1.0}}});
    EXPECT_EQ(r.status, 422);
    EXPECT_EQ(json::parse(r.body)["field"], "time_breakdown");
  }
  auto s = make_service(db);                   // restart mid-clock
  EXPECT_EQ(post(*s, 1200, 1.0).status, 409);  // still at 1410: a stale clock is refused
  ASSERT_EQ(post(*s, 1410, 1.0).status, 200);  // 2 of 2: moves to 1200
  json sched = json::parse(call(*s, "GET", "/schedule/" + id + "?rank=0").body);
  EXPECT_EQ(sched["profiling"]["clock_mhz"], 1200);
  EXPECT_EQ(sched["frequencies"].size(), 4u);  // 1F1B, 1 stage, 2 microbatches: F F B B
  for (double energy : {0.8, 0.8}) ASSERT_EQ(post(*s, 1200, energy).status, 200);
  for (double energy : {0.7, 0.7}) ASSERT_EQ(post(*s, 1000, energy).status, 200);
  // 800 MHz is below the middle (1005 MHz); energy rises once → with stop_after_rises 1, done.
  for (double energy : {0.9, 0.9}) ASSERT_EQ(post(*s, 800, energy).status, 200);
  const json state = json::parse(call(*s, "GET", "/profiling/" + id).body);
  EXPECT_EQ(state["phase"], "done");
  // Both instructions stopped at 800 MHz (600 never profiled); means of the posted runs.
  auto table = core::parse_csv(state["profile_csv"].get<std::string>(), "profile");
  ASSERT_TRUE(table);
  const std::vector<std::tuple<std::string, int, double>> expected = {
      {"forward", 1410, 1.0},  {"forward", 1200, 0.8},  {"forward", 1000, 0.7},
      {"forward", 800, 0.9},   {"backward", 1410, 2.0}, {"backward", 1200, 1.6},
      {"backward", 1000, 1.4}, {"backward", 800, 1.8}};
  ASSERT_EQ(table->rows.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    const auto& [name, mhz, energy] = expected[i];
    const auto& row = table->rows[i].fields;
    EXPECT_EQ(row[0], "0");
    EXPECT_EQ(row[1], name);
    EXPECT_EQ(std::stoi(row[2]), mhz);
    EXPECT_NEAR(std::stod(row[3]), sweep_time_s(mhz) * (name == "forward" ? 1 : 2), 1e-15);
    EXPECT_NEAR(std::stod(row[4]), energy, 1e-15);
  }
  EXPECT_EQ(json::parse(call(*s, "GET", "/frontier/" + id).body)["status"], "ready");
  std::filesystem::remove(db);
}

// Issue 16: the profiling rank's process dies mid-sweep and its relaunch posts the same
// POST /profiling again (it cannot know the sweep already started). The sweep must go on where
// the acknowledged results left it — also across a server restart — not start over; other
// settings are a 409 conflict unless "restart": true; results for a clock the stage already left
// are 409 and change nothing.
TEST(ServeProfilingState, RelaunchedProfilingRankResumesTheSweepInsteadOfRestartingIt) {
  const std::string db = (std::filesystem::path(::testing::TempDir()) /
                          fmt::format("profiling-resume-{}.db", ::getpid()))
                             .string();
  std::filesystem::remove(db);
  std::string id;
  const std::vector<int> clocks = {1410, 1200, 1000, 800, 600};
  const json settings = {
      {"iterations_per_clock", 2}, {"stop_after_rises", 1}, {"p_blocking_w", 60.0}};
  auto post = [&](Service& s, int mhz, double energy) {
    return post_sweep_result(s, id, mhz, energy);
  };
  auto sweep_state = [&](Service& s) {
    const json state = json::parse(call(s, "GET", "/profiling/" + id).body);
    return std::make_tuple(state["phase"].get<std::string>(),
                           state["stages"][0]["clock_mhz"].get<int>(),
                           state["stages"][0]["iterations_at_clock"].get<int>(),
                           state["stages"][0]["instructions"]["forward"]["points"].size());
  };
  {
    auto s = make_service(db);
    Response r = call(*s, "POST", "/register_job",
                      {{"job_id", ""},
                       {"pp_degree", 1},
                       {"dp_degree", 1},
                       {"tp_degree", 1},
                       {"world_size", 1},
                       {"num_microbatches", 2}});
    id = json::parse(r.body);
    const json rank = {{"rank", 0},
                       {"dp_rank", 0},
                       {"pp_rank", 0},
                       {"tp_rank", 0},
                       {"available_frequencies", clocks}};
    ASSERT_EQ(call(*s, "POST", "/register_rank/" + id, rank).status, 200);
    r = call(*s, "POST", "/profiling/" + id, settings);
    ASSERT_EQ(r.status, 202) << r.body;
    for (int i = 0; i < 2; ++i) ASSERT_EQ(post(*s, 1410, 1.0).status, 200);  // 1410 measured
    ASSERT_EQ(post(*s, 1200, 0.8).status, 200);                              // 1 of 2 at 1200
    EXPECT_EQ(sweep_state(*s), std::make_tuple(std::string("sweep"), 1200, 1, std::size_t{1}));

    // The relaunched process registers its rank and posts the same settings again.
    ASSERT_EQ(call(*s, "POST", "/register_rank/" + id, rank).status, 200);
    r = call(*s, "POST", "/profiling/" + id, settings);
    ASSERT_EQ(r.status, 200) << r.body;
    EXPECT_EQ(json::parse(r.body)["resumed"], true);
    EXPECT_EQ(json::parse(r.body)["phase"], "sweep");
    EXPECT_EQ(sweep_state(*s), std::make_tuple(std::string("sweep"), 1200, 1, std::size_t{1}));
    // Its schedule is the clock the sweep is at, with the iterations already counted.
    const json sched = json::parse(call(*s, "GET", "/schedule/" + id + "?rank=0").body);
    EXPECT_EQ(sched["profiling"]["clock_mhz"], 1200);
    EXPECT_EQ(sched["profiling"]["iterations_at_clock"], 1);

    // Other settings: 409, nothing changed; a malformed restart flag: 422 naming it.
    json other = settings;
    other["iterations_per_clock"] = 3;
    r = call(*s, "POST", "/profiling/" + id, other);
    EXPECT_EQ(r.status, 409) << r.body;
    r = call(*s, "POST", "/profiling/" + id, {{"iterations_per_clock", 2}, {"restart", "yes"}});
    EXPECT_EQ(r.status, 422);
    EXPECT_EQ(json::parse(r.body)["field"], "restart");
    // A late result of the dead process for the clock the stage left: 409, not counted.
    EXPECT_EQ(post(*s, 1410, 5.0).status, 409);
    EXPECT_EQ(sweep_state(*s), std::make_tuple(std::string("sweep"), 1200, 1, std::size_t{1}));
  }
  // The server restarts too (kill and relaunch): the same POST still resumes.
  auto s = make_service(db);
  Response r = call(*s, "POST", "/profiling/" + id, settings);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(sweep_state(*s), std::make_tuple(std::string("sweep"), 1200, 1, std::size_t{1}));
  ASSERT_EQ(post(*s, 1200, 0.8).status, 200);  // 2 of 2 at 1200
  for (double energy : {0.7, 0.7}) ASSERT_EQ(post(*s, 1000, energy).status, 200);
  for (double energy : {0.9, 0.9}) ASSERT_EQ(post(*s, 800, energy).status, 200);
  json state = json::parse(call(*s, "GET", "/profiling/" + id).body);
  ASSERT_EQ(state["phase"], "done");
  // Each clock measured once, with the means of the accepted results only (1410: 1.0, not 5.0).
  const json& points = state["stages"][0]["instructions"]["forward"]["points"];
  ASSERT_EQ(points.size(), 4u);
  const double expected_energy[] = {1.0, 0.8, 0.7, 0.9};
  for (std::size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(points[i]["frequency_mhz"], clocks[i]);
    EXPECT_NEAR(points[i]["energy_j"].get<double>(), expected_energy[i], 1e-12);
  }
  const std::string profile_csv = state["profile_csv"];

  // After the sweep: the same POST leaves the profile alone; "restart": true starts over.
  r = call(*s, "POST", "/profiling/" + id, settings);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(json::parse(r.body)["phase"], "done");
  EXPECT_EQ(json::parse(call(*s, "GET", "/profiling/" + id).body)["profile_csv"], profile_csv);
  json restart = settings;
  restart["restart"] = true;
  r = call(*s, "POST", "/profiling/" + id, restart);
  ASSERT_EQ(r.status, 202) << r.body;
  EXPECT_EQ(sweep_state(*s), std::make_tuple(std::string("sweep"), 1410, 0, std::size_t{0}));
  s.reset();
  std::filesystem::remove(db);
}

}  // namespace
}  // namespace powertrain::serve
