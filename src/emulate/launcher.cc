// posix_spawn per rank with stdout and stderr on close-on-exec pipes (dup2 clears the flag on the
// child's 1 and 2), one poll() loop that splits their output into lines, then waitpid for all.
#include "emulate/launcher.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <fmt/core.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

#include "emulate/cudart_linkage.h"

extern char** environ;

namespace powertrain::emulate {
namespace {

namespace fs = std::filesystem;

std::string env_or_empty(const char* name) {
  const char* value = std::getenv(name);
  return value != nullptr ? value : "";
}

struct Child {
  int rank = 0;
  pid_t pid = -1;
  int fds[2] = {-1, -1};  // stdout, stderr read ends
  std::string partial[2];
  bool reaped = false;
  int status = 0;
};

// Each rank runs in its own process group (so a timeout also reaches what it started); the
// launcher forwards SIGINT/SIGTERM/SIGHUP to those groups while it waits.
volatile sig_atomic_t forwarded_signal = 0;
extern "C" void remember_signal(int signal) { forwarded_signal = signal; }

class SignalForwarding {
 public:
  SignalForwarding() {
    forwarded_signal = 0;
    struct sigaction action {};
    action.sa_handler = remember_signal;
    sigemptyset(&action.sa_mask);
    for (std::size_t i = 0; i < 3; ++i) ::sigaction(kSignals[i], &action, &saved_[i]);
  }
  ~SignalForwarding() {
    for (std::size_t i = 0; i < 3; ++i) ::sigaction(kSignals[i], &saved_[i], nullptr);
  }
  SignalForwarding(const SignalForwarding&) = delete;
  SignalForwarding& operator=(const SignalForwarding&) = delete;

 private:
  static constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};
  struct sigaction saved_[3]{};
};

void default_line(int rank, bool is_stderr, std::string_view line) {
  std::FILE* to = is_stderr ? stderr : stdout;
  std::fprintf(to, "[rank %d] %.*s\n", rank, static_cast<int>(line.size()), line.data());
  std::fflush(to);
}

}  // namespace

std::string ProcessExit::describe() const {
  if (signal != 0) {
    const char* name = strsignal(signal);
    return fmt::format("killed by signal {} ({}){}", signal, name != nullptr ? name : "?",
                       timed_out ? " after the timeout" : "");
  }
  return fmt::format("exit code {}", exit_code);
}

bool LaunchResult::all_ok() const {
  for (const ProcessExit& p : processes) {
    if (!p.ok()) return false;
  }
  return !processes.empty();
}

