#include "serve/server.h"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string_view>
#include <thread>
#include <vector>

namespace powertrain::serve {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

bool bearer_matches(std::string_view header, std::string_view token) {
  constexpr std::string_view kPrefix = "Bearer ";
  if (header.size() != kPrefix.size() + token.size()) return false;
  unsigned char diff = 0;
  for (std::size_t i = 0; i < kPrefix.size(); ++i) diff |= header[i] ^ kPrefix[i];
  for (std::size_t i = 0; i < token.size(); ++i) diff |= header[kPrefix.size() + i] ^ token[i];
  return diff == 0;
}

namespace {

// Latency buckets (s) of the request histogram.
constexpr std::array<double, 12> kBuckets = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                             0.01,   0.025,   0.05,   0.1,   0.5,    2.5};

// Counters without locks or allocation on the request path: routes, methods and statuses map to
// fixed slots (the route names are the service's literals; anything else counts as "unknown").
constexpr std::array<std::string_view, 13> kRoutes = {"unknown",
                                                      "/health",
                                                      "/metrics",
                                                      "/info",
                                                      "/register_job",
                                                      "/register_rank/{job_id}",
                                                      "/schedule/{job_id}",
                                                      "/result/{job_id}",
                                                      "/profile/{job_id}",
                                                      "/frontier/{job_id}",
                                                      "/straggler/{job_id}",
                                                      "/job/{job_id}",
                                                      "/profiling/{job_id}"};
constexpr std::array<std::string_view, 4> kMethods = {"other", "GET", "POST", "DELETE"};
constexpr int kMinStatus = 100, kMaxStatus = 599;
constexpr std::size_t kStatuses = kMaxStatus - kMinStatus + 1;

std::size_t route_index(std::string_view route) {
  for (std::size_t i = 1; i < kRoutes.size(); ++i) {
    if (kRoutes[i] == route) return i;
  }
  return 0;
}
std::size_t method_index(std::string_view method) {
  for (std::size_t i = 1; i < kMethods.size(); ++i) {
    if (kMethods[i] == method) return i;
  }
  return 0;
}

class Metrics {
 public:
  Metrics()
      : requests_(std::make_unique<std::atomic<long long>[]>(kRoutes.size() * kMethods.size() *
                                                             kStatuses)) {}
  void record(std::string_view route, std::string_view method, int status, double seconds) {
    const std::size_t r = route_index(route);
    const std::size_t s =
        static_cast<std::size_t>(std::clamp(status, kMinStatus, kMaxStatus) - kMinStatus);
    requests_[(r * kMethods.size() + method_index(method)) * kStatuses + s].fetch_add(
        1, std::memory_order_relaxed);
    auto& h = latency_[r];
    for (std::size_t i = 0; i < kBuckets.size(); ++i) {
      if (seconds <= kBuckets[i]) h.counts[i].fetch_add(1, std::memory_order_relaxed);
    }
    h.count.fetch_add(1, std::memory_order_relaxed);
    h.sum.fetch_add(seconds, std::memory_order_relaxed);
  }
  std::string text(const Service& service, std::size_t in_flight) const {
    std::string out =
        "# HELP powertrain_serve_requests_total HTTP requests by route, method and status.\n"
        "# TYPE powertrain_serve_requests_total counter\n";
    for (std::size_t r = 0; r < kRoutes.size(); ++r) {
      for (std::size_t m = 0; m < kMethods.size(); ++m) {
        for (std::size_t s = 0; s < kStatuses; ++s) {
          const long long n =
              requests_[(r * kMethods.size() + m) * kStatuses + s].load(std::memory_order_relaxed);
          if (n == 0) continue;
          out += fmt::format(
              "powertrain_serve_requests_total{{route=\"{}\",method=\"{}\",status=\"{}\"}} {}\n",
              kRoutes[r], kMethods[m], s + kMinStatus, n);
        }
      }
    }
    out +=
        "# HELP powertrain_serve_request_duration_seconds Time from request read to response "
        "queued (measured).\n# TYPE powertrain_serve_request_duration_seconds histogram\n";
    for (std::size_t r = 0; r < kRoutes.size(); ++r) {
      const auto& h = latency_[r];
      const long long count = h.count.load(std::memory_order_relaxed);
      if (count == 0) continue;
      const std::string_view route = kRoutes[r];
      for (std::size_t i = 0; i < kBuckets.size(); ++i) {
        out += fmt::format(
            "powertrain_serve_request_duration_seconds_bucket{{route=\"{}\",le=\"{}\"}} {}\n",
            route, kBuckets[i], h.counts[i].load(std::memory_order_relaxed));
      }
      out += fmt::format(
          "powertrain_serve_request_duration_seconds_bucket{{route=\"{}\",le=\"+Inf\"}} {}\n",
          route, count);
      out += fmt::format("powertrain_serve_request_duration_seconds_sum{{route=\"{}\"}} {}\n",
                         route, h.sum.load(std::memory_order_relaxed));
      out += fmt::format("powertrain_serve_request_duration_seconds_count{{route=\"{}\"}} {}\n",
                         route, count);
    }
    out +=
        "# HELP powertrain_serve_jobs Jobs by frontier status.\n# TYPE powertrain_serve_jobs "
        "gauge\n";
    for (const auto& [status, n] : service.job_counts()) {
      out += fmt::format("powertrain_serve_jobs{{status=\"{}\"}} {}\n", status, n);
    }
    out += fmt::format(
        "# HELP powertrain_serve_characterize_queue Profiles waiting for a frontier solve.\n"
        "# TYPE powertrain_serve_characterize_queue gauge\npowertrain_serve_characterize_queue "
        "{}\n# HELP powertrain_serve_in_flight Requests read and not yet answered.\n# TYPE "
        "powertrain_serve_in_flight gauge\npowertrain_serve_in_flight {}\n",
        service.characterize_queue_depth(), in_flight);
    return out;
  }

