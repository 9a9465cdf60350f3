// libpowertrain_client.so loaded as a training process would (dlopen), driven through its C ABI.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <chrono>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "powertrain/client.h"
#include "stub_server.h"

namespace {

using powertrain::testing_client::StubRequest;
using powertrain::testing_client::StubResponse;
using powertrain::testing_client::StubServer;

struct Api {
  void* dl = nullptr;
  decltype(&powertrain_client_options_init) options_init;
  decltype(&powertrain_client_create) create;
  decltype(&powertrain_client_destroy) destroy;
  decltype(&powertrain_client_wait_for_schedule) wait_for_schedule;
  decltype(&powertrain_client_job_id) job_id;
  decltype(&powertrain_client_on_step_begin) step_begin;
  decltype(&powertrain_client_on_step_end) step_end;
  decltype(&powertrain_client_on_instruction_begin) instruction_begin;
  decltype(&powertrain_client_on_instruction_end) instruction_end;
  decltype(&powertrain_client_flush) flush;
  decltype(&powertrain_client_iterations) iterations;
  decltype(&powertrain_client_last_error) last_error;
};

template <typename F>
void bind(void* dl, F& fn, const char* name) {
  fn = reinterpret_cast<F>(::dlsym(dl, name));
  ASSERT_NE(fn, nullptr) << name;
}

TEST(ClientCApi, SharedLibraryRunsAnIterationWithTheFakeNvml) {
  Api api;
  api.dl = ::dlopen(POWERTRAIN_CLIENT_LIBRARY_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(api.dl, nullptr) << ::dlerror();
  bind(api.dl, api.options_init, "powertrain_client_options_init");
  bind(api.dl, api.create, "powertrain_client_create");
  bind(api.dl, api.destroy, "powertrain_client_destroy");
  bind(api.dl, api.wait_for_schedule, "powertrain_client_wait_for_schedule");
  bind(api.dl, api.job_id, "powertrain_client_job_id");
  bind(api.dl, api.step_begin, "powertrain_client_on_step_begin");
  bind(api.dl, api.step_end, "powertrain_client_on_step_end");
  bind(api.dl, api.instruction_begin, "powertrain_client_on_instruction_begin");
  bind(api.dl, api.instruction_end, "powertrain_client_on_instruction_end");
  bind(api.dl, api.flush, "powertrain_client_flush");
  bind(api.dl, api.iterations, "powertrain_client_iterations");
  bind(api.dl, api.last_error, "powertrain_client_last_error");
  // Only the C ABI is exported: the embedded C++ library stays private.
  EXPECT_EQ(
      ::dlsym(
          api.dl,
          "_ZN10powertrain4nvml4Nvml4loadERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"),
      nullptr);

  StubServer server([](const StubRequest& r) -> StubResponse {
    if (r.target == "/register_job") return {200, "\"job-c\""};
    if (r.target.rfind("/schedule/job-c?rank=0", 0) == 0)
      return {200, R"({"rank":0,"frequencies":[["forward",900],["backward",1410]]})"};
    return {200, "null"};
  });
  powertrain_client_options options;
  api.options_init(&options);
  const std::string url = server.url();
  options.server_url = url.c_str();
  options.nvml_library = POWERTRAIN_FAKE_NVML_PATH;
  char error[256] = "";
  options.world_size = 3;  // 1 x 1 x 1 != 3
  EXPECT_EQ(api.create(&options, error, sizeof(error)), nullptr);
  EXPECT_STREQ(error, "client options: pp 1 x dp 1 x tp 1 != world_size 3");
  options.world_size = 1;
  powertrain_client* client = api.create(&options, error, sizeof(error));
  ASSERT_NE(client, nullptr) << error;
  ASSERT_EQ(api.wait_for_schedule(client, 10.0), POWERTRAIN_CLIENT_OK) << api.last_error(client);
  char id[64];
  ASSERT_EQ(api.job_id(client, 1.0, id, sizeof(id)), POWERTRAIN_CLIENT_OK);
  EXPECT_STREQ(id, "job-c");
  EXPECT_EQ(api.step_begin(client), POWERTRAIN_CLIENT_OK);
  EXPECT_EQ(api.instruction_begin(client, "forward"), POWERTRAIN_CLIENT_OK);
  EXPECT_EQ(api.instruction_end(client, "forward"), POWERTRAIN_CLIENT_OK);
  EXPECT_EQ(api.instruction_begin(client, "forward"), POWERTRAIN_CLIENT_ESCHEDULE);
  EXPECT_STREQ(api.last_error(client),
               "schedule: instruction 1 of the iteration is 'backward' (1410 MHz), but 'forward' "
               "began");
  EXPECT_EQ(api.instruction_begin(client, "backward"), POWERTRAIN_CLIENT_OK);
  EXPECT_EQ(api.instruction_end(client, "backward"), POWERTRAIN_CLIENT_OK);
  EXPECT_EQ(api.step_end(client), POWERTRAIN_CLIENT_OK);
  EXPECT_EQ(api.flush(client, 10.0), POWERTRAIN_CLIENT_OK);
  double time_s = 0.0, energy_j = 0.0;
  EXPECT_EQ(api.iterations(client, &time_s, &energy_j), 1);
  EXPECT_GT(time_s, 0.0);
  EXPECT_GE(energy_j, 0.0);
  api.destroy(client);
  api.destroy(nullptr);
  ::dlclose(api.dl);
}

// The in-vivo profiling loop through the C ABI against a scripted server: POST /profiling is
// retried while a stage has no rank (422 naming "ranks"), P_blocking is measured when the
// directive asks rank 0, each swept clock's iteration is posted with its breakdown, and after
// GET /job says "ready" the final plan is fetched and followed.
TEST(ClientCApi, InVivoProfilingLoop) {
  void* dl = ::dlopen(POWERTRAIN_CLIENT_LIBRARY_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(dl, nullptr) << ::dlerror();
  decltype(&powertrain_client_options_init) options_init;
  decltype(&powertrain_client_create) create;
  decltype(&powertrain_client_destroy) destroy;
  decltype(&powertrain_client_start_profiling) start_profiling;
  decltype(&powertrain_client_p_blocking_requested) p_blocking_requested;
  decltype(&powertrain_client_on_p_blocking_begin) p_blocking_begin;
  decltype(&powertrain_client_on_p_blocking_end) p_blocking_end;
  decltype(&powertrain_client_profiling_phase) profiling_phase;
  decltype(&powertrain_client_on_step_begin) step_begin;
  decltype(&powertrain_client_on_step_end) step_end;
  decltype(&powertrain_client_on_instruction_begin) instruction_begin;
  decltype(&powertrain_client_on_instruction_end) instruction_end;
  decltype(&powertrain_client_flush) flush;
  decltype(&powertrain_client_last_error) last_error;
  bind(dl, options_init, "powertrain_client_options_init");
  bind(dl, create, "powertrain_client_create");
  bind(dl, destroy, "powertrain_client_destroy");
  bind(dl, start_profiling, "powertrain_client_start_profiling");
  bind(dl, p_blocking_requested, "powertrain_client_p_blocking_requested");
  bind(dl, p_blocking_begin, "powertrain_client_on_p_blocking_begin");
  bind(dl, p_blocking_end, "powertrain_client_on_p_blocking_end");
  bind(dl, profiling_phase, "powertrain_client_profiling_phase");
  bind(dl, step_begin, "powertrain_client_on_step_begin");
  bind(dl, step_end, "powertrain_client_on_step_end");
  bind(dl, instruction_begin, "powertrain_client_on_instruction_begin");
  bind(dl, instruction_end, "powertrain_client_on_instruction_end");
  bind(dl, flush, "powertrain_client_flush");
  bind(dl, last_error, "powertrain_client_last_error");

  // The server's script: p_blocking until measured, then 1410 and 900 MHz (one iteration each),
  // then characterizing for two GET /job polls, then the plan.
  std::mutex mutex;
  std::string phase = "none";  // before POST /profiling
  int profiling_posts = 0, polls = 0;
  std::vector<std::string> results;
  const std::vector<int> sweep = {1410, 900};
  std::size_t clock = 0;
  StubServer server([&](const StubRequest& r) -> StubResponse {
    std::lock_guard lock(mutex);
    if (r.target == "/register_job") return {200, "\"job-p\""};
    if (r.target.rfind("/register_rank/", 0) == 0) return {200, "null"};
    if (r.method == "POST" && r.target == "/profiling/job-p") {
      if (++profiling_posts < 3) return {422, R"({"detail":[],"field":"ranks"})"};
      phase = "p_blocking";
      return {202, R"({"status":"profiling"})"};
    }
    if (r.target.rfind("/schedule/job-p?rank=0", 0) == 0) {
      const std::string rows =
          phase == "done" && polls >= 2 ? R"([["forward",1200],["backward",1005]])"
          : phase == "sweep"            ? "[[\"forward\"," + std::to_string(sweep[clock]) +
                                   "],[\"backward\"," + std::to_string(sweep[clock]) + "]]"
                             : R"([["forward",1410],["backward",1410]])";
      std::string profiling;
      if (phase == "p_blocking")
        profiling = R"(,"profiling":{"phase":"p_blocking","measure_p_blocking_rank":0})";
      if (phase == "sweep")
        profiling =
            ",\"profiling\":{\"phase\":\"sweep\",\"clock_mhz\":" + std::to_string(sweep[clock]) +
            ",\"reporting_rank\":0,\"stage_done\":false,\"iterations_per_clock\":1,"
            "\"iterations_at_clock\":0}";
      return {200, "{\"rank\":0,\"frequencies\":" + rows + profiling + "}"};
    }
    if (r.method == "POST" && r.target == "/result/job-p") {
      results.push_back(r.body);
      const auto j = nlohmann::json::parse(r.body);
      if (phase == "p_blocking" && j.value("measurement", "") == "p_blocking") {
        phase = "sweep";
      } else if (phase == "sweep") {
        if (j.value("frequency_mhz", 0) != sweep[clock]) return {409, R"({"detail":"stale"})"};
        if (++clock == sweep.size()) phase = "done";
      }
      return {200, "null"};
    }
    if (r.target == "/job/job-p") {
      if (phase == "done") ++polls;
      return {200, phase == "done" && polls >= 2 ? R"({"status":"ready","profiling_phase":"done"})"
                                                 : R"({"status":"characterizing"})"};
    }
    return {404, R"({"detail":"not found"})"};
  });
  powertrain_client_options options;
  options_init(&options);
  const std::string url = server.url();
  options.server_url = url.c_str();
  options.nvml_library = POWERTRAIN_FAKE_NVML_PATH;
  options.profile_in_vivo = 1;
  char error[256] = "";
  powertrain_client* client = create(&options, error, sizeof(error));
  ASSERT_NE(client, nullptr) << error;
  EXPECT_STREQ(profiling_phase(client), "waiting");
  EXPECT_EQ(p_blocking_begin(client), POWERTRAIN_CLIENT_EINVAL);  // not asked
  EXPECT_EQ(start_profiling(client, -1.0, -2, 1, 0, nullptr), POWERTRAIN_CLIENT_EINVAL);
  ASSERT_EQ(start_profiling(client, -1.0, 2, 1, 0, nullptr), POWERTRAIN_CLIENT_OK);
  int steps = 0, p_blocking_windows = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (std::string(profiling_phase(client)) != "planned" || steps < 1) {
    ASSERT_LT(std::chrono::steady_clock::now(), deadline) << profiling_phase(client);
    if (p_blocking_requested(client)) {
      ASSERT_EQ(p_blocking_begin(client), POWERTRAIN_CLIENT_OK) << last_error(client);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      ASSERT_EQ(p_blocking_end(client), POWERTRAIN_CLIENT_OK) << last_error(client);
      ++p_blocking_windows;
    }
    ASSERT_EQ(step_begin(client), POWERTRAIN_CLIENT_OK);
    for (const char* name : {"forward", "backward"}) {
      ASSERT_EQ(instruction_begin(client, name), POWERTRAIN_CLIENT_OK) << last_error(client);
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
      ASSERT_EQ(instruction_end(client, name), POWERTRAIN_CLIENT_OK);
    }
    ASSERT_EQ(step_end(client), POWERTRAIN_CLIENT_OK) << last_error(client);
    ++steps;
  }
  // One more step: the plan applies at its begin and its order is the plan's.
  ASSERT_EQ(step_begin(client), POWERTRAIN_CLIENT_OK);
  EXPECT_EQ(instruction_begin(client, "backward"), POWERTRAIN_CLIENT_ESCHEDULE);
  EXPECT_STREQ(last_error(client),
               "schedule: instruction 0 of the iteration is 'forward' (1200 MHz), but 'backward' "
               "began");
  ASSERT_EQ(flush(client, 10.0), POWERTRAIN_CLIENT_OK);
  EXPECT_EQ(p_blocking_windows, 1);
  std::lock_guard lock(mutex);
  EXPECT_EQ(profiling_posts, 3);  // two 422s naming "ranks", then 202
  ASSERT_GE(results.size(), 3u);
  const auto blocking = nlohmann::json::parse(results[0]);
  EXPECT_EQ(blocking["measurement"], "p_blocking");
  EXPECT_GE(blocking["iter_time"][0].get<double>(), 0.02);
  EXPECT_GT(blocking["iter_energy"][0].get<double>(), 0.0);
  std::vector<int> swept;
  for (std::size_t i = 1; i < results.size(); ++i) {
    const auto j = nlohmann::json::parse(results[i]);
    swept.push_back(j["frequency_mhz"]);
    for (const char* name : {"forward", "backward"}) {
      ASSERT_EQ(j["time_breakdown"][name].size(), 1u) << j.dump();
      ASSERT_EQ(j["time_breakdown"][name][0].size(), 1u) << j.dump();
      EXPECT_GE(j["time_breakdown"][name][0][0].get<double>(), 0.005);
      EXPECT_GT(j["energy_breakdown"][name][0][0].get<double>(), 0.0);
    }
  }
  // Each clock posted once (the client skips further iterations at a clock it has posted).
  EXPECT_EQ(swept, sweep);
  destroy(client);
  ::dlclose(dl);
}

}  // namespace
