// A small blocking HTTP/1.1 JSON client (Boost.Beast) for the plan server. Meant for a worker
// thread: each request runs its own I/O loop on the calling thread, with a timeout, and cancel()
// from any other thread aborts it (so a client can shut down while a long schedule poll waits).
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "core/result.h"

namespace powertrain::client {

/// "http://host:port[/prefix]" split up. Only plain http (the plan server runs inside the cluster).
struct Url {
  std::string host;
  std::string port = "80";
  std::string prefix;  // path prefix without a trailing '/', e.g. "" or "/pfo"
};

/// Errors: "server URL 'x': expected http://host[:port][/prefix]" and the like.
core::Result<Url> parse_url(const std::string& text);

struct HttpResponse {
  int status = 0;
  std::string body;
};

class HttpClient {
 public:
  explicit HttpClient(Url url);
  ~HttpClient();

  /// Sends `method target` (target is appended to the URL prefix) with a JSON body (may be empty)
  /// and waits for the whole response, at most `timeout_s` seconds per phase (connect, write,
  /// read). Errors: connection, timeout, cancelled; any HTTP status is a response, not an error.
  core::Result<HttpResponse> request(const std::string& method, const std::string& target,
                                     const std::string& body, double timeout_s);

  /// Aborts the request in progress and every later one. Thread-safe.
  void cancel();

 private:
  struct Impl;
  Url url_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace powertrain::client
