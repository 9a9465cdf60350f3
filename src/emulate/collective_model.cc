// NCCL's tuning model (src/graph/tuning.cc of NCCL 2.19–2.20) restricted to what an emulated
// job needs: ring, tree (all-reduce) and NVLS (single-node all-reduce on NVSwitch) with the LL,
// LL128 and Simple protocols. Latencies are NCCL's baseLat + steps × hwLat (µs); bandwidths
// start from the ring bus bandwidth that nccl-tests reports for the fabric and apply NCCL's
// per-protocol refinements. Per-channel caps (perChMax*Bw × channels) are left out: with the
// 16+ channels NCCL opens on NVSwitch systems they do not bind.
#include "emulate/collective_model.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace powertrain::emulate {
namespace {

// NCCL tuning.cc (2.19/2.20), µs. Index: protocol LL, LL128, Simple.
constexpr double kBaseLatRing[3] = {6.6, 14.0, 8.4};
constexpr double kBaseLatTree[3] = {6.8, 14.0, 0.0};
constexpr double kHwLatNvlinkRing[3] = {0.6, 1.9, 3.4};
constexpr double kHwLatNvlinkTree[3] = {0.6, 1.25, 28.0};
constexpr double kHwLatNvlinkNvls = 23.0;  // Simple only
constexpr double kHwLatPciRing[3] = {1.0, 2.5, 5.7};
constexpr double kHwLatPciTree[3] = {1.0, 1.9, 28.0};
constexpr double kHwLatNetRing[3] = {2.7, 4.0, 14.0};
constexpr double kHwLatNetTree[3] = {5.0, 8.5, 28.0};
// llMaxBws for 2 nodes (Intel CPUs); the single-node value comes from the fabric.
constexpr double kLlMaxBwMultiNodeGbS = 39.0;

int idx(CollProtocol p) { return static_cast<int>(p); }

int log2_floor(int v) {
  int r = 0;
  while (v > 1) {
    v >>= 1;
    ++r;
  }
  return r;
}

}  // namespace

std::string_view algorithm_name(CollAlgorithm algorithm) {
  switch (algorithm) {
    case CollAlgorithm::kRing:
      return "ring";
    case CollAlgorithm::kTree:
      return "tree";
    case CollAlgorithm::kNvls:
      return "nvls";
  }
  return "?";
}

std::string_view protocol_name(CollProtocol protocol) {
  switch (protocol) {
    case CollProtocol::kLL:
      return "LL";
    case CollProtocol::kLL128:
      return "LL128";
    case CollProtocol::kSimple:
      return "Simple";
  }
  return "?";
}

CollectiveFabric fabric_of(const device::GpuSpec& gpu) {
  CollectiveFabric f;
  const auto starts = [&](std::string_view prefix) {
    return std::string_view(gpu.link_name).substr(0, prefix.size()) == prefix;
  };
  if (starts("NVLink 4")) {
    // 18 links × 20.6 GB/s (NCCL's SM90 NVLink bandwidth) = 370.8 GB/s; nccl-tests shows
    // 365–370 GB/s ring busbw on 8×H100 SXM (NVIDIA/nccl#1455, NVIDIA/nccl-tests#212).
    f.nvlink = true;
    f.ring_bus_bw_gb_s = gpu.link_bandwidth_gb_s * (20.6 / 25.0);
    f.ll_max_bw_gb_s = 87.7;
    // NVLS all-reduce algbw measured on 8×H100 SXM by GPU count (NVIDIA/nccl#1455): 5 → 258,
    // 6 → 265, 7 → 270, 8 → ~273 GB/s (sjeaugey, nccl-tests#212: peak busbw ~480, algbw ~275).
    // At 2–4 GPUs NVLS reaches only the ring's ~370 GB/s busbw: left to the ring.
    f.nvls = true;
    const double nvls[9] = {0, 0, 0, 0, 0, 258.0, 265.0, 270.0, 273.0};
    std::copy(std::begin(nvls), std::end(nvls), std::begin(f.nvls_alg_bw_gb_s));
  } else if (starts("NVLink 3")) {
    // A100 SXM: NCCL caps SM80 bus bandwidth at 235 GB/s (tuning.cc "compCap80"); published
    // 8×A100 SXM all-reduce busbw ≈ 230 GB/s.
    f.nvlink = true;
    f.ring_bus_bw_gb_s = std::min(gpu.link_bandwidth_gb_s * 0.8, 235.0);
    f.ll_max_bw_gb_s = 87.7;
  } else if (starts("NVLink")) {
    // V100 SXM2: 6 links × 20 GB/s (NCCL's SM70 per-link figure).
    f.nvlink = true;
    f.ring_bus_bw_gb_s = gpu.link_bandwidth_gb_s * 0.8;
    f.ll_max_bw_gb_s = 39.0;
  } else {
    // PCIe 4.0 x16: ~24 of 32 GB/s through the host bridge.
    f.ring_bus_bw_gb_s = gpu.link_bandwidth_gb_s * 0.75;
    f.ll_max_bw_gb_s = 87.7;
  }
  return f;
}

