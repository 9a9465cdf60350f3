// A tiny HTTP/1.1 server for client tests: loopback only, one thread, one request per connection
// (Connection: close), bounded request size, stopped by the destructor. Answers through a handler
// and records every request.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace powertrain::testing_client {

struct StubRequest {
  std::string method;
  std::string target;
  std::string body;
};

struct StubResponse {
  int status = 200;
  std::string body = "null";
};

class StubServer {
 public:
  using Handler = std::function<StubResponse(const StubRequest&)>;

  explicit StubServer(Handler handler) : handler_(std::move(handler)) {
    listen_fd_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    ::bind(listen_fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr));
    ::listen(listen_fd_, 16);
    socklen_t len = sizeof(addr);
    ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] { serve(); });
  }

  ~StubServer() {
    stop_ = true;
    thread_.join();
    ::close(listen_fd_);
  }

  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  std::vector<StubRequest> requests() const {
    std::lock_guard lock(mutex_);
    return requests_;
  }

  /// Requests whose target starts with `prefix`.
  std::vector<StubRequest> requests_to(const std::string& prefix) const {
    std::vector<StubRequest> out;
    for (const auto& r : requests())
      if (r.target.rfind(prefix, 0) == 0) out.push_back(r);
    return out;
  }

 private:
  void serve() {
    while (!stop_) {
      pollfd p{listen_fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      const int fd = ::accept(listen_fd_, nullptr, nullptr);
      if (fd < 0) continue;
      handle(fd);
      ::close(fd);
    }
  }

  void handle(int fd) {
    std::string data;
    char buffer[4096];
    std::size_t header_end = std::string::npos;
    std::size_t content_length = 0;
    while (data.size() < (1u << 20) && !stop_) {  // bounded: 1 MiB per request
      pollfd p{fd, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      const ssize_t n = ::read(fd, buffer, sizeof(buffer));
      if (n <= 0) return;
      data.append(buffer, static_cast<std::size_t>(n));
      if (header_end == std::string::npos) {
        header_end = data.find("\r\n\r\n");
        if (header_end == std::string::npos) continue;
        std::string lower = data.substr(0, header_end);
        for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        if (auto at = lower.find("content-length:"); at != std::string::npos)
          content_length = std::stoul(lower.substr(at + 15));
      }
      if (data.size() >= header_end + 4 + content_length) break;
    }
    if (header_end == std::string::npos) return;
    StubRequest request;
    const std::string first_line = data.substr(0, data.find("\r\n"));
    const std::size_t space1 = first_line.find(' ');
    const std::size_t space2 = first_line.find(' ', space1 + 1);
    request.method = first_line.substr(0, space1);
    request.target = first_line.substr(space1 + 1, space2 - space1 - 1);
    request.body = data.substr(header_end + 4, content_length);
    {
      std::lock_guard lock(mutex_);
      requests_.push_back(request);
    }
    const StubResponse response = handler_(request);
    const std::string reply = "HTTP/1.1 " + std::to_string(response.status) +
                              " X\r\nContent-Type: application/json\r\nContent-Length: " +
                              std::to_string(response.body.size()) +
                              "\r\nConnection: close\r\n\r\n" + response.body;
    std::size_t sent = 0;
    while (sent < reply.size()) {
      const ssize_t n = ::write(fd, reply.data() + sent, reply.size() - sent);
      if (n <= 0) return;
      sent += static_cast<std::size_t>(n);
    }
  }

  Handler handler_;
  int listen_fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  mutable std::mutex mutex_;
  std::vector<StubRequest> requests_;
};

}  // namespace powertrain::testing_client
