#include "analyze/analyze.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include "graph/step_windows.h"

namespace powertrain::analyze {
namespace {

bool contains_ci(std::string_view text, std::string_view needle) {
  if (needle.size() > text.size()) return false;
  for (std::size_t i = 0; i + needle.size() <= text.size(); ++i) {
    std::size_t j = 0;
    while (j < needle.size() && std::tolower(static_cast<unsigned char>(text[i + j])) == needle[j])
      ++j;
    if (j == needle.size()) return true;
  }
  return false;
}

bool starts_with_ci(std::string_view text, std::string_view prefix) {
  if (prefix.size() > text.size()) return false;
  for (std::size_t i = 0; i < prefix.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(text[i])) != prefix[i]) return false;
  return true;
}

std::vector<Span> clipped(const std::vector<Span>& spans, const Window& window) {
  std::vector<Span> out;
  out.reserve(spans.size());
  for (const Span& s : spans) {
    const std::int64_t a = std::max(s.start_ns, window.start_ns);
    const std::int64_t b = std::min(s.end_ns, window.end_ns);
    if (b > a) out.push_back({a, b});
  }
  return out;
}

}  // namespace

std::string_view to_string(KernelType type) {
  switch (type) {
    case KernelType::kComputation:
      return "computation";
    case KernelType::kCommunication:
      return "communication";
    case KernelType::kMemory:
      return "memory";
  }
  return "?";
}

std::string_view to_string(CommLibrary library) {
  switch (library) {
    case CommLibrary::kNone:
      return "none";
    case CommLibrary::kNccl:
      return "NCCL";
    case CommLibrary::kRccl:
      return "RCCL";
    case CommLibrary::kDeepEp:
      return "DeepEP";
    case CommLibrary::kNvshmem:
      return "NVSHMEM";
    case CommLibrary::kGloo:
      return "Gloo";
  }
  return "?";
}

std::string_view to_string(WindowKind kind) {
  switch (kind) {
    case WindowKind::kSteps:
      return "steps";
    case WindowKind::kGpuSpan:
      return "gpu-span";
    case WindowKind::kWhole:
      return "whole";
  }
  return "?";
}

std::optional<WindowKind> parse_window_kind(std::string_view text) {
  if (text == "steps") return WindowKind::kSteps;
  if (text == "gpu-span") return WindowKind::kGpuSpan;
  if (text == "whole") return WindowKind::kWhole;
  return std::nullopt;
}

CommLibrary comm_library(std::string_view name) {
  if (contains_ci(name, "rccl") || contains_ci(name, "msccl")) return CommLibrary::kRccl;
  if (contains_ci(name, "deep_ep")) return CommLibrary::kDeepEp;
  if (contains_ci(name, "nvshmem")) return CommLibrary::kNvshmem;
  if (starts_with_ci(name, "nccl")) return CommLibrary::kNccl;
  if (contains_ci(name, "gloo:")) return CommLibrary::kGloo;
  return CommLibrary::kNone;
}

KernelType kernel_type(trace::EventKind kind, std::string_view name) {
  if (kind == trace::EventKind::kGpuMemcpy || kind == trace::EventKind::kGpuMemset)
    return KernelType::kMemory;
  return comm_library(name) != CommLibrary::kNone ? KernelType::kCommunication
                                                  : KernelType::kComputation;
}

std::string state_name(int mask) {
  std::string name;
  for (int t = 0; t < kKernelTypes; ++t) {
    if ((mask & (1 << t)) == 0) continue;
    if (!name.empty()) name += "+";
    name += to_string(static_cast<KernelType>(t));
  }
  return name.empty() ? "idle" : name;
}

std::vector<Span> merge_spans(std::vector<Span> spans) {
  std::sort(spans.begin(), spans.end(),
            [](const Span& a, const Span& b) { return a.start_ns < b.start_ns; });
  std::vector<Span> merged;
  for (const Span& s : spans) {
    if (s.end_ns <= s.start_ns) continue;
    if (!merged.empty() && s.start_ns <= merged.back().end_ns) {
      merged.back().end_ns = std::max(merged.back().end_ns, s.end_ns);
    } else {
      merged.push_back(s);
    }
  }
  return merged;
}

