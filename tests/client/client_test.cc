// The training-side client against a stub plan server and the fake NVML: registration, the
// schedule, clocks applied in planned order on the clock thread, energy windows posted back.
#include "client/client.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "client/http.h"
#include "client/protocol.h"
#include "nvml/nvml.h"
#include "stub_server.h"

namespace powertrain::client {
namespace {

using testing_client::StubRequest;
using testing_client::StubResponse;
using testing_client::StubServer;

constexpr const char* kJobId = "2024-01-01-00-00-00+dp1+pp2+tp1+test";
const char* kSchedule =
    R"({"rank":0,"frequencies":[["forward",1410],["forward",1200],["backward",1410],["backward",1005]]})";

long this_thread_id() { return static_cast<long>(::syscall(SYS_gettid)); }

// Fake-NVML power at a locked clock (tests/client/fake_nvml.cc).
double fake_power_w(int mhz) { return 50.0 + 350.0 * (mhz / 1410.0) * (mhz / 1410.0); }

StubResponse pfo_routes(const StubRequest& r, int schedule_delay_ms = 0) {
  if (r.method == "POST" && r.target == "/register_job")
    return {200, "\"" + std::string(kJobId) + "\""};
  if (r.method == "POST" && r.target.rfind("/register_rank/", 0) == 0) return {200, "null"};
  if (r.method == "GET" && r.target.rfind("/schedule/", 0) == 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(schedule_delay_ms));
    return {200, kSchedule};
  }
  if (r.method == "POST" && r.target.rfind("/result/", 0) == 0) return {200, "null"};
  if (r.method == "POST" && r.target.rfind("/straggler/", 0) == 0) return {200, "null"};
  if (r.method == "GET" && r.target.rfind("/frontier/", 0) == 0)
    return {200, R"({"points":[{"time":1.0,"energy":100.0}]})"};
  return {404, R"({"detail":"not found"})"};
}

// The fake NVML's in-memory call log (same handle as the client's dlopen).
std::string fake_nvml_log() {
  void* dl = ::dlopen(POWERTRAIN_FAKE_NVML_PATH, RTLD_NOW | RTLD_LOCAL);
  EXPECT_NE(dl, nullptr);
  auto log = reinterpret_cast<size_t (*)(char*, size_t)>(::dlsym(dl, "powertrain_fake_nvml_log"));
  std::string text(log(nullptr, 0) + 1, '\0');
  log(text.data(), text.size());
  text.pop_back();
  ::dlclose(dl);
  return text;
}
void clear_fake_nvml_log() {
  void* dl = ::dlopen(POWERTRAIN_FAKE_NVML_PATH, RTLD_NOW | RTLD_LOCAL);
  reinterpret_cast<void (*)()>(::dlsym(dl, "powertrain_fake_nvml_clear_log"))();
  ::dlclose(dl);
}

ClientOptions fake_options(const std::string& url) {
  ClientOptions o;
  o.server_url = url;
  o.pp_degree = 2;
  o.world_size = 2;
  o.nvml_library = POWERTRAIN_FAKE_NVML_PATH;
  o.request_timeout_s = 5.0;
  return o;
}

// Runs one iteration of kSchedule, each instruction `ms` long.
void run_iteration(Client& client, int ms) {
  ASSERT_TRUE(client.on_step_begin());
  for (const char* name : {"forward", "forward", "backward", "backward"}) {
    auto begun = client.on_instruction_begin(name);
    ASSERT_TRUE(begun) << begun.error().message;
    std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    ASSERT_TRUE(client.on_instruction_end(name));
  }
  auto ended = client.on_step_end();
  ASSERT_TRUE(ended) << ended.error().message;
}

// Real NVML updates its energy counter about every 100 ms: most windows of a few-ms instruction
// then read no change. The swept iteration's measured energy is split over its instructions by
// time (one clock for the whole stage in the sweep), and the iteration is still posted.
TEST(Client, SweptIterationWithCoarseEnergyCounterIsApportionedByTime) {
  std::mutex mutex;
  std::vector<std::string> results;
  StubServer server([&](const StubRequest& r) -> StubResponse {
    if (r.method == "GET" && r.target.rfind("/schedule/", 0) == 0) {
      return {200,
              R"({"rank":0,"frequencies":[["forward",1005],["forward",1005],["backward",1005],)"
              R"(["backward",1005]],"profiling":{"phase":"sweep","clock_mhz":1005,)"
              R"("reporting_rank":0,"stage_done":false,"iterations_per_clock":10,)"
              R"("iterations_at_clock":0}})"};
    }
    if (r.method == "POST" && r.target.rfind("/result/", 0) == 0) {
      std::lock_guard lock(mutex);
      results.push_back(r.body);
    }
    return pfo_routes(r);
  });
  ::setenv("POWERTRAIN_FAKE_NVML_ENERGY_PERIOD_S", "0.02", 1);
  ClientOptions options = fake_options(server.url());
  options.profile_in_vivo = true;
  auto created = Client::create(options);
  ASSERT_TRUE(created) << created.error().message;
  Client& client = **created;
  ASSERT_TRUE(client.wait_for_schedule(10.0)) << client.status().last_background_error;
  // The directive arrived with the schedule: every step is a swept iteration at 1005 MHz.
  for (int i = 0; i < 4; ++i) run_iteration(client, 8);
  ASSERT_TRUE(client.flush(10.0));
  ::unsetenv("POWERTRAIN_FAKE_NVML_ENERGY_PERIOD_S");
  const ClientStatus status = client.status();
  EXPECT_EQ(status.profiling_phase, "sweep");
  EXPECT_EQ(status.network_errors, 0) << status.last_background_error;
  EXPECT_GE(status.apportioned_iterations, 1);
  std::lock_guard lock(mutex);
  ASSERT_GE(results.size(), 3u);
  EXPECT_EQ(status.profiling_results_posted, static_cast<long long>(results.size()));
  for (const auto& body : results) {
    const auto j = nlohmann::json::parse(body);
    EXPECT_EQ(j["frequency_mhz"], 1005);
    ASSERT_EQ(j["iter_energy"].size(), 1u);
    const double iteration_j = j["iter_energy"][0];
    EXPECT_GT(iteration_j, 0.0);
    // Every run's energy is positive; apportioned iterations split the iteration's energy by time.
    double energy_sum = 0.0, time_sum = 0.0;
    for (const char* name : {"forward", "backward"}) {
      ASSERT_EQ(j["time_breakdown"][name][0].size(), 2u) << body;
      for (std::size_t k = 0; k < 2; ++k) {
        const double t = j["time_breakdown"][name][0][k], e = j["energy_breakdown"][name][0][k];
        EXPECT_GE(t, 0.008);
        EXPECT_GT(e, 0.0);
        energy_sum += e;
        time_sum += t;
      }
    }
    const double ratio = j["energy_breakdown"]["forward"][0][0].get<double>() /
                         j["time_breakdown"]["forward"][0][0].get<double>();
    const double backward_ratio = j["energy_breakdown"]["backward"][0][1].get<double>() /
                                  j["time_breakdown"]["backward"][0][1].get<double>();
    if (std::abs(energy_sum - iteration_j) < 1e-9 * iteration_j) {
      EXPECT_NEAR(ratio, iteration_j / time_sum, 1e-9 * ratio);  // the split is by time
      EXPECT_NEAR(backward_ratio, ratio, 1e-9 * ratio);
    }
  }
}

TEST(Client, ClocksInPlannedOrderOnClockThreadAndEnergyPosted) {
  StubServer server([](const StubRequest& r) { return pfo_routes(r); });
  ClientOptions options = fake_options(server.url());
  options.report_every_iterations = 3;
  clear_fake_nvml_log();
  auto created = Client::create(options);
  ASSERT_TRUE(created) << created.error().message;
  Client& client = **created;
  ASSERT_TRUE(client.wait_for_schedule(10.0)) << client.status().last_background_error;
  EXPECT_EQ(client.job_id(), kJobId);
  for (int i = 0; i < 3; ++i) run_iteration(client, 15);
  ASSERT_TRUE(client.flush(10.0));

  const ClientStatus status = client.status();
  EXPECT_TRUE(status.nvml_loaded);
  EXPECT_EQ(status.energy_source, "energy counter");
  EXPECT_EQ(status.results_posted, 1);
  EXPECT_EQ(status.network_errors, 0) << status.last_background_error;

  // Planned order: 1410, 1200, 1410, 1005 per iteration (no consecutive repeats to skip).
  const auto applied = client.applied_clocks();
  std::vector<int> mhz;
  for (const auto& a : applied) mhz.push_back(a.mhz);
  EXPECT_EQ(mhz, (std::vector<int>{1410, 1200, 1410, 1005, 1410, 1200, 1410, 1005, 1410, 1200, 1410,
                                   1005}));
  const long me = this_thread_id();
  for (const auto& a : applied) {
    EXPECT_NE(a.thread_id, me);
    EXPECT_EQ(a.thread_id, client.clock_thread_id());
  }
  // The driver saw the same calls, from the clock thread.
  std::istringstream log(fake_nvml_log());
  std::vector<int> logged;
  for (std::string line; std::getline(log, line);) {
    if (line.rfind("nvmlDeviceSetGpuLockedClocks ", 0) != 0) continue;
    int lo = 0, hi = 0;
    long tid = 0;
    ASSERT_EQ(
        std::sscanf(line.c_str(), "nvmlDeviceSetGpuLockedClocks %d %d thread=%ld", &lo, &hi, &tid),
        3);
    EXPECT_EQ(lo, hi);
    EXPECT_NE(tid, me);
    logged.push_back(hi);
  }
  EXPECT_EQ(logged, mhz);

  // Registration bodies.
  auto ranks = server.requests_to("/register_rank/");
  ASSERT_EQ(ranks.size(), 1u);
  auto rank = nlohmann::json::parse(ranks[0].body);
  ASSERT_EQ(rank["available_frequencies"].size(), 81u);
  EXPECT_EQ(rank["available_frequencies"][0], 1410);
  EXPECT_EQ(rank["available_frequencies"][80], 210);

  // The posted result: 3 iterations, energy = fake power x time within the clock range.
  auto results = server.requests_to("/result/");
  ASSERT_EQ(results.size(), 1u);
  auto result = nlohmann::json::parse(results[0].body);
  EXPECT_EQ(result["rank"], 0);
  ASSERT_EQ(result["iter_time"].size(), 3u);
  ASSERT_EQ(result["iter_energy"].size(), 3u);
  for (int i = 0; i < 3; ++i) {
    const double t = result["iter_time"][i];
    const double e = result["iter_energy"][i];
    EXPECT_GT(t, 0.055);
    // Counter reads lag the caller by the clock thread's queueing, which reaches tens of ms
    // on a loaded CI machine; allow 100 ms each side (the power bounds are what is checked).
    EXPECT_GT(e, fake_power_w(1005) * (t - 0.1)) << "iteration " << i;
    EXPECT_LT(e, fake_power_w(1410) * (t + 0.1)) << "iteration " << i;
  }
  ASSERT_EQ(result["time_breakdown"]["forward"].size(), 3u);
  EXPECT_EQ(result["time_breakdown"]["forward"][0].size(), 2u);
  // The instruction sleeps 15 ms: never shorter; longer by however much the scheduler adds.
  const double backward_s = result["time_breakdown"]["backward"][1][0].get<double>();
  EXPECT_GE(backward_s, 0.0149);
  EXPECT_LT(backward_s, 0.5);
  ASSERT_EQ(result["energy_breakdown"]["backward"][2].size(), 2u);
}

TEST(Client, ScheduleMismatchNamesTheExpectedInstruction) {
  StubServer server([](const StubRequest& r) { return pfo_routes(r); });
  auto created = Client::create(fake_options(server.url()));
  ASSERT_TRUE(created);
  Client& client = **created;
  ASSERT_TRUE(client.wait_for_schedule(10.0));
  ASSERT_TRUE(client.on_step_begin());
  ASSERT_TRUE(client.on_instruction_begin("forward"));
  auto wrong = client.on_instruction_begin("backward");
  ASSERT_FALSE(wrong);
  EXPECT_EQ(
      wrong.error().message,
      "schedule: instruction 1 of the iteration is 'forward' (1200 MHz), but 'backward' began");
  auto short_step = client.on_step_end();
  ASSERT_FALSE(short_step);
  EXPECT_EQ(short_step.error().message,
            "schedule: the iteration ran 1 instruction(s) but the schedule has 4; next expected "
            "(forward, 1200 MHz)");
}

TEST(Client, TrainingThreadNeverWaitsForTheServer) {
  // The schedule answer takes 1.5 s; callbacks and destruction must not wait for it.
  StubServer server([](const StubRequest& r) { return pfo_routes(r, 1500); });
  const auto start = std::chrono::steady_clock::now();
  {
    auto created = Client::create(fake_options(server.url()));
    ASSERT_TRUE(created);
    Client& client = **created;
    for (int i = 0; i < 20; ++i) {
      ASSERT_TRUE(client.on_step_begin());
      ASSERT_TRUE(client.on_instruction_begin("forward"));
      ASSERT_TRUE(client.on_instruction_end("forward"));
      ASSERT_TRUE(client.on_step_end());
    }
    EXPECT_FALSE(client.status().schedule_received);
    EXPECT_TRUE(client.applied_clocks().empty());  // no schedule: clocks untouched
  }
  const double elapsed_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(elapsed_s, 1.0) << "create + 20 iterations + destroy waited for the server";
}

TEST(Client, MissingNvmlDisablesClockControlWithOneMessage) {
  StubServer server([](const StubRequest& r) { return pfo_routes(r); });
  ClientOptions options = fake_options(server.url());
  options.nvml_library = "/nonexistent/libnvidia-ml.so.1";
  options.available_frequencies_mhz = {1005, 1410};
  options.quiet = true;
  auto created = Client::create(options);
  ASSERT_TRUE(created);
  Client& client = **created;
  EXPECT_EQ(client.status().nvml_message,
            "NVML not found (/nonexistent/libnvidia-ml.so.1): clock control disabled");
  EXPECT_FALSE(client.status().nvml_loaded);
  EXPECT_EQ(client.status().energy_source, "none");
  ASSERT_TRUE(client.wait_for_schedule(10.0));
  run_iteration(client, 1);
  ASSERT_TRUE(client.flush(5.0));
  EXPECT_TRUE(client.applied_clocks().empty());
  ASSERT_EQ(client.iterations().size(), 1u);
  EXPECT_LT(client.iterations()[0].energy_j, 0.0);
  auto rank = nlohmann::json::parse(server.requests_to("/register_rank/")[0].body);
  EXPECT_EQ(rank["available_frequencies"], nlohmann::json::parse("[1410, 1005]"));
}

TEST(Client, PowerSamplingWhenTheEnergyCounterIsMissing) {
  ::setenv("POWERTRAIN_FAKE_NVML_NO_ENERGY", "1", 1);
  ClientOptions options;  // no server: measurement only, schedule given offline
  options.nvml_library = POWERTRAIN_FAKE_NVML_PATH;
  options.power_sample_period_s = 0.005;
  auto created = Client::create(options);
  ::unsetenv("POWERTRAIN_FAKE_NVML_NO_ENERGY");
  ASSERT_TRUE(created);
  Client& client = **created;
  EXPECT_EQ(client.status().energy_source, "power sampling");
  client.set_schedule({{"forward", 705}});
  ASSERT_TRUE(client.on_step_begin());
  ASSERT_TRUE(client.on_instruction_begin("forward"));
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  ASSERT_TRUE(client.on_instruction_end("forward"));
  ASSERT_TRUE(client.on_step_end());
  ASSERT_TRUE(client.flush(5.0));
  const auto iterations = client.iterations();
  ASSERT_EQ(iterations.size(), 1u);
  // Locked at 705 MHz for the whole window: 50 + 350 x 0.25 = 137.5 W.
  EXPECT_NEAR(iterations[0].energy_j / iterations[0].time_s, fake_power_w(705),
              0.15 * fake_power_w(705));
}

TEST(Client, StragglerAndFrontierExtensions) {
  StubServer server([](const StubRequest& r) { return pfo_routes(r); });
  auto created = Client::create(fake_options(server.url()));
  ASSERT_TRUE(created);
  Client& client = **created;
  StragglerReport report;
  report.pipeline = 0;
  report.slowdown = 1.25;
  ASSERT_TRUE(client.report_straggler(report));
  ASSERT_TRUE(client.refresh_schedule());
  auto frontier = client.fetch_frontier(10.0);
  ASSERT_TRUE(frontier) << frontier.error().message;
  EXPECT_EQ(*frontier, R"({"points":[{"time":1.0,"energy":100.0}]})");
  ASSERT_TRUE(client.flush(10.0));
  auto stragglers = server.requests_to("/straggler/");
  ASSERT_EQ(stragglers.size(), 1u);
  EXPECT_EQ(stragglers[0].target, "/straggler/2024-01-01-00-00-00%2Bdp1%2Bpp2%2Btp1%2Btest");
  EXPECT_EQ(nlohmann::json::parse(stragglers[0].body),
            nlohmann::json::parse(R"({"pipeline":0,"slowdown":1.25})"));
  EXPECT_EQ(server.requests_to("/schedule/").size(), 2u);
  auto both = client.report_straggler({0, 0, 1.2, -1.0});
  ASSERT_FALSE(both);
  EXPECT_EQ(both.error().message, "straggler: give exactly one of rank or pipeline (>= 0)");
  EXPECT_FALSE(client.report_straggler({0, -1, 0.5, -1.0}));  // slowdown < 1
  EXPECT_FALSE(client.report_straggler({0, -1, 1.5, 0.2}));   // slowdown and delay
  ASSERT_TRUE(client.clear_stragglers());
}

TEST(Client, ServerErrorsAreReportedNotThrown) {
  StubServer server([](const StubRequest& r) -> StubResponse {
    if (r.target == "/register_job") return {422, R"({"detail":"world_size"})"};
    return {200, "null"};
  });
  auto created = Client::create(fake_options(server.url()));
  ASSERT_TRUE(created);
  ASSERT_TRUE((*created)->flush(10.0));
  const auto status = (*created)->status();
  EXPECT_EQ(status.network_errors, 1);
  EXPECT_EQ(status.last_background_error,
            R"(HTTP 422 from POST /register_job: {"detail":"world_size"})");
  EXPECT_FALSE(status.job_registered);
}

TEST(Client, OptionsAreValidated) {
  ClientOptions o;
  o.world_size = 2;
  auto bad = Client::create(o);
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "client options: pp 1 x dp 1 x tp 1 != world_size 2");
  ClientOptions other;
  other.server_url = "http://127.0.0.1:1";
  other.pp_degree = other.world_size = 2;
  other.rank = other.pp_rank = 1;
  auto no_job = Client::create(other);
  ASSERT_FALSE(no_job);
  EXPECT_NE(no_job.error().message.find("job_id is required"), std::string::npos);
}

}  // namespace
}  // namespace powertrain::client
