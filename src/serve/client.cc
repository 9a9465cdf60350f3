#include "serve/client.h"

#include <arpa/inet.h>
#include <fmt/core.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace powertrain::serve {

HttpConnection::~HttpConnection() { close(); }

void HttpConnection::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  buffer_.clear();
}

core::Status HttpConnection::connect() {
  close();
  fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd_ < 0) return core::Error{fmt::format("socket: {}", std::strerror(errno))};
  int one = 1;
  ::setsockopt(fd_, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  timeval timeout{60, 0};  // a hung server fails the caller instead of blocking it forever
  ::setsockopt(fd_, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof timeout);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port_);
  if (::inet_pton(AF_INET, host_.c_str(), &addr.sin_addr) != 1) {
    close();
    return core::Error{fmt::format("bad IPv4 address '{}'", host_)};
  }
  if (::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    const int e = errno;
    close();
    return core::Error{fmt::format("connect {}:{}: {}", host_, port_, std::strerror(e))};
  }
  return core::Ok{};
}

core::Result<HttpReply> HttpConnection::request(const std::string& method,
                                                const std::string& target, const std::string& body,
                                                const std::string& content_type,
                                                const std::string& bearer_token) {
  std::string wire = fmt::format("{} {} HTTP/1.1\r\nHost: {}:{}\r\nContent-Length: {}\r\n", method,
                                 target, host_, port_, body.size());
  if (!body.empty()) wire += fmt::format("Content-Type: {}\r\n", content_type);
  if (!bearer_token.empty()) wire += fmt::format("Authorization: Bearer {}\r\n", bearer_token);
  wire += "\r\n";
  wire += body;
  const bool reused = fd_ >= 0;
  auto reply = exchange(wire);
  if (!reply && reused) reply = exchange(wire);  // the server closed an idle connection
  return reply;
}

core::Result<HttpReply> HttpConnection::exchange(const std::string& wire) {
  if (fd_ < 0) {
    if (auto ok = connect(); !ok) return ok.error();
  }
  for (std::size_t sent = 0; sent < wire.size();) {
    const ssize_t n = ::send(fd_, wire.data() + sent, wire.size() - sent, MSG_NOSIGNAL);
    if (n <= 0) {
      const int e = errno;
      close();
      return core::Error{fmt::format("send: {}", std::strerror(e))};
    }
    sent += static_cast<std::size_t>(n);
  }
  auto fill = [&]() -> bool {
    char chunk[16384];
    const ssize_t n = ::recv(fd_, chunk, sizeof chunk, 0);
    if (n <= 0) return false;
    buffer_.append(chunk, static_cast<std::size_t>(n));
    return true;
  };
  std::size_t header_end;
  while ((header_end = buffer_.find("\r\n\r\n")) == std::string::npos) {
    if (!fill()) {
      close();
      return core::Error{"connection closed before a reply"};
    }
  }
  HttpReply reply;
  const std::string head = buffer_.substr(0, header_end);
  if (head.size() < 12 || head.compare(0, 5, "HTTP/") != 0) {
    close();
    return core::Error{"malformed status line"};
  }
  reply.status = std::atoi(head.c_str() + head.find(' ') + 1);
  std::size_t pos = head.find("\r\n");
  while (pos != std::string::npos && pos < head.size()) {
    const std::size_t next = head.find("\r\n", pos + 2);
    const std::string line =
        head.substr(pos + 2, next == std::string::npos ? std::string::npos : next - pos - 2);
    const std::size_t colon = line.find(':');
    if (colon != std::string::npos) {
      std::string name = line.substr(0, colon);
      for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      std::size_t v = colon + 1;
      while (v < line.size() && line[v] == ' ') ++v;
      reply.headers[name] = line.substr(v);
    }
    pos = next;
  }
  const std::size_t length =
      reply.headers.count("content-length") ? std::stoul(reply.headers["content-length"]) : 0;
  while (buffer_.size() < header_end + 4 + length) {
    if (!fill()) {
      close();
      return core::Error{"connection closed inside a reply body"};
    }
  }
  reply.body = buffer_.substr(header_end + 4, length);
  buffer_.erase(0, header_end + 4 + length);
  if (reply.headers.count("connection") && reply.headers["connection"] == "close") close();
  return reply;
}

}  // namespace powertrain::serve
