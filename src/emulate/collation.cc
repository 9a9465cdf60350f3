// Collation: ranks and GPU indices first, then communicators from comm_init records, then one pass
// over every nccl record that files it under its matching key — (communicator, sequence) for
// collectives, (communicator, sender, receiver, sequence) for P2P, as the interposer numbers
// sends and receives per peer and direction.
#include "emulate/collation.h"

#include <fmt/core.h>

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "graph/execution_graph.h"

namespace powertrain::emulate {
namespace {

struct GroupKey {
  std::int32_t comm;
  std::int32_t src;
  std::int32_t dst;
  std::int64_t sequence;
  bool operator==(const GroupKey&) const = default;
};
struct GroupKeyHash {
  std::size_t operator()(const GroupKey& k) const {
    std::uint64_t h = static_cast<std::uint64_t>(k.comm) * 0x9E3779B97F4A7C15ULL;
    h ^= (static_cast<std::uint64_t>(static_cast<std::uint32_t>(k.src)) << 32 |
          static_cast<std::uint32_t>(k.dst)) *
         0xC2B2AE3D27D4EB4FULL;
    h ^= static_cast<std::uint64_t>(k.sequence) * 0x165667B19E3779F9ULL;
    return static_cast<std::size_t>(h ^ (h >> 29));
  }
};

// Lets the communicator map be searched with a string_view (no string built per record).
struct TextHash {
  using is_transparent = void;
  std::size_t operator()(std::string_view text) const {
    return std::hash<std::string_view>{}(text);
  }
};

core::Status assign_ranks(const std::vector<ProcessTrace>& processes, Collation& out) {
  const std::size_t n = processes.size();
  std::size_t unset = 0;
  for (const ProcessTrace& p : processes) unset += p.process.rank < 0;
  if (unset != 0 && unset != n) {
    const auto it = std::find_if(processes.begin(), processes.end(),
                                 [](const ProcessTrace& p) { return p.process.rank < 0; });
    return core::Error{fmt::format(
        "{}: RANK is unset but {} other process(es) have one; run all processes with RANK set",
        it->source, n - unset)};
  }
  out.rank.resize(n);
  std::unordered_map<int, std::size_t> seen;
  for (std::size_t i = 0; i < n; ++i) {
    out.rank[i] = unset != 0 ? static_cast<int>(i) : processes[i].process.rank;
    auto [it, inserted] = seen.emplace(out.rank[i], i);
    if (!inserted) {
      return core::Error{fmt::format("traces '{}' and '{}' are both rank {}",
                                     processes[it->second].source, processes[i].source,
                                     out.rank[i])};
    }
  }
  // Global GPU index = rank × devices + device; processes must not overlap.
  std::vector<std::pair<std::int64_t, std::size_t>> spans;
  out.first_gpu.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    const int devices = processes[i].process.devices;
    out.first_gpu[i] = static_cast<std::int64_t>(out.rank[i]) * devices;
    out.gpu_count += devices;
    spans.emplace_back(out.first_gpu[i], i);
  }
  std::sort(spans.begin(), spans.end());
  for (std::size_t k = 1; k < spans.size(); ++k) {
    const std::size_t a = spans[k - 1].second;
    const std::size_t b = spans[k].second;
    if (spans[k - 1].first + processes[a].process.devices > spans[k].first) {
      return core::Error{fmt::format(
          "traces '{}' ({} device(s)) and '{}' ({} device(s)) map to the same global GPU index; "
          "every process must drive the same number of devices",
          processes[a].source, processes[a].process.devices, processes[b].source,
          processes[b].process.devices)};
    }
  }
  return core::Ok{};
}

class Collator {
 public:
  Collator(const std::vector<ProcessTrace>& processes, Collation& out)
      : processes_(processes), out_(out) {}