core::Result<Layout> resolve_layout(const LayoutRequest& q) {
  if (q.gpus < 0 || q.ranks < 0 || q.nodes < 0 || q.gpus_per_node < 0 ||
      q.devices_per_process < 0) {
    return core::Error{
        "--gpus, --ranks, --nodes, --gpus-per-node and --devices-per-process must "
        "be at least 1"};
  }
  const bool topology = q.nodes > 0 || q.gpus_per_node > 0;
  std::int64_t gpus = 1;
  if (q.gpus > 0) {
    gpus = q.gpus;
  } else if (topology) {
    gpus = std::int64_t{q.nodes > 0 ? q.nodes : 1} * (q.gpus_per_node > 0 ? q.gpus_per_node : 8);
  } else if (q.ranks > 0) {
    gpus = std::int64_t{q.ranks} * (q.devices_per_process > 0 ? q.devices_per_process : 1);
  } else if (q.devices_per_process > 0) {
    gpus = q.devices_per_process;
  }
  if (gpus > 1'048'576) return core::Error{fmt::format("{} GPUs is more than 2^20", gpus)};
  std::int64_t processes = 1;
  std::string why;
  if (q.ranks > 0) {
    processes = q.ranks;
    why = "--ranks";
  } else if (q.devices_per_process > 0) {
    if (gpus % q.devices_per_process != 0) {
      return core::Error{fmt::format("--devices-per-process {} does not divide the job's {} GPUs",
                                     q.devices_per_process, gpus)};
    }
    processes = gpus / q.devices_per_process;
    why = "--devices-per-process";
  } else if (q.nodes > 1) {
    processes = q.nodes;
    why = "the default with --nodes: one process per node; --ranks N for N processes";
  } else {
    why =
        "the default: one process sees every GPU; --ranks N starts N processes "
        "(torchrun-style, RANK/WORLD_SIZE set)";
  }
  if (gpus % processes != 0) {
    return core::Error{
        fmt::format("--ranks {}: the job's {} GPU(s) do not divide among them", processes, gpus)};
  }
  const std::int64_t per_process = gpus / processes;
  if (q.devices_per_process > 0 && per_process != q.devices_per_process) {
    return core::Error{
        fmt::format("--devices-per-process {} contradicts {} GPU(s) over --ranks {} ({} each)",
                    q.devices_per_process, gpus, processes, per_process)};
  }
  std::int64_t per_node = q.gpus_per_node;
  if (per_node <= 0) {
    if (q.nodes > 0) {
      if (gpus % q.nodes != 0) {
        return core::Error{
            fmt::format("--gpus {} does not divide among --nodes {}", gpus, q.nodes)};
      }
      per_node = gpus / q.nodes;
    } else {
      per_node = gpus <= 8 ? gpus : 8;
    }
  }
  if (gpus % per_node != 0) {
    return core::Error{
        fmt::format("{} GPU(s) do not fill nodes of {} GPU(s); give --gpus-per-node (and --nodes)",
                    gpus, per_node)};
  }
  const std::int64_t nodes = gpus / per_node;
  if (q.nodes > 0 && q.nodes != nodes) {
    return core::Error{
        fmt::format("--nodes {} x --gpus-per-node {} is not --gpus {}", q.nodes, per_node, gpus)};
  }
  if (per_node % per_process != 0 && per_process % per_node != 0) {
    return core::Error{fmt::format("--devices-per-process {} does not divide --gpus-per-node {}",
                                   per_process, per_node)};
  }
  Layout layout;
  layout.nodes = static_cast<int>(nodes);
  layout.gpus_per_node = static_cast<int>(per_node);
  layout.devices_per_process = static_cast<int>(per_process);
  layout.processes = static_cast<int>(processes);
  layout.explanation = fmt::format("{} process{} x {} device{} = {} GPU(s) on {} node(s) x {} ({})",
                                   processes, processes == 1 ? "" : "es", per_process,
                                   per_process == 1 ? "" : "s", gpus, nodes, per_node, why);
  return layout;
}

std::string compute_capability(const device::GpuSpec& gpu) {
  if (gpu.name.rfind("h100", 0) == 0 || gpu.name.rfind("h200", 0) == 0) return "9.0";
  if (gpu.name == "a40") return "8.6";
  if (gpu.name.rfind("a100", 0) == 0) return "8.0";
  if (gpu.name.rfind("v100", 0) == 0) return "7.0";
  return "9.0";
}

