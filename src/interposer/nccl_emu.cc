// NCCL emulation for the interposer: every communicator call and collective is answered locally
// and recorded in the trace (docs/emulation-trace.md: `comm_init`, `nccl`); no data moves and no
// network is touched. NCCL carries its own static cudart, so it is intercepted at its own API: this
// file defines every symbol libnccl.so.2 exports, each under its `ncclX` name and the `pncclX`
// profiling alias. Calls the emulator cannot honour return ncclInvalidUsage and are reported by
// name; invalid or destroyed communicators return ncclInvalidArgument and are reported as misuse
// (handles are never dereferenced before they are found in the registry of communicators, and
// communicator objects are never freed, so a stale handle can never alias a new one).
//
// Communicator ids (hex strings in the trace) never collide between independent processes: the
// hash of the unique id for ncclCommInitRank*, of (POWERTRAIN_EMU_JOB, process nonce, call
// number) for ncclCommInitAll, and of (parent id, split number, colour) for ncclCommSplit.
// ncclGetUniqueId, like NCCL's, is unique per call: (POWERTRAIN_EMU_JOB, process nonce, call
// number), so members must share rank 0's id (as with real NCCL). The nonce is a hash of the pid,
// the time of the first use and an ASLR address, recomputed in a forked child.
//
// ncclCommSplit needs every member's (colour, key): members in this process meet in memory (the
// ncclCommInitAll case, splits issued inside one group); members in other processes meet through
// files under $POWERTRAIN_EMU_DIR/nccl-split/ (timeout POWERTRAIN_EMU_RENDEZVOUS_TIMEOUT_S,
// default 120 s). The directory should be fresh per run, as the trace files in it are.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#pragma GCC visibility push(default)
#include <nccl.h>
#pragma GCC visibility pop

#include "interposer/cublas_nccl_util.h"
#include "interposer/cudart_internal.h"
#include "interposer/emulator.h"
#include "interposer/trace_schema.h"

namespace trace_schema = powertrain::trace_schema;

namespace {

namespace emu = powertrain::emu;
using powertrain::emu::libs::env_or;
using powertrain::emu::libs::env_seconds;
using powertrain::emu::libs::fnv1a64;
using powertrain::emu::libs::handle_text;
using powertrain::emu::libs::hex64;

constexpr int kSend = 0;
constexpr int kRecv = 1;
constexpr char kUniqueIdMagic[8] = {'P', 'T', 'E', 'M', 'U', 'N', 'C', 'L'};

enum class CommState { kLive, kFinalized, kRevoked, kDestroyed, kFailed };

const char* state_text(CommState state) {
  switch (state) {
    case CommState::kLive:
      return "live";
    case CommState::kFinalized:
      return "finalized (ncclCommFinalize)";
    case CommState::kRevoked:
      return "revoked (ncclCommRevoke)";
    case CommState::kDestroyed:
      return "destroyed";
    case CommState::kFailed:
      return "failed to initialize";
  }
  return "?";
}

struct Comm {
  std::uint64_t id = 0;
  std::string id_hex;
  int device = 0;
  CommState state = CommState::kLive;  // guarded by Registry::mu

  std::mutex mu;  // guards everything below
  int rank = -1;  // -1 until a split inside a group is resolved at ncclGroupEnd
  int size = 0;
  std::int64_t coll_seq = 0;
  std::map<std::pair<int, int>, std::int64_t> p2p_seq;  // (peer, kSend/kRecv) → next seq
  std::int64_t derived = 0;                             // splits and shrinks issued so far
  int next_op = ncclNumOps;
  std::set<int> ops;  // live ncclRedOpCreatePreMulSum operators
};

struct Registry {
  std::mutex mu;
  std::unordered_map<const void*, Comm*> comms;    // every communicator ever created
  std::unordered_set<const void*> memory;          // live ncclMemAlloc blocks
  std::unordered_set<const void*> buffer_handles;  // live ncclCommRegister handles
  std::unordered_set<const void*> windows;         // live ncclCommWindowRegister windows
};

Registry& registry() {
  static auto* instance = new Registry;  // never destroyed: calls may come from atexit handlers
  return *instance;
}

// ---- errors -------------------------------------------------------------------------------

// Trivially destructible on purpose (as all thread-local state here): programs call NCCL from
// static destructors and atexit handlers, after non-trivial thread_local objects are gone.
thread_local char t_last_error[512];

void set_last_error_text(std::string_view text) {
  const std::size_t n = std::min(text.size(), sizeof t_last_error - 1);
  std::memcpy(t_last_error, text.data(), n);
  t_last_error[n] = '\0';
}

ncclResult_t misuse(std::string_view api, const std::string& what, ncclResult_t code) {
  set_last_error_text(std::string(api) + ": " + what);
  emu::report_misuse(api, what);
  return code;
}

ncclResult_t unsupported(std::string_view api) {
  set_last_error_text(std::string(api) + " is not supported by the powertrain GPU emulator");
  emu::report_unsupported(api);
  return ncclInvalidUsage;
}

std::string describe(const Comm& comm) {
  return "communicator " + handle_text(&comm) + " (id " + comm.id_hex + ")";
}

/// Finds a usable communicator by handle without dereferencing unknown pointers.
Comm* find_comm(ncclComm_t handle, std::string_view api, ncclResult_t* result,
                bool allow_finalized = false) {
  if (handle == nullptr) {
    *result = misuse(api, "NULL communicator", ncclInvalidArgument);
    return nullptr;
  }
  Registry& reg = registry();
  std::unique_lock lock(reg.mu);
  const auto it = reg.comms.find(handle);
  if (it == reg.comms.end()) {
    lock.unlock();
    *result = misuse(api,
                     "invalid communicator " + handle_text(handle) +
                         " (not created by ncclCommInit*/ncclCommSplit in this process)",
                     ncclInvalidArgument);
    return nullptr;
  }
  Comm* comm = it->second;
  const CommState state = comm->state;
  lock.unlock();
  if (state == CommState::kLive ||
      (allow_finalized && (state == CommState::kFinalized || state == CommState::kRevoked))) {
    *result = ncclSuccess;
    return comm;
  }
  const bool gone = state == CommState::kDestroyed || state == CommState::kFailed;
  *result = misuse(api, describe(*comm) + " was " + state_text(state),
                   gone ? ncclInvalidArgument : ncclInvalidUsage);
  return nullptr;
}

Comm* new_comm(std::uint64_t id, int rank, int size, int device) {
  auto* comm = new Comm;
  comm->id = id;
  comm->id_hex = hex64(id);
  comm->rank = rank;
  comm->size = size;
  comm->device = device;
  Registry& reg = registry();
  std::lock_guard lock(reg.mu);
  reg.comms.emplace(comm, comm);
  return comm;
}

void set_state(Comm* comm, CommState state) {
  Registry& reg = registry();
  std::lock_guard lock(reg.mu);
  comm->state = state;
}

ncclComm_t to_handle(Comm* comm) { return reinterpret_cast<ncclComm_t>(comm); }

void put(emu::RecordBuilder& record, std::string_view key, std::int64_t value) {
  record.field(key, value);
}

void record_init(Comm& comm, std::string_view api, std::int64_t start_ns,
                 const Comm* parent = nullptr, int color = 0, int key = 0) {
  int rank = 0;
  int size = 0;
  {
    std::lock_guard lock(comm.mu);
    rank = comm.rank;
    size = comm.size;
  }
  auto record = emu::begin_record(trace_schema::op::kCommInit, start_ns, comm.device);
  record.field(trace_schema::field::kComm, comm.id_hex);
  put(record, trace_schema::field::kRank, rank);
  put(record, trace_schema::field::kSize, size);
  record.field(trace_schema::field::kApi, api);
  if (parent != nullptr) record.field("parent", parent->id_hex);
  if (api == "ncclCommSplit") {
    put(record, "color", color);
    put(record, "key", key);
  }
  emu::end_record(record);
}

// ---- dtypes and operators -------------------------------------------------------------------

const char* dtype_name(int dtype) {
  switch (dtype) {
    case ncclInt8:
      return "int8";
    case ncclUint8:
      return "uint8";
    case ncclInt32:
      return "int32";
    case ncclUint32:
      return "uint32";
    case ncclInt64:
      return "int64";
    case ncclUint64:
      return "uint64";
    case ncclFloat16:
      return "float16";
    case ncclFloat32:
      return "float32";
    case ncclFloat64:
      return "float64";
    case ncclBfloat16:
      return "bfloat16";
    case ncclFloat8e4m3:
      return "float8_e4m3";
    case ncclFloat8e5m2:
      return "float8_e5m2";
    default:
      return nullptr;
  }
}

std::size_t dtype_size(int dtype) {
  switch (dtype) {
    case ncclInt8:
    case ncclUint8:
    case ncclFloat8e4m3:
    case ncclFloat8e5m2:
      return 1;
    case ncclFloat16:
    case ncclBfloat16:
      return 2;
    case ncclInt32:
    case ncclUint32:
    case ncclFloat32:
      return 4;
    default:
      return 8;
  }
}

const char* op_name(int op) {
  switch (op) {
    case ncclSum:
      return "sum";
    case ncclProd:
      return "prod";
    case ncclMax:
      return "max";
    case ncclMin:
      return "min";
    case ncclAvg:
      return "avg";
    default:
      return "premulsum";
  }
}

// ---- groups ---------------------------------------------------------------------------------

std::atomic<std::int64_t> g_group_counter{0};
thread_local int t_group_depth = 0;
thread_local std::int64_t t_group_id = 0;

struct PendingSplit {
  Comm* parent = nullptr;
  int parent_rank = 0;
  int parent_size = 0;
  std::int64_t index = 0;  // which split/shrink of the parent this is
  int color = 0;
  int key = 0;
  Comm* child = nullptr;  // nullptr for NCCL_SPLIT_NOCOLOR
  std::int64_t start_ns = 0;
};
thread_local std::vector<PendingSplit>* t_pending_splits;  // allocated on first use, never freed

// ---- collectives ----------------------------------------------------------------------------

enum class Elems { kNone, kCount, kCountTimesSize };

struct Coll {
  const char* api = "";
  const char* coll = "";
  const void* send = nullptr;
  const void* recv = nullptr;
  Elems send_elems = Elems::kCount;
  Elems recv_elems = Elems::kCount;
  bool send_on_root_only = false;
  bool recv_on_root_only = false;
  std::size_t count = 0;
  int dtype = 0;
  bool has_op = false;  // reductions only
  int op = 0;
  bool has_root = false;
  int root = -1;
  int peer = -1;  // send/recv only
  int direction = -1;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;

