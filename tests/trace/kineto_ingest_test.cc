// The Kineto reader's fast paths (issue 13, ingest speed) against brute force: the sort through a
// reused gather buffer, the dense and sparse correlation indexes, and the name cache must give
// exactly what the plain rules say.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "trace/kineto_reader.h"

namespace powertrain::trace {
namespace {

namespace fs = std::filesystem;

std::string document(const std::vector<std::string>& events) {
  std::string json = "{\"traceEvents\": [\n";
  for (std::size_t i = 0; i < events.size(); ++i) {
    json += events[i] + (i + 1 < events.size() ? ",\n" : "\n");
  }
  return json + "]}\n";
}

std::string op(const std::string& name, std::int64_t ts_us, std::int64_t dur_us) {
  return "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"" + name +
         "\", \"pid\": 1, \"tid\": 1, \"ts\": " + std::to_string(ts_us) +
         ", \"dur\": " + std::to_string(dur_us) + "}";
}

RankTrace parse_ok(const std::string& json) {
  auto trace = parse_kineto_json(json, "test.json", 0);
  EXPECT_TRUE(trace.ok()) << trace.error().message;
  return trace.ok() ? std::move(*trace) : RankTrace{};
}

std::int64_t warning_count(const RankTrace& trace, std::string_view kind_part) {
  std::int64_t total = 0;
  for (const TraceWarning& w : trace.warnings) {
    if (w.kind.find(kind_part) != std::string::npos) total += w.count;
  }
  return total;
}

// SplitMix64, for reproducible shuffles.
std::uint64_t mix(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

struct Spec {
  std::string name;
  std::int64_t ts_us;
  std::int64_t dur_us;
};

// `count` ops with few distinct (start, duration) pairs — many exact ties — in a random order.
// Names are unique, so the expected order is checkable.
std::vector<Spec> shuffled_ops(int count, std::uint64_t seed) {
  std::vector<Spec> specs;
  for (int i = 0; i < count; ++i) {
    specs.push_back({"op" + std::to_string(i), static_cast<std::int64_t>(mix(seed) % 50),
                     static_cast<std::int64_t>(mix(seed) % 4)});
  }
  return specs;
}

// Brute force: a stable sort of the file order by (start, longer first).
std::vector<std::string> expected_order(std::vector<Spec> specs) {
  std::stable_sort(specs.begin(), specs.end(), [](const Spec& a, const Spec& b) {
    return a.ts_us != b.ts_us ? a.ts_us < b.ts_us : a.dur_us > b.dur_us;
  });
  std::vector<std::string> names;
  for (const Spec& s : specs) names.push_back(s.name);
  return names;
}

std::string document_of(const std::vector<Spec>& specs) {
  std::vector<std::string> events;
  for (const Spec& s : specs) events.push_back(op(s.name, s.ts_us, s.dur_us));
  return document(events);
}

std::vector<std::string> names_in_order(const RankTrace& trace) {
  std::vector<std::string> names;
  for (const TraceEvent& e : trace.events) names.push_back(trace.name_of(e));
  return names;
}

TEST(KinetoIngest, SortIsTheStableSortOfTheFileOrderWithManyTies) {
  for (const int count : {2, 17, 5000}) {
    const std::vector<Spec> specs = shuffled_ops(count, 7 + static_cast<std::uint64_t>(count));
    const RankTrace trace = parse_ok(document_of(specs));
    EXPECT_EQ(names_in_order(trace), expected_order(specs)) << count << " events";
  }
}

// The ordering pass adds the time base, drops exact copies and sorts in one go, with the sort keys
// written during the walk when no event can overflow, and a checked pass otherwise. Both paths,
// on input already in order and shuffled, against brute force: the kept events with start =
// ts + base, copies dropped once each, events whose start or end overflows int64 dropped.
TEST(KinetoIngest, TimeBaseDuplicatesAndOverflowOnTheFastAndCheckedPaths) {
  std::uint64_t seed = 99;
  std::vector<Spec> unique = shuffled_ops(400, seed);
  std::vector<Spec> with_copies = unique;
  for (int i = 0; i < 400; i += 7) with_copies.push_back(unique[static_cast<std::size_t>(i)]);
  for (const bool in_order : {true, false}) {
    std::vector<Spec> specs = with_copies;
    if (in_order) {
      specs = {};
      for (const std::string& name : expected_order(with_copies)) {
        const auto it = std::find_if(with_copies.begin(), with_copies.end(),
                                     [&](const Spec& s) { return s.name == name; });
        specs.push_back(*it);
      }
    } else {
      for (std::size_t i = specs.size() - 1; i > 0; --i) {
        std::swap(specs[i], specs[static_cast<std::size_t>(mix(seed) % (i + 1))]);
      }
    }
    // A base well inside int64 (the fast path) and one that pushes later events past INT64_MAX.
    for (const std::int64_t base :
         {std::int64_t{1'700'000'000'000'000'000}, INT64_MAX - std::int64_t{30'000}}) {
      std::string json = document_of(specs);
      json.insert(json.rfind('}'), ", \"baseTimeNanoseconds\": " + std::to_string(base));
      const RankTrace trace = parse_ok(json);
      std::vector<Spec> kept;  // brute force: drop overflowing events, then copies
      std::int64_t overflowed = 0;
      for (const Spec& s : specs) {
        if (s.ts_us * 1000 + s.dur_us * 1000 > INT64_MAX - base) {
          ++overflowed;
          continue;
        }
        kept.push_back(s);
      }
      std::vector<Spec> distinct;
      for (const Spec& s : kept) {
        if (std::none_of(distinct.begin(), distinct.end(),
                         [&](const Spec& d) { return d.name == s.name; })) {
          distinct.push_back(s);
        }
      }
      const std::string label =
          (in_order ? "in order, base " : "shuffled, base ") + std::to_string(base);
      EXPECT_EQ(names_in_order(trace), expected_order(distinct)) << label;
      EXPECT_EQ(warning_count(trace, "int64 ns range"), overflowed) << label;
      EXPECT_EQ(warning_count(trace, "exact duplicate"),
                static_cast<std::int64_t>(kept.size() - distinct.size()))
          << label;
      for (const TraceEvent& e : trace.events) {
        const auto it = std::find_if(distinct.begin(), distinct.end(),
                                     [&](const Spec& d) { return d.name == trace.name_of(e); });
        ASSERT_NE(it, distinct.end());
        EXPECT_EQ(e.start_ns, it->ts_us * 1000 + base) << label;
        EXPECT_EQ(e.duration_ns, it->dur_us * 1000) << label;
      }
      if (base == INT64_MAX - 30'000) {
        EXPECT_GT(overflowed, 0) << label;
      }
    }
  }
}

TEST(KinetoIngest, TracesOfDifferentSizesReadTogetherAsAlone) {
  // read_kineto_traces reuses one sort buffer across its traces: big, small, big again.
  const fs::path dir =
      fs::temp_directory_path() / ("powertrain-ingest-test-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::vector<std::vector<Spec>> files = {shuffled_ops(20000, 1), shuffled_ops(3, 2),
                                                shuffled_ops(9000, 3)};
  for (std::size_t i = 0; i < files.size(); ++i) {
    std::ofstream(dir / ("rank" + std::to_string(i) + ".json")) << document_of(files[i]);
  }
  auto together = read_kineto_traces({dir.string()});
  ASSERT_TRUE(together.ok()) << together.error().message;
  ASSERT_EQ(together->size(), files.size());
  for (std::size_t i = 0; i < files.size(); ++i) {
    const RankTrace& trace = (*together)[i];
    EXPECT_EQ(names_in_order(trace), expected_order(files[i])) << trace.source;
    auto alone = read_kineto_trace((dir / ("rank" + std::to_string(i) + ".json")).string(), 0);
    ASSERT_TRUE(alone.ok());
    EXPECT_EQ(names_in_order(*alone), names_in_order(trace));
    // The reused buffer never leaves a small trace holding a big trace's memory.
    EXPECT_LE(trace.events.capacity(), 2 * trace.events.size() + 4096) << trace.source;
  }
  fs::remove_all(dir);
}

// Launch/kernel pairs with the given correlation ids, plus a launch without a kernel, a kernel
// without a launch and a second launch repeating the first id.
RankTrace linked_trace(const std::vector<std::int64_t>& ids) {
  std::vector<std::string> events;
  std::int64_t t = 0;
  for (const std::int64_t id : ids) {
    const std::string corr = std::to_string(id);
    events.push_back(
        "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", "
        "\"pid\": 1, \"tid\": 1, \"ts\": " +
        std::to_string(t) + ", \"dur\": 1, \"args\": {\"correlation\": " + corr + "}}");
    events.push_back(
        "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, "
        "\"ts\": " +
        std::to_string(t + 2) + ", \"dur\": 1, \"args\": {\"correlation\": " + corr + "}}");
    t += 10;
  }
  events.push_back(
      "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", "
      "\"pid\": 1, \"tid\": 1, \"ts\": " +
      std::to_string(t) +
      ", \"dur\": 1, \"args\": {\"correlation\": " + std::to_string(ids.back() + 1) + "}}");
  events.push_back(
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, "
      "\"ts\": " +
      std::to_string(t + 2) +
      ", \"dur\": 1, \"args\": {\"correlation\": " + std::to_string(ids.back() + 2) + "}}");
  events.push_back(
      "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", "
      "\"pid\": 1, \"tid\": 1, \"ts\": " +
      std::to_string(t + 4) +
      ", \"dur\": 1, \"args\": {\"correlation\": " + std::to_string(ids.front()) + "}}");
  return parse_ok(document(events));
}

TEST(KinetoIngest, DenseAndSparseCorrelationIdsLinkTheSame) {
  std::vector<std::int64_t> dense;
  std::vector<std::int64_t> sparse;  // spans far more than 4× their count: the sorted-vector path
  for (std::int64_t i = 0; i < 300; ++i) {
    dense.push_back(1000 + i);
    sparse.push_back(7 + i * 1'000'000'007);
  }
  for (const auto& ids : {dense, sparse}) {
    const RankTrace trace = linked_trace(ids);
    EXPECT_EQ(warning_count(trace, "GPU work without a launch"), 1);
    EXPECT_EQ(warning_count(trace, "launch without GPU work"), 1);
    EXPECT_EQ(trace.events.size(), 2 * ids.size() + 3);
  }
}

TEST(KinetoIngest, NameCacheKeepsCollidingAndEscapedNamesApart) {
  // 600 distinct names (more than the cache's 256 slots, so slots collide) interleaved three
  // times, plus escaped spellings of one name and a name with an invalid escape.
  std::vector<std::string> events;
  std::vector<std::string> expected;
  std::int64_t t = 0;
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 600; ++i) {
      const std::string name = "kernel_" + std::to_string((i * 7919) % 600) + "_suffix";
      events.push_back(op(name, t++, 0));
      expected.push_back(name);
    }
    events.push_back(op("ab", t++, 0));
    expected.push_back("ab");
    events.push_back(op("a\\u0062", t++, 0));
    expected.push_back("ab");
    events.push_back(op("bad\\q", t++, 0));
    expected.push_back("bad\\q");
  }
  const RankTrace trace = parse_ok(document(events));
  EXPECT_EQ(names_in_order(trace), expected);
  EXPECT_EQ(trace.names.size(), 602u);  // each name once, "ab" however spelled
  EXPECT_EQ(warning_count(trace, "invalid JSON escape"), 3);  // counted per event, cache or not
}

}  // namespace
}  // namespace powertrain::trace

namespace powertrain::trace {
namespace {

// The category lookup (a hash of length, first and last byte, then one comparison) against the
// list written out here: every known name gives its kind with no warning; names that share its
// length and first and last bytes, differ in case, or are a prefix or extension of a known one
// are unknown (kOther, one warning each).
TEST(KinetoIngest, CategoryLookupMatchesTheListAndRejectsNearMisses) {
  const std::vector<std::pair<std::string, EventKind>> known = {
      {"cpu_op", EventKind::kCpuOp},
      {"python_function", EventKind::kPythonFunction},
      {"cuda_runtime", EventKind::kCudaRuntime},
      {"kernel", EventKind::kKernel},
      {"cuda_driver", EventKind::kCudaDriver},
      {"gpu_memcpy", EventKind::kGpuMemcpy},
      {"gpu_memset", EventKind::kGpuMemset},
      {"user_annotation", EventKind::kUserAnnotation},
      {"gpu_user_annotation", EventKind::kGpuUserAnnotation},
      {"cuda_sync", EventKind::kCudaSync},
      {"Operator", EventKind::kCpuOp},
      {"Runtime", EventKind::kCudaRuntime},
      {"Kernel", EventKind::kKernel},
      {"Memcpy", EventKind::kGpuMemcpy},
      {"Memset", EventKind::kGpuMemset},
      {"overhead", EventKind::kOther},
      {"Trace", EventKind::kOther},
      {"cuda_event", EventKind::kOther},
      {"cpu_instant_event", EventKind::kOther},
      {"external_correlation", EventKind::kOther},
      {"cuda_profiler_range", EventKind::kOther},
      {"collective_comm", EventKind::kOther},
      {"glow_runtime", EventKind::kOther},
      {"mtia_runtime", EventKind::kOther},
      {"mtia_ccp_events", EventKind::kOther},
      {"hpu_op", EventKind::kOther},
      {"xpu_runtime", EventKind::kOther},
      {"xpu_driver", EventKind::kOther},
      {"privateuse1_runtime", EventKind::kOther},
      {"privateuse1_driver", EventKind::kOther},
  };
  std::vector<std::string> unknown = {"CPU_OP", "cpu_o", "cpu_opp", "kernels", "Kerne", "x"};
  for (const auto& [name, kind] : known) {
    // Same length, first and last byte: the same hash slot as `name`, so only the full
    // comparison can tell them apart.
    std::string twin = name;
    if (twin.size() > 2) {
      twin[1] = twin[1] == 'z' ? 'y' : 'z';
      unknown.push_back(twin);
    }
  }
  for (const auto& [name, kind] : known) {
    const std::string json = document({"{\"ph\": \"X\", \"cat\": \"" + name +
                                       "\", \"name\": \"n\", \"pid\": 1, \"tid\": 2, \"ts\": 5, "
                                       "\"dur\": 1, \"args\": {\"correlation\": 7}}"});
    const RankTrace trace = parse_ok(json);
    ASSERT_EQ(trace.events.size(), 1u) << name;
    EXPECT_EQ(trace.events[0].kind, kind) << name;
    EXPECT_EQ(warning_count(trace, "unknown category"), 0) << name;
  }
  for (const std::string& name : unknown) {
    const std::string json = document({"{\"ph\": \"X\", \"cat\": \"" + name +
                                       "\", \"name\": \"n\", \"pid\": 1, \"tid\": 2, \"ts\": 5, "
                                       "\"dur\": 1}"});
    const RankTrace trace = parse_ok(json);
    ASSERT_EQ(trace.events.size(), 1u) << name;
    EXPECT_EQ(trace.events[0].kind, EventKind::kOther) << name;
    EXPECT_EQ(warning_count(trace, "unknown category '" + name + "'"), 1) << name;
  }
}

// Events are built field by field before they are appended: every field an event does not give
// keeps TraceEvent's default, next to events that give them all.
TEST(KinetoIngest, FieldsAnEventLacksKeepTheirDefaults) {
  const RankTrace trace = parse_ok(document({
      "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaStreamWaitEvent\", \"pid\": 3, "
      "\"tid\": 4, \"ts\": 1, \"dur\": 2, \"args\": {\"External id\": 9, \"correlation\": 11, "
      "\"cuda_event\": 12}}",
      "{\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"bare\", \"ts\": 3}",
  }));
  ASSERT_EQ(trace.events.size(), 2u);
  const TraceEvent& full = trace.events[0];
  EXPECT_EQ(full.pid, 3);
  EXPECT_EQ(full.tid, 4);
  EXPECT_EQ(full.start_ns, 1000);
  EXPECT_EQ(full.duration_ns, 2000);
  EXPECT_EQ(full.external_id, 9);
  EXPECT_EQ(full.correlation, 11);
  EXPECT_EQ(full.cuda_event, 12);
  EXPECT_EQ(full.sync, SyncKind::kStreamWaitEvent);
  const TraceEvent defaults;
  const TraceEvent& bare = trace.events[1];
  EXPECT_EQ(trace.name_of(bare), "bare");
  EXPECT_EQ(bare.kind, EventKind::kCpuOp);
  EXPECT_EQ(bare.start_ns, 3000);
  EXPECT_EQ(bare.duration_ns, defaults.duration_ns);
  EXPECT_EQ(bare.pid, defaults.pid);
  EXPECT_EQ(bare.tid, defaults.tid);
  EXPECT_EQ(bare.correlation, defaults.correlation);
  EXPECT_EQ(bare.external_id, defaults.external_id);
  EXPECT_EQ(bare.cuda_event, defaults.cuda_event);
  EXPECT_EQ(bare.sync, defaults.sync);
  EXPECT_EQ(bare.wait_on_stream, defaults.wait_on_stream);
  EXPECT_EQ(bare.wait_on_event_correlation, defaults.wait_on_event_correlation);
  EXPECT_EQ(bare.nccl, defaults.nccl);
  EXPECT_EQ(bare.collective, defaults.collective);
}

}  // namespace
}  // namespace powertrain::trace
