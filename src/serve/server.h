// HTTP/1.1 front of the plan server: Boost.Beast over Boost.Asio, one io_context per worker thread
// (connections dealt round-robin), keep-alive, request size limit (413), bearer token (401),
// bounded in-flight requests (503 + Retry-After), /health, Prometheus /metrics and one JSON log
// line per request.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "core/result.h"
#include "serve/service.h"

namespace powertrain::serve {

struct ServerOptions {
  std::string address = "127.0.0.1";
  unsigned short port = 0;  // 0: any free port (see Server::port())
  int threads = 2;
  std::size_t max_body_bytes = 16u << 20;
  std::size_t max_pending = 4096;  // requests read but not yet answered; more → 503
  std::string bearer_token;        // empty: no authentication
  double schedule_wait_s = 30.0;   // /schedule waits this long for a first schedule, then 503
  bool access_log = true;          // one JSON line per request on stderr
};

class Server {
 public:
  /// Binds and listens; errors name the address.
  static core::Result<std::unique_ptr<Server>> start(Service& service, ServerOptions options);
  ~Server();
  unsigned short port() const;
  /// Runs the threads until stop() (from a signal handler thread or another thread).
  void run();
  void stop();
  /// Requests read and not yet answered (the count --max-pending bounds).
  std::size_t in_flight() const;
  /// Test hook: while held, requests that passed the limits wait before the service sees them
  /// (holding their in-flight slot); releasing hands them on in arrival order. Lets tests reach
  /// the 503 path without relying on timing.
  void hold_requests(bool hold);
  std::size_t held_requests() const;
  /// Prometheus text exposition of the counters (also served at /metrics).
  std::string metrics_text() const;

  struct Impl;

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

/// Constant-time comparison of the Authorization header against "Bearer <token>".
bool bearer_matches(std::string_view header, std::string_view token);

}  // namespace powertrain::serve
