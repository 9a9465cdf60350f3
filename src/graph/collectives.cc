// Cross-rank collective matching and the edge store. A collective kernel's measured duration
// includes waiting for the last peer, so matched members are replayed with a join (sim/).
#include "graph/collectives.h"

#include <fmt/core.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>

namespace powertrain::graph::detail {

namespace {

// "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, ...)" →
// "ncclKernel_AllReduce_RING_LL_Sum_float"
std::string_view kernel_base_name(std::string_view name) { return name.substr(0, name.find('(')); }

// A point-to-point transfer (a send or a receive; pipeline stages, expert dispatch) has one other
// rank as its peer, whichever its process group holds, so it is matched by time, not by order.
// NCCL runs an all-to-all as grouped sends and receives (the SendRecv kernel), so a SendRecv
// kernel whose op did not name it is either.
enum class Exchange { kCollective, kTransfer, kEither };

Exchange exchange_kind(const trace::CollectiveInfo* info, std::string_view kernel) {
  if (info != nullptr && !info->name.empty()) {  // the op's name, else the kernel's
    const std::string& n = info->name;
    if (n == "send" || n == "recv" || n == "_send" || n == "_recv" || n == "isend" ||
        n == "irecv" || n == "recvanysource")
      return Exchange::kTransfer;
    // Coalesced groups (batch_isend_irecv, `nccl:coalesced`) name no kind: on a SendRecv kernel
    // they are transfers or an exchange like the kernel alone.
    const bool coalesced = n == "coalesced" || n == "nccl:coalesced" || n == "batch_isend_irecv";
    const bool send_recv_kernel =
        kernel_base_name(kernel).find("SendRecv") != std::string_view::npos;
    return n == "sendrecv" || (coalesced && send_recv_kernel) ? Exchange::kEither
                                                              : Exchange::kCollective;
  }
  const std::string_view base = kernel_base_name(kernel);
  if (base.find("SendRecv") != std::string_view::npos) return Exchange::kEither;
  for (std::string_view prefix :
       {"ncclKernel_Send", "ncclKernel_Recv", "ncclDevKernel_Send", "ncclDevKernel_Recv"}) {
    if (base.rfind(prefix, 0) == 0) return Exchange::kTransfer;
  }
  return Exchange::kCollective;
}

bool is_point_to_point(const trace::CollectiveInfo* info, std::string_view kernel,
                       bool either_is_transfer) {
  const Exchange kind = exchange_kind(info, kernel);
  return kind == Exchange::kTransfer || (kind == Exchange::kEither && either_is_transfer);
}

// Unnamed SendRecv kernels are transfers when no op names a SendRecv kernel a collective and the
// loaded ranks either run different numbers of them (pipeline stages: the first and last send one
// way only) or, with as many on every rank, their n-th kernels do not end together (an exchange's
// members end within microseconds on every rank, after a steady clock offset; two pipelines side
// by side run as many transfers per rank, each ending with its own peer only). Otherwise they are
// an exchange among all ranks (all-to-all), matched by order as other collectives.
bool unnamed_exchanges_are_transfers(const std::vector<const trace::RankTrace*>& traces,
                                     const ExecutionGraph& graph);

// The collective metadata of a task's event (nullptr when it has none).
const trace::CollectiveInfo* collective_info_of(const trace::RankTrace& trace,
                                                const ExecutionGraph& graph, std::int32_t task);

// Each NCCL stream's class on its rank: its rank among the rank's NCCL streams by number of
// collectives other than transfers (most first), then by number of transfers, ties by first use.
// Every communicator has its own stream, and ranks running one program use their communicators
// alike, so a class names the same communicator kind (tensor-parallel, data-parallel, ...) on
// every rank, even where the profiling window opened at a different point. Transfers are left out
// of the count because pipeline stages run different numbers of them (a middle stage twice an
// end stage's): with TP × PP × DP and no metadata, an end stage's 21 transfers against the
// tensor-parallel stream's 24 all-reduces ranked the streams the other way round than on a middle
// stage's 39 transfers, and tensor- and data-parallel all-reduces were keyed together (+48.6 %).
// Keyed by processor (stream) index.
using StreamClasses = std::unordered_map<std::int32_t, std::int32_t>;  // stream → class

StreamClasses nccl_stream_classes(const std::vector<const trace::RankTrace*>& traces,
                                  const ExecutionGraph& graph, bool either_is_transfer) {
  StreamClasses classes;
  for (std::size_t r = 0; r < graph.ranks.size(); ++r) {
    const RankInfo& rank = graph.ranks[r];
    // (−collectives, −transfers, first use, processor)
    std::vector<std::array<std::int32_t, 4>> streams;
    std::unordered_map<std::int32_t, std::size_t> index;
    for (std::int32_t task = rank.first_task; task < rank.end_task; ++task) {
      if (!graph.nccl[task]) continue;
      auto [it, inserted] = index.try_emplace(graph.processor[task], streams.size());
      if (inserted) streams.push_back({0, 0, task, graph.processor[task]});
      const bool transfer = is_point_to_point(collective_info_of(*traces[r], graph, task),
                                              graph.task_name(task), either_is_transfer);
      --streams[it->second][transfer ? 1 : 0];
    }
    std::sort(streams.begin(), streams.end());
    for (std::size_t k = 0; k < streams.size(); ++k)
      classes[streams[k][3]] = static_cast<std::int32_t>(k);
  }
  return classes;
}

// The class of the stream task `task` runs on (−1: not an NCCL stream).
std::int32_t stream_class(const ExecutionGraph& graph, const StreamClasses& classes,
                          std::int32_t task) {
  const auto it = classes.find(graph.processor[task]);
  return it == classes.end() ? -1 : it->second;
}

// Whether two collective kernels can be members of one collective: the same kernel on streams of
// the same class.
bool same_collective_kind(const ExecutionGraph& graph, const StreamClasses& classes, std::int32_t a,
                          std::int32_t b) {
  return kernel_base_name(graph.task_name(a)) == kernel_base_name(graph.task_name(b)) &&
         stream_class(graph, classes, a) == stream_class(graph, classes, b);
}

// Exact in integers: ends are epoch nanoseconds (~1.7·10^18), where a double steps by 256 ns
// (before, 2026-11-27, the clock alignment read ranks up to 128 ns off that way).
std::int64_t median_of(std::vector<std::int64_t>& v) {
  if (v.empty()) return 0;
  const std::size_t mid = v.size() / 2;
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(mid), v.end());
  return v[mid];
}

// The median of `values` and their median absolute deviation from it (how well readings of one
// quantity agree; one bad reading moves neither).
struct MedianDeviation {
  double median = 0.0, deviation = 0.0;
};

MedianDeviation median_deviation(std::vector<std::int64_t> values) {
  MedianDeviation out;
  const std::int64_t median = median_of(values);
  out.median = static_cast<double>(median);
  for (std::int64_t& v : values) v = v >= median ? v - median : median - v;
  out.deviation = static_cast<double>(median_of(values));
  return out;
}

// How well rank A's n-th collective of a group pairs with the reference rank's (n + shift)-th:
// kernel names that differ, then the spread of their end-time differences (members of one
// collective end within microseconds of each other, whatever the ranks' clock offset).
struct ShiftScore {
  double mismatched = 1.0;  // fraction of pairs whose kernels differ
  double spread_ns = 0.0;   // median |difference − median difference|
  std::int64_t pairs = 0;
};

ShiftScore score_shift(const ExecutionGraph& graph, const StreamClasses& classes,
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

// The best whole-sequence shift of `tasks` against `against`, and whether the plain order
// (shift 0) fits as well as the best.
struct ShiftChoice {
  std::int64_t best = 0;
  ShiftScore best_score;
  bool plain_fits = false;
};

ShiftChoice choose_shift(const ExecutionGraph& graph, const StreamClasses& classes,
                         const std::vector<std::int32_t>& tasks,
                         const std::vector<std::int32_t>& against) {
  constexpr std::int64_t kMaxShift = 64;
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
  const bool plain_fits = !first && plain.mismatched <= least_mismatch &&
                          plain.spread_ns <= std::max(2.0 * least_spread, least_spread + 10'000.0);
  return ShiftChoice{best, best_score, plain_fits};
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
    const ExecutionGraph& graph, const StreamClasses& classes,
    const std::vector<std::vector<std::int32_t>>& by_rank, std::vector<bool>* realigned) {
  std::vector<std::vector<std::int64_t>> ordinals(by_rank.size());
  realigned->assign(by_rank.size(), false);
  std::size_t ref = 0;
  for (std::size_t r = 0; r < by_rank.size(); ++r)
    if (by_rank[r].size() > by_rank[ref].size()) ref = r;
  const std::vector<std::int32_t>& ref_tasks = by_rank[ref];
  const std::int64_t m = static_cast<std::int64_t>(ref_tasks.size());
  // Ranks with none in the list are not in its communicators (a middle stage in the embedding
  // group's stream class) and say nothing of the others' completeness.
  const bool all_complete =
      std::all_of(by_rank.begin(), by_rank.end(), [&](const std::vector<std::int32_t>& tasks) {
        return tasks.empty() || tasks.size() == ref_tasks.size();
      });
  std::vector<std::pair<std::int64_t, std::int64_t>> ref_ends;  // (end, ordinal), sorted
  for (std::int64_t j = 0; j < m; ++j)
    ref_ends.emplace_back(graph.input_end_ns(ref_tasks[static_cast<std::size_t>(j)]), j);
  std::sort(ref_ends.begin(), ref_ends.end());
  for (std::size_t r = 0; r < by_rank.size(); ++r) {
    const std::vector<std::int32_t>& tasks = by_rank[r];
    const std::int64_t n = static_cast<std::int64_t>(tasks.size());
    std::vector<std::int64_t>& out = ordinals[r];
    out.resize(tasks.size());
    for (std::int64_t i = 0; i < n; ++i) out[static_cast<std::size_t>(i)] = i;
    // Every rank with as many as the reference: no window cut them differently, and each keeps
    // its plain order (a one-step shift can pair better by end time when ranks run at different
    // speeds: 128 ranks of TP 4 × PP 4 × DP 8 over 2 steps realigned 24 complete ranks, −4.6 %).
    if (r == ref || n == 0 || all_complete) continue;
    ShiftChoice choice = choose_shift(graph, classes, tasks, ref_tasks);
    // In a job of several communicators (no process-group metadata) a rank may share no group
    // with the reference: its plain order then pairs badly with the reference's but well with a
    // peer's. A complete trace keeps its plain order when it fits against any complete rank.
    for (std::size_t q = 0, tried = 0; q < by_rank.size() && n == m && tried < 16; ++q) {
      if (choice.best == 0 || choice.plain_fits) break;
      if (q == r || q == ref || by_rank[q].size() != tasks.size()) continue;
      ++tried;
      const ShiftChoice peer = choose_shift(graph, classes, tasks, by_rank[q]);
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
// collective of a rank should say the same clock offset. For each rank that is moved, the
// collectives whose reading is more than 20 µs off the offset used (the median: one bad match or a
// clock step does not move it) are counted in a warning, with the largest disagreement, so that a
// reader knows the alignment is uncertain. Ranks left on their clock are not warned about.
void warn_disagreeing_offsets(ExecutionGraph& graph,
                              const std::vector<std::vector<std::int64_t>>& readings,
                              const std::vector<std::int64_t>& offsets) {
  for (std::size_t r = 1; r < readings.size(); ++r) {
    if (offsets[r] == 0) continue;
    std::int64_t off = 0;
    double largest = 0.0;
    for (const std::int64_t d : readings[r]) {
      const double deviation = static_cast<double>(d - offsets[r]);
      if (std::abs(deviation) <= 20'000.0) continue;
      ++off;
      if (std::abs(deviation) > std::abs(largest)) largest = deviation;
    }
    if (off == 0) continue;
    add_warning(graph.warnings, "collective ends disagree on a rank's clock offset (median used)",
                fmt::format("rank {}: {} of {} joined collective(s) more than 20 us off the "
                            "median, the largest by {:+.3f} ms",
                            graph.ranks[r].rank, off, readings[r].size(), largest * 1e-6));
  }
}

// Moves each rank's measured times by −offsets[r] (lags and durations are relative and stay).
void shift_rank_clocks(ExecutionGraph& graph, const std::vector<std::int64_t>& offsets,
                       std::string_view warning) {
  for (std::size_t r = 0; r < offsets.size(); ++r) {
    if (offsets[r] == 0) continue;
    const RankInfo& info = graph.ranks[r];
    for (std::int32_t task = info.first_task; task < info.end_task; ++task)
      graph.input_start_ns[static_cast<std::size_t>(task)] -= offsets[r];
    add_warning(graph.warnings, warning,
                fmt::format("rank {}: {:+.3f} ms", info.rank, -offsets[r] * 1e-6));
  }
  for (ParentSpan& span : graph.parents) {
    const std::int32_t r = graph.rank_index_of(span.first_leaf);
    span.input_start_ns -= offsets[static_cast<std::size_t>(r)];
  }
}

// Clock offsets read from point-to-point transfers: a send and its receive end together, so
// between two ranks the true pairs all give one end difference (their clock offset) while other
// pairings scatter. The offset of a rank pair is the end difference that most of their
// same-kernel transfer pairings agree on within 5 µs (at least 3 and a quarter of the smaller
// rank's transfers, and more than any other value), from the first 128 transfers of each rank.
class TransferAgreement {
 public:
  static constexpr std::int64_t kAgreeNs = 5'000;
  static constexpr std::int64_t kRefineNs = 1'000;
  static constexpr std::size_t kPerRank = 128;  // bounds the work: ranks² × 128² pairings at most

  TransferAgreement(const ExecutionGraph& graph, const std::vector<std::int32_t>& transfers)
      : graph_(graph), of_rank_(graph.ranks.size()) {
    for (std::int32_t t : transfers) {
      auto& list = of_rank_[static_cast<std::size_t>(graph.rank_index_of(t))];
      if (list.size() < kPerRank) list.push_back(t);
    }
  }

  const std::vector<std::int32_t>& of(std::size_t r) const { return of_rank_[r]; }
  std::size_t cost(std::size_t r, std::size_t s) const {
    return of_rank_[r].size() * of_rank_[s].size();
  }

  // How many pairings agree on end(r) − end(s), written to `offset` (0: none does clearly: fewer
  // than 3, or than a quarter of the smaller rank's transfers, or no more than another value;
  // ranks that exchange nothing only agree by the schedule's repetition).
  std::size_t agreement(std::size_t r, std::size_t s, std::int64_t* offset) const {
    std::vector<std::int64_t> d;
    for (std::int32_t a : of_rank_[r]) {
      for (std::int32_t b : of_rank_[s]) {
        if (same_kernel(a, b)) d.push_back(graph_.input_end_ns(a) - graph_.input_end_ns(b));
      }
    }
    std::sort(d.begin(), d.end());
    std::size_t best = 0, second = 0, best_at = 0;
    for (std::size_t i = 0, j = 0; i < d.size(); ++i) {  // window [d_i, d_i + kAgreeNs]
      while (j < d.size() && d[j] - d[i] <= kAgreeNs) ++j;
      const std::size_t support = j - i;
      if (support > best) {
        if (best > 0 && d[i] - d[best_at] > 2 * kAgreeNs) second = std::max(second, best);
        best = support;
        best_at = i;
      } else if (d[i] - d[best_at] > 2 * kAgreeNs) {
        second = std::max(second, support);
      }
    }
    const std::size_t needed =
        std::max<std::size_t>(3, std::min(of_rank_[r].size(), of_rank_[s].size()) / 4);
    if (best < needed || best <= second) return 0;
    // The window's median, then the median of the pairings within 1 µs of it, twice: true pairs
    // end together, pairings that agree by chance spread over the window and pull its median.
    std::int64_t centre = d[best_at + best / 2];
    for (int pass = 0; pass < 2; ++pass) {
      const auto lo = std::lower_bound(d.begin(), d.end(), centre - kRefineNs);
      const auto hi = std::upper_bound(d.begin(), d.end(), centre + kRefineNs);
      if (hi - lo < 3) break;
      centre = *(lo + (hi - lo) / 2);
    }
    *offset = centre;
    return best;
  }

  // Positions in of(r) of r's transfers that a same-kernel transfer on s ends with, `offset` apart.
  std::vector<std::size_t> agreeing(std::size_t r, std::size_t s, std::int64_t offset) const {
    std::vector<std::size_t> out;
    for (std::size_t i = 0; i < of_rank_[r].size(); ++i) {
      const std::int32_t a = of_rank_[r][i];
      for (std::int32_t b : of_rank_[s]) {
        const std::int64_t d = graph_.input_end_ns(a) - graph_.input_end_ns(b) - offset;
        if (std::abs(d) <= kAgreeNs && same_kernel(a, b)) {
          out.push_back(i);
          break;
        }
      }
    }
    return out;
  }

 private:
  bool same_kernel(std::int32_t a, std::int32_t b) const {
    return kernel_base_name(graph_.task_name(a)) == kernel_base_name(graph_.task_name(b));
  }

  const ExecutionGraph& graph_;
  std::vector<std::vector<std::int32_t>> of_rank_;
};

// A pairing budget for each reading of the trace set (the links between ranks once, the placement
// of ranks by transfers once; hundreds of pipeline-only ranks): past it ranks stay on their
// clocks rather than the build taking minutes.
constexpr std::size_t kTransferWorkBudget = 100'000'000;

struct TransferClocks {
  std::vector<std::int64_t> offsets;    // the rank's clock minus its component's
  std::vector<std::int32_t> component;  // −1: not placed
};

// Ranks placed from the placed ones by their transfers, each from the placed rank that agrees
// most; `placed` holds the ranks placed at the start (component 0, at `initial` offsets). A rank
// that no placed rank agrees with stays unplaced (component −1). `work`: a pairing budget shared
// by several calls.
TransferClocks place_ranks_by_transfers(const TransferAgreement& transfers,
                                        std::vector<bool> placed,
                                        const std::vector<std::int64_t>& initial,
                                        std::size_t& work) {
  const std::size_t ranks = placed.size();
  TransferClocks out{initial, std::vector<std::int32_t>(ranks, -1)};
  for (std::size_t r = 0; r < ranks; ++r) {
    if (placed[r]) out.component[r] = 0;
  }
  std::vector<std::optional<std::pair<std::size_t, std::int64_t>>> agreement(ranks * ranks);
  for (bool progress = true; progress;) {
    progress = false;
    for (std::size_t r = 0; r < ranks; ++r) {
      if (placed[r] || transfers.of(r).empty()) continue;
      // From the placed rank whose transfers agree most on an offset (its likely peer).
      std::size_t best_support = 0, best_from = 0;
      std::int64_t best_offset = 0;
      for (std::size_t s = 0; s < ranks; ++s) {
        if (!placed[s] || transfers.of(s).empty()) continue;
        // Each pair once (the placement sweeps revisit unplaced ranks).
        auto& memo = agreement[r * ranks + s];
        if (!memo.has_value()) {
          std::int64_t found = 0;
          const std::size_t cost = transfers.cost(r, s);
          const std::size_t n =
              work + cost <= kTransferWorkBudget ? transfers.agreement(r, s, &found) : 0;
          work += cost;
          memo = std::make_pair(n, found);
        }
        if (memo->first > best_support) {
          best_support = memo->first;
          best_from = s;
          // r's clock reads `offset` later than s's, and s is already moved by offsets[s].
          best_offset = memo->second + out.offsets[s];
        }
      }
      if (best_support == 0) continue;
      out.offsets[r] = best_offset;
      out.component[r] = out.component[best_from];
      placed[r] = true;
      progress = true;
    }
  }
  return out;
}

struct TransferLink {
  std::size_t r, s;
  std::int64_t offset;  // end(r) − end(s)
  std::size_t support;  // pairings that agree
  double share;         // of the smaller rank's transfers
};

// The rank pairs whose transfers agree on an offset by at least half of the smaller rank's
// transfers, strongest first (read once per trace set, within the pairing budget).
std::vector<TransferLink> transfer_links(const TransferAgreement& transfers, std::size_t ranks) {
  std::vector<TransferLink> links;
  std::size_t work = 0;
  for (std::size_t distance = 1; distance < ranks && work <= kTransferWorkBudget; ++distance) {
    for (std::size_t r = 0; r + distance < ranks; ++r) {
      const std::size_t s = r + distance;
      const std::size_t smaller = std::min(transfers.of(r).size(), transfers.of(s).size());
      if (smaller == 0) continue;
      work += transfers.cost(r, s);
      if (work > kTransferWorkBudget) break;
      std::int64_t offset = 0;
      const std::size_t n = transfers.agreement(r, s, &offset);
      if (n == 0 || 2 * n < smaller) continue;
      links.push_back({r, s, offset, n, static_cast<double>(n) / static_cast<double>(smaller)});
    }
  }
  std::stable_sort(links.begin(), links.end(), [](const TransferLink& a, const TransferLink& b) {
    return a.support != b.support ? a.support > b.support : a.share > b.share;
  });
  return links;
}

// Every rank with transfers on one clock with the ranks its transfers link it to; components
// numbered by their first rank, each on that rank's clock. Links are taken strongest first (most
// agreeing pairings, then the share of the smaller rank's transfers that agree: a share favours
// links to end stages), and only links carrying at least half of the
// smaller rank's transfers: a pipeline stage talks to two neighbours, so one of its links carries
// at least half, while replicas of one schedule also agree on an offset, the schedule's, by a
// smaller share (two pipelines side by side: 27–43 % against 64–100 % for true peers). A transfer
// has one partner: a link whose agreeing transfers on either rank are mostly taken by stronger
// links is the schedule's repetition, not an exchange (16 pipelines side by side: 53 % of a last
// stage's transfers agreed with another pipeline's stage 1, all of them already paired with its
// own stage 2). Ranks known to share a communicator (`communicators`: each a rank's group in one
// communicator kind already split) are not each other's transfer partners: tensor-parallel ranks
// of one stage send to their counterparts in lockstep, so their transfers agree as fully as true
// peers'; their link places their clocks but takes no transfers (TP 2 × PP 4 × DP 2: the
// tensor-parallel pairs took every transfer and each stage was left on its own clock). Pairs are
// read nearest ranks first, within the pairing budget.
TransferClocks link_ranks_by_transfers(
    const TransferAgreement& transfers, const std::vector<TransferLink>& links, std::size_t ranks,
    const std::vector<std::vector<std::int32_t>>& communicators) {
  // Union-find with each rank's clock minus its parent's; paths are compressed as they are read.
  std::vector<std::size_t> parent(ranks);
  std::vector<std::int64_t> to_parent(ranks, 0);
  for (std::size_t r = 0; r < ranks; ++r) parent[r] = r;
  std::vector<std::size_t> path;
  auto find = [&](std::size_t r) {
    path.clear();
    std::size_t root = r;
    while (parent[root] != root) {
      path.push_back(root);
      root = parent[root];
    }
    // From the node nearest the root outward, each node's offset to the root.
    std::int64_t offset = 0;
    for (auto it = path.rbegin(); it != path.rend(); ++it) {
      offset += to_parent[*it];
      to_parent[*it] = offset;
      parent[*it] = root;
    }
    return std::make_pair(root, path.empty() ? std::int64_t{0} : to_parent[r]);
  };
  std::vector<std::vector<bool>> taken(ranks);
  for (std::size_t r = 0; r < ranks; ++r) taken[r].assign(transfers.of(r).size(), false);
  auto mostly_free = [&](std::size_t r, const std::vector<std::size_t>& agreeing) {
    const auto free = std::count_if(agreeing.begin(), agreeing.end(),
                                    [&](std::size_t i) { return !taken[r][i]; });
    return 2 * static_cast<std::size_t>(free) >= agreeing.size() && free > 0;
  };
  for (const TransferLink& link : links) {
    const auto [root_r, r_to_root] = find(link.r);
    const auto [root_s, s_to_root] = find(link.s);
    const bool partners = std::none_of(
        communicators.begin(), communicators.end(),
        [&](const std::vector<std::int32_t>& group) { return group[link.r] == group[link.s]; });
    const bool same_clock = root_r == root_s;
    // Already on one clock (through tensor-parallel neighbours, say), a link that agrees with it
    // still takes its transfers, so that no weaker link takes them later.
    if (same_clock &&
        (!partners || std::abs(r_to_root - s_to_root - link.offset) > TransferAgreement::kAgreeNs))
      continue;
    if (partners) {
      const std::vector<std::size_t> on_r = transfers.agreeing(link.r, link.s, link.offset);
      const std::vector<std::size_t> on_s = transfers.agreeing(link.s, link.r, -link.offset);
      if (!same_clock && (!mostly_free(link.r, on_r) || !mostly_free(link.s, on_s))) continue;
      for (std::size_t i : on_r) taken[link.r][i] = true;
      for (std::size_t i : on_s) taken[link.s][i] = true;
    }
    if (same_clock) continue;
    // clock(r) − clock(s) = offset, so root_s's clock minus root_r's follows.
    const std::size_t child = std::max(root_r, root_s), keep = std::min(root_r, root_s);
    const std::int64_t s_root_minus_r_root = r_to_root - link.offset - s_to_root;
    parent[child] = keep;
    to_parent[child] = child == root_s ? s_root_minus_r_root : -s_root_minus_r_root;
  }
  TransferClocks out{std::vector<std::int64_t>(ranks, 0), std::vector<std::int32_t>(ranks, -1)};
  std::map<std::size_t, std::int32_t> component_of_root;
  for (std::size_t r = 0; r < ranks; ++r) {
    if (transfers.of(r).empty()) continue;
    const auto [root, offset] = find(r);
    out.component[r] =
        component_of_root.try_emplace(root, static_cast<std::int32_t>(component_of_root.size()))
            .first->second;
    out.offsets[r] = offset;
  }
  return out;
}

// Ranks on different hosts record on clocks that differ by up to milliseconds, and a joined
// collective ends on all ranks at one simulated instant: the replay would then carry the clock
// offset into every rank's timeline as waiting. Members of one collective end within microseconds
// of each other, and a send ends with its receive. Ranks are placed on the first rank's clock
// outward from it: a rank sharing joined collectives with placed ranks takes the median, over
// those collectives, of its end minus the placed members' median end (their offsets removed),
// and its spread the median deviation from that; a rank that shares none (a pipeline stage whose
// data-parallel group never includes the first rank, or a pipeline-only job) is placed by its
// transfers (place_ranks_by_transfers), and collectives then carry on from it. A rank moves (all
// its measured times shift; lags and durations are relative and stay) when its offset exceeds
// 20 µs and, when placed by collectives, they agree on it (spread under a quarter of it);
// same-host traces (DLRM: ends within 2–7 µs) are kept as they are.
void align_rank_clocks(ExecutionGraph& graph, const std::vector<std::int32_t>& transfers) {
  constexpr std::int64_t kMoveNs = 20'000;
  const std::size_t ranks = graph.ranks.size();
  if (ranks < 2) return;
  struct Member {
    std::size_t rank;
    std::int64_t end;
  };
  std::vector<std::vector<Member>> groups;
  for (const CollectiveGroup& group : graph.collectives) {
    if (!group.joined) continue;
    auto& members = groups.emplace_back();
    for (std::int32_t k = 0; k < group.member_count; ++k) {
      const std::int32_t task =
          graph.collective_members[static_cast<std::size_t>(group.first_member + k)];
      members.push_back(
          {static_cast<std::size_t>(graph.rank_index_of(task)), graph.input_end_ns(task)});
    }
  }
  std::vector<bool> placed(ranks, false), by_transfers(ranks, false);
  std::size_t transfer_work = 0;  // one pairing budget for every placement by transfers
  const TransferAgreement transfer_agreement(graph, transfers);
  std::vector<std::int64_t> offsets(ranks, 0);
  std::vector<std::vector<std::int64_t>> samples(ranks);  // of the offset, per joined collective
  std::vector<double> spread(ranks, 0.0);
  placed[0] = true;
  std::vector<std::int64_t> placed_ends;
  for (bool progress = true; progress;) {
    progress = false;
    // Collectives, sweep after sweep, from the ranks placed so far.
    for (bool sweep = true; sweep;) {
      sweep = false;
      for (std::size_t r = 0; r < ranks; ++r) {
        if (!placed[r]) samples[r].clear();
      }
      for (const auto& members : groups) {
        placed_ends.clear();
        for (const Member& m : members) {
          if (placed[m.rank]) placed_ends.push_back(m.end - offsets[m.rank]);
        }
        if (placed_ends.empty()) continue;
        const auto reference = static_cast<std::int64_t>(median_of(placed_ends));
        for (const Member& m : members) {
          if (!placed[m.rank]) samples[m.rank].push_back(m.end - reference);
        }
      }
      for (std::size_t r = 0; r < ranks; ++r) {
        if (placed[r] || samples[r].empty()) continue;
        const MedianDeviation reading = median_deviation(samples[r]);
        offsets[r] = static_cast<std::int64_t>(reading.median);
        spread[r] = reading.deviation;
        placed[r] = true;
        sweep = progress = true;
      }
    }
    if (transfers.empty() || std::all_of(placed.begin(), placed.end(), [](bool p) { return p; }))
      break;
    // Ranks no placed rank shares a collective with: their transfers.
    const TransferClocks from_transfers =
        place_ranks_by_transfers(transfer_agreement, placed, offsets, transfer_work);
    for (std::size_t r = 0; r < ranks; ++r) {
      if (placed[r] || from_transfers.component[r] < 0) continue;
      offsets[r] = from_transfers.offsets[r];
      placed[r] = by_transfers[r] = true;
      progress = true;
    }
  }
  bool by_collectives = false, by_transfer = false;
  for (std::size_t r = 1; r < ranks; ++r) {
    const bool agree = by_transfers[r] || spread[r] * 4 < static_cast<double>(std::abs(offsets[r]));
    if (!placed[r] || std::abs(offsets[r]) <= kMoveNs || !agree) {
      offsets[r] = 0;
      continue;
    }
    by_collectives = by_collectives || !by_transfers[r];
    by_transfer = by_transfer || by_transfers[r];
  }
  if (!by_collectives && !by_transfer) return;
  warn_disagreeing_offsets(graph, samples, offsets);
  std::vector<std::int64_t> moved_by_collectives = offsets, moved_by_transfers = offsets;
  for (std::size_t r = 0; r < ranks; ++r) {
    (by_transfers[r] ? moved_by_collectives : moved_by_transfers)[r] = 0;
  }
  if (by_collectives)
    shift_rank_clocks(graph, moved_by_collectives,
                      "rank clock aligned to its peers by collective ends");
  if (by_transfer)
    shift_rank_clocks(graph, moved_by_transfers,
                      "rank clock aligned to its peers by transfer ends");
}

// The collective metadata of a task's event (nullptr when it has none).
const trace::CollectiveInfo* collective_info_of(const trace::RankTrace& trace,
                                                const ExecutionGraph& graph, std::int32_t task) {
  const trace::TraceEvent& e = trace.events[graph.event_index[task]];
  return e.collective >= 0 && static_cast<std::size_t>(e.collective) < trace.collectives.size()
             ? &trace.collectives[e.collective]
             : nullptr;
}

// Whether every rank's n-th unnamed SendRecv kernel ends together with the first rank's n-th, up
// to a steady clock offset: the median absolute deviation of their end differences is within
// 10 µs for every rank (an all-to-all's members end within a few µs of each other; DLRM: 2–7 µs).
bool unnamed_exchanges_end_together(const std::vector<const trace::RankTrace*>& traces,
                                    const ExecutionGraph& graph) {
  constexpr std::int64_t kTogetherNs = 10'000;
  std::vector<std::vector<std::int64_t>> ends(traces.size());
  for (std::size_t r = 0; r < traces.size(); ++r) {
    for (std::int32_t task = graph.ranks[r].first_task; task < graph.ranks[r].end_task; ++task) {
      if (graph.nccl[task] && exchange_kind(collective_info_of(*traces[r], graph, task),
                                            graph.task_name(task)) == Exchange::kEither)
        ends[r].push_back(graph.input_end_ns(task));
    }
  }
  std::vector<std::int64_t> differences;
  for (std::size_t r = 1; r < traces.size(); ++r) {
    differences.clear();
    for (std::size_t n = 0; n < std::min(ends[r].size(), ends[0].size()); ++n)
      differences.push_back(ends[r][n] - ends[0][n]);
    if (differences.empty()) continue;
    if (median_deviation(differences).deviation > static_cast<double>(kTogetherNs)) return false;
  }
  return true;
}

bool unnamed_exchanges_are_transfers(const std::vector<const trace::RankTrace*>& traces,
                                     const ExecutionGraph& graph) {
  std::vector<std::int64_t> count(traces.size(), 0);
  for (std::size_t r = 0; r < traces.size(); ++r) {
    for (std::int32_t task = graph.ranks[r].first_task; task < graph.ranks[r].end_task; ++task) {
      if (!graph.nccl[task]) continue;
      const std::string_view name = graph.task_name(task);
      const Exchange kind = exchange_kind(collective_info_of(*traces[r], graph, task), name);
      if (kind == Exchange::kEither) ++count[r];
      // A SendRecv kernel its op names a collective: this job runs all-to-alls on them.
      if (kind == Exchange::kCollective &&
          kernel_base_name(name).find("SendRecv") != std::string_view::npos)
        return false;
    }
  }
  if (std::adjacent_find(count.begin(), count.end(), std::not_equal_to<>()) != count.end())
    return true;
  return traces.size() > 2 && !unnamed_exchanges_end_together(traces, graph);
}

// Whether the sequence numbers of the transfers identify them: every (process group, Seq) key of
// a transfer holds one send and one receive on two ranks (the emulator's keys, which name the
// pair). ProcessGroupNCCL's own numbers counted each rank's operations, so there a key mixes
// transfers of several pairs and they are paired by time instead.
bool transfer_sequences_identify_pairs(const std::vector<const trace::RankTrace*>& traces,
                                       const ExecutionGraph& graph, bool either_is_transfer) {
  struct Key {
    std::int32_t members = 0, sends = 0, first_rank = -1;
    bool two_ranks = true;
  };
  std::map<std::pair<std::string, std::int64_t>, Key> keys;
  for (std::size_t r = 0; r < traces.size(); ++r) {
    for (std::int32_t task = graph.ranks[r].first_task; task < graph.ranks[r].end_task; ++task) {
      if (!graph.nccl[task]) continue;
      const trace::CollectiveInfo* info = collective_info_of(*traces[r], graph, task);
      if (!is_point_to_point(info, graph.task_name(task), either_is_transfer)) continue;
      if (info == nullptr || info->sequence < 0) return false;
      Key& k = keys[{info->process_group, info->sequence}];
      ++k.members;
      if (info->name == "send" || info->name == "_send" || info->name == "isend") ++k.sends;
      if (k.first_rank < 0) k.first_rank = static_cast<std::int32_t>(r);
      k.two_ranks = k.two_ranks && (k.members == 1 || k.first_rank != static_cast<std::int32_t>(r));
    }
  }
  for (const auto& [key, k] : keys) {
    if (k.members > 2 || !k.two_ranks || k.sends > 1) return false;
  }
  return true;
}

// The list a collective without a sequence number takes its ordinal in: its process group, or
// without one its stream's class. One list per rank for all of them misaligned as soon as ranks
// run different sets of communicators: with tied embeddings a pipeline's end stages all-reduce
// the embedding besides their data-parallel gradients, and the middle stages' data-parallel
// all-reduces were keyed with the end stages' embedding ones (+0.39 %).
constexpr char kClassListPrefix[] =
    "\x1f"
    "class ";

std::string ordinal_list(const ExecutionGraph& graph, const StreamClasses& classes,
                         const trace::CollectiveInfo* info, std::int32_t task) {
  if (info != nullptr && !info->process_group.empty()) return info->process_group;
  return fmt::format("{}{}", kClassListPrefix, stream_class(graph, classes, task));
}

std::string ordinal_list_name(std::string_view list) {
  if (list.starts_with(kClassListPrefix))
    return fmt::format("stream class {}", list.substr(sizeof(kClassListPrefix) - 1));
  return fmt::format("group '{}'", list);
}

// Ordinals of the collectives without a sequence number (task → ordinal), per process group and
// aligned across ranks; warns where a rank's trace lacks some and they were matched by end time.
std::unordered_map<std::int32_t, std::int64_t> aligned_ordinals_without_sequence(
    const std::vector<const trace::RankTrace*>& traces, ExecutionGraph& graph,
    const StreamClasses& classes, bool either_is_transfer) {
  std::map<std::string, std::vector<std::vector<std::int32_t>>> ordered;
  if (traces.size() > 1) {
    for (std::size_t r = 0; r < traces.size(); ++r) {
      const RankInfo& rank = graph.ranks[r];
      for (std::int32_t task = rank.first_task; task < rank.end_task; ++task) {
        if (!graph.nccl[task]) continue;
        const trace::CollectiveInfo* info = collective_info_of(*traces[r], graph, task);
        if (info != nullptr && info->sequence >= 0) continue;
        if (is_point_to_point(info, graph.task_name(task), either_is_transfer)) continue;
        auto& lists = ordered[ordinal_list(graph, classes, info, task)];
        lists.resize(traces.size());
        lists[r].push_back(task);
      }
    }
  }
  std::unordered_map<std::int32_t, std::int64_t> aligned;
  for (const auto& [group, lists] : ordered) {
    std::vector<bool> realigned;
    const auto ordinals = align_ordinals(graph, classes, lists, &realigned);
    for (std::size_t r = 0; r < lists.size(); ++r) {
      for (std::size_t i = 0; i < lists[r].size(); ++i) aligned[lists[r][i]] = ordinals[r][i];
      if (!realigned[r]) continue;
      add_warning(graph.warnings,
                  "collectives matched across ranks by end time (a rank's trace lacks some)",
                  fmt::format("rank {}: {} collectives of {}", graph.ranks[r].rank, lists[r].size(),
                              ordinal_list_name(group)));
    }
  }
  return aligned;
}

// Every rank's collectives grouped by key (process group and sequence number, else aligned or
// plain ordinal), in order of first appearance.
struct KeyedCollectives {
  std::vector<std::vector<std::int32_t>> members;
  std::vector<const trace::CollectiveInfo*> infos;
  std::vector<std::int32_t> expected;   // group size from metadata, else the world size
  std::vector<std::int32_t> transfers;  // point-to-point tasks, keyed by nothing
  std::vector<const trace::CollectiveInfo*> transfer_infos;
};

KeyedCollectives group_by_key(const std::vector<const trace::RankTrace*>& traces,
                              ExecutionGraph& graph, const StreamClasses& classes,
                              const std::unordered_map<std::int32_t, std::int64_t>& aligned,
                              bool either_is_transfer, bool transfers_keyed) {
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
      if (is_point_to_point(info, graph.task_name(task), either_is_transfer) &&
          !transfers_keyed) {  // paired by time (pair_transfers)
        out.transfers.push_back(task);
        out.transfer_infos.push_back(info);
        continue;
      }
      if (info != nullptr && info->sequence >= 0) {
        key = fmt::format("{}\x1fs{}", info->process_group, info->sequence);
      } else {
        const std::string list = ordinal_list(graph, classes, info, task);
        auto found = aligned.find(task);
        key = fmt::format("{}\x1fo{}", list,
                          found != aligned.end() ? found->second : ordinal[list]++);
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

// Communicators told apart by the ranks' clocks read from their transfers, for a class whose
// collectives do not drift apart enough to be split by end time (`difference`: the middle of
// end(r) − end(q) over the keys at r × ranks + q, `spread` its range). Members of one
// communicator end together on one clock: their difference is steady (spread within
// `tolerance_ns`). Each set of ranks linked by transfers has its clocks from them; the sets are
// placed on one clock in turn, each at the offset under which most of its steady rank pairs with
// the placed ranks end together (the smallest offset on ties: clocks of one job are far closer
// than a step). Ranks r and q are then in one group when their difference is steady and within
// `tolerance_ns` of their clock difference. Returns each rank's group, or nothing unless the
// groups are clean cliques, at least two, of at least two ranks each, and the transfers forced
// the split (two ranks with one clock by their transfers end apart).
std::vector<std::int32_t> groups_by_transfer_clocks(const std::vector<std::int64_t>& difference,
                                                    const std::vector<std::int64_t>& spread,
                                                    const TransferClocks& transfers,
                                                    std::int64_t tolerance_ns) {
  const std::size_t ranks = transfers.offsets.size();
  // Components in order of their first rank; ranks without transfers are their own.
  std::vector<std::int32_t> component(ranks);
  std::vector<std::int64_t> within(ranks, 0);
  std::map<std::int32_t, std::int32_t> renumbered;
  std::int32_t next = 0;
  for (std::size_t r = 0; r < ranks; ++r) {
    if (transfers.component[r] < 0) {
      component[r] = next++;
      continue;
    }
    auto [it, fresh] = renumbered.try_emplace(transfers.component[r], next);
    if (fresh) ++next;
    component[r] = it->second;
    within[r] = transfers.offsets[r];
  }
  auto apart = [&](std::size_t r, std::size_t q) { return difference[r * ranks + q]; };
  std::vector<std::int64_t> clock(ranks, 0);
  std::vector<bool> placed(ranks, false);
  for (std::int32_t c = 0; c < next; ++c) {
    std::vector<std::int64_t> candidates;
    for (std::size_t r = 0; r < ranks; ++r) {
      if (component[r] != c) continue;
      for (std::size_t q = 0; q < ranks; ++q) {
        if (placed[q] && spread[r * ranks + q] <= tolerance_ns)
          candidates.push_back(apart(r, q) - within[r] + clock[q]);
      }
    }
    // Votes: the candidates within the tolerance of each one (sorted: two moving bounds, so
    // thousands of ranks stay n log n).
    std::sort(candidates.begin(), candidates.end());
    std::int64_t best = 0;
    std::size_t best_votes = 0;
    for (std::size_t i = 0, lo = 0, hi = 0; i < candidates.size(); ++i) {
      const std::int64_t delta = candidates[i];
      while (candidates[lo] < delta - tolerance_ns) ++lo;
      while (hi < candidates.size() && candidates[hi] <= delta + tolerance_ns) ++hi;
      const std::size_t votes = hi - lo;
      if (votes > best_votes || (votes == best_votes && std::abs(delta) < std::abs(best))) {
        best = delta;
        best_votes = votes;
      }
    }
    for (std::size_t r = 0; r < ranks; ++r) {
      if (component[r] != c) continue;
      clock[r] = within[r] + best;
      placed[r] = true;
    }
  }
  auto together = [&](std::size_t r, std::size_t q) {
    return spread[r * ranks + q] <= tolerance_ns &&
           std::abs(apart(r, q) - (clock[r] - clock[q])) <= tolerance_ns;
  };
  std::vector<std::int32_t> group(ranks, -1);
  std::int32_t groups = 0;
  // Pairs whose spread is the maximum are known apart (they share another communicator). Then
  // pairs join tightest first unless a known-apart pair would end up in one group, and a pair
  // close enough may stay in two groups only when joining those would break that rule.
  const bool constrained = std::find(spread.begin(), spread.end(),
                                     std::numeric_limits<std::int64_t>::max()) != spread.end();
  auto known_apart = [&](std::size_t r, std::size_t q) {
    return spread[r * ranks + q] == std::numeric_limits<std::int64_t>::max();
  };
  std::vector<std::vector<std::size_t>> members_of(ranks);
  if (constrained) {
    std::vector<std::tuple<std::int64_t, std::size_t, std::size_t>> close;
    for (std::size_t r = 0; r < ranks; ++r) {
      for (std::size_t q = r + 1; q < ranks; ++q) {
        if (together(r, q))
          close.emplace_back(spread[r * ranks + q] + std::abs(apart(r, q) - (clock[r] - clock[q])),
                             r, q);
      }
    }
    std::sort(close.begin(), close.end());
    std::vector<std::size_t> root(ranks);
    // Per group (by its root), the ranks known apart from one of its members: a merge is
    // checked in the size of one group and made in the number of ranks.
    std::vector<std::vector<bool>> apart_from(ranks, std::vector<bool>(ranks, false));
    for (std::size_t r = 0; r < ranks; ++r) {
      root[r] = r;
      members_of[r] = {r};
      for (std::size_t q = 0; q < ranks; ++q) apart_from[r][q] = known_apart(r, q);
    }
    for (const auto& [score, r, q] : close) {
      const std::size_t a = root[r], b = root[q];
      if (a == b) continue;
      const bool conflict = std::any_of(members_of[b].begin(), members_of[b].end(),
                                        [&](std::size_t y) { return apart_from[a][y]; });
      if (conflict) continue;
      const std::size_t keep = std::min(a, b), gone = std::max(a, b);
      for (std::size_t y : members_of[gone]) root[y] = keep;
      members_of[keep].insert(members_of[keep].end(), members_of[gone].begin(),
                              members_of[gone].end());
      members_of[gone].clear();
      for (std::size_t x = 0; x < ranks; ++x)
        apart_from[keep][x] = apart_from[keep][x] || apart_from[gone][x];
      apart_from[gone] = {};
    }
    for (std::size_t r = 0; r < ranks; ++r) {
      if (root[r] == r) {
        group[r] = groups++;
      } else {
        group[r] = group[root[r]];  // roots are each group's first rank
      }
    }
  } else {
    for (std::size_t r = 0; r < ranks; ++r) {
      if (group[r] >= 0) continue;
      group[r] = groups++;
      for (std::size_t q = r + 1; q < ranks; ++q) {
        if (group[q] < 0 && together(r, q)) group[q] = group[r];
      }
    }
  }
  // Groups with a rank known apart from one of the other's, in one pass over the rank pairs.
  const auto group_count = static_cast<std::size_t>(groups);
  std::vector<bool> apart_groups(constrained ? group_count * group_count : 0, false);
  if (constrained) {
    for (std::size_t r = 0; r < ranks; ++r) {
      for (std::size_t q = 0; q < ranks; ++q) {
        if (known_apart(r, q))
          apart_groups[static_cast<std::size_t>(group[r]) * group_count +
                       static_cast<std::size_t>(group[q])] = true;
      }
    }
  }
  auto groups_known_apart = [&](std::int32_t g, std::int32_t h) {
    return apart_groups[static_cast<std::size_t>(g) * group_count + static_cast<std::size_t>(h)];
  };
  std::vector<std::size_t> size(static_cast<std::size_t>(groups), 0);
  bool forced = false;
  for (std::size_t r = 0; r < ranks; ++r) {
    ++size[static_cast<std::size_t>(group[r])];
    for (std::size_t q = 0; q < ranks; ++q) {
      const bool same = group[r] == group[q];
      if (together(r, q) != same &&
          (same || !constrained || !groups_known_apart(group[r], group[q])))
        return {};
      forced = forced || (component[r] == component[q] && group[r] != group[q]);
    }
  }
  if (groups < 2 || !forced ||
      std::any_of(size.begin(), size.end(), [](std::size_t n) { return n < 2; }))
    return {};
  return group;
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
struct CommunicatorSplit {
  std::int64_t split = 0;   // keys that held members of several groups
  std::int64_t joined = 0;  // keys over a subset of the ranks, joined as the subset's one group
  std::size_t joined_ranks = 0;
};

CommunicatorSplit split_communicators_by_end_time(const ExecutionGraph& graph,
                                                  const StreamClasses& classes,
                                                  KeyedCollectives& keyed) {
  constexpr std::int64_t kSteadyNs = 10'000, kVaryingNs = 20'000;
  const std::size_t all_ranks = graph.ranks.size();
  CommunicatorSplit out;
  if (all_ranks < 4) return out;
  // Keys of one class over one set of ranks (at least 4, each once): every rank, or the ranks
  // that run the class's stream at all (a pipeline's end stages for the embedding groups). Most
  // ranks first, so that the communicators found veto and link the later sets.
  struct Bucket {
    std::vector<std::size_t> ranks;  // rank indices, ascending
    std::vector<std::size_t> keys;
    // The ranks are a strict subset, and all that run the class's stream.
    bool whole_subset = false;
  };
  std::map<std::pair<std::int32_t, std::vector<std::size_t>>, std::vector<std::size_t>> buckets;
  for (std::size_t g = 0; g < keyed.members.size(); ++g) {
    const trace::CollectiveInfo* info = keyed.infos[g];
    const auto& members = keyed.members[g];
    if ((info != nullptr && info->group_size > 0) || members.size() < 4) continue;
    const std::int32_t cls = stream_class(graph, classes, members.front());
    bool same_class = true;
    std::vector<std::size_t> of_ranks;
    for (std::int32_t t : members) {
      same_class = same_class && stream_class(graph, classes, t) == cls;
      of_ranks.push_back(static_cast<std::size_t>(graph.rank_index_of(t)));
    }
    std::sort(of_ranks.begin(), of_ranks.end());
    if (!same_class || std::adjacent_find(of_ranks.begin(), of_ranks.end()) != of_ranks.end())
      continue;
    buckets[{cls, std::move(of_ranks)}].push_back(g);
  }
  std::map<std::int32_t, std::set<std::size_t>> ranks_of_class;  // every keyed collective's
  for (const auto& members : keyed.members) {
    for (std::int32_t t : members) {
      ranks_of_class[stream_class(graph, classes, t)].insert(
          static_cast<std::size_t>(graph.rank_index_of(t)));
    }
  }
  std::vector<Bucket> ordered;
  for (auto& [id, keys] : buckets) {
    const std::set<std::size_t>& running = ranks_of_class[id.first];
    const bool whole =
        id.second.size() < all_ranks &&
        std::equal(running.begin(), running.end(), id.second.begin(), id.second.end());
    ordered.push_back(Bucket{id.second, std::move(keys), whole});
  }
  std::stable_sort(ordered.begin(), ordered.end(), [](const Bucket& a, const Bucket& b) {
    return a.ranks.size() > b.ranks.size();
  });
  // The transfers' clocks, read when a class needs them, again once a class has been split (the
  // links between ranks are read once: one pairing budget for the trace set).
  std::optional<TransferAgreement> agreement;
  std::vector<TransferLink> links;
  std::optional<TransferClocks> transfer_clocks;
  // Each split bucket's groups, by rank index (a rank outside the bucket: −1 − its index, apart
  // from every other).
  std::vector<std::vector<std::int32_t>> communicators;
  // Per communicator, each member's place in its group by rank number and the group's size (−1:
  // not a member).
  std::vector<std::vector<std::pair<std::int32_t, std::int32_t>>> places;
  std::size_t clocks_know = 0;  // of the communicators
  auto transfer_clocks_of_ranks = [&]() -> const TransferClocks& {
    if (!agreement.has_value()) {
      agreement.emplace(graph, keyed.transfers);
      links = transfer_links(*agreement, all_ranks);
    }
    if (!transfer_clocks.has_value() || clocks_know != communicators.size()) {
      clocks_know = communicators.size();
      transfer_clocks = link_ranks_by_transfers(*agreement, links, all_ranks, communicators);
    }
    return *transfer_clocks;
  };
  for (const Bucket& bucket : ordered) {
    const std::vector<std::size_t>& keys = bucket.keys;
    if (keys.size() < 2) continue;
    // Below, ranks are numbered within the bucket: `rank_at[r]` is local rank r's index.
    const std::vector<std::size_t>& rank_at = bucket.ranks;
    const std::size_t ranks = rank_at.size();
    std::vector<std::int32_t> local_of(all_ranks, -1);
    for (std::size_t r = 0; r < ranks; ++r) local_of[rank_at[r]] = static_cast<std::int32_t>(r);
    auto local_rank = [&](std::int32_t task) {
      return static_cast<std::size_t>(
          local_of[static_cast<std::size_t>(graph.rank_index_of(task))]);
    };
    // Spread (max − min over keys) of end(r) − end(s) per rank pair.
    std::vector<std::int64_t> low(ranks * ranks, std::numeric_limits<std::int64_t>::max());
    std::vector<std::int64_t> high(ranks * ranks, std::numeric_limits<std::int64_t>::min());
    std::vector<std::int64_t> end_of(ranks);
    for (std::size_t g : keys) {
      for (std::int32_t t : keyed.members[g]) end_of[local_rank(t)] = graph.input_end_ns(t);
      for (std::size_t r = 0; r < ranks; ++r) {
        for (std::size_t q = 0; q < ranks; ++q) {
          const std::int64_t d = end_of[r] - end_of[q];
          low[r * ranks + q] = std::min(low[r * ranks + q], d);
          high[r * ranks + q] = std::max(high[r * ranks + q], d);
        }
      }
    }
    // Each rank's group, or nothing when the class does not split. With `veto`, ranks known to
    // share a communicator of a class split before are taken as clearly apart: a communicator
    // meets another in at most one rank in a tensor × pipeline × data layout, and tensor-parallel
    // neighbours' data-parallel groups end within the noise of each other (TP 2 × PP 4 × DP 8
    // with 5 µs of noise per kernel: their end differences varied by 10–20 µs, no split, every
    // rank moved by its stage's 0.2–0.7 ms, 46 transfers unmatched). Known weak: a world or
    // model-parallel collective over ranks at every place, whose members end together, is split
    // by place under the veto (a check that the ends bear the split out, tried 2026-11-27, also
    // refused true data-parallel groups whose members end up to 3 µs apart).
    auto middle = [&](std::size_t i) { return low[i] + (high[i] - low[i]) / 2; };
    auto clocks_of_bucket = [&](const TransferClocks& of_all) {
      TransferClocks out{std::vector<std::int64_t>(ranks), std::vector<std::int32_t>(ranks)};
      for (std::size_t r = 0; r < ranks; ++r) {
        out.offsets[r] = of_all.offsets[rank_at[r]];
        out.component[r] = of_all.component[rank_at[r]];
      }
      return out;
    };
    auto find_groups = [&](bool veto, bool by_end_time_only) -> std::vector<std::int32_t> {
      // Under the veto, ranks at other places in groups of a communicator found before are apart
      // too: frameworks number the ranks so that a data-parallel or embedding group holds the
      // ranks at one place in their tensor-parallel groups (TP 2 × PP 4 × DP 8, members ending up
      // to 3 µs apart: tensor-parallel neighbours' data-parallel groups were split crosswise).
      auto vetoed = [&](std::size_t r, std::size_t q) {
        for (std::size_t c = 0; c < communicators.size(); ++c) {
          const std::size_t a = rank_at[r], b = rank_at[q];
          if (communicators[c][a] == communicators[c][b]) return true;
          const auto& [place_a, size_a] = places[c][a];
          const auto& [place_b, size_b] = places[c][b];
          if (place_a >= 0 && place_b >= 0 && size_a == size_b && place_a != place_b) return true;
        }
        return false;
      };
      auto spread_of = [&](std::size_t r, std::size_t q) -> std::int64_t {
        if (veto && r != q && vetoed(r, q)) return std::numeric_limits<std::int64_t>::max();
        return high[r * ranks + q] - low[r * ranks + q];
      };
      // Groups: each rank with the ranks it ends steadily with (spread within `steady_ns`); they
      // must be cliques, apart from the rest clearly (above `varying_ns`), and at least two of at
      // least two ranks. A split by drift is checked against the transfers: two ranks whose
      // transfers put them on one clock but whose ends are steadily apart are not in one
      // communicator (with many pipelines side by side two stages' groups can drift together).
      auto cliques = [&](std::int64_t steady_ns,
                         std::int64_t varying_ns) -> std::vector<std::int32_t> {
        std::vector<std::int32_t> group(ranks, -1);
        std::int32_t groups = 0;
        bool valid = true;
        for (std::size_t r = 0; r < ranks && valid; ++r) {
          if (group[r] >= 0) continue;
          const std::int32_t id = groups++;
          std::size_t size = 0;
          for (std::size_t q = r; q < ranks; ++q) {
            const std::int64_t spread = spread_of(r, q);
            if (spread <= steady_ns) {
              if (group[q] >= 0) valid = false;
              group[q] = id;
              ++size;
            } else if (spread <= varying_ns) {
              valid = false;  // neither steady nor clearly varying: no evidence either way
            }
          }
          valid = valid && size >= 2;
        }
        for (std::size_t r = 0; r < ranks && valid; ++r) {
          for (std::size_t q = 0; q < ranks && valid; ++q) {
            const bool steady = spread_of(r, q) <= steady_ns;
            valid = steady == (group[r] == group[q]);
          }
        }
        if (valid && groups >= 2 && !keyed.transfers.empty()) {
          const TransferClocks clocks = clocks_of_bucket(transfer_clocks_of_ranks());
          for (std::size_t r = 0; r < ranks && valid; ++r) {
            for (std::size_t q = r + 1; q < ranks && valid; ++q) {
              if (group[r] != group[q] || clocks.component[r] < 0 ||
                  clocks.component[r] != clocks.component[q])
                continue;
              valid = std::abs(middle(r * ranks + q) - (clocks.offsets[r] - clocks.offsets[q])) <=
                      kVaryingNs;
            }
          }
        }
        if (!valid || groups < 2) return {};
        return group;
      };
      // Steady runs little noise across steps: two groups of pipelines side by side ended
      // 4.5 µs apart at most over three steps with 2 µs of noise per kernel (11 µs with 5),
      // inside the 10 µs taken for steady. Each cut between the pairs' spreads where they jump
      // fourfold, to at least 1 µs, from at most 10 µs, is tried as the line between steady and
      // varying, lowest first.
      std::vector<std::int64_t> spreads;
      for (std::size_t r = 0; r < ranks; ++r) {
        for (std::size_t q = r + 1; q < ranks; ++q) spreads.push_back(spread_of(r, q));
      }
      std::sort(spreads.begin(), spreads.end());
      spreads.erase(std::unique(spreads.begin(), spreads.end()), spreads.end());
      for (std::size_t k = 0; k + 1 < spreads.size() && spreads[k] <= kSteadyNs; ++k) {
        constexpr std::int64_t kLeastVaryingNs = 1'000;
        if (spreads[k + 1] < std::max(4 * spreads[k], kLeastVaryingNs)) continue;
        if (auto group = cliques(spreads[k], spreads[k + 1] - 1); !group.empty()) return group;
      }
      if (auto group = cliques(kSteadyNs, kVaryingNs); !group.empty() || by_end_time_only)
        return group;
      // Not enough drift to tell the communicators by (rank pairs of different groups may end
      // steadily apart, or vary by too little to be sure, as pipelines side by side do); the
      // transfers' clocks tell.
      if (!keyed.transfers.empty()) {
        std::vector<std::int64_t> difference(ranks * ranks), spread(ranks * ranks);
        for (std::size_t r = 0; r < ranks; ++r) {
          for (std::size_t q = 0; q < ranks; ++q) {
            difference[r * ranks + q] = middle(r * ranks + q);
            spread[r * ranks + q] = spread_of(r, q);
          }
        }
        if (auto group = groups_by_transfer_clocks(
                difference, spread, clocks_of_bucket(transfer_clocks_of_ranks()), kSteadyNs);
            !group.empty())
          return group;
      }
      return {};
    };
    // Ranks that share a communicator found before share no other (a tensor-parallel pair is in
    // two data-parallel groups, which end together when the pipelines run in step: TP 2 × PP 4
    // × DP 4 took each pair's two groups for one); cliques under that rule come first. A class
    // whose groups hold whole communicators found before (model-parallel groups hold
    // tensor-parallel ones) forms no cliques under it, and is split without it.
    std::vector<std::int32_t> group;
    if (!communicators.empty()) group = find_groups(true, true);
    if (group.empty()) group = find_groups(false, false);
    if (group.empty() && !communicators.empty()) group = find_groups(true, false);
    if (group.empty()) {
      // The only ranks that ever run this stream, ending steadily together: taken as one
      // communicator of theirs (the world's size would leave them unmatched and measured). Their
      // groups may still be several that nothing in the trace tells apart (pipelines side by side
      // without noise), and the warning says so.
      bool together = bucket.whole_subset;
      for (std::size_t i = 0; i < ranks * ranks && together; ++i)
        together = high[i] - low[i] <= kSteadyNs;
      if (!together) continue;
      for (std::size_t g : keys)
        keyed.expected[g] = static_cast<std::int32_t>(keyed.members[g].size());
      out.joined += static_cast<std::int64_t>(keys.size());
      out.joined_ranks = std::max(out.joined_ranks, ranks);
      continue;
    }
    const std::int32_t groups = *std::max_element(group.begin(), group.end()) + 1;
    for (std::size_t g : keys) {
      std::vector<std::vector<std::int32_t>> parts(static_cast<std::size_t>(groups));
      for (std::int32_t t : keyed.members[g])
        parts[static_cast<std::size_t>(group[local_rank(t)])].push_back(t);
      keyed.members[g] = std::move(parts[0]);
      keyed.expected[g] = static_cast<std::int32_t>(keyed.members[g].size());
      for (std::size_t k = 1; k < parts.size(); ++k) {
        keyed.expected.push_back(static_cast<std::int32_t>(parts[k].size()));
        keyed.members.push_back(std::move(parts[k]));
        keyed.infos.push_back(keyed.infos[g]);
      }
      ++out.split;
    }
    std::vector<std::int32_t> communicator(all_ranks);
    for (std::size_t r = 0; r < all_ranks; ++r)
      communicator[r] = local_of[r] >= 0 ? group[static_cast<std::size_t>(local_of[r])]
                                         : -1 - static_cast<std::int32_t>(r);
    std::map<std::int32_t, std::vector<std::pair<int, std::size_t>>> members_of_group;
    for (std::size_t r = 0; r < all_ranks; ++r) {
      if (communicator[r] >= 0)
        members_of_group[communicator[r]].emplace_back(graph.ranks[r].rank, r);
    }
    std::vector<std::pair<std::int32_t, std::int32_t>> place(all_ranks, {-1, 0});
    for (auto& [id, members] : members_of_group) {
      std::sort(members.begin(), members.end());
      for (std::size_t i = 0; i < members.size(); ++i) {
        place[members[i].second] = {static_cast<std::int32_t>(i),
                                    static_cast<std::int32_t>(members.size())};
      }
    }
    places.push_back(std::move(place));
    communicators.push_back(std::move(communicator));
  }
  return out;
}

// Whether ends sorted in [first, last) fall into clusters of at least two, at least two clusters,
// each far tighter than the gaps between them (a quarter): pairs that happen to end close
// together, not one exchange, whose members end together with no such structure.
bool ends_form_separate_pairs(const ExecutionGraph& graph, const std::vector<std::int32_t>& by_end,
                              std::size_t first, std::size_t last) {
  std::vector<std::int64_t> gaps;
  for (std::size_t k = first + 1; k < last; ++k)
    gaps.push_back(graph.input_end_ns(by_end[k]) - graph.input_end_ns(by_end[k - 1]));
  std::vector<std::int64_t> distinct = gaps;
  std::sort(distinct.begin(), distinct.end());
  distinct.erase(std::unique(distinct.begin(), distinct.end()), distinct.end());
  // Splitting at gaps above distinct[k] leaves clusters at least distinct[k] wide (when a gap
  // that size is inside one) and distinct[k + 1] between them: only jumps of more than 4× can
  // pass, a few per run, so a run of thousands of ranks is not tried at every gap.
  std::vector<std::int64_t> thresholds;
  for (std::size_t k = 0; k + 1 < distinct.size(); ++k) {
    if (distinct[k + 1] > 4 * distinct[k]) thresholds.push_back(distinct[k]);
  }
  for (std::int64_t threshold : thresholds) {  // clusters split at gaps above it
    std::size_t clusters = 1, size = 1;
    std::int64_t widest = 0, narrowest_gap = std::numeric_limits<std::int64_t>::max();
    std::int64_t cluster_start = graph.input_end_ns(by_end[first]);
    bool valid = true;
    for (std::size_t k = first + 1; k < last && valid; ++k) {
      const std::int64_t gap = gaps[k - first - 1];
      if (gap > threshold) {
        valid = size >= 2;
        ++clusters;
        size = 1;
        narrowest_gap = std::min(narrowest_gap, gap);
        cluster_start = graph.input_end_ns(by_end[k]);
      } else {
        ++size;
        widest = std::max(widest, graph.input_end_ns(by_end[k]) - cluster_start);
      }
    }
    if (valid && size >= 2 && clusters >= 2 && 4 * widest < narrowest_gap) return true;
  }
  return false;
}

// Point-to-point transfers pair up by time: a send and its receive end together (the kernels
// finish when the data has moved), on two different ranks. Each transfer takes the transfer of
// another rank with the same kernel whose end (clocks aligned by the collectives) is nearest,
// within 20 µs, both choosing each other (closest pairs first); the rest are replayed measured.
// Order and sequence numbers cannot pair them: a stage sends to the next and receives from the
// previous in its own order, and ProcessGroupNCCL counted its P2P operations per rank. Returns
// the groups: pairs, then singles.
std::vector<std::vector<std::int32_t>> pair_transfers(const ExecutionGraph& graph,
                                                      const std::vector<std::int32_t>& transfers,
                                                      const std::vector<bool>& named) {
  constexpr std::int64_t kToleranceNs = 20'000;
  std::vector<std::int32_t> by_end = transfers;
  std::sort(by_end.begin(), by_end.end(), [&](std::int32_t a, std::int32_t b) {
    const std::int64_t ea = graph.input_end_ns(a), eb = graph.input_end_ns(b);
    return ea != eb ? ea < eb : a < b;
  });
  struct Candidate {
    std::int64_t distance;
    std::size_t a, b;            // positions in by_end
    std::int64_t shared = 0;     // joined collectives the two ranks share
    std::int64_t effective = 0;  // the distance they are paired by
  };
  std::vector<Candidate> candidates;
  for (std::size_t i = 0; i < by_end.size(); ++i) {
    const std::int64_t end = graph.input_end_ns(by_end[i]);
    for (std::size_t j = i + 1; j < by_end.size(); ++j) {
      const std::int64_t distance = graph.input_end_ns(by_end[j]) - end;
      if (distance > kToleranceNs) break;
      if (graph.rank_index_of(by_end[i]) == graph.rank_index_of(by_end[j])) continue;
      if (kernel_base_name(graph.task_name(by_end[i])) !=
          kernel_base_name(graph.task_name(by_end[j])))
        continue;
      candidates.push_back({distance, i, j});
    }
  }
  // Ends that tie, within 2 µs (clock alignment is read to about a microsecond), go to ranks that
  // do not share most of their joined collectives, then to those that share fewer: tensor-parallel
  // ranks of one stage send to their counterparts in lockstep, and with equal kernels all four
  // transfers of two pairs end at one instant (TP 4 × PP 4 × DP 2 with metadata: each rank paired
  // with its tensor-parallel neighbour, +0.38 %; with hosts' clocks apart, aligned to within 0.3
  // µs, the what-if moved by 0.28 %); a stage and its pipeline peer share no communicator but an
  // embedding or model-parallel one, far fewer collectives than a tensor-parallel group's (so
  // sharing any would let another replica's stage, ending within the 2 µs, take the peer's place).
  constexpr std::int64_t kSharedTieNs = 2'000;
  const std::size_t rank_count = graph.ranks.size();
  // One pass over the joined collectives: each rank's collectives (in order), and each distinct
  // member set once (its id) with the collectives each rank runs in it.
  std::vector<std::vector<std::int32_t>> groups_of_rank(rank_count);
  std::map<std::vector<std::int32_t>, std::size_t> id_of_set;
  std::vector<const std::vector<std::int32_t>*> set_of_id;
  std::vector<std::map<std::size_t, std::int64_t>> of_rank(rank_count);  // id → collectives
  {
    std::vector<std::int32_t> members;
    for (std::size_t g = 0; g < graph.collectives.size(); ++g) {
      const CollectiveGroup& group = graph.collectives[g];
      if (!group.joined || group.member_count < 2) continue;
      members.clear();
      for (std::int32_t k = 0; k < group.member_count; ++k) {
        members.push_back(graph.rank_index_of(
            graph.collective_members[static_cast<std::size_t>(group.first_member + k)]));
      }
      std::sort(members.begin(), members.end());
      members.erase(std::unique(members.begin(), members.end()), members.end());
      const auto [it, fresh] = id_of_set.try_emplace(members, set_of_id.size());
      if (fresh) set_of_id.push_back(&it->first);
      for (std::int32_t r : members) {
        groups_of_rank[static_cast<std::size_t>(r)].push_back(static_cast<std::int32_t>(g));
        ++of_rank[static_cast<std::size_t>(r)][it->second];
      }
    }
  }
  // The key of the ranks of two tasks, whichever comes first.
  auto rank_pair_key = [&](std::int32_t a, std::int32_t b) {
    auto ra = static_cast<std::uint64_t>(graph.rank_index_of(a));
    auto rb = static_cast<std::uint64_t>(graph.rank_index_of(b));
    if (ra > rb) std::swap(ra, rb);
    return ra * rank_count + rb;
  };
  std::unordered_map<std::uint64_t, std::int64_t> shared_memo;
  auto shared = [&](std::int32_t a, std::int32_t b) {
    const std::uint64_t key = rank_pair_key(a, b);
    auto [it, fresh] = shared_memo.try_emplace(key, 0);
    if (fresh) {
      const auto& x = groups_of_rank[key / rank_count];
      const auto& y = groups_of_rank[key % rank_count];
      std::int64_t n = 0;
      for (std::size_t i = 0, j = 0; i < x.size() && j < y.size();) {
        if (x[i] == y[j]) {
          ++n;
          ++i;
          ++j;
        } else if (x[i] < y[j]) {
          ++i;
        } else {
          ++j;
        }
      }
      it->second = n;
    }
    return it->second;
  };
  auto collectives_of = [&](std::size_t position) {
    return groups_of_rank[static_cast<std::size_t>(graph.rank_index_of(by_end[position]))].size();
  };
  // Each rank's place in the communicator it runs most collectives in (its members by rank
  // number): frameworks number tensor-, data- and pipeline-parallel ranks so that a stage sends to
  // the rank at its own place in the next stage's group (Megatron, DeepSpeed, torchtitan), and
  // tensor-parallel neighbours in lockstep end their transfers within the noise of each other's
  // (TP 2 × PP 4 × DP 4 with tied embeddings: 90 transfers paired crosswise). A pair at other
  // places in groups of one size is as far as kOtherPlaceNs on top of its distance.
  constexpr std::int64_t kOtherPlaceNs = 5'000;
  std::vector<std::pair<std::int32_t, std::int32_t>> place(rank_count, {-1, 0});  // (place, size)
  for (std::size_t r = 0; r < rank_count; ++r) {
    const std::vector<std::int32_t>* most_run = nullptr;
    std::int64_t most = 0;
    for (const auto& [id, n] : of_rank[r]) {
      if (n > most) {
        most = n;
        most_run = set_of_id[id];
      }
    }
    if (most_run == nullptr) continue;
    std::vector<std::pair<int, std::int32_t>> by_number;  // (rank number, index)
    for (std::int32_t m : *most_run)
      by_number.emplace_back(graph.ranks[static_cast<std::size_t>(m)].rank, m);
    std::sort(by_number.begin(), by_number.end());
    for (std::size_t i = 0; i < by_number.size(); ++i) {
      if (by_number[i].second == static_cast<std::int32_t>(r))
        place[r] = {static_cast<std::int32_t>(i), static_cast<std::int32_t>(by_number.size())};
    }
  }
  auto other_places = [&](std::int32_t a, std::int32_t b) {
    const auto& pa = place[static_cast<std::size_t>(graph.rank_index_of(a))];
    const auto& pb = place[static_cast<std::size_t>(graph.rank_index_of(b))];
    return pa.first >= 0 && pb.first >= 0 && pa.second == pb.second && pa.first != pb.first;
  };
  for (Candidate& c : candidates) {
    c.shared = shared(by_end[c.a], by_end[c.b]);
    const std::size_t fewer = std::min(collectives_of(c.a), collectives_of(c.b));
    const bool mostly_shared = fewer > 0 && 2 * static_cast<std::size_t>(c.shared) >= fewer;
    c.effective = c.distance + (mostly_shared ? kSharedTieNs : 0) +
                  (other_places(by_end[c.a], by_end[c.b]) ? kOtherPlaceNs : 0);
  }
  std::stable_sort(
      candidates.begin(), candidates.end(), [](const Candidate& x, const Candidate& y) {
        return x.effective != y.effective ? x.effective < y.effective : x.shared < y.shared;
      });
  std::vector<bool> taken(by_end.size(), false);
  std::vector<std::vector<std::int32_t>> groups;
  // Without metadata an all-to-all (NCCL runs it as grouped sends and receives, the same
  // SendRecv kernel) is not told from transfers by name: transfers ending together on every
  // loaded rank, one each, are one exchange among all of them, not pairs. Transfers an op named
  // (`named`, parallel to `transfers`) are pairs whatever their ends.
  std::unordered_map<std::int32_t, bool> is_named;
  for (std::size_t k = 0; k < transfers.size(); ++k) {
    if (named[k]) is_named[transfers[k]] = true;
  }
  const std::size_t ranks = graph.ranks.size();
  if (ranks > 2) {
    for (std::size_t i = 0; i < by_end.size();) {
      std::size_t j = i + 1;  // a run of ends each within the tolerance of the previous
      while (j < by_end.size() &&
             graph.input_end_ns(by_end[j]) - graph.input_end_ns(by_end[j - 1]) <= kToleranceNs)
        ++j;
      std::vector<bool> seen(ranks, false);
      // An exchange's members all end within the tolerance; a run chained over more is transfers
      // (64 ranks of 1F1B with 0.5 µs of noise: one transfer per rank chained over 92 µs).
      bool one_each =
          j - i == ranks &&
          graph.input_end_ns(by_end[j - 1]) - graph.input_end_ns(by_end[i]) <= kToleranceNs;
      for (std::size_t k = i; k < j && one_each; ++k) {
        const auto r = static_cast<std::size_t>(graph.rank_index_of(by_end[k]));
        one_each = !seen[r] && !is_named.contains(by_end[k]) &&
                   kernel_base_name(graph.task_name(by_end[k])) ==
                       kernel_base_name(graph.task_name(by_end[i]));
        seen[r] = true;
      }
      // Pairs that happen to end close together fall into clusters each far tighter than the
      // gaps between them (TP 4 × PP 4 × DP 2: four instants 4–12 µs apart, eight ranks each,
      // chained within the tolerance and taken for one exchange of 32, +0.38 % with metadata).
      if (one_each && ends_form_separate_pairs(graph, by_end, i, j)) one_each = false;
      if (one_each) {
        std::vector<std::int32_t> exchange(by_end.begin() + static_cast<std::ptrdiff_t>(i),
                                           by_end.begin() + static_cast<std::ptrdiff_t>(j));
        std::sort(exchange.begin(), exchange.end());
        groups.push_back(std::move(exchange));
        for (std::size_t k = i; k < j; ++k) taken[k] = true;
      }
      i = j;
    }
  }
  // Nearest ends first. A stage sends to the same neighbours all the time, so the pairs are read
  // twice: a rank pair that the first reading paired rarely (under a quarter of either rank's
  // most paired partner's count) is a chance meeting of two ends, and in the second reading it
  // only takes what no usual pair wants (TP 2 × PP 4 × DP 8 with 0.5 µs of noise: 8 transfers
  // paired across pipelines, whose ends came within the noise of a true peer's).
  const std::vector<bool> taken_by_exchanges = taken;
  auto pair_nearest = [&](const std::vector<Candidate>& ordered) {
    std::vector<std::pair<std::size_t, std::size_t>> pairs;
    for (const Candidate& c : ordered) {
      if (taken[c.a] || taken[c.b]) continue;
      taken[c.a] = taken[c.b] = true;
      pairs.emplace_back(c.a, c.b);
    }
    return pairs;
  };
  auto rank_pair = [&](const Candidate& c) { return rank_pair_key(by_end[c.a], by_end[c.b]); };
  std::vector<std::pair<std::size_t, std::size_t>> pairs = pair_nearest(candidates);
  std::unordered_map<std::uint64_t, std::int64_t> paired;  // rank pair → pairs
  std::vector<std::int64_t> most(rank_count, 0);           // a rank's most paired partner's
  for (const auto& [a, b] : pairs) {
    const Candidate c{0, a, b};
    const std::int64_t n = ++paired[rank_pair(c)];
    for (std::size_t p : {a, b}) {
      auto& m = most[static_cast<std::size_t>(graph.rank_index_of(by_end[p]))];
      m = std::max(m, n);
    }
  }
  auto rare = [&](const Candidate& c) {
    const auto it = paired.find(rank_pair(c));
    const std::int64_t n = it == paired.end() ? 0 : it->second;
    const std::int64_t usual =
        std::max(most[static_cast<std::size_t>(graph.rank_index_of(by_end[c.a]))],
                 most[static_cast<std::size_t>(graph.rank_index_of(by_end[c.b]))]);
    return 4 * n < usual;
  };
  if (std::any_of(pairs.begin(), pairs.end(), [&](const auto& p) {
        return rare(Candidate{0, p.first, p.second});
      })) {
    std::stable_partition(candidates.begin(), candidates.end(),
                          [&](const Candidate& c) { return !rare(c); });
    taken = taken_by_exchanges;
    pairs = pair_nearest(candidates);
  }
  // Nearest first is greedy: tensor-parallel neighbours of a stage send in lockstep, and one
  // rank's end meeting its neighbour's peer's a little closer than its own peer's swaps both pairs
  // (TP 2 × PP 4 × DP 2 with tied embeddings and 2 µs of noise: 12 transfers paired across
  // tensor-parallel ranks). Two pairs whose ends pair the other way round with a smaller sum of
  // distances are swapped, until none is.
  {
    // (positions (low, high), ns), sorted: a third of a hash map's memory at millions of
    // candidates.
    std::vector<std::pair<std::uint64_t, std::int64_t>> distance_of;
    distance_of.reserve(candidates.size());
    auto key = [&](std::size_t x, std::size_t y) {
      return static_cast<std::uint64_t>(std::min(x, y)) * by_end.size() + std::max(x, y);
    };
    // A rare rank pair (above) is as far as the tolerance on top of its distance.
    for (const Candidate& c : candidates)
      distance_of.emplace_back(key(c.a, c.b), c.effective + (rare(c) ? kToleranceNs : 0));
    std::sort(distance_of.begin(), distance_of.end());
    auto distance = [&](std::size_t x, std::size_t y) -> std::optional<std::int64_t> {
      const std::uint64_t k = key(x, y);
      const auto it = std::lower_bound(distance_of.begin(), distance_of.end(), k,
                                       [](const std::pair<std::uint64_t, std::int64_t>& e,
                                          std::uint64_t v) { return e.first < v; });
      if (it == distance_of.end() || it->first != k) return std::nullopt;
      return it->second;
    };
    constexpr std::int64_t kSwapGainNs = 100;  // below the clocks' reading: no churn on ties
    std::vector<std::int64_t> partner(by_end.size(), -1);
    for (const auto& [a, b] : pairs) {
      partner[a] = static_cast<std::int64_t>(b);
      partner[b] = static_cast<std::int64_t>(a);
    }
    for (int pass = 0; pass < 8; ++pass) {
      bool swapped = false;
      for (const Candidate& c : candidates) {
        const std::int64_t pa = partner[c.a], pb = partner[c.b];
        if (pa < 0 || pb < 0 || pa == static_cast<std::int64_t>(c.b)) continue;
        const auto a_now = distance(c.a, static_cast<std::size_t>(pa));
        const auto b_now = distance(c.b, static_cast<std::size_t>(pb));
        const auto others = distance(static_cast<std::size_t>(pa), static_cast<std::size_t>(pb));
        if (!a_now || !b_now || !others) continue;
        if (*a_now + *b_now - *distance(c.a, c.b) - *others <= kSwapGainNs) continue;
        partner[c.a] = static_cast<std::int64_t>(c.b);
        partner[c.b] = static_cast<std::int64_t>(c.a);
        partner[static_cast<std::size_t>(pa)] = pb;
        partner[static_cast<std::size_t>(pb)] = pa;
        swapped = true;
      }
      if (!swapped) break;
    }
    pairs.clear();
    for (std::size_t x = 0; x < by_end.size(); ++x) {
      if (partner[x] > static_cast<std::int64_t>(x))
        pairs.emplace_back(x, static_cast<std::size_t>(partner[x]));
    }
  }
  for (const auto& [a, b] : pairs) {
    std::vector<std::int32_t> pair = {by_end[a], by_end[b]};
    std::sort(pair.begin(), pair.end());
    groups.push_back(std::move(pair));
  }
  std::sort(groups.begin(), groups.end());
  std::vector<std::int32_t> singles;
  for (std::size_t k = 0; k < by_end.size(); ++k) {
    if (!taken[k]) singles.push_back(by_end[k]);
  }
  std::sort(singles.begin(), singles.end());  // in task order, as the transfers came
  for (std::int32_t task : singles) groups.push_back({task});
  return groups;
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
  const bool either_is_transfer = unnamed_exchanges_are_transfers(traces, graph);
  const StreamClasses classes = nccl_stream_classes(traces, graph, either_is_transfer);
  const auto aligned =
      aligned_ordinals_without_sequence(traces, graph, classes, either_is_transfer);
  const bool transfers_keyed = transfer_sequences_identify_pairs(traces, graph, either_is_transfer);
  KeyedCollectives keyed =
      group_by_key(traces, graph, classes, aligned, either_is_transfer, transfers_keyed);
  const CommunicatorSplit split = split_communicators_by_end_time(graph, classes, keyed);
  if (split.split > 0) {
    add_warning(graph.warnings,
                "collectives without process-group metadata split into communicators by end time",
                fmt::format("{} collective(s) held members of several groups", split.split));
  }
  if (split.joined > 0) {
    add_warning(graph.warnings,
                "collectives without process-group metadata joined over the only ranks that run "
                "their stream (their ends tell no groups apart among them)",
                fmt::format("{} collective(s), up to {} ranks", split.joined, split.joined_ranks));
  }
  const std::int32_t loaded = static_cast<std::int32_t>(traces.size());
  for (std::size_t g = 0; g < keyed.members.size(); ++g)
    add_collective_group(graph, g, keyed.members[g], keyed.infos[g], keyed.expected[g], loaded);
  align_rank_clocks(graph, keyed.transfers);
  // Transfers pair on the aligned clocks; a transfer whose peer is not in the input stays alone
  // (expected 2 of the loaded ranks: a single rank's transfers raise no warning).
  if (!keyed.transfers.empty()) {
    std::unordered_map<std::int32_t, const trace::CollectiveInfo*> info_of;
    for (std::size_t k = 0; k < keyed.transfers.size(); ++k)
      info_of[keyed.transfers[k]] = keyed.transfer_infos[k];
    std::vector<bool> named(keyed.transfers.size());
    for (std::size_t k = 0; k < keyed.transfers.size(); ++k) {
      named[k] = exchange_kind(keyed.transfer_infos[k], graph.task_name(keyed.transfers[k])) ==
                 Exchange::kTransfer;
    }
    for (const auto& members : pair_transfers(graph, keyed.transfers, named)) {
      const std::int32_t expected = members.size() > 2 ? loaded : 2;
      add_collective_group(graph, graph.collectives.size(), members, info_of[members.front()],
                           expected, loaded);
    }
  }
}

}  // namespace powertrain::graph::detail
