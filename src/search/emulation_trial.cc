#include "search/emulation_trial.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

extern char** environ;

namespace powertrain::search {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kPlaceholders[] = {"tp", "pp", "dp",   "mb",   "microbatches", "v",
                                              "rc", "sp", "dopt", "gpus", "work_dir"};

core::Error field_error(const std::string& source, const std::string& field,
                        const std::string& what) {
  return core::Error{fmt::format("{}: field '{}' {}", source, field, what)};
}

// Every {name} in `text` is a known placeholder and braces pair up.
core::Status check_template(const std::string& text, const std::string& source,
                            const std::string& field) {
  for (std::size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '}') return field_error(source, field, "has a '}' without '{'");
    if (text[i] != '{') continue;
    const std::size_t close = text.find('}', i);
    if (close == std::string::npos) return field_error(source, field, "has a '{' without '}'");
    const std::string name = text.substr(i + 1, close - i - 1);
    if (std::find(std::begin(kPlaceholders), std::end(kPlaceholders), name) ==
        std::end(kPlaceholders))
      return field_error(source, field,
                         fmt::format("has an unknown placeholder {{{}}} (known: tp, pp, dp, mb, "
                                     "microbatches, v, rc, sp, dopt, gpus, work_dir)",
                                     name));
    i = close;
  }
  return core::Ok{};
}

