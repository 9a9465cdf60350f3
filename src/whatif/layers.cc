#include "whatif/layers.h"

#include <fmt/core.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <tuple>

#include "sim/metrics.h"

namespace powertrain::whatif {
namespace {

using graph::ExecutionGraph;

std::int64_t median(std::vector<std::int64_t> values) {
  if (values.empty()) return 0;
  const std::size_t mid = values.size() / 2;
  std::nth_element(values.begin(), values.begin() + static_cast<std::ptrdiff_t>(mid), values.end());
  return values[mid];
}

// "nn.Module: TransformerBlock_12" → {"TransformerBlock", 12}.
std::optional<std::pair<std::string, int>> parse_module_instance(const std::string& name) {
  constexpr std::string_view kPrefix = "nn.Module: ";
  if (name.rfind(kPrefix, 0) != 0) return std::nullopt;
  const std::size_t underscore = name.rfind('_');
  if (underscore == std::string::npos || underscore <= kPrefix.size() ||
      underscore + 1 >= name.size())
    return std::nullopt;
  int index = 0;
  for (std::size_t i = underscore + 1; i < name.size(); ++i) {
    if (name[i] < '0' || name[i] > '9' || index > 1'000'000) return std::nullopt;
    index = index * 10 + (name[i] - '0');
  }
  return std::make_pair(name.substr(kPrefix.size(), underscore - kPrefix.size()), index);
}

// Greedy left-to-right non-overlapping occurrences of `pattern` in `symbols` restricted to the
// positions listed in `positions` (a subsequence of the compute sequence).
std::vector<std::vector<std::size_t>> occurrences_of(const std::vector<std::uint32_t>& symbols,
                                                     const std::vector<std::size_t>& positions,
                                                     const std::vector<std::uint32_t>& pattern) {
  std::vector<std::vector<std::size_t>> found;
  const std::size_t p = pattern.size();
  for (std::size_t i = 0; p > 0 && i + p <= positions.size();) {
    bool match = true;
    for (std::size_t k = 0; k < p && match; ++k) match = symbols[positions[i + k]] == pattern[k];
    if (!match) {
      ++i;
      continue;
    }
    found.emplace_back(positions.begin() + static_cast<std::ptrdiff_t>(i),
                       positions.begin() + static_cast<std::ptrdiff_t>(i + p));
    i += p;
  }
  return found;
}

using Occurrences = std::vector<std::vector<std::size_t>>;

// Candidate blocks among `positions`: the longest tandem repeat's block, then, while it has one,
// the block of the longest repeat inside it (a whole microbatch's forward X^L, or 1F1B's steady
// "forward, backward" period X^L Y^L, contains the layer X).
std::vector<std::vector<std::uint32_t>> candidate_blocks(
    const std::vector<std::uint32_t>& symbols, const std::vector<std::size_t>& positions) {
  std::vector<std::uint32_t> sub(positions.size());
  for (std::size_t i = 0; i < positions.size(); ++i) sub[i] = symbols[positions[i]];
  // Bound the quadratic search to ~2e8 comparisons on huge ranks.
  const std::size_t max_period =
      std::clamp<std::size_t>(200'000'000 / std::max<std::size_t>(sub.size(), 1), 16, 4096);
  std::vector<std::vector<std::uint32_t>> chain;
  TandemRepeat repeat = longest_tandem_repeat(sub, max_period);
  while (repeat.copies >= 2) {
    const std::vector<std::uint32_t>& from = chain.empty() ? sub : chain.back();
    chain.emplace_back(from.begin() + static_cast<std::ptrdiff_t>(repeat.start),
                       from.begin() + static_cast<std::ptrdiff_t>(repeat.start + repeat.period));
    repeat = longest_tandem_repeat(chain.back(), max_period);
  }
  return chain;
}

std::size_t covered(const Occurrences& occurrences) {
  std::size_t n = 0;
  for (const auto& o : occurrences) n += o.size();
  return n;
}

// The forward and backward layer blocks: for each candidate first block, its occurrences and
// the best candidate block of the rest that occurs as often (a layer's forward and backward
// repeat equally often). A matched pair wins when it explains at least half as much as the best
// single block (which may be a whole microbatch, non-layer work included); among pairs, or among
// singles when nothing pairs, the one that covers the most, ties to the finer block. So a 1F1B
// period resolves to its layers, and a layer with repeated kernels inside ([a, a, c]) stays whole.
std::pair<Occurrences, Occurrences> layer_blocks(const std::vector<std::uint32_t>& symbols,
                                                 const std::vector<std::size_t>& positions) {
  std::pair<Occurrences, Occurrences> best_pair, best_single;
  std::size_t pair_cover = 0, single_cover = 0;
  for (const auto& block : candidate_blocks(symbols, positions)) {
    Occurrences first = occurrences_of(symbols, positions, block);
    if (first.size() < 2) continue;
    std::vector<char> used(symbols.size(), 0);
    for (const auto& o : first)
      for (std::size_t pos : o) used[pos] = 1;
    std::vector<std::size_t> rest;
    for (std::size_t pos : positions)
      if (!used[pos]) rest.push_back(pos);
    Occurrences second;
    for (const auto& other : candidate_blocks(symbols, rest)) {
      Occurrences found = occurrences_of(symbols, rest, other);
      if (found.size() == first.size() && covered(found) > covered(second))
        second = std::move(found);
    }
    const std::size_t cover = covered(first) + covered(second);
    if (!second.empty() && cover >= pair_cover) {
      pair_cover = cover;
      best_pair = {first, std::move(second)};
    }
    if (covered(first) >= single_cover) {
      single_cover = covered(first);
      best_single = {std::move(first), {}};
    }
  }
  return pair_cover > 0 && 2 * pair_cover >= single_cover ? best_pair : best_single;
}

LayerBlock to_block(const ExecutionGraph& graph, const std::vector<std::int32_t>& sequence,
                    const std::vector<std::vector<std::size_t>>& occurrences) {
  LayerBlock block;
  for (const auto& occurrence : occurrences) {
    std::vector<std::int32_t> tasks;
    tasks.reserve(occurrence.size());
    for (std::size_t pos : occurrence) tasks.push_back(sequence[pos]);
    block.occurrences.push_back(std::move(tasks));
  }
  if (!block.occurrences.empty())
    for (std::int32_t task : block.occurrences.front())
      block.kernel_names.push_back(graph.task_name(task));
  return block;
}

// Forward layers from "nn.Module: Class_N" host spans: the outermost class with ≥ 2 numbered
// instances. Returns the occurrences as positions in `sequence`, empty when there are none.
std::pair<std::string, std::vector<std::vector<std::size_t>>> annotated_layers(
    const ExecutionGraph& graph, int rank_index, const std::vector<std::int32_t>& sequence) {
  struct ClassSpans {
    std::set<int> instances;
    std::vector<std::size_t> spans;  // ParentSpan indices
  };
  std::map<std::string, ClassSpans> classes;
  const graph::RankInfo& rank = graph.ranks[rank_index];
  for (std::size_t s = 0; s < graph.parents.size(); ++s) {
    const graph::ParentSpan& span = graph.parents[s];
    if (graph.processors[span.processor].rank_index != rank_index) continue;
    const auto instance = parse_module_instance(rank.names[span.name]);
    if (!instance) continue;
    ClassSpans& c = classes[instance->first];
    c.instances.insert(instance->second);
    c.spans.push_back(s);
  }
  const auto contains = [&](std::size_t outer, std::size_t inner) {
    const graph::ParentSpan& a = graph.parents[outer];
    const graph::ParentSpan& b = graph.parents[inner];
    return a.input_start_ns <= b.input_start_ns &&
           b.input_start_ns + b.input_duration_ns <= a.input_start_ns + a.input_duration_ns &&
           outer != inner;
  };
  std::string best;
  for (const auto& [name, c] : classes) {
    if (c.instances.size() < 2) continue;
    // Nested: most of its spans lie inside spans of another repeated class (an embedding
    // Dropout_0 outside the blocks does not make Dropout a layer).
    bool nested = false;
    for (const auto& [other, d] : classes) {
      if (other == name || d.instances.size() < 2 || nested) continue;
      std::size_t inside = 0;
      for (std::size_t inner : c.spans)
        for (std::size_t outer : d.spans)
          if (contains(outer, inner)) {
            ++inside;
            break;
          }
      nested = 2 * inside > c.spans.size();
    }
    if (nested) continue;
    if (best.empty() || c.spans.size() > classes[best].spans.size()) best = name;
  }
  if (best.empty()) return {};

  std::vector<std::size_t> position_of(graph.task_count(), SIZE_MAX);
  for (std::size_t pos = 0; pos < sequence.size(); ++pos) position_of[sequence[pos]] = pos;
  std::vector<std::size_t> spans = classes[best].spans;
  std::sort(spans.begin(), spans.end(), [&](std::size_t a, std::size_t b) {
    return graph.parents[a].input_start_ns < graph.parents[b].input_start_ns;
  });
  std::vector<std::vector<std::size_t>> occurrences;
  for (std::size_t s : spans) {
    const graph::ParentSpan& span = graph.parents[s];
    std::vector<std::size_t> positions;
    for (std::int32_t t = span.first_leaf; t != graph::kNone && t <= span.last_leaf; ++t) {
      if (graph.processor[t] != span.processor) continue;
      for (std::uint32_t e = graph.edge_begin[t]; e < graph.edge_begin[t + 1]; ++e) {
        if (graph.edge_kind[e] != graph::EdgeKind::kLaunch) continue;
        const std::size_t pos = position_of[graph.edge_dst[e]];
        if (pos != SIZE_MAX) positions.push_back(pos);
      }
    }
    std::sort(positions.begin(), positions.end());
    if (!positions.empty()) occurrences.push_back(std::move(positions));
  }
  if (occurrences.size() < 2) return {};
  return {best, occurrences};
}

}  // namespace

std::vector<std::int32_t> compute_sequence(const ExecutionGraph& graph, int rank_index) {
  const graph::RankInfo& rank = graph.ranks[rank_index];
  std::vector<std::int32_t> tasks;
  for (std::int32_t t = rank.first_task; t < rank.end_task; ++t)
    if (graph::is_gpu(graph.kind[t]) && graph.nccl[t] == 0) tasks.push_back(t);
  std::stable_sort(tasks.begin(), tasks.end(), [&](std::int32_t a, std::int32_t b) {
    return graph.input_start_ns[a] < graph.input_start_ns[b];
  });
  return tasks;
}

TandemRepeat longest_tandem_repeat(const std::vector<std::uint32_t>& symbols,
                                   std::size_t max_period) {
  TandemRepeat best;
  const std::size_t n = symbols.size();
  const std::size_t top = std::min(n / 2, max_period);
  for (std::size_t p = 1; p <= top; ++p) {
    std::size_t run = 0;  // consecutive i with symbols[i] == symbols[i + p]
    for (std::size_t i = 0; i + p < n; ++i) {
      run = symbols[i] == symbols[i + p] ? run + 1 : 0;
      if (run < p) continue;
      // The repeated region is [i + 1 − run, i + p]: (run + p) / p whole copies.
      const std::size_t copies = (run + p) / p;
      if (copies * p > best.copies * best.period) best = {i + 1 - run, p, copies};
    }
  }
  return best;
}

namespace {

// detect_layers on the rank's compute sequence (computed once by the caller).
core::Result<LayerDetection> detect_in(const ExecutionGraph& graph, int rank_index,
                                       const std::vector<std::int32_t>& sequence) {
  std::vector<std::uint32_t> symbols(sequence.size());
  for (std::size_t i = 0; i < sequence.size(); ++i) symbols[i] = graph.name[sequence[i]];
  std::vector<std::size_t> all(sequence.size());
  std::iota(all.begin(), all.end(), std::size_t{0});

  LayerDetection detection;
  detection.rank_index = rank_index;
  auto [module_class, first] = annotated_layers(graph, rank_index, sequence);
  const bool annotated = !first.empty();
  Occurrences second;
  if (annotated) {
    detection.method = fmt::format("module annotations (nn.Module: {})", module_class);
    // The backward: the best block of what the forward layers leave, as often as they occur.
    std::vector<char> used(sequence.size(), 0);
    for (const auto& occurrence : first)
      for (std::size_t pos : occurrence) used[pos] = 1;
    std::vector<std::size_t> rest;
    for (std::size_t pos = 0; pos < sequence.size(); ++pos)
      if (!used[pos]) rest.push_back(pos);
    for (const auto& block : candidate_blocks(symbols, rest)) {
      Occurrences found = occurrences_of(symbols, rest, block);
      if (found.size() == first.size() && covered(found) > covered(second))
        second = std::move(found);
    }
  } else {
    std::tie(first, second) = layer_blocks(symbols, all);
    detection.method = "repeating block";
  }
  if (first.size() < 2)
    return core::Error{fmt::format(
        "rank {}: no repeated block of kernels among its {} GPU tasks (layer what-ifs need a "
        "model whose layers repeat)",
        graph.ranks[rank_index].rank, sequence.size())};

  // Module annotations only cover the forward; for a repeat, the earlier block is the forward.
  if (!annotated && !second.empty() && second.front().front() < first.front().front())
    std::swap(first, second);
  detection.forward = to_block(graph, sequence, first);
  detection.backward = to_block(graph, sequence, second);
  return detection;
}

}  // namespace

core::Result<LayerDetection> detect_layers(const ExecutionGraph& graph, int rank_index) {
  if (rank_index < 0 || rank_index >= static_cast<int>(graph.ranks.size()))
    return core::Error{fmt::format("rank index {} out of range", rank_index)};
  return detect_in(graph, rank_index, compute_sequence(graph, rank_index));
}

std::int64_t LayerProfile::forward_layer_ns() const {
  std::int64_t sum = 0;
  for (const Task& t : forward) sum += t.gap_ns + t.duration_ns;
  return sum;
}

std::int64_t LayerProfile::backward_layer_ns() const {
  std::int64_t sum = 0;
  for (const Task& t : backward) sum += t.gap_ns + t.duration_ns;
  return sum;
}

namespace {

// Per-position medians over the occurrences whose names match the modal name sequence.
// `position`: each task's index in its rank's compute sequence (−1 for others), to tell
// adjacent layers.
std::vector<LayerProfile::Task> block_tasks(const ExecutionGraph& graph,
                                            const std::vector<const LayerBlock*>& blocks,
                                            const std::vector<std::int64_t>& position) {
  std::map<std::vector<std::string>, int> votes;
  for (const LayerBlock* block : blocks)
    for (const auto& occurrence : block->occurrences) {
      std::vector<std::string> names;
      for (std::int32_t t : occurrence) names.push_back(graph.task_name(t));
      ++votes[names];
    }
  if (votes.empty()) return {};
  const std::vector<std::string> modal =
      std::max_element(votes.begin(), votes.end(), [](const auto& a, const auto& b) {
        return a.second < b.second;
      })->first;
  const std::size_t k = modal.size();
  std::vector<std::vector<std::int64_t>> durations(k), gaps(k);
  std::vector<std::int64_t> layer_gaps;
  for (const LayerBlock* block : blocks) {
    std::int32_t previous_last = graph::kNone;
    for (const auto& occurrence : block->occurrences) {
      bool match = occurrence.size() == k;
      for (std::size_t i = 0; match && i < k; ++i)
        match = graph.task_name(occurrence[i]) == modal[i];
      if (match) {
        for (std::size_t i = 0; i < k; ++i) {
          durations[i].push_back(graph.input_duration_ns[occurrence[i]]);
          if (i > 0)
            gaps[i].push_back(std::max<std::int64_t>(
                0, graph.input_start_ns[occurrence[i]] - graph.input_end_ns(occurrence[i - 1])));
        }
      }
      // Adjacent layers (nothing else ran between them) tell the gap between layers.
      if (previous_last != graph::kNone &&
          position[occurrence.front()] == position[previous_last] + 1)
        layer_gaps.push_back(std::max<std::int64_t>(
            0, graph.input_start_ns[occurrence.front()] - graph.input_end_ns(previous_last)));
      previous_last = occurrence.back();
    }
  }
  std::vector<LayerProfile::Task> tasks(k);
  for (std::size_t i = 0; i < k; ++i) {
    tasks[i].name = modal[i];
    tasks[i].duration_ns = median(durations[i]);
    tasks[i].gap_ns = i == 0 ? median(layer_gaps) : median(gaps[i]);
  }
  return tasks;
}

}  // namespace

namespace {

struct PipelineTransfers {
  std::int64_t median_wire_ns = 0;
  int first_pair = 0;  // transfers between the first two ranks
};

// Pipeline transfers: send/recv pairs (2-member groups of point-to-point kind, not a 2-rank
// all-reduce); those between the first two ranks count the microbatches: an activation
// forward per microbatch and step, and a gradient back when there is a backward.
PipelineTransfers pipeline_transfers(const ExecutionGraph& graph) {
  const auto point_to_point = [](const graph::CollectiveGroup& group) {
    for (std::string_view marker : {"send", "recv", "Send", "Recv"})
      if (group.collective.find(marker) != std::string::npos ||
          group.name.find(marker) != std::string::npos)
        return true;
    return false;
  };
  std::vector<std::int64_t> p2p_wire_ns;
  int first_pair_transfers = 0;
  for (const graph::CollectiveGroup& group : graph.collectives) {
    if (group.member_count != 2 || !point_to_point(group)) continue;
    const std::int32_t a = graph.collective_members[group.first_member];
    const std::int32_t b = graph.collective_members[group.first_member + 1];
    p2p_wire_ns.push_back(std::min(graph.duration_ns[a], graph.duration_ns[b]));
    const int ra = graph.rank_index_of(a), rb = graph.rank_index_of(b);
    if (std::min(ra, rb) == 0 && std::max(ra, rb) == 1) ++first_pair_transfers;
  }
  return {median(p2p_wire_ns), first_pair_transfers};
}

// The GPU time of rank `d` outside its layers, per microbatch and step: the first and last
// stages keep theirs (with one rank, its whole non-layer wall time), the middle stages' is
// dropped (counted in dropped_ns).
void add_non_layer_time(const ExecutionGraph& graph, const LayerDetection& d,
                        const std::vector<std::int32_t>& sequence, const sim::TimeWindow& window,
                        int per_stage_repeats, LayerProfile& profile) {
  std::vector<char> in_layer(graph.task_count(), 0);
  for (const LayerBlock* block : {&d.forward, &d.backward})
    for (const auto& occurrence : block->occurrences)
      for (std::int32_t t : occurrence) in_layer[t] = 1;
  const std::int64_t first_layer_start =
      graph.input_start_ns[d.forward.occurrences.front().front()];
  std::int64_t before = 0, after = 0;
  for (std::int32_t t : sequence) {
    if (in_layer[t]) continue;
    (graph.input_start_ns[t] < first_layer_start ? before : after) += graph.input_duration_ns[t];
  }
  const bool first = d.rank_index == 0;
  const bool last = d.rank_index == profile.stages - 1;
  if (first && last) {
    // One rank: keep its whole non-layer wall time (host-bound idle included), so the job
    // rebuilt at its own shape has its step time: the span before the first layer, and the
    // rest of the window beyond the layers.
    const sim::TimeWindow& w = window;
    // The lead of every step: from the step's start to its first forward layer.
    std::int64_t lead = 0;
    const std::vector<std::int32_t>& steps = graph.ranks[d.rank_index].profiler_steps;
    if (steps.size() < 2) {
      lead = std::max<std::int64_t>(0, first_layer_start - w.start_ns);
    } else {
      for (std::int32_t span : steps) {
        const std::int64_t step_start = graph.parents[span].input_start_ns;
        for (const auto& occurrence : d.forward.occurrences) {
          const std::int64_t t = graph.input_start_ns[occurrence.front()];
          if (t < step_start) continue;
          lead += t - step_start;
          break;
        }
      }
    }
    const std::int64_t layer_ns = static_cast<std::int64_t>(d.forward.occurrences.size()) *
                                  (profile.forward_layer_ns() + profile.backward_layer_ns());
    const std::int64_t rest = std::max<std::int64_t>(0, w.length_ns() - lead - layer_ns);
    profile.first_stage_extra_ns = lead / per_stage_repeats;
    profile.last_stage_extra_ns = rest / per_stage_repeats;
  } else if (first) {
    profile.first_stage_extra_ns = (before + after) / per_stage_repeats;
  } else if (last) {
    profile.last_stage_extra_ns = (before + after) / per_stage_repeats;
  } else {
    profile.dropped_ns += (before + after) / profile.steps;
  }
}

}  // namespace

core::Result<LayerProfile> profile_layers(const ExecutionGraph& graph, int input_microbatches) {
  if (graph.ranks.empty()) return core::Error{"no ranks to profile"};
  LayerProfile profile;
  profile.stages = static_cast<int>(graph.ranks.size());
  std::vector<std::vector<std::int32_t>> sequences(profile.stages);
  std::vector<std::int64_t> position(graph.task_count(), -1);
  std::vector<LayerDetection> detections;
  for (int r = 0; r < profile.stages; ++r) {
    sequences[r] = compute_sequence(graph, r);
    for (std::size_t i = 0; i < sequences[r].size(); ++i)
      position[sequences[r][i]] = static_cast<std::int64_t>(i);
    auto detection = detect_in(graph, r, sequences[r]);
    if (!detection) return detection.error();
    detections.push_back(std::move(*detection));
  }
  profile.method = detections.front().method;

  // Several profiled steps repeat every layer once a step.
  const std::vector<sim::TimeWindow> windows = sim::step_windows(graph, graph.input_start_ns, [&] {
    std::vector<std::int64_t> ends(graph.task_count());
    for (std::int32_t t = 0; t < graph.task_count(); ++t) ends[t] = graph.input_end_ns(t);
    return ends;
  }());
  profile.steps = std::max(windows.front().steps, 1);

  const PipelineTransfers transfers = pipeline_transfers(graph);
  profile.p2p_ns = transfers.median_wire_ns;
  const int first_pair_transfers = transfers.first_pair;
  const bool has_backward = !detections.front().backward.occurrences.empty();
  if (input_microbatches > 0) {
    profile.microbatches = input_microbatches;
  } else if (profile.stages == 1) {
    profile.microbatches = 1;
  } else {
    const int per_microbatch = profile.steps * (has_backward ? 2 : 1);
    if (first_pair_transfers < per_microbatch || first_pair_transfers % per_microbatch != 0)
      return core::Error{fmt::format(
          "cannot infer the input's microbatches from {} send/recv pair(s) between the first two "
          "ranks over {} step(s) (give the input's microbatch count)",
          first_pair_transfers, profile.steps)};
    profile.microbatches = first_pair_transfers / per_microbatch;
  }

  const int per_stage_repeats = profile.microbatches * profile.steps;
  std::vector<const LayerBlock*> forwards, backwards;
  for (const LayerDetection& d : detections) {
    const int occurrences = static_cast<int>(d.forward.occurrences.size());
    if (occurrences % per_stage_repeats != 0)
      return core::Error{fmt::format(
          "rank {}: {} forward layer occurrences are not a multiple of {} microbatches x {} "
          "steps",
          graph.ranks[d.rank_index].rank, occurrences, profile.microbatches, profile.steps)};
    profile.layers_per_stage.push_back(occurrences / per_stage_repeats);
    profile.layers += occurrences / per_stage_repeats;
    forwards.push_back(&d.forward);
    if (!d.backward.occurrences.empty()) backwards.push_back(&d.backward);
  }
  if (!backwards.empty() && backwards.size() != detections.size())
    return core::Error{"some ranks have a backward block and others do not"};
  profile.forward = block_tasks(graph, forwards, position);
  profile.backward = block_tasks(graph, backwards, position);

  // Non-layer GPU busy time of each rank.
  for (const LayerDetection& d : detections) {
    add_non_layer_time(graph, d, sequences[d.rank_index], windows.front(), per_stage_repeats,
                       profile);
  }
  return profile;
}

}  // namespace powertrain::whatif
