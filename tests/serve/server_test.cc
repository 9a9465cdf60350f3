// The HTTP front: routes over real sockets, 413, 401, 503 + Retry-After, /health, /metrics.
#include "serve/server.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "serve/client.h"

namespace powertrain::serve {
namespace {

using nlohmann::json;

class ServeHttp : public ::testing::Test {
 protected:
  void start(ServerOptions options) {
    auto store = Store::open(":memory:");
    ASSERT_TRUE(store);
    auto service = Service::create(std::move(*store), {});
    ASSERT_TRUE(service);
    service_ = std::move(*service);
    options.access_log = false;
    auto server = Server::start(*service_, options);
    ASSERT_TRUE(server) << server.error().message;
    server_ = std::move(*server);
    thread_ = std::thread([this] { server_->run(); });
  }
  void TearDown() override {
    if (server_) server_->stop();
    if (thread_.joinable()) thread_.join();
  }
  unsigned short port() const { return server_->port(); }

  std::unique_ptr<Service> service_;
  std::unique_ptr<Server> server_;
  std::thread thread_;
};

TEST_F(ServeHttp, RoutesLimitsAndMetrics) {
  ServerOptions options;
  options.max_body_bytes = 4096;
  start(options);
  HttpConnection c("127.0.0.1", port());
  auto r = c.request("GET", "/health");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->status, 200);
  json job = {
      {"job_id", ""}, {"pp_degree", 2}, {"dp_degree", 1}, {"tp_degree", 1}, {"world_size", 2}};
  r = c.request("POST", "/register_job", job.dump());
  ASSERT_EQ(r->status, 200);
  const std::string id = json::parse(r->body).get<std::string>();
  // Job ids carry '+': the path is taken literally, percent-decoded.
  std::string encoded;
  for (char ch : id) encoded += ch == '+' ? std::string("%2B") : std::string(1, ch);
  r = c.request("GET", "/frontier/" + encoded);
  EXPECT_EQ(r->status, 200) << r->body;
  r = c.request("POST", "/register_job", std::string(5000, ' '));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 413);
  HttpConnection c2("127.0.0.1", port());
  r = c2.request("POST", "/register_job", R"({"job_id":"","pp_degree":0})");
  EXPECT_EQ(r->status, 422);
  EXPECT_EQ(json::parse(r->body)["field"], "pp_degree");
  r = c2.request("GET", "/metrics");
  ASSERT_EQ(r->status, 200);
  EXPECT_NE(
      r->body.find(
          R"(powertrain_serve_requests_total{route="/register_job",method="POST",status="422"} 1)"),
      std::string::npos)
      << r->body;
  EXPECT_NE(r->body.find(R"(powertrain_serve_jobs{status="waiting"} 1)"), std::string::npos);
  EXPECT_NE(r->body.find("powertrain_serve_request_duration_seconds_bucket"), std::string::npos);
}

TEST_F(ServeHttp, BearerToken) {
  ServerOptions options;
  options.bearer_token = "s3cret";
  start(options);
  HttpConnection c("127.0.0.1", port());
  auto r = c.request("GET", "/info");
  EXPECT_EQ(r->status, 401);
  EXPECT_EQ(r->headers["www-authenticate"], "Bearer");
  r = c.request("GET", "/info", "", "", "wrong");
  EXPECT_EQ(r->status, 401);
  r = c.request("GET", "/info", "", "", "s3cret");
  EXPECT_EQ(r->status, 200);
  r = c.request("GET", "/health");
  EXPECT_EQ(r->status, 200);
  EXPECT_TRUE(bearer_matches("Bearer abc", "abc"));
  EXPECT_FALSE(bearer_matches("Bearer abd", "abc"));
  EXPECT_FALSE(bearer_matches("Bearer abcd", "abc"));
}

// Disabled: timing-dependent — about 1 run in 10 never sees the waiting request hold the slot
// within 900 ms (seen under load and once in a quiet clean-clone run). The 503 path needs a
// deterministic hook (a test-only barrier in the server) before this can run in CI again.
TEST_F(ServeHttp, DISABLED_FullQueueAnswers503WithRetryAfter) {
  ServerOptions options;
  options.max_pending = 1;
  options.schedule_wait_s = 2.0;
  start(options);
  HttpConnection c("127.0.0.1", port());
  json job = {
      {"job_id", ""}, {"pp_degree", 1}, {"dp_degree", 1}, {"tp_degree", 1}, {"world_size", 1}};
  const std::string id = json::parse(c.request("POST", "/register_job", job.dump())->body);
  ASSERT_EQ(c.request("POST", "/register_rank/" + id,
                      json({{"rank", 0},
                            {"dp_rank", 0},
                            {"pp_rank", 0},
                            {"tp_rank", 0},
                            {"available_frequencies", {1410}}})
                          .dump())
                ->status,
            200);
  // No profile and no microbatch count: this schedule request waits (and holds the one slot).
  std::thread waiting([&] {
    HttpConnection w("127.0.0.1", port());
    auto r = w.request("GET", "/schedule/" + id + "?rank=0");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 503);  // gave up after schedule_wait_s
    EXPECT_EQ(r->headers["retry-after"], "1");
  });
  // Poll until the waiting request holds the slot (it may take a moment to reach the server).
  auto r = c.request("GET", "/info");
  for (int attempt = 0; attempt < 30 && r->status != 503; ++attempt) {
    std::this_thread::sleep_for(std::chrono::milliseconds(30));
    r = c.request("GET", "/info");
  }
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->headers["retry-after"], "1");
  waiting.join();
  // The slot is released just after the waiting answer is written; allow the server that moment.
  int status = 0;
  for (int attempt = 0; attempt < 40 && status != 200; ++attempt) {
    if (attempt > 0) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    status = c.request("GET", "/info")->status;
  }
  EXPECT_EQ(status, 200);
}

}  // namespace
}  // namespace powertrain::serve