std::vector<std::string> split_words(const std::string& text) {
  std::vector<std::string> words;
  std::istringstream in(text);
  for (std::string w; in >> w;) words.push_back(w);
  return words;
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The last non-empty line of a file (a command's one-line error), at most 400 characters.
std::string last_line(const fs::path& path) {
  std::istringstream in(slurp(path));
  std::string line, last;
  while (std::getline(in, line))
    if (line.find_first_not_of(" \t\r") != std::string::npos) last = line;
  if (last.size() > 400) last.resize(400);
  std::replace(last.begin(), last.end(), '"', '\'');
  return last;
}

// Runs argv with stdin from /dev/null and stdout/stderr into files, in a process group of its
// own (killed whole after timeout_s). Returns the exit code, 128 + signal, or -1 when it could
// not start.
int run_process(const std::vector<std::string>& argv, const fs::path& out, const fs::path& err,
                double timeout_s) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 1, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&actions, 2, err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setpgroup(&attr, 0);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int spawned = posix_spawn(&pid, args[0], &actions, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  if (spawned != 0) return -1;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  int status = 0;
  bool killed = false;
  while (true) {
    const pid_t done = waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno == EINTR) continue;
    if (done < 0) return -1;
    if (!killed && std::chrono::steady_clock::now() > deadline) {
      kill(-pid, SIGKILL);
      killed = true;
    }
    // 2 ms, not 20: a trial waits on two commands in turn, and the mean half-interval was ~20 ms
    // of idle per trial (~4 % of a 0.45 s emulation trial on an idle machine).
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return -1;
}

TrialResult failed(TrialResult r, TrialStatus status, std::string reason) {
  r.status = status;
  r.reason = std::move(reason);
  r.frontier.clear();
  return r;
}

// A per-trial directory, removed on destruction unless kept.
struct TrialDir {
  fs::path path;
  bool keep = false;
  ~TrialDir() {
    std::error_code ec;
    if (!keep && !path.empty()) fs::remove_all(path, ec);
  }
};

}  // namespace

core::Status parse_emulation_spec(const nlohmann::json& value, const std::string& source,
                                  const std::string& key, EmulationSpec& out) {
  if (!value.is_object())
    return field_error(source, key, "must be an object {\"command\": \"prog --pp {pp} ...\", ...}");
  for (const auto& [k, v] : value.items()) {
    const std::string field = key + "." + k;
    if (k == "command" || k == "ranks" || k == "gpu" || k == "kernel_table") {
      if (!v.is_string() || v.get<std::string>().empty())
        return field_error(source, field, "must be a non-empty string");
      const std::string text = v.get<std::string>();
      if (k == "command" || k == "ranks")
        if (auto checked = check_template(text, source, field); !checked) return checked.error();
      (k == "command" ? out.command
       : k == "ranks" ? out.ranks
       : k == "gpu"   ? out.gpu
                      : out.kernel_table) = text;
    } else if (k == "max_host_gap_us" || k == "timeout_s" || k == "modelled_host_gap_us") {
      if (!v.is_number() || !(v.get<double>() >= 0.0) || !std::isfinite(v.get<double>()) ||
          (k == "timeout_s" && v.get<double>() <= 0.0))
        return field_error(source, field,
                           k == "timeout_s" ? "must be a number > 0" : "must be a number >= 0");
      (k == "timeout_s"         ? out.timeout_s
       : k == "max_host_gap_us" ? out.max_host_gap_us
                                : out.modelled_host_gap_us) = v.get<double>();
    } else if (k == "host_time") {
      if (!v.is_string() || (v.get<std::string>() != "model" && v.get<std::string>() != "measured"))
        return field_error(source, field, "must be \"model\" or \"measured\"");
      out.host_time = v.get<std::string>();
    } else {
      return field_error(source, field,
                         "is unknown (known: command, ranks, gpu, kernel_table, max_host_gap_us, "
                         "host_time, modelled_host_gap_us, timeout_s)");
    }
  }
  if (out.command.empty()) return field_error(source, key + ".command", "is required");
  return core::Ok{};
}

std::string expand_template(const std::string& text, const SearchSpec& spec,
                            const TrialResult& fits, const std::string& work_dir) {
  const ConfigValues c = values_of(spec, fits.config);
  auto value = [&](std::string_view name) -> std::string {
    if (name == "tp") return std::to_string(c.tp);
    if (name == "pp") return std::to_string(c.pp);
    if (name == "dp") return std::to_string(fits.dp);
    if (name == "mb") return std::to_string(c.microbatch_size);
    if (name == "microbatches") return std::to_string(fits.num_microbatches);
    if (name == "v") return std::to_string(c.virtual_stages);
    if (name == "rc") return c.recompute ? "1" : "0";
    if (name == "sp") return c.sequence_parallel ? "1" : "0";
    if (name == "dopt") return c.distributed_optimizer ? "1" : "0";
    if (name == "gpus") return std::to_string(spec.num_gpus);
    if (name == "work_dir") return work_dir;
    return "{" + std::string(name) + "}";
  };
  std::string out;
  for (std::size_t i = 0; i < text.size(); ++i) {
    const std::size_t close = text[i] == '{' ? text.find('}', i) : std::string::npos;
    if (close == std::string::npos) {
      out.push_back(text[i]);
      continue;
    }
    out += value(std::string_view(text).substr(i + 1, close - i - 1));
    i = close;
  }
  return out;
}

std::string emulation_key(const SearchSpec& spec, const TrialResult& fits) {
  const EmulationSpec& e = spec.emulation;
  return fmt::format("ranks={} gpu={} cmd={}", expand_template(e.ranks, spec, fits, "{work_dir}"),
                     e.gpu.empty() ? spec.gpu : e.gpu,
                     expand_template(e.command, spec, fits, "{work_dir}"));
}

namespace {

// The whole positive number `text` is, or 0.
int parse_ranks(const std::string& text) {
  try {
    std::size_t used = 0;
    const int ranks = std::stoi(text, &used);
    return used == text.size() && ranks >= 1 ? ranks : 0;
  } catch (const std::exception&) {
    return 0;
  }
}

// The emulation's summary.json, or null when it is missing or not JSON.
nlohmann::json read_summary(const fs::path& path) {
  if (!fs::exists(path)) return nlohmann::json();
  nlohmann::json summary = nlohmann::json::parse(slurp(path), nullptr, false);
  return summary.is_discarded() ? nlohmann::json() : summary;
}

// Largest peak_memory_bytes over the summary's GPUs (0 when none says).
double peak_memory_bytes(const nlohmann::json& summary) {
  double peak_bytes = 0.0;
  if (summary.contains("gpus") && summary["gpus"].is_array())
    for (const auto& g : summary["gpus"])
      if (g.contains("peak_memory_bytes") && g["peak_memory_bytes"].is_number())
        peak_bytes = std::max(peak_bytes, g["peak_memory_bytes"].get<double>());
  return peak_bytes;
}

// The plan's frontier.csv (time,energy,realized_time,realized_energy; one pipeline, slowest
// first) as realized points, energies times `replicas`; an error names the bad line.
core::Result<std::vector<TrialPoint>> read_plan_frontier(const fs::path& path, double replicas) {
  std::vector<TrialPoint> points;
  std::istringstream in(slurp(path));
  std::string line;
  std::getline(in, line);  // header
  int index = 0;
  while (std::getline(in, line)) {
    double cols[4] = {0, 0, 0, 0};
    if (std::sscanf(line.c_str(), "%lf,%lf,%lf,%lf", &cols[0], &cols[1], &cols[2], &cols[3]) != 4)
      return core::Error{fmt::format("plan frontier.csv line {}: expected 4 numbers", index + 2)};
    points.push_back({cols[2], cols[3] * replicas, index++});
  }
  return points;
}

// Keeps a point only if it uses less energy than every point no slower (slowest first; of points
// with one time, the least energy is met first from the fast end).
std::vector<TrialPoint> pareto_points(std::vector<TrialPoint> points) {
  std::stable_sort(points.begin(), points.end(), [](const TrialPoint& a, const TrialPoint& b) {
    return a.time_s != b.time_s ? a.time_s > b.time_s : a.energy_j > b.energy_j;
  });
  double least = std::numeric_limits<double>::infinity();
  std::vector<TrialPoint> frontier;
  for (auto it = points.rbegin(); it != points.rend(); ++it) {
    if (it->energy_j < least) {
      least = it->energy_j;
      frontier.push_back(*it);
    }
  }
  std::reverse(frontier.begin(), frontier.end());
  return frontier;
}

// The "all max clock" energy of the plan's baselines.csv (baseline,label,time,energy; that row
// first) times `replicas`; `fallback` when there is none.
double read_baseline_energy_j(const fs::path& path, double replicas, double fallback) {
  std::istringstream in(slurp(path));
  std::string line;
  std::getline(in, line);
  if (std::getline(in, line))
    if (const std::size_t comma = line.rfind(','); comma != std::string::npos)
      return std::strtod(line.c_str() + comma + 1, nullptr) * replicas;
  return fallback;
}

}  // namespace

TrialResult EmulationRunner::evaluate(const SearchSpec& spec, const TrialResult& fits) const {
  const auto started = std::chrono::steady_clock::now();
  auto done = [&](TrialResult r) {
    r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    return r;
  };
  const EmulationSpec& e = spec.emulation;
  TrialResult r = fits;
  // The trial's directory: the program's {work_dir}, the emulation and the plan.
  std::string root = work_root;
  if (root.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    root = tmp != nullptr && *tmp != '\0' ? tmp : "/tmp";
  }
  std::string pattern = (fs::path(root) / "powertrain-search-trial-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr)
    return done(failed(r, TrialStatus::kInvalid,
                       fmt::format("cannot create a trial directory under {}", root)));
  TrialDir dir{pattern, keep};
  const std::string gpu = e.gpu.empty() ? spec.gpu : e.gpu;
  const std::string ranks_text = expand_template(e.ranks, spec, fits, dir.path.string());
  const int ranks = parse_ranks(ranks_text);
  if (ranks < 1 || spec.num_gpus % ranks != 0)
    return done(failed(r, TrialStatus::kInvalid,
                       fmt::format("emulation.ranks '{}' is not a positive divisor of {} GPUs",
                                   ranks_text, spec.num_gpus)));
  const std::vector<std::string> program =
      split_words(expand_template(e.command, spec, fits, dir.path.string()));
  if (program.empty())
    return done(failed(r, TrialStatus::kInvalid, "emulation.command expands to nothing"));

  const std::string gap = fmt::format("{}", e.max_host_gap_us);
  std::vector<std::string> emulate = {powertrain,
                                      "emulate",
                                      "--quiet",
                                      "--gpu",
                                      gpu,
                                      "--ranks",
                                      ranks_text,
                                      "--max-host-gap-us",
                                      gap,
                                      "--timeout-s",
                                      fmt::format("{}", e.timeout_s),
                                      "--keep-traces",
                                      "--out",
                                      (dir.path / "emu").string()};
  const std::vector<std::string> host_model =
      e.host_time == "model"
          ? std::vector<std::string>{"--host-time", "model", "--modelled-host-gap-us",
                                     fmt::format("{}", e.modelled_host_gap_us)}
          : std::vector<std::string>{};
  emulate.insert(emulate.end(), host_model.begin(), host_model.end());
  if (!interposer.empty()) emulate.insert(emulate.end(), {"--interposer", interposer});
  if (!e.kernel_table.empty()) emulate.insert(emulate.end(), {"--kernel-table", e.kernel_table});
  emulate.push_back("--");
  emulate.insert(emulate.end(), program.begin(), program.end());
  const int emulated =
      run_process(emulate, dir.path / "emulate.out", dir.path / "emulate.err", e.timeout_s + 60.0);
  nlohmann::json summary = read_summary(dir.path / "emu" / "summary.json");
  if (summary.is_object() && summary.contains("out_of_memory") &&
      summary["out_of_memory"].is_array() && !summary["out_of_memory"].empty()) {
    const auto& first = summary["out_of_memory"][0];
    return done(failed(r, TrialStatus::kOom,
                       fmt::format("emulated program ran out of GPU memory ({} of {} bytes "
                                   "requested on rank {})",
                                   first.value("api", std::string("?")),
                                   first.value("requested_bytes", 0LL), first.value("rank", -1))));
  }
  if (emulated != 0 || !summary.is_object())
    return done(failed(
        r, TrialStatus::kInvalid,
        fmt::format("emulate exited {}: {}", emulated, last_line(dir.path / "emulate.err"))));
  std::vector<std::string> plan = {powertrain,
                                   "plan",
                                   "--quiet",
                                   "--emulated",
                                   (dir.path / "emu").string(),
                                   "--gpu",
                                   gpu,
                                   "--max-host-gap-us",
                                   gap,
                                   "--out",
                                   (dir.path / "plan").string()};
  plan.insert(plan.end(), host_model.begin(), host_model.end());
  if (!e.kernel_table.empty()) plan.insert(plan.end(), {"--kernel-table", e.kernel_table});
  const int planned =
      run_process(plan, dir.path / "plan.out", dir.path / "plan.err", e.timeout_s + 60.0);
  if (planned != 0)
    return done(failed(
        r, TrialStatus::kInvalid,
        fmt::format("plan --emulated exited {}: {}", planned, last_line(dir.path / "plan.err"))));

  // The program covers `ranks` of the job's GPUs; the rest run the same work (replicas).
  const double replicas = static_cast<double>(spec.num_gpus / ranks);
  r.peak_memory_gib = peak_memory_bytes(summary) / (1024.0 * 1024.0 * 1024.0);
  const auto& job = summary["job"];
  if (!job.is_object() || !job.contains("predicted_step_s") || !job["predicted_step_s"].is_number())
    return done(
        failed(r, TrialStatus::kInvalid, "emulate summary.json has no job.predicted_step_s"));
  const double step_s = job["predicted_step_s"].get<double>();

  auto points = read_plan_frontier(dir.path / "plan" / "frontier.csv", replicas);
  if (!points) return done(failed(r, TrialStatus::kInvalid, points.error().message));
  if (points->empty())
    return done(failed(r, TrialStatus::kInvalid, "plan --emulated wrote an empty frontier"));
  r.frontier = pareto_points(std::move(*points));
  r.baseline_energy_j =
      read_baseline_energy_j(dir.path / "plan" / "baselines.csv", replicas, r.baseline_energy_j);
  // The trial's time is the emulated step (predicted at the top clock); energies from the plan.
  r.baseline_time_s = step_s;
  r.t_min_s = step_s;
  r.energy_at_t_min_j = r.frontier.back().energy_j;
  r.t_star_s = r.frontier.front().time_s;
  r.energy_at_t_star_j = r.frontier.front().energy_j;
  r.status = TrialStatus::kOk;
  r.reason = keep ? "kept " + dir.path.string() : std::string();
  return done(std::move(r));
}

TrialResult reuse_emulation(const TrialResult& leader, const TrialResult& follower) {
  TrialResult r = leader;
  r.config = follower.config;
  r.dp = follower.dp;
  r.num_microbatches = follower.num_microbatches;
  r.seconds = 0.0;  // nothing ran
  if (r.status == TrialStatus::kOk) r.reason = "same emulation as an earlier trial";
  return r;
}

}  // namespace powertrain::search
