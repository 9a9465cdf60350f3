// The synthetic programs: TraceWriter calls in the order the real programs make them.
#include "emulate/synthetic_programs.h"

#include <algorithm>
#include <vector>

#include "emulate/trace_writer.h"

namespace powertrain::emulate {

std::string data_parallel_program(int rank, int world_size, const DataParallelSpec& spec) {
  TraceWriter w(rank, world_size);
  constexpr std::int64_t kCompute = 0;
  constexpr std::int64_t kComm = 1;
  w.host_work(50'000);
  const std::int64_t bytes = spec.m * spec.k * 2 * spec.layers;
  w.malloc(bytes);
  w.malloc(spec.batch_bytes);
  w.comm_init("dp", rank, world_size);
  w.stream_create(kComm);
  for (int l = 0; l <= spec.layers; ++l) w.event_create(l + 1);
  for (int it = 0; it < spec.iterations; ++it) {
    w.host_work(spec.host_work_ns).memcpy("HtoD", spec.batch_bytes, true, kCompute);
    for (int l = 0; l < spec.layers; ++l) {
      w.host_work(spec.host_work_ns).gemm(spec.m, spec.n, spec.k, "bfloat16", kCompute);
    }
    for (int l = spec.layers - 1; l >= 0; --l) {
      w.host_work(spec.host_work_ns).gemm(spec.m, spec.k, spec.n, "bfloat16", kCompute);
      w.host_work(spec.host_work_ns).gemm(spec.k, spec.n, spec.m, "bfloat16", kCompute);
      w.event_record(l + 1, kCompute);
      w.stream_wait_event(kComm, l + 1);
      w.nccl("allreduce", "dp", rank, world_size, spec.gradient_elements, "bfloat16", kComm);
    }
    w.event_record(spec.layers + 1, kComm);
    w.stream_wait_event(kCompute, spec.layers + 1);
    w.host_work(spec.host_work_ns)
        .kernel("void multi_tensor_apply_kernel<AdamFunctor>(...)", 4096, 256, kCompute);
    w.host_work(spec.host_work_ns).memcpy("DtoH", 4, false, kCompute);
  }
  return w.finish();
}

std::string pipeline_program(int s, const PipelineSpec& spec) {
  const int p = spec.stages;
  const int m = spec.microbatches;
  const int dp = std::max(spec.data_parallel, 1);
  TraceWriter w(spec.replica * p + s, p * dp);
  const std::string pp_comm = "pp" + std::to_string(spec.replica);
  const std::string dp_comm = "dp" + std::to_string(s);
  w.host_work(spec.comm_setup_ns);
  w.comm_init(pp_comm, s, p);
  if (dp > 1) w.comm_init(dp_comm, spec.replica, dp);
  std::int64_t group = 0;
  // One P2P block: up to two calls; two calls form an ncclGroupStart/End block.
  struct Op {
    bool send;
    int peer;
  };
  const auto block = [&](std::vector<Op> ops) {
    ops.erase(std::remove_if(ops.begin(), ops.end(),
                             [&](const Op& o) { return o.peer < 0 || o.peer >= p; }),
              ops.end());
    if (ops.empty()) return;
    const std::int64_t id = ops.size() > 1 ? ++group : 0;
    for (const Op& o : ops) {
      w.host_work(spec.host_work_ns);
      w.nccl(o.send ? "send" : "recv", pp_comm, s, p, spec.activation_elements, "bfloat16", 0,
             o.peer, id);
    }
  };
  const Op send_next{true, s + 1}, recv_prev{false, s - 1};
  const Op send_prev{true, s - 1}, recv_next{false, s + 1};
  const auto forward = [&] { w.host_work(spec.host_work_ns).kernel("forward_step", 1024, 256); };
  const auto backward = [&] { w.host_work(spec.host_work_ns).kernel("backward_step", 1024, 256); };
  for (int it = 0; it < spec.iterations; ++it) {
    const int warmup = std::min(p - s - 1, m);
    const int remaining = m - warmup;
    for (int i = 0; i < warmup; ++i) {
      block({recv_prev});
      forward();
      block({send_next});
    }
    if (remaining > 0) block({recv_prev});
    for (int i = 0; i < remaining; ++i) {
      forward();
      block({send_next, recv_next});  // send_forward_recv_backward
      backward();
      if (i == remaining - 1) {
        block({send_prev});
      } else {
        block({send_prev, recv_prev});  // send_backward_recv_forward
      }
    }
    for (int i = 0; i < warmup; ++i) {
      block({recv_next});
      backward();
      block({send_prev});
    }
    if (dp > 1) {
      w.host_work(spec.host_work_ns)
          .nccl("allreduce", dp_comm, spec.replica, dp, spec.gradient_elements, "bfloat16");
    }
    w.host_work(spec.host_work_ns).device_sync();
  }
  return w.finish();
}

}  // namespace powertrain::emulate
