// The HTTP front: routes over real sockets, 413, 401, 503 + Retry-After (request and
// characterization queues, through the deterministic hooks), /health, /metrics.
#include "serve/server.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "profile/example_profile.h"
#include "serve/client.h"

namespace powertrain::serve {
namespace {

using nlohmann::json;

std::string encode(const std::string& id) {  // job ids carry '+'
  std::string out;
  for (char ch : id) out += ch == '+' ? std::string("%2B") : std::string(1, ch);
  return out;
}

class ServeHttp : public ::testing::Test {
 protected:
  void start(ServerOptions options, ServiceOptions service_options = {}) {
    auto store = Store::open(":memory:");
    ASSERT_TRUE(store);
    auto service = Service::create(std::move(*store), service_options);
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

// Deterministic: the server's hold hook parks the first request inside its in-flight slot, so the
// second one meets a full queue no matter how the threads are scheduled.
TEST_F(ServeHttp, FullQueueAnswers503WithRetryAfter) {
  ServerOptions options;
  options.max_pending = 1;
  start(options);
  server_->hold_requests(true);
  std::thread waiting([&] {
    HttpConnection w("127.0.0.1", port());
    auto r = w.request("GET", "/info");
    ASSERT_TRUE(r) << r.error().message;
    EXPECT_EQ(r->status, 200);  // answered once released
  });
  // A state condition, not a sleep: the parked request holds the one slot.
  for (int i = 0; i < 10000 && server_->held_requests() == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(server_->held_requests(), 1u);
  EXPECT_EQ(server_->in_flight(), 1u);
  HttpConnection c("127.0.0.1", port());
  auto r = c.request("GET", "/info");
  ASSERT_TRUE(r) << r.error().message;
  EXPECT_EQ(r->status, 503);
  EXPECT_EQ(r->headers["retry-after"], "1");
  EXPECT_NE(json::parse(r->body)["detail"].get<std::string>().find("busy"), std::string::npos);
  server_->hold_requests(false);
  waiting.join();
  // Both answers are written; the slots are free once the server has seen the writes complete.
  for (int i = 0; i < 10000 && server_->in_flight() != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ASSERT_EQ(server_->in_flight(), 0u);
  r = c.request("GET", "/info");  // the same keep-alive connection works again
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  r = c.request("GET", "/metrics");
  EXPECT_NE(r->body.find(
                R"(powertrain_serve_requests_total{route="unknown",method="GET",status="503"} 1)"),
            std::string::npos)
      << r->body;
}

// A full characterization queue: POST /profile gets 503 with Retry-After: 5 while the background
// worker is paused (the hook), and is accepted again once the queue drains.
TEST_F(ServeHttp, FullCharacterizeQueueAnswers503) {
  ServiceOptions service_options;
  service_options.max_characterize_queue = 1;
  start({}, service_options);
  service_->pause_characterization(true);
  HttpConnection c("127.0.0.1", port());
  auto job = [&] {
    json body = {
        {"job_id", ""}, {"pp_degree", 4}, {"dp_degree", 1}, {"tp_degree", 1}, {"world_size", 4}};
    return json::parse(c.request("POST", "/register_job", body.dump())->body).get<std::string>();
  };
  const std::string a = job(), b = job();
  const json profile = {
      {"csv", profile::example_profile_csv()}, {"microbatches", 4}, {"p_blocking_w", 120.0}};
  auto r = c.request("POST", "/profile/" + encode(a), profile.dump());
  ASSERT_EQ(r->status, 202) << r->body;
  EXPECT_EQ(service_->characterize_queue_depth(), 1u);
  r = c.request("POST", "/profile/" + encode(b), profile.dump());
  EXPECT_EQ(r->status, 503) << r->body;
  EXPECT_EQ(r->headers["retry-after"], "5");
  EXPECT_EQ(json::parse(c.request("GET", "/frontier/" + encode(b))->body)["status"], "waiting");
  r = c.request("GET", "/metrics");
  EXPECT_NE(r->body.find("powertrain_serve_characterize_queue 1"), std::string::npos);
  service_->pause_characterization(false);
  service_->wait_idle();
  EXPECT_EQ(json::parse(c.request("GET", "/frontier/" + encode(a))->body)["status"], "ready");
  r = c.request("POST", "/profile/" + encode(b), profile.dump());
  EXPECT_EQ(r->status, 202) << r->body;
  service_->wait_idle();
  EXPECT_EQ(json::parse(c.request("GET", "/frontier/" + encode(b))->body)["status"], "ready");
}

}  // namespace
}  // namespace powertrain::serve