double nccl_tests_bus_factor(Collective kind, int ranks) {
  const double n = std::max(ranks, 1);
  switch (kind) {
    case Collective::kAllReduce:
      return 2.0 * (n - 1.0) / n;
    case Collective::kAllGather:
    case Collective::kReduceScatter:
    case Collective::kAllToAll:
      return (n - 1.0) / n;
    default:
      return 1.0;
  }
}

double nccl_tests_size_bytes(Collective kind, double bytes, int ranks) {
  if (kind == Collective::kAllGather || kind == Collective::kReduceScatter)
    return bytes * std::max(ranks, 1);
  return bytes;
}

CollectiveTiming model_collective(const CollectiveQuery& q, const CollectiveFabric& fabric) {
  CollectiveTiming best;
  const int n = q.ranks;
  if (n <= 1 || !(q.bytes > 0.0) || !(fabric.ring_bus_bw_gb_s > 0.0)) return best;
  const int nodes = std::clamp(q.nodes, 1, n);
  const bool multi_node = nodes > 1;
  const int per_node = std::max(n / nodes, 1);
  // NCCL's nBytes: all-gather and reduce-scatter count the whole buffer.
  const double nbytes = nccl_tests_size_bytes(q.kind, q.bytes, n);
  double ring_bw = fabric.ring_bus_bw_gb_s;
  if (multi_node) {
    // One NIC per GPU: NCCL's rings (one per channel, spread over the NICs) leave and enter each
    // node through all of its NICs, so the node's network bandwidth is per_node × the per-GPU
    // bandwidth; all-to-all sends the share bound for other nodes through each GPU's own NIC.
    double network = per_node * q.inter_node_bw_gb_s;
    if (q.kind == Collective::kAllToAll)
      network = q.inter_node_bw_gb_s * (n - 1.0) / std::max(n - per_node, 1);
    if (is_p2p(q.kind)) network = q.inter_node_bw_gb_s;
    ring_bw = std::min(ring_bw, network);
  }
  const double ll_max = multi_node ? kLlMaxBwMultiNodeGbS : fabric.ll_max_bw_gb_s;
  const double* hw_ring = fabric.nvlink ? kHwLatNvlinkRing : kHwLatPciRing;
  const double* hw_tree = fabric.nvlink ? kHwLatNvlinkTree : kHwLatPciTree;

  best.seconds = std::numeric_limits<double>::infinity();
  const auto consider = [&](CollAlgorithm a, CollProtocol p, double alg_bw_gb_s, double lat_us) {
    if (!(alg_bw_gb_s > 0.0)) return;
    const double s = lat_us * 1e-6 + nbytes / (alg_bw_gb_s * 1e9);
    if (s < best.seconds) {
      best.seconds = s;
      best.algorithm = a;
      best.protocol = p;
    }
  };
  const CollProtocol protocols[3] = {CollProtocol::kLL, CollProtocol::kLL128,
                                     CollProtocol::kSimple};
  const bool p2p = is_p2p(q.kind) || q.kind == Collective::kAllToAll;

  for (const CollProtocol p : protocols) {
    // Ring (every collective; point-to-point traffic is one ring step to each peer at once).
    double bus = ring_bw;
    if (p == CollProtocol::kLL) {
      const bool quarter =
          multi_node || q.kind == Collective::kAllReduce || q.kind == Collective::kReduce;
      bus = std::min(ll_max, ring_bw * (quarter ? 0.25 : 1.0 / 3.0));
    } else if (p == CollProtocol::kLL128) {
      bus = ring_bw * (per_node < 2 ? 0.7 : 0.92);
    }
    int nsteps = n;
    int inter_steps = nodes;
    if (q.kind == Collective::kAllReduce) {
      nsteps = 2 * (n - 1);
      inter_steps = multi_node ? 2 * nodes : 0;
    } else if (q.kind == Collective::kAllGather || q.kind == Collective::kReduceScatter) {
      nsteps = n - 1;
      inter_steps = nodes - 1;
    } else if (p2p) {
      nsteps = 1;
      inter_steps = multi_node ? 1 : 0;
    } else {  // broadcast, reduce: a pipelined chain of n − 1 hops
      nsteps = n - 1;
      inter_steps = nodes - 1;
    }
    inter_steps = std::min(inter_steps, nsteps);
    const double intra = hw_ring[idx(p)] * (multi_node && p == CollProtocol::kLL ? 1.8 : 1.0);
    const double lat = kBaseLatRing[idx(p)] + (nsteps - inter_steps) * intra +
                       inter_steps * (multi_node ? kHwLatNetRing[idx(p)] : intra);
    double alg = bus;
    if (q.kind == Collective::kAllReduce || q.kind == Collective::kAllGather ||
        q.kind == Collective::kReduceScatter) {
      alg = bus * n / nsteps;
    } else if (q.kind == Collective::kAllToAll) {
      alg = bus * n / (n - 1.0);  // 1/n of the buffer stays local
    }
    consider(CollAlgorithm::kRing, p, alg, lat);

    if (q.kind != Collective::kAllReduce) continue;
    // Tree (all-reduce): a chain within the node, a binary tree across nodes.
    double tbus = ring_bw * 0.92;
    if (p == CollProtocol::kLL) tbus = std::min(tbus / 3.8, ll_max);
    if (p == CollProtocol::kLL128) tbus *= multi_node ? 120.0 / 128.0 : 7.0 / 9.0;
    const double tlat = kBaseLatTree[idx(p)] + 2.0 * ((per_node - 1) * hw_tree[idx(p)] +
                                                      log2_floor(nodes) * kHwLatNetTree[idx(p)]);
    consider(CollAlgorithm::kTree, p, tbus * 0.5, tlat);
  }
  // NVLink SHARP: single-node all-reduce, Simple protocol only.
  if (q.kind == Collective::kAllReduce && fabric.nvls && !multi_node) {
    const double alg = fabric.nvls_alg_bw_gb_s[std::min(n, 8)];
    consider(CollAlgorithm::kNvls, CollProtocol::kSimple, alg, kHwLatNvlinkNvls);
  }
  if (!std::isfinite(best.seconds)) return CollectiveTiming{};
  const double size = nccl_tests_size_bytes(q.kind, q.bytes, n);
  best.alg_bw_gb_s = size / best.seconds / 1e9;
  best.bus_bw_gb_s = best.alg_bw_gb_s * nccl_tests_bus_factor(q.kind, n);
  return best;
}

}  // namespace powertrain::emulate