std::int64_t total_length(const std::vector<Span>& merged) {
  std::int64_t n = 0;
  for (const Span& s : merged) n += s.end_ns - s.start_ns;
  return n;
}

std::int64_t intersection_length(const std::vector<Span>& a, const std::vector<Span>& b) {
  std::int64_t n = 0;
  std::size_t i = 0, j = 0;
  while (i < a.size() && j < b.size()) {
    const std::int64_t lo = std::max(a[i].start_ns, b[j].start_ns);
    const std::int64_t hi = std::min(a[i].end_ns, b[j].end_ns);
    if (hi > lo) n += hi - lo;
    if (a[i].end_ns < b[j].end_ns) {
      ++i;
    } else {
      ++j;
    }
  }
  return n;
}

std::string memcpy_direction(std::string_view name) {
  for (std::string_view d : {"HtoD", "DtoH", "DtoD", "HtoH", "PtoP", "DtoA", "AtoD"})
    if (name.find(d) != std::string_view::npos) return std::string(d);
  return "other";
}

DelayStats delay_stats(std::vector<std::int64_t> values) {
  DelayStats stats;
  if (values.empty()) return stats;
  std::sort(values.begin(), values.end());
  const std::size_t n = values.size();
  stats.count = static_cast<std::int64_t>(n);
  double sum = 0.0;
  for (std::int64_t v : values) sum += static_cast<double>(v);
  stats.mean_ns = sum / static_cast<double>(n);
  auto rank = [&](double p) {
    std::size_t k = static_cast<std::size_t>(std::ceil(p * static_cast<double>(n)));
    return values[std::clamp<std::size_t>(k, 1, n) - 1];
  };
  stats.p50_ns = rank(0.50);
  stats.p95_ns = rank(0.95);
  stats.min_ns = values.front();
  stats.max_ns = values.back();
  return stats;
}

namespace {

// The step windows as the replay counts them (graph/step_windows.h): (start, end) in time order.
std::vector<std::pair<std::int64_t, std::int64_t>> step_spans(const trace::RankTrace& trace,
                                                              const graph::StepWindows& steps) {
  std::vector<std::pair<std::int64_t, std::int64_t>> spans;
  for (std::uint32_t i : steps.events) {
    const trace::TraceEvent& e = trace.events[i];
    spans.emplace_back(e.start_ns, e.start_ns + std::max<std::int64_t>(0, e.duration_ns));
  }
  return spans;
}

Window window_of(const trace::RankTrace& trace, WindowKind kind, const graph::StepWindows& steps) {
  const auto spans = step_spans(trace, steps);
  Window window;
  window.requested = kind;
  std::int64_t lo = std::numeric_limits<std::int64_t>::max();
  std::int64_t hi = std::numeric_limits<std::int64_t>::min();
  auto finish = [&](WindowKind used) {
    window.used = used;
    if (hi < lo) {
      window.start_ns = window.end_ns = 0;
    } else {
      window.start_ns = lo;
      window.end_ns = hi;
    }
    // Steps inside the window; all of them stand for step_count (missing spans, threads).
    window.steps = 0;
    for (const auto& [a, b] : spans)
      if (a >= window.start_ns && b <= window.end_ns) ++window.steps;
    if (window.steps == static_cast<int>(spans.size()) && !spans.empty())
      window.steps = steps.step_count;
    return window;
  };
  if (kind == WindowKind::kSteps && !spans.empty()) {
    for (const auto& [a, b] : spans) {
      lo = std::min(lo, a);
      hi = std::max(hi, b);
    }
    return finish(WindowKind::kSteps);
  }
  const bool whole = kind == WindowKind::kWhole;
  for (const trace::TraceEvent& e : trace.events) {
    if (!whole && !trace::is_gpu_work(e.kind)) continue;
    lo = std::min(lo, e.start_ns);
    hi = std::max(hi, e.start_ns + e.duration_ns);
  }
  return finish(whole ? WindowKind::kWhole : WindowKind::kGpuSpan);
}

}  // namespace

Window choose_window(const trace::RankTrace& trace, WindowKind kind) {
  return window_of(trace, kind, graph::step_windows(trace));
}

