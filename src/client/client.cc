// Two worker threads per client: the clock thread applies clocks and reads energy (NVML calls can
// take a millisecond and must not stall the training thread), the network thread talks to the
// plan server. The training thread only takes a mutex briefly and pushes to a queue.
#include "client/client.h"

#include <fmt/core.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "client/http.h"
#include "nvml/nvml.h"

namespace powertrain::client {
namespace {

using SteadyClock = std::chrono::steady_clock;

long current_thread_id() { return static_cast<long>(::syscall(SYS_gettid)); }

double seconds(SteadyClock::duration d) { return std::chrono::duration<double>(d).count(); }

struct ClockTask {
  enum class Kind {
    kSetClock,
    kStepBegin,
    kStepEnd,
    kInstructionBegin,
    kInstructionEnd,
    kPBlockingBegin,
    kPBlockingEnd
  };
  Kind kind;
  int mhz = 0;
  std::string name;
  SteadyClock::time_point when;
  // kStepBegin: the step runs under a profiling directive; sweep_mhz > 0 when this rank reports
  // the step as a swept iteration at that clock.
  bool profiling = false;
  int sweep_mhz = 0;
  int iterations_per_clock = 0;
};

// The in-vivo profiling loop as this client sees it (docs/client.md).
enum class Loop { kOff, kWaiting, kPBlocking, kSweep, kCharacterizing, kPlanned };

const char* loop_name(Loop loop) {
  switch (loop) {
    case Loop::kOff:
      return "off";
    case Loop::kWaiting:
      return "waiting";
    case Loop::kPBlocking:
      return "p_blocking";
    case Loop::kSweep:
      return "sweep";
    case Loop::kCharacterizing:
      return "characterizing";
    case Loop::kPlanned:
      return "planned";
  }
  return "off";
}

// Serialized once per process: several clients must not repeat the same line.
void print_nvml_message_once(const std::string& message) {
  static std::atomic<bool> printed{false};
  if (!printed.exchange(true)) fmt::print(stderr, "powertrain: {}\n", message);
}

}  // namespace

struct Client::State {
  ClientOptions options;
  std::shared_ptr<nvml::Nvml> nvml;
  std::string nvml_message;
  enum class EnergySource { kNone, kCounter, kPowerSampling } energy_source = EnergySource::kNone;
  std::unique_ptr<HttpClient> http;

  // Shared state, guarded by `mutex` (never held across I/O).
  mutable std::mutex mutex;
  mutable std::condition_variable changed;
  std::string job_id;
  bool job_registered = false;
  bool schedule_received = false;
  std::optional<Schedule> pending_schedule;
  std::optional<ProfilingDirective> pending_directive;  // arrives with pending_schedule
  Loop loop = Loop::kOff;
  long long profiling_results_posted = 0;
  long long stale_results = 0;
  long long sweep_iterations_skipped = 0;
  long long apportioned_iterations = 0;
  int profiling_clock_mhz = 0;
  std::atomic<bool> fetch_queued{false};  // a coalesced schedule fetch is waiting in the queue
  std::atomic<bool> poll_queued{false};   // a GET /job poll is waiting or running
  std::atomic<bool> p_blocking_done{false};
  std::atomic<bool> p_blocking_in_flight{false};
  std::vector<AppliedClock> applied;
  std::vector<IterationMeasurement> iterations;
  ProfilingResult pending_result;
  long long results_posted = 0;
  long long network_errors = 0;
  long long clock_errors = 0;
  std::string last_error;

  // Training-thread state (only the caller's thread touches it; read by schedule() under mutex).
  Schedule active;
  bool has_active = false;
  std::size_t cursor = 0;
  int last_queued_mhz = -1;
  int steps_since_refresh = 0;
  std::optional<ProfilingDirective> active_directive;
  bool p_blocking_open = false;
  SteadyClock::time_point last_poll;

  // Clock thread.
  std::mutex clock_mutex;
  std::condition_variable clock_cv;
  std::deque<ClockTask> clock_queue;
  bool clock_busy = false;
  bool stopping = false;
  std::atomic<long> clock_tid{0};
  std::thread clock_thread;

  // Clock-thread-only measurement state.
  double sampled_energy_j = 0.0;
  double last_power_w = -1.0;
  SteadyClock::time_point last_sample;
  SteadyClock::time_point step_start;
  double step_start_energy_j = -1.0;
  std::map<std::string, std::pair<SteadyClock::time_point, double>> open_instructions;
  std::map<std::string, std::vector<double>> step_time_breakdown, step_energy_breakdown;
  bool step_profiling = false;
  int step_sweep_mhz = 0, step_iterations_per_clock = 0;
  std::map<int, int> sweep_posts;  // swept iterations posted per clock
  SteadyClock::time_point p_blocking_start;
  double p_blocking_start_energy_j = -1.0;

