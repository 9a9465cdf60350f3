// `powertrain measure`: thermally stable time and energy of a command (Kareus §5.3). Each run
// cools the GPU down (a fixed time, or until it is below a temperature), starts the command,
// waits out its warm-up, measures NVML energy over a fixed window, then stops the command.
// The window should be several seconds: NVML's counter updates about every 100 ms.
#include <fmt/core.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "cli/commands.h"
#include "cli/flags.h"
#include "core/atomic_output.h"
#include "nvml/nvml.h"

namespace powertrain::cli {
namespace {

using SteadyClock = std::chrono::steady_clock;

struct MeasureFlags {
  std::vector<std::string> command;
  double warmup_s = 2.0;
  double window_s = 5.0;
  double cooldown_s = 5.0;
  double cooldown_to_c = 0.0;  // 0: no temperature target
  double cooldown_max_s = 60.0;
  double sample_period_s = 0.1;
  int repeats = 1;
  int device = 0;
  int clock_mhz = 0;  // 0: leave the clock alone
  std::string nvml_library;
  std::string out;
  bool force = false;
};

struct RunResult {
  double cooldown_s = 0.0;
  double window_s = 0.0;
  double energy_j = 0.0;
  double start_temperature_c = -1.0;
  double end_temperature_c = -1.0;
  bool cooled_to_target = true;
};

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

class EnergyMeter {
 public:
  EnergyMeter(const nvml::Nvml& nvml, int device) : nvml_(nvml), device_(device) {
    counter_ = static_cast<bool>(nvml_.total_energy_mj(device_));
  }
  const char* source() const { return counter_ ? "energy counter" : "power sampling"; }
  // Starts a window (power sampling: resets the integral).
  core::Status begin() {
    if (counter_) {
      auto mj = nvml_.total_energy_mj(device_);
      if (!mj) return mj.error();
      start_mj_ = *mj;
      return core::Ok{};
    }
    integral_j_ = 0.0;
    last_w_ = -1.0;
    return sample();
  }
  // Power sampling: one trapezoid step. The counter needs nothing between reads.
  core::Status sample() {
    if (counter_) return core::Ok{};
    auto mw = nvml_.power_mw(device_);
    if (!mw) return mw.error();
    const auto now = SteadyClock::now();
    const double w = *mw / 1000.0;
    if (last_w_ >= 0.0)
      integral_j_ += 0.5 * (w + last_w_) * std::chrono::duration<double>(now - last_).count();
    last_w_ = w;
    last_ = now;
    return core::Ok{};
  }
  core::Result<double> end() {
    if (counter_) {
      auto mj = nvml_.total_energy_mj(device_);
      if (!mj) return mj.error();
      return static_cast<double>(*mj - start_mj_) / 1000.0;
    }
    if (auto s = sample(); !s) return s.error();
    return integral_j_;
  }