 private:
  struct Histogram {
    std::array<std::atomic<long long>, kBuckets.size()> counts{};
    std::atomic<long long> count{0};
    std::atomic<double> sum{0.0};
  };
  std::unique_ptr<std::atomic<long long>[]> requests_;
  std::array<Histogram, kRoutes.size()> latency_;
};

}  // namespace

struct Server::Impl {
  Service& service;
  ServerOptions options;
  // One io_context per thread, each run by exactly one thread (concurrency hint 1: no scheduler
  // locking), connections dealt round-robin; a connection's handlers never need a strand.
  std::vector<std::unique_ptr<asio::io_context>> ios;
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> work;
  std::size_t next_io = 0;
  tcp::acceptor acceptor;
  std::vector<std::thread> threads;
  std::atomic<std::size_t> in_flight{0};
  Metrics metrics;
  std::mutex log_mutex;
  // Test hook (Server::hold_requests): requests parked before the service sees them.
  std::atomic<bool> held{false};
  std::mutex hold_mutex;
  std::vector<std::function<void()>> parked;

  static std::vector<std::unique_ptr<asio::io_context>> make_ios(int n) {
    std::vector<std::unique_ptr<asio::io_context>> out;
    for (int i = 0; i < std::max(1, n); ++i) out.push_back(std::make_unique<asio::io_context>(1));
    return out;
  }
  Impl(Service& s, ServerOptions o)
      : service(s), options(std::move(o)), ios(make_ios(options.threads)), acceptor(*ios[0]) {
    for (auto& io : ios) work.push_back(asio::make_work_guard(*io));
  }

  void accept();
  void log(const std::string& method, const std::string& target, const Response& r, double seconds,
           const std::string& remote) {
    if (!options.access_log) return;
    const double now_s =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    nlohmann::json line = {{"ts", now_s},          {"event", "request"}, {"method", method},
                           {"target", target},     {"route", r.route},   {"status", r.status},
                           {"latency_s", seconds}, {"remote", remote}};
    if (!r.job_id.empty()) line["job_id"] = r.job_id;
    if (r.status >= 400 && r.body.size() < 512) line["detail"] = r.body;
    const std::string text = line.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    std::lock_guard lock(log_mutex);
    std::fprintf(stderr, "%s\n", text.c_str());
  }
};

