// Writes emulation traces (docs/emulation-trace.md) programmatically, the way the interposer
// would record a program: for tests, benchmarks and fuzzing seeds, without building or running
// the interposer. Each call is recorded at the writer's host clock, which then advances by the
// call's recorded duration; host_work() advances it between calls.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

namespace powertrain::emulate {

class TraceWriter {
 public:
  TraceWriter(int rank, int world_size, int devices = 1, std::string gpu = "h100",
              std::int64_t pid = 1000);

  /// The process line's program (argv[0]; default "./prog") and start on the Unix clock
  /// (default 1.7e18 ns).
  TraceWriter& program(std::string_view path);
  TraceWriter& start_unix_ns(std::int64_t ns);
  /// Host work between calls (ns): the gap before the next call.
  TraceWriter& host_work(std::int64_t ns);
  /// Thread and device of the following calls (dense thread index; device of this process).
  TraceWriter& thread(int tid);
  TraceWriter& device(int dev);
  /// Recorded time inside each call (the interposer's, ns; default 200).
  TraceWriter& call_ns(std::int64_t ns);
  std::int64_t now_ns() const { return now_; }

  void register_kernel(std::string_view mangled, std::string_view display);
  /// Returns the correlation id.
  std::int64_t kernel(std::string_view name, std::int64_t grid, std::int64_t block,
                      std::int64_t stream = 0);
  std::int64_t gemm(std::int64_t m, std::int64_t n, std::int64_t k, std::string_view dtype,
                    std::int64_t stream = 0, std::int64_t batch = 1);
  std::int64_t memcpy(std::string_view kind, std::int64_t bytes, bool async,
                      std::int64_t stream = 0);
  std::int64_t memset(std::int64_t bytes, bool async, std::int64_t stream = 0);
  /// Tracks bytes in use per device; `fail` records an out-of-memory failure.
  std::int64_t malloc(std::int64_t bytes, bool fail = false);
  void free(std::int64_t ptr);
  void stream_create(std::int64_t stream);
  void event_create(std::int64_t event);
  void event_record(std::int64_t event, std::int64_t stream);
  void stream_wait_event(std::int64_t stream, std::int64_t event);
  void stream_sync(std::int64_t stream);
  void event_sync(std::int64_t event);
  void device_sync();
  void set_device(int dev);
  void comm_init(std::string_view comm, int rank, int size);
  /// An NCCL call; `seq` is numbered per communicator (collectives) or per (communicator, peer,
  /// direction) (send/recv) as the interposer does. `group` = ncclGroupStart/End block id.
  std::int64_t nccl(std::string_view coll, std::string_view comm, int comm_rank, int comm_size,
                    std::int64_t count, std::string_view dtype, std::int64_t stream = 0,
                    int peer = -1, std::int64_t group = 0);
  void unsupported(std::string_view api);
  void misuse(std::string_view api, std::string_view what);
  /// Any line, verbatim (for malformed-input tests).
  void raw(std::string_view line);

  /// The trace text; with `exit` an exit line is appended.
  std::string finish(bool exit = true) const;

 private:
  std::string begin(std::string_view op);
  void end(std::string line);

  std::string process_fields_;  // the process line up to its program
  std::string program_ = "./prog";
  std::int64_t start_unix_ns_ = 1'700'000'000'000'000'000;
  std::string text_;  // the lines after the process line
  std::int64_t now_ = 1'000;
  std::int64_t call_ns_ = 200;
  int tid_ = 0;
  int dev_ = 0;
  int devices_ = 1;
  std::int64_t correlation_ = 1;
  std::int64_t next_ptr_ = 0x7f0000000000;
  std::int64_t records_ = 0;
  std::vector<std::int64_t> used_;
  std::vector<std::int64_t> peak_;
  std::map<std::int64_t, std::pair<int, std::int64_t>> allocations_;  // ptr → (device, bytes)
  std::map<std::tuple<std::string, int, int, int>, std::int64_t> sequence_;
};

}  // namespace powertrain::emulate
