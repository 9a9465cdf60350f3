// Test-only mutator of Kineto traces: takes a real or generated trace and rewrites it the way
// another PyTorch version, profiler setting, site or tool would (times as epoch integers or
// strings, keys in other orders, older category names, driver launches, dropped flows and
// correlations, a cut window, duplicated or zero-length events, metadata and instant events,
// string ids, deep Python stacks, huge unicode names, null values, truncation...). Each mutation
// says what a correct reader + replay must do with it (see Expect). Header-only: compiled into the
// test binary only.
#pragma once

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "kineto_shapes.h"

namespace powertrain::test_support {

using OJson = nlohmann::ordered_json;

/// What a correct pipeline must do with a mutated trace.
enum class Expect {
  /// The information is intact: replay with 0 lost tasks, step error <= 1 %, faithful, and the
  /// measured step equal to the unmutated trace's (within timestamp rounding).
  kExact,
  /// Information is destroyed: 0 lost tasks, and the verdict must agree with the errors (faithful
  /// only when every rank's step is within 1 % and the breakdown within 2 pp), or a one-line error
  /// that names the file.
  kHonest,
  /// The file is broken: a one-line error naming the file (never a crash or hang).
  kError,
};

/// One rank's trace held as JSON with times as exact integer ns ("ts"/"dur" members hold int64
/// absolute ns; the writer formats them).
struct MutableTrace {
  std::string name;
  OJson doc;
  // How times are written.
  enum class TimeFormat {
    kRelative3,
    kEpoch3,
    kEpochIntFloored,
    kEpochIntRounded,
    kStrings,
    kExponent,
    kRelative6
  };
  TimeFormat time_format = TimeFormat::kRelative3;
  std::int64_t base_ns = 0;  // for relative formats
  // Text-level options.
  int indent = -1;  // nlohmann's dump indent (-1: compact events, one per line)
  bool crlf = false;
  bool no_newlines = false;
  bool array_format = false;  // just the events array
  bool gzip = false;
  std::int64_t truncate_at = -1;  // bytes kept (applied last, after gzip)
  std::string prefix, suffix;     // raw bytes before/after the document
  std::vector<std::pair<std::string, std::string>> raw_replacements;  // after dump
};

namespace mutation_detail {

inline std::int64_t parse_decimal_us_as_ns(std::string_view text, bool* ok) {
  *ok = false;
  if (text.empty()) return 0;
  bool negative = false;
  std::size_t i = 0;
  if (text[0] == '-') {
    negative = true;
    ++i;
  }
  std::int64_t whole = 0;
  std::size_t digits = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, ++digits) {
    whole = whole * 10 + (text[i] - '0');
  }
  std::int64_t frac_ns = 0;
  if (i < text.size() && text[i] == '.') {
    ++i;
    int place = 0;
    std::int64_t scale = 100;
    bool round_up = false;
    for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i, ++place) {
      if (place < 3) {
        frac_ns += (text[i] - '0') * scale;
        scale /= 10;
      } else if (place == 3) {
        round_up = text[i] >= '5';
      }
    }
    if (round_up) ++frac_ns;
  }
  if (i != text.size() || digits == 0) return 0;
  *ok = true;
  const std::int64_t ns = whole * 1000 + frac_ns;
  return negative ? -ns : ns;
}

// Puts every number after "ts": / "dur": / "baseTimeNanoseconds": in quotes with a '#' mark, so
// that nlohmann keeps its exact text (a double would lose the ns of an epoch timestamp).
inline std::string quote_times(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  static const std::string_view keys[] = {"\"ts\":", "\"dur\":"};
  std::size_t i = 0;
  while (i < text.size()) {
    bool matched = false;
    if (text[i] == '"' && (i == 0 || text[i - 1] != '\\')) {
      for (std::string_view key : keys) {
        if (text.substr(i, key.size()) == key) {
          out.append(key);
          i += key.size();
          while (i < text.size() && text[i] == ' ') out.push_back(text[i++]);
          if (i < text.size() && (text[i] == '-' || (text[i] >= '0' && text[i] <= '9'))) {
            out.append("\"#");
            while (i < text.size() &&
                   (text[i] == '-' || text[i] == '.' || text[i] == 'e' || text[i] == 'E' ||
                    text[i] == '+' || (text[i] >= '0' && text[i] <= '9'))) {
              out.push_back(text[i++]);
            }
            out.push_back('"');
          }
          matched = true;
          break;
        }
      }
    }
    if (!matched) out.push_back(text[i++]);
  }
  return out;
}

inline std::string us_text(std::int64_t ns, int decimals) {
  const bool negative = ns < 0;
  const std::uint64_t a = negative ? 0 - static_cast<std::uint64_t>(ns) : ns;
  if (decimals == 0) return fmt::format("{}{}", negative ? "-" : "", a / 1000);
  if (decimals == 3) return fmt::format("{}{}.{:03}", negative ? "-" : "", a / 1000, a % 1000);
  return fmt::format("{}{}.{:03}000", negative ? "-" : "", a / 1000, a % 1000);
}

inline std::int64_t floor_div(std::int64_t a, std::int64_t b) {
  return a >= 0 ? a / b : -((-a + b - 1) / b);
}

}  // namespace mutation_detail

