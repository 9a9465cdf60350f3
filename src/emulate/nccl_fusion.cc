// NCCL calls of one ncclGroupStart/End block on one stream become one kernel (as NCCL launches
// them); the kernels are joined across ranks through the collation's groups, re-formed among the
// simulated representatives ("images" of the groups by rank class), with a union-find that
// refuses to put two kernels of one stream into one join (that join could never complete).
#include "emulate/nccl_fusion.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

namespace powertrain::emulate {

std::int64_t to_ns(double seconds) {
  return std::max<std::int64_t>(1, static_cast<std::int64_t>(std::llround(seconds * 1e9)));
}

namespace {

// A fused NCCL kernel of one simulated process.
struct Unit {
  std::int32_t sim = 0;  // index into the simulated processes
  std::int32_t device = 0;
  std::int64_t stream = 0;
  std::vector<std::int32_t> records;
};

// Union-find over units; a component keeps the (process, device, stream) lanes of its units.
class Components {
 public:
  explicit Components(const std::vector<Unit>& units)
      : parent_(units.size()), lanes_(units.size()) {
    for (std::size_t u = 0; u < units.size(); ++u) {
      parent_[u] = static_cast<std::int32_t>(u);
      lanes_[u].insert({units[u].sim, units[u].device, units[u].stream});
    }
  }
  std::int32_t find(std::int32_t u) {
    while (parent_[u] != u) u = parent_[u] = parent_[parent_[u]];
    return u;
  }
  // False when the two components share a lane (the join would wait on itself).
  bool unite(std::int32_t a, std::int32_t b) {
    a = find(a);
    b = find(b);
    if (a == b) return true;
    if (lanes_[a].size() < lanes_[b].size()) std::swap(a, b);
    for (const auto& lane : lanes_[b]) {
      if (lanes_[a].count(lane) != 0) return false;
    }
    lanes_[a].insert(lanes_[b].begin(), lanes_[b].end());
    lanes_[b].clear();
    parent_[b] = a;
    return true;
  }