 private:
  const nvml::Nvml& nvml_;
  int device_;
  bool counter_ = false;
  unsigned long long start_mj_ = 0;
  double integral_j_ = 0.0;
  double last_w_ = -1.0;
  SteadyClock::time_point last_;
};

double temperature_or_unknown(const nvml::Nvml& nvml, int device) {
  auto t = nvml.temperature_c(device);
  return t ? static_cast<double>(*t) : -1.0;
}

core::Result<RunResult> measure_once(const MeasureFlags& flags, const nvml::Nvml& nvml,
                                     EnergyMeter& meter) {
  RunResult run;
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
  core::Result<RunResult> outcome = run;
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

std::string temperature_text(double c) { return c < 0.0 ? "unknown" : fmt::format("{:.0f} C", c); }

int run_measure(const MeasureFlags& flags) {
  const char* kCommand = "measure";
  if (flags.command.empty())
    return usage_error(kCommand, "give the command to measure after --, e.g. -- python train.py");
  std::optional<core::AtomicOutputDirectory> output;
  if (!flags.out.empty()) {
    auto created = core::AtomicOutputDirectory::create(flags.out, output_policy(flags.force));
    if (!created) return fail(kCommand, created.error().message);
    output.emplace(std::move(*created));
  }
  auto loaded = nvml::Nvml::load(flags.nvml_library);
  if (!loaded) return fail(kCommand, loaded.error().message);
  const nvml::Nvml& nvml = **loaded;
  auto count = nvml.device_count();
  if (!count) return fail(kCommand, count.error().message);
  if (flags.device >= *count)
    return usage_error(kCommand,
                       fmt::format("--device: expected 0 to {}, got {}", *count - 1, flags.device));
  EnergyMeter meter(nvml, flags.device);
  std::string command_text;
  for (const auto& a : flags.command) command_text += (command_text.empty() ? "" : " ") + a;
  fmt::print(
      "powertrain measure: {} | warm-up {} s, window {} s, cooldown {} s{}, {} run(s); NVML {} "
      "device {} ({}){}\n",
      command_text, flags.warmup_s, flags.window_s, flags.cooldown_s,
      flags.cooldown_to_c > 0.0 ? fmt::format(" and until <= {} C (at most {} s)",
                                              flags.cooldown_to_c, flags.cooldown_max_s)
                                : "",
      flags.repeats, nvml.library(), flags.device, meter.source(),
      flags.clock_mhz > 0 ? fmt::format(", clock locked at {} MHz", flags.clock_mhz) : "");

  std::vector<RunResult> runs;
  for (int r = 0; r < flags.repeats; ++r) {
    auto run = measure_once(flags, nvml, meter);
    if (!run) return fail(kCommand, fmt::format("run {}: {}", r + 1, run.error().message));
    if (!run->cooled_to_target) {
      fmt::print(stderr,
                 "warning: run {}: still above {} C after {:.1f} s of cooldown; measured anyway\n",
                 r + 1, flags.cooldown_to_c, run->cooldown_s);
    }
    fmt::print(
        "  run {}: cooled {:.2f} s to {}; measured {:.3f} s, {:.3f} J, {:.1f} W average; "
        "temperature {} -> {} (measured)\n",
        r + 1, run->cooldown_s, temperature_text(run->start_temperature_c), run->window_s,
        run->energy_j, run->energy_j / run->window_s, temperature_text(run->start_temperature_c),
        temperature_text(run->end_temperature_c));
    runs.push_back(*run);
  }
  double mean_j = 0.0, mean_w = 0.0;
  for (const auto& r : runs) {
    mean_j += r.energy_j / runs.size();
    mean_w += r.energy_j / r.window_s / runs.size();
  }
  double var = 0.0;
  for (const auto& r : runs) var += (r.energy_j - mean_j) * (r.energy_j - mean_j);
  const double stddev_j = runs.size() > 1 ? std::sqrt(var / (runs.size() - 1)) : 0.0;
  fmt::print(
      "  mean over {} run(s): {:.3f} J per {} s window (stddev {:.3f} J), {:.1f} W (measured)\n",
      runs.size(), mean_j, flags.window_s, stddev_j, mean_w);

  if (output) {
    std::string csv =
        "run,cooldown_s,window_s,energy_j,average_power_w,start_temperature_c,end_temperature_c\n";
    nlohmann::json doc = {{"units", "seconds, joules, watts, degrees Celsius; measured by NVML"},
                          {"command", flags.command},
                          {"nvml_library", nvml.library()},
                          {"energy_source", meter.source()},
                          {"warmup_s", flags.warmup_s},
                          {"window_s", flags.window_s},
                          {"cooldown_s", flags.cooldown_s},
                          {"cooldown_to_c", flags.cooldown_to_c},
                          {"clock_mhz", flags.clock_mhz},
                          {"mean_energy_j", mean_j},
                          {"stddev_energy_j", stddev_j},
                          {"mean_power_w", mean_w}};
    for (std::size_t i = 0; i < runs.size(); ++i) {
      const auto& r = runs[i];
      csv += fmt::format("{},{},{},{},{},{},{}\n", i + 1, r.cooldown_s, r.window_s, r.energy_j,
                         r.energy_j / r.window_s, r.start_temperature_c, r.end_temperature_c);
    }
    for (const auto& [name, text] : {std::pair<std::string, std::string>{"measurements.csv", csv},
                                     {"summary.json", doc.dump(2) + "\n"}}) {
      if (auto written = output->write_file(name, text); !written)
        return fail(kCommand, written.error().message);
    }
    if (auto committed = output->commit(); !committed)
      return fail(kCommand, committed.error().message);
    fmt::print("  files         {}/: measurements.csv summary.json\n", output->target().string());
  }
  return 0;
}

}  // namespace

Action add_measure_command(CLI::App& app) {
  auto flags = std::make_shared<MeasureFlags>();
  add_option_with_aliases(app, "--warmup-s", {}, flags->warmup_s,
                          "Seconds the command runs before the window (default 2)",
                          number_in(0.0, 86400.0));
  add_option_with_aliases(app, "--window-s", {}, flags->window_s,
                          "Measurement window, s (default 5; NVML updates about every 0.1 s)",
                          number_in(0.0, 86400.0, true));
  add_option_with_aliases(app, "--cooldown-s", {}, flags->cooldown_s,
                          "Idle time before each run, s (default 5)", number_in(0.0, 86400.0));
  add_option_with_aliases(app, "--cooldown-to-c", {}, flags->cooldown_to_c,
                          "Also wait until the GPU is at or below this temperature, C",
                          number_in(0.0, 200.0, true));
  add_option_with_aliases(app, "--cooldown-max-s", {}, flags->cooldown_max_s,
                          "Longest cooldown with --cooldown-to-c, s (default 60)",
                          number_in(0.0, 86400.0));
  add_option_with_aliases(app, "--sample-period-s", {}, flags->sample_period_s,
                          "Power/temperature polling period, s (default 0.1)",
                          number_in(0.0, 60.0, true));
  add_option_with_aliases(app, "--repeats", {}, flags->repeats, "Runs (default 1)",
                          integer_in(1, 10000));
  add_option_with_aliases(app, "--device", {}, flags->device, "NVML device index (default 0)",
                          integer_in(0, 1024));
  add_option_with_aliases(app, "--clock-mhz", {}, flags->clock_mhz,
                          "Lock the GPU clock during each run (reset after)",
                          integer_in(1, 100000));
  app.add_option("--nvml-library", flags->nvml_library,
                 "NVML to load (default $POWERTRAIN_NVML_LIBRARY or libnvidia-ml.so.1)");
  app.add_option("--out", flags->out, "Optional output directory: measurements.csv, summary.json");
  add_force_flag(app, flags->force);
  app.add_option("command", flags->command, "The command to measure (after --)");
  return [flags]() { return run_measure(*flags); };
}

}  // namespace powertrain::cli
