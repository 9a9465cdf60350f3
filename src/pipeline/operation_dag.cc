// OperationDag bookkeeping: labels, edges and a deterministic topological order.
#include "pipeline/operation_dag.h"

#include <fmt/core.h>

#include <algorithm>
#include <queue>

namespace powertrain::pipeline {

std::string_view instruction_name(InstructionKind kind) {
  switch (kind) {
    case InstructionKind::kForward:
      return "forward";
    case InstructionKind::kBackward:
      return "backward";
    case InstructionKind::kRecompute:
      return "recompute";
    case InstructionKind::kDataLoading:
      return "data_loading";
    case InstructionKind::kOptimizerStep:
      return "optimizer_step";
    case InstructionKind::kP2P:
      return "p2p";
  }
  return "unknown";
}

std::optional<InstructionKind> parse_profiled_instruction(std::string_view name) {
  if (name == "forward") return InstructionKind::kForward;
  if (name == "backward") return InstructionKind::kBackward;
  if (name == "recompute") return InstructionKind::kRecompute;
  return std::nullopt;
}

bool is_profiled(InstructionKind kind) {
  return kind == InstructionKind::kForward || kind == InstructionKind::kBackward ||
         kind == InstructionKind::kRecompute;
}

int OperationDag::add_operation(const Operation& operation) {
  operations.push_back(operation);
  successors.emplace_back();
  predecessors.emplace_back();
  return size() - 1;
}

void OperationDag::add_edge(int from, int to) {
  auto& out = successors[from];
  if (std::find(out.begin(), out.end(), to) != out.end()) return;
  out.push_back(to);
  predecessors[to].push_back(from);
}

bool OperationDag::finalize() {
  const int n = size();
  std::vector<int> indegree(n);
  for (int v = 0; v < n; ++v) indegree[v] = static_cast<int>(predecessors[v].size());
  std::priority_queue<int, std::vector<int>, std::greater<>> ready;
  for (int v = 0; v < n; ++v) {
    if (indegree[v] == 0) ready.push(v);
  }
  topological_order.clear();
  topological_order.reserve(n);
  while (!ready.empty()) {
    const int v = ready.top();
    ready.pop();
    topological_order.push_back(v);
    for (int w : successors[v]) {
      if (--indegree[w] == 0) ready.push(w);
    }
  }
  return static_cast<int>(topological_order.size()) == n;
}

std::string OperationDag::label(int id) const {
  const Operation& op = operations[id];
  switch (op.kind) {
    case InstructionKind::kForward:
      return fmt::format("F{}@s{}", op.microbatch, op.stage);
    case InstructionKind::kBackward:
      return fmt::format("B{}@s{}", op.microbatch, op.stage);
    case InstructionKind::kRecompute:
      return fmt::format("R{}@s{}", op.microbatch, op.stage);
    case InstructionKind::kDataLoading:
      return fmt::format("load@gpu{}", op.gpu);
    case InstructionKind::kOptimizerStep:
      return fmt::format("optim@gpu{}", op.gpu);
    case InstructionKind::kP2P:
      return fmt::format("p2p{}@s{}", op.microbatch, op.stage);
  }
  return "?";
}

}  // namespace powertrain::pipeline