  // One call's arguments; the modifiers below set what differs between collectives.
  static Coll call(const char* api, const char* coll, const void* send, const void* recv,
                   std::size_t count, int dtype, ncclComm_t comm, cudaStream_t stream) {
    return Coll{.api = api,
                .coll = coll,
                .send = send,
                .recv = recv,
                .count = count,
                .dtype = dtype,
                .comm = comm,
                .stream = stream};
  }
  Coll& reduction(int reduce_op) {
    has_op = true;
    op = reduce_op;
    return *this;
  }
  Coll& at_root(int root_rank) {
    has_root = true;
    root = root_rank;
    return *this;
  }
  Coll& elements(Elems sent, Elems received) {
    send_elems = sent;
    recv_elems = received;
    return *this;
  }
  Coll& only_root_sends() {
    send_on_root_only = true;
    return *this;
  }
  Coll& only_root_receives() {
    recv_on_root_only = true;
    return *this;
  }
  Coll& with_peer(int peer_rank, int send_or_recv) {
    peer = peer_rank;
    direction = send_or_recv;
    return *this;
  }
};

// An NCCL call captured into a CUDA graph runs at every cudaGraphLaunch: each replay takes the
// communicator's next sequence number (so the ranks' launches pair up call by call), and the
// calls of one ncclGroupStart/End block form a new group at each launch. The capture stored the
// communicator in a[2], (direction + 1) << 32 | (peer + 1) in a[3] and the group id in a[4].
thread_local std::int64_t t_replay_launch = 0;
thread_local int t_replay_groups = 0;
thread_local std::int64_t t_replay_group_map[16][2];  // captured group id → this launch's id

void replay_captured(emu::detail::Record& r, std::int64_t launch) {
  auto* comm = reinterpret_cast<Comm*>(r.a[2]);
  const int direction = static_cast<int>(r.a[3] >> 32) - 1;
  const int peer = static_cast<int>(r.a[3] & 0xffffffffLL) - 1;
  std::int64_t seq = 0;
  {
    std::lock_guard lock(comm->mu);
    seq = direction >= 0 ? comm->p2p_seq[{peer, direction}]++ : comm->coll_seq++;
  }
  std::int64_t group = 0;
  if (r.a[4] != 0) {
    if (t_replay_launch != launch) {
      t_replay_launch = launch;
      t_replay_groups = 0;
    }
    for (int i = 0; i < t_replay_groups && group == 0; ++i) {
      if (t_replay_group_map[i][0] == r.a[4]) group = t_replay_group_map[i][1];
    }
    if (group == 0) {
      group = ++g_group_counter;
      if (t_replay_groups < 16) {
        t_replay_group_map[t_replay_groups][0] = r.a[4];
        t_replay_group_map[t_replay_groups][1] = group;
        ++t_replay_groups;
      }
    }
  }
  r.text.append(",\"").append(trace_schema::field::kSeq).append("\":");
  r.text.append(std::to_string(seq));
  r.text.append(",\"").append(trace_schema::field::kGroup).append("\":");
  r.text.append(std::to_string(group));
}

ncclResult_t enqueue(const Coll& c) {
  const std::int64_t start_ns = emu::now_ns();
  ncclResult_t result = ncclSuccess;
  Comm* comm = find_comm(c.comm, c.api, &result);
  if (comm == nullptr) return result;
  const char* dtype = dtype_name(c.dtype);
  if (dtype == nullptr) {
    return misuse(c.api, "invalid datatype " + std::to_string(c.dtype), ncclInvalidArgument);
  }
  int rank = 0;
  int size = 0;
  {
    std::lock_guard lock(comm->mu);
    rank = comm->rank;
    size = comm->size;
    if (c.has_op && c.op >= ncclNumOps && comm->ops.count(c.op) == 0) {
      return misuse(c.api,
                    "invalid reduction operator " + std::to_string(c.op) + " for " +
                        describe(*comm) + " (not created by ncclRedOpCreatePreMulSum or destroyed)",
                    ncclInvalidArgument);
    }
  }
  if (rank < 0) {
    return misuse(c.api,
                  describe(*comm) + " comes from an ncclCommSplit that completes at ncclGroupEnd",
                  ncclInvalidUsage);
  }
  if (c.has_op && c.op < 0) {
    return misuse(c.api, "invalid reduction operator " + std::to_string(c.op), ncclInvalidArgument);
  }
  if (c.has_root && (c.root < 0 || c.root >= size)) {
    return misuse(c.api,
                  "root " + std::to_string(c.root) + " out of range for " + describe(*comm) +
                      " of size " + std::to_string(size),
                  ncclInvalidArgument);
  }
  if (c.direction >= 0 && (c.peer < 0 || c.peer >= size)) {
    return misuse(c.api,
                  "peer " + std::to_string(c.peer) + " out of range for " + describe(*comm) +
                      " of size " + std::to_string(size),
                  ncclInvalidArgument);
  }
  const bool is_root = !c.has_root || c.root == rank;
  if (c.count > 0) {
    if (c.send_elems != Elems::kNone && c.send == nullptr && (!c.send_on_root_only || is_root)) {
      return misuse(c.api, "send buffer is NULL", ncclInvalidArgument);
    }
    if (c.recv_elems != Elems::kNone && c.recv == nullptr && (!c.recv_on_root_only || is_root)) {
      return misuse(c.api, "receive buffer is NULL", ncclInvalidArgument);
    }
  }
  int stream_device = 0;
  const std::int64_t stream = emu::stream_id(c.stream, false, &stream_device);
  if (stream == emu::kInvalidStream) {
    return misuse(c.api, "invalid CUDA stream " + handle_text(c.stream), ncclInvalidArgument);
  }

  const std::size_t elem = dtype_size(c.dtype);
  auto buffer_bytes = [&](Elems elems, bool root_only) -> std::int64_t {
    if (elems == Elems::kNone || (root_only && !is_root)) return 0;
    const std::size_t n =
        elems == Elems::kCount ? c.count : c.count * static_cast<std::size_t>(size);
    return static_cast<std::int64_t>(n * elem);
  };
  const auto call_fields = [&](emu::RecordBuilder& record) {
    record.field(trace_schema::field::kColl, c.coll);
    record.field(trace_schema::field::kApi, c.api);
    record.field(trace_schema::field::kComm, comm->id_hex);
    put(record, trace_schema::field::kCommRank, rank);
    put(record, trace_schema::field::kCommSize, size);
    put(record, trace_schema::field::kCount, static_cast<std::int64_t>(c.count));
    record.field(trace_schema::field::kDtype, dtype);
    put(record, trace_schema::field::kBytes, static_cast<std::int64_t>(c.count * elem));
    put(record, "send_bytes", buffer_bytes(c.send_elems, c.send_on_root_only));
    put(record, "recv_bytes", buffer_bytes(c.recv_elems, c.recv_on_root_only));
    if (c.direction >= 0) put(record, trace_schema::field::kPeer, c.peer);
    if (c.has_root) put(record, trace_schema::field::kRoot, c.root);
    if (c.has_op) record.field("redop", op_name(c.op));  // not "op": that key names the record
  };
  if (emu::detail::stream_capture_status(stream, nullptr, nullptr)) {
    // A graph node (see replay_captured): recorded at each launch, not now.
    emu::RecordBuilder work = emu::begin_work(trace_schema::op::kNccl, start_ns);
    call_fields(work);
    emu::detail::Record r =
        emu::detail::make_record(emu::detail::Op::kWork, start_ns, comm->device);
    r.a[0] = stream;
    r.a[1] = emu::next_correlation();
    r.a[2] = static_cast<std::int64_t>(reinterpret_cast<std::intptr_t>(comm));
    r.a[3] = (static_cast<std::int64_t>(c.direction + 1) << 32) | (c.peer + 1);
    r.a[4] = t_group_depth > 0 ? t_group_id : 0;
    r.text = std::move(work.text());
    r.on_replay = replay_captured;
    emu::detail::append(std::move(r));
    return ncclSuccess;
  }
  std::int64_t seq = 0;
  {
    std::lock_guard lock(comm->mu);
    seq = c.direction >= 0 ? comm->p2p_seq[{c.peer, c.direction}]++ : comm->coll_seq++;
  }
  auto record = emu::begin_record(trace_schema::op::kNccl, start_ns, comm->device);
  call_fields(record);
  put(record, trace_schema::field::kStream, stream);
  put(record, trace_schema::field::kSeq, seq);
  put(record, trace_schema::field::kCorr, emu::next_correlation());
  put(record, trace_schema::field::kGroup, t_group_depth > 0 ? t_group_id : 0);
  emu::end_record(record);
  return ncclSuccess;
}

// ---- ncclCommSplit rendezvous ---------------------------------------------------------------

struct Member {
  int color = 0;
  int key = 0;
};

struct SplitTable {
  std::mutex mu;
  std::condition_variable cv;
  std::map<std::string, std::map<int, Member>> members;  // rendezvous key → parent rank → member
};

SplitTable& split_table() {
  static auto* instance = new SplitTable;
  return *instance;
}

std::string rendezvous_key(const PendingSplit& split) {
  return split.parent->id_hex + "-" + std::to_string(split.index);
}

std::filesystem::path rendezvous_dir(const std::string& key) {
  const std::string base = env_or("POWERTRAIN_EMU_DIR", "");
  if (base.empty()) return {};
  return std::filesystem::path(base) / "nccl-split" / key;
}

bool write_member_file(const std::filesystem::path& dir, int rank, const Member& member) {
  std::error_code error;
  std::filesystem::create_directories(dir, error);
  const auto final_path = dir / ("rank-" + std::to_string(rank));
  std::ostringstream tmp_name;
  tmp_name << "rank-" << rank << ".tmp-" << ::getpid() << "-" << std::this_thread::get_id();
  const auto tmp_path = dir / tmp_name.str();
  {
    std::ofstream out(tmp_path, std::ios::trunc);
    if (!out) return false;
    out << member.color << ' ' << member.key << '\n';
    if (!out.flush()) return false;
  }
  std::filesystem::rename(tmp_path, final_path, error);
  return !error;
}

void scan_member_files(const std::filesystem::path& dir, int size, std::map<int, Member>* into) {
  std::error_code error;
  for (std::filesystem::directory_iterator it(dir, error), end; !error && it != end;
       it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (name.rfind("rank-", 0) != 0 || name.find(".tmp") != std::string::npos) continue;
    char* tail = nullptr;
    const long rank = std::strtol(name.c_str() + 5, &tail, 10);
    if (tail == nullptr || *tail != '\0' || rank < 0 || rank >= size) continue;
    if (into->count(static_cast<int>(rank)) != 0) continue;
    std::ifstream in(it->path());
    Member member;
    if (in >> member.color >> member.key) into->emplace(static_cast<int>(rank), member);
  }
}

/// Waits until all `size` members of a split rendezvous are known. False on timeout.
bool wait_members(const std::string& key, int size, const std::filesystem::path& dir,
                  std::map<int, Member>* out) {
  SplitTable& table = split_table();
  const double timeout_s = env_seconds("POWERTRAIN_EMU_RENDEZVOUS_TIMEOUT_S", 120.0);
  const auto deadline = std::chrono::steady_clock::now() +
                        std::chrono::milliseconds(static_cast<std::int64_t>(timeout_s * 1000));
  auto poll = std::chrono::milliseconds(1);
  std::unique_lock lock(table.mu);
  while (true) {
    if (static_cast<int>(table.members[key].size()) >= size) {
      *out = table.members[key];
      return true;
    }
    if (!dir.empty()) {
      std::map<int, Member> found = table.members[key];
      lock.unlock();
      scan_member_files(dir, size, &found);
      lock.lock();
      auto& known = table.members[key];
      for (const auto& [rank, member] : found) known.emplace(rank, member);
      if (static_cast<int>(known.size()) >= size) continue;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      *out = table.members[key];
      return false;
    }
    table.cv.wait_for(lock, poll);
    poll = std::min(poll * 2, std::chrono::milliseconds(20));
  }
}

/// Resolves splits (one, or all those issued inside a group): publishes every member first, then
/// waits for each rendezvous, so members issued by this thread never wait for each other.
ncclResult_t resolve_splits(std::vector<PendingSplit>& splits) {
  SplitTable& table = split_table();
  {
    std::lock_guard lock(table.mu);
    for (const PendingSplit& split : splits) {
      table.members[rendezvous_key(split)][split.parent_rank] = Member{split.color, split.key};
    }
  }
  table.cv.notify_all();
  for (const PendingSplit& split : splits) {
    const std::string key = rendezvous_key(split);
    bool complete = false;
    {
      std::lock_guard lock(table.mu);
      complete = static_cast<int>(table.members[key].size()) >= split.parent_size;
    }
    const auto dir = rendezvous_dir(key);
    if (!complete && !dir.empty() &&
        !write_member_file(dir, split.parent_rank, Member{split.color, split.key})) {
      emu::report_misuse("ncclCommSplit", "cannot write the rendezvous file in " + dir.string() +
                                              " (POWERTRAIN_EMU_DIR must be writable)");
    }
  }
  ncclResult_t status = ncclSuccess;
  for (PendingSplit& split : splits) {
    const std::string key = rendezvous_key(split);
    std::map<int, Member> members;
    if (!wait_members(key, split.parent_size, rendezvous_dir(key), &members)) {
      const std::string what =
          "timed out waiting for " + std::to_string(split.parent_size - members.size()) + " of " +
          std::to_string(split.parent_size) + " ranks of " + describe(*split.parent) + " (split #" +
          std::to_string(split.index) +
          "); every rank must call ncclCommSplit, and ranks in other processes need a shared "
          "POWERTRAIN_EMU_DIR (timeout: POWERTRAIN_EMU_RENDEZVOUS_TIMEOUT_S)";
      if (split.child != nullptr) set_state(split.child, CommState::kFailed);
      status = misuse("ncclCommSplit", what, ncclSystemError);
      continue;
    }
    if (split.child == nullptr) continue;
    std::vector<std::pair<int, int>> group;  // (key, parent rank) of members with this colour
    for (const auto& [rank, member] : members) {
      if (member.color == split.color) group.emplace_back(member.key, rank);
    }
    std::sort(group.begin(), group.end());
    const auto self =
        std::find(group.begin(), group.end(), std::make_pair(split.key, split.parent_rank));
    {
      std::lock_guard lock(split.child->mu);
      split.child->rank = static_cast<int>(self - group.begin());
      split.child->size = static_cast<int>(group.size());
    }
    record_init(*split.child, "ncclCommSplit", split.start_ns, split.parent, split.color,
                split.key);
  }
  return status;
}

// ---- unique ids -----------------------------------------------------------------------------

std::atomic<std::int64_t> g_unique_id_calls{0};
std::atomic<std::int64_t> g_init_all_calls{0};

// Distinct for every process (and a forked child): two independent processes that each call
// ncclCommInitAll or ncclGetUniqueId must not produce the same communicator.
std::uint64_t process_nonce() {
  static std::mutex mu;
  static pid_t owner = -1;
  static std::uint64_t nonce = 0;
  std::lock_guard lock(mu);
  const pid_t pid = ::getpid();
  if (pid != owner) {
    const auto now = std::chrono::system_clock::now().time_since_epoch().count();
    int on_stack = 0;
    const std::string seed = std::to_string(pid) + "|" + std::to_string(now) + "|" +
                             std::to_string(reinterpret_cast<std::uintptr_t>(&on_stack));
    nonce = fnv1a64(seed);
    owner = pid;
  }
  return nonce;
}

std::uint64_t unique_id_hash(const ncclUniqueId& id) {
  return fnv1a64(id.internal, sizeof id.internal);
}

int process_rank() {
  const std::string rank = env_or("RANK", "-1");
  return std::atoi(rank.c_str());
}

ncclResult_t init_rank(ncclComm_t* comm, int nranks, std::uint64_t id, int rank, const char* api,
                       std::int64_t start_ns) {
  if (comm == nullptr) return misuse(api, "comm output pointer is NULL", ncclInvalidArgument);
  if (nranks < 1) {
    return misuse(api, "invalid nranks " + std::to_string(nranks), ncclInvalidArgument);
  }
  if (rank < 0 || rank >= nranks) {
    return misuse(
        api, "rank " + std::to_string(rank) + " out of range [0, " + std::to_string(nranks) + ")",
        ncclInvalidArgument);
  }
  const int device = emu::current_device();
  Comm* created = new_comm(id, rank, nranks, device);
  *comm = to_handle(created);
  record_init(*created, api, start_ns);
  return ncclSuccess;
}

ncclResult_t check_config(const ncclConfig_t* config, const char* api) {
  if (config != nullptr && config->magic != 0xcafebeef) {
    return misuse(api, "ncclConfig_t not initialized with NCCL_CONFIG_INITIALIZER",
                  ncclInvalidArgument);
  }
  return ncclSuccess;
}

struct Team {  // ncclTeam_t of nccl_device/core.h (passed and returned by value)
  int nRanks;
  int rank;
  int stride;
};

}  // namespace

