// The concurrency model: a communication kernel on k of the GPU's N SMs running next to compute
// kernels on the other N − k, sharing SMs and HBM bandwidth, at one SM clock under the power
// limit. Every constant is documented in docs/kareus.md with its source.
#pragma once

#include <vector>

#include "device/gpu.h"
#include "device/kernel_efficiency.h"
#include "kareus/partition.h"

namespace powertrain::kareus {

/// Constants of the model that device::DvfsParams does not have.
struct ConcurrencyParams {
  /// Link bytes per second one SM of a communication kernel can drive (GB/s). The kernel's rate is
  /// R(k) = R_link · (1 − exp(−k · sm_link_rate / R_link)): slope sm_link_rate for few SMs,
  /// saturating at the link rate R_link of the device model. Assumption (documented): about
  /// 12 GB/s per SM, so that ~4 SMs carry a third and ~24 SMs (NCCL's default on NVSwitch A100s)
  /// 95 % of the calibrated A100 NVLink rate.
  double sm_link_rate_gb_s = 12.0;
  /// HBM bytes a collective moves per byte of its Work::memory_bytes when overlapped: NCCL/MSCCL++
  /// stage data through FIFO buffers in HBM (peer write, local read, reduce, write) and the LL
  /// protocol sends a flag with every 4 data bytes. Assumption: 3.
  double comm_memory_amplification = 3.0;
  /// SMs that NCCL-style kernels take in the Nanobatching baseline (launched as soon as possible).
  int default_comm_sms = 24;
  /// Kernel-size terms (device/kernel_efficiency.h): wave quantization of GEMM and attention tiles
  /// over the SMs a kernel gets, split-K partial traffic and a launch gap per kernel. Applied to
  /// the sequential (Megatron-LM) and the partitioned paths alike. false: the plain roofline
  /// (sequential_cost is then exactly device::estimate_work).
  bool kernel_size_effects = true;
  device::KernelSizeParams kernel_size;
};

/// One execution schedule of a partition (Kareus §3, §4.1).
struct Schedule {
  int clock_mhz = 0;    // requested SM clock
  int comm_sms = 0;     // k, SMs given to the communication kernel
  int launch_slot = 0;  // the comm kernel starts with compute kernel `launch_slot` (0-based)
};

/// Modelled time and energy of one partition (or a list of solo kernels).
struct Cost {
  double time_s = 0.0;
  double energy_j = 0.0;
  double static_j = 0.0;   // static power × time
  double dynamic_j = 0.0;  // energy − static
  double effective_clock_mhz = 0.0;
  bool power_capped = false;
  double exposed_comm_s = 0.0;  // time the collective ran with no compute next to it
};

/// Runs the partition: compute kernels one after another; the collective starts with compute
/// kernel `launch_slot` and runs on k SMs until its bytes are sent. While both run:
///  - compute time of a kernel = max(flops / (peak × eff × f/f_max × (N−k)/N × w), bytes / b_c),
///    w the wave fill of its tiles on the GPU's N SMs (1 without kernel_size_effects), and
///    before each launch a gap of launch_overhead_s with the compute stream idle,
///  - the collective sends at R(k) while it gets the HBM bandwidth it needs,
///  - HBM bandwidth B = peak × memory_efficiency is split max-min fairly between the kernel's
///    demand (bytes per second at its compute-bound speed) and the collective's.
/// Power = P_static + P_dyn(f) × (a_c × (N−k)/N × w + a_comm × R(k)/R_link) (SMs idle in a
/// partial last wave draw no dynamic power), where a_c is 1 for GEMMs
/// and attention and DvfsParams::memory_activity for memory-bound kernels, a_comm =
/// collective_activity and P_dyn(f) = dynamic_power_w × f/f_max × v(f)² (the device model's).
/// Alone, a kernel has all N SMs. If the average power exceeds the power limit, the partition runs
/// at the (bisected) clock where it equals the limit, like device::estimate_work.
/// Preconditions: 0 ≤ launch_slot < compute.size() (or compute empty), 0 ≤ k < N.
Cost evaluate_partition(const device::GpuSpec& gpu, const ConcurrencyParams& params,
                        const PartitionType& partition, const Schedule& schedule);

/// The same model with no collective: kernels one after another on all SMs (for solo kernels;
/// collectives among them run alone at the device model's link rate with default_comm_sms).
Cost evaluate_solo(const device::GpuSpec& gpu, const ConcurrencyParams& params,
                   const std::vector<Kernel>& kernels, double clock_mhz);

/// Communication rate R(k) of a collective in link bytes per second.
double comm_rate_bytes_s(const device::GpuSpec& gpu, const ConcurrencyParams& params,
                         const device::Work& comm, int sms);

/// Megatron-LM's sequential execution of full-microbatch ops: the same model as evaluate_solo
/// (kernel-size terms included) with every collective alone at the full link rate and every op
/// one launch; without params.kernel_size_effects exactly device::estimate_work.
Cost sequential_cost(const device::GpuSpec& gpu, const ConcurrencyParams& params,
                     const std::vector<workload::Op>& ops, double clock_mhz);
/// The same for kernels with their shapes (MicrobatchWork::sequential_kernels).
Cost sequential_cost(const device::GpuSpec& gpu, const ConcurrencyParams& params,
                     const std::vector<Kernel>& kernels, double clock_mhz);

}  // namespace powertrain::kareus
