// Finding the repeated layers of a model in an execution graph (Lumos §3.4) and measuring what
// one layer costs, so that structural what-ifs (other pipeline degree, microbatches, layer count)
// can rebuild the job from per-layer pieces.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/result.h"
#include "graph/execution_graph.h"

namespace powertrain::whatif {

/// One repeated block: the GPU tasks of each occurrence, in time order.
struct LayerBlock {
  std::vector<std::string> kernel_names;               // one occurrence's task names, in order
  std::vector<std::vector<std::int32_t>> occurrences;  // task ids per occurrence (time order)
};

struct LayerDetection {
  int rank_index = 0;
  /// "module annotations (nn.Module: X)" or "repeating block" (how the forward block was found).
  std::string method;
  LayerBlock forward;
  LayerBlock backward;  // empty (no occurrences) for forward-only traces
};

/// GPU tasks of a rank that are not NCCL work, in measured start order (ties by task id): the
/// sequence the layer search runs on.
std::vector<std::int32_t> compute_sequence(const graph::ExecutionGraph& graph, int rank_index);

/// The longest tandem repeat of `symbols` ((block)^c with c ≥ 2, maximizing c × block length;
/// ties to the shorter block). Returns {start, block length, copies}; copies = 0 when none.
/// O(n × min(n / 2, max_period)); `max_period` bounds the work on huge sequences.
struct TandemRepeat {
  std::size_t start = 0;
  std::size_t period = 0;
  std::size_t copies = 0;
};
TandemRepeat longest_tandem_repeat(const std::vector<std::uint32_t>& symbols,
                                   std::size_t max_period);

/// Finds the layers of one rank. Module annotations ("nn.Module: Name_N" host spans with at least
/// two numbered instances, outermost class) give the forward layers when present; otherwise the
/// longest tandem repeat of kernel names is the forward (or the backward, whichever comes first
/// in time), and every non-overlapping occurrence of its pattern counts. The backward block is
/// the longest tandem repeat of what remains. Error when no block repeats.
core::Result<LayerDetection> detect_layers(const graph::ExecutionGraph& graph, int rank_index);

/// What one layer costs and what runs outside the layers, from the measured timeline.
struct LayerProfile {
  std::string method;
  int stages = 1;        // pipeline stages of the input (its ranks, in rank order)
  int microbatches = 1;  // of the input
  int steps = 1;         // profiled steps in the input (ProfilerStep#N spans)
  int layers = 0;        // the whole model's layers (all stages)
  std::vector<int> layers_per_stage;
  // One layer's forward and backward GPU tasks: name, median duration and median idle gap
  // before the task (gap of the first task = median gap between adjacent layers).
  struct Task {
    std::string name;
    std::int64_t duration_ns = 0;
    std::int64_t gap_ns = 0;
  };
  std::vector<Task> forward;
  std::vector<Task> backward;
  std::int64_t forward_layer_ns() const;
  std::int64_t backward_layer_ns() const;
  /// Non-layer time per microbatch of the first and last stage (embedding; head, loss, their
  /// backward, optimizer). For a one-rank input, wall time (host-bound idle included: before the
  /// first layer, and the rest of the step beyond the layers); for a pipeline, GPU busy time.
  std::int64_t first_stage_extra_ns = 0;
  std::int64_t last_stage_extra_ns = 0;
  /// Median wire time of one pipeline send/recv (0 when the input has none).
  std::int64_t p2p_ns = 0;
  /// Non-layer GPU time that the profile leaves out (middle stages' extras), per step.
  std::int64_t dropped_ns = 0;
};

/// Builds the profile from the ranks of `graph` taken as the stages of one pipeline (rank order).
/// `input_microbatches` ≤ 0 infers it: 1 for one rank, else half the number of 2-member
/// collectives (send/recv) between the first two ranks.
core::Result<LayerProfile> profile_layers(const graph::ExecutionGraph& graph,
                                          int input_microbatches = 0);

}  // namespace powertrain::whatif
