// Load test of the plan server: N concurrent keep-alive clients (default 1,024) polling
// GET /schedule on loopback for a fixed time; prints measured requests/s and latency percentiles.
// The server runs in this process (its --threads workers); the clients are one epoll loop.
//   serve_bench [clients=1024] [seconds=10] [server_threads=2] [rate=0]
// rate 0: closed loop (each client sends its next request as soon as the answer arrives; the mean
// latency is then clients / throughput by Little's law). rate R > 0: open loop at R requests/s
// offered in total, the clients taking turns (each polls every clients/R s); latency counts from
// the scheduled send time, so a late server is not hidden by the client waiting for it.
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
#include <deque>
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
  Clock::time_point sent;  // when the request was (or was due to be) sent
  bool busy = false;
  std::deque<Clock::time_point> due;  // paced sends that fell due while busy
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
  const double rate = argc > 4 ? std::atof(argv[4]) : 0.0;
  if (clients < 1 || clients > 100'000 || !(seconds > 0.0) || threads < 1 || threads > 256 ||
      !(rate >= 0.0)) {
    fmt::print(stderr,
               "usage: serve_bench [CLIENTS 1..100000 = 1024] [SECONDS > 0 = 10] [THREADS 1..256 "
               "= 2] [RATE req/s, 0 = closed loop]\n");
    return 2;
  }
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
  const std::string registered = setup.request("POST", "/register_job", job.dump())->body;
  const nlohmann::json registered_json = nlohmann::json::parse(registered, nullptr, false);
  if (!registered_json.is_string()) {
    fmt::print(stderr, "serve_bench: POST /register_job answered {}\n", registered);
    (*server)->stop();
    server_thread.join();
    return 1;
  }
  const std::string id = registered_json.get<std::string>();
  for (int rank = 0; rank < 16; ++rank) {
    nlohmann::json r = {{"rank", rank},
                        {"dp_rank", rank / 8},
                        {"pp_rank", (rank / 2) % 4},
                        {"tp_rank", rank % 2},
                        {"available_frequencies", {1410}}};
    (void)setup.request("POST", "/register_rank/" + id, r.dump());
  }
  nlohmann::json profile = {{"csv", powertrain::profile::example_profile_csv()},
                            {"microbatches", 8},
                            {"p_blocking_w", 120.0}};
  (void)setup.request("POST", "/profile/" + id, profile.dump());
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
  const bool paced = rate > 0.0;
  const auto slot = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(paced ? 1.0 / rate : 0.0));
  std::size_t next_conn = 0;
  Clock::time_point next_time = start;
  if (!paced) {
    for (auto& c : conns) send_request(c);
  }
  std::vector<epoll_event> events(1024);
  char chunk[65536];
  while (Clock::now() < stop) {
    timespec timeout{0, 100'000'000};
    if (paced) {
      // Send everything that fell due; a busy connection sends on its answer.
      const auto now = Clock::now();
      while (next_time <= now) {
        Conn& c = conns[next_conn];
        if (c.busy) {
          c.due.push_back(next_time);
        } else {
          send_request(c);
          c.sent = next_time;
          c.busy = true;
        }
        next_conn = (next_conn + 1) % conns.size();
        next_time += slot;
      }
      const auto wait = std::chrono::duration_cast<std::chrono::nanoseconds>(next_time - now);
      timeout = {static_cast<time_t>(wait.count() / 1'000'000'000),
                 static_cast<long>(wait.count() % 1'000'000'000)};
    }
    const int n =
        ::epoll_pwait2(ep, events.data(), static_cast<int>(events.size()), &timeout, nullptr);
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
        if (!paced) {
          send_request(c);
        } else if (!c.due.empty()) {
          send_request(c);
          c.sent = c.due.front();
          c.due.pop_front();
        } else {
          c.busy = false;
        }
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
  double load[3] = {0, 0, 0};
  ::getloadavg(load, 3);
  fmt::print(
      "serve_bench: {} keep-alive clients, {} server thread(s), {}, {:.1f} s: {} responses ({} "
      "non-200), {:.0f} req/s answered, latency p50 {:.3f} ms, p99 {:.3f} ms, p99.9 {:.3f} ms, "
      "max {:.2f} ms (measured, loopback; load average {:.2f})\n",
      clients, threads,
      paced ? fmt::format("open loop at {:.0f} req/s offered", rate) : std::string("closed loop"),
      elapsed, latencies.size(), errors, latencies.size() / elapsed, pct(0.50) * 1e3,
      pct(0.99) * 1e3, pct(0.999) * 1e3, latencies.empty() ? 0.0 : latencies.back() * 1e3, load[0]);
  for (auto& c : conns) ::close(c.fd);
  (*server)->stop();
  server_thread.join();
  return errors == 0 ? 0 : 1;
}
