#include "kareus/partition.h"

#include <fmt/core.h>

#include <algorithm>
#include <tuple>

namespace powertrain::kareus {

using device::WorkKind;

device::Work nanobatch_work(const device::Work& work) {
  device::Work half = work;
  half.flops *= 0.5;
  half.memory_bytes *= 0.5;
  half.link_bytes *= 0.5;
  return half;
}

namespace {

// Merges consecutive memory-bound ops into one launch slot (short kernels: more launch timings
// would add little, §4.5).
std::vector<Kernel> to_kernels(const std::vector<workload::Op>& ops) {
  std::vector<Kernel> kernels;
  for (const workload::Op& op : ops) {
    const device::Work w = nanobatch_work(op.work);
    if (!kernels.empty() && w.kind == WorkKind::kMemoryBound &&
        kernels.back().work.kind == WorkKind::kMemoryBound) {
      Kernel& last = kernels.back();
      last.name += "+" + op.name;
      last.work.flops += w.flops;
      last.work.memory_bytes += w.memory_bytes;
    } else {
      kernels.push_back({op.name, w});
    }
  }
  return kernels;
}

auto work_key(const device::Work& w) {
  return std::make_tuple(static_cast<int>(w.kind), static_cast<int>(w.precision), w.flops,
                         w.memory_bytes, w.link_bytes, w.backward);
}

bool same_kernels(const PartitionType& a, const std::vector<Kernel>& compute, const Kernel& comm) {
  if (a.compute.size() != compute.size() || work_key(a.comm.work) != work_key(comm.work))
    return false;
  for (std::size_t i = 0; i < compute.size(); ++i)
    if (work_key(a.compute[i].work) != work_key(compute[i].work)) return false;
  return true;
}

std::string segment_name(const std::vector<Kernel>& kernels) {
  if (kernels.empty()) return "";
  if (kernels.size() == 1) return kernels.front().name;
  return kernels.front().name + ".." + kernels.back().name;
}

}  // namespace

MicrobatchWork build_microbatch_work(const std::vector<workload::Op>& ops, bool backward,
                                     int group_size) {
  MicrobatchWork out;
  out.backward = backward;
  out.sequential = ops;
  // Segments S_0..S_n of compute ops and the collectives C_0..C_{n-1} between them; consecutive
  // collectives are fused into one kernel sharing an SM allocation (§4.5).
  std::vector<std::vector<workload::Op>> segments(1);
  std::vector<Kernel> collectives;
  std::vector<int> groups;  // per collective: GPUs in its group (the largest of fused ones)
  bool last_was_collective = false;
  for (const workload::Op& op : ops) {
    if (op.work.kind == WorkKind::kCollective) {
      const device::Work w = nanobatch_work(op.work);
      const int group = op.group_size > 0 ? op.group_size : group_size;
      if (last_was_collective) {
        collectives.back().name += "+" + op.name;
        collectives.back().work.memory_bytes += w.memory_bytes;
        collectives.back().work.link_bytes += w.link_bytes;
        groups.back() = std::max(groups.back(), group);
      } else {
        collectives.push_back({op.name, w});
        groups.push_back(group);
        segments.emplace_back();
      }
      last_was_collective = true;
    } else {
      segments.back().push_back(op);
      last_was_collective = false;
    }
  }
  std::vector<std::vector<Kernel>> kernels;
  for (const auto& segment : segments) kernels.push_back(to_kernels(segment));
  if (collectives.empty()) {
    for (const Kernel& k : kernels.front()) out.solo.push_back(k);
    for (const Kernel& k : kernels.front()) out.solo.push_back(k);  // both nanobatches
    return out;
  }
  const char* prefix = backward ? "bwd" : "fwd";
  auto add_partition = [&](const Kernel& comm, int group, const std::vector<Kernel>& compute) {
    if (compute.empty()) {
      out.solo.push_back(comm);
      return;
    }
    for (PartitionType& type : out.partitions) {
      if (type.group_size == group && same_kernels(type, compute, comm)) {
        ++type.count;
        return;
      }
    }
    PartitionType type;
    type.name = fmt::format("{} {} || {}", prefix, comm.name, segment_name(compute));
    type.backward = backward;
    type.compute = compute;
    type.comm = comm;
    type.count = 1;
    type.group_size = group;
    out.partitions.push_back(std::move(type));
  };
  out.solo = kernels.front();  // A:S_0
  for (std::size_t k = 0; k < collectives.size(); ++k) {
    add_partition(collectives[k], groups[k], kernels[k]);      // A:C_k ‖ B:S_k
    add_partition(collectives[k], groups[k], kernels[k + 1]);  // B:C_k ‖ A:S_{k+1}
  }
  for (const Kernel& k : kernels.back()) out.solo.push_back(k);  // B:S_n
  return out;
}

}  // namespace powertrain::kareus
