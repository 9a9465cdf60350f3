// Issue 16: the training-side client of the profiling rank dies mid in-vivo sweep and a new
// process (same rank, same job id, same start_profiling settings) takes over. The server must
// resume the sweep where the acknowledged results left it — not restart it (losing the measured
// clocks) and not corrupt it (a clock measured twice or skipped). One 1-stage job against the real
// plan server in-process and the fake NVML, whose kernels take 1/f of their 1410 MHz time.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "../support/in_process_server.h"
#include "client/client.h"
#include "client/http.h"
#include "in_vivo_support.h"

namespace powertrain::client {
namespace {

using nlohmann::json;

const std::vector<int> kClocks = {1410, 1210, 1010, 810, 610};

// One training step of the single stage: every instruction of the schedule as a fake kernel.
bool step(Client& c, const FakeNvml& fake) {
  if (!c.on_step_begin()) return false;
  for (const auto& [name, mhz] : c.schedule()) {
    if (!c.on_instruction_begin(name)) return false;
    fake.run_kernel(0, name == "forward" ? 0.002 : 0.004);
    (void)c.on_instruction_end(name);
  }
  return static_cast<bool>(c.on_step_end());
}

TEST(ClientInVivoRestart, ARelaunchedProfilingRankResumesTheSweep) {
  FakeNvml fake;
  ASSERT_NE(fake.dl, nullptr) << ::dlerror();
  ASSERT_NE(fake.run_kernel, nullptr);
  testing_support::InProcessServer server;
  ASSERT_TRUE(server.started());
  const std::string url = server.url();
  HttpClient http(*parse_url(url));
  auto get = [&](const std::string& target) {
    auto r = http.request("GET", target, "", 30.0);
    return r && r->status == 200 ? json::parse(r->body) : json();
  };

  ClientOptions o = fake_nvml_options(url, 1, kClocks);
  o.start_profiling->stop_after_rises = 100;  // every clock is measured: the count below is exact
  o.start_profiling->p_blocking_w = 75.0;     // given: straight to the sweep

  std::string job_id;
  json before;  // the sweep as the first process left it
  {
    auto first = Client::create(o);
    ASSERT_TRUE(first) << first.error().message;
    job_id = (*first)->wait_for_job_id(30.0);
    ASSERT_FALSE(job_id.empty()) << (*first)->status().last_background_error;
    ASSERT_TRUE((*first)->wait_for_schedule(30.0)) << (*first)->status().last_background_error;
    // Train until two clocks are measured and the third is under way, then the process "dies".
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    for (;;) {
      ASSERT_LT(std::chrono::steady_clock::now(), deadline) << get("/profiling/" + job_id).dump();
      ASSERT_TRUE(step(**first, fake)) << (*first)->status().last_background_error;
      ASSERT_TRUE((*first)->flush(30.0));
      before = get("/profiling/" + job_id);
      if (before["stages"][0]["clock_mhz"] == kClocks[2]) break;
    }
    EXPECT_EQ((*first)->status().network_errors, 0) << (*first)->status().last_background_error;
  }
  ASSERT_EQ(before["phase"], "sweep");
  ASSERT_EQ(before["stages"][0]["instructions"]["forward"]["points"].size(), 2u);

  // The relaunched process: the same options plus the job id it was launched with.
  ClientOptions again = o;
  again.job_id = job_id;
  auto second = Client::create(again);
  ASSERT_TRUE(second) << second.error().message;
  ASSERT_TRUE((*second)->wait_for_schedule(30.0)) << (*second)->status().last_background_error;
  ASSERT_TRUE((*second)->flush(30.0));
  // Its POST /profiling resumed the sweep: the same state, and its schedule runs that clock.
  EXPECT_EQ(get("/profiling/" + job_id), before);
  const json served = get("/schedule/" + job_id + "?rank=0");
  EXPECT_EQ(served["profiling"]["clock_mhz"], kClocks[2]) << served.dump();
  EXPECT_EQ(served["profiling"]["iterations_at_clock"], before["stages"][0]["iterations_at_clock"]);

  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while ((*second)->status().profiling_phase != "planned") {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << (*second)->status().profiling_phase;
    ASSERT_TRUE(step(**second, fake)) << (*second)->status().last_background_error;
  }
  const ClientStatus st = (*second)->status();
  EXPECT_EQ(st.network_errors, 0) << st.last_background_error;
  // Every clock measured exactly once, highest first; the first process's two points unchanged.
  const json after = get("/profiling/" + job_id);
  ASSERT_EQ(after["phase"], "done");
  for (const std::string name : {"forward", "backward"}) {
    const json& points = after["stages"][0]["instructions"][name]["points"];
    ASSERT_EQ(points.size(), kClocks.size()) << name;
    for (std::size_t i = 0; i < kClocks.size(); ++i) {
      EXPECT_EQ(points[i]["frequency_mhz"], kClocks[i]) << name;
    }
    for (std::size_t i = 0; i < 2; ++i) {
      EXPECT_EQ(points[i], before["stages"][0]["instructions"][name]["points"][i]) << name;
    }
  }
  EXPECT_EQ(get("/frontier/" + job_id)["status"], "ready");

  second->reset();
  server.stop();
}

}  // namespace
}  // namespace powertrain::client