// ===== exported API ==========================================================================

PT_EXPORT ncclResult_t ncclGetVersion(int* version) {
  if (version == nullptr) return misuse("ncclGetVersion", "NULL argument", ncclInvalidArgument);
  *version = NCCL_VERSION_CODE;
  return ncclSuccess;
}

PT_EXPORT ncclResult_t ncclGetUniqueId(ncclUniqueId* unique_id) {
  if (unique_id == nullptr) {
    return misuse("ncclGetUniqueId", "NULL argument", ncclInvalidArgument);
  }
  const std::string job = env_or("POWERTRAIN_EMU_JOB", "");
  const std::int64_t call = ++g_unique_id_calls;
  const std::uint64_t job_hash = fnv1a64(job);
  const std::uint64_t nonce = process_nonce();
  std::memset(unique_id->internal, 0, sizeof unique_id->internal);
  std::memcpy(unique_id->internal, kUniqueIdMagic, 8);
  std::memcpy(unique_id->internal + 8, &job_hash, 8);
  std::memcpy(unique_id->internal + 16, &call, 8);
  std::memcpy(unique_id->internal + 24, &nonce, 8);
  std::memcpy(unique_id->internal + 32, job.data(),
              std::min(job.size(), sizeof unique_id->internal - 33));
  return ncclSuccess;
}