  // Network thread.
  std::mutex net_mutex;
  std::condition_variable net_cv;
  std::deque<std::function<void()>> net_queue;
  bool net_busy = false;
  bool net_stopping = false;
  std::thread net_thread;

  void record_error(const std::string& message, long long& counter) {
    std::lock_guard lock(mutex);
    ++counter;
    last_error = message;
  }

  // --- clock thread ---------------------------------------------------------------------------
  // The GPU energy so far (J), < 0 when unknown.
  double read_energy_j() {
    if (energy_source == EnergySource::kCounter) {
      auto mj = nvml->total_energy_mj(options.device_id);
      if (mj) return static_cast<double>(*mj) / 1000.0;
      record_error(mj.error().message, clock_errors);
      return -1.0;
    }
    if (energy_source == EnergySource::kPowerSampling) {
      sample_power();
      return sampled_energy_j;
    }
    return -1.0;
  }

  // Trapezoid rule over power samples taken every power_sample_period_s and at every marker.
  void sample_power() {
    auto mw = nvml->power_mw(options.device_id);
    const auto now = SteadyClock::now();
    if (!mw) {
      record_error(mw.error().message, clock_errors);
      return;
    }
    const double power_w = *mw / 1000.0;
    if (last_power_w >= 0.0)
      sampled_energy_j += 0.5 * (power_w + last_power_w) * seconds(now - last_sample);
    last_power_w = power_w;
    last_sample = now;
  }

  void handle(const ClockTask& task) {
    switch (task.kind) {
      case ClockTask::Kind::kSetClock: {
        auto set = nvml->set_locked_clocks_mhz(options.device_id, task.mhz, task.mhz);
        if (!set) {
          record_error(set.error().message, clock_errors);
        } else {
          std::lock_guard lock(mutex);
          applied.push_back({task.mhz, current_thread_id()});
        }
        break;
      }
      case ClockTask::Kind::kStepBegin:
        step_profiling = task.profiling;
        step_sweep_mhz = task.sweep_mhz;
        step_iterations_per_clock = task.iterations_per_clock;
        step_start = task.when;
        step_start_energy_j = read_energy_j();
        open_instructions.clear();
        step_time_breakdown.clear();
        step_energy_breakdown.clear();
        break;
      case ClockTask::Kind::kInstructionBegin:
        open_instructions[task.name] = {task.when, read_energy_j()};
        break;
      case ClockTask::Kind::kInstructionEnd: {
        auto it = open_instructions.find(task.name);
        if (it == open_instructions.end()) break;
        const double energy = read_energy_j();
        step_time_breakdown[task.name].push_back(seconds(task.when - it->second.first));
        if (energy >= 0.0 && it->second.second >= 0.0)
          step_energy_breakdown[task.name].push_back(energy - it->second.second);
        open_instructions.erase(it);
        break;
      }
      case ClockTask::Kind::kStepEnd: {
        const double energy = read_energy_j();
        IterationMeasurement m;
        m.time_s = seconds(task.when - step_start);
        m.energy_j =
            energy >= 0.0 && step_start_energy_j >= 0.0 ? energy - step_start_energy_j : -1.0;
        if (!step_profiling) {
          add_iteration(m, step_time_breakdown, step_energy_breakdown);
          break;
        }
        // A profiling step: never mixed into the periodic results (the server would take a
        // reporting rank's result for a swept iteration); the reporting rank posts it alone.
        {
          std::lock_guard lock(mutex);
          iterations.push_back(m);
          changed.notify_all();
        }
        if (step_sweep_mhz > 0) {
          post_swept_iteration(m);
        } else {
          request_fetch();
        }
        break;
      }
      case ClockTask::Kind::kPBlockingBegin:
        p_blocking_start = task.when;
        p_blocking_start_energy_j = read_energy_j();
        break;
      case ClockTask::Kind::kPBlockingEnd: {
        const double energy = read_energy_j();
        const double time_s = seconds(task.when - p_blocking_start);
        if (energy < 0.0 || p_blocking_start_energy_j < 0.0 || !(time_s > 0.0)) {
          record_error("P_blocking: no energy measured (NVML energy unavailable)", clock_errors);
          p_blocking_in_flight = false;
          break;
        }
        ProfilingResult r;
        r.rank = options.rank;
        r.iter_time_s = {time_s};
        r.iter_energy_j = {energy - p_blocking_start_energy_j};
        r.measurement = "p_blocking";
        post_profiling_result(std::move(r), true);
        break;
      }
    }
  }

