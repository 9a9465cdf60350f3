// libFuzzer target for the Kineto trace reader: JSON (windowed and whole-document walks), gzip and
// tar must never crash, and on input that is valid JSON the windowed walk must give exactly what
// the whole-document walk gives. The first byte picks the path and the window size.
#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "trace/kineto_reader.h"
#include "trace/tar.h"

namespace {

using powertrain::trace::RankTrace;

// Invariants every successful read must satisfy.
void check_trace(const RankTrace& trace) {
  for (std::size_t i = 0; i < trace.events.size(); ++i) {
    const auto& e = trace.events[i];
    if (e.name >= trace.names.size()) __builtin_trap();
    if (e.duration_ns < 0) __builtin_trap();
    if (i > 0) {
      const auto& p = trace.events[i - 1];
      if (p.start_ns > e.start_ns || (p.start_ns == e.start_ns && p.duration_ns < e.duration_ns)) {
        __builtin_trap();
      }
    }
    if (e.collective >= 0) {
      if (static_cast<std::size_t>(e.collective) >= trace.collectives.size()) __builtin_trap();
      if (trace.collectives[e.collective].event != static_cast<std::int32_t>(i)) __builtin_trap();
    }
  }
  if (trace.step_starts_ns.size() != trace.step_ends_ns.size()) __builtin_trap();
}

bool same(const RankTrace& a, const RankTrace& b) {
  if (a.events.size() != b.events.size() || a.names != b.names ||
      a.collectives.size() != b.collectives.size() || a.rank != b.rank ||
      a.step_starts_ns != b.step_starts_ns || a.warnings.size() != b.warnings.size()) {
    return false;
  }
  for (std::size_t i = 0; i < a.events.size(); ++i) {
    const auto& x = a.events[i];
    const auto& y = b.events[i];
    if (x.start_ns != y.start_ns || x.duration_ns != y.duration_ns || x.name != y.name ||
        x.kind != y.kind || x.pid != y.pid || x.tid != y.tid || x.correlation != y.correlation ||
        x.external_id != y.external_id || x.collective != y.collective) {
      return false;
    }
  }
  for (std::size_t i = 0; i < a.warnings.size(); ++i) {
    if (a.warnings[i].kind != b.warnings[i].kind || a.warnings[i].count != b.warnings[i].count) {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace powertrain::trace;
  if (size < 1) return 0;
  const std::uint8_t mode = data[0];
  const std::string_view input(reinterpret_cast<const char*>(data + 1), size - 1);
  ReadOptions options;
  options.max_events = 100'000;
  options.max_json_bytes = std::size_t{1} << 24;  // bounds what a gzip bomb can inflate to
  options.window_bytes = std::size_t{64} << (mode & 7);

  if ((mode & 0xc0) == 0x80) {  // gzip (or plain) bytes
    auto trace = parse_kineto_bytes(input, "fuzz.json.gz", 0, options);
    if (trace.ok()) check_trace(*trace);
    return 0;
  }
  if ((mode & 0xc0) == 0xc0) {  // tar headers
    auto members = list_tar_members(input, "fuzz.tar", 64);
    if (members.ok()) {
      for (const TarMember& m : *members) {
        if (m.offset > input.size() || m.size > input.size() - m.offset) __builtin_trap();
      }
    }
    return 0;
  }
  auto windowed = parse_kineto_json(input, "fuzz.json", 0, options);
  if (windowed.ok()) check_trace(*windowed);
  ReadOptions whole_options = options;
  whole_options.window_bytes = std::size_t{1} << 30;
  auto whole = parse_kineto_json(input, "fuzz.json", 0, whole_options);
  if (whole.ok()) check_trace(*whole);
  // On fully valid JSON (simdjson's DOM parser validates every byte), the two walks must agree.
  simdjson::dom::parser dom;
  simdjson::padded_string padded(input);
  simdjson::dom::element root;
  if (dom.parse(padded).get(root) == simdjson::SUCCESS) {
    if (windowed.ok() != whole.ok()) __builtin_trap();
    if (windowed.ok() && !same(*windowed, *whole)) __builtin_trap();
  }
  return 0;
}
