#include "nvml/measure.h"

#include <fmt/core.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <optional>
#include <thread>

namespace powertrain::nvml {
namespace {

double since(SteadyClock::time_point t) {
  return std::chrono::duration<double>(SteadyClock::now() - t).count();
}

void sleep_s(double s) {
  if (s > 0.0) std::this_thread::sleep_for(std::chrono::duration<double>(s));
}

// The child runs in its own process group so that stopping it stops everything it started.
core::Result<pid_t> start_command(const std::vector<std::string>& command) {
  const pid_t pid = ::fork();
  if (pid < 0) return core::Error{"fork failed"};
  if (pid == 0) {
    ::setpgid(0, 0);
    std::vector<char*> argv;
    for (const auto& a : command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    ::execvp(argv[0], argv.data());
    std::fprintf(stderr, "powertrain measure: error: cannot run '%s'\n", argv[0]);
    ::_exit(127);
  }
  ::setpgid(pid, pid);
  return pid;
}

// Exit status if the child has exited, else nullopt.
std::optional<int> exited(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, WNOHANG) != pid) return std::nullopt;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

void stop_command(pid_t pid) {
  ::kill(-pid, SIGTERM);
  const auto start = SteadyClock::now();
  while (since(start) < 2.0) {
    if (exited(pid)) return;
    sleep_s(0.01);
  }
  ::kill(-pid, SIGKILL);
  int status = 0;
  ::waitpid(pid, &status, 0);
}

double temperature_or_unknown(const Nvml& nvml, int device) {
  auto t = nvml.temperature_c(device);
  return t ? static_cast<double>(*t) : -1.0;
}

core::Result<MeasuredRun> measure_once(const MeasureOptions& flags, const Nvml& nvml,
                                       EnergyMeter& meter) {
  MeasuredRun run;
  // Cooldown: at least --cooldown-s; with --cooldown-to-c also until the GPU is below it.
  const auto cool_start = SteadyClock::now();
  sleep_s(flags.cooldown_s);
  if (flags.cooldown_to_c > 0.0) {
    for (;;) {
      const double t = temperature_or_unknown(nvml, flags.device);
      if (t < 0.0) return core::Error{"--cooldown-to-c: the GPU reports no temperature"};
      if (t <= flags.cooldown_to_c) break;
      if (since(cool_start) >= flags.cooldown_max_s) {
        run.cooled_to_target = false;
        break;
      }
      sleep_s(flags.sample_period_s);
    }
  }
  run.cooldown_s = since(cool_start);
  run.start_temperature_c = temperature_or_unknown(nvml, flags.device);

  if (flags.clock_mhz > 0) {
    if (auto locked = nvml.set_locked_clocks_mhz(flags.device, flags.clock_mhz, flags.clock_mhz);
        !locked)
      return locked.error();
  }
  auto pid = start_command(flags.command);
  if (!pid) return pid.error();
  const auto started = SteadyClock::now();
  auto early_exit = [&](int status) {
    return core::Error{fmt::format(
        "'{}' exited with status {} after {:.2f} s, before warm-up + window ({} s) ended: give a "
        "command that runs longer (e.g. loop it)",
        flags.command[0], status, since(started), flags.warmup_s + flags.window_s)};
  };
  core::Result<MeasuredRun> outcome = run;
  bool reaped = false;  // once reaped, its pid may be reused: never signal it again
  while (since(started) < flags.warmup_s) {
    if (auto status = exited(*pid)) {
      reaped = true;
      outcome = early_exit(*status);
      break;
    }
    sleep_s(std::min(flags.sample_period_s, flags.warmup_s - since(started)));
  }
  if (outcome) {
    const auto window_start = SteadyClock::now();
    if (auto begun = meter.begin(); !begun) outcome = begun.error();
    while (outcome && since(window_start) < flags.window_s) {
      sleep_s(std::min(flags.sample_period_s, flags.window_s - since(window_start)));
      if (auto status = exited(*pid)) {
        reaped = true;
        outcome = early_exit(*status);
      } else if (auto s = meter.sample(); !s) {
        outcome = s.error();
      }
    }
    if (outcome) {
      auto energy = meter.end();
      run.window_s = since(window_start);
      if (!energy) {
        outcome = energy.error();
      } else {
        run.energy_j = *energy;
        run.end_temperature_c = temperature_or_unknown(nvml, flags.device);
        outcome = run;
      }
    }
  }
  if (!reaped && !exited(*pid)) stop_command(*pid);
  if (flags.clock_mhz > 0) (void)nvml.reset_locked_clocks(flags.device);
  return outcome;
}

}  // namespace

core::Result<MeasureSummary> measure(const MeasureOptions& options, const Nvml& nvml,
                                     EnergyMeter& meter,
                                     const std::function<void(int, const MeasuredRun&)>& on_run) {
  MeasureSummary summary;
  std::vector<MeasuredRun>& runs = summary.runs;
  for (int r = 0; r < options.repeats; ++r) {
    auto run = measure_once(options, nvml, meter);
    if (!run) return core::Error{fmt::format("run {}: {}", r + 1, run.error().message)};
    if (on_run) on_run(r + 1, *run);
    runs.push_back(*run);
  }
  double mean_j = 0.0, mean_w = 0.0;
  for (const auto& r : runs) {
    mean_j += r.energy_j / runs.size();
    mean_w += r.energy_j / r.window_s / runs.size();
  }
  double var = 0.0;
  for (const auto& r : runs) var += (r.energy_j - mean_j) * (r.energy_j - mean_j);
  summary.mean_energy_j = mean_j;
  summary.mean_power_w = mean_w;
  summary.stddev_energy_j = runs.size() > 1 ? std::sqrt(var / (runs.size() - 1)) : 0.0;
  return summary;
}

}  // namespace powertrain::nvml
