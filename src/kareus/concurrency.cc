#include "kareus/concurrency.h"

#include <algorithm>
#include <cassert>
#include <cmath>

namespace powertrain::kareus {

using device::WorkKind;

namespace {

double link_rate(const device::GpuSpec& gpu, const device::Work& comm) {
  const device::DvfsParams& p = gpu.dvfs;
  return gpu.link_bandwidth_gb_s * 1e9 *
         (comm.backward ? p.backward_link_efficiency : p.link_efficiency);
}

double hbm_rate(const device::GpuSpec& gpu) {
  return gpu.memory_bandwidth_gb_s * 1e9 * gpu.dvfs.memory_efficiency;
}

// Time of the kernel's math at clock f on a fraction of the SMs (infinite bandwidth), its tiles
// filling those SMs with efficiency `fill`.
double flop_time(const device::GpuSpec& gpu, const device::Work& w, double speed,
                 double sm_fraction, double fill) {
  if (w.flops <= 0.0) return 0.0;
  const device::DvfsParams& p = gpu.dvfs;
  double rate = 0.0;
  if (w.kind == WorkKind::kMemoryBound) {
    rate = gpu.peak_tflops_fp32 * 1e12;
  } else {
    const double peak =
        gpu.peak_tflops(w.precision) > 0.0 ? gpu.peak_tflops(w.precision) : gpu.peak_tflops_fp32;
    rate =
        peak * 1e12 * (w.kind == WorkKind::kMatmul ? p.matmul_efficiency : p.attention_efficiency);
  }
  return w.flops / (rate * speed * sm_fraction * fill);
}

double activity(const device::GpuSpec& gpu, const device::Work& w) {
  return w.kind == WorkKind::kMemoryBound ? gpu.dvfs.memory_activity : 1.0;
}

// Max-min fair split of bandwidth `total` between two demands.
std::pair<double, double> fair_share(double a, double b, double total) {
  if (a + b <= total) return {a, b};
  const double half = 0.5 * total;
  if (a <= half) return {a, total - a};
  if (b <= half) return {total - b, b};
  return {half, half};
}

// The partition at a fixed effective clock (no power cap).
Cost run_at(const device::GpuSpec& gpu, const ConcurrencyParams& params,
            const std::vector<Kernel>& compute, const Kernel* comm, int sms, int slot,
            double clock_mhz) {
  const device::DvfsParams& p = gpu.dvfs;
  const double speed = clock_mhz / gpu.max_clock_mhz();
  const double v = device::relative_voltage(gpu, p, clock_mhz);
  const double dynamic_w = p.dynamic_power_w * speed * v * v;
  const double bandwidth = hbm_rate(gpu);
  const double n = gpu.sm_count;
  Cost cost;
  cost.effective_clock_mhz = clock_mhz;
  double comm_left = comm ? comm->work.link_bytes : 0.0;  // link bytes still to send
  double latency_left = comm && comm_left > 0.0 ? p.link_latency_s : 0.0;
  const double rate = comm ? comm_rate_bytes_s(gpu, params, comm->work, sms) : 0.0;
  const double comm_hbm_per_link_byte =
      comm && comm->work.link_bytes > 0.0
          ? params.comm_memory_amplification * comm->work.memory_bytes / comm->work.link_bytes
          : 0.0;
  const double comm_activity = comm ? p.collective_activity * rate / link_rate(gpu, comm->work) : 0;
  bool comm_started = false;
  auto add_phase = [&](double dt, double act) {
    cost.time_s += dt;
    cost.energy_j += dt * (p.static_power_w + dynamic_w * act);
  };
  // The collective alone (no compute kernel running) for up to dt; returns the time it ran.
  auto comm_alone = [&](double dt) {
    const double t_comm = latency_left > 0.0 ? latency_left : comm_left / rate;
    dt = std::min(dt, t_comm);
    add_phase(dt, comm_activity);
    if (latency_left > 0.0) {
      latency_left -= dt;
    } else {
      comm_left -= dt * rate;
    }
    if (latency_left < 1e-15) latency_left = 0.0;
    if (comm_left < 1e-6) comm_left = 0.0;
    return dt;
  };
  const bool size_effects = params.kernel_size_effects;
  const int all_sms = std::max(1, gpu.sm_count);
  for (std::size_t i = 0; i < compute.size(); ++i) {
    if (comm && static_cast<int>(i) == slot) comm_started = true;
    const device::Work& w = compute[i].work;
    // Launch gaps: the compute stream idles (static power), a running collective goes on.
    double gap = size_effects
                     ? std::max(1, compute[i].launches) * params.kernel_size.launch_overhead_s
                     : 0.0;
    while (gap > 1e-15) {
      if (comm_started && (comm_left > 0.0 || latency_left > 0.0)) {
        gap -= comm_alone(gap);
      } else {
        add_phase(gap, 0.0);
        gap = 0.0;
      }
    }
    const device::KernelShape& shape = compute[i].shape;
    device::WaveFill fill_all = size_effects
                                    ? device::wave_fill(w.kind, shape, all_sms, params.kernel_size)
                                    : device::WaveFill{};
    // Causal attention: the blocks' unequal work (causal_attention_fill) instead of equal tiles.
    if (size_effects && compute[i].causal_fill > 0.0) fill_all.efficiency = compute[i].causal_fill;
    // Next to a collective the SM share stays fluid ((N−k)/N above): the grid is sized for the
    // whole GPU, blocks are scheduled as SMs free up and the comm kernel's CTAs co-reside with
    // compute CTAs, so the wave fill is the kernel's on all N SMs.
    const device::WaveFill& fill_shared = fill_all;
    double left = 1.0;  // fraction of the kernel still to run
    while (left > 1e-12) {
      const bool both = comm_started && (comm_left > 0.0 || latency_left > 0.0);
      const double sm_fraction = both ? (n - sms) / n : 1.0;
      const device::WaveFill& fill = both ? fill_shared : fill_all;
      const double t_flop = flop_time(gpu, w, speed, sm_fraction, fill.efficiency);
      const double kernel_bytes = w.memory_bytes + fill.extra_bytes;
      // Bandwidth the kernel would use at its compute-bound speed (all of it when memory bound).
      const double want_c = t_flop > 0.0 ? std::min(bandwidth, kernel_bytes / t_flop) : bandwidth;
      double b_c = bandwidth, comm_speed = 0.0;
      if (both && latency_left <= 0.0) {
        const double want_m = rate * comm_hbm_per_link_byte;
        auto [bc, bm] = fair_share(want_c, want_m, bandwidth);
        b_c = bc;
        comm_speed = want_m > 0.0 ? rate * std::min(1.0, bm / want_m) : rate;
      }
      const double t_mem = kernel_bytes > 0.0 ? kernel_bytes / b_c : 0.0;
      const double t_kernel = std::max(t_flop, t_mem);  // whole kernel at these rates
      double dt = left * t_kernel;
      if (both) {
        // The phase ends when the kernel or the collective (latency first, then bytes) ends.
        const double t_comm = latency_left > 0.0 ? latency_left : comm_left / comm_speed;
        dt = std::min(dt, t_comm);
      }
      const double act =
          activity(gpu, w) * sm_fraction * fill.efficiency + (both ? comm_activity : 0.0);
      add_phase(dt, act);
      if (t_kernel > 0.0)
        left -= dt / t_kernel;
      else
        left = 0.0;
      if (both) {
        if (latency_left > 0.0) {
          latency_left -= dt;
        } else {
          comm_left -= dt * comm_speed;
        }
        if (latency_left < 1e-15) latency_left = 0.0;
        if (comm_left < 1e-6) comm_left = 0.0;
      }
    }
  }
  if (comm) {
    // Exposed: whatever the collective has left runs alone on its k SMs.
    const double exposed = latency_left + (comm_left > 0.0 ? comm_left / rate : 0.0);
    cost.exposed_comm_s = exposed;
    if (exposed > 0.0) add_phase(exposed, comm_activity);
  }
  cost.static_j = p.static_power_w * cost.time_s;
  cost.dynamic_j = cost.energy_j - cost.static_j;
  return cost;
}

template <typename Run>
Cost power_capped(const device::GpuSpec& gpu, double clock_mhz, Run run) {
  const double limit = gpu.dvfs.power_limit_w;
  const double lowest = gpu.min_clock_mhz();
  clock_mhz = std::clamp(clock_mhz, lowest, static_cast<double>(gpu.max_clock_mhz()));
  Cost at = run(clock_mhz);
  auto power = [](const Cost& c) { return c.time_s > 0.0 ? c.energy_j / c.time_s : 0.0; };
  if (power(at) <= limit) return at;
  double low = lowest, high = clock_mhz;
  if (power(run(low)) <= limit) {
    for (int i = 0; i < 50 && high - low > 1e-3; ++i) {
      const double mid = 0.5 * (low + high);
      (power(run(mid)) > limit ? high : low) = mid;
    }
  }
  Cost capped = run(low);
  capped.power_capped = true;
  return capped;
}

}  // namespace

double comm_rate_bytes_s(const device::GpuSpec& gpu, const ConcurrencyParams& params,
                         const device::Work& comm, int sms) {
  const double link = link_rate(gpu, comm);
  return link * (1.0 - std::exp(-sms * params.sm_link_rate_gb_s * 1e9 / link));
}

Cost evaluate_partition(const device::GpuSpec& gpu, const ConcurrencyParams& params,
                        const PartitionType& partition, const Schedule& schedule) {
  assert(schedule.comm_sms > 0 && schedule.comm_sms < gpu.sm_count);
  return power_capped(gpu, schedule.clock_mhz, [&](double f) {
    return run_at(gpu, params, partition.compute, &partition.comm, schedule.comm_sms,
                  schedule.launch_slot, f);
  });
}

namespace {
// Kernels one after another, a collective alone on `collective_sms` SMs.
Cost one_at_a_time(const device::GpuSpec& gpu, const ConcurrencyParams& params,
                   const std::vector<Kernel>& kernels, double clock_mhz, int collective_sms) {
  return power_capped(gpu, clock_mhz, [&](double f) {
    Cost total;
    for (const Kernel& k : kernels) {
      Cost c = k.work.kind == WorkKind::kCollective
                   ? run_at(gpu, params, {}, &k, collective_sms, 0, f)
                   : run_at(gpu, params, {k}, nullptr, 0, 0, f);
      total.time_s += c.time_s;
      total.energy_j += c.energy_j;
      total.exposed_comm_s += c.exposed_comm_s;
    }
    total.effective_clock_mhz = f;
    total.static_j = gpu.dvfs.static_power_w * total.time_s;
    total.dynamic_j = total.energy_j - total.static_j;
    return total;
  });
}
}  // namespace

Cost evaluate_solo(const device::GpuSpec& gpu, const ConcurrencyParams& params,
                   const std::vector<Kernel>& kernels, double clock_mhz) {
  return one_at_a_time(gpu, params, kernels, clock_mhz, params.default_comm_sms);
}

Cost sequential_cost(const device::GpuSpec& gpu, const ConcurrencyParams& params,
                     const std::vector<workload::Op>& ops, double clock_mhz) {
  if (params.kernel_size_effects) {
    std::vector<Kernel> kernels;
    for (const workload::Op& op : ops) kernels.push_back({op.name, op.work, 1, {}});
    return sequential_cost(gpu, params, kernels, clock_mhz);
  }
  const std::vector<device::Work> works = workload::works_of(ops);
  const device::WorkEstimate e = device::estimate_work(gpu, works, clock_mhz);
  Cost c;
  c.time_s = e.time_s;
  c.energy_j = e.energy_j;
  c.static_j = gpu.dvfs.static_power_w * e.time_s;
  c.dynamic_j = e.energy_j - c.static_j;
  c.effective_clock_mhz = e.effective_clock_mhz;
  c.power_capped = e.power_capped;
  return c;
}

Cost sequential_cost(const device::GpuSpec& gpu, const ConcurrencyParams& params,
                     const std::vector<Kernel>& kernels, double clock_mhz) {
  if (!params.kernel_size_effects) {
    std::vector<workload::Op> ops;
    for (const Kernel& k : kernels) ops.push_back({k.name, k.work});
    return sequential_cost(gpu, params, ops, clock_mhz);
  }
  // A collective alone on all SMs: R(N) is the link rate (to 1e-6), as estimate_work.
  return one_at_a_time(gpu, params, kernels, clock_mhz, gpu.sm_count);
}

}  // namespace powertrain::kareus