  core::Status communicators() {
    for (std::size_t p = 0; p < processes_.size(); ++p) {
      const ProcessTrace& trace = processes_[p];
      for (std::int32_t i : trace.comm_records) {
        const Record& r = trace.records[i];
        if (r.op != OpKind::kCommInit) continue;
        const std::int32_t c = comm_index(trace.str(r.detail), r.comm_size);
        Communicator& comm = out_.communicators[c];
        if (comm.size != r.comm_size) {
          return core::Error{
              fmt::format("{}:{}: communicator {} initialized with size {} here and {} elsewhere",
                          trace.source, r.line, comm.id, r.comm_size, comm.size)};
        }
        if (const std::int32_t seen = comm.member(r.comm_rank); seen >= 0) {
          const CommMember& other = comm.members[seen];
          return core::Error{fmt::format(
              "{}:{}: communicator {} rank {} initialized twice (also by '{}' device {})",
              trace.source, r.line, comm.id, r.comm_rank, processes_[other.process].source,
              other.device)};
        }
        comm.member_of_rank[r.comm_rank] = static_cast<std::int32_t>(comm.members.size());
        comm.members.push_back({static_cast<std::int32_t>(p), r.device,
                                out_.gpu_of(static_cast<std::int32_t>(p), r.device)});
      }
    }
    return core::Ok{};
  }

  void collectives() {
    out_.group_of_record.resize(processes_.size());
    for (std::size_t p = 0; p < processes_.size(); ++p) {
      const ProcessTrace& trace = processes_[p];
      out_.group_of_record[p].assign(trace.records.size(), -1);
      for (std::int32_t i : trace.comm_records) {
        if (trace.records[i].op == OpKind::kNccl) add(static_cast<std::int32_t>(p), i);
      }
    }
  }

  void finish() {
    for (Communicator& comm : out_.communicators) {
      std::unordered_set<std::int64_t> nodes;
      for (const CommMember& m : comm.members) nodes.insert(out_.node_of(m.gpu));
      comm.spans_nodes = nodes.size() > 1 || (!comm.complete() && comm.size > out_.gpus_per_node);
      if (!comm.complete()) {
        graph::add_warning(
            out_.warnings,
            "communicator with members outside the loaded traces (no join with them)",
            fmt::format("communicator {}: {} of {} members loaded", comm.id, comm.members.size(),
                        comm.size));
      }
    }
    for (CollectiveGroup& g : out_.groups) {
      const Communicator& comm = out_.communicators[g.comm];
      g.spans_nodes = comm.spans_nodes;
      if (g.src >= 0) {
        const std::int32_t a = comm.member(g.src);
        const std::int32_t b = comm.member(g.dst);
        if (a >= 0 && b >= 0) {
          g.spans_nodes = out_.node_of(comm.members[a].gpu) != out_.node_of(comm.members[b].gpu);
        }
      }
      if (g.complete()) continue;
      // Only a finding when the missing members were loaded: they should have called it too.
      bool loaded = comm.complete();
      if (g.src >= 0) loaded = comm.member(g.src) >= 0 && comm.member(g.dst) >= 0;
      if (!loaded) continue;
      const OpRef& first = g.members.front();
      const Record& r = processes_[first.process].records[first.record];
      graph::add_warning(
          out_.warnings, "collective seen on only some members (modelled without a join)",
          g.src >= 0
              ? fmt::format("{}:{}: {} seq {} from comm rank {} to {} on communicator {} has no "
                            "matching {}",
                            processes_[first.process].source, r.line, to_string(r.collective),
                            g.sequence, g.src, g.dst, comm.id,
                            r.collective == Collective::kSend ? "recv" : "send")
              : fmt::format("{}:{}: {} seq {} on communicator {}: {} of {} members",
                            processes_[first.process].source, r.line, to_string(r.collective),
                            g.sequence, comm.id, g.members.size(), g.expected));
    }
  }

 private:
  std::int32_t comm_index(std::string_view id, std::int32_t size) {
    if (auto found = comm_of_id_.find(id); found != comm_of_id_.end()) return found->second;
    auto [it, inserted] = comm_of_id_.try_emplace(
        std::string(id), static_cast<std::int32_t>(out_.communicators.size()));
    if (inserted) {
      Communicator comm;
      comm.id = std::string(id);
      comm.size = size;
      out_.communicators.push_back(std::move(comm));
    }
    return it->second;
  }