namespace {

class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, Server::Impl& server)
      : stream_(std::move(socket)), server_(server), timer_(stream_.get_executor()) {
    beast::error_code ec;
    auto endpoint = stream_.socket().remote_endpoint(ec);
    if (!ec) remote_ = fmt::format("{}:{}", endpoint.address().to_string(), endpoint.port());
  }
  void start() {
    asio::dispatch(stream_.get_executor(),
                   beast::bind_front_handler(&Session::read, shared_from_this()));
  }

 private:
  void read() {
    parser_.emplace();
    parser_->body_limit(server_.options.max_body_bytes);
    parser_->header_limit(64 * 1024);
    stream_.expires_after(std::chrono::seconds(120));  // idle keep-alive connections close
    http::async_read(stream_, buffer_, *parser_,
                     beast::bind_front_handler(&Session::on_read, shared_from_this()));
  }

  void on_read(beast::error_code ec, std::size_t) {
    if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
        ec == asio::error::connection_reset || ec == asio::error::eof) {
      return close();
    }
    started_ = std::chrono::steady_clock::now();
    if (ec == http::error::body_limit || ec == http::error::header_limit ||
        ec == http::error::buffer_overflow) {
      Response r;
      r.status = 413;
      r.route = "unknown";
      r.body = nlohmann::json({{"detail", fmt::format("request larger than {} bytes",
                                                      server_.options.max_body_bytes)}})
                   .dump();
      keep_alive_ = false;
      ++server_.in_flight;
      return send(std::move(r), "?", "?");
    }
    if (ec) {
      Response r;
      r.status = 400;
      r.route = "unknown";
      r.body = nlohmann::json({{"detail", "malformed HTTP request: " + ec.message()}}).dump();
      keep_alive_ = false;
      ++server_.in_flight;
      return send(std::move(r), "?", "?");
    }
    auto& req = parser_->get();
    keep_alive_ = req.keep_alive();
    method_ = std::string(req.method_string());
    target_ = std::string(req.target());
    const std::size_t pending = ++server_.in_flight;
    if (pending > server_.options.max_pending) {
      Response r;
      r.status = 503;
      r.retry_after_s = 1;
      r.body = R"({"detail":"server busy: too many requests in flight; retry later"})";
      return send(std::move(r), method_, target_);
    }
    const std::string path = target_.substr(0, target_.find('?'));
    if (path != "/health" && !server_.options.bearer_token.empty()) {
      auto auth = req.find(http::field::authorization);
      if (auth == req.end() ||
          !bearer_matches(std::string_view(auth->value().data(), auth->value().size()),
                          server_.options.bearer_token)) {
        Response r;
        r.status = 401;
        r.body = R"({"detail":"missing or wrong bearer token"})";
        return send(std::move(r), method_, target_);
      }
    }
    if (path == "/health") {
      Response r;
      r.route = "/health";
      r.body = R"({"status":"ok"})";
      return send(std::move(r), method_, target_);
    }
    if (path == "/metrics") {
      Response r;
      r.route = "/metrics";
      r.content_type = "text/plain; version=0.0.4";
      r.body = server_.metrics.text(server_.service, server_.in_flight.load());
      return send(std::move(r), method_, target_);
    }
    request_.method = method_;
    request_.target = target_;
    request_.body = std::move(req.body());
    auto ct = req.find(http::field::content_type);
    request_.content_type = ct == req.end() ? "" : std::string(ct->value());
    deadline_ = started_ + std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                               std::chrono::duration<double>(server_.options.schedule_wait_s));
    if (server_.held.load(std::memory_order_acquire)) {
      std::lock_guard lock(server_.hold_mutex);
      if (server_.held.load(std::memory_order_relaxed)) {
        server_.parked.push_back([self = shared_from_this()] {
          asio::post(self->stream_.get_executor(), [self] { self->dispatch(); });
        });
        return;
      }
    }
    dispatch();
  }

  void dispatch() {
    Response r = server_.service.handle(request_);
    if (r.schedule_pending && std::chrono::steady_clock::now() < deadline_) {
      // The Zeus client waits without a timeout for its schedule; poll until one exists.
      timer_.expires_after(std::chrono::milliseconds(50));
      timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
        if (!ec) self->dispatch();
      });
      return;
    }
    send(std::move(r), method_, target_);
  }

  void send(Response r, const std::string& method, const std::string& target) {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    server_.metrics.record(r.route, method, r.status, seconds);
    server_.log(method, target, r, seconds, remote_);
    // One response object per connection, reused rather than allocated per answer.
    response_.clear();
    response_.version(11);
    response_.result(static_cast<unsigned>(r.status));
    response_.set(http::field::server, "powertrain-serve");
    response_.set(http::field::content_type, r.content_type);
    if (r.retry_after_s > 0) {
      response_.set(http::field::retry_after, std::to_string(r.retry_after_s));
    }
    if (r.status == 401) response_.set(http::field::www_authenticate, "Bearer");
    response_.keep_alive(keep_alive_);
    response_.body() = std::move(r.body);
    response_.prepare_payload();
    http::async_write(stream_, response_,
                      beast::bind_front_handler(&Session::on_write, shared_from_this()));
  }

  void on_write(beast::error_code ec, std::size_t) {
    --server_.in_flight;
    if (ec || !keep_alive_) return close();
    read();
  }

  void close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
  }

  beast::tcp_stream stream_;
  Server::Impl& server_;
  asio::steady_timer timer_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::response<http::string_body> response_;
  Request request_;
  std::string method_, target_, remote_;
  bool keep_alive_ = true;
  std::chrono::steady_clock::time_point started_, deadline_;
};

}  // namespace