  // The reporting rank's swept iteration: one iteration at one clock with every instruction's
  // time and energy. Skipped when the clock already has its iterations (the server has moved on;
  // the new schedule applies from a later step) or when no energy was measured.
  void post_swept_iteration(const IterationMeasurement& m) {
    int& posted = sweep_posts[step_sweep_mhz];
    double time_sum = 0.0;
    bool windows_ok = true;
    for (const auto& [name, times] : step_time_breakdown) {
      for (double t : times) {
        time_sum += t;
        windows_ok = windows_ok && t > 0.0;
      }
      auto e = step_energy_breakdown.find(name);
      if (e == step_energy_breakdown.end() || e->second.size() != times.size()) {
        windows_ok = false;
        continue;
      }
      for (double energy : e->second) windows_ok = windows_ok && energy > 0.0;
    }
    if (posted >= step_iterations_per_clock || !(m.energy_j > 0.0) || !(time_sum > 0.0) ||
        step_time_breakdown.empty()) {
      {
        std::lock_guard lock(mutex);
        ++sweep_iterations_skipped;
      }
      request_fetch();
      return;
    }
    ++posted;
    ProfilingResult r;
    r.rank = options.rank;
    r.frequency_mhz = step_sweep_mhz;
    r.iter_time_s = {m.time_s};
    r.iter_energy_j = {m.energy_j};
    for (const auto& [name, times] : step_time_breakdown) {
      r.time_breakdown_s[name] = {times};
      std::vector<double> energies;
      if (windows_ok) {
        energies = step_energy_breakdown.at(name);
      } else {
        // The energy counter did not move within some instruction (real NVML updates it about
        // every 100 ms): split the iteration's measured energy by time — the whole stage runs
        // one clock during the sweep, so its power is about the same for every instruction.
        for (double t : times) energies.push_back(m.energy_j * t / time_sum);
      }
      r.energy_breakdown_j[name] = {energies};
    }
    if (!windows_ok) {
      std::lock_guard lock(mutex);
      ++apportioned_iterations;
    }
    post_profiling_result(std::move(r), false);
  }

  // Appends one iteration to the pending ProfilingResult and posts it every N iterations.
  void add_iteration(const IterationMeasurement& m,
                     const std::map<std::string, std::vector<double>>& time_breakdown,
                     const std::map<std::string, std::vector<double>>& energy_breakdown) {
    std::optional<ProfilingResult> to_post;
    {
      std::lock_guard lock(mutex);
      iterations.push_back(m);
      ProfilingResult& r = pending_result;
      const std::size_t before = r.iter_time_s.size();
      r.iter_time_s.push_back(m.time_s);
      r.iter_energy_j.push_back(m.energy_j);
      // Keep every name's per-iteration lists aligned with iter_time.
      auto merge = [before](auto& into, const auto& step) {
        for (const auto& [name, values] : step) {
          auto& lists = into[name];
          lists.resize(before);
          lists.push_back(values);
        }
        for (auto& [name, lists] : into) lists.resize(before + 1);
      };
      merge(r.time_breakdown_s, time_breakdown);
      merge(r.energy_breakdown_j, energy_breakdown);
      const int every = options.report_every_iterations;
      if (every > 0 && static_cast<int>(r.iter_time_s.size()) >= every) {
        bool energy_known = true;
        for (double e : r.iter_energy_j) energy_known = energy_known && e >= 0.0;
        if (energy_known && http) to_post = std::move(r);
        pending_result = ProfilingResult{};
        pending_result.rank = options.rank;
      }
      changed.notify_all();
    }
    if (to_post) post_result(std::move(*to_post));
  }

  void clock_loop() {
    clock_tid = current_thread_id();
    const auto period =
        std::chrono::duration<double>(std::max(0.001, options.power_sample_period_s));
    for (;;) {
      std::unique_lock lock(clock_mutex);
      auto ready = [&] { return stopping || !clock_queue.empty(); };
      if (energy_source == EnergySource::kPowerSampling) {
        clock_cv.wait_for(lock, period, ready);
      } else {
        clock_cv.wait(lock, ready);
      }
      if (clock_queue.empty()) {
        if (stopping) return;
        lock.unlock();
        sample_power();
        continue;
      }
      ClockTask task = std::move(clock_queue.front());
      clock_queue.pop_front();
      clock_busy = true;
      lock.unlock();
      handle(task);
      lock.lock();
      clock_busy = false;
      clock_cv.notify_all();
    }
  }

  void enqueue_clock(ClockTask task) {
    {
      std::lock_guard lock(clock_mutex);
      clock_queue.push_back(std::move(task));
    }
    clock_cv.notify_all();
  }

  // --- network thread -------------------------------------------------------------------------
  void net_loop() {
    for (;;) {
      std::unique_lock lock(net_mutex);
      net_cv.wait(lock, [&] { return net_stopping || !net_queue.empty(); });
      if (net_stopping) return;
      auto task = std::move(net_queue.front());
      net_queue.pop_front();
      net_busy = true;
      lock.unlock();
      task();
      lock.lock();
      net_busy = false;
      net_cv.notify_all();
    }
  }