 private:
  std::vector<std::int32_t> parent_;
  std::vector<std::set<std::tuple<std::int32_t, std::int32_t, std::int64_t>>> lanes_;
};

// What a fused kernel's collectives are: all point-to-point, all of one kind, or a mix.
enum class Mix { kPointToPoint, kSame, kGroup };
Mix mix_of(const std::vector<Collective>& kinds) {
  bool p2p = true;
  bool same = true;
  for (Collective k : kinds) {
    p2p = p2p && is_p2p(k);
    same = same && k == kinds.front();
  }
  return p2p ? Mix::kPointToPoint : same ? Mix::kSame : Mix::kGroup;
}

std::string kernel_name_of(const std::vector<Collective>& kinds) {
  static constexpr const char* kNames[] = {"AllReduce", "AllGather", "ReduceScatter", "Broadcast",
                                           "Reduce",    "SendRecv",  "SendRecv",      "AllToAll"};
  switch (mix_of(kinds)) {
    case Mix::kPointToPoint:
      return "ncclDevKernel_SendRecv";
    case Mix::kSame:
      return std::string("ncclDevKernel_") + kNames[static_cast<int>(kinds.front())];
    case Mix::kGroup:
      break;
  }
  return "ncclDevKernel_Group";
}

std::string collective_name_of(const std::vector<Collective>& kinds) {
  switch (mix_of(kinds)) {
    case Mix::kPointToPoint:
      return "sendrecv";
    case Mix::kSame:
      return std::string(to_string(kinds.front()));
    case Mix::kGroup:
      break;
  }
  return "group";
}

// NCCL calls → fused kernels: consecutive calls on one thread with the same nonzero group id
// (an ncclGroupStart/End block) share a kernel per (device, stream).
std::vector<Unit> form_units(const NcclFusionContext& c) {
  std::vector<Unit> fused;
  for (std::size_t s = 0; s < c.simulated.size(); ++s) {
    const ProcessTrace& trace = c.procs[c.simulated[s]];
    struct Open {
      std::int64_t group = 0;
      std::map<std::pair<std::int32_t, std::int64_t>, std::int32_t> units;
    };
    std::unordered_map<std::int32_t, Open> open;  // per thread
    for (std::size_t i = 0; i < trace.records.size(); ++i) {
      const Record& r = trace.records[i];
      Open& o = open[r.tid];
      if (r.op != OpKind::kNccl) {
        if (r.op != OpKind::kSetDevice) o = Open{};
        continue;
      }
      if (r.group == 0 || r.group != o.group) o = Open{};
      o.group = r.group;
      const auto lane = std::make_pair(r.device, r.stream);
      auto it = o.units.find(lane);
      std::int32_t u;
      if (it == o.units.end() || r.group == 0) {
        u = static_cast<std::int32_t>(fused.size());
        fused.push_back({static_cast<std::int32_t>(s), r.device, r.stream, {}});
        if (r.group != 0) o.units[lane] = u;
      } else {
        u = it->second;
      }
      fused[u].records.push_back(static_cast<std::int32_t>(i));
    }
  }
  return fused;
}

// Joins units through the collation's groups, re-formed by rank class, and gives each fused
// kernel its duration: the sum of its collectives plus the longest of its P2P transfers (sends
// and receives of a group run concurrently).
void join_units(const NcclFusionContext& c, const std::vector<Unit>& units,
                std::vector<TimelineInput>& inputs, std::vector<trace::TraceWarning>& warnings,
                const std::function<void(int)>& count_use) {
  const Collation& col = c.collation;
  const RankClasses& cls = c.classes;
  std::map<std::vector<std::pair<std::int32_t, std::int32_t>>, std::int32_t> image_of_key;
  std::vector<std::int32_t> image_of_group(col.groups.size(), -1);
  std::vector<std::vector<std::int32_t>> image_units;
  for (std::size_t u = 0; u < units.size(); ++u) {
    const std::int32_t p = c.simulated[units[u].sim];
    for (std::int32_t i : units[u].records) {
      const std::int32_t g = col.group_of_record[p][i];
      if (g < 0) continue;
      if (image_of_group[g] < 0) {
        std::vector<std::pair<std::int32_t, std::int32_t>> key;
        for (const OpRef& m : col.groups[g].members) {
          key.emplace_back(cls.class_of[m.process], m.record);
        }
        std::sort(key.begin(), key.end());
        key.erase(std::unique(key.begin(), key.end()), key.end());
        auto [it, inserted] =
            image_of_key.try_emplace(std::move(key), static_cast<std::int32_t>(image_units.size()));
        if (inserted) image_units.emplace_back();
        image_of_group[g] = it->second;
      }
      image_units[image_of_group[g]].push_back(static_cast<std::int32_t>(u));
    }
  }
  Components components(units);
  for (const auto& members : image_units) {
    for (std::size_t k = 1; k < members.size(); ++k) {
      if (!components.unite(members.front(), members[k])) {
        graph::add_warning(warnings,
                           "collectives not joined (fused calls would wait on their own stream)",
                           fmt::format("{}: a group of NCCL calls pairs with two kernels of one "
                                       "stream on a peer",
                                       c.procs[c.simulated[units[members[k]].sim]].source));
      }
    }
  }
  std::vector<std::int32_t> component_id(units.size(), -1);
  std::vector<std::int32_t> component_size;
  for (std::size_t u = 0; u < units.size(); ++u) {
    const std::int32_t root = components.find(static_cast<std::int32_t>(u));
    if (component_id[root] < 0) {
      component_id[root] = static_cast<std::int32_t>(component_size.size());
      component_size.push_back(0);
    }
    ++component_size[component_id[root]];
  }
  for (std::size_t u = 0; u < units.size(); ++u) {
    const Unit& unit = units[u];
    const std::int32_t p = c.simulated[unit.sim];
    const ProcessTrace& trace = c.procs[p];
    TimelineInput& in = inputs[unit.sim];
    double collectives_s = 0.0;
    double p2p_s = 0.0;
    std::int64_t bytes = 0;
    std::vector<Collective> kinds;
    int used = -1;
    for (std::int32_t i : unit.records) {
      const Record& r = trace.records[i];
      const std::int32_t g = col.group_of_record[p][i];
      KernelQuery q;
      q.record = &r;
      q.name = trace.str(r.name);
      q.group_size = is_p2p(r.collective) ? 2 : r.comm_size;
      q.spans_nodes = g >= 0 ? col.groups[g].spans_nodes : r.comm_size > c.gpus_per_node;
      if (q.spans_nodes) {
        const int per_node = std::max(c.gpus_per_node, 1);
        q.nodes = std::max(2, (q.group_size + per_node - 1) / per_node);
      }
      const auto [estimate, by] = c.chain.estimate(q, c.gpu);
      if (used < 0) used = by;
      if (is_p2p(r.collective)) {
        p2p_s = std::max(p2p_s, estimate.seconds);
      } else {
        collectives_s += estimate.seconds;
      }
      bytes += r.bytes;
      kinds.push_back(r.collective);
    }
    count_use(used);
    const std::int32_t launch = unit.records.back();
    const std::int32_t root = component_id[components.find(static_cast<std::int32_t>(u))];
    NcclKernel k;
    k.launch_record = launch;
    k.name = kernel_name_of(kinds);
    k.collective = collective_name_of(kinds);
    k.group_key = fmt::format("emulated-{}", root);
    k.group_size = component_size[root];
    k.bytes = bytes;
    in.nccl_of_record[launch] = static_cast<std::int32_t>(in.nccl.size());
    in.nccl.push_back(std::move(k));
    in.work_ns[launch] = to_ns(collectives_s + p2p_s);
  }
}

}  // namespace

void fuse_nccl_calls(const NcclFusionContext& context, std::vector<TimelineInput>& inputs,
                     std::vector<trace::TraceWarning>& warnings,
                     const std::function<void(int)>& count_use) {
  join_units(context, form_units(context), inputs, warnings, count_use);
}

}  // namespace powertrain::emulate
