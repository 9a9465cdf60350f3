// Synthetic Kineto trace writer. Timings come from a small deterministic generator so that runs
// and sizes are reproducible; the field layout follows Kineto's output_json.cpp.
#include "synthetic_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <iterator>
#include <vector>

namespace powertrain::trace {
namespace {

// SplitMix64: tiny, deterministic, good enough for jittering durations.
struct Random {
  std::uint64_t state;
  std::uint64_t next() {
    std::uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  std::int64_t uniform(std::int64_t lo, std::int64_t hi) {
    return lo + static_cast<std::int64_t>(next() % static_cast<std::uint64_t>(hi - lo + 1));
  }
};

constexpr std::array<const char*, 6> kOps = {"aten::mm",   "aten::add",     "aten::layer_norm",
                                             "aten::gelu", "aten::softmax", "aten::copy_"};
constexpr std::array<const char*, 6> kKernels = {
    "ampere_sgemm_128x64_tn",
    "void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<float>, "
    "at::detail::Array<char*, 3> >(int, at::native::CUDAFunctor_add<float>, "
    "at::detail::Array<char*, 3>)",
    "void at::native::(anonymous namespace)::vectorized_layer_norm_kernel<float, float>(int, "
    "float, float const*, float const*, float const*, float*, float*, float*)",
    "void at::native::vectorized_elementwise_kernel<4, at::native::GeluCUDAKernelImpl>(int)",
    "void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float, float, float>(float*, "
    "float const*, int)",
    "void at::native::unrolled_elementwise_kernel<at::native::direct_copy_kernel_cuda>(int)"};

// One op's host and device times on one rank.
struct OpTiming {
  std::size_t which = 0;  // index into kOps / kKernels
  std::int64_t cpu_ns = 0;
  std::int64_t op_ns = 0;
  std::int64_t launch_at = 0;
  std::int64_t launch_ns = 0;
  int stream_index = 0;  // compute stream, or `streams` for the NCCL stream
  std::int64_t gpu_start = 0;
  std::int64_t gpu_ns = 0;  // for a collective, set once every rank's start is known
};

// One rank's host thread and streams. The host never blocks on the device (no syncs), so each
// rank's host timeline depends only on its own random draws.
struct RankTimeline {
  RankTimeline(std::uint64_t seed, int rank, int streams, std::int64_t start_ns)
      : random{(seed + static_cast<std::uint64_t>(rank) * 0xD1B54A32D192ED03ull) *
                   0x2545F4914F6CDD1Dull +
               1},
        streams(streams),
        cpu_ns(start_ns),
        stream_free_ns(static_cast<std::size_t>(streams) + 1, start_ns) {}