PT_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId comm_id,
                                        int rank) {
  const std::int64_t start_ns = emu::now_ns();
  return init_rank(comm, nranks, unique_id_hash(comm_id), rank, "ncclCommInitRank", start_ns);
}

PT_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t* comm, int nranks, ncclUniqueId comm_id,
                                              int rank, ncclConfig_t* config) {
  const std::int64_t start_ns = emu::now_ns();
  if (const ncclResult_t r = check_config(config, "ncclCommInitRankConfig"); r != ncclSuccess) {
    return r;
  }
  return init_rank(comm, nranks, unique_id_hash(comm_id), rank, "ncclCommInitRankConfig", start_ns);
}

PT_EXPORT ncclResult_t ncclCommInitRankScalable(ncclComm_t* newcomm, int nranks, int myrank,
                                                int n_id, ncclUniqueId* comm_ids,
                                                ncclConfig_t* config) {
  const std::int64_t start_ns = emu::now_ns();
  const char* api = "ncclCommInitRankScalable";
  if (const ncclResult_t r = check_config(config, api); r != ncclSuccess) return r;
  if (n_id < 1 || comm_ids == nullptr) {
    return misuse(api, "needs at least one unique id", ncclInvalidArgument);
  }
  std::uint64_t id = 14695981039346656037ull;
  for (int i = 0; i < n_id; ++i) id = fnv1a64(comm_ids[i].internal, NCCL_UNIQUE_ID_BYTES, id);
  return init_rank(newcomm, nranks, id, myrank, api, start_ns);
}