namespace {

struct StreamEvent {
  std::int64_t start_ns, end_ns, launch_ns;  // launch_ns: kUnknown when unknown
};
constexpr std::int64_t kUnknown = std::numeric_limits<std::int64_t>::min();

// One stream's queue length, launch delays and idle-time breakdown inside the window; gaps
// shorter than `kernel_delay_ns` after an already launched event are kernel wait.
StreamStats stream_stats(const std::pair<std::int64_t, std::int64_t>& key,
                         std::vector<StreamEvent>& events, const Window& window,
                         std::int64_t kernel_delay_ns) {
  StreamStats st;
  st.device = key.first;
  st.stream = key.second;
  std::sort(events.begin(), events.end(), [](const StreamEvent& a, const StreamEvent& b) {
    return std::tie(a.start_ns, a.end_ns) < std::tie(b.start_ns, b.end_ns);
  });
  std::vector<Span> spans;
  std::vector<std::int64_t> delays;
  std::vector<std::pair<std::int64_t, int>> queue;  // (time, +1 enqueue / −1 finish)
  for (const StreamEvent& ev : events) {
    spans.push_back({ev.start_ns, ev.end_ns});
    const bool inside = ev.start_ns >= window.start_ns && ev.start_ns < window.end_ns;
    if (inside) {
      ++st.gpu_events;
      if (ev.launch_ns == kUnknown) {
        ++st.without_launch;
      } else {
        delays.push_back(ev.start_ns - ev.launch_ns);
      }
    }
    const std::int64_t enqueued =
        ev.launch_ns == kUnknown ? ev.start_ns : std::min(ev.launch_ns, ev.start_ns);
    queue.emplace_back(enqueued, +1);
    queue.emplace_back(ev.end_ns, -1);
  }
  st.busy_ns = total_length(clipped(merge_spans(spans), window));
  st.launch_delay = delay_stats(std::move(delays));
  // Finishes sort before enqueues at the same instant: a back-to-back pair is not two deep.
  std::sort(queue.begin(), queue.end());
  std::int64_t depth = 0;
  double area = 0.0;
  for (std::size_t i = 0; i < queue.size(); ++i) {
    depth += queue[i].second;
    const std::int64_t t0 = queue[i].first;
    const std::int64_t t1 = i + 1 < queue.size() ? queue[i + 1].first : t0;
    const std::int64_t a = std::max(t0, window.start_ns);
    const std::int64_t b = std::min(t1, window.end_ns);
    if (b > a) {
      area += static_cast<double>(depth) * static_cast<double>(b - a);
      st.max_queue_length = std::max(st.max_queue_length, depth);
    }
  }
  if (window.length_ns() > 0) area /= static_cast<double>(window.length_ns());
  st.mean_queue_length = area;
  // Idle gaps between consecutive events (previous end = running maximum of ends).
  std::int64_t prev_end = kUnknown;
  for (const StreamEvent& ev : events) {
    if (prev_end != kUnknown && ev.start_ns > prev_end) {
      const std::int64_t a = std::max(prev_end, window.start_ns);
      const std::int64_t b = std::min(ev.start_ns, window.end_ns);
      if (b > a) {
        const std::int64_t gap = ev.start_ns - prev_end;
        int category = 2;
        if (ev.launch_ns != kUnknown && ev.launch_ns > prev_end) {
          category = 0;
        } else if (gap < kernel_delay_ns) {
          category = 1;
        }
        (category == 0   ? st.idle_host_wait_ns
         : category == 1 ? st.idle_kernel_wait_ns
                         : st.idle_other_ns) += b - a;
        ++st.gaps[category];
      }
    }
    prev_end = prev_end == kUnknown ? ev.end_ns : std::max(prev_end, ev.end_ns);
  }
  return st;
}

// Per bin of the window: how much of it each kernel type's merged spans cover (fractions).
void fill_timeline_bins(const std::vector<Span> (&merged)[kKernelTypes], const Window& window,
                        int n_bins, RankAnalysis& result) {
  if (window.length_ns() > 0 && n_bins > 0) {
    const int n = n_bins;
    const double width = static_cast<double>(window.length_ns()) / n;
    result.bins.assign(n, {0.0f, 0.0f, 0.0f});
    std::vector<double> acc(static_cast<std::size_t>(n) * kKernelTypes, 0.0);
    for (int t = 0; t < kKernelTypes; ++t)
      for (const Span& s : merged[t]) {
        const double a = static_cast<double>(s.start_ns - window.start_ns);
        const double b = static_cast<double>(s.end_ns - window.start_ns);
        for (int k = std::max(0, static_cast<int>(a / width)); k < n; ++k) {
          const double lo = std::max(a, k * width), hi = std::min(b, (k + 1) * width);
          if (hi <= lo) {
            if (k * width >= b) break;
            continue;
          }
          acc[static_cast<std::size_t>(k) * kKernelTypes + t] += hi - lo;
        }
      }
    for (int k = 0; k < n; ++k)
      for (int t = 0; t < kKernelTypes; ++t)
        result.bins[k][t] =
            static_cast<float>(acc[static_cast<std::size_t>(k) * kKernelTypes + t] / width);
  }
}

// Exclusive states: sweep the boundaries of the merged lists of each type; a state is the set
// of types busy at once (a bit mask).
void add_exclusive_states(const std::vector<Span> (&merged)[kKernelTypes],
                          KernelTypeBreakdown& types) {
  std::vector<std::pair<std::int64_t, int>> edges;  // (time, +bit / -bit)
  for (int t = 0; t < kKernelTypes; ++t)
    for (const Span& s : merged[t]) {
      edges.emplace_back(s.start_ns, 1 << t);
      edges.emplace_back(s.end_ns, -(1 << t));
    }
  std::sort(edges.begin(), edges.end());
  int mask = 0;
  for (std::size_t i = 0; i < edges.size(); ++i) {
    mask += edges[i].second;
    if (i + 1 < edges.size() && mask > 0)
      types.state_ns[mask] += edges[i + 1].first - edges[i].first;
  }
}

// Launch calls by correlation: the first runtime/driver call carrying it.
std::unordered_map<std::int64_t, std::int64_t> launch_starts(const trace::RankTrace& trace) {
  std::unordered_map<std::int64_t, std::int64_t> launch_start;
  for (const trace::TraceEvent& e : trace.events) {
    if ((e.kind == trace::EventKind::kCudaRuntime || e.kind == trace::EventKind::kCudaDriver) &&
        e.correlation >= 0)
      launch_start.emplace(e.correlation, e.start_ns);
  }
  return launch_start;
}

// The rank's GPU work gathered in one pass: spans clipped to the window per kernel type and per
// communication library, per-name and per-copy-direction statistics, events per stream.
struct GpuWork {
  std::vector<Span> by_type[kKernelTypes];
  std::vector<Span> by_library[kCommLibraries];
  std::map<std::string, KernelStat> stats;
  std::map<std::string, MemcpyStat> copies;
  std::map<std::pair<std::int64_t, std::int64_t>, std::vector<StreamEvent>> streams;
};

// Also counts, in `result`, the kernel types' time and events and the GPU events in the window.
void collect_gpu_work(const trace::RankTrace& trace, const MemcpyBytes* bytes, GpuWork& work,
                      RankAnalysis& result) {
  const Window& window = result.window;
  const std::unordered_map<std::int64_t, std::int64_t> launch_start = launch_starts(trace);
  for (const trace::TraceEvent& e : trace.events) {
    if (!trace::is_gpu_work(e.kind)) continue;
    const std::string& name = trace.name_of(e);
    const std::int64_t end = e.start_ns + e.duration_ns;
    const KernelType type = kernel_type(e.kind, name);
    const CommLibrary library =
        type == KernelType::kCommunication ? comm_library(name) : CommLibrary::kNone;
    const auto launch = launch_start.find(e.correlation);
    work.streams[{e.pid, e.tid}].push_back(
        {e.start_ns, end, launch == launch_start.end() ? kUnknown : launch->second});
    const std::int64_t a = std::max(e.start_ns, window.start_ns);
    const std::int64_t b = std::min(end, window.end_ns);
    if (b > a ||
        (e.duration_ns == 0 && e.start_ns >= window.start_ns && e.start_ns < window.end_ns)) {
      if (b > a) {
        work.by_type[static_cast<int>(type)].push_back({a, b});
        work.by_library[static_cast<int>(library)].push_back({a, b});
        result.types.sum_ns[static_cast<int>(type)] += b - a;
      }
      ++result.types.count[static_cast<int>(type)];
    }
    if (e.start_ns < window.start_ns || e.start_ns >= window.end_ns) continue;
    ++result.gpu_events;
    KernelStat& s = work.stats[name];
    if (s.count == 0) {
      s.name = name;
      s.type = type;
      s.library = library;
      s.min_ns = e.duration_ns;
      s.max_ns = e.duration_ns;
    }
    ++s.count;
    s.total_ns += e.duration_ns;
    s.min_ns = std::min(s.min_ns, e.duration_ns);
    s.max_ns = std::max(s.max_ns, e.duration_ns);
    if (e.kind == trace::EventKind::kGpuMemcpy) {
      MemcpyStat& m = work.copies[memcpy_direction(name)];
      m.direction = memcpy_direction(name);
      ++m.count;
      if (bytes != nullptr) {
        if (const auto it = bytes->find(e.correlation); it != bytes->end() && it->second >= 0) {
          ++m.with_bytes;
          m.bytes += it->second;
          m.duration_ns += e.duration_ns;
        }
      }
    }
  }
}

// Temporal breakdown, communication overlap, timeline bins and kernel-type states.
void add_breakdowns(const std::vector<Span> (&by_type)[kKernelTypes], int timeline_bins,
                    RankAnalysis& result) {
  std::vector<Span> merged[kKernelTypes];
  std::vector<Span> all;
  for (int t = 0; t < kKernelTypes; ++t) {
    merged[t] = merge_spans(by_type[t]);
    result.types.union_ns[t] = total_length(merged[t]);
    all.insert(all.end(), merged[t].begin(), merged[t].end());
  }
  const std::vector<Span> busy = merge_spans(all);
  result.temporal.window_ns = result.window.length_ns();
  const std::int64_t busy_ns = total_length(busy);
  result.temporal.idle_ns = result.temporal.window_ns - busy_ns;
  result.temporal.compute_ns = result.types.union_ns[0];
  result.temporal.non_compute_ns = busy_ns - result.temporal.compute_ns;
  const auto comp = static_cast<int>(KernelType::kComputation);
  const auto comm = static_cast<int>(KernelType::kCommunication);
  result.communication_ns = result.types.union_ns[comm];
  result.overlap_ns = intersection_length(merged[comm], merged[comp]);

  fill_timeline_bins(merged, result.window, timeline_bins, result);
  add_exclusive_states(merged, result.types);
}

// Per communication library: kernels, summed and union time (needs result.kernels).
void add_library_stats(const std::vector<Span> (&by_library)[kCommLibraries],
                       RankAnalysis& result) {
  for (int l = 1; l < kCommLibraries; ++l) {
    if (by_library[l].empty()) continue;
    LibraryStat lib;
    lib.library = static_cast<CommLibrary>(l);
    lib.union_ns = total_length(merge_spans(by_library[l]));
    for (const KernelStat& s : result.kernels)
      if (s.library == lib.library) {
        lib.count += s.count;
        lib.total_ns += s.total_ns;
      }
    result.libraries.push_back(lib);
  }
}

}  // namespace

