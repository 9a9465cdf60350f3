// Cross-rank collective matching and the edge store. A collective kernel's measured duration
// includes waiting for the last peer, so matched members are replayed with a join (sim/).
#include "graph/collectives.h"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>

namespace powertrain::graph::detail {

namespace {

// "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, ...)" →
// "ncclKernel_AllReduce_RING_LL_Sum_float"
std::string_view kernel_base_name(std::string_view name) { return name.substr(0, name.find('(')); }

// Each NCCL stream's class on its rank: its rank among the rank's NCCL streams by number of
// collectives (most first), ties by first use. Every communicator has its own stream, and ranks
// running one program use their communicators alike, so a class names the same communicator
// kind (tensor-parallel, data-parallel, ...) on every rank, even where the profiling window
// opened at a different point. Keyed by processor (stream) index.
std::unordered_map<std::int32_t, std::int32_t> nccl_stream_classes(const ExecutionGraph& graph) {
  std::unordered_map<std::int32_t, std::int32_t> classes;
  for (const RankInfo& rank : graph.ranks) {
    std::vector<std::array<std::int32_t, 3>> streams;  // (−count, first use, processor)
    std::unordered_map<std::int32_t, std::size_t> index;
    for (std::int32_t task = rank.first_task; task < rank.end_task; ++task) {
      if (!graph.nccl[task]) continue;
      auto [it, inserted] = index.try_emplace(graph.processor[task], streams.size());
      if (inserted) streams.push_back({0, task, graph.processor[task]});
      --streams[it->second][0];
    }
    std::sort(streams.begin(), streams.end());
    for (std::size_t k = 0; k < streams.size(); ++k)
      classes[streams[k][2]] = static_cast<std::int32_t>(k);
  }
  return classes;
}

// Whether two collective kernels can be members of one collective: the same kernel on streams of
// the same class.
bool same_collective_kind(const ExecutionGraph& graph,
                          const std::unordered_map<std::int32_t, std::int32_t>& classes,
                          std::int32_t a, std::int32_t b) {
  if (kernel_base_name(graph.task_name(a)) != kernel_base_name(graph.task_name(b))) return false;
  const auto ca = classes.find(graph.processor[a]);
  const auto cb = classes.find(graph.processor[b]);
  return (ca == classes.end() ? -1 : ca->second) == (cb == classes.end() ? -1 : cb->second);
}

double median_of(std::vector<std::int64_t>& v) {
  if (v.empty()) return 0.0;
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  return static_cast<double>(v[mid]);
}

// How well rank A's n-th collective of a group pairs with the reference rank's (n + shift)-th:
// kernel names that differ, then the spread of their end-time differences (members of one
// collective end within microseconds of each other, whatever the ranks' clock offset).
struct ShiftScore {
  double mismatched = 1.0;  // fraction of pairs whose kernels differ
  double spread_ns = 0.0;   // median |difference − median difference|
  std::int64_t pairs = 0;
};

ShiftScore score_shift(const ExecutionGraph& graph,
                       const std::unordered_map<std::int32_t, std::int32_t>& classes,
                       const std::vector<std::int32_t>& tasks, const std::vector<std::int32_t>& ref,
                       std::int64_t shift) {
  ShiftScore score;
  std::vector<std::int64_t> diffs;
  std::int64_t mismatched = 0;
  const std::int64_t n = static_cast<std::int64_t>(tasks.size());
  const std::int64_t m = static_cast<std::int64_t>(ref.size());
  for (std::int64_t i = std::max<std::int64_t>(0, -shift); i < n && i + shift < m; ++i) {
    const std::int32_t a = tasks[static_cast<std::size_t>(i)];
    const std::int32_t b = ref[static_cast<std::size_t>(i + shift)];
    if (!same_collective_kind(graph, classes, a, b)) ++mismatched;
    diffs.push_back(graph.input_end_ns(a) - graph.input_end_ns(b));
  }
  score.pairs = static_cast<std::int64_t>(diffs.size());
  if (diffs.empty()) return score;
  score.mismatched = static_cast<double>(mismatched) / static_cast<double>(diffs.size());
  const double center = median_of(diffs);
  std::vector<std::int64_t> deviations;
  deviations.reserve(diffs.size());
  for (std::int64_t d : diffs)
    deviations.push_back(static_cast<std::int64_t>(std::abs(static_cast<double>(d) - center)));
  score.spread_ns = median_of(deviations);
  return score;
}

// Collectives matched by their order on each rank (no Seq) misalign when a rank's trace lacks
// some of them: the profiling window cut it at a different point, or the profiler lost a kernel.
// Returns each rank's ordinals for one process group (position n → the ordinal it is matched
// under). Ranks with as many collectives as the longest sequence (the reference) whose plain
// order pairs well keep it. Otherwise the rank's clock offset to the reference is the median end
// difference under the best whole-sequence shift, and each collective takes the reference ordinal
// whose end (offset removed) is nearest with the same kernel, within max(4 × spread, 50 µs), each
// at most once; the rest get ordinals no other rank has (replayed measured).
std::vector<std::vector<std::int64_t>> align_ordinals(
    const ExecutionGraph& graph, const std::unordered_map<std::int32_t, std::int32_t>& classes,
    const std::vector<std::vector<std::int32_t>>& by_rank, std::vector<bool>* realigned) {
  std::vector<std::vector<std::int64_t>> ordinals(by_rank.size());
  realigned->assign(by_rank.size(), false);
  std::size_t ref = 0;
  for (std::size_t r = 0; r < by_rank.size(); ++r)
    if (by_rank[r].size() > by_rank[ref].size()) ref = r;
  const std::vector<std::int32_t>& ref_tasks = by_rank[ref];
  const std::int64_t m = static_cast<std::int64_t>(ref_tasks.size());
  std::vector<std::pair<std::int64_t, std::int64_t>> ref_ends;  // (end, ordinal), sorted
  for (std::int64_t j = 0; j < m; ++j)
    ref_ends.emplace_back(graph.input_end_ns(ref_tasks[static_cast<std::size_t>(j)]), j);
  std::sort(ref_ends.begin(), ref_ends.end());
  constexpr std::int64_t kMaxShift = 64;
  // The best whole-sequence shift of `tasks` against `against`, and whether the plain order
  // (shift 0) fits as well as the best.
  struct ShiftChoice {
    std::int64_t best = 0;
    ShiftScore best_score;
    bool plain_fits = false;
  };
  auto choose_shift = [&](const std::vector<std::int32_t>& tasks,
                          const std::vector<std::int32_t>& against) {
    const std::int64_t n = static_cast<std::int64_t>(tasks.size());
    const std::int64_t m = static_cast<std::int64_t>(against.size());
    // Every whole-sequence shift with enough pairs; the best agree on kernel names and spread
    // their end differences least. Periodic collectives fit several shifts equally well (a
    // shift by one period looks like a clock offset of one period): the smallest offset wins,
    // clocks of one job being far closer than a step.
    const std::int64_t min_pairs = std::max<std::int64_t>(2, (std::min(n, m) + 1) / 2);
    std::vector<std::pair<std::int64_t, ShiftScore>> candidates;
    for (std::int64_t shift = -std::min(n - 1, kMaxShift); shift <= std::min(m - 1, kMaxShift);
         ++shift) {
      const ShiftScore s = score_shift(graph, classes, tasks, against, shift);
      if (s.pairs >= min_pairs || shift == 0) candidates.emplace_back(shift, s);
    }
    double least_mismatch = 1.0, least_spread = 0.0;
    bool first = true;
    for (const auto& [shift, s] : candidates) {
      if (s.pairs < min_pairs) continue;
      if (first || s.mismatched < least_mismatch ||
          (s.mismatched == least_mismatch && s.spread_ns < least_spread)) {
        least_mismatch = s.mismatched;
        least_spread = s.spread_ns;
        first = false;
      }
    }
    std::int64_t best = 0;
    ShiftScore best_score = score_shift(graph, classes, tasks, against, 0);
    double best_offset = -1.0;
    for (const auto& [shift, s] : candidates) {
      if (first || s.pairs < min_pairs || s.mismatched > least_mismatch ||
          s.spread_ns > std::max(2.0 * least_spread, least_spread + 10'000.0))
        continue;
      std::vector<std::int64_t> d;
      for (std::int64_t i = std::max<std::int64_t>(0, -shift); i < n && i + shift < m; ++i) {
        d.push_back(graph.input_end_ns(tasks[static_cast<std::size_t>(i)]) -
                    graph.input_end_ns(against[static_cast<std::size_t>(i + shift)]));
      }
      const double offset = std::abs(median_of(d));
      if (best_offset < 0 || offset < best_offset ||
          (offset == best_offset && std::abs(shift) < std::abs(best))) {
        best = shift;
        best_score = s;
        best_offset = offset;
      }
    }
    const ShiftScore plain = score_shift(graph, classes, tasks, against, 0);
    const bool plain_fits =
        !first && plain.mismatched <= least_mismatch &&
        plain.spread_ns <= std::max(2.0 * least_spread, least_spread + 10'000.0);
    return ShiftChoice{best, best_score, plain_fits};
  };
  for (std::size_t r = 0; r < by_rank.size(); ++r) {
    const std::vector<std::int32_t>& tasks = by_rank[r];
    const std::int64_t n = static_cast<std::int64_t>(tasks.size());
    std::vector<std::int64_t>& out = ordinals[r];
    out.resize(tasks.size());
    for (std::int64_t i = 0; i < n; ++i) out[static_cast<std::size_t>(i)] = i;
    if (r == ref || n == 0) continue;
    ShiftChoice choice = choose_shift(tasks, ref_tasks);
    // In a job of several communicators (no process-group metadata) a rank may share no group
    // with the reference: its plain order then pairs badly with the reference's but well with a
    // peer's. A complete trace keeps its plain order when it fits against any complete rank.
    for (std::size_t q = 0, tried = 0; q < by_rank.size() && n == m && tried < 16; ++q) {
      if (choice.best == 0 || choice.plain_fits) break;
      if (q == r || q == ref || by_rank[q].size() != tasks.size()) continue;
      ++tried;
      const ShiftChoice peer = choose_shift(tasks, by_rank[q]);
      if (peer.best == 0 || peer.plain_fits) choice = peer;
    }
    const std::int64_t best = choice.best;
    const ShiftScore best_score = choice.best_score;
    const bool plain_fits = choice.plain_fits;
    if (n == m && (best == 0 || plain_fits)) continue;  // a complete trace keeps its plain order
    std::vector<std::int64_t> diffs;
    for (std::int64_t i = std::max<std::int64_t>(0, -best); i < n && i + best < m; ++i) {
      diffs.push_back(graph.input_end_ns(tasks[static_cast<std::size_t>(i)]) -
                      graph.input_end_ns(ref_tasks[static_cast<std::size_t>(i + best)]));
    }
    const double offset = median_of(diffs);
    const double tolerance = std::max(4.0 * best_score.spread_ns, 50'000.0);
    // Nearest reference end per collective; a reference ordinal taken twice goes to the nearer.
    std::vector<std::int64_t> match(tasks.size(), -1);
    std::vector<double> distance(tasks.size(), 0.0);
    std::unordered_map<std::int64_t, std::size_t> taken;  // reference ordinal → position
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      const double t = static_cast<double>(graph.input_end_ns(tasks[i])) - offset;
      auto it = std::lower_bound(ref_ends.begin(), ref_ends.end(),
                                 std::make_pair(static_cast<std::int64_t>(t), std::int64_t{-1}));
      double nearest = tolerance;
      std::int64_t chosen = -1;
      for (auto c : {it, it == ref_ends.begin() ? it : std::prev(it)}) {
        if (c == ref_ends.end()) continue;
        const double d = std::abs(static_cast<double>(c->first) - t);
        const std::int32_t peer = ref_tasks[static_cast<std::size_t>(c->second)];
        if (d <= nearest && same_collective_kind(graph, classes, peer, tasks[i])) {
          nearest = d;
          chosen = c->second;
        }
      }
      if (chosen < 0) continue;
      auto [slot, inserted] = taken.try_emplace(chosen, i);
      if (!inserted) {
        if (distance[slot->second] <= nearest) continue;
        match[slot->second] = -1;
        slot->second = i;
      }
      match[i] = chosen;
      distance[i] = nearest;
    }
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      // Unmatched: an ordinal past every reference one, unique to this rank.
      out[i] = match[i] >= 0
                   ? match[i]
                   : m + static_cast<std::int64_t>(r) * (n + 1) + static_cast<std::int64_t>(i);
    }
    (*realigned)[r] = true;
  }
  return ordinals;
}

// Members of one collective end within microseconds of each other on one clock, so every joined
// collective of a rank should say the same clock offset. For each rank that is moved onto the
// first rank's clock, the collectives more than 20 µs off the median (the offset used: one bad
// match or a clock step does not move it) on that rank or on the first rank are counted in a
// warning, with the largest disagreement, so that a reader knows the alignment is uncertain. Ranks
// left on their clock are not warned about: where their collectives disagree (the point-to-point
// pairs of a pipeline do not end together) the alignment did not trust them.
void warn_disagreeing_offsets(ExecutionGraph& graph,
                              const std::vector<std::vector<std::int64_t>>& deltas,
                              const std::vector<double>& median_delta,
                              const std::vector<std::int64_t>& offsets) {
  const auto count_off = [&](std::size_t r, double& largest) {
    std::int64_t off = 0;
    for (const std::int64_t d : deltas[r]) {
      const double deviation = static_cast<double>(d) - median_delta[r];
      if (std::abs(deviation) <= 20'000.0) continue;
      ++off;
      if (std::abs(deviation) > std::abs(largest)) largest = deviation;
    }
    return off;
  };
  double largest_first = 0.0;
  const std::int64_t off_first = count_off(0, largest_first);
  for (std::size_t r = 1; r < deltas.size(); ++r) {
    if (offsets[r] == 0) continue;
    double largest = largest_first;
    const std::int64_t off = std::max(count_off(r, largest), off_first);
    if (off == 0) continue;
    add_warning(graph.warnings, "collective ends disagree on a rank's clock offset (median used)",
                fmt::format("rank {}: {} of {} joined collective(s) more than 20 us off the "
                            "median, the largest by {:+.3f} ms",
                            graph.ranks[r].rank, off, deltas[r].size(), largest * 1e-6));
  }
}

// Ranks on different hosts record on clocks that differ by up to milliseconds, and a joined
// collective ends on all ranks at one simulated instant: the replay would then carry the clock
// offset into every rank's timeline as waiting. Members of one collective end within microseconds
// of each other, so a rank's offset is the median, over its joined collectives, of its end minus
// the group's median end. A rank is moved onto the first rank's clock (all its measured times
// shift; lags and durations are relative and stay) when its offset to it exceeds 20 µs and the
// collectives agree on it (median deviation under a quarter of it); same-host traces (DLRM: ends
// within 2–7 µs) are kept as they are.
void align_rank_clocks(ExecutionGraph& graph) {
  const std::size_t ranks = graph.ranks.size();
  if (ranks < 2) return;
  std::vector<std::vector<std::int64_t>> deltas(ranks);
  std::vector<std::int64_t> ends;
  for (const CollectiveGroup& group : graph.collectives) {
    if (!group.joined) continue;
    ends.clear();
    for (std::int32_t k = 0; k < group.member_count; ++k) {
      ends.push_back(graph.input_end_ns(
          graph.collective_members[static_cast<std::size_t>(group.first_member + k)]));
    }
    const double center = median_of(ends);
    for (std::int32_t k = 0; k < group.member_count; ++k) {
      const std::int32_t task =
          graph.collective_members[static_cast<std::size_t>(group.first_member + k)];
      deltas[static_cast<std::size_t>(graph.rank_index_of(task))].push_back(
          graph.input_end_ns(task) - static_cast<std::int64_t>(center));
    }
  }
  // Offsets relative to the first rank's clock (the one the replay's times are then on).
  std::vector<double> raw(ranks, 0.0), spread(ranks, 0.0);
  for (std::size_t r = 0; r < ranks; ++r) {
    if (deltas[r].empty()) continue;
    raw[r] = median_of(deltas[r]);
    std::vector<std::int64_t> deviations;
    for (std::int64_t d : deltas[r])
      deviations.push_back(static_cast<std::int64_t>(std::abs(static_cast<double>(d) - raw[r])));
    spread[r] = median_of(deviations);
  }
  std::vector<std::int64_t> offsets(ranks, 0);
  bool any = false;
  for (std::size_t r = 1; r < ranks; ++r) {
    // One joined collective is evidence enough (its members end within microseconds on one
    // clock): a trace of one step has one all-reduce, and without it the join turned the
    // offset into waiting (shape one_step × clock_skew_between_ranks: 19 pp off).
    if (deltas[r].empty() || deltas[0].empty()) continue;
    const double offset = raw[r] - raw[0];
    if (std::abs(offset) > 20'000.0 && std::max(spread[r], spread[0]) * 4 < std::abs(offset)) {
      offsets[r] = static_cast<std::int64_t>(offset);
      any = true;
    }
  }
  if (!any) return;
  warn_disagreeing_offsets(graph, deltas, raw, offsets);
  for (std::size_t r = 0; r < ranks; ++r) {
    if (offsets[r] == 0) continue;
    const RankInfo& info = graph.ranks[r];
    for (std::int32_t task = info.first_task; task < info.end_task; ++task)
      graph.input_start_ns[static_cast<std::size_t>(task)] -= offsets[r];
    add_warning(graph.warnings, "rank clock aligned to its peers by collective ends",
                fmt::format("rank {}: {:+.3f} ms", info.rank, -offsets[r] * 1e-6));
  }
  for (ParentSpan& span : graph.parents) {
    const std::int32_t r = graph.rank_index_of(span.first_leaf);
    span.input_start_ns -= offsets[static_cast<std::size_t>(r)];
  }
}

// The collective metadata of a task's event (nullptr when it has none).
const trace::CollectiveInfo* collective_info_of(const trace::RankTrace& trace,
                                                const ExecutionGraph& graph, std::int32_t task) {
  const trace::TraceEvent& e = trace.events[graph.event_index[task]];
  return e.collective >= 0 && static_cast<std::size_t>(e.collective) < trace.collectives.size()
             ? &trace.collectives[e.collective]
             : nullptr;
}

// Ordinals of the collectives without a sequence number (task → ordinal), per process group and
// aligned across ranks; warns where a rank's trace lacks some and they were matched by end time.
std::unordered_map<std::int32_t, std::int64_t> aligned_ordinals_without_sequence(
    const std::vector<const trace::RankTrace*>& traces, ExecutionGraph& graph) {
  std::map<std::string, std::vector<std::vector<std::int32_t>>> ordered;
  if (traces.size() > 1) {
    for (std::size_t r = 0; r < traces.size(); ++r) {
      const RankInfo& rank = graph.ranks[r];
      for (std::int32_t task = rank.first_task; task < rank.end_task; ++task) {
        if (!graph.nccl[task]) continue;
        const trace::CollectiveInfo* info = collective_info_of(*traces[r], graph, task);
        if (info != nullptr && info->sequence >= 0) continue;
        auto& lists = ordered[info != nullptr ? info->process_group : std::string()];
        lists.resize(traces.size());
        lists[r].push_back(task);
      }
    }
  }
  std::unordered_map<std::int32_t, std::int64_t> aligned;
  const auto classes = nccl_stream_classes(graph);
  for (const auto& [group, lists] : ordered) {
    std::vector<bool> realigned;
    const auto ordinals = align_ordinals(graph, classes, lists, &realigned);
    for (std::size_t r = 0; r < lists.size(); ++r) {
      for (std::size_t i = 0; i < lists[r].size(); ++i) aligned[lists[r][i]] = ordinals[r][i];
      if (!realigned[r]) continue;
      add_warning(graph.warnings,
                  "collectives matched across ranks by end time (a rank's trace lacks some)",
                  fmt::format("rank {}: {} collectives of group '{}'", graph.ranks[r].rank,
                              lists[r].size(), group));
    }
  }
  return aligned;
}

// Every rank's collectives grouped by key (process group and sequence number, else aligned or
// plain ordinal), in order of first appearance.
struct KeyedCollectives {
  std::vector<std::vector<std::int32_t>> members;
  std::vector<const trace::CollectiveInfo*> infos;
  std::vector<std::int32_t> expected;  // group size from metadata, else the world size
};

KeyedCollectives group_by_key(const std::vector<const trace::RankTrace*>& traces,
                              ExecutionGraph& graph,
                              const std::unordered_map<std::int32_t, std::int64_t>& aligned) {
  KeyedCollectives out;
  std::unordered_map<std::string, std::int32_t> group_of_key;
  const std::int32_t loaded = static_cast<std::int32_t>(traces.size());
  std::string key;
  for (std::size_t r = 0; r < traces.size(); ++r) {
    const trace::RankTrace& trace = *traces[r];
    const RankInfo& rank = graph.ranks[r];
    std::unordered_map<std::string, std::int64_t> ordinal;  // per process group on this rank
    for (std::int32_t task = rank.first_task; task < rank.end_task; ++task) {
      if (!graph.nccl[task]) continue;
      ++graph.stats.collectives;
      const trace::CollectiveInfo* info = collective_info_of(trace, graph, task);
      const std::string group = info != nullptr ? info->process_group : std::string();
      if (info != nullptr && info->sequence >= 0) {
        key = fmt::format("{}\x1fs{}", group, info->sequence);
      } else {
        auto found = aligned.find(task);
        key = fmt::format("{}\x1fo{}", group,
                          found != aligned.end() ? found->second : ordinal[group]++);
      }
      auto [it, inserted] =
          group_of_key.try_emplace(key, static_cast<std::int32_t>(out.members.size()));
      if (inserted) {
        out.members.emplace_back();
        out.infos.push_back(info);
        std::int32_t size = loaded;
        if (info != nullptr && info->group_size > 0) {
          size = static_cast<std::int32_t>(info->group_size);
        } else if (trace.world_size > 1) {
          size = trace.world_size;
        }
        out.expected.push_back(size);
      }
      out.members[it->second].push_back(task);
    }
  }
  return out;
}

// Without process-group metadata every collective of a rank is keyed under one group, so in a
// job with several communicators (tensor × data parallel) a key holds the members of several
// disjoint groups. Each communicator has its own NCCL stream on a rank, so the keys fall into
// classes by the stream their members run on (nccl_stream_classes); within a
// class each rank meets the same peers every time. Two ranks in one group end together, so the
// difference of their ends is the same in every key of the class (their clock offset, whatever
// it is); ranks of different groups end apart by amounts that vary from key to key. A class whose
// ranks fall into cliques of at least two by that test (end difference steady within 10 µs, every
// other pair's spread above 20 µs) has each key split into those groups. Returns the keys split.
std::int64_t split_communicators_by_end_time(const ExecutionGraph& graph, KeyedCollectives& keyed) {
  constexpr std::int64_t kSteadyNs = 10'000, kVaryingNs = 20'000;
  const std::size_t ranks = graph.ranks.size();
  if (ranks < 4) return 0;
  auto class_of_processor = nccl_stream_classes(graph);
  std::map<std::int32_t, std::vector<std::size_t>> keys_of_class;  // class → keys (full ones)
  for (std::size_t g = 0; g < keyed.members.size(); ++g) {
    const trace::CollectiveInfo* info = keyed.infos[g];
    const auto& members = keyed.members[g];
    if ((info != nullptr && info->group_size > 0) || members.size() != ranks) continue;
    const std::int32_t cls = class_of_processor[graph.processor[members.front()]];
    bool same_class = true;
    for (std::int32_t t : members)
      same_class = same_class && class_of_processor[graph.processor[t]] == cls;
    if (same_class) keys_of_class[cls].push_back(g);
  }
  std::int64_t split = 0;
  for (const auto& [cls, keys] : keys_of_class) {
    if (keys.size() < 2) continue;
    // Spread (max − min over keys) of end(r) − end(s) per rank pair.
    std::vector<std::int64_t> low(ranks * ranks, std::numeric_limits<std::int64_t>::max());
    std::vector<std::int64_t> high(ranks * ranks, std::numeric_limits<std::int64_t>::min());
    std::vector<std::int64_t> end_of(ranks);
    for (std::size_t g : keys) {
      for (std::int32_t t : keyed.members[g])
        end_of[static_cast<std::size_t>(graph.rank_index_of(t))] = graph.input_end_ns(t);
      for (std::size_t r = 0; r < ranks; ++r) {
        for (std::size_t q = 0; q < ranks; ++q) {
          const std::int64_t d = end_of[r] - end_of[q];
          low[r * ranks + q] = std::min(low[r * ranks + q], d);
          high[r * ranks + q] = std::max(high[r * ranks + q], d);
        }
      }
    }
    // Groups: each rank with the ranks it ends steadily with; they must be cliques, apart from
    // the rest clearly, and at least two of at least two ranks.
    std::vector<std::int32_t> group(ranks, -1);
    std::int32_t groups = 0;
    bool valid = true;
    for (std::size_t r = 0; r < ranks && valid; ++r) {
      if (group[r] >= 0) continue;
      const std::int32_t id = groups++;
      std::size_t size = 0;
      for (std::size_t q = r; q < ranks; ++q) {
        const std::int64_t spread = high[r * ranks + q] - low[r * ranks + q];
        if (spread <= kSteadyNs) {
          if (group[q] >= 0) valid = false;
          group[q] = id;
          ++size;
        } else if (spread <= kVaryingNs) {
          valid = false;  // neither steady nor clearly varying: no evidence either way
        }
      }
      valid = valid && size >= 2;
    }
    for (std::size_t r = 0; r < ranks && valid; ++r) {
      for (std::size_t q = 0; q < ranks && valid; ++q) {
        const bool steady = high[r * ranks + q] - low[r * ranks + q] <= kSteadyNs;
        valid = steady == (group[r] == group[q]);
      }
    }
    if (!valid || groups < 2) continue;
    for (std::size_t g : keys) {
      std::vector<std::vector<std::int32_t>> parts(static_cast<std::size_t>(groups));
      for (std::int32_t t : keyed.members[g])
        parts[static_cast<std::size_t>(group[static_cast<std::size_t>(graph.rank_index_of(t))])]
            .push_back(t);
      keyed.members[g] = std::move(parts[0]);
      keyed.expected[g] = static_cast<std::int32_t>(keyed.members[g].size());
      for (std::size_t k = 1; k < parts.size(); ++k) {
        keyed.expected.push_back(static_cast<std::int32_t>(parts[k].size()));
        keyed.members.push_back(std::move(parts[k]));
        keyed.infos.push_back(keyed.infos[g]);
      }
      ++split;
    }
  }
  return split;
}

// A member recorded without a duration (0: a lost or clipped timestamp) that ends before the
// last member started cannot have waited for it: it gives no ready time and no wire time to join
// on, so the group is replayed with its measured durations. (A zero-length last arrival, a
// zero-time transfer, is consistent and still joins.) A group whose members are all instants
// carries no timing to lose: it is a barrier at the last arrival, which is how the emulator writes
// its communicator bootstrap.
bool members_carry_join_timing(const ExecutionGraph& graph,
                               const std::vector<std::int32_t>& members) {
  std::int64_t last_start = std::numeric_limits<std::int64_t>::min();
  bool any_duration = false;
  for (std::int32_t task : members) {
    last_start = std::max(last_start, graph.input_start_ns[task]);
    any_duration = any_duration || graph.input_duration_ns[task] > 0;
  }
  for (std::int32_t task : members) {
    if (any_duration && graph.input_duration_ns[task] <= 0 && graph.input_end_ns(task) < last_start)
      return false;
  }
  return true;
}

// Appends collective group `g` (its members, kind and size) to the graph, with its warnings.
void add_collective_group(ExecutionGraph& graph, std::size_t g,
                          const std::vector<std::int32_t>& members,
                          const trace::CollectiveInfo* info, std::int32_t expected,
                          std::int32_t loaded) {
  CollectiveGroup group;
  group.first_member = static_cast<std::int32_t>(graph.collective_members.size());
  group.member_count = static_cast<std::int32_t>(members.size());
  group.expected_members = expected;
  group.joined = group.member_count >= 2 && group.member_count == group.expected_members;
  if (group.joined && !members_carry_join_timing(graph, members)) {
    group.joined = false;
    add_warning(
        graph.warnings, "collective with a zero-duration member (replayed with measured durations)",
        fmt::format("'{}' on {} ranks", graph.task_name(members.front()), group.member_count));
  }
  const std::int32_t first = members.front();
  group.name = graph.task_name(first);
  if (info != nullptr) {
    group.collective = info->name;
    const std::int64_t elements = std::max(info->in_elements, info->out_elements);
    if (elements > 0 && info->element_bytes > 0) {
      group.message_bytes = elements * info->element_bytes;
    }
  }
  for (std::int32_t task : members) {
    if (kernel_base_name(graph.task_name(task)) != kernel_base_name(group.name)) {
      add_warning(graph.warnings, "matched collectives have different kernels",
                  fmt::format("'{}' (rank {}) vs '{}' (rank {})", group.name,
                              graph.ranks[graph.rank_index_of(first)].rank, graph.task_name(task),
                              graph.ranks[graph.rank_index_of(task)].rank));
    }
    graph.collective[task] = static_cast<std::int32_t>(g);
    graph.collective_members.push_back(task);
  }
  if (group.joined) {
    ++graph.stats.collective_groups_joined;
  } else {
    graph.stats.collectives_measured += group.member_count;
    // Peers that should be in the input but are not: the matching failed for this one.
    if (group.member_count < std::min(group.expected_members, loaded)) {
      add_warning(graph.warnings, "unmatched collective (replayed with its measured duration)",
                  fmt::format("'{}' on {} of {} ranks", group.name, group.member_count,
                              std::min(group.expected_members, loaded)));
    }
  }
  graph.collectives.push_back(std::move(group));
}

}  // namespace

void match_collectives(const std::vector<const trace::RankTrace*>& traces, ExecutionGraph& graph) {
  const auto aligned = aligned_ordinals_without_sequence(traces, graph);
  KeyedCollectives keyed = group_by_key(traces, graph, aligned);
  if (const std::int64_t split = split_communicators_by_end_time(graph, keyed); split > 0) {
    add_warning(graph.warnings,
                "collectives without process-group metadata split into communicators by end time",
                fmt::format("{} collective(s) held members of several groups", split));
  }
  const std::int32_t loaded = static_cast<std::int32_t>(traces.size());
  for (std::size_t g = 0; g < keyed.members.size(); ++g)
    add_collective_group(graph, g, keyed.members[g], keyed.infos[g], keyed.expected[g], loaded);
  align_rank_clocks(graph);
}

}  // namespace powertrain::graph::detail