PT_EXPORT ncclResult_t ncclCommInitAll(ncclComm_t* comms, int ndev, const int* devlist) {
  const std::int64_t start_ns = emu::now_ns();
  const char* api = "ncclCommInitAll";
  if (comms == nullptr) return misuse(api, "comms is NULL", ncclInvalidArgument);
  if (ndev < 1) return misuse(api, "invalid ndev " + std::to_string(ndev), ncclInvalidArgument);
  const int available = emu::device_count();
  std::set<int> seen;
  for (int i = 0; i < ndev; ++i) {
    const int device = devlist != nullptr ? devlist[i] : i;
    if (device < 0 || device >= available) {
      return misuse(api,
                    "device " + std::to_string(device) + " out of range: the process has " +
                        std::to_string(available) + " emulated device(s) (POWERTRAIN_EMU_DEVICES)",
                    ncclInvalidArgument);
    }
    if (!seen.insert(device).second) {
      return misuse(api, "duplicate device " + std::to_string(device) + " in devlist",
                    ncclInvalidArgument);
    }
  }
  const std::string seed = "initall|" + env_or("POWERTRAIN_EMU_JOB", "") + "|" +
                           std::to_string(process_rank()) + "|" + std::to_string(process_nonce()) +
                           "|" + std::to_string(++g_init_all_calls);
  const std::uint64_t id = fnv1a64(seed);
  for (int i = 0; i < ndev; ++i) {
    Comm* comm = new_comm(id, i, ndev, devlist != nullptr ? devlist[i] : i);
    comms[i] = to_handle(comm);
    record_init(*comm, api, start_ns);
  }
  return ncclSuccess;
}

PT_EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t* newcomm,
                                     ncclConfig_t* config) {
  const std::int64_t start_ns = emu::now_ns();
  const char* api = "ncclCommSplit";
  ncclResult_t result = ncclSuccess;
  Comm* parent = find_comm(comm, api, &result);
  if (parent == nullptr) return result;
  if (newcomm == nullptr) return misuse(api, "newcomm is NULL", ncclInvalidArgument);
  if (const ncclResult_t r = check_config(config, api); r != ncclSuccess) return r;
  if (color < 0 && color != NCCL_SPLIT_NOCOLOR) {
    return misuse(api, "invalid color " + std::to_string(color), ncclInvalidArgument);
  }
  PendingSplit split;
  split.parent = parent;
  split.color = color;
  split.key = key;
  split.start_ns = start_ns;
  {
    std::lock_guard lock(parent->mu);
    if (parent->rank < 0) {
      return misuse(api, describe(*parent) + " is itself not resolved before ncclGroupEnd",
                    ncclInvalidUsage);
    }
    split.parent_rank = parent->rank;
    split.parent_size = parent->size;
    split.index = parent->derived++;
  }
  if (color != NCCL_SPLIT_NOCOLOR) {
    const std::uint64_t seed[3] = {parent->id, static_cast<std::uint64_t>(split.index),
                                   static_cast<std::uint64_t>(color)};
    split.child = new_comm(fnv1a64(seed, sizeof seed), -1, 0, parent->device);
  }
  *newcomm = split.child != nullptr ? to_handle(split.child) : nullptr;
  if (t_group_depth > 0) {
    if (t_pending_splits == nullptr) t_pending_splits = new std::vector<PendingSplit>;
    t_pending_splits->push_back(split);
    return ncclSuccess;
  }
  std::vector<PendingSplit> one{split};
  const ncclResult_t status = resolve_splits(one);
  if (status != ncclSuccess) *newcomm = nullptr;
  return status;
}

PT_EXPORT ncclResult_t ncclCommShrink(ncclComm_t comm, int* exclude_ranks, int exclude_count,
                                      ncclComm_t* newcomm, ncclConfig_t* config, int shrink_flags) {
  const std::int64_t start_ns = emu::now_ns();
  const char* api = "ncclCommShrink";
  ncclResult_t result = ncclSuccess;
  Comm* parent = find_comm(comm, api, &result);
  if (parent == nullptr) return result;
  if (newcomm == nullptr) return misuse(api, "newcomm is NULL", ncclInvalidArgument);
  if (const ncclResult_t r = check_config(config, api); r != ncclSuccess) return r;
  if (exclude_count < 0 || (exclude_count > 0 && exclude_ranks == nullptr)) {
    return misuse(api, "invalid exclude list", ncclInvalidArgument);
  }
  (void)shrink_flags;
  int rank = 0;
  int size = 0;
  std::int64_t index = 0;
  {
    std::lock_guard lock(parent->mu);
    rank = parent->rank;
    size = parent->size;
    index = parent->derived++;
  }
  std::set<int> excluded(exclude_ranks, exclude_ranks + exclude_count);
  for (const int r : excluded) {
    if (r < 0 || r >= size) {
      return misuse(api, "excluded rank " + std::to_string(r) + " out of range",
                    ncclInvalidArgument);
    }
  }
  if (excluded.count(rank) != 0) {
    return misuse(api, "the calling rank " + std::to_string(rank) + " is in the exclude list",
                  ncclInvalidArgument);
  }
  if (static_cast<int>(excluded.size()) >= size) {
    return misuse(api, "all ranks excluded", ncclInvalidArgument);
  }
  std::uint64_t id = fnv1a64("shrink", fnv1a64(&parent->id, sizeof parent->id));
  id = fnv1a64(&index, sizeof index, id);
  for (const int r : excluded) id = fnv1a64(&r, sizeof r, id);
  const int below = static_cast<int>(std::distance(excluded.begin(), excluded.lower_bound(rank)));
  Comm* child =
      new_comm(id, rank - below, size - static_cast<int>(excluded.size()), parent->device);
  *newcomm = to_handle(child);
  record_init(*child, api, start_ns, parent, 0, rank);
  return ncclSuccess;
}