  OpTiming next(bool collective, std::int64_t op) {
    OpTiming t;
    t.which = static_cast<std::size_t>(random.uniform(0, kOps.size() - 1));
    t.cpu_ns = cpu_ns;
    t.op_ns = random.uniform(8'000, 30'000);
    t.launch_at = cpu_ns + t.op_ns / 3;
    t.launch_ns = random.uniform(3'000, 6'000);
    t.stream_index = collective ? streams : static_cast<int>(op % streams);
    std::int64_t& free_ns = stream_free_ns[static_cast<std::size_t>(t.stream_index)];
    t.gpu_start = std::max(free_ns, t.launch_at + t.launch_ns + 2'000);
    if (!collective) {
      t.gpu_ns = random.uniform(2'000, 80'000);
      free_ns = t.gpu_start + t.gpu_ns;
    }
    cpu_ns += t.op_ns + random.uniform(500, 3'000);
    return t;
  }

  Random random;
  int streams;
  std::int64_t cpu_ns;
  std::vector<std::int64_t> stream_free_ns;  // compute streams, then the NCCL stream
};

// Times in ns; written as µs, relative (3 decimals) or absolute integer.
class Writer {
 public:
  Writer(const SyntheticTraceSpec& spec, std::string* out)
      : spec_(spec), out_(out), base_ns_(1'711'964'646'000'000'000) {}

  void ts(std::int64_t ns) {
    if (spec_.relative_time) {
      const std::int64_t relative = ns - base_ns_;
      fmt::format_to(std::back_inserter(*out_), "{}.{:03}", relative / 1000, relative % 1000);
    } else {
      fmt::format_to(std::back_inserter(*out_), "{}", ns / 1000);
    }
  }
  void dur(std::int64_t ns) {
    if (spec_.relative_time) {
      fmt::format_to(std::back_inserter(*out_), "{}.{:03}", ns / 1000, ns % 1000);
    } else {
      fmt::format_to(std::back_inserter(*out_), "{}", std::max<std::int64_t>(ns / 1000, 1));
    }
  }
  // {"ph": "X", "cat": ..., "name": ..., "pid": ..., "tid": ..., "ts": ..., "dur": ..., "args":
  void begin_x(const char* cat, std::string_view name, std::int64_t pid, std::int64_t tid,
               std::int64_t start_ns, std::int64_t dur_ns) {
    separator();
    fmt::format_to(std::back_inserter(*out_),
                   "{{\n  \"ph\": \"X\", \"cat\": \"{}\", \"name\": \"{}\", \"pid\": {}, "
                   "\"tid\": {},\n  \"ts\": ",
                   cat, name, pid, tid);
    ts(start_ns);
    out_->append(", \"dur\": ");
    dur(dur_ns);
    out_->append(",\n  \"args\": {\n");
  }
  void end_x() { out_->append("\n  }\n}"); }
  void flow(char ph, std::int64_t id, std::int64_t pid, std::int64_t tid, std::int64_t at_ns) {
    separator();
    fmt::format_to(std::back_inserter(*out_),
                   "{{\n  \"ph\": \"{}\", \"id\": {}, \"pid\": {}, \"tid\": {}, \"ts\": ", ph, id,
                   pid, tid);
    ts(at_ns);
    out_->append(ph == 'f' ? ",\n  \"cat\": \"ac2g\", \"name\": \"ac2g\", \"bp\": \"e\"\n}"
                           : ",\n  \"cat\": \"ac2g\", \"name\": \"ac2g\"\n}");
  }
  std::int64_t base_ns() const { return base_ns_; }
  std::int64_t written() const { return events_; }

 private:
  void separator() {
    out_->append(events_ == 0 ? "\n  " : ",\n  ");
    ++events_;
  }
  const SyntheticTraceSpec& spec_;
  std::string* out_;
  std::int64_t base_ns_;
  std::int64_t events_ = 0;
};

}  // namespace

std::string make_synthetic_kineto_trace(const SyntheticTraceSpec& spec) {
  std::string out;
  out.reserve(static_cast<std::size_t>(std::max<std::int64_t>(spec.target_events, 0)) * 330 + 4096);
  fmt::format_to(std::back_inserter(out),
                 "{{\n  \"schemaVersion\": 1,\n  \"deviceProperties\": [\n    {{\"id\": 0, "
                 "\"name\": \"NVIDIA H100\", \"totalGlobalMem\": 85520809984, \"numSms\": "
                 "132}}\n  ],\n  \"distributedInfo\": {{\"backend\": \"nccl\", \"rank\": {}, "
                 "\"world_size\": {}}},\n  \"traceEvents\": [",
                 spec.rank, spec.world_size);
  Writer w(spec, &out);
  const std::int64_t pid = 4000 + spec.rank;
  const std::int64_t main_tid = pid;
  const int streams = std::max(spec.streams, 1);
  const std::int64_t nccl_stream = 7 + streams;
  const int world_size = std::max(spec.world_size, 1);
  // Every rank's timeline is generated (only this rank's is written) so that an all-reduce ends
  // at the same time on all ranks, as NCCL's do: it cannot finish before its last peer arrives.
  std::vector<RankTimeline> timelines;
  timelines.reserve(static_cast<std::size_t>(world_size));
  for (int r = 0; r < world_size; ++r) {
    timelines.emplace_back(spec.seed, r, streams, w.base_ns() + 1'000'000);
  }
  Random job_random{spec.seed * 0x9E3779B97F4A7C15ull + 7};
  const std::size_t self = static_cast<std::size_t>(std::clamp(spec.rank, 0, world_size - 1));
  std::int64_t correlation = 1000;
  std::int64_t external_id = 1;
  std::int64_t op = 0;
  std::int64_t step = 0;
  std::int64_t step_start_ns = timelines[self].cpu_ns;
  std::int64_t sequence = 0;
  std::string group_ranks = "[";
  for (int r = 0; r < world_size; ++r) group_ranks += (r == 0 ? "" : ", ") + std::to_string(r);
  group_ranks += "]";
  while (w.written() < spec.target_events) {
    const bool collective =
        spec.ops_per_collective > 0 && op % spec.ops_per_collective == spec.ops_per_collective - 1;
    std::int64_t collective_end_ns = 0;
    const std::int64_t transfer_ns = collective ? job_random.uniform(2'000, 400'000) : 0;
    std::vector<OpTiming> timings(timelines.size());
    for (std::size_t r = 0; r < timelines.size(); ++r) {
      timings[r] = timelines[r].next(collective, op);
      collective_end_ns = std::max(collective_end_ns, timings[r].gpu_start + transfer_ns);
    }
    if (collective) {
      for (std::size_t r = 0; r < timelines.size(); ++r) {
        timings[r].gpu_ns = collective_end_ns - timings[r].gpu_start;
        timelines[r].stream_free_ns[static_cast<std::size_t>(streams)] = collective_end_ns;
      }
    }
    const OpTiming& t = timings[self];
    const std::size_t which = t.which;
    const std::int64_t op_ns = t.op_ns;
    const std::int64_t launch_at = t.launch_at;
    const std::int64_t launch_ns = t.launch_ns;
    const std::int64_t stream = collective ? nccl_stream : 7 + t.stream_index;
    const std::int64_t gpu_start = t.gpu_start;
    const std::int64_t gpu_ns = t.gpu_ns;
    const std::int64_t cpu_ns = t.cpu_ns;

    // python_function around the op (with_stack traces have many of these).
    w.begin_x("python_function", "torch/nn/modules/module.py(1511): _call_impl", pid, main_tid,
              cpu_ns - 500, op_ns + 1'000);
    fmt::format_to(std::back_inserter(out),
                   "    \"Python parent id\": {}, \"Python id\": {}, \"Ev Idx\": {}", op, op + 1,
                   op * 3);
    w.end_x();
    if (collective) {
      w.begin_x("cpu_op", "record_param_comms", pid, main_tid, cpu_ns, op_ns);
      fmt::format_to(std::back_inserter(out),
                     "    \"External id\": {}, \"Record function id\": {}, \"Collective name\": "
                     "\"allreduce\", \"In msg nelems\": {}, \"Out msg nelems\": {}, \"Group "
                     "size\": {}, \"dtype\": \"Float\", \"Process Group Name\": \"0\", \"Process "
                     "Group Description\": \"default_pg\", \"Process Group Ranks\": \"[0, 1]\", "
                     "\"Seq\": {}, \"Ev Idx\": {}",
                     external_id, external_id, 1 << 20, 1 << 20, spec.world_size, sequence,
                     op * 3 + 1);
    } else {
      w.begin_x("cpu_op", kOps[which], pid, main_tid, cpu_ns, op_ns);
      fmt::format_to(std::back_inserter(out),
                     "    \"External id\": {}, \"Record function id\": {}, \"Sequence number\": "
                     "{}, \"Fwd thread id\": 1, \"Ev Idx\": {}",
                     external_id, external_id, op, op * 3 + 1);
    }
    w.end_x();
    w.begin_x("cuda_runtime", "cudaLaunchKernel", pid, main_tid, launch_at, launch_ns);
    fmt::format_to(std::back_inserter(out),
                   "    \"External id\": {}, \"cbid\": 211, \"correlation\": {}", external_id,
                   correlation);
    w.end_x();
    w.flow('s', correlation, pid, main_tid, launch_at);
    if (collective) {
      w.begin_x("kernel",
                "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 0,
                stream, gpu_start, gpu_ns);
    } else {
      w.begin_x("kernel", kKernels[which], 0, stream, gpu_start, gpu_ns);
    }
    fmt::format_to(std::back_inserter(out),
                   "    \"External id\": {}, \"queued\": 0, \"device\": 0, \"context\": 1, "
                   "\"stream\": {}, \"correlation\": {}, \"registers per thread\": 32, \"shared "
                   "memory\": 0, \"blocks per SM\": 3.2, \"warps per SM\": 25.6, \"grid\": [{}, 1, "
                   "1], \"block\": [256, 1, 1], \"est. achieved occupancy %\": 50",
                   external_id, stream, correlation, 64 + op % 1024);
    if (collective) {
      fmt::format_to(std::back_inserter(out),
                     ", \"Collective name\": \"allreduce\", \"In msg nelems\": {}, \"Out msg "
                     "nelems\": {}, \"Group size\": {}, \"dtype\": \"Float\", \"Process Group "
                     "Name\": \"0\", \"Seq\": {}",
                     1 << 20, 1 << 20, spec.world_size, sequence);
      ++sequence;
    }
    w.end_x();
    w.flow('f', correlation, 0, stream, gpu_start);
    ++correlation;
    ++external_id;
    ++op;
    if (spec.ops_per_step > 0 && op % spec.ops_per_step == 0) {
      const std::int64_t step_end_ns = timelines[self].cpu_ns;
      w.begin_x("user_annotation", fmt::format("ProfilerStep#{}", step), pid, main_tid,
                step_start_ns, step_end_ns - step_start_ns);
      fmt::format_to(std::back_inserter(out), "    \"External id\": {}", external_id++);
      w.end_x();
      ++step;
      step_start_ns = step_end_ns;
    }
  }
  out.append("\n  ],\n  \"traceName\": \"synthetic\"");
  if (spec.relative_time) {
    fmt::format_to(std::back_inserter(out),
                   ",\n  \"displayTimeUnit\": \"ms\",\n  "
                   "\"baseTimeNanoseconds\": {}",
                   w.base_ns());
  }
  out.append("\n}\n");
  return out;
}

}  // namespace powertrain::trace
