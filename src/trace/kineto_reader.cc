// Public entry points of the Kineto reader: files, gzip, directories and tar archives around the
// JSON pass (kineto_json.cc) and the linking pass (kineto_links.cc).
#include "trace/kineto_reader.h"

#include "core/input_limits.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "trace/gzip.h"
#include "trace/kineto_parser.h"
#include "trace/tar.h"

namespace powertrain::trace {
namespace {

namespace fs = std::filesystem;

std::size_t json_cap(const ReadOptions& options) {
  const std::size_t limit =
      options.max_json_bytes > 0 ? options.max_json_bytes : core::input_limits().max_trace_bytes;
  return std::min(limit, kMaxKinetoJsonBytes);
}

// `data` must be writable for `capacity` ≥ size + 65 bytes (see detail::parse_document).
// `document`, when given, owns `data` and is released once the JSON walk is done: the linking
// pass needs no bytes of the document (names are copied), and a 1 GB trace's mapping would
// otherwise be resident next to the sort's second copy of the events.
core::Result<RankTrace> parse_padded(char* data, std::size_t size, std::size_t capacity,
                                     const std::string& source, int default_rank,
                                     const ReadOptions& options, PaddedBuffer* document = nullptr) {
  if (size > json_cap(options)) {
    return core::Error{fmt::format("{}: {} bytes of JSON, more than the limit of {} bytes", source,
                                   size, json_cap(options))};
  }
  detail::ParseState state(source, default_rank, options);
  if (const core::Status status = detail::parse_document(data, size, capacity, state); !status) {
    return status.error();
  }
  if (document != nullptr) {
    state.name_index.clear();  // its keys point into the document
    state.name_cache.clear();
    *document = PaddedBuffer();
  }
  return detail::finish_trace(state);
}

// Parses and then releases `buffer` (every caller drops it afterwards).
core::Result<RankTrace> parse_buffer(PaddedBuffer& buffer, const std::string& source,
                                     int default_rank, const ReadOptions& options) {
  return parse_padded(buffer.data(), buffer.size(), buffer.capacity(), source, default_rank,
                      options, &buffer);
}

bool ends_with(std::string_view text, std::string_view suffix) {
  return text.size() >= suffix.size() && text.substr(text.size() - suffix.size()) == suffix;
}

// *.json and *.json.gz (which covers *.pt.trace.json*), but not macOS "._x.json" resource forks.
bool is_trace_name(std::string_view path) {
  const std::size_t slash = path.rfind('/');
  const std::string_view base = slash == std::string_view::npos ? path : path.substr(slash + 1);
  if (base.substr(0, 2) == "._") return false;
  return ends_with(base, ".json") || ends_with(base, ".json.gz");
}

// A file's bytes, inflated when gzip.
core::Result<PaddedBuffer> read_maybe_gzip(const std::string& path, const ReadOptions& options,
                                           std::size_t cap) {
  auto file = read_file_padded(path, cap);
  if (!file) return file.error();
  if (file->size() == 0) return core::Error{fmt::format("{}: empty file", path)};
  if (!is_gzip(file->view())) return std::move(*file);
  auto inflated = gunzip(file->view(), path, cap);
  if (!inflated) return inflated.error();
  (void)options;
  return std::move(*inflated);
}

// One trace per *.json / *.json.gz member, in member-name order.
core::Status read_tar_members(PaddedBuffer& archive, const std::string& path,
                              const ReadOptions& options, std::vector<RankTrace>* traces) {
  auto members = list_tar_members(archive.view(), path);
  if (!members) return members.error();
  std::vector<TarMember> traces_in_archive;
  for (TarMember& member : *members) {
    if (is_trace_name(member.name)) traces_in_archive.push_back(std::move(member));
  }
  if (traces_in_archive.empty()) {
    return core::Error{fmt::format("{}: tar archive has no *.json or *.json.gz members", path)};
  }
  std::sort(traces_in_archive.begin(), traces_in_archive.end(),
            [](const TarMember& a, const TarMember& b) { return a.name < b.name; });
  for (const TarMember& member : traces_in_archive) {
    const std::string source = path + ":" + member.name;
    const int default_rank = static_cast<int>(traces->size());
    char* const bytes = archive.data() + member.offset;
    const std::string_view member_bytes(bytes, member.size);
    core::Result<RankTrace> trace = core::Error{};
    if (is_gzip(member_bytes)) {
      auto inflated = gunzip(member_bytes, source, json_cap(options));
      if (!inflated) return inflated.error();
      trace = parse_buffer(*inflated, source, default_rank, options);
    } else {
      if (member.size == 0) return core::Error{fmt::format("{}: empty file", source)};
      // Parsed in place: the archive's following bytes (and its padding) serve as padding.
      trace = parse_padded(bytes, member.size, archive.capacity() - member.offset, source,
                           default_rank, options);
    }
    if (!trace) return trace.error();
    traces->push_back(std::move(*trace));
  }
  return core::Ok{};
}

}  // namespace

core::Result<RankTrace> parse_kineto_json(std::string_view json, const std::string& source,
                                          int default_rank, const ReadOptions& options) {
  if (json.size() > json_cap(options)) {
    return core::Error{fmt::format("{}: {} bytes of JSON, more than the limit of {} bytes", source,
                                   json.size(), json_cap(options))};
  }
  PaddedBuffer buffer;
  buffer.reserve(json.size());
  if (!json.empty()) std::memcpy(buffer.data(), json.data(), json.size());
  buffer.set_size(json.size());
  return parse_buffer(buffer, source, default_rank, options);
}

core::Result<RankTrace> parse_kineto_bytes(std::string_view bytes, const std::string& source,
                                           int default_rank, const ReadOptions& options) {
  if (bytes.empty()) return core::Error{fmt::format("{}: empty file", source)};
  if (!is_gzip(bytes)) return parse_kineto_json(bytes, source, default_rank, options);
  auto inflated = gunzip(bytes, source, json_cap(options));
  if (!inflated) return inflated.error();
  if (is_tar(inflated->view())) {
    return core::Error{fmt::format("{}: a tar archive, not one trace", source)};
  }
  return parse_buffer(*inflated, source, default_rank, options);
}

core::Result<RankTrace> read_kineto_trace(const std::string& path, int default_rank,
                                          const ReadOptions& options) {
  auto bytes = read_maybe_gzip(path, options, json_cap(options));
  if (!bytes) return bytes.error();
  if (is_tar(bytes->view())) {
    return core::Error{
        fmt::format("{}: a tar archive, not one trace (read_kineto_traces reads archives)", path)};
  }
  return parse_buffer(*bytes, path, default_rank, options);
}

core::Result<std::vector<RankTrace>> read_kineto_traces(
    const std::vector<std::string>& paths_or_dirs, const ReadOptions& options) {
  if (paths_or_dirs.empty()) return core::Error{"no trace files given"};
  const detail::SortScratchScope scratch;  // one sort buffer reused across the traces
  std::vector<RankTrace> traces;
  for (const std::string& path : paths_or_dirs) {
    std::error_code error;
    const fs::file_status status = fs::status(path, error);
    if (error || !fs::exists(status)) {
      return core::Error{fmt::format("{}: no such file or directory", path)};
    }
    if (fs::is_directory(status)) {
      std::vector<std::string> files;
      for (const fs::directory_entry& entry : fs::directory_iterator(path, error)) {
        std::error_code entry_error;
        if (entry.is_regular_file(entry_error) && is_trace_name(entry.path().filename().string())) {
          files.push_back(entry.path().string());
        }
      }
      if (error) return core::Error{fmt::format("{}: cannot list: {}", path, error.message())};
      if (files.empty()) {
        return core::Error{fmt::format("{}: no *.json or *.json.gz files in the directory", path)};
      }
      std::sort(files.begin(), files.end());
      for (const std::string& file : files) {
        auto trace = read_kineto_trace(file, static_cast<int>(traces.size()), options);
        if (!trace) return trace.error();
        traces.push_back(std::move(*trace));
      }
      continue;
    }
    // A tar archive may hold several JSON documents, each within the per-document cap; allow the
    // archive itself up to the (64-bit) byte limit given.
    auto bytes = read_maybe_gzip(
        path, options,
        options.max_json_bytes > 0 ? options.max_json_bytes : core::input_limits().max_trace_bytes);
    if (!bytes) return bytes.error();
    if (is_tar(bytes->view())) {
      if (const core::Status status = read_tar_members(*bytes, path, options, &traces); !status) {
        return status.error();
      }
      continue;
    }
    auto trace = parse_buffer(*bytes, path, static_cast<int>(traces.size()), options);
    if (!trace) return trace.error();
    traces.push_back(std::move(*trace));
  }
  std::stable_sort(traces.begin(), traces.end(),
                   [](const RankTrace& a, const RankTrace& b) { return a.rank < b.rank; });
  return traces;
}

}  // namespace powertrain::trace