PT_EXPORT ncclResult_t ncclCommFinalize(ncclComm_t comm) {
  ncclResult_t result = ncclSuccess;
  Comm* found = find_comm(comm, "ncclCommFinalize", &result);
  if (found == nullptr) return result;
  set_state(found, CommState::kFinalized);
  return ncclSuccess;
}

namespace {
ncclResult_t destroy(ncclComm_t comm, const char* api) {
  if (comm == nullptr) return ncclSuccess;  // as NCCL: destroying NULL is a no-op
  ncclResult_t result = ncclSuccess;
  Comm* found = find_comm(comm, api, &result, /*allow_finalized=*/true);
  if (found == nullptr) return result;
  set_state(found, CommState::kDestroyed);
  return ncclSuccess;
}
}  // namespace

PT_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) { return destroy(comm, "ncclCommDestroy"); }

PT_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) { return destroy(comm, "ncclCommAbort"); }

PT_EXPORT ncclResult_t ncclCommRevoke(ncclComm_t comm, int revoke_flags) {
  ncclResult_t result = ncclSuccess;
  Comm* found = find_comm(comm, "ncclCommRevoke", &result);
  if (found == nullptr) return result;
  if (revoke_flags != NCCL_REVOKE_DEFAULT) {
    return misuse("ncclCommRevoke", "revokeFlags must be 0", ncclInvalidArgument);
  }
  set_state(found, CommState::kRevoked);
  return ncclSuccess;
}

PT_EXPORT const char* ncclGetErrorString(ncclResult_t result) {
  switch (result) {
    case ncclSuccess:
      return "no error";
    case ncclUnhandledCudaError:
      return "unhandled cuda error (run with NCCL_DEBUG=INFO for details)";
    case ncclSystemError:
      return "unhandled system error (run with NCCL_DEBUG=INFO for details)";
    case ncclInternalError:
      return "internal error - please report this issue to the NCCL developers";
    case ncclInvalidArgument:
      return "invalid argument (run with NCCL_DEBUG=WARN for details)";
    case ncclInvalidUsage:
      return "invalid usage (run with NCCL_DEBUG=WARN for details)";
    case ncclRemoteError:
      return "remote process exited or there was a network error";
    case ncclInProgress:
      return "NCCL operation in progress";
    default:
      return "unknown result code";
  }
}

PT_EXPORT const char* ncclGetLastError(ncclComm_t /*comm*/) { return t_last_error; }

PT_EXPORT void ncclResetDebugInit() {}
PT_EXPORT void ncclResetDebugInitInternal() {}

PT_EXPORT ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t* async_error) {
  ncclResult_t result = ncclSuccess;
  if (find_comm(comm, "ncclCommGetAsyncError", &result, true) == nullptr) return result;
  if (async_error == nullptr) {
    return misuse("ncclCommGetAsyncError", "asyncError is NULL", ncclInvalidArgument);
  }
  *async_error = ncclSuccess;
  return ncclSuccess;
}

namespace {
// An int property of a live communicator, read under its lock; `what` names the output argument.
template <typename Read>
ncclResult_t comm_property(const ncclComm_t comm, int* out, const char* api, const char* what,
                           Read&& read) {
  ncclResult_t result = ncclSuccess;
  Comm* found = find_comm(comm, api, &result, true);
  if (found == nullptr) return result;
  if (out == nullptr) return misuse(api, std::string(what) + " is NULL", ncclInvalidArgument);
  std::lock_guard lock(found->mu);
  *out = read(*found);
  return ncclSuccess;
}
}  // namespace

PT_EXPORT ncclResult_t ncclCommCount(const ncclComm_t comm, int* count) {
  return comm_property(comm, count, "ncclCommCount", "count", [](const Comm& c) { return c.size; });
}

PT_EXPORT ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int* device) {
  return comm_property(comm, device, "ncclCommCuDevice", "device",
                       [](const Comm& c) { return c.device; });
}

PT_EXPORT ncclResult_t ncclCommUserRank(const ncclComm_t comm, int* rank) {
  return comm_property(comm, rank, "ncclCommUserRank", "rank",
                       [](const Comm& c) { return c.rank; });
}

PT_EXPORT ncclResult_t ncclMemAlloc(void** ptr, size_t size) {
  if (ptr == nullptr) return misuse("ncclMemAlloc", "ptr is NULL", ncclInvalidArgument);
  // Device memory like cudaMalloc's: counted against the device, in the trace as `malloc`.
  void* block = nullptr;
  if (emu::allocate_device_memory(&block, std::max<std::size_t>(size, 1), "ncclMemAlloc") != 0) {
    set_last_error_text("ncclMemAlloc: out of device memory");
    return ncclSystemError;  // NCCL reports a failed cuMem allocation as a system error
  }
  Registry& reg = registry();
  std::lock_guard lock(reg.mu);
  reg.memory.insert(block);
  *ptr = block;
  return ncclSuccess;
}

PT_EXPORT ncclResult_t ncclMemFree(void* ptr) {
  if (ptr == nullptr) return ncclSuccess;
  Registry& reg = registry();
  std::unique_lock lock(reg.mu);
  if (reg.memory.erase(ptr) == 0) {
    lock.unlock();
    return misuse("ncclMemFree",
                  handle_text(ptr) + " was not allocated by ncclMemAlloc or was already freed",
                  ncclInvalidArgument);
  }
  lock.unlock();
  emu::free_device_memory(ptr, "ncclMemFree");
  return ncclSuccess;
}

PT_EXPORT ncclResult_t ncclCommRegister(const ncclComm_t comm, void* buff, size_t size,
                                        void** handle) {
  ncclResult_t result = ncclSuccess;
  if (find_comm(comm, "ncclCommRegister", &result) == nullptr) return result;
  (void)buff;
  (void)size;
  if (handle == nullptr) return misuse("ncclCommRegister", "handle is NULL", ncclInvalidArgument);
  void* token = new char;  // unique, never reused
  Registry& reg = registry();
  std::lock_guard lock(reg.mu);
  reg.buffer_handles.insert(token);
  *handle = token;
  return ncclSuccess;
}

PT_EXPORT ncclResult_t ncclCommDeregister(const ncclComm_t comm, void* handle) {
  ncclResult_t result = ncclSuccess;
  if (find_comm(comm, "ncclCommDeregister", &result, true) == nullptr) return result;
  Registry& reg = registry();
  std::unique_lock lock(reg.mu);
  if (reg.buffer_handles.erase(handle) == 0) {
    lock.unlock();
    return misuse("ncclCommDeregister",
                  "unknown or already deregistered handle " + handle_text(handle),
                  ncclInvalidArgument);
  }
  return ncclSuccess;
}

PT_EXPORT ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void* buff, size_t size,
                                              ncclWindow_t* win, int win_flags) {
  ncclResult_t result = ncclSuccess;
  if (find_comm(comm, "ncclCommWindowRegister", &result) == nullptr) return result;
  (void)buff;
  (void)size;
  (void)win_flags;
  if (win == nullptr) return misuse("ncclCommWindowRegister", "win is NULL", ncclInvalidArgument);
  void* token = new char;
  Registry& reg = registry();
  std::lock_guard lock(reg.mu);
  reg.windows.insert(token);
  *win = static_cast<ncclWindow_t>(token);
  return ncclSuccess;
}

