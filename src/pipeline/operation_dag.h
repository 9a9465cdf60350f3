// The coarse DAG the planners optimize: one node per pipeline instruction plus constant-time nodes.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace powertrain::pipeline {

/// What a node does. Forward/backward/recompute carry time–energy options from a profile;
/// the others are constant-time (a single option).
enum class InstructionKind { kForward, kBackward, kRecompute, kDataLoading, kOptimizerStep, kP2P };

/// Lower-case name as used in profiles and plan files ("forward", "backward", "recompute", ...).
std::string_view instruction_name(InstructionKind kind);
/// Inverse of instruction_name for the profiled kinds (forward, backward, recompute); nullopt else.
std::optional<InstructionKind> parse_profiled_instruction(std::string_view name);
/// True for kinds whose time and energy come from a profile.
bool is_profiled(InstructionKind kind);

/// One node. `stage` is the profile stage (a model chunk id for interleaved schedules);
/// `gpu` the pipeline rank that executes it (-1 for link transfers); `slot` its position in that
/// GPU's execution order (-1 when not on a GPU).
struct Operation {
  InstructionKind kind = InstructionKind::kForward;
  int stage = 0;
  int gpu = 0;
  int microbatch = 0;
  int slot = -1;
  double constant_time_s = 0.0;  // only for constant-time kinds
};

/// Nodes with dependency edges. Edges always point from an earlier to a later node in some
/// topological order; builders guarantee acyclicity and that `topological_order` is valid.
struct OperationDag {
  int num_gpus = 0;
  std::vector<Operation> operations;
  std::vector<std::vector<int>> successors;
  std::vector<std::vector<int>> predecessors;
  std::vector<std::vector<int>> gpu_order;  // per GPU, operation ids in execution order
  std::vector<int> topological_order;

  int size() const { return static_cast<int>(operations.size()); }
  /// Adds a node; returns its id.
  int add_operation(const Operation& operation);
  /// Adds a dependency `from` -> `to` (ignored if already present).
  void add_edge(int from, int to);
  /// Computes topological_order (Kahn's algorithm, ties broken by id for determinism).
  /// Returns false if the graph has a cycle.
  bool finalize();
  /// Human label such as "F3@s2" (forward, microbatch 3, stage 2).
  std::string label(int id) const;
};

}  // namespace powertrain::pipeline
