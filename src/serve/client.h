// A minimal blocking HTTP/1.1 client over POSIX sockets (keep-alive, Content-Length bodies) for
// the server's tests, its crash test and the bench; not a general client.
#pragma once

#include <map>
#include <string>

#include "core/result.h"

namespace powertrain::serve {

struct HttpReply {
  int status = 0;
  std::string body;
  std::map<std::string, std::string> headers;  // lower-case names
};

class HttpConnection {
 public:
  HttpConnection(std::string host, unsigned short port) : host_(std::move(host)), port_(port) {}
  ~HttpConnection();
  HttpConnection(const HttpConnection&) = delete;
  HttpConnection& operator=(const HttpConnection&) = delete;

  /// Sends one request (connecting first if needed) and reads the reply. On a broken keep-alive
  /// connection it reconnects once. Errors: connect/send/receive failures, malformed replies.
  core::Result<HttpReply> request(const std::string& method, const std::string& target,
                                  const std::string& body = "",
                                  const std::string& content_type = "application/json",
                                  const std::string& bearer_token = "");
  void close();

 private:
  core::Status connect();
  core::Result<HttpReply> exchange(const std::string& wire);
  std::string host_;
  unsigned short port_;
  int fd_ = -1;
  std::string buffer_;
};

}  // namespace powertrain::serve