/// Loads a (gunzipped) Kineto document; times become exact absolute ns.
inline MutableTrace load_mutable(const std::string& json_text, const std::string& name) {
  MutableTrace t;
  t.name = name;
  t.doc = OJson::parse(mutation_detail::quote_times(json_text));
  std::int64_t base = 0;
  bool relative = false;
  if (t.doc.is_object() && t.doc.contains("baseTimeNanoseconds")) {
    base = t.doc["baseTimeNanoseconds"].get<std::int64_t>();
    relative = true;
    t.doc.erase("baseTimeNanoseconds");
  }
  OJson& events = t.doc.is_array() ? t.doc : t.doc["traceEvents"];
  std::int64_t min_ns = INT64_MAX;
  for (OJson& e : events) {
    if (!e.is_object()) continue;
    for (const char* key : {"ts", "dur"}) {
      auto it = e.find(key);
      if (it == e.end() || !it->is_string()) continue;
      const std::string s = it->get<std::string>();
      // "#…": a number token quote_times marked; otherwise a JSON string holding a number, which
      // the reader accepts too (shape number_forms): normalized the same way.
      std::string text = !s.empty() && s[0] == '#' ? s.substr(1) : s;
      if (s.empty() || s[0] != '#') {
        while (!text.empty() && text.front() == ' ') text.erase(text.begin());
        while (!text.empty() && text.back() == ' ') text.pop_back();
        if (text.empty() || text.find_first_not_of("0123456789.eE+-") != std::string::npos)
          continue;
      }
      bool ok = false;
      std::int64_t ns = mutation_detail::parse_decimal_us_as_ns(text, &ok);
      if (!ok) {  // exponent form: through double, as the reader does
        ns = static_cast<std::int64_t>(std::llround(std::stod(text) * 1000.0));
      }
      if (key[0] == 't') {
        ns += relative ? base : 0;
        min_ns = std::min(min_ns, ns);
      }
      *it = ns;
    }
  }
  t.base_ns = relative ? base : (min_ns == INT64_MAX ? 0 : min_ns - min_ns % 1'000'000'000);
  return t;
}

inline OJson& events_of(MutableTrace& t) { return t.doc.is_array() ? t.doc : t.doc["traceEvents"]; }

/// Writes the trace as bytes the reader gets.
inline std::string write_mutable(const MutableTrace& t) {
  using F = MutableTrace::TimeFormat;
  OJson doc = t.doc;
  OJson& events = doc.is_array() ? doc : doc["traceEvents"];
  const bool relative_format = t.time_format == F::kRelative3 || t.time_format == F::kRelative6;
  // The array format has no baseTimeNanoseconds: relative times become epoch times.
  const bool relative = relative_format && !t.array_format;
  const F format = relative_format && t.array_format ? F::kEpoch3 : t.time_format;
  for (OJson& e : events) {
    if (!e.is_object()) continue;
    auto ts_it = e.find("ts");
    std::int64_t ts = 0;
    const bool has_ts = ts_it != e.end() && ts_it->is_number_integer();
    if (has_ts) ts = ts_it->get<std::int64_t>();
    auto dur_it = e.find("dur");
    const bool has_dur = dur_it != e.end() && dur_it->is_number_integer();
    std::int64_t dur = has_dur ? dur_it->get<std::int64_t>() : 0;
    std::string ts_text, dur_text;
    switch (format) {
      case F::kRelative3:
      case F::kRelative6:
        ts_text = mutation_detail::us_text(ts - t.base_ns, t.time_format == F::kRelative6 ? 6 : 3);
        dur_text = mutation_detail::us_text(dur, t.time_format == F::kRelative6 ? 6 : 3);
        break;
      case F::kEpoch3:
        ts_text = mutation_detail::us_text(ts, 3);
        dur_text = mutation_detail::us_text(dur, 3);
        break;
      case F::kEpochIntFloored: {  // old Kineto: µs start and end, dur = end − start
        const std::int64_t s = mutation_detail::floor_div(ts, 1000);
        const std::int64_t en = mutation_detail::floor_div(ts + dur, 1000);
        ts_text = fmt::format("{}", s);
        dur_text = fmt::format("{}", en - s);
        break;
      }
      case F::kEpochIntRounded:  // ts and dur rounded independently (nesting may break)
        ts_text = fmt::format("{}", mutation_detail::floor_div(ts + 500, 1000));
        dur_text = fmt::format("{}", mutation_detail::floor_div(dur + 500, 1000));
        break;
      case F::kStrings:
        ts_text = "\"" + mutation_detail::us_text(ts, 3) + "\"";
        dur_text = "\"" + mutation_detail::us_text(dur, 3) + "\"";
        break;
      case F::kExponent:
        ts_text = fmt::format("{:.15e}", static_cast<double>(ts) / 1000.0);
        dur_text = fmt::format("{:.6e}", static_cast<double>(dur) / 1000.0);
        break;
    }
    if (has_ts) *ts_it = "#RAW#" + ts_text;
    if (has_dur) *dur_it = "#RAW#" + dur_text;
  }
  std::string text;
  if (t.array_format) {
    doc = events;
  } else if (relative) {
    doc["baseTimeNanoseconds"] = t.base_ns;
  }
  if (t.indent >= 0) {
    text = doc.dump(t.indent, ' ', false, OJson::error_handler_t::replace);
  } else {
    // Kineto's layout: one event per line.
    const OJson& evs = doc.is_array() ? doc : doc["traceEvents"];
    std::string events_text = "[";
    for (std::size_t i = 0; i < evs.size(); ++i) {
      events_text += i ? ",\n  " : "\n  ";
      events_text += evs[i].dump(-1, ' ', false, OJson::error_handler_t::replace);
    }
    events_text += "\n]";
    if (doc.is_array()) {
      text = events_text;
    } else {
      text = "{";
      bool first = true;
      for (auto it = doc.begin(); it != doc.end(); ++it) {
        text += first ? "\n  " : ",\n  ";
        first = false;
        text += OJson(it.key()).dump() + ": ";
        text += it.key() == "traceEvents"
                    ? events_text
                    : it.value().dump(-1, ' ', false, OJson::error_handler_t::replace);
      }
      text += "\n}\n";
    }
  }
  // Unquote the raw times.
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    if (text.compare(i, 6, "\"#RAW#") == 0) {
      i += 6;
      while (i < text.size() && text[i] != '"') {
        // A string time ("\"12.5\"") was escaped by dump: unescape its quotes.
        if (text[i] == '\\' && i + 1 < text.size() && text[i + 1] == '"') {
          out.push_back('"');
          i += 2;
          continue;
        }
        out.push_back(text[i++]);
      }
      ++i;
      continue;
    }
    out.push_back(text[i++]);
  }
  for (const auto& [from, to] : t.raw_replacements) {
    std::size_t pos = 0;
    while ((pos = out.find(from, pos)) != std::string::npos) {
      out.replace(pos, from.size(), to);
      pos += to.size();
    }
  }
  if (t.no_newlines) {
    std::erase(out, '\n');
  } else if (t.crlf) {
    std::string crlf;
    crlf.reserve(out.size() + out.size() / 20);
    for (char c : out) {
      if (c == '\n') crlf.push_back('\r');
      crlf.push_back(c);
    }
    out.swap(crlf);
  }
  out = t.prefix + out + t.suffix;
  if (t.gzip) out = detail::gzip_bytes(out);
  if (t.truncate_at >= 0 && static_cast<std::size_t>(t.truncate_at) < out.size()) {
    out.resize(static_cast<std::size_t>(t.truncate_at));
  }
  return out;
}