PT_EXPORT ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, ncclWindow_t win) {
  ncclResult_t result = ncclSuccess;
  if (find_comm(comm, "ncclCommWindowDeregister", &result, true) == nullptr) return result;
  Registry& reg = registry();
  std::unique_lock lock(reg.mu);
  if (reg.windows.erase(win) == 0) {
    lock.unlock();
    return misuse("ncclCommWindowDeregister",
                  "unknown or already deregistered window " + handle_text(win),
                  ncclInvalidArgument);
  }
  return ncclSuccess;
}

PT_EXPORT ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t* op, void* scalar,
                                                ncclDataType_t datatype,
                                                ncclScalarResidence_t residence, ncclComm_t comm) {
  const char* api = "ncclRedOpCreatePreMulSum";
  ncclResult_t result = ncclSuccess;
  Comm* found = find_comm(comm, api, &result);
  if (found == nullptr) return result;
  if (op == nullptr || scalar == nullptr) return misuse(api, "NULL argument", ncclInvalidArgument);
  if (dtype_name(datatype) == nullptr) {
    return misuse(api, "invalid datatype " + std::to_string(datatype), ncclInvalidArgument);
  }
  if (residence != ncclScalarDevice && residence != ncclScalarHostImmediate) {
    return misuse(api, "invalid scalar residence", ncclInvalidArgument);
  }
  std::lock_guard lock(found->mu);
  const int value = found->next_op++;
  found->ops.insert(value);
  *op = static_cast<ncclRedOp_t>(value);
  return ncclSuccess;
}

PT_EXPORT ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm) {
  const char* api = "ncclRedOpDestroy";
  ncclResult_t result = ncclSuccess;
  Comm* found = find_comm(comm, api, &result, true);
  if (found == nullptr) return result;
  std::unique_lock lock(found->mu);
  if (found->ops.erase(op) == 0) {
    lock.unlock();
    return misuse(api,
                  "operator " + std::to_string(op) + " was not created on " + describe(*found) +
                      " or was already destroyed",
                  ncclInvalidArgument);
  }
  return ncclSuccess;
}

// ---- collectives ----------------------------------------------------------------------------

PT_EXPORT ncclResult_t ncclAllReduce(const void* sendbuff, void* recvbuff, size_t count,
                                     ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                     cudaStream_t stream) {
  return enqueue(
      Coll::call("ncclAllReduce", "allreduce", sendbuff, recvbuff, count, datatype, comm, stream)
          .reduction(op));
}

PT_EXPORT ncclResult_t ncclAllGather(const void* sendbuff, void* recvbuff, size_t sendcount,
                                     ncclDataType_t datatype, ncclComm_t comm,
                                     cudaStream_t stream) {
  return enqueue(Coll::call("ncclAllGather", "allgather", sendbuff, recvbuff, sendcount, datatype,
                            comm, stream)
                     .elements(Elems::kCount, Elems::kCountTimesSize));
}

PT_EXPORT ncclResult_t ncclReduceScatter(const void* sendbuff, void* recvbuff, size_t recvcount,
                                         ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
                                         cudaStream_t stream) {
  return enqueue(Coll::call("ncclReduceScatter", "reducescatter", sendbuff, recvbuff, recvcount,
                            datatype, comm, stream)
                     .reduction(op)
                     .elements(Elems::kCountTimesSize, Elems::kCount));
}

PT_EXPORT ncclResult_t ncclBroadcast(const void* sendbuff, void* recvbuff, size_t count,
                                     ncclDataType_t datatype, int root, ncclComm_t comm,
                                     cudaStream_t stream) {
  return enqueue(
      Coll::call("ncclBroadcast", "broadcast", sendbuff, recvbuff, count, datatype, comm, stream)
          .at_root(root)
          .only_root_sends());
}

PT_EXPORT ncclResult_t ncclBcast(void* buff, size_t count, ncclDataType_t datatype, int root,
                                 ncclComm_t comm, cudaStream_t stream) {
  return enqueue(Coll::call("ncclBcast", "broadcast", buff, buff, count, datatype, comm, stream)
                     .at_root(root)
                     .only_root_sends());
}

PT_EXPORT ncclResult_t ncclReduce(const void* sendbuff, void* recvbuff, size_t count,
                                  ncclDataType_t datatype, ncclRedOp_t op, int root,
                                  ncclComm_t comm, cudaStream_t stream) {
  return enqueue(
      Coll::call("ncclReduce", "reduce", sendbuff, recvbuff, count, datatype, comm, stream)
          .reduction(op)
          .at_root(root)
          .only_root_receives());
}

PT_EXPORT ncclResult_t ncclAlltoAll(const void* sendbuff, void* recvbuff, size_t count,
                                    ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream) {
  return enqueue(
      Coll::call("ncclAlltoAll", "alltoall", sendbuff, recvbuff, count, datatype, comm, stream)
          .elements(Elems::kCountTimesSize, Elems::kCountTimesSize));
}

PT_EXPORT ncclResult_t ncclGather(const void* sendbuff, void* recvbuff, size_t count,
                                  ncclDataType_t datatype, int root, ncclComm_t comm,
                                  cudaStream_t stream) {
  return enqueue(
      Coll::call("ncclGather", "gather", sendbuff, recvbuff, count, datatype, comm, stream)
          .at_root(root)
          .elements(Elems::kCount, Elems::kCountTimesSize)
          .only_root_receives());
}

PT_EXPORT ncclResult_t ncclScatter(const void* sendbuff, void* recvbuff, size_t count,
                                   ncclDataType_t datatype, int root, ncclComm_t comm,
                                   cudaStream_t stream) {
  return enqueue(
      Coll::call("ncclScatter", "scatter", sendbuff, recvbuff, count, datatype, comm, stream)
          .at_root(root)
          .elements(Elems::kCountTimesSize, Elems::kCount)
          .only_root_sends());
}

PT_EXPORT ncclResult_t ncclSend(const void* sendbuff, size_t count, ncclDataType_t datatype,
                                int peer, ncclComm_t comm, cudaStream_t stream) {
  return enqueue(Coll::call("ncclSend", "send", sendbuff, nullptr, count, datatype, comm, stream)
                     .elements(Elems::kCount, Elems::kNone)
                     .with_peer(peer, kSend));
}

PT_EXPORT ncclResult_t ncclRecv(void* recvbuff, size_t count, ncclDataType_t datatype, int peer,
                                ncclComm_t comm, cudaStream_t stream) {
  return enqueue(Coll::call("ncclRecv", "recv", nullptr, recvbuff, count, datatype, comm, stream)
                     .elements(Elems::kNone, Elems::kCount)
                     .with_peer(peer, kRecv));
}

// ---- groups ---------------------------------------------------------------------------------

PT_EXPORT ncclResult_t ncclGroupStart() {
  if (t_group_depth++ == 0) t_group_id = ++g_group_counter;
  return ncclSuccess;
}