std::vector<std::string> rank_environment(const LaunchOptions& o, const device::GpuSpec& gpu,
                                          int rank, int world_size, int master_port) {
  // A process may drive whole nodes (devices_per_process a multiple of gpus_per_node).
  const int local_world = std::max(1, o.gpus_per_node / o.devices_per_process);
  const int node_rank =
      static_cast<int>(std::int64_t{rank} * o.devices_per_process / std::max(o.gpus_per_node, 1));
  std::string preload = o.interposer;
  if (const std::string inherited = env_or_empty("LD_PRELOAD"); !inherited.empty()) {
    preload += ":" + inherited;
  }
  // The fake libcuda.so.1 (driver API) and libnvidia-ml.so.1 (NVML), built next to the
  // interposer in driver/, go first on the library path, so programs linked with -lcuda and
  // dlopen("libcuda.so.1") or dlopen("libnvidia-ml.so.1") find them.
  std::string library_path;
  const fs::path driver_dir = fs::path(o.interposer).parent_path() / "driver";
  std::error_code ec;
  if (fs::is_regular_file(driver_dir / "libcuda.so.1", ec)) library_path = driver_dir.string();
  if (const std::string inherited = env_or_empty("LD_LIBRARY_PATH"); !inherited.empty()) {
    library_path += (library_path.empty() ? "" : ":") + inherited;
  }
  const auto memory = static_cast<std::int64_t>(gpu.memory_gib * 1073741824.0);
  return {
      fmt::format("LD_LIBRARY_PATH={}", library_path),
      // NVTX v3 (header-only) sends its ranges to the library this names (the interposer).
      fmt::format("NVTX_INJECTION64_PATH={}", o.interposer),
      fmt::format("RANK={}", rank),
      fmt::format("WORLD_SIZE={}", world_size),
      fmt::format("LOCAL_RANK={}", rank % local_world),
      fmt::format("LOCAL_WORLD_SIZE={}", local_world),
      fmt::format("NODE_RANK={}", node_rank),
      "MASTER_ADDR=127.0.0.1",
      fmt::format("MASTER_PORT={}", master_port),
      fmt::format("LD_PRELOAD={}", preload),
      fmt::format("POWERTRAIN_EMU_DIR={}", fs::absolute(o.trace_dir).string()),
      fmt::format("POWERTRAIN_EMU_GPU={}", gpu.name),
      fmt::format("POWERTRAIN_EMU_GPU_NAME={}", gpu.display_name),
      fmt::format("POWERTRAIN_EMU_MEMORY_BYTES={}", memory),
      fmt::format("POWERTRAIN_EMU_SM_COUNT={}", gpu.sm_count),
      fmt::format("POWERTRAIN_EMU_CC={}", compute_capability(gpu)),
      fmt::format("POWERTRAIN_EMU_CLOCK_MHZ={}", gpu.max_clock_mhz()),
      fmt::format("POWERTRAIN_EMU_MIN_CLOCK_MHZ={}", gpu.min_clock_mhz()),
      fmt::format("POWERTRAIN_EMU_CLOCK_STEP_MHZ={}",
                  gpu.clocks_mhz.size() > 1 ? gpu.clocks_mhz[1] - gpu.clocks_mhz[0] : 15),
      fmt::format("POWERTRAIN_EMU_POWER_LIMIT_W={}", static_cast<int>(gpu.dvfs.power_limit_w)),
      fmt::format("POWERTRAIN_EMU_DEVICES={}", o.devices_per_process),
      // NVML lists the node's GPUs; this process's devices are a slice of them.
      fmt::format("POWERTRAIN_EMU_NODE_GPUS={}", std::max(o.gpus_per_node, o.devices_per_process)),
      fmt::format(
          "POWERTRAIN_EMU_FIRST_NODE_GPU={}",
          o.devices_per_process < o.gpus_per_node
              ? static_cast<int>(std::int64_t{rank} * o.devices_per_process % o.gpus_per_node)
              : 0),
      fmt::format("POWERTRAIN_EMU_JOB={}", o.job_id),
      // Empty in a recording pass (an inherited value must not leak into it).
      fmt::format("POWERTRAIN_EMU_EVENT_TIMES={}", o.event_times_dir.empty()
                                                       ? std::string()
                                                       : fs::absolute(o.event_times_dir).string()),
  };
}

