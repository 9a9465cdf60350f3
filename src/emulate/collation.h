// Collation of the emulated processes' traces into one job: ranks and global GPU indices,
// communicators (from comm_init records) and the collectives and P2P transfers matched across
// ranks by communicator and sequence number.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/result.h"
#include "emulate/emulation_trace.h"
#include "trace/trace_events.h"

namespace powertrain::emulate {

/// A record of one process: (index into the process list, index into its records).
struct OpRef {
  std::int32_t process = 0;
  std::int32_t record = 0;
};

struct CommMember {
  std::int32_t process = 0;
  std::int32_t device = 0;
  std::int64_t gpu = 0;  // global GPU index
};

struct Communicator {
  std::string id;
  std::int32_t size = 0;
  std::vector<CommMember> members;  // loaded members, in the order their comm_init was read
  std::unordered_map<std::int32_t, std::int32_t> member_of_rank;  // comm rank → index in members
  /// Index into members of comm rank `rank`, or −1 when it is not loaded.
  std::int32_t member(std::int32_t rank) const {
    const auto it = member_of_rank.find(rank);
    return it == member_of_rank.end() ? -1 : it->second;
  }
  bool spans_nodes = false;  // members on more than one node (or unknown members beyond a node)
  bool complete() const { return static_cast<std::int32_t>(members.size()) == size; }
};

/// One collective call matched across its members, or one P2P transfer (a send and its recv).
struct CollectiveGroup {
  Collective kind = Collective::kAllReduce;  // of the first member seen (send for P2P)
  std::int32_t comm = 0;                     // index into Collation::communicators
  std::int64_t sequence = 0;
  std::int32_t src = -1;      // P2P: comm rank of the sender
  std::int32_t dst = -1;      // P2P: comm rank of the receiver
  std::int32_t expected = 0;  // communicator size, 2 for a P2P transfer
  bool spans_nodes = false;   // the ring (or the pair) crosses a node boundary
  std::vector<OpRef> members;
  bool complete() const { return static_cast<std::int32_t>(members.size()) == expected; }
};

struct CollationOptions {
  int gpus_per_node = 8;  // node of a GPU = global index / gpus_per_node
};

struct Collation {
  int gpus_per_node = 8;
  std::vector<int> rank;                // per process: RANK, or its position when RANK is unset
  std::vector<std::int64_t> first_gpu;  // per process: global index of its device 0
  std::int64_t gpu_count = 0;           // Σ devices
  std::vector<Communicator> communicators;
  std::vector<CollectiveGroup> groups;
  std::vector<std::vector<std::int32_t>> group_of_record;  // per process, per record: group or −1
  std::vector<trace::TraceWarning> warnings;

  std::int64_t gpu_of(std::int32_t process, std::int32_t device) const {
    return first_gpu[process] + device;
  }
  std::int64_t node_of(std::int64_t gpu) const { return gpu / std::max(gpus_per_node, 1); }
};

/// Collates processes (in any order). Ranks: RANK when every process has one, else the position
/// of each (all unset); global GPU index of device d = rank × devices + d.
/// Errors: two processes with one rank, some ranks set and some not, overlapping global GPU
/// indices, a communicator initialized with two sizes or with one comm rank twice.
/// Warnings (counted): a collective seen on only some loaded members, members that disagree on
/// kind, count, dtype or communicator size, a sequence number repeated on one member, collectives
/// on a communicator without comm_init, communicators with members outside the loaded traces.
/// O(records) expected time.
core::Result<Collation> collate(const std::vector<ProcessTrace>& processes,
                                const CollationOptions& options = {});

}  // namespace powertrain::emulate
