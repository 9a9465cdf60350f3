// `powertrain serve`: the persistent plan server (Zeus PFO routes plus online characterization and
// straggler plan switches), state in SQLite. See docs/serve.md.
#include <fmt/core.h>
#include <signal.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <thread>

#include "cli/commands.h"
#include "cli/flags.h"
#include "serve/server.h"
#include "serve/service.h"
#include "serve/store.h"

namespace powertrain::cli {
namespace {

struct ServeFlags {
  std::string listen = "127.0.0.1:7787";
  std::string db;
  std::string token_file;
  int threads = 2;
  double max_body_mb = 16.0;
  long long max_pending = 4096;
  long long max_characterize_queue = 64;
  double schedule_wait_s = 30.0;
  bool no_access_log = false;
};

int run_serve(const ServeFlags& flags) {
  const char* kCommand = "serve";
  serve::ServerOptions options;
  const std::size_t colon = flags.listen.rfind(':');
  if (colon == std::string::npos || colon == 0) {
    return usage_error(kCommand,
                       fmt::format("--listen: expected ADDRESS:PORT, got '{}'", flags.listen));
  }
  options.address = flags.listen.substr(0, colon);
  const std::string port_text = flags.listen.substr(colon + 1);
  if (port_text.empty() || port_text.size() > 5 ||
      port_text.find_first_not_of("0123456789") != std::string::npos ||
      std::stoi(port_text) > 65535) {
    return usage_error(kCommand,
                       fmt::format("--listen: port must be 0 to 65535, got '{}'", port_text));
  }
  options.port = static_cast<unsigned short>(std::stoi(port_text));
  options.threads = flags.threads;
  options.max_body_bytes = static_cast<std::size_t>(flags.max_body_mb * 1024 * 1024);
  options.max_pending = static_cast<std::size_t>(flags.max_pending);
  options.schedule_wait_s = flags.schedule_wait_s;
  options.access_log = !flags.no_access_log;
  if (!flags.token_file.empty()) {
    std::ifstream in(flags.token_file);
    if (!in) return fail(kCommand, fmt::format("{}: cannot read the token file", flags.token_file));
    std::stringstream text;
    text << in.rdbuf();
    std::string token = text.str();
    while (!token.empty() && (token.back() == '\n' || token.back() == '\r' || token.back() == ' '))
      token.pop_back();
    if (token.empty())
      return fail(kCommand, fmt::format("{}: token file is empty", flags.token_file));
    options.bearer_token = token;
  }
  const bool loopback =
      options.address == "127.0.0.1" || options.address == "::1" || options.address == "localhost";
  if (!loopback && options.bearer_token.empty()) {
    fmt::print(stderr,
               "warning: listening on {} without --token-file: anyone who can reach it can "
               "change the clocks of every registered job\n",
               options.address);
  }

  // Block the stop signals in every thread; one thread waits for them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto store = serve::Store::open(flags.db);
  if (!store) return fail(kCommand, store.error().message);
  serve::ServiceOptions service_options;
  service_options.max_characterize_queue = static_cast<std::size_t>(flags.max_characterize_queue);
  auto service = serve::Service::create(std::move(*store), service_options);
  if (!service) return fail(kCommand, service.error().message);
  auto server = serve::Server::start(**service, options);
  if (!server) return fail(kCommand, server.error().message);
  fmt::print("powertrain serve: listening on http://{}:{} (database {}, {} thread(s){})\n",
             options.address, (*server)->port(), flags.db, options.threads,
             options.bearer_token.empty() ? "" : ", bearer token required");
  std::fflush(stdout);
  std::thread waiter([&signals, s = server->get()] {
    int sig = 0;
    sigwait(&signals, &sig);
    s->stop();
  });
  (*server)->run();
  // run() returned after a signal; the waiter has finished.
  waiter.join();
  fmt::print(stderr, "powertrain serve: stopped\n");
  return 0;
}

}  // namespace

Action add_serve_command(CLI::App& app) {
  auto flags = std::make_shared<ServeFlags>();
  app.add_option("--listen", flags->listen,
                 "ADDRESS:PORT to listen on (default 127.0.0.1:7787; port 0 picks a free one)");
  app.add_option("--db", flags->db, "SQLite database file holding every job (created if absent)")
      ->required();
  app.add_option("--token-file", flags->token_file,
                 "file holding a bearer token every request but /health must carry");
  app.add_option("--threads", flags->threads, "HTTP worker threads")->check(integer_in(1, 256));
  app.add_option("--max-body-mb", flags->max_body_mb, "largest request body in MiB (else 413)")
      ->check(number_in(0.0, 1024.0, true));
  app.add_option("--max-pending", flags->max_pending,
                 "requests in flight before new ones get 503 + Retry-After")
      ->check(integer_in(1, 1 << 20));
  app.add_option("--max-characterize-queue", flags->max_characterize_queue,
                 "profiles waiting for a frontier solve before POST /profile gets 503")
      ->check(integer_in(1, 1 << 16));
  app.add_option("--schedule-wait-s", flags->schedule_wait_s,
                 "how long GET /schedule waits for a job's first schedule before 503 (s)")
      ->check(number_in(0.0, 3600.0));
  app.add_flag("--no-access-log", flags->no_access_log,
               "do not write one JSON line per request to stderr");
  return [flags] { return run_serve(*flags); };
}

}  // namespace powertrain::cli
