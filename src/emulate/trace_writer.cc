// TraceWriter: one JSON object per line with the common prefix of docs/emulation-trace.md.
#include "emulate/trace_writer.h"

#include <fmt/core.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "interposer/trace_schema.h"

namespace powertrain::emulate {
namespace {

namespace ops = trace_schema::op;

std::string json_quote(std::string_view text) { return nlohmann::json(std::string(text)).dump(); }

}  // namespace

TraceWriter::TraceWriter(int rank, int world_size, int devices, std::string gpu, std::int64_t pid)
    : devices_(devices), used_(devices, 0), peak_(devices, 0) {
  process_fields_ =
      fmt::format(R"({{"op":"process","version":1,"pid":{},"rank":{},"world_size":{},)"
                  R"("local_rank":{},"devices":{},"gpu":{},)",
                  pid, rank, world_size, rank, devices, json_quote(gpu));
}

TraceWriter& TraceWriter::program(std::string_view path) {
  program_ = path;
  return *this;
}

TraceWriter& TraceWriter::start_unix_ns(std::int64_t ns) {
  start_unix_ns_ = ns;
  return *this;
}

TraceWriter& TraceWriter::host_work(std::int64_t ns) {
  now_ += ns;
  return *this;
}
TraceWriter& TraceWriter::thread(int tid) {
  tid_ = tid;
  return *this;
}
TraceWriter& TraceWriter::device(int dev) {
  dev_ = dev;
  return *this;
}
TraceWriter& TraceWriter::call_ns(std::int64_t ns) {
  call_ns_ = ns;
  return *this;
}

std::string TraceWriter::begin(std::string_view op) {
  return fmt::format(R"({{"op":"{}","t":{},"dt":{},"tid":{},"dev":{})", op, now_, call_ns_, tid_,
                     dev_);
}

void TraceWriter::end(std::string line) {
  text_ += line;
  text_ += "}\n";
  now_ += call_ns_;
  ++records_;
}

void TraceWriter::raw(std::string_view line) {
  text_ += line;
  text_ += "\n";
}

void TraceWriter::register_kernel(std::string_view mangled, std::string_view display) {
  end(begin(ops::kRegister) +
      fmt::format(R"(,"name":{},"display":{})", json_quote(mangled), json_quote(display)));
}

std::int64_t TraceWriter::kernel(std::string_view name, std::int64_t grid, std::int64_t block,
                                 std::int64_t stream) {
  const std::int64_t corr = correlation_++;
  end(begin(ops::kKernel) +
      fmt::format(
          R"(,"stream":{},"corr":{},"name":{},"grid":[{},1,1],"block":[{},1,1],"shmem":0,"api":"cudaLaunchKernel")",
          stream, corr, json_quote(name), grid, block));
  return corr;
}

std::int64_t TraceWriter::gemm(std::int64_t m, std::int64_t n, std::int64_t k,
                               std::string_view dtype, std::int64_t stream, std::int64_t batch) {
  const std::int64_t corr = correlation_++;
  end(begin(ops::kGemm) +
      fmt::format(
          R"(,"api":"cublasGemmEx","m":{},"n":{},"k":{},"batch":{},"transa":0,"transb":0,)"
          R"("dtype_a":"{}","dtype_b":"{}","dtype_c":"{}","compute":"32F","flops":{},"stream":{},"corr":{})",
          m, n, k, batch, dtype, dtype, dtype, 2 * m * n * k * batch, stream, corr));
  return corr;
}

std::int64_t TraceWriter::memcpy(std::string_view kind, std::int64_t bytes, bool async,
                                 std::int64_t stream) {
  const std::int64_t corr = correlation_++;
  end(begin(ops::kMemcpy) +
      fmt::format(R"(,"stream":{},"corr":{},"kind":"{}","bytes":{},"async":{},"api":"{}")", stream,
                  corr, kind, bytes, async ? "true" : "false",
                  async ? "cudaMemcpyAsync" : "cudaMemcpy"));
  return corr;
}

std::int64_t TraceWriter::memset(std::int64_t bytes, bool async, std::int64_t stream) {
  const std::int64_t corr = correlation_++;
  end(begin(ops::kMemset) +
      fmt::format(R"(,"stream":{},"corr":{},"bytes":{},"async":{},"api":"{}")", stream, corr, bytes,
                  async ? "true" : "false", async ? "cudaMemsetAsync" : "cudaMemset"));
  return corr;
}

std::int64_t TraceWriter::malloc(std::int64_t bytes, bool fail) {
  const std::int64_t ptr = fail ? 0 : next_ptr_;
  if (!fail) {
    next_ptr_ += (bytes + 511) / 512 * 512 + 512;
    used_[dev_] += bytes;
    peak_[dev_] = std::max(peak_[dev_], used_[dev_]);
    allocations_[ptr] = {dev_, bytes};
  }
  end(begin(ops::kMalloc) + fmt::format(R"(,"ptr":{},"bytes":{},"ok":{},"kind":"device","used":{})",
                                        ptr, bytes, fail ? "false" : "true", used_[dev_]));
  return ptr;
}

void TraceWriter::free(std::int64_t ptr) {
  auto it = allocations_.find(ptr);
  const std::int64_t bytes = it == allocations_.end() ? 0 : it->second.second;
  if (it != allocations_.end()) {
    used_[it->second.first] -= bytes;
    allocations_.erase(it);
  }
  end(begin(ops::kFree) +
      fmt::format(R"(,"ptr":{},"bytes":{},"used":{})", ptr, bytes, used_[dev_]));
}

void TraceWriter::stream_create(std::int64_t stream) {
  end(begin(ops::kStreamCreate) + fmt::format(R"(,"stream":{},"flags":1,"priority":0)", stream));
}
void TraceWriter::event_create(std::int64_t event) {
  end(begin(ops::kEventCreate) + fmt::format(R"(,"event":{},"flags":0)", event));
}
void TraceWriter::event_record(std::int64_t event, std::int64_t stream) {
  end(begin(ops::kEventRecord) +
      fmt::format(R"(,"event":{},"stream":{},"corr":{})", event, stream, correlation_++));
}
void TraceWriter::stream_wait_event(std::int64_t stream, std::int64_t event) {
  end(begin(ops::kStreamWaitEvent) +
      fmt::format(R"(,"stream":{},"event":{},"corr":{})", stream, event, correlation_++));
}
void TraceWriter::stream_sync(std::int64_t stream) {
  end(begin(ops::kStreamSync) + fmt::format(R"(,"stream":{})", stream));
}
void TraceWriter::event_sync(std::int64_t event) {
  end(begin(ops::kEventSync) + fmt::format(R"(,"event":{})", event));
}
void TraceWriter::device_sync() { end(begin(ops::kDeviceSync)); }
void TraceWriter::set_device(int dev) {
  dev_ = dev;
  end(begin(ops::kSetDevice));
}

void TraceWriter::comm_init(std::string_view comm, int rank, int size) {
  end(begin(ops::kCommInit) +
      fmt::format(R"(,"comm":{},"rank":{},"size":{},"api":"ncclCommInitRank")", json_quote(comm),
                  rank, size));
}

std::int64_t TraceWriter::nccl(std::string_view coll, std::string_view comm, int comm_rank,
                               int comm_size, std::int64_t count, std::string_view dtype,
                               std::int64_t stream, int peer, std::int64_t group) {
  const bool send = coll == "send";
  const bool recv = coll == "recv";
  const auto key = std::make_tuple(std::string(comm), send || recv ? peer : -1,
                                   send ? 1 : (recv ? 2 : 0), comm_rank);
  const std::int64_t seq = sequence_[key]++;
  const std::int64_t corr = correlation_++;
  const int size = dtype == "float32" || dtype == "int32" ? 4 : dtype == "float64" ? 8 : 2;
  std::string line =
      begin(ops::kNccl) + fmt::format(R"(,"coll":"{}","comm":{},"comm_rank":{},"comm_size":{},)"
                                      R"("count":{},"dtype":"{}","bytes":{},"stream":{},"seq":{},)"
                                      R"("corr":{},"group":{},"api":"nccl{}")",
                                      coll, json_quote(comm), comm_rank, comm_size, count, dtype,
                                      count * size, stream, seq, corr, group, coll);
  if (peer >= 0) line += fmt::format(R"(,"peer":{})", peer);
  end(std::move(line));
  return corr;
}

void TraceWriter::unsupported(std::string_view api) {
  end(begin(ops::kUnsupported) + fmt::format(R"(,"api":{})", json_quote(api)));
}

void TraceWriter::misuse(std::string_view api, std::string_view what) {
  end(begin(ops::kMisuse) +
      fmt::format(R"(,"api":{},"what":{})", json_quote(api), json_quote(what)));
}

std::string TraceWriter::finish(bool exit) const {
  std::string out = process_fields_;
  out += fmt::format(R"("program":{},"argv":[{}],"start_unix_ns":{}}})", json_quote(program_),
                     json_quote(program_), start_unix_ns_);
  out += "\n";
  out += text_;
  if (exit) {
    std::string peaks;
    for (std::size_t d = 0; d < peak_.size(); ++d) {
      if (d > 0) peaks += ',';
      peaks += std::to_string(peak_[d]);
    }
    out += fmt::format(R"({{"op":"exit","t":{},"peak_used":[{}],"records":{}}})", now_, peaks,
                       records_);
    out += "\n";
  }
  return out;
}

}  // namespace powertrain::emulate