  void add(std::int32_t p, std::int32_t i) {
    const ProcessTrace& trace = processes_[p];
    const Record& r = trace.records[i];
    const std::string_view id = trace.str(r.detail);
    if (comm_of_id_.find(id) == comm_of_id_.end()) {
      graph::add_warning(out_.warnings, "collective on a communicator without comm_init",
                         fmt::format("{}:{}: communicator {}", trace.source, r.line, id));
    }
    const std::int32_t c = comm_index(id, r.comm_size);
    const Communicator& comm = out_.communicators[c];
    if (comm.size != r.comm_size) {
      graph::add_warning(out_.warnings, "members disagree on the communicator size",
                         fmt::format("{}:{}: comm_size {} on communicator {} of size {}",
                                     trace.source, r.line, r.comm_size, comm.id, comm.size));
      return;
    }
    GroupKey key{c, -1, -1, r.sequence};
    if (r.collective == Collective::kSend) key = {c, r.comm_rank, r.peer, r.sequence};
    if (r.collective == Collective::kRecv) key = {c, r.peer, r.comm_rank, r.sequence};
    auto [it, inserted] =
        group_of_key_.try_emplace(key, static_cast<std::int32_t>(out_.groups.size()));
    if (inserted) {
      CollectiveGroup g;
      g.kind = is_p2p(r.collective) ? Collective::kSend : r.collective;
      g.comm = c;
      g.sequence = r.sequence;
      g.src = key.src;
      g.dst = key.dst;
      g.expected = key.src >= 0 ? 2 : comm.size;
      out_.groups.push_back(std::move(g));
    }
    CollectiveGroup& g = out_.groups[it->second];
    if (!inserted) {
      const OpRef& first = g.members.front();
      const Record& f = processes_[first.process].records[first.record];
      // Processes are collated one after the other, so a repeat by this process is among the
      // last members (at most one per device).
      bool repeated = false;
      for (auto m = g.members.rbegin(); m != g.members.rend() && m->process == p; ++m) {
        repeated = repeated || processes_[p].records[m->record].comm_rank == r.comm_rank;
      }
      if (repeated || static_cast<std::int32_t>(g.members.size()) >= g.expected) {
        graph::add_warning(
            out_.warnings,
            "sequence number repeated on one member, or more members than the communicator has "
            "(ignored)",
            fmt::format("{}:{}: {} seq {} on communicator {} rank {}", trace.source, r.line,
                        to_string(r.collective), r.sequence, comm.id, r.comm_rank));
        return;
      }
      const bool kind_ok = is_p2p(f.collective)
                               ? is_p2p(r.collective) && f.collective != r.collective
                               : f.collective == r.collective;
      if (!kind_ok || f.count != r.count || f.dtype != r.dtype) {
        graph::add_warning(
            out_.warnings, "matched collective members disagree (kind, count or dtype)",
            fmt::format("{}:{}: {} of {} {} vs {}:{}: {} of {} {} (seq {} on communicator {})",
                        processes_[first.process].source, f.line, to_string(f.collective), f.count,
                        to_string(f.dtype), trace.source, r.line, to_string(r.collective), r.count,
                        to_string(r.dtype), r.sequence, comm.id));
      }
    }
    g.members.push_back({p, i});
    out_.group_of_record[p][i] = it->second;
  }

  const std::vector<ProcessTrace>& processes_;
  Collation& out_;
  std::unordered_map<std::string, std::int32_t, TextHash, std::equal_to<>> comm_of_id_;
  std::unordered_map<GroupKey, std::int32_t, GroupKeyHash> group_of_key_;
};

}  // namespace

core::Result<Collation> collate(const std::vector<ProcessTrace>& processes,
                                const CollationOptions& options) {
  if (processes.empty()) return core::Error{"collation: no traces"};
  if (options.gpus_per_node < 1) return core::Error{"collation: gpus_per_node must be >= 1"};
  Collation out;
  out.gpus_per_node = options.gpus_per_node;
  if (auto ranks = assign_ranks(processes, out); !ranks) return ranks.error();
  Collator collator(processes, out);
  if (auto comms = collator.communicators(); !comms) return comms.error();
  collator.collectives();
  collator.finish();
  return out;
}

}  // namespace powertrain::emulate
