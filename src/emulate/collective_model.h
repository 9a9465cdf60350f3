// NCCL collective timing for emulated programs: the algorithm (ring, tree, NVLink SHARP) and
// protocol (LL, LL128, Simple) NCCL would pick for a size, and the time it takes — NCCL's own
// tuning model (src/graph/tuning.cc: time = latency + bytes / algorithm bandwidth, the fastest
// enabled pair wins) with the bandwidth ceilings of published nccl-tests runs. Every constant and
// its source is listed in docs/emulate.md ("Collective model"). Pure functions; thread-safe.
#pragma once

#include <string_view>

#include "device/gpu.h"
#include "emulate/emulation_trace.h"

namespace powertrain::emulate {

enum class CollAlgorithm { kRing, kTree, kNvls };
enum class CollProtocol { kLL, kLL128, kSimple };

std::string_view algorithm_name(CollAlgorithm algorithm);
std::string_view protocol_name(CollProtocol protocol);

/// What the links of one GPU generation give NCCL (derived from GpuSpec by fabric_of).
struct CollectiveFabric {
  bool nvlink = false;  // intra-node GPUs on NVLink (else PCIe): selects NCCL's hwLat row
  /// Ring/Simple bus bandwidth within a node, GB/s: what nccl-tests reports as busbw for
  /// all-gather, reduce-scatter and ring all-reduce at large sizes.
  double ring_bus_bw_gb_s = 0.0;
  /// LL protocol ceiling (NCCL llMaxBws, single node), GB/s of bus bandwidth.
  double ll_max_bw_gb_s = 0.0;
  /// NVLink SHARP all-reduce (NVSwitch with multicast, H100/H200 SXM): algorithm bandwidth by
  /// communicator size (index n, 0 = not available at that size), GB/s.
  bool nvls = false;
  double nvls_alg_bw_gb_s[9] = {};
};

/// The fabric of a catalog GPU: NVLink 4 (H100/H200 SXM, NVSwitch + NVLS), NVLink 3 (A100 SXM),
/// NVLink 2 (V100), else PCIe.
CollectiveFabric fabric_of(const device::GpuSpec& gpu);

/// One collective call as NCCL sees it.
struct CollectiveQuery {
  Collective kind = Collective::kAllReduce;
  double bytes = 0.0;  // per-rank buffer bytes (count × dtype size), as recorded
  int ranks = 1;       // communicator size (2 for send/recv)
  int nodes = 1;       // nodes the communicator spans (≥ 2: inter-node steps on the network)
  double inter_node_bw_gb_s = 50.0;  // per-GPU network bandwidth (one NIC per GPU)
};

struct CollectiveTiming {
  double seconds = 0.0;
  CollAlgorithm algorithm = CollAlgorithm::kRing;
  CollProtocol protocol = CollProtocol::kSimple;
  double alg_bw_gb_s = 0.0;  // bytes as nccl-tests counts them / seconds
  double bus_bw_gb_s = 0.0;  // nccl-tests' busbw: alg_bw × its per-collective factor
};

/// The fastest enabled (algorithm, protocol) pair for the query and its time. One rank or zero
/// bytes: zero time. O(1).
CollectiveTiming model_collective(const CollectiveQuery& query, const CollectiveFabric& fabric);

/// nccl-tests' bus-bandwidth factor: all-reduce 2(n−1)/n, all-gather/reduce-scatter (n−1)/n,
/// all-to-all (n−1)/n, others 1 (doc/PERFORMANCE.md of nccl-tests).
double nccl_tests_bus_factor(Collective kind, int ranks);

/// nccl-tests' "size" column for a collective of `bytes` per-rank buffer bytes: the full buffer
/// (n × bytes) for all-gather and reduce-scatter, else bytes.
double nccl_tests_size_bytes(Collective kind, double bytes, int ranks);

}  // namespace powertrain::emulate
