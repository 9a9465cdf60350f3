// Trace analysis in the vocabulary of Holistic Trace Analysis (HTA): temporal breakdown,
// kernel-type breakdown, communication–computation overlap, per-stream queue length, launch delays
// and idle-time breakdown, memcpy bandwidth, and communication kernels by library. Everything here
// is measured (read from the trace), per rank and inside one time window. Definitions:
// docs/analyze.md.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "trace/trace_events.h"

namespace powertrain::analyze {

/// HTA's three kernel types. Memory = memcpy/memset; communication = a collective library's kernel.
enum class KernelType : std::uint8_t { kComputation, kCommunication, kMemory };
inline constexpr int kKernelTypes = 3;
std::string_view to_string(KernelType type);

/// The communication library a GPU kernel belongs to (by name; see comm_library()).
enum class CommLibrary : std::uint8_t { kNone, kNccl, kRccl, kDeepEp, kNvshmem, kGloo };
inline constexpr int kCommLibraries = 6;
std::string_view to_string(CommLibrary library);

/// By kernel name, case-insensitive, first match wins: "rccl" or "msccl" anywhere → RCCL;
/// "deep_ep" anywhere (the deep_ep:: namespace of DeepEP's kernels) → DeepEP; "nvshmem" anywhere →
/// NVSHMEM; a name starting with "nccl" (ncclKernel_*, ncclDevKernel_*; also RCCL on ROCm, which
/// keeps NCCL's names) → NCCL; "gloo:" → Gloo (HTA counts it); else none.
CommLibrary comm_library(std::string_view name);

/// Memcpy/memset GPU events → memory; a kernel of a communication library → communication;
/// any other GPU kernel → computation.
KernelType kernel_type(trace::EventKind kind, std::string_view name);

/// Which part of the trace the numbers describe.
enum class WindowKind : std::uint8_t {
  kSteps,    // first ProfilerStep#N start to last ProfilerStep#N end (else falls back to gpu-span)
  kGpuSpan,  // first GPU event start to last GPU event end (HTA's "kernel time")
  kWhole,    // first to last event of any kind
};
std::string_view to_string(WindowKind kind);
std::optional<WindowKind> parse_window_kind(std::string_view text);

struct Window {
  WindowKind requested = WindowKind::kGpuSpan;
  WindowKind used = WindowKind::kGpuSpan;  // differs when steps were asked for but absent
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
  // Steps inside the window, as the replay counts them (graph/step_windows.h: one per step, cut
  // edge spans out; all of them: with steps whose span is missing); 0 when unknown.
  int steps = 0;
  std::int64_t length_ns() const { return end_ns - start_ns; }
};

/// Window of a rank's trace. Empty traces give [0, 0).
Window choose_window(const trace::RankTrace& trace, WindowKind kind);

/// HTA temporal breakdown: idle = window − union of all GPU events; compute = union of computation
/// kernels; non-compute = the rest of the busy time (communication and memory with no compute).
struct TemporalBreakdown {
  std::int64_t window_ns = 0;
  std::int64_t idle_ns = 0;
  std::int64_t compute_ns = 0;
  std::int64_t non_compute_ns = 0;
  double pct(std::int64_t part) const {
    return window_ns > 0 ? 100.0 * static_cast<double>(part) / static_cast<double>(window_ns) : 0.0;
  }
};

/// Time by kernel type. `state_ns[mask]` is HTA's get_gpu_kernel_breakdown kernel_type_df: the time
/// during which exactly the types in `mask` run (bit 1 << KernelType), e.g. state_ns[3] =
/// "COMPUTATION overlapping COMMUNICATION"; state_ns[0] is unused (idle).
struct KernelTypeBreakdown {
  std::int64_t count[kKernelTypes] = {};
  std::int64_t sum_ns[kKernelTypes] = {};    // Σ durations (clipped to the window)
  std::int64_t union_ns[kKernelTypes] = {};  // time with at least one kernel of the type
  std::int64_t state_ns[8] = {};
  std::int64_t busy_ns() const {
    std::int64_t n = 0;
    for (int m = 1; m < 8; ++m) n += state_ns[m];
    return n;
  }
  /// HTA's percentage: state time / Σ state times.
  double state_pct(int mask) const {
    const std::int64_t busy = busy_ns();
    return busy > 0 ? 100.0 * static_cast<double>(state_ns[mask]) / static_cast<double>(busy) : 0.0;
  }
};
std::string state_name(int mask);  // "computation", "communication+computation", ...

/// Aggregate of one GPU event name (kernel, memcpy or memset).
struct KernelStat {
  std::string name;
  KernelType type = KernelType::kComputation;
  CommLibrary library = CommLibrary::kNone;
  std::int64_t count = 0;
  std::int64_t total_ns = 0;
  std::int64_t min_ns = 0;
  std::int64_t max_ns = 0;
  double mean_ns() const {
    return count > 0 ? static_cast<double>(total_ns) / static_cast<double>(count) : 0.0;
  }
};

struct LibraryStat {
  CommLibrary library = CommLibrary::kNone;
  std::int64_t count = 0;
  std::int64_t total_ns = 0;
  std::int64_t union_ns = 0;
};

/// Summary of a sample of durations (ns); percentiles by nearest rank (the ⌈p·n⌉-th smallest).
struct DelayStats {
  std::int64_t count = 0;
  double mean_ns = 0.0;
  std::int64_t p50_ns = 0;
  std::int64_t p95_ns = 0;
  std::int64_t max_ns = 0;
  std::int64_t min_ns = 0;
};
DelayStats delay_stats(std::vector<std::int64_t> values);

struct StreamStats {
  std::int64_t device = 0;
  std::int64_t stream = 0;
  std::int64_t gpu_events = 0;  // starting inside the window
  std::int64_t busy_ns = 0;     // union of the stream's GPU events inside the window
  // Queue length: GPU events launched (runtime call started) and not yet finished.
  std::int64_t max_queue_length = 0;
  double mean_queue_length = 0.0;  // time-weighted over the window
  // Launch delay: GPU event start − start of its launching runtime/driver call.
  DelayStats launch_delay;
  std::int64_t without_launch = 0;  // GPU events whose launch is not in the trace
  // Idle-time breakdown (gaps between consecutive GPU events of the stream, inside the window).
  std::int64_t idle_host_wait_ns = 0;
  std::int64_t idle_kernel_wait_ns = 0;
  std::int64_t idle_other_ns = 0;
  std::int64_t gaps[3] = {};  // count of host-wait, kernel-wait and other gaps
};

/// Memcpy bandwidth for one direction ("HtoD", "DtoH", "DtoD", "HtoH", "PtoP", "other").
struct MemcpyStat {
  std::string direction;
  std::int64_t count = 0;        // memcpys in the window
  std::int64_t with_bytes = 0;   // of those, with a byte count in the trace's args
  std::int64_t bytes = 0;        // Σ bytes of those with one
  std::int64_t duration_ns = 0;  // Σ durations of those with bytes
  double gb_s() const {          // bytes / duration (decimal GB/s)
    return duration_ns > 0 ? static_cast<double>(bytes) / static_cast<double>(duration_ns) : 0.0;
  }
};

/// Byte counts of memcpy events, keyed by correlation id (read from args by memcpy_bytes.h).
using MemcpyBytes = std::unordered_map<std::int64_t, std::int64_t>;

struct AnalyzeOptions {
  int timeline_bins = 240;
  WindowKind window = WindowKind::kGpuSpan;
  /// Gaps shorter than this between consecutive GPU events of a stream, when the host had already
  /// launched the next one, count as "kernel wait" (HTA's consecutive_kernel_delay, 30 trace units
  /// = 30 µs in Kineto traces).
  std::int64_t consecutive_kernel_delay_ns = 30'000;
};

struct RankAnalysis {
  int rank = 0;
  std::string source;
  Window window;
  std::int64_t gpu_events = 0;  // starting inside the window
  TemporalBreakdown temporal;
  KernelTypeBreakdown types;
  std::int64_t communication_ns = 0;  // union of communication kernels (HTA's denominator)
  std::int64_t overlap_ns = 0;        // union(comm) ∩ union(compute)
  double comm_comp_overlap_pct() const {
    return communication_ns > 0
               ? 100.0 * static_cast<double>(overlap_ns) / static_cast<double>(communication_ns)
               : 0.0;
  }
  std::vector<KernelStat> kernels;     // every name, by total time (descending), then name
  std::vector<LibraryStat> libraries;  // communication libraries seen
  std::vector<StreamStats> streams;    // by (device, stream)
  std::vector<MemcpyStat> memcpy;      // by direction
  std::vector<std::pair<std::int64_t, std::int64_t>> steps;  // step windows inside the window
  /// Timeline summary: the window cut into equal bins; per bin, the fraction of it during which
  /// each kernel type runs (union per type), for plots.
  std::vector<std::array<float, kKernelTypes>> bins;
};

/// Analyzes one rank. `bytes` (may be null) gives memcpy sizes. O(E log E).
RankAnalysis analyze_rank(const trace::RankTrace& trace, const AnalyzeOptions& options = {},
                          const MemcpyBytes* bytes = nullptr);

// Interval helpers (exposed for tests).
struct Span {
  std::int64_t start_ns = 0;
  std::int64_t end_ns = 0;
};
/// Sorts and merges overlapping or touching spans; empty spans are dropped.
std::vector<Span> merge_spans(std::vector<Span> spans);
std::int64_t total_length(const std::vector<Span>& merged);
/// Length of the intersection of two merged lists. O(a + b).
std::int64_t intersection_length(const std::vector<Span>& a, const std::vector<Span>& b);

/// Direction of a memcpy from its Kineto name ("Memcpy HtoD (Pinned -> Device)" → "HtoD").
std::string memcpy_direction(std::string_view name);

}  // namespace powertrain::analyze
