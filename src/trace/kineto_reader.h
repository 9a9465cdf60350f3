// Reads PyTorch Kineto traces (Chrome trace JSON as torch.profiler writes it, plain or gzip, one
// file per rank, or a tar.gz of them) into the normalized RankTrace of trace_events.h. Tolerant
// of the format's variations since 2021 (see docs/trace.md); never throws to callers.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "trace/trace_events.h"

namespace powertrain::trace {

/// simdjson indexes documents with 32-bit offsets: one JSON document can be at most 4 GiB − 1.
inline constexpr std::size_t kMaxKinetoJsonBytes = 0xFFFFFFFFu;

/// Limits and choices for reading untrusted traces.
struct ReadOptions {
  /// Largest JSON document accepted, after gunzip (bytes); also caps a tar archive's inflated
  /// size. Capped at kMaxKinetoJsonBytes for a single document. 0 = core::input_limits().
  std::size_t max_json_bytes = 0;
  /// Largest number of duration events kept per trace (memory: 88 bytes each).
  std::size_t max_events = 100'000'000;
  /// The traceEvents array is parsed in windows of about this many bytes, cut at newlines, so
  /// that simdjson's index (4 bytes per JSON token) stays small and hot in cache; a document
  /// without newlines is parsed whole. Results do not depend on it. With 1 MiB the window and
  /// its index stay in L2: the JSON walk of the 1 GB benchmark trace was 7 % faster than with
  /// 16 MiB.
  std::size_t window_bytes = std::size_t{1} << 20;
  /// python_function events are ~2/3 of a with_stack trace and are never replayed; false drops
  /// them while reading.
  bool keep_python_functions = true;
};

/// Reads one rank's trace from `path`: plain JSON or gzip, told apart by the magic bytes, not the
/// extension. `default_rank` is used when the trace has no distributedInfo.rank.
/// Errors (one line, naming the file): unreadable or empty file, corrupt or truncated gzip,
/// a file over max_json_bytes, a tar archive (use read_kineto_traces), invalid JSON (with the
/// byte offset where simdjson gives one), no traceEvents array, more than max_events events.
/// Everything else — unknown categories, events without ts, dangling correlations — becomes a
/// counted RankTrace::warnings entry. O(file size + events × log events).
core::Result<RankTrace> read_kineto_trace(const std::string& path, int default_rank,
                                          const ReadOptions& options = {});

/// Parses a trace from memory (copied once into a padded buffer for simdjson). `source` names it
/// in errors and in RankTrace::source. Errors as read_kineto_trace's for the JSON itself.
core::Result<RankTrace> parse_kineto_json(std::string_view json, const std::string& source,
                                          int default_rank, const ReadOptions& options = {});

/// Parses a trace that may be gzip-compressed (told by its magic bytes), from memory; for tests
/// and fuzzing of the gzip path.
core::Result<RankTrace> parse_kineto_bytes(std::string_view bytes, const std::string& source,
                                           int default_rank, const ReadOptions& options = {});

/// Reads every trace named: files (JSON, gzip JSON, or a tar / tar.gz archive whose *.json and
/// *.json.gz members are one trace each, taken in name order) and directories (their *.json and
/// *.json.gz files, not recursive, in name order). A trace without distributedInfo.rank gets its
/// position in that overall order as its rank. The result is sorted by rank (stable; duplicate
/// ranks are kept — the caller decides whether they are an error). Tar members are named
/// "archive:member" in errors and RankTrace::source.
/// Errors: no paths, a path that does not exist, a directory or archive without traces, and any
/// error of read_kineto_trace for one of them (the first one stops reading).
core::Result<std::vector<RankTrace>> read_kineto_traces(
    const std::vector<std::string>& paths_or_dirs, const ReadOptions& options = {});

}  // namespace powertrain::trace
