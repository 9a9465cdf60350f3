// kill -9 at random points: every write the server acknowledged (HTTP 200/202) must be served
// again after a restart (every third cycle writes in-vivo profiling steps). ≥ 200 kills, each
// while a client is writing.
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <thread>

#include "profile/example_profile.h"
#include "serve/client.h"
#include "server_process.h"

namespace powertrain::serve {
namespace {

using nlohmann::json;

struct Acknowledged {
  std::map<std::string, std::set<int>> ranks;  // job → ranks
  std::map<std::string, int> results;          // job → results acknowledged
  std::map<std::string, std::set<std::string>> stragglers;
  std::map<std::string, long long> profiles;  // job → generation acknowledged
  std::map<std::string, int> sweep_steps;     // job → in-vivo sweep results acknowledged
};

// In-vivo profiling writes: a one-stage job sweeps 1410, 1200, 800 MHz, one iteration each; energy
// falls, then rises at 800 MHz (below the middle, 1105 MHz), which ends the sweep after three
// steps and turns it into profile generation 1.
constexpr int kSweepClocks[] = {1410, 1200, 800};
constexpr double kSweepEnergy[] = {1.5, 1.3, 1.4};

void profile_until_killed(HttpConnection& c, Acknowledged& ack, std::mutex& mutex, int cycle) {
  for (int step = 0; step < 1000; ++step) {
    json job = {{"job_id", ""},    {"pp_degree", 1},
                {"dp_degree", 1},  {"tp_degree", 1},
                {"world_size", 1}, {"job_metadata", fmt::format("p{}s{}", cycle, step)}};
    auto r = c.request("POST", "/register_job", job.dump());
    if (!r || r->status != 200) return;
    const std::string id = json::parse(r->body).get<std::string>();
    {
      std::lock_guard lock(mutex);
      ack.ranks[id];
    }
    json rank = {{"rank", 0},
                 {"dp_rank", 0},
                 {"pp_rank", 0},
                 {"tp_rank", 0},
                 {"available_frequencies", kSweepClocks}};
    r = c.request("POST", "/register_rank/" + id, rank.dump());
    if (!r || r->status != 200) return;
    {
      std::lock_guard lock(mutex);
      ack.ranks[id].insert(0);
    }
    json start = {{"microbatches", 2},
                  {"p_blocking_w", 80.0},
                  {"iterations_per_clock", 1},
                  {"stop_after_rises", 1}};
    r = c.request("POST", "/profiling/" + id, start.dump());
    if (!r || r->status != 202) return;
    {
      std::lock_guard lock(mutex);
      ack.sweep_steps[id] = 0;
    }
    for (int i = 0; i < 3; ++i) {
      const double t = 0.01 * 1410.0 / kSweepClocks[i], e = kSweepEnergy[i];
      json result = {{"rank", 0},
                     {"frequency_mhz", kSweepClocks[i]},
                     {"iter_time", {6 * t}},
                     {"iter_energy", {6 * e}},
                     {"time_breakdown", {{"forward", {{t, t}}}, {"backward", {{2 * t, 2 * t}}}}},
                     {"energy_breakdown", {{"forward", {{e, e}}}, {"backward", {{2 * e, 2 * e}}}}}};
      r = c.request("POST", "/result/" + id, result.dump());
      if (!r || r->status != 200) return;
      std::lock_guard lock(mutex);
      ++ack.sweep_steps[id];
      ++ack.results[id];
    }
  }
}

// Writes until the connection fails (the server was killed); records only acknowledged writes.
void write_until_killed(unsigned short port, std::mt19937& rng, Acknowledged& ack,
                        std::mutex& mutex, int cycle) {
  HttpConnection c("127.0.0.1", port);
  if (cycle % 3 == 2) return profile_until_killed(c, ack, mutex, cycle);
  for (int step = 0; step < 1000; ++step) {
    json job = {{"job_id", ""},    {"pp_degree", 4},
                {"dp_degree", 1},  {"tp_degree", 1},
                {"world_size", 4}, {"job_metadata", fmt::format("c{}s{}", cycle, step)}};
    auto r = c.request("POST", "/register_job", job.dump());
    if (!r || r->status != 200) return;
    const std::string id = json::parse(r->body).get<std::string>();
    {
      std::lock_guard lock(mutex);
      ack.ranks[id];
    }
    for (int rank = 0; rank < 4; ++rank) {
      json body = {{"rank", rank},
                   {"dp_rank", 0},
                   {"pp_rank", rank},
                   {"tp_rank", 0},
                   {"available_frequencies", {1410, 1200}}};
      r = c.request("POST", "/register_rank/" + id, body.dump());
      if (!r || r->status != 200) return;
      std::lock_guard lock(mutex);
      ack.ranks[id].insert(rank);
    }
    json result = {{"rank", 1}, {"iter_time", {0.5}}, {"iter_energy", {120.0}}};
    r = c.request("POST", "/result/" + id, result.dump());
    if (!r || r->status != 200) return;
    {
      std::lock_guard lock(mutex);
      ++ack.results[id];
    }
    r = c.request("POST", "/straggler/" + id, json({{"rank", 2}, {"slowdown", 1.1}}).dump());
    if (!r || r->status != 200) return;
    {
      std::lock_guard lock(mutex);
      ack.stragglers[id].insert("rank:2");
    }
    if (rng() % 8 == 0) {  // a profile now and then: its solve may be cut by the kill
      json profile = {
          {"csv", profile::example_profile_csv()}, {"microbatches", 4}, {"p_blocking_w", 120.0}};
      r = c.request("POST", "/profile/" + id, profile.dump());
      if (!r || r->status != 202) return;
      std::lock_guard lock(mutex);
      ack.profiles[id] = json::parse(r->body)["generation"].get<long long>();
    }
  }
}

::testing::AssertionResult verify(HttpConnection& c, const std::string& id,
                                  const Acknowledged& ack) {
  auto r = c.request("GET", "/job/" + id);
  if (!r) return ::testing::AssertionFailure() << id << ": " << r.error().message;
  if (r->status != 200) return ::testing::AssertionFailure() << id << ": status " << r->status;
  const json job = json::parse(r->body);
  std::set<int> ranks;
  for (const auto& rank : job["ranks"]) ranks.insert(rank["rank"].get<int>());
  for (int rank : ack.ranks.at(id)) {
    if (!ranks.count(rank)) return ::testing::AssertionFailure() << id << ": lost rank " << rank;
  }
  if (ack.results.count(id) && job["results"].get<int>() < ack.results.at(id)) {
    return ::testing::AssertionFailure() << id << ": lost a result";
  }
  if (ack.stragglers.count(id) && job["stragglers"].empty()) {
    return ::testing::AssertionFailure() << id << ": lost the straggler";
  }
  if (ack.profiles.count(id) && job["profile_generation"].get<long long>() < ack.profiles.at(id)) {
    return ::testing::AssertionFailure() << id << ": lost the profile";
  }
  if (ack.sweep_steps.count(id)) {
    auto p = c.request("GET", "/profiling/" + id);
    if (!p || p->status != 200) {
      return ::testing::AssertionFailure() << id << ": lost the in-vivo profiling";
    }
    const json state = json::parse(p->body);
    const int steps = ack.sweep_steps.at(id);
    const auto points = state["stages"][0]["instructions"]["forward"]["points"].size();
    if (points < static_cast<std::size_t>(steps)) {
      return ::testing::AssertionFailure() << id << ": lost a sweep step";
    }
    if (points < 3 && state["stages"][0]["clock_mhz"] != kSweepClocks[points]) {
      return ::testing::AssertionFailure() << id << ": sweep clock and results disagree";
    }
    if (points == 3 && (state["phase"] != "done" || job["profile_generation"] != 1)) {
      return ::testing::AssertionFailure() << id << ": finished sweep without its profile";
    }
  }
  if (!ack.ranks.at(id).empty() && ack.profiles.count(id)) {
    // A registered rank's schedule answers (its plan, or max clock while characterizing).
    auto s =
        c.request("GET", "/schedule/" + id + "?rank=" + std::to_string(*ack.ranks.at(id).begin()));
    if (!s || s->status != 200) {
      return ::testing::AssertionFailure() << id << ": no schedule after restart";
    }
  }
  return ::testing::AssertionSuccess();
}

TEST(ServeCrash, AcknowledgedWritesSurviveKillNine) {
  const auto dir =
      std::filesystem::path(::testing::TempDir()) / fmt::format("serve-crash-{}", ::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string db = (dir / "plans.db").string();
  std::mt19937 rng(20240611);
  Acknowledged ack;
  std::mutex mutex;
  constexpr int kKills = 200;
  const auto started = std::chrono::steady_clock::now();
  std::vector<std::string> last_cycle_jobs;
  for (int cycle = 0; cycle < kKills; ++cycle) {
    serve_test::ServerProcess server;
    const unsigned short port = server.start(db);
    ASSERT_NE(port, 0) << "server did not start (cycle " << cycle << ")";
    {
      // Everything acknowledged before the previous kill is served again.
      HttpConnection c("127.0.0.1", port);
      std::lock_guard lock(mutex);
      for (const auto& id : last_cycle_jobs) {
        ASSERT_TRUE(verify(c, id, ack)) << "after restart " << cycle;
      }
    }
    std::set<std::string> before;
    for (const auto& [id, ranks] : ack.ranks) before.insert(id);
    std::mt19937 writer_rng(rng());
    std::thread writer(
        [&, port, cycle] { write_until_killed(port, writer_rng, ack, mutex, cycle); });
    // Kill at a random point of the write stream: 0–25 ms after the writes began (0–70 ms for
    // the profiling cycles, so that some sweeps finish and become profiles before a kill).
    std::this_thread::sleep_for(
        std::chrono::microseconds(rng() % (cycle % 3 == 2 ? 70000 : 25000)));
    server.kill_now(SIGKILL);
    writer.join();
    // Jobs written in this cycle get checked right after the next restart.
    std::lock_guard lock(mutex);
    last_cycle_jobs.clear();
    for (const auto& [id, ranks] : ack.ranks) {
      if (!before.count(id)) last_cycle_jobs.push_back(id);
    }
  }
  // A final full pass over every acknowledged job.
  serve_test::ServerProcess server;
  const unsigned short port = server.start(db);
  ASSERT_NE(port, 0);
  HttpConnection c("127.0.0.1", port);
  std::size_t jobs = 0;
  for (const auto& [id, ranks] : ack.ranks) {
    ASSERT_TRUE(verify(c, id, ack));
    ++jobs;
  }
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  int sweep_steps = 0, sweeps_done = 0;
  for (const auto& [id, n] : ack.sweep_steps) {
    sweep_steps += n;
    sweeps_done += n == 3 ? 1 : 0;
  }
  std::printf(
      "%d kill -9 restarts, %zu acknowledged jobs all served again (%zu with in-vivo profiling: "
      "%d sweep steps, %d sweeps finished), %.1f s (measured)\n",
      kKills, jobs, ack.sweep_steps.size(), sweep_steps, sweeps_done, seconds);
  EXPECT_GT(jobs, 50u);  // the kills landed among real writes, not before the first one
  EXPECT_GT(sweep_steps, 20);
  server.kill_now(SIGTERM);
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace powertrain::serve