// ---- helpers over events ----

inline std::string cat_of(const OJson& e) {
  auto it = e.find("cat");
  return it != e.end() && it->is_string() ? it->get<std::string>() : std::string();
}
inline std::string ph_of(const OJson& e) {
  auto it = e.find("ph");
  return it != e.end() && it->is_string() ? it->get<std::string>() : std::string();
}
inline std::string name_of(const OJson& e) {
  auto it = e.find("name");
  return it != e.end() && it->is_string() ? it->get<std::string>() : std::string();
}
inline bool is_gpu_cat(const std::string& c) {
  return c == "kernel" || c == "gpu_memcpy" || c == "gpu_memset" || c == "Kernel" ||
         c == "Memcpy" || c == "Memset";
}
inline bool is_x(const OJson& e) { return e.is_object() && ph_of(e) == "X"; }

/// A mutation: a name, what it expects, and the rewrite (over all files of one job).
struct Mutation {
  const char* name;
  Expect expect;
  std::function<void(std::vector<MutableTrace>&, std::mt19937_64&)> apply;
  bool multi_rank_only = false;
  /// Keeps the information only when the events carry args.correlation (flows are dropped).
  bool needs_args_correlation = false;
  /// Alone, the replay must still reproduce every rank's step within this (%) and the breakdown
  /// within 2 pp, faithful or not (a verdict may still be NOT faithful for released
  /// dependencies); negative: no bound beyond the expectation.
  double max_step_error_pct = -1.0;
  /// kExact: how far the what-if step may be from the unmutated trace's (%).
  double whatif_tolerance_pct = 0.5;
};

inline void shuffle_object(OJson& o, std::mt19937_64& rng) {
  if (!o.is_object()) return;
  std::vector<std::pair<std::string, OJson>> items;
  for (auto it = o.begin(); it != o.end(); ++it)
    items.emplace_back(it.key(), std::move(it.value()));
  std::shuffle(items.begin(), items.end(), rng);
  OJson shuffled = OJson::object();
  for (auto& [k, v] : items) shuffled[k] = std::move(v);
  o = std::move(shuffled);
}

inline double uniform(std::mt19937_64& rng, double lo, double hi) {
  return std::uniform_real_distribution<double>(lo, hi)(rng);
}
inline bool chance(std::mt19937_64& rng, double p) { return uniform(rng, 0.0, 1.0) < p; }

// Renames args keys of every event (old → new), keeping the others.
inline void rename_arg(std::vector<MutableTrace>& ts, const std::string& from,
                       const std::string& to) {
  for (MutableTrace& t : ts) {
    for (OJson& e : events_of(t)) {
      if (!e.is_object() || !e.contains("args") || !e["args"].is_object()) continue;
      OJson& args = e["args"];
      if (!args.contains(from)) continue;
      OJson renamed = OJson::object();
      for (auto it = args.begin(); it != args.end(); ++it) {
        renamed[it.key() == from ? to : it.key()] = it.value();
      }
      args = std::move(renamed);
    }
  }
}

inline void drop_flows(std::vector<MutableTrace>& ts, bool ac2g, bool fwdbwd) {
  for (MutableTrace& t : ts) {
    OJson& events = events_of(t);
    OJson kept = OJson::array();
    for (OJson& e : events) {
      const std::string ph = ph_of(e), c = cat_of(e);
      const bool flow = ph == "s" || ph == "f" || ph == "t";
      const bool is_ac2g = c == "ac2g" || c == "async_cpu_to_gpu" || c == "async";
      if (flow && ((ac2g && is_ac2g) || (fwdbwd && !is_ac2g))) continue;
      kept.push_back(std::move(e));
    }
    events = std::move(kept);
  }
}