void Server::Impl::accept() {
  asio::io_context& io = *ios[next_io++ % ios.size()];  // only the acceptor's thread runs this
  acceptor.async_accept(io, [this](beast::error_code ec, tcp::socket socket) {
    if (ec == asio::error::operation_aborted) return;
    if (!ec) std::make_shared<Session>(std::move(socket), *this)->start();
    if (acceptor.is_open()) accept();
  });
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Server::~Server() {
  stop();
  for (auto& t : impl_->threads) {
    if (t.joinable()) t.join();
  }
}

core::Result<std::unique_ptr<Server>> Server::start(Service& service, ServerOptions options) {
  auto impl = std::make_unique<Impl>(service, options);
  beast::error_code ec;
  const auto address = asio::ip::make_address(options.address, ec);
  if (ec) return core::Error{fmt::format("--listen: bad address '{}'", options.address)};
  tcp::endpoint endpoint(address, options.port);
  auto fail = [&](const char* what) {
    return core::Error{fmt::format("--listen {}:{}: cannot {}: {}", options.address, options.port,
                                   what, ec.message())};
  };
  impl->acceptor.open(endpoint.protocol(), ec);
  if (ec) return fail("open a socket");
  impl->acceptor.set_option(asio::socket_base::reuse_address(true), ec);
  impl->acceptor.bind(endpoint, ec);
  if (ec) return fail("bind");
  impl->acceptor.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return fail("listen");
  impl->accept();
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

unsigned short Server::port() const { return impl_->acceptor.local_endpoint().port(); }

void Server::run() {
  for (std::size_t i = 1; i < impl_->ios.size(); ++i) {
    impl_->threads.emplace_back([this, i] { impl_->ios[i]->run(); });
  }
  impl_->ios[0]->run();
  for (auto& t : impl_->threads) {
    if (t.joinable()) t.join();
  }
}

void Server::stop() {
  asio::post(*impl_->ios[0], [this] {
    beast::error_code ec;
    impl_->acceptor.close(ec);
  });
  for (auto& io : impl_->ios) io->stop();
}

std::size_t Server::in_flight() const { return impl_->in_flight.load(); }

void Server::hold_requests(bool hold) {
  std::vector<std::function<void()>> resume;
  {
    std::lock_guard lock(impl_->hold_mutex);
    impl_->held.store(hold, std::memory_order_release);
    if (!hold) resume.swap(impl_->parked);
  }
  for (auto& f : resume) f();
}

std::size_t Server::held_requests() const {
  std::lock_guard lock(impl_->hold_mutex);
  return impl_->parked.size();
}

std::string Server::metrics_text() const {
  return impl_->metrics.text(impl_->service, impl_->in_flight.load());
}

}  // namespace powertrain::serve