  void enqueue_net(std::function<void()> task) {
    {
      std::lock_guard lock(net_mutex);
      net_queue.push_back(std::move(task));
    }
    net_cv.notify_all();
  }

  // Sends with retries on connection errors (the server may still be starting); an HTTP error
  // status is final. Returns the body of a 200 answer.
  // Waits `seconds` unless the client is closing; false when closing.
  bool pause(double seconds) {
    std::unique_lock lock(net_mutex);
    return !net_cv.wait_for(lock, std::chrono::duration<double>(seconds),
                            [&] { return net_stopping; });
  }

  // Sends with retries on connection errors (the server may still be starting; 6 tries, 0.2 s
  // doubling). 503 ("no schedule yet", "busy") is retried every second for up to
  // `wait_503_s`. Any other HTTP error status is final. Returns the body of a 200 answer.
  // The final answer (any status), or nullopt when the server stayed unreachable or the client
  // is closing.
  std::optional<HttpResponse> exchange(const std::string& method, const std::string& target,
                                       const std::string& body, double timeout_s,
                                       double wait_503_s = 0.0) {
    const auto start = SteadyClock::now();
    double backoff_s = 0.2;
    for (int failures = 0; failures < 6;) {
      auto response = http->request(method, target, body, timeout_s);
      if (response && response->status == 503 && seconds(SteadyClock::now() - start) < wait_503_s) {
        if (!pause(1.0)) return std::nullopt;
        continue;
      }
      if (response) return *response;
      record_error(response.error().message, network_errors);
      if (!pause(backoff_s)) return std::nullopt;
      backoff_s *= 2.0;
      ++failures;
    }
    return std::nullopt;
  }

  std::optional<std::string> send(const std::string& method, const std::string& target,
                                  const std::string& body, double timeout_s,
                                  double wait_503_s = 0.0) {
    auto response = exchange(method, target, body, timeout_s, wait_503_s);
    if (!response) return std::nullopt;
    if (response->status == 200) return std::move(response->body);
    record_error(http_error(response->status, method + " " + target, response->body),
                 network_errors);
    return std::nullopt;
  }

  void register_and_fetch(const RankInfo& rank) {
    std::string id;
    {
      std::lock_guard lock(mutex);
      id = job_id;
    }
    if (id.empty()) {
      JobInfo job{options.pp_degree,  options.dp_degree,    options.tp_degree,
                  options.world_size, options.job_metadata, options.num_microbatches};
      auto body = send("POST", kRegisterJobRoute, job_info_json(job), options.request_timeout_s);
      if (!body) return;
      auto parsed = parse_job_id(*body);
      if (!parsed) return record_error(parsed.error().message, network_errors);
      id = *parsed;
      std::lock_guard lock(mutex);
      job_id = id;
      changed.notify_all();
    }
    if (!send("POST", register_rank_route(id), rank_info_json(rank), options.request_timeout_s))
      return;
    {
      std::lock_guard lock(mutex);
      job_registered = true;
    }
    // The profiling rank starts the sweep first: until then a job registered without
    // num_microbatches has no schedule to serve, and the fetch would wait for one.
    if (options.start_profiling) return start_profiling_now(*options.start_profiling);
    fetch_schedule();
  }

  // `final_plan`: the frontier is ready, so a schedule without a profiling directive is its plan.
  void fetch_schedule(bool final_plan = false) {
    const std::string id = current_job_id();
    if (id.empty()) return;
    auto body = send("GET", schedule_route(id, options.rank), "", options.schedule_timeout_s,
                     options.schedule_timeout_s);
    if (!body) return;
    auto answer = parse_schedule_answer(*body, options.rank);
    if (!answer) return record_error(answer.error().message, network_errors);
    std::lock_guard lock(mutex);
    pending_schedule = std::move(answer->frequencies);
    pending_directive = answer->profiling;
    schedule_received = true;
    if (answer->profiling) {
      loop = answer->profiling->phase == "p_blocking" ? Loop::kPBlocking : Loop::kSweep;
    } else if (loop == Loop::kPBlocking || loop == Loop::kSweep) {
      loop = Loop::kCharacterizing;  // the sweep ended: the server solves the frontier
    } else if (final_plan && (loop == Loop::kWaiting || loop == Loop::kCharacterizing)) {
      loop = Loop::kPlanned;
    }
    changed.notify_all();
  }

  // One schedule fetch queued at a time: profiling steps can end faster than the network answers.
  void request_fetch() {
    if (!http || fetch_queued.exchange(true)) return;
    enqueue_net([this] {
      fetch_queued = false;
      fetch_schedule();
    });
  }