// The runtime/driver calls that a cuda_sync record names (by correlation): removed (`drop`) or
// stripped of their correlation and ac2g flow.
inline void strip_sync_calls(std::vector<MutableTrace>& ts, bool drop) {
  for (MutableTrace& t : ts) {
    std::set<std::int64_t> synced;
    for (const OJson& e : events_of(t)) {
      if (is_x(e) && cat_of(e) == "cuda_sync" && e.contains("args") && e["args"].is_object() &&
          e["args"].contains("correlation") && e["args"]["correlation"].is_number_integer()) {
        synced.insert(e["args"]["correlation"].template get<std::int64_t>());
      }
    }
    if (synced.empty()) continue;
    const auto corr_of = [](const OJson& e) -> std::int64_t {
      if (!e.contains("args") || !e["args"].is_object() || !e["args"].contains("correlation") ||
          !e["args"]["correlation"].is_number_integer())
        return -1;
      return e["args"]["correlation"].template get<std::int64_t>();
    };
    OJson kept = OJson::array();
    for (OJson& e : events_of(t)) {
      const std::string c = cat_of(e);
      const bool call = is_x(e) && (c == "cuda_runtime" || c == "cuda_driver" || c == "Runtime");
      if (call && synced.count(corr_of(e)) != 0) {
        if (drop) continue;
        e["args"].erase("correlation");
        if (e["args"].contains("External id") && e["args"]["External id"].is_number_integer() &&
            synced.count(e["args"]["External id"].template get<std::int64_t>()) != 0)
          e["args"].erase("External id");
      }
      if (ph_of(e) == "s" && e.contains("id") && e["id"].is_number_integer() &&
          synced.count(e["id"].template get<std::int64_t>()) != 0)
        continue;
      kept.push_back(std::move(e));
    }
    events_of(t) = std::move(kept);
  }
}

