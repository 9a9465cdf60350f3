// Load test of the plan server: N concurrent keep-alive clients (default 1,024) polling
// GET /schedule on loopback for a fixed time; prints measured requests/s and latency percentiles.
// The server runs in this process (its --threads workers); the clients are one epoll loop.
//   serve_bench [clients=1024] [seconds=10] [server_threads=2]
#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/core.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "profile/example_profile.h"
#include "serve/client.h"
#include "serve/server.h"

using namespace powertrain::serve;
using Clock = std::chrono::steady_clock;

namespace {

struct Conn {
  int fd = -1;
  std::string request;
  std::string buffer;
  Clock::time_point sent;
};

void send_request(Conn& c) {
  c.sent = Clock::now();
  const ssize_t n = ::send(c.fd, c.request.data(), c.request.size(), MSG_NOSIGNAL);
  if (n != static_cast<ssize_t>(c.request.size())) {
    fmt::print(stderr, "send failed\n");
    std::exit(1);
  }
}

// Returns true when the buffer holds a whole response (removed from it); status in `status`.
bool take_response(std::string& buffer, int& status) {
  const std::size_t end = buffer.find("\r\n\r\n");
  if (end == std::string::npos) return false;
  const std::size_t cl = buffer.find("Content-Length: ");
  if (cl == std::string::npos || cl > end) return false;
  const std::size_t length = std::strtoul(buffer.c_str() + cl + 16, nullptr, 10);
  if (buffer.size() < end + 4 + length) return false;
  status = std::atoi(buffer.c_str() + 9);
  buffer.erase(0, end + 4 + length);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const int clients = argc > 1 ? std::atoi(argv[1]) : 1024;
  const double seconds = argc > 2 ? std::atof(argv[2]) : 10.0;
  const int threads = argc > 3 ? std::atoi(argv[3]) : 2;
  rlimit limit{};
  ::getrlimit(RLIMIT_NOFILE, &limit);
  limit.rlim_cur = limit.rlim_max;
  ::setrlimit(RLIMIT_NOFILE, &limit);

  auto store = Store::open(":memory:");
  auto service = Service::create(std::move(*store), {});
  ServerOptions options;
  options.threads = threads;
  options.access_log = false;
  options.max_pending = static_cast<std::size_t>(clients) * 2;
  auto server = Server::start(**service, options);
  if (!server) {
    fmt::print(stderr, "{}\n", server.error().message);
    return 1;
  }
  std::thread server_thread([&] { (*server)->run(); });
  const unsigned short port = (*server)->port();

  // A dp 2 × pp 4 × tp 2 job with the example profile's frontier.
  HttpConnection setup("127.0.0.1", port);
  nlohmann::json job = {
      {"job_id", ""}, {"pp_degree", 4}, {"dp_degree", 2}, {"tp_degree", 2}, {"world_size", 16}};
  const std::string id =
      nlohmann::json::parse(setup.request("POST", "/register_job", job.dump())->body);
  for (int rank = 0; rank < 16; ++rank) {
    nlohmann::json r = {{"rank", rank},
                        {"dp_rank", rank / 8},
                        {"pp_rank", (rank / 2) % 4},
                        {"tp_rank", rank % 2},
                        {"available_frequencies", {1410}}};
    setup.request("POST", "/register_rank/" + id, r.dump());
  }
  nlohmann::json profile = {{"csv", powertrain::profile::example_profile_csv()},
                            {"microbatches", 8},
                            {"p_blocking_w", 120.0}};
  setup.request("POST", "/profile/" + id, profile.dump());
  service->get()->wait_idle();

  std::string encoded;
  for (char ch : id) encoded += ch == '+' ? std::string("%2B") : std::string(1, ch);
  const int ep = ::epoll_create1(0);
  std::vector<Conn> conns(static_cast<std::size_t>(clients));
  for (int i = 0; i < clients; ++i) {
    Conn& c = conns[static_cast<std::size_t>(i)];
    c.fd = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(c.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(port);
    ::inet_pton(AF_INET, "127.0.0.1", &addr.sin_addr);
    if (::connect(c.fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      fmt::print(stderr, "connect {} failed\n", i);
      return 1;
    }
    c.request = fmt::format("GET /schedule/{}?rank={} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", encoded,
                            i % 16);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u32 = static_cast<std::uint32_t>(i);
    ::epoll_ctl(ep, EPOLL_CTL_ADD, c.fd, &ev);
  }
  std::vector<double> latencies;
  latencies.reserve(1 << 22);
  long long errors = 0;
  const auto start = Clock::now();
  const auto stop =
      start + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
  for (auto& c : conns) send_request(c);
  std::vector<epoll_event> events(1024);
  char chunk[65536];
  while (Clock::now() < stop) {
    const int n = ::epoll_wait(ep, events.data(), static_cast<int>(events.size()), 100);
    for (int e = 0; e < n; ++e) {
      Conn& c = conns[events[e].data.u32];
      const ssize_t got = ::recv(c.fd, chunk, sizeof chunk, 0);
      if (got <= 0) {
        fmt::print(stderr, "connection closed by the server\n");
        return 1;
      }
      c.buffer.append(chunk, static_cast<std::size_t>(got));
      int status = 0;
      while (take_response(c.buffer, status)) {
        latencies.push_back(std::chrono::duration<double>(Clock::now() - c.sent).count());
        if (status != 200) ++errors;
        send_request(c);
      }
    }
  }
  const double elapsed = std::chrono::duration<double>(Clock::now() - start).count();
  std::sort(latencies.begin(), latencies.end());
  auto pct = [&](double p) {
    return latencies.empty() ? 0.0
                             : latencies[std::min(latencies.size() - 1,
                                                  static_cast<std::size_t>(p * latencies.size()))];
  };
  fmt::print(
      "serve_bench: {} keep-alive clients, {} server thread(s), {:.1f} s: {} responses ({} "
      "non-200), "
      "{:.0f} req/s, latency p50 {:.2f} ms, p99 {:.2f} ms, max {:.2f} ms (measured, loopback)\n",
      clients, threads, elapsed, latencies.size(), errors, latencies.size() / elapsed,
      pct(0.50) * 1e3, pct(0.99) * 1e3, latencies.empty() ? 0.0 : latencies.back() * 1e3);
  for (auto& c : conns) ::close(c.fd);
  (*server)->stop();
  server_thread.join();
  return errors == 0 ? 0 : 1;
}