  // Posts a swept iteration or a P_blocking window, then fetches the schedule (the sweep moves as
  // results arrive). 409: the stage already left that clock — counted, not an error.
  void post_profiling_result(ProfilingResult result, bool p_blocking) {
    if (!http) return;
    enqueue_net([this, p_blocking, result = std::move(result)] {
      const std::string id = current_job_id();
      if (id.empty()) return;
      const std::string target = result_route(id);
      auto response =
          exchange("POST", target, profiling_result_json(result), options.request_timeout_s);
      {
        std::lock_guard lock(mutex);
        if (response && response->status == 200) {
          ++profiling_results_posted;
          ++results_posted;
        } else if (response && response->status == 409) {
          ++stale_results;
        } else if (response) {
          ++network_errors;
          last_error = http_error(response->status, "POST " + target, response->body);
        }
        changed.notify_all();
      }
      if (p_blocking) {
        if (response && response->status == 200) p_blocking_done = true;
        p_blocking_in_flight = false;
      }
      fetch_schedule();
    });
  }

  // GET /job while waiting for the server to start profiling or to finish the frontier.
  void poll_job() {
    const std::string id = current_job_id();
    std::optional<std::string> body;
    if (!id.empty()) body = send("GET", job_route(id), "", options.request_timeout_s);
    poll_queued = false;
    if (!body) return;
    const nlohmann::json j = nlohmann::json::parse(*body, nullptr, false);
    if (!j.is_object()) return record_error("GET /job: expected a JSON object", network_errors);
    auto text = [&j](const char* key) {
      auto it = j.find(key);
      return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
    };
    const std::string status = text("status"), phase = text("profiling_phase");
    Loop now;
    {
      std::lock_guard lock(mutex);
      now = loop;
    }
    if (phase == "p_blocking" || phase == "sweep") {
      fetch_schedule();  // the directive moves the loop to the phase
    } else if (status == "ready") {
      fetch_schedule(true);
    } else if (status == "failed" && now == Loop::kCharacterizing) {
      record_error(
          "in-vivo profiling: the server could not characterize the frontier: " + text("error"),
          network_errors);
      std::lock_guard lock(mutex);
      loop = Loop::kPlanned;  // keeps the all-max-clock schedule it serves
    }
  }

  void start_profiling_now(const ProfilingRequest& request) {
    const std::string id = current_job_id();
    if (id.empty())
      return record_error("start_profiling: the job is not registered", network_errors);
    const std::string body = profiling_request_json(request);
    const auto start = SteadyClock::now();
    for (;;) {
      auto response = exchange("POST", profiling_route(id), body, options.request_timeout_s);
      if (!response) return;
      if (response->status == 202 || response->status == 200) break;
      // 422 naming "ranks": some stage has no registered rank yet; they register concurrently.
      const nlohmann::json j = nlohmann::json::parse(response->body, nullptr, false);
      const auto field = j.is_object() ? j.find("field") : j.end();
      const bool ranks_missing =
          response->status == 422 && field != j.end() && field->is_string() && *field == "ranks";
      if (!ranks_missing || seconds(SteadyClock::now() - start) > options.schedule_timeout_s) {
        return record_error(
            http_error(response->status, "POST " + profiling_route(id), response->body),
            network_errors);
      }
      if (!pause(0.1)) return;
    }
    {
      std::lock_guard lock(mutex);
      if (loop == Loop::kOff || loop == Loop::kPlanned) loop = Loop::kWaiting;
    }
    fetch_schedule();
  }

  void post_result(ProfilingResult result) {
    enqueue_net([this, result = std::move(result)] {
      const std::string id = current_job_id();
      if (id.empty()) return;
      if (send("POST", result_route(id), profiling_result_json(result),
               options.request_timeout_s)) {
        std::lock_guard lock(mutex);
        ++results_posted;
        changed.notify_all();
      }
    });
  }