core::Result<std::string> find_interposer(const std::string& explicit_path,
                                          const fs::path& self_dir) {
  constexpr const char* kName = "libpowertrain_cuda.so";
  std::error_code ec;
  if (!explicit_path.empty()) {
    if (!fs::is_regular_file(explicit_path, ec)) {
      return core::Error{fmt::format("--interposer {}: no such file", explicit_path)};
    }
    return fs::absolute(explicit_path).string();
  }
  if (const std::string env = env_or_empty("POWERTRAIN_INTERPOSER"); !env.empty()) {
    if (!fs::is_regular_file(env, ec)) {
      return core::Error{fmt::format("POWERTRAIN_INTERPOSER={}: no such file", env)};
    }
    return fs::absolute(env).string();
  }
  const fs::path candidates[] = {self_dir / kName, self_dir / "src" / "interposer" / kName,
                                 self_dir / "interposer" / kName, self_dir / ".." / "lib" / kName,
                                 self_dir / ".." / "lib" / "powertrain" / kName};
  std::string looked;
  for (const fs::path& c : candidates) {
    if (fs::is_regular_file(c, ec)) return fs::weakly_canonical(c, ec).string();
    if (!looked.empty()) looked += ", ";
    looked += c.lexically_normal().string();
  }
  return core::Error{
      fmt::format("interposer {} not found (looked in {}); build it (cmake --build BUILD --target "
                  "powertrain_cuda) or pass --interposer PATH or set POWERTRAIN_INTERPOSER",
                  kName, looked)};
}

core::Result<std::string> resolve_program(const std::string& name) {
  if (name.empty()) return core::Error{"no program given"};
  if (name.find('/') != std::string::npos) {
    if (::access(name.c_str(), X_OK) != 0) {
      return core::Error{
          fmt::format("{}: not an executable file ({})", name, std::strerror(errno))};
    }
    return name;
  }
  const std::string path = env_or_empty("PATH");
  std::size_t begin = 0;
  while (begin <= path.size()) {
    std::size_t end = path.find(':', begin);
    if (end == std::string::npos) end = path.size();
    const std::string dir = end > begin ? path.substr(begin, end - begin) : ".";
    const std::string candidate = dir + "/" + name;
    std::error_code ec;
    if (fs::is_regular_file(candidate, ec) && ::access(candidate.c_str(), X_OK) == 0) {
      return candidate;
    }
    begin = end + 1;
  }
  return core::Error{fmt::format("{}: command not found in PATH", name)};
}

int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return 29500;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  address.sin_port = 0;
  socklen_t length = sizeof(address);
  int port = 29500;  // PyTorch's default, when the kernel will not tell
  if (::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  ::close(fd);
  return port;
}

namespace {

using LineCallback = std::function<void(int rank, bool is_stderr, std::string_view line)>;

// The number of processes of a launch; errors for an impossible layout.
core::Result<int> world_size(const LaunchOptions& o) {
  if (o.nodes < 1 || o.gpus_per_node < 1 || o.devices_per_process < 1) {
    return core::Error{"--nodes, --gpus-per-node and --devices-per-process must be at least 1"};
  }
  if (o.gpus_per_node % o.devices_per_process != 0 &&
      (o.devices_per_process % o.gpus_per_node != 0 ||
       (std::int64_t{o.nodes} * o.gpus_per_node) % o.devices_per_process != 0)) {
    return core::Error{fmt::format("--devices-per-process {} does not divide --gpus-per-node {}",
                                   o.devices_per_process, o.gpus_per_node)};
  }
  const int world = o.nodes * o.gpus_per_node / o.devices_per_process;
  if (world > 4096)
    return core::Error{fmt::format("{} processes is more than the limit of 4096", world)};
  return world;
}

// The inherited environment minus what each rank gets explicitly.
std::vector<std::string> inherited_environment() {
  std::vector<std::string> base;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string_view entry(*e);
    const std::string_view name = entry.substr(0, entry.find('='));
    static constexpr std::string_view kOwn[] = {
        "RANK",        "WORLD_SIZE",  "LOCAL_RANK", "LOCAL_WORLD_SIZE", "NODE_RANK",
        "MASTER_ADDR", "MASTER_PORT", "LD_PRELOAD", "LD_LIBRARY_PATH",  "NVTX_INJECTION64_PATH"};
    bool own = name.rfind("POWERTRAIN_EMU_", 0) == 0;
    for (std::string_view k : kOwn) own = own || name == k;
    if (!own) base.emplace_back(entry);
  }
  return base;
}

