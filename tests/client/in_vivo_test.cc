// The in-vivo profiling loop driven by the client (Perseus §5) against the real plan server
// in-process: a simulated 2-stage 1F1B job (two ranks, two fake-NVML devices, every instruction a
// compute-bound kernel whose time scales as 1/f at the clock locked while it runs) registers, rank
// 0 starts profiling, rank 0 measures P_blocking on a blocked GPU, both ranks follow the server's
// clock sweep and post per-instruction time and energy, the server builds the profile and the
// frontier, and both ranks then follow the planned schedule. Checked against the fake's power
// model (P(f) = 50 W + 350 W (f/1410)^2, blocked 75 W) by hand.
#include <dlfcn.h>
#include <fmt/core.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <regex>
#include <thread>

#include "../support/in_process_server.h"
#include "client/client.h"
#include "client/http.h"
#include "in_vivo_support.h"

namespace powertrain::client {
namespace {

using nlohmann::json;

constexpr double kForwardS = 0.003;   // kernel seconds at 1410 MHz
constexpr double kBackwardS = 0.006;  // kernel seconds at 1410 MHz
constexpr double kBlockedW = 75.0;    // the fake's default blocked power
const std::vector<int> kClocks = {1410, 1210, 1010, 810, 610, 410, 210};

double fake_power_w(int mhz) { return 50.0 + 350.0 * (mhz / 1410.0) * (mhz / 1410.0); }

// Two fake devices for this test only (other tests expect one).
struct DeviceCountGuard {
  DeviceCountGuard() { ::setenv("POWERTRAIN_FAKE_NVML_DEVICE_COUNT", "2", 1); }
  ~DeviceCountGuard() { ::unsetenv("POWERTRAIN_FAKE_NVML_DEVICE_COUNT"); }
};

struct RankRun {
  std::vector<int> applied_before_plan_steps;  // applied clocks before the two checked plan steps
  Schedule plan;                               // the schedule in effect after profiling
  std::vector<int> applied_during_plan_steps;
  int steps = 0;
  std::string failure;
};

// The simulated training loop of one rank: P_blocking when asked, then steps of its schedule,
// each instruction a fake-GPU kernel; after the client reports "planned", one step to switch to
// the plan and two checked steps on it.
void train(Client& c, unsigned device, const FakeNvml& fake, RankRun& run) {
  auto step = [&]() -> bool {
    if (c.p_blocking_requested()) {
      if (!c.on_p_blocking_begin()) return false;
      fake.set_blocked(device, 1);  // blocked on a P2P receive while the peer sleeps
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
      fake.set_blocked(device, 0);
      if (!c.on_p_blocking_end()) return false;
    }
    if (!c.on_step_begin()) return false;
    const Schedule schedule = c.schedule();
    for (const auto& [name, mhz] : schedule) {
      auto begun = c.on_instruction_begin(name);
      if (!begun) {
        run.failure = begun.error().message;
        return false;
      }
      fake.run_kernel(device, name == "forward" ? kForwardS : kBackwardS);
      (void)c.on_instruction_end(name);
    }
    auto ended = c.on_step_end();
    if (!ended) run.failure = ended.error().message;
    ++run.steps;
    return static_cast<bool>(ended);
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  while (c.status().profiling_phase != "planned") {
    if (std::chrono::steady_clock::now() > deadline || run.steps > 2000 || !step()) {
      if (run.failure.empty())
        run.failure = "profiling did not finish: " + c.status().profiling_phase;
      return;
    }
  }
  if (!step()) return;  // the planned schedule takes effect at this step's begin
  run.plan = c.schedule();
  if (!c.flush(30.0)) run.failure = "flush timed out";
  for (const auto& a : c.applied_clocks()) run.applied_before_plan_steps.push_back(a.mhz);
  for (int i = 0; i < 2; ++i)
    if (!step()) return;
  if (!c.flush(30.0)) run.failure = "flush timed out";
  const auto applied = c.applied_clocks();
  for (std::size_t i = run.applied_before_plan_steps.size(); i < applied.size(); ++i)
    run.applied_during_plan_steps.push_back(applied[i].mhz);
}

TEST(ClientInVivo, ClientDrivesTheSweepServerBuildsFrontierClientFollowsPlan) {
  FakeNvml fake;
  ASSERT_NE(fake.dl, nullptr) << ::dlerror();
  ASSERT_NE(fake.run_kernel, nullptr);
  DeviceCountGuard devices;

  testing_support::InProcessServer server;
  ASSERT_TRUE(server.started());
  const std::string url = server.url();

  fake.clear_log();
  // No p_blocking_w: the server has rank 0 measure it.
  const ClientOptions o = fake_nvml_options(url, 2, kClocks);
  auto rank0 = Client::create(o);
  ASSERT_TRUE(rank0) << rank0.error().message;
  const std::string job_id = (*rank0)->wait_for_job_id(30.0);
  ASSERT_FALSE(job_id.empty()) << (*rank0)->status().last_background_error;
  ClientOptions o1 = o;
  o1.start_profiling.reset();
  o1.profile_in_vivo = true;
  o1.job_id = job_id;
  o1.rank = o1.pp_rank = o1.device_id = 1;
  auto rank1 = Client::create(o1);
  ASSERT_TRUE(rank1) << rank1.error().message;
  Client* clients[2] = {rank0->get(), rank1->get()};
  fake.clear_log();  // create() read the energy counter once on this thread
  for (Client* c : clients)
    ASSERT_TRUE(c->wait_for_schedule(60.0)) << c->status().last_background_error;

  RankRun runs[2];
  std::thread t0([&] { train(*clients[0], 0, fake, runs[0]); });
  std::thread t1([&] { train(*clients[1], 1, fake, runs[1]); });
  t0.join();
  t1.join();
  for (int r = 0; r < 2; ++r) {
    const ClientStatus st = clients[r]->status();
    ASSERT_TRUE(runs[r].failure.empty())
        << "rank " << r << ": " << runs[r].failure << "; " << st.last_background_error;
    EXPECT_EQ(st.network_errors, 0) << st.last_background_error;
    EXPECT_EQ(st.clock_errors, 0) << st.last_background_error;
    EXPECT_EQ(st.energy_source, "energy counter");
  }

  HttpClient http(*parse_url(url));
  auto get = [&](const std::string& target) {
    auto r = http.request("GET", target, "", 30.0);
    EXPECT_TRUE(r && r->status == 200) << target << ": " << (r ? r->body : r.error().message);
    return r && r->status == 200 ? json::parse(r->body) : json();
  };
  // The server's sweep: P_blocking measured by rank 0's blocked window, every clock measured
  // from the highest down for both stages and both instructions.
  const json profiling = get("/profiling/" + job_id);
  ASSERT_EQ(profiling["phase"], "done") << profiling.dump().substr(0, 400);
  EXPECT_NEAR(profiling["p_blocking_w"].get<double>(), kBlockedW, 0.1 * kBlockedW);
  // Time of one run: the kernel's work at 1410 MHz scaled by 1410/f. The clock thread locks the
  // new clock shortly after the step's first kernel started, which then ran partly at the
  // previous (higher) swept clock, so the lower bound is that clock's. Sleeping only overshoots,
  // by up to several ms on a loaded machine (against 3 ms kernels): the upper bounds are on the
  // mean over all points and on the lowest clock being slower than the highest.
  // Energy / time: the fake's P(f); the energy window opens and closes when the clock thread
  // reaches the markers (about 0.1 ms late, more under load), against 3-40 ms instructions.
  double worst_power_error = 0.0, sum_power_error = 0.0, worst_time_ratio = 1.0;
  double sum_time_ratio = 0.0;
  int n_points = 0;
  for (int stage = 0; stage < 2; ++stage) {
    for (const std::string name : {"forward", "backward"}) {
      const json& points = profiling["stages"][stage]["instructions"][name]["points"];
      ASSERT_EQ(points.size(), kClocks.size()) << "stage " << stage << " " << name;
      const double work_s = name == "forward" ? kForwardS : kBackwardS;
      for (std::size_t i = 0; i < kClocks.size(); ++i) {
        const int mhz = points[i]["frequency_mhz"];
        EXPECT_EQ(mhz, kClocks[i]);
        const double time_s = points[i]["time_s"], energy_j = points[i]["energy_j"];
        const double expected_s = work_s * 1410.0 / mhz;
        const double previous_s = work_s * 1410.0 / kClocks[i == 0 ? 0 : i - 1];
        EXPECT_GE(time_s, 0.97 * previous_s) << stage << " " << name << " " << mhz;
        const double power_error = std::abs(energy_j / time_s / fake_power_w(mhz) - 1.0);
        EXPECT_LT(power_error, 0.5) << stage << " " << name << " " << mhz;
        worst_power_error = std::max(worst_power_error, power_error);
        sum_power_error += power_error;
        ++n_points;
        worst_time_ratio = std::max(worst_time_ratio, time_s / expected_s);
        sum_time_ratio += time_s / expected_s;
      }
      EXPECT_GT(points.back()["time_s"].get<double>(), points.front()["time_s"].get<double>())
          << stage << " " << name;
    }
  }
  EXPECT_LT(sum_power_error / n_points, 0.1);
  EXPECT_LT(sum_time_ratio / n_points, 2.0);
  // The frontier the server characterized from the measured profile.
  const json frontier = get("/frontier/" + job_id);
  ASSERT_EQ(frontier["status"], "ready") << frontier.dump().substr(0, 400);
  ASSERT_GE(frontier["points"].size(), 2u);
  const double t_min = frontier["t_min_s"], t_star = frontier["t_star_s"];
  EXPECT_LT(t_min, t_star);
  // T_min is at least one stage's own work at 1410 MHz (2 forward + 2 backward kernels).
  EXPECT_GE(t_min, 2 * (kForwardS + kBackwardS));

  // Each rank then followed its stage's planned schedule: what /schedule serves now.
  for (int r = 0; r < 2; ++r) {
    const json served = get("/schedule/" + job_id + "?rank=" + std::to_string(r));
    EXPECT_FALSE(served.contains("profiling"));
    auto plan = parse_schedule(served.dump(), r);
    ASSERT_TRUE(plan) << plan.error().message;
    EXPECT_EQ(runs[r].plan, *plan) << "rank " << r;
    // Two steps on the plan: the clock thread locked the planned clocks in order (consecutive
    // equal clocks merged, also across the step boundary).
    std::vector<int> expected;
    int last =
        runs[r].applied_before_plan_steps.empty() ? -1 : runs[r].applied_before_plan_steps.back();
    for (int i = 0; i < 2; ++i) {
      for (const auto& [name, mhz] : *plan) {
        if (mhz != last) expected.push_back(mhz);
        last = mhz;
      }
    }
    EXPECT_EQ(runs[r].applied_during_plan_steps, expected) << "rank " << r;
    // During profiling: first the sweep, highest clock down (P_blocking and the sweep's first
    // clock are both 1410 MHz: one call).
    const auto& before = runs[r].applied_before_plan_steps;
    ASSERT_GE(before.size(), kClocks.size());
    EXPECT_EQ(std::vector<int>(before.begin(), before.begin() + kClocks.size()), kClocks);
    for (const auto& a : clients[r]->applied_clocks())
      EXPECT_EQ(a.thread_id, clients[r]->clock_thread_id());
    const ClientStatus st = clients[r]->status();
    EXPECT_EQ(st.profiling_phase, "planned");
    // Every swept clock's iterations were posted and accepted (rank 0 also its P_blocking).
    EXPECT_GE(st.profiling_results_posted,
              static_cast<long long>(2 * kClocks.size()) + (r == 0 ? 1 : 0));
    fmt::print(
        "rank {}: {} steps, {} profiling results accepted, {} stale (409), {} swept iterations "
        "not posted, {} apportioned\n",
        r, runs[r].steps, st.profiling_results_posted, st.stale_results,
        st.sweep_iterations_skipped, st.apportioned_iterations);
  }
  // NVML calls: every clock lock and energy read of a rank on its own clock thread.
  const std::string log = fake.text();
  const std::regex line(
      R"((nvmlDeviceSetGpuLockedClocks|nvmlDeviceGetTotalEnergyConsumption) [^\n]*?(device=1 )?thread=(\d+))");
  long energy_reads[2] = {0, 0};
  for (auto it = std::sregex_iterator(log.begin(), log.end(), line); it != std::sregex_iterator();
       ++it) {
    const int device = (*it)[2].matched ? 1 : 0;
    EXPECT_EQ(std::stol((*it)[3]), clients[device]->clock_thread_id()) << (*it)[0];
    if ((*it)[1] == "nvmlDeviceGetTotalEnergyConsumption") ++energy_reads[device];
  }
  for (int r = 0; r < 2; ++r) {
    // Step begin and end plus every instruction's begin and end (4 instructions per step).
    EXPECT_GE(energy_reads[r], 10L * runs[r].steps) << "rank " << r;
  }
  fmt::print(
      "in-vivo loop (fake NVML): P_blocking {:.1f} W measured (fake: {} W); {} frontier points, "
      "T_min {:.4f} s .. T* {:.4f} s (planned from the measured profile); measured power vs "
      "the fake's P(f): mean error {:.1f} %, worst {:.1f} %; time/expected mean {:.2f}, worst "
      "{:.2f}\n",
      profiling["p_blocking_w"].get<double>(), kBlockedW, frontier["points"].size(), t_min, t_star,
      100.0 * sum_power_error / n_points, 100.0 * worst_power_error, sum_time_ratio / n_points,
      worst_time_ratio);

  rank1->reset();
  rank0->reset();
  server.stop();
}

}  // namespace
}  // namespace powertrain::client
