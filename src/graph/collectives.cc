// Cross-rank collective matching and the edge store. A collective kernel's measured duration
// includes waiting for the last peer, so matched members are replayed with a join (sim/).
#include "graph/collectives.h"

#include <fmt/core.h>

#include <algorithm>
#include <string>
#include <string_view>
#include <unordered_map>

namespace powertrain::graph::detail {

namespace {

// "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, ...)" →
// "ncclKernel_AllReduce_RING_LL_Sum_float"
std::string_view kernel_base_name(std::string_view name) { return name.substr(0, name.find('(')); }

}  // namespace

void match_collectives(const std::vector<const trace::RankTrace*>& traces, ExecutionGraph& graph) {
  std::unordered_map<std::string, std::int32_t> group_of_key;
  std::vector<std::vector<std::int32_t>> members;
  std::vector<const trace::CollectiveInfo*> infos;
  std::vector<std::int32_t> expected;
  const std::int32_t loaded = static_cast<std::int32_t>(traces.size());
  std::string key;
  for (std::size_t r = 0; r < traces.size(); ++r) {
    const trace::RankTrace& trace = *traces[r];
    const RankInfo& rank = graph.ranks[r];
    std::unordered_map<std::string, std::int64_t> ordinal;  // per process group on this rank
    for (std::int32_t task = rank.first_task; task < rank.end_task; ++task) {
      if (!graph.nccl[task]) continue;
      ++graph.stats.collectives;
      const trace::TraceEvent& e = trace.events[graph.event_index[task]];
      const trace::CollectiveInfo* info =
          e.collective >= 0 && static_cast<std::size_t>(e.collective) < trace.collectives.size()
              ? &trace.collectives[e.collective]
              : nullptr;
      const std::string group = info != nullptr ? info->process_group : std::string();
      if (info != nullptr && info->sequence >= 0) {
        key = fmt::format("{}\x1fs{}", group, info->sequence);
      } else {
        key = fmt::format("{}\x1fo{}", group, ordinal[group]++);
      }
      auto [it, inserted] =
          group_of_key.try_emplace(key, static_cast<std::int32_t>(members.size()));
      if (inserted) {
        members.emplace_back();
        infos.push_back(info);
        std::int32_t size = loaded;
        if (info != nullptr && info->group_size > 0) {
          size = static_cast<std::int32_t>(info->group_size);
        } else if (trace.world_size > 1) {
          size = trace.world_size;
        }
        expected.push_back(size);
      }
      members[it->second].push_back(task);
    }
  }
  for (std::size_t g = 0; g < members.size(); ++g) {
    CollectiveGroup group;
    group.first_member = static_cast<std::int32_t>(graph.collective_members.size());
    group.member_count = static_cast<std::int32_t>(members[g].size());
    group.expected_members = expected[g];
    group.joined = group.member_count >= 2 && group.member_count == group.expected_members;
    const std::int32_t first = members[g].front();
    group.name = graph.task_name(first);
    if (infos[g] != nullptr) {
      group.collective = infos[g]->name;
      const std::int64_t elements = std::max(infos[g]->in_elements, infos[g]->out_elements);
      if (elements > 0 && infos[g]->element_bytes > 0) {
        group.message_bytes = elements * infos[g]->element_bytes;
      }
    }
    for (std::int32_t task : members[g]) {
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
}

}  // namespace powertrain::graph::detail
