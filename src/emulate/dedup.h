// Deduplication of ranks that do identical work: each process's operation sequence is hashed
// (kinds, kernel names, launch shapes, GEMM shapes, bytes, streams, threads, collective kinds,
// counts and communicator sizes; not pointers, times, communicator ids or comm ranks, and P2P
// peers only as an offset from the own comm rank), processes with equal sequences form a class,
// and classes are refined until every member of a class also sees the same classes on the other
// side of each of its collectives and transfers (so that a 1F1B pipeline's middle stages, which
// issue identical calls, are kept apart). One representative per class is simulated.
//
// Collectives are then re-formed among representatives: a collective (or transfer) whose members
// fall into k classes becomes a joined group of the k representatives' corresponding calls; with
// k = 1 (all data-parallel replicas in one class) the representative's call runs alone with the
// wire time of the full group (its size and topology come from the original communicator). This is
// exact when class members also have the same host timing (what the equality of the simulated
// results relies on; host-time noise between otherwise identical ranks is not modelled).
#pragma once

#include <cstdint>
#include <vector>

#include "emulate/collation.h"
#include "emulate/emulation_trace.h"

namespace powertrain::emulate {

struct RankClasses {
  std::vector<std::int32_t> class_of;        // per process
  std::vector<std::int32_t> representative;  // per class: its lowest-rank process
  std::vector<std::int32_t> size;            // per class: number of processes
  std::vector<std::uint64_t> sequence_hash;  // per process: hash of its operation sequence
  int refinement_rounds = 0;
  bool enabled = true;
};

/// Hash of one record's operation (the fields listed above). `string_hash` holds a hash of each
/// of the trace's strings. Deterministic across runs.
std::uint64_t operation_hash(const ProcessTrace& trace, const Record& record,
                             const std::vector<std::uint64_t>& string_hash);

/// operation_hash of every record of `trace`, in record order. O(records + string bytes).
std::vector<std::uint64_t> operation_hashes(const ProcessTrace& trace);

/// Classes of identical processes. With `enabled` false every process is its own class.
/// O(records + collective members × refinement rounds); rounds ≤ number of classes.
RankClasses find_rank_classes(const std::vector<ProcessTrace>& processes,
                              const Collation& collation, bool enabled = true);

}  // namespace powertrain::emulate