  std::string current_job_id() const {
    std::lock_guard lock(mutex);
    return job_id;
  }
};

Client::Client(std::unique_ptr<State> state) : state_(std::move(state)) {}

core::Result<std::unique_ptr<Client>> Client::create(const ClientOptions& options) {
  auto bad = [](const std::string& why) { return core::Error{"client options: " + why}; };
  if (options.dp_degree < 1 || options.pp_degree < 1 || options.tp_degree < 1)
    return bad("dp_degree, pp_degree and tp_degree must be >= 1");
  if (options.dp_degree * options.pp_degree * options.tp_degree != options.world_size) {
    return bad(fmt::format("pp {} x dp {} x tp {} != world_size {}", options.pp_degree,
                           options.dp_degree, options.tp_degree, options.world_size));
  }
  if (options.rank < 0 || options.rank >= options.world_size)
    return bad(fmt::format("rank {} is outside 0..{}", options.rank, options.world_size - 1));
  if (options.dp_rank < 0 || options.dp_rank >= options.dp_degree || options.pp_rank < 0 ||
      options.pp_rank >= options.pp_degree || options.tp_rank < 0 ||
      options.tp_rank >= options.tp_degree)
    return bad("dp_rank, pp_rank and tp_rank must be within their degrees");
  if (options.device_id < 0) return bad("device_id must be >= 0");
  if (options.report_every_iterations < 0 || options.refresh_schedule_every_iterations < 0)
    return bad("report_every_iterations and refresh_schedule_every_iterations must be >= 0");
  if (!(options.power_sample_period_s > 0.0) || !(options.request_timeout_s > 0.0) ||
      !(options.schedule_timeout_s > 0.0) || !(options.job_poll_period_s > 0.0))
    return bad("periods and timeouts must be positive");
  if (!options.server_url.empty() && options.rank != 0 && options.job_id.empty()) {
    return bad(
        fmt::format("rank {}: job_id is required (rank 0 registers the job and broadcasts its id)",
                    options.rank));
  }

  auto state = std::make_unique<State>();
  state->options = options;
  state->job_id = options.job_id;
  state->pending_result.rank = options.rank;
  state->loop = options.profile_in_vivo || options.start_profiling ? Loop::kWaiting : Loop::kOff;
  if (!options.server_url.empty()) {
    auto url = parse_url(options.server_url);
    if (!url) return url.error();
    state->http = std::make_unique<HttpClient>(*url);
  }
  if (options.use_nvml) {
    auto loaded = nvml::Nvml::load(options.nvml_library);
    if (loaded) {
      state->nvml = *loaded;
      auto count = state->nvml->device_count();
      if (!count || options.device_id >= *count) {
        state->nvml_message = count ? fmt::format(
                                          "NVML {}: device {} not present ({} device(s)): "
                                          "clock control disabled",
                                          state->nvml->library(), options.device_id, *count)
                                    : count.error().message;
        state->nvml.reset();
      }
    } else {
      state->nvml_message = loaded.error().message;
    }
    if (!state->nvml && !options.quiet) print_nvml_message_once(state->nvml_message);
  } else {
    state->nvml_message = "NVML not used (use_nvml = false): clock control disabled";
  }
  if (state->nvml) {
    state->energy_source = state->nvml->total_energy_mj(options.device_id)
                               ? State::EnergySource::kCounter
                               : State::EnergySource::kPowerSampling;
  }

  RankInfo rank{options.rank, options.dp_rank, options.pp_rank, options.tp_rank,
                options.available_frequencies_mhz};
  if (rank.available_frequencies_mhz.empty() && state->nvml) {
    if (auto clocks = state->nvml->supported_graphics_clocks_mhz(options.device_id))
      rank.available_frequencies_mhz = *clocks;
  }
  std::sort(rank.available_frequencies_mhz.rbegin(), rank.available_frequencies_mhz.rend());

  State* s = state.get();
  s->last_sample = SteadyClock::now();
  s->clock_thread = std::thread([s] { s->clock_loop(); });
  s->net_thread = std::thread([s] { s->net_loop(); });
  if (s->http) s->enqueue_net([s, rank] { s->register_and_fetch(rank); });

  return std::unique_ptr<Client>(new Client(std::move(state)));
}

Client::~Client() {
  State& s = *state_;
  {
    std::lock_guard lock(s.net_mutex);
    s.net_stopping = true;
  }
  if (s.http) s.http->cancel();
  s.net_cv.notify_all();
  s.net_thread.join();
  {
    std::lock_guard lock(s.clock_mutex);
    s.stopping = true;  // the clock thread drains its queue first
  }
  s.clock_cv.notify_all();
  s.clock_thread.join();
  bool any_applied = false;
  {
    std::lock_guard lock(s.mutex);
    any_applied = !s.applied.empty();
  }
  if (s.nvml && any_applied && s.options.reset_clocks_on_close)
    (void)s.nvml->reset_locked_clocks(s.options.device_id);
}

std::string Client::wait_for_job_id(double timeout_s) const {
  std::unique_lock lock(state_->mutex);
  state_->changed.wait_for(lock, std::chrono::duration<double>(std::max(0.0, timeout_s)),
                           [&] { return !state_->job_id.empty(); });
  return state_->job_id;
}

bool Client::wait_for_schedule(double timeout_s) const {
  std::unique_lock lock(state_->mutex);
  return state_->changed.wait_for(lock, std::chrono::duration<double>(std::max(0.0, timeout_s)),
                                  [&] { return state_->schedule_received; });
}

core::Status Client::on_step_begin() {
  State& s = *state_;
  const auto now = SteadyClock::now();
  {
    std::lock_guard lock(s.mutex);
    if (s.pending_schedule) {
      s.active = std::move(*s.pending_schedule);
      s.pending_schedule.reset();
      s.active_directive = std::move(s.pending_directive);
      s.pending_directive.reset();
      s.has_active = true;
    }
    const auto& d = s.active_directive;
    s.profiling_clock_mhz = d && d->phase == "sweep" ? d->clock_mhz : 0;
  }
  s.cursor = 0;
  ClockTask task{ClockTask::Kind::kStepBegin, 0, "", now};
  if (const auto& d = s.active_directive) {
    task.profiling = true;
    if (d->phase == "sweep" && !d->stage_done && d->reporting_rank == s.options.rank) {
      task.sweep_mhz = d->clock_mhz;
      task.iterations_per_clock = std::max(1, d->iterations_per_clock);
    }
  }
  s.enqueue_clock(std::move(task));
  return core::Ok{};
}

core::Status Client::on_step_end() {
  State& s = *state_;
  s.enqueue_clock({ClockTask::Kind::kStepEnd, 0, "", SteadyClock::now()});
  const std::size_t consumed = s.cursor;
  s.cursor = 0;
  Loop loop;
  {
    std::lock_guard lock(s.mutex);
    loop = s.loop;
  }
  // Online servers change plans (stragglers, new profiles): poll at iteration boundaries.
  // (Profiling steps fetch after every step from the clock thread instead.)
  const int every = s.options.refresh_schedule_every_iterations;
  if (s.http && every > 0 && !s.active_directive && ++s.steps_since_refresh >= every) {
    s.steps_since_refresh = 0;
    s.enqueue_net([&s] { s.fetch_schedule(); });
  }
  const auto now = SteadyClock::now();
  if (s.http && (loop == Loop::kWaiting || loop == Loop::kCharacterizing) &&
      seconds(now - s.last_poll) >= s.options.job_poll_period_s && !s.poll_queued.exchange(true)) {
    s.last_poll = now;
    s.enqueue_net([&s] { s.poll_job(); });
  }
  if (s.has_active && consumed != s.active.size()) {
    return core::Error{fmt::format(
        "schedule: the iteration ran {} instruction(s) but the schedule has {}; next expected "
        "({}, {} MHz)",
        consumed, s.active.size(), s.active[consumed].first, s.active[consumed].second)};
  }
  return core::Ok{};
}

core::Status Client::on_instruction_begin(const std::string& name) {
  State& s = *state_;
  const auto now = SteadyClock::now();
  if (s.has_active) {
    if (s.cursor >= s.active.size()) {
      return core::Error{fmt::format(
          "schedule: instruction '{}' began but the schedule's {} instruction(s) are all used",
          name, s.active.size())};
    }
    const auto& [expected, mhz] = s.active[s.cursor];
    if (expected != name) {
      return core::Error{
          fmt::format("schedule: instruction {} of the iteration is '{}' ({} MHz), "
                      "but '{}' began",
                      s.cursor, expected, mhz, name)};
    }
    ++s.cursor;
    // Consecutive equal clocks are one NVML call: the clock is already locked there.
    if (s.nvml && s.options.control_clocks && mhz != s.last_queued_mhz) {
      s.last_queued_mhz = mhz;
      s.enqueue_clock({ClockTask::Kind::kSetClock, mhz, "", now});
    }
  }
  s.enqueue_clock({ClockTask::Kind::kInstructionBegin, 0, name, now});
  return core::Ok{};
}

core::Status Client::on_instruction_end(const std::string& name) {
  state_->enqueue_clock({ClockTask::Kind::kInstructionEnd, 0, name, SteadyClock::now()});
  return core::Ok{};
}

core::Status Client::start_profiling(const ProfilingRequest& request) {
  State& s = *state_;
  if (!s.http) return core::Error{"start_profiling: no server URL"};
  s.enqueue_net([&s, request] { s.start_profiling_now(request); });
  return core::Ok{};
}

bool Client::p_blocking_requested() const {
  const State& s = *state_;
  const auto& d = s.active_directive;
  return d && d->phase == "p_blocking" && d->measure_p_blocking_rank == s.options.rank &&
         !s.p_blocking_open && !s.p_blocking_done && !s.p_blocking_in_flight;
}

core::Status Client::on_p_blocking_begin() {
  State& s = *state_;
  if (!p_blocking_requested()) {
    return core::Error{fmt::format(
        "P_blocking: the schedule in effect does not ask rank {} to measure it (or it did)",
        s.options.rank)};
  }
  s.p_blocking_open = true;
  s.enqueue_clock({ClockTask::Kind::kPBlockingBegin, 0, "", SteadyClock::now()});
  return core::Ok{};
}

core::Status Client::on_p_blocking_end() {
  State& s = *state_;
  if (!s.p_blocking_open) return core::Error{"P_blocking: on_p_blocking_begin was not called"};
  s.p_blocking_open = false;
  s.p_blocking_in_flight = true;
  s.enqueue_clock({ClockTask::Kind::kPBlockingEnd, 0, "", SteadyClock::now()});
  return core::Ok{};
}

core::Status Client::report_iteration(double time_s, double energy_j) {
  if (!(time_s > 0.0) || !(energy_j >= 0.0) || !std::isfinite(time_s) || !std::isfinite(energy_j))
    return core::Error{
        fmt::format("report_iteration: expected time > 0 s and energy >= 0 J, got "
                    "{} s, {} J",
                    time_s, energy_j)};
  state_->add_iteration({time_s, energy_j}, {}, {});
  return core::Ok{};
}

core::Status Client::report_straggler(const StragglerReport& report) {
  State& s = *state_;
  if (!s.http) return core::Error{"report_straggler: no server URL"};
  auto body = straggler_json(report);
  if (!body) return body.error();
  s.enqueue_net([&s, body = *body] {
    const std::string id = s.current_job_id();
    if (!id.empty()) (void)s.send("POST", straggler_route(id), body, s.options.request_timeout_s);
  });
  return core::Ok{};
}

core::Status Client::clear_stragglers() {
  State& s = *state_;
  if (!s.http) return core::Error{"clear_stragglers: no server URL"};
  s.enqueue_net([&s] {
    const std::string id = s.current_job_id();
    if (!id.empty()) (void)s.send("DELETE", straggler_route(id), "", s.options.request_timeout_s);
  });
  return core::Ok{};
}

core::Status Client::refresh_schedule() {
  State& s = *state_;
  if (!s.http) return core::Error{"refresh_schedule: no server URL"};
  s.enqueue_net([&s] { s.fetch_schedule(); });
  return core::Ok{};
}

void Client::set_schedule(Schedule schedule) {
  std::lock_guard lock(state_->mutex);
  state_->pending_schedule = std::move(schedule);
  state_->pending_directive.reset();
  state_->schedule_received = true;
  state_->changed.notify_all();
}

core::Result<std::string> Client::fetch_frontier(double timeout_s) {
  State& s = *state_;
  if (!s.http) return core::Error{"fetch_frontier: no server URL"};
  const std::string id = wait_for_job_id(timeout_s);
  if (id.empty()) return core::Error{"fetch_frontier: the job is not registered yet"};
  // A separate connection: the network thread may be holding a long schedule poll.
  auto url = parse_url(s.options.server_url);
  HttpClient http(*url);
  auto response = http.request("GET", frontier_route(id), "", timeout_s);
  if (!response) return response.error();
  if (response->status != 200)
    return core::Error{http_error(response->status, "GET " + frontier_route(id), response->body)};
  return response->body;
}

bool Client::flush(double timeout_s) {
  State& s = *state_;
  const auto deadline = SteadyClock::now() + std::chrono::duration_cast<SteadyClock::duration>(
                                                 std::chrono::duration<double>(timeout_s));
  {
    std::unique_lock lock(s.clock_mutex);
    if (!s.clock_cv.wait_until(lock, deadline,
                               [&] { return s.clock_queue.empty() && !s.clock_busy; }))
      return false;
  }
  std::unique_lock lock(s.net_mutex);
  return s.net_cv.wait_until(lock, deadline, [&] { return s.net_queue.empty() && !s.net_busy; });
}

ClientStatus Client::status() const {
  const State& s = *state_;
  std::lock_guard lock(s.mutex);
  ClientStatus st;
  st.nvml_loaded = s.nvml != nullptr;
  st.energy_source = s.energy_source == State::EnergySource::kCounter         ? "energy counter"
                     : s.energy_source == State::EnergySource::kPowerSampling ? "power sampling"
                                                                              : "none";
  st.job_registered = s.job_registered;
  st.schedule_received = s.schedule_received;
  st.schedule_length = static_cast<int>(s.has_active ? s.active.size() : 0);
  st.iterations = static_cast<long long>(s.iterations.size());
  st.results_posted = s.results_posted;
  st.network_errors = s.network_errors;
  st.clock_errors = s.clock_errors;
  st.nvml_message = s.nvml_message;
  st.profiling_phase = loop_name(s.loop);
  st.profiling_clock_mhz = s.profiling_clock_mhz;
  st.profiling_results_posted = s.profiling_results_posted;
  st.stale_results = s.stale_results;
  st.sweep_iterations_skipped = s.sweep_iterations_skipped;
  st.apportioned_iterations = s.apportioned_iterations;
  st.last_background_error = s.last_error;
  return st;
}

std::vector<AppliedClock> Client::applied_clocks() const {
  std::lock_guard lock(state_->mutex);
  return state_->applied;
}

std::vector<IterationMeasurement> Client::iterations() const {
  std::lock_guard lock(state_->mutex);
  return state_->iterations;
}

Schedule Client::schedule() const {
  std::lock_guard lock(state_->mutex);
  return state_->has_active ? state_->active : Schedule{};
}

long Client::clock_thread_id() const { return state_->clock_tid.load(); }

std::string Client::job_id() const { return state_->current_job_id(); }

}  // namespace powertrain::client