RankAnalysis analyze_rank(const trace::RankTrace& trace, const AnalyzeOptions& options,
                          const MemcpyBytes* bytes) {
  RankAnalysis result;
  result.rank = trace.rank;
  result.source = trace.source;
  const graph::StepWindows steps = graph::step_windows(trace);
  result.window = window_of(trace, options.window, steps);
  const Window& window = result.window;
  for (const auto& [a, b] : step_spans(trace, steps))
    if (a >= window.start_ns && b <= window.end_ns) result.steps.emplace_back(a, b);

  GpuWork work;
  collect_gpu_work(trace, bytes, work, result);
  add_breakdowns(work.by_type, options.timeline_bins, result);

  for (auto& entry : work.stats) result.kernels.push_back(std::move(entry.second));
  std::stable_sort(
      result.kernels.begin(), result.kernels.end(),
      [](const KernelStat& a, const KernelStat& b) { return a.total_ns > b.total_ns; });
  add_library_stats(work.by_library, result);
  for (auto& [direction, m] : work.copies) result.memcpy.push_back(m);

  for (auto& [key, events] : work.streams) {
    result.streams.push_back(
        stream_stats(key, events, window, options.consecutive_kernel_delay_ns));
  }
  return result;
}

}  // namespace powertrain::analyze