// Starts one rank in its own process group with stdin from /dev/null and stdout/stderr on pipes
// (read ends in child.fds). Returns an error message, empty on success.
std::string spawn_rank(Child& child, const std::string& program, std::vector<char*>& argv,
                       std::vector<std::string> env) {
  int out[2], err[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return fmt::format("pipe: {}", std::strerror(errno));
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(out[0]);
    ::close(out[1]);
    return fmt::format("pipe: {}", std::strerror(errno));
  }
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawnattr_t attributes;
  posix_spawnattr_init(&attributes);
  posix_spawnattr_setflags(&attributes, POSIX_SPAWN_SETPGROUP);
  posix_spawnattr_setpgroup(&attributes, 0);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out[1], 1);
  posix_spawn_file_actions_adddup2(&actions, err[1], 2);
  pid_t pid = -1;
  const int rc =
      ::posix_spawn(&pid, program.c_str(), &actions, &attributes, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attributes);
  ::close(out[1]);
  ::close(err[1]);
  if (rc != 0) {
    ::close(out[0]);
    ::close(err[0]);
    return fmt::format("cannot start {}: {}", program, std::strerror(rc));
  }
  child.pid = pid;
  child.fds[0] = out[0];
  child.fds[1] = err[0];
  return {};
}

void signal_all(const std::vector<Child>& children, int signal) {
  for (const Child& c : children) {
    if (c.pid > 0) ::kill(-c.pid, signal);
  }
}

// Reads what became readable on child.fds[s], passing complete lines on; closes the pipe at its
// end.
void read_output(Child& child, int s, int fd, const LineCallback& on_line) {
  char buffer[65536];
  const ssize_t n = ::read(fd, buffer, sizeof(buffer));
  if (n > 0) {
    std::string& partial = child.partial[s];
    partial.append(buffer, static_cast<std::size_t>(n));
    std::size_t begin = 0;
    for (std::size_t nl; (nl = partial.find('\n', begin)) != std::string::npos; begin = nl + 1) {
      on_line(child.rank, s == 1, std::string_view(partial).substr(begin, nl - begin));
    }
    partial.erase(0, begin);
  } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
    if (!child.partial[s].empty()) on_line(child.rank, s == 1, child.partial[s]);
    child.partial[s].clear();
    ::close(child.fds[s]);
    child.fds[s] = -1;
  }
}

// Forwards output until every pipe is closed, forwarding signals and enforcing the timeout
// (SIGTERM, then SIGKILL 5 s later). Returns true when the timeout terminated the processes.
bool forward_output(std::vector<Child>& children, double timeout_s,
                    std::chrono::steady_clock::time_point started, const LineCallback& on_line) {
  bool terminated = false;
  bool killed = false;
  for (;;) {
    std::vector<pollfd> fds;
    std::vector<std::pair<int, int>> owner;  // (child, stream)
    for (std::size_t c = 0; c < children.size(); ++c) {
      for (int s = 0; s < 2; ++s) {
        if (children[c].fds[s] >= 0) {
          fds.push_back({children[c].fds[s], POLLIN, 0});
          owner.emplace_back(static_cast<int>(c), s);
        }
      }
    }
    if (fds.empty()) break;
    if (const int signal = forwarded_signal; signal != 0) {
      forwarded_signal = 0;
      signal_all(children, signal);
    }
    int wait_ms = 200;  // also wakes up for signals delivered to another thread
    if (timeout_s > 0.0) {
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      const double deadline = terminated ? timeout_s + 5.0 : timeout_s;
      if (elapsed >= deadline) {
        signal_all(children, terminated ? SIGKILL : SIGTERM);
        killed = killed || terminated;
        terminated = true;
        if (killed) {
          for (Child& c : children) {
            for (int& fd : c.fds) {
              if (fd >= 0) ::close(fd);
              fd = -1;
            }
          }
          break;
        }
        continue;
      }
      wait_ms = std::min(wait_ms, static_cast<int>((deadline - elapsed) * 1000.0) + 1);
    }
    const int ready = ::poll(fds.data(), fds.size(), wait_ms);
    if (ready < 0 && errno != EINTR) break;
    for (std::size_t k = 0; k < fds.size() && ready > 0; ++k) {
      if (fds[k].revents == 0) continue;
      read_output(children[owner[k].first], owner[k].second, fds[k].fd, on_line);
    }
  }
  return terminated;
}

}  // namespace