inline std::vector<Mutation> all_mutations() {
  using F = MutableTrace::TimeFormat;
  std::vector<Mutation> m;
  // --- information kept ---
  m.push_back({"epoch_us_float", Expect::kExact, [](auto& ts, auto& rng) {
                 // Epoch µs with three decimals, shifted by up to 1e6 s (values ~1.7e15 µs).
                 const std::int64_t shift =
                     static_cast<std::int64_t>(uniform(rng, 0, 1e6)) * 1'000'000'000LL + 123;
                 for (auto& t : ts) {
                   t.time_format = F::kEpoch3;
                   for (OJson& e : events_of(t)) {
                     if (e.is_object() && e.contains("ts") && e["ts"].is_number_integer())
                       e["ts"] = e["ts"].template get<std::int64_t>() + shift;
                   }
                 }
               }});
  m.push_back({"epoch_us_integer", Expect::kExact, [](auto& ts, auto&) {
                 for (auto& t : ts) t.time_format = F::kEpochIntFloored;
               }});
  m.push_back({"times_as_strings", Expect::kExact, [](auto& ts, auto&) {
                 for (auto& t : ts) t.time_format = F::kStrings;
               }});
  m.push_back({"relative_six_decimals", Expect::kExact, [](auto& ts, auto&) {
                 for (auto& t : ts) t.time_format = F::kRelative6;
               }});
  m.push_back({"keys_shuffled", Expect::kExact, [](auto& ts, auto& rng) {
                 for (auto& t : ts) {
                   for (OJson& e : events_of(t)) {
                     if (!e.is_object()) continue;
                     shuffle_object(e, rng);
                     if (e.contains("args")) shuffle_object(e["args"], rng);
                   }
                 }
               }});
  m.push_back({"top_level_reordered_extra_keys", Expect::kExact, [](auto& ts, auto& rng) {
                 for (auto& t : ts) {
                   if (!t.doc.is_object()) continue;
                   t.doc["zz_site_info"] = {{"traceEvents", 5}, {"cluster", "x"}, {"n", {1, 2}}};
                   t.doc["INFO"] = OJson::array({"traceEvents: [ not the array"});
                   t.doc["aaa_unknown"] = nullptr;
                   t.doc["displayTimeUnit"] = "ms";
                   shuffle_object(t.doc, rng);
                 }
               }});
  m.push_back({"unknown_categories", Expect::kExact, [](auto& ts, auto& rng) {
                 static const char* cats[] = {
                     "cuda_profiler_range", "xpu_runtime", "site_custom", "Trace", "overhead",
                     "cpu_instant_event"};
                 for (auto& t : ts) {
                   OJson& events = events_of(t);
                   const std::size_t n = events.size();
                   for (std::size_t i = 0; i < n; i += 1 + rng() % 50) {
                     const OJson& e = events[i];
                     if (!is_x(e) || !e.contains("ts") || !e["ts"].is_number_integer()) continue;
                     OJson extra = {{"ph", "X"},
                                    {"cat", cats[rng() % 6]},
                                    {"name", "site thing"},
                                    {"pid", 77777},
                                    {"tid", 5},
                                    {"ts", e["ts"]},
                                    {"dur", 1000},
                                    {"args", {{"x", 1}}}};
                     events.push_back(extra);
                   }
                 }
               }});
  m.push_back({"old_category_names", Expect::kExact, [](auto& ts, auto&) {
                 static const std::map<std::string, std::string> old = {
                     {"cpu_op", "Operator"},   {"cuda_runtime", "Runtime"}, {"kernel", "Kernel"},
                     {"gpu_memcpy", "Memcpy"}, {"gpu_memset", "Memset"},    {"ac2g", "async"}};
                 for (auto& t : ts) {
                   for (OJson& e : events_of(t)) {
                     if (!e.is_object()) continue;
                     auto it = old.find(cat_of(e));
                     if (it != old.end()) e["cat"] = it->second;
                   }
                 }
               }});
  m.push_back({"driver_launches", Expect::kExact, [](auto& ts, auto& rng) {
                 // cudaLaunchKernel as cuLaunchKernel / cuLaunchKernelEx (driver) or
                 // cudaLaunchKernelExC (runtime), as newer PyTorch / Triton traces do.
                 for (auto& t : ts) {
                   for (OJson& e : events_of(t)) {
                     if (!e.is_object() || name_of(e) != "cudaLaunchKernel") continue;
                     switch (rng() % 3) {
                       case 0:
                         e["cat"] = "cuda_driver";
                         e["name"] = "cuLaunchKernel";
                         break;
                       case 1:
                         e["cat"] = "cuda_driver";
                         e["name"] = "cuLaunchKernelEx";
                         if (e.contains("args")) e["args"].erase("External id");
                         break;
                       default:
                         e["name"] = "cudaLaunchKernelExC";
                         break;
                     }
                   }
                 }
               }});
  m.push_back({"external_id_lower_case", Expect::kExact,
               [](auto& ts, auto&) { rename_arg(ts, "External id", "external id"); }});
  m.push_back({"correlation_id_key", Expect::kExact,
               [](auto& ts, auto&) { rename_arg(ts, "correlation", "correlationId"); }});
  m.push_back({"no_ac2g_flows", Expect::kExact,
               [](auto& ts, auto&) { drop_flows(ts, true, false); }, false, true});
  m.push_back(
      {"no_fwdbwd_flows", Expect::kExact, [](auto& ts, auto&) { drop_flows(ts, false, true); }});
  m.push_back({"metadata_events", Expect::kExact, [](auto& ts, auto& rng) {
                 for (auto& t : ts) {
                   OJson& events = events_of(t);
                   std::set<std::pair<std::string, std::string>> threads;
                   for (const OJson& e : events) {
                     if (is_x(e) && e.contains("pid") && e.contains("tid"))
                       threads.emplace(e["pid"].dump(), e["tid"].dump());
                   }
                   OJson meta = OJson::array();
                   for (const auto& [pid, tid] : threads) {
                     const OJson p = OJson::parse(pid), th = OJson::parse(tid);
                     meta.push_back({{"name", "process_name"},
                                     {"ph", "M"},
                                     {"pid", p},
                                     {"tid", 0},
                                     {"args", {{"name", "python3"}}}});
                     meta.push_back({{"name", "process_labels"},
                                     {"ph", "M"},
                                     {"pid", p},
                                     {"tid", 0},
                                     {"args", {{"labels", "CPU"}}}});
                     meta.push_back({{"name", "process_sort_index"},
                                     {"ph", "M"},
                                     {"pid", p},
                                     {"tid", 0},
                                     {"args", {{"sort_index", -1}}}});
                     meta.push_back({{"name", "thread_name"},
                                     {"ph", "M"},
                                     {"pid", p},
                                     {"tid", th},
                                     {"args", {{"name", "thread 1 (python3)"}}}});
                     meta.push_back({{"name", "thread_sort_index"},
                                     {"ph", "M"},
                                     {"pid", p},
                                     {"tid", th},
                                     {"args", {{"sort_index", 3}}}});
                   }
                   for (OJson& e : meta) {  // anywhere in the array
                     const std::size_t at = events.empty() ? 0 : rng() % (events.size() + 1);
                     events.insert(events.begin() + static_cast<std::ptrdiff_t>(at), e);
                   }
                 }
               }});
  m.push_back({"instant_and_counter_events", Expect::kExact, [](auto& ts, auto& rng) {
                 for (auto& t : ts) {
                   OJson& events = events_of(t);
                   const std::size_t n = events.size();
                   OJson extra = OJson::array();
                   for (std::size_t i = 0; i < n; i += 1 + rng() % 30) {
                     const OJson& e = events[i];
                     if (!is_x(e) || !e.contains("ts") || !e["ts"].is_number_integer()) continue;
                     extra.push_back({{"ph", "i"},
                                      {"cat", "cpu_instant_event"},
                                      {"name", "[memory]"},
                                      {"s", "t"},
                                      {"pid", e["pid"]},
                                      {"tid", e["tid"]},
                                      {"ts", e["ts"]},
                                      {"args", {{"Bytes", 512}, {"Device Type", 0}}}});
                     extra.push_back({{"ph", "C"},
                                      {"name", "GPU Memory"},
                                      {"pid", e["pid"]},
                                      {"ts", e["ts"]},
                                      {"args", {{"allocated", 1.5e9}}}});
                   }
                   for (OJson& e : extra) events.push_back(std::move(e));
                 }
               }});
  m.push_back({"string_and_negative_host_ids", Expect::kExact, [](auto& ts, auto& rng) {
                 for (auto& t : ts) {
                   std::map<std::string, OJson> pids, tids;
                   const std::int64_t salt = static_cast<std::int64_t>(rng() % 1000);
                   for (OJson& e : events_of(t)) {
                     if (!e.is_object() || !e.contains("pid") || !e.contains("tid")) continue;
                     if (is_gpu_cat(cat_of(e)) || cat_of(e) == "gpu_user_annotation") continue;
                     if (ph_of(e) == "f") continue;  // a flow's GPU end (device/stream ids)
                     if (cat_of(e) == "cuda_sync" && e.contains("args") &&
                         e["args"].contains("stream"))
                       continue;  // GPU-side records keep device/stream ids
                     const std::string pk = e["pid"].dump(), tk = e["tid"].dump();
                     if (!pids.count(pk))
                       pids[pk] = fmt::format("[pid {}] python3 host-{}", pk, salt);
                     if (!tids.count(tk)) tids[tk] = -1'000'000'000LL - salt - 7 * tids.size();
                     e["pid"] = pids[pk];
                     e["tid"] = tids[tk];
                   }
                 }
               }});
  m.push_back({"profiler_steps_as_cpu_op_renumbered", Expect::kExact, [](auto& ts, auto&) {
                 for (auto& t : ts) {
                   for (OJson& e : events_of(t)) {
                     const std::string n = name_of(e);
                     // Host steps only: a gpu_user_annotation of that name stays on its stream.
                     if (!is_x(e) || n.rfind("ProfilerStep#", 0) != 0 ||
                         cat_of(e) == "gpu_user_annotation")
                       continue;
                     e["cat"] = "cpu_op";
                     e["name"] = fmt::format("ProfilerStep#{}", 1000 + std::stoll(n.substr(13)));
                   }
                 }
               }});
  m.push_back({"gpu_user_annotations", Expect::kExact, [](auto& ts, auto& rng) {
                 for (auto& t : ts) {
                   OJson& events = events_of(t);
                   std::map<std::string, std::vector<std::size_t>> by_stream;
                   for (std::size_t i = 0; i < events.size(); ++i) {
                     const OJson& e = events[i];
                     if (is_x(e) && is_gpu_cat(cat_of(e)) && e["ts"].is_number_integer() &&
                         e.contains("dur") && e["dur"].is_number_integer())
                       by_stream[e["pid"].dump() + "/" + e["tid"].dump()].push_back(i);
                   }
                   OJson extra = OJson::array();
                   for (auto& [key, idx] : by_stream) {
                     for (std::size_t i = 0; i < idx.size(); i += 1 + rng() % 8) {
                       const std::size_t j = std::min(idx.size() - 1, i + rng() % 6);
                       const OJson& a = events[idx[i]];
                       const OJson& b = events[idx[j]];
                       const std::int64_t s = a["ts"].template get<std::int64_t>();
                       const std::int64_t en =
                           std::max(s, b["ts"].template get<std::int64_t>() +
                                           b["dur"].template get<std::int64_t>());
                       extra.push_back({{"ph", "X"},
                                        {"cat", "gpu_user_annotation"},
                                        {"name", "## forward ##"},
                                        {"pid", a["pid"]},
                                        {"tid", a["tid"]},
                                        {"ts", s},
                                        {"dur", en - s},
                                        {"args", {{"External id", 1}}}});
                     }
                   }
                   for (OJson& e : extra) events.push_back(std::move(e));
                 }
               }});
  m.push_back({"deep_python_stacks", Expect::kExact, [](auto& ts, auto& rng) {
                 // Chains of nested python_function events around host ops (equal or wider
                 // spans, written before the op as with_stack traces do) and in idle gaps.
                 for (auto& t : ts) {
                   OJson& events = events_of(t);
                   const std::size_t n = events.size();
                   OJson extra = OJson::array();
                   std::int64_t python_id = 1'000'000;
                   for (std::size_t i = 0; i < n; i += 1 + rng() % 40) {
                     const OJson& e = events[i];
                     if (!is_x(e) || cat_of(e) != "cpu_op" || !e["ts"].is_number_integer() ||
                         !e.contains("dur") || !e["dur"].is_number_integer())
                       continue;
                     const int depth = 20 + static_cast<int>(rng() % 180);
                     const std::int64_t s = e["ts"].template get<std::int64_t>();
                     const std::int64_t d = e["dur"].template get<std::int64_t>();
                     for (int k = 0; k < depth; ++k) {
                       extra.push_back({{"ph", "X"},
                                        {"cat", "python_function"},
                                        {"name", fmt::format("train.py({}): f{}", 100 + k, k)},
                                        {"pid", e["pid"]},
                                        {"tid", e["tid"]},
                                        {"ts", s},
                                        {"dur", d},
                                        {"args",
                                         {{"Python id", python_id + k},
                                          {"Python parent id", python_id + k - 1}}}});
                     }
                     python_id += depth;
                   }
                   // Prepend so that equal spans nest outside the op (file order decides ties).
                   for (OJson& e : events) extra.push_back(std::move(e));
                   events = std::move(extra);
                 }
               }});
  m.push_back({"long_unicode_names", Expect::kExact, [](auto& ts, auto& rng) {
                 std::string tail = " \xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80 \"quoted\" \\back\\ ";
                 std::string long_tail;
                 const int repeat = 30 + static_cast<int>(rng() % 60);  // 0.7–2 kB
                 for (int i = 0; i < repeat; ++i) long_tail += tail;
                 std::string huge_tail;  // one name of ~100 kB
                 for (int i = 0; i < 4000; ++i) huge_tail += tail;
                 bool huge_done = false;
                 for (auto& t : ts) {
                   for (OJson& e : events_of(t)) {
                     if (!huge_done && is_x(e) && cat_of(e) == "cpu_op" &&
                         name_of(e).rfind("ProfilerStep", 0) != 0) {
                       e["name"] = name_of(e) + huge_tail;
                       huge_done = true;
                       continue;
                     }
                     if (!is_x(e)) continue;
                     const std::string c = cat_of(e);
                     const std::string n = name_of(e);
                     if ((c == "cpu_op" || c == "python_function" || c == "kernel") &&
                         n.rfind("nccl", 0) != 0 && n.rfind("ProfilerStep", 0) != 0 &&
                         n != "record_param_comms")
                       e["name"] = n + long_tail;
                   }
                 }
               }});
  m.push_back({"unknown_args_and_nulls", Expect::kExact, [](auto& ts, auto& rng) {
                 for (auto& t : ts) {
                   for (OJson& e : events_of(t)) {
                     if (!is_x(e)) continue;
                     if (!e.contains("args")) e["args"] = OJson::object();
                     OJson& a = e["args"];
                     if (!a.is_object()) continue;
                     OJson extra = {
                         {"aaa_null", nullptr},
                         {"a_nested", {{"correlation", 5}, {"x", {1, 2, {{"y", nullptr}}}}}},
                         {"zz_big", 1e308},
                         {"Input Dims", OJson::array()}};
                     OJson merged = chance(rng, 0.5) ? extra : OJson::object();
                     for (auto it = a.begin(); it != a.end(); ++it) merged[it.key()] = it.value();
                     for (auto it = extra.begin(); it != extra.end(); ++it) {
                       if (!merged.contains(it.key())) merged[it.key()] = it.value();
                     }
                     a = std::move(merged);
                   }
                 }
               }});
  m.push_back({"pretty_printed", Expect::kExact, [](auto& ts, auto&) {
                 for (auto& t : ts) t.indent = 2;
               }});
  m.push_back({"one_line_document", Expect::kExact, [](auto& ts, auto&) {
                 for (auto& t : ts) t.no_newlines = true;
               }});
  m.push_back({"crlf_gzip", Expect::kExact, [](auto& ts, auto&) {
                 for (auto& t : ts) {
                   t.crlf = true;
                   t.gzip = true;
                 }
               }});
  m.push_back({"events_shuffled", Expect::kExact, [](auto& ts, auto& rng) {
                 for (auto& t : ts) {
                   OJson& events = events_of(t);
                   std::vector<OJson> v(events.begin(), events.end());
                   std::shuffle(v.begin(), v.end(), rng);
                   events = OJson(v);
                 }
               }});
  // A synchronizing call whose cuda_sync record stays: the call not written at all, or written
  // without its correlation (and its ac2g flow). The record still says what was awaited and for
  // how long the host waited, so the information is intact.
  m.push_back({"sync_calls_dropped_keep_records", Expect::kExact,
               [](auto& ts, auto&) { strip_sync_calls(ts, true); }});
  m.push_back({"sync_call_correlations_dropped", Expect::kExact,
               [](auto& ts, auto&) { strip_sync_calls(ts, false); }});
  // Launch and GPU records disagree on every correlation (no flows): the pairs are found again
  // by stream order and time.
  // Pairing by time cannot tell which of two idle streams one thread launched to first (two
  // devices of one process: the what-if moves by 0.8 %), hence the what-if bound of 1 %.
  m.push_back({"gpu_correlations_renumbered", Expect::kExact,
               [](auto& ts, auto&) {
                 drop_flows(ts, true, false);
                 for (auto& t : ts) {
                   for (OJson& e : events_of(t)) {
                     if (!is_x(e) || !is_gpu_cat(cat_of(e)) || !e.contains("args") ||
                         !e["args"].is_object() || !e["args"].contains("correlation") ||
                         !e["args"]["correlation"].is_number_integer())
                       continue;
                     e["args"]["correlation"] =
                         e["args"]["correlation"].template get<std::int64_t>() + 900'000'000;
                   }
                 }
               },
               false, false, -1.0, 1.0});
  // --- information lost or damaged: honest verdict, no lost task ---
  m.push_back(
      {"no_flows_at_all", Expect::kHonest, [](auto& ts, auto&) { drop_flows(ts, true, true); }});
  m.push_back({"json_array_format", Expect::kHonest, [](auto& ts, auto&) {
                 for (auto& t : ts) {
                   t.array_format = true;  // no distributedInfo, epoch times
                   if (t.time_format == F::kRelative3) t.time_format = F::kEpoch3;
                 }
               }});
  m.push_back({"correlation_dropped_keep_flows", Expect::kHonest,
               [](auto& ts, auto& rng) {
                 const double f = uniform(rng, 0.05, 1.0);
                 for (auto& t : ts) {
                   for (OJson& e : events_of(t)) {
                     if (is_x(e) && e.contains("args") && e["args"].is_object() && chance(rng, f))
                       e["args"].erase("correlation");
                   }
                 }
               },
               false, false, 1.0});
  m.push_back({"correlation_dropped_no_flows", Expect::kHonest,
               [](auto& ts, auto& rng) {
                 drop_flows(ts, true, true);
                 const double f = uniform(rng, 0.01, 0.5);
                 const int which = static_cast<int>(rng() % 3);  // GPU side, host side, both
                 for (auto& t : ts) {
                   for (OJson& e : events_of(t)) {
                     if (!is_x(e) || !e.contains("args") || !e["args"].is_object()) continue;
                     const bool gpu = is_gpu_cat(cat_of(e));
                     if ((which == 0 && !gpu) || (which == 1 && gpu)) continue;
                     if (chance(rng, f)) e["args"].erase("correlation");
                   }
                 }
               },
               false, false, 1.0});
  m.push_back({"window_truncated", Expect::kHonest, [](auto& ts, auto& rng) {
                 // The profiler window cut at both ends: events starting outside dropped; events
                 // crossing the end clipped (or dropped), as a stopped profiler leaves them.
                 std::int64_t lo = INT64_MAX, hi = INT64_MIN;
                 for (auto& t : ts) {
                   for (const OJson& e : events_of(t)) {
                     if (!is_x(e) || !e["ts"].is_number_integer()) continue;
                     lo = std::min(lo, e["ts"].template get<std::int64_t>());
                     hi = std::max(hi, e["ts"].template get<std::int64_t>());
                   }
                 }
                 if (lo >= hi) return;
                 const double a = uniform(rng, 0.0, 0.3), b = uniform(rng, 0.0, 0.3);
                 const std::int64_t cut_lo = lo + static_cast<std::int64_t>((hi - lo) * a);
                 const std::int64_t cut_hi = hi - static_cast<std::int64_t>((hi - lo) * b);
                 const bool clip = chance(rng, 0.5);
                 for (auto& t : ts) {
                   OJson kept = OJson::array();
                   for (OJson& e : events_of(t)) {
                     if (e.is_object() && e.contains("ts") && e["ts"].is_number_integer()) {
                       const std::int64_t s = e["ts"].template get<std::int64_t>();
                       if (s < cut_lo || s > cut_hi) continue;
                       if (clip && e.contains("dur") && e["dur"].is_number_integer() &&
                           s + e["dur"].template get<std::int64_t>() > cut_hi)
                         e["dur"] = cut_hi - s;
                     }
                     kept.push_back(std::move(e));
                   }
                   events_of(t) = std::move(kept);
                 }
               }});
  m.push_back({"duplicated_events", Expect::kHonest, [](auto& ts, auto& rng) {
                 const double f = uniform(rng, 0.001, 0.1);
                 for (auto& t : ts) {
                   OJson& events = events_of(t);
                   OJson out = OJson::array();
                   for (OJson& e : events) {
                     const bool dup = is_x(e) && chance(rng, f);
                     if (dup) out.push_back(e);
                     out.push_back(std::move(e));
                   }
                   events = std::move(out);
                 }
               }});
  m.push_back({"zero_durations", Expect::kHonest, [](auto& ts, auto& rng) {
                 const double f = uniform(rng, 0.01, 0.3);
                 for (auto& t : ts) {
                   for (OJson& e : events_of(t)) {
                     if (is_x(e) && e.contains("dur") && chance(rng, f)) e["dur"] = 0;
                   }
                 }
               }});
  m.push_back({"missing_durations", Expect::kHonest, [](auto& ts, auto& rng) {
                 const double f = uniform(rng, 0.01, 0.3);
                 for (auto& t : ts) {
                   for (OJson& e : events_of(t)) {
                     if (is_x(e) && chance(rng, f)) e.erase("dur");
                   }
                 }
               }});
  m.push_back({"null_values", Expect::kHonest, [](auto& ts, auto& rng) {
                 const double f = uniform(rng, 0.001, 0.05);
                 static const char* keys[] = {"dur", "ts", "pid", "tid", "args", "name", "cat"};
                 for (auto& t : ts) {
                   for (OJson& e : events_of(t)) {
                     if (!is_x(e) || !chance(rng, f)) continue;
                     const char* k = keys[rng() % 7];
                     e[k] = nullptr;
                     if (e.contains("args") && e["args"].is_object() && chance(rng, 0.5))
                       e["args"]["correlation"] = nullptr;
                   }
                 }
               }});
  m.push_back({"nan_and_infinity_in_args", Expect::kHonest, [](auto& ts, auto& rng) {
                 // Python's json writes NaN/Infinity (not JSON): a reader may refuse the file
                 // (one-line error) or skip them.
                 for (auto& t : ts) {
                   for (OJson& e : events_of(t)) {
                     if (is_x(e) && e.contains("args") && e["args"].is_object() &&
                         chance(rng, 0.02))
                       e["args"]["ratio"] = chance(rng, 0.5) ? "#NAN#" : "#INF#";
                   }
                   t.raw_replacements = {{"\"#NAN#\"", "NaN"}, {"\"#INF#\"", "-Infinity"}};
                 }
               }});
  m.push_back({"int_us_rounded_independently", Expect::kHonest, [](auto& ts, auto&) {
                 for (auto& t : ts) t.time_format = F::kEpochIntRounded;
               }});
  m.push_back({"exponent_times", Expect::kHonest, [](auto& ts, auto&) {
                 for (auto& t : ts) t.time_format = F::kExponent;
               }});
  m.push_back({"gpu_events_lost", Expect::kHonest, [](auto& ts, auto& rng) {
                 // CUPTI buffer overflow: some GPU activities never reach the trace.
                 const double f = uniform(rng, 0.001, 0.05);
                 for (auto& t : ts) {
                   OJson kept = OJson::array();
                   for (OJson& e : events_of(t)) {
                     if (is_x(e) && is_gpu_cat(cat_of(e)) && chance(rng, f)) continue;
                     kept.push_back(std::move(e));
                   }
                   events_of(t) = std::move(kept);
                 }
               }});
  m.push_back({"sync_records_dropped", Expect::kHonest, [](auto& ts, auto& rng) {
                 const bool records = chance(rng, 0.5);
                 for (auto& t : ts) {
                   OJson kept = OJson::array();
                   for (OJson& e : events_of(t)) {
                     if (is_x(e) && (cat_of(e) == "cuda_sync" ||
                                     (records && (name_of(e) == "cudaEventRecord"))))
                       continue;
                     kept.push_back(std::move(e));
                   }
                   events_of(t) = std::move(kept);
                 }
               }});
  m.push_back({"rank_missing", Expect::kHonest,
               [](auto& ts, auto& rng) {
                 if (ts.size() > 1)
                   ts.erase(ts.begin() + static_cast<std::ptrdiff_t>(rng() % ts.size()));
               },
               true});
  // Another host's clock: the joins would turn the offset into waiting unless the ranks'
  // clocks are aligned (graph/collectives.cc).
  m.push_back({"clock_skew_between_ranks", Expect::kExact,
               [](auto& ts, auto& rng) {
                 for (std::size_t r = 1; r < ts.size(); ++r) {
                   const std::int64_t skew = static_cast<std::int64_t>(uniform(rng, -2e6, 2e6));
                   for (OJson& e : events_of(ts[r])) {
                     if (e.is_object() && e.contains("ts") && e["ts"].is_number_integer())
                       e["ts"] = e["ts"].template get<std::int64_t>() + skew;
                   }
                 }
               },
               true});
  // --- broken files: one-line error ---
  m.push_back({"truncated_file", Expect::kError, [](auto& ts, auto& rng) {
                 MutableTrace& t = ts[rng() % ts.size()];
                 t.gzip = chance(rng, 0.3);
                 const std::string full = write_mutable(t);
                 t.truncate_at = static_cast<std::int64_t>(static_cast<double>(full.size()) *
                                                           uniform(rng, 0.02, 0.98));
               }});
  // A comma after the last event (hand-edited or concatenated files): not JSON; refused with the
  // byte offset rather than guessed at (docs/robustness.md).
  m.push_back({"trailing_comma", Expect::kError, [](auto& ts, auto& rng) {
                 MutableTrace& t = ts[rng() % ts.size()];
                 t.indent = -1;
                 t.raw_replacements.emplace_back("\n]", ",\n]");
               }});
  m.push_back({"garbage_after_document", Expect::kError, [](auto& ts, auto& rng) {
                 ts[rng() % ts.size()].suffix = "\n{\"traceEvents\": [";
               }});
  return m;
}

}  // namespace powertrain::test_support
