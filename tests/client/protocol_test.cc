// The client's parsers and writers of the plan server's wire format (client/protocol.h) and of
// the server URL (client/http.h): bodies, routes, and one-line errors naming the field.
#include "client/protocol.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "client/http.h"

namespace powertrain::client {
namespace {

const char* kSchedule =
    R"({"rank":0,"frequencies":[["forward",1410],["forward",1200],["backward",1410],["backward",1005]]})";

TEST(ClientProtocol, BodiesAndRoutes) {
  EXPECT_EQ(register_rank_route("a+b c"), "/register_rank/a%2Bb%20c");
  EXPECT_EQ(schedule_route("j", 3), "/schedule/j?rank=3");
  auto job = nlohmann::json::parse(job_info_json({4, 2, 1, 8, ""}));
  EXPECT_EQ(job["job_id"], "");
  EXPECT_EQ(job["pp_degree"], 4);
  EXPECT_EQ(job["world_size"], 8);
  EXPECT_TRUE(job["job_metadata"].is_null());
  auto schedule = parse_schedule(kSchedule, 0);
  ASSERT_TRUE(schedule);
  ASSERT_EQ(schedule->size(), 4u);
  EXPECT_EQ((*schedule)[3], (std::pair<std::string, int>{"backward", 1005}));
  auto wrong_rank = parse_schedule(kSchedule, 1);
  ASSERT_FALSE(wrong_rank);
  EXPECT_EQ(wrong_rank.error().message,
            "schedule for rank 1: field 'rank': the server sent rank 0");
  auto bad_pair = parse_schedule(R"({"rank":0,"frequencies":[["forward","fast"]]})", 0);
  ASSERT_FALSE(bad_pair);
  EXPECT_NE(bad_pair.error().message.find("frequencies[0]: expected [instruction, MHz]"),
            std::string::npos);
  EXPECT_FALSE(parse_job_id("42"));
  EXPECT_EQ(*parse_job_id("\"x\""), "x");
  EXPECT_FALSE(parse_url("https://x"));
  EXPECT_FALSE(parse_url("http://x:99999"));
  auto url = parse_url("http://localhost:8000/pfo/");
  ASSERT_TRUE(url);
  EXPECT_EQ(url->host, "localhost");
  EXPECT_EQ(url->port, "8000");
  EXPECT_EQ(url->prefix, "/pfo");
}

TEST(ClientProtocol, ProfilingDirectiveAndRequest) {
  auto answer = parse_schedule_answer(
      R"({"rank":1,"frequencies":[["forward",1210]],"profiling":{"phase":"sweep","clock_mhz":1210,)"
      R"("reporting_rank":1,"stage_done":false,"iterations_per_clock":3,"iterations_at_clock":2}})",
      1);
  ASSERT_TRUE(answer) << answer.error().message;
  ASSERT_TRUE(answer->profiling);
  EXPECT_EQ(answer->profiling->phase, "sweep");
  EXPECT_EQ(answer->profiling->clock_mhz, 1210);
  EXPECT_EQ(answer->profiling->reporting_rank, 1);
  EXPECT_EQ(answer->profiling->iterations_per_clock, 3);
  EXPECT_EQ(answer->profiling->iterations_at_clock, 2);
  EXPECT_FALSE(parse_schedule_answer(kSchedule, 0)->profiling);  // Zeus's shape: no directive
  auto bad_phase =
      parse_schedule_answer(R"({"rank":0,"frequencies":[],"profiling":{"phase":"warmup"}})", 0);
  ASSERT_FALSE(bad_phase);
  EXPECT_EQ(bad_phase.error().message,
            "schedule for rank 0: field 'profiling.phase': expected p_blocking or sweep, got "
            "'warmup'");
  auto bad_clock = parse_schedule_answer(
      R"({"rank":0,"frequencies":[],"profiling":{"phase":"sweep","clock_mhz":"fast"}})", 0);
  ASSERT_FALSE(bad_clock);
  EXPECT_NE(bad_clock.error().message.find("profiling.clock_mhz"), std::string::npos);
  ProfilingRequest request;
  EXPECT_EQ(profiling_request_json(request), "{}");
  request.microbatches = 8;
  request.p_blocking_w = 83.5;
  EXPECT_EQ(nlohmann::json::parse(profiling_request_json(request)),
            nlohmann::json({{"microbatches", 8}, {"p_blocking_w", 83.5}}));
  ProfilingResult result;
  result.rank = 2;
  result.frequency_mhz = 1210;
  result.iter_time_s = {0.5};
  result.iter_energy_j = {100.0};
  const auto posted = nlohmann::json::parse(profiling_result_json(result));
  EXPECT_EQ(posted["frequency_mhz"], 1210);
  EXPECT_FALSE(posted.contains("measurement"));
}

}  // namespace
}  // namespace powertrain::client