core::Result<LaunchResult> launch(const LaunchOptions& o) {
  if (o.command.empty()) return core::Error{"no program given (put it after --)"};
  auto world_or = world_size(o);
  if (!world_or) return world_or.error();
  const int world = *world_or;
  auto gpu = device::find_gpu(o.gpu);
  if (!gpu) return gpu.error();
  auto program = resolve_program(o.command.front());
  if (!program) return program.error();
  if (o.check_static_cudart) {
    auto found = inspect_cudart(*program);
    if (!found) return found.error();
    if (found->linkage == CudartLinkage::kStatic) {
      return core::Error{static_cudart_message(o.command.front(), *found)};
    }
  }
  std::error_code ec;
  if (o.interposer.empty() || !fs::is_regular_file(o.interposer, ec)) {
    return core::Error{fmt::format("interposer '{}' not found", o.interposer)};
  }
  fs::create_directories(o.trace_dir, ec);
  if (ec) {
    return core::Error{fmt::format("{}: cannot create ({})", o.trace_dir.string(), ec.message())};
  }
  LaunchOptions options = o;
  options.interposer = fs::absolute(o.interposer).string();
  if (options.job_id.empty()) {
    options.job_id = fmt::format("{}-{}", ::getpid(),
                                 std::chrono::duration_cast<std::chrono::milliseconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count());
  }
  const LineCallback on_line = o.on_line ? o.on_line : default_line;

  LaunchResult result;
  result.world_size = world;
  result.gpus = world * o.devices_per_process;
  result.master_port = free_port();
  const auto started = std::chrono::steady_clock::now();
  const std::vector<std::string> base = inherited_environment();

  SignalForwarding forwarding;
  std::vector<Child> children(world);
  std::vector<char*> argv;
  for (const std::string& a : o.command) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  std::string spawn_error;
  for (int rank = 0; rank < world && spawn_error.empty(); ++rank) {
    children[rank].rank = rank;
    std::vector<std::string> env = base;
    for (std::string& e : rank_environment(options, *gpu, rank, world, result.master_port)) {
      env.push_back(std::move(e));
    }
    spawn_error = spawn_rank(children[rank], *program, argv, std::move(env));
  }
  if (!spawn_error.empty()) signal_all(children, SIGKILL);

  const bool terminated = forward_output(children, o.timeout_s, started, on_line);
  for (Child& c : children) {
    if (c.pid <= 0) continue;
    while (::waitpid(c.pid, &c.status, 0) < 0 && errno == EINTR) {
    }
    ProcessExit exit;
    exit.rank = c.rank;
    exit.pid = c.pid;
    exit.timed_out = terminated;
    if (WIFEXITED(c.status)) exit.exit_code = WEXITSTATUS(c.status);
    if (WIFSIGNALED(c.status)) exit.signal = WTERMSIG(c.status);
    result.processes.push_back(exit);
  }
  if (!spawn_error.empty()) return core::Error{spawn_error};
  result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return result;
}

}  // namespace powertrain::emulate