namespace {
ncclResult_t group_end(const char* api) {
  if (t_group_depth == 0) {
    return misuse(api, "called without a matching ncclGroupStart", ncclInvalidUsage);
  }
  if (--t_group_depth > 0) return ncclSuccess;
  t_group_id = 0;
  if (t_pending_splits == nullptr || t_pending_splits->empty()) return ncclSuccess;
  std::vector<PendingSplit> splits;
  splits.swap(*t_pending_splits);
  return resolve_splits(splits);
}
}  // namespace

PT_EXPORT ncclResult_t ncclGroupEnd() { return group_end("ncclGroupEnd"); }

PT_EXPORT ncclResult_t ncclGroupSimulateEnd(ncclSimInfo_t* sim_info) {
  // The operations of the group were already recorded as issued; simulating without issuing
  // them cannot be represented in the trace, so the call is reported and refused.
  (void)sim_info;
  group_end("ncclGroupSimulateEnd");
  return unsupported("ncclGroupSimulateEnd");
}

// ---- device API host helpers (symmetric-memory kernels): not emulated -----------------------

PT_EXPORT ncclResult_t ncclDevCommCreate(ncclComm_t /*comm*/, const void* /*reqs*/,
                                         void* /*out_dev_comm*/) {
  return unsupported("ncclDevCommCreate");
}

PT_EXPORT ncclResult_t ncclDevCommDestroy(ncclComm_t /*comm*/, const void* /*dev_comm*/) {
  return unsupported("ncclDevCommDestroy");
}

PT_EXPORT ncclResult_t ncclGinBarrierCreateRequirement(ncclComm_t /*comm*/, Team /*team*/,
                                                       int /*n_barriers*/, void* /*out_handle*/,
                                                       void* /*out_req*/) {
  return unsupported("ncclGinBarrierCreateRequirement");
}

PT_EXPORT ncclResult_t ncclLsaBarrierCreateRequirement(Team /*team*/, int /*n_barriers*/,
                                                       void* /*out_handle*/, void* /*out_req*/) {
  return unsupported("ncclLsaBarrierCreateRequirement");
}

PT_EXPORT ncclResult_t ncclLLA2ACreateRequirement(int /*n_blocks*/, int /*n_slots*/,
                                                  void* /*out_handle*/, void* /*out_req*/) {
  return unsupported("ncclLLA2ACreateRequirement");
}

PT_EXPORT int ncclLLA2ACalcSlots(int /*max_elts*/, int /*max_elt_size*/) {
  unsupported("ncclLLA2ACalcSlots");
  return 0;
}

namespace {
Team world_team(ncclComm_t comm, const char* api) {
  ncclResult_t result = ncclSuccess;
  Comm* found = find_comm(comm, api, &result, true);
  if (found == nullptr) return Team{1, 0, 1};
  std::lock_guard lock(found->mu);
  return Team{found->size, found->rank, 1};
}
}  // namespace

PT_EXPORT Team ncclTeamWorld(ncclComm_t comm) { return world_team(comm, "ncclTeamWorld"); }

PT_EXPORT Team ncclTeamLsa(ncclComm_t comm) {
  unsupported("ncclTeamLsa");
  return world_team(comm, "ncclTeamLsa");
}

PT_EXPORT Team ncclTeamRail(ncclComm_t /*comm*/) {
  unsupported("ncclTeamRail");
  return Team{1, 0, 1};
}

PT_EXPORT int ncclTeamRankToWorld(ncclComm_t comm, Team team, int rank) {
  const Team world = world_team(comm, "ncclTeamRankToWorld");
  return world.rank + (rank - team.rank) * team.stride;
}

PT_EXPORT int ncclTeamRankToLsa(ncclComm_t comm, Team team, int rank) {
  unsupported("ncclTeamRankToLsa");
  return ncclTeamRankToWorld(comm, team, rank);
}

// ---- pnccl profiling aliases (every ncclX that libnccl exports also exists as pncclX) --------

#define PT_NCCL_ALIAS(name) \
  extern "C" __attribute__((visibility("default"), alias(#name))) decltype(name) p##name;

PT_NCCL_ALIAS(ncclAllGather)
PT_NCCL_ALIAS(ncclAllReduce)
PT_NCCL_ALIAS(ncclAlltoAll)
PT_NCCL_ALIAS(ncclBcast)
PT_NCCL_ALIAS(ncclBroadcast)
PT_NCCL_ALIAS(ncclCommAbort)
PT_NCCL_ALIAS(ncclCommCount)
PT_NCCL_ALIAS(ncclCommCuDevice)
PT_NCCL_ALIAS(ncclCommDeregister)
PT_NCCL_ALIAS(ncclCommDestroy)
PT_NCCL_ALIAS(ncclCommFinalize)
PT_NCCL_ALIAS(ncclCommGetAsyncError)
PT_NCCL_ALIAS(ncclCommInitAll)
PT_NCCL_ALIAS(ncclCommInitRank)
PT_NCCL_ALIAS(ncclCommInitRankConfig)
PT_NCCL_ALIAS(ncclCommInitRankScalable)
PT_NCCL_ALIAS(ncclCommRegister)
PT_NCCL_ALIAS(ncclCommRevoke)
PT_NCCL_ALIAS(ncclCommShrink)
PT_NCCL_ALIAS(ncclCommSplit)
PT_NCCL_ALIAS(ncclCommUserRank)
PT_NCCL_ALIAS(ncclCommWindowDeregister)
PT_NCCL_ALIAS(ncclCommWindowRegister)
PT_NCCL_ALIAS(ncclDevCommCreate)
PT_NCCL_ALIAS(ncclDevCommDestroy)
PT_NCCL_ALIAS(ncclGather)
PT_NCCL_ALIAS(ncclGetErrorString)
PT_NCCL_ALIAS(ncclGetLastError)
PT_NCCL_ALIAS(ncclGetUniqueId)
PT_NCCL_ALIAS(ncclGetVersion)
PT_NCCL_ALIAS(ncclGinBarrierCreateRequirement)
PT_NCCL_ALIAS(ncclGroupEnd)
PT_NCCL_ALIAS(ncclGroupSimulateEnd)
PT_NCCL_ALIAS(ncclGroupStart)
PT_NCCL_ALIAS(ncclLLA2ACalcSlots)
PT_NCCL_ALIAS(ncclLLA2ACreateRequirement)
PT_NCCL_ALIAS(ncclLsaBarrierCreateRequirement)
PT_NCCL_ALIAS(ncclMemAlloc)
PT_NCCL_ALIAS(ncclMemFree)
PT_NCCL_ALIAS(ncclRecv)
PT_NCCL_ALIAS(ncclRedOpCreatePreMulSum)
PT_NCCL_ALIAS(ncclRedOpDestroy)
PT_NCCL_ALIAS(ncclReduce)
PT_NCCL_ALIAS(ncclReduceScatter)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
PT_NCCL_ALIAS(ncclResetDebugInit)
#pragma GCC diagnostic pop
PT_NCCL_ALIAS(ncclScatter)
PT_NCCL_ALIAS(ncclSend)
PT_NCCL_ALIAS(ncclTeamLsa)
PT_NCCL_ALIAS(ncclTeamRail)
PT_NCCL_ALIAS(ncclTeamRankToLsa)
PT_NCCL_ALIAS(ncclTeamRankToWorld)
PT_NCCL_ALIAS(ncclTeamWorld)
