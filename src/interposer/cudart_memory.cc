// Emulated device memory: every allocation is tracked against the device's capacity
// (POWERTRAIN_EMU_MEMORY_BYTES), so out-of-memory happens where it would on the real GPU and
// cudaMemGetInfo agrees with the program's allocations. Device allocations up to
// POWERTRAIN_EMU_BACKED_LIMIT (64 MiB) are real host memory, so small copies carry real data;
// larger ones only reserve address space (PROT_NONE, no RAM), so 80 GB of "device" memory costs
// nothing. Host (pinned) and managed allocations are always real: the host program touches them.
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <iterator>
#include <map>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "interposer/cudart_impl.h"
#include "interposer/cudart_internal.h"

namespace powertrain::emu::detail {
namespace {

constexpr std::size_t kAlignment = 256;             // cudaMalloc's guaranteed alignment
constexpr std::size_t kHeapLimit = 1u << 20;        // larger allocations are mmap'ed
constexpr std::size_t kPitchAlignment = 512;        // cudaMallocPitch row alignment
constexpr std::size_t kFreedRemembered = 1u << 16;  // for "double free" messages

enum class Backing : std::uint8_t {
  kHeap,      // aligned_alloc
  kMapped,    // mmap read/write, MAP_NORESERVE (pages appear when touched)
  kReserved,  // mmap PROT_NONE: address range only, not backed
  kExternal,  // the program's memory (cudaHostRegister): never released by us
};

// Where advice or a prefetch points: a cudaMemLocationType and its id (a device ordinal or a
// host NUMA node; ignored for the host).
struct Place {
  int type = cudaMemLocationTypeInvalid;
  int id = 0;
  bool operator==(const Place&) const = default;
  bool operator<(const Place& other) const {
    return type != other.type ? type < other.type : id < other.id;
  }
};

// What cudaMemAdvise and prefetches set on a stretch of managed memory (the driver keeps it per
// page; the emulator keeps stretches of equal hints).
struct RangeHints {
  bool read_mostly = false;
  Place preferred;
  std::vector<Place> accessed_by;  // sorted, unique
  Place last_prefetch;
  bool operator==(const RangeHints&) const = default;
};

struct Allocation {
  std::size_t bytes = 0;   // requested size (what is accounted and recorded)
  std::size_t mapped = 0;  // size of the host mapping / heap block
  int device = 0;
  AllocKind kind = AllocKind::kDevice;
  Backing backing = Backing::kHeap;
  unsigned flags = 0;     // cudaHostAlloc flags
  bool accounted = true;  // counts against the device's memory
  bool variable = false;  // storage of a __device__ variable: not freeable
  bool physical = false;  // cuMemCreate handle: freed only by cuMemRelease, not a pointer
  bool mapping = false;   // cuMemMap'ed virtual range: removed only by cuMemUnmap
  int pool = -1;          // stream-ordered allocations: index of their memory pool
  // Managed memory: hints by the offset where their stretch starts (empty: none set anywhere).
  std::map<std::size_t, RangeHints> hints;
};

// A memory pool: each device's default pool (index = device) and those of cudaMemPoolCreate.
// Attributes are kept as set; used/reserved bytes are the pool's live allocations (the emulator
// caches nothing, so reserved = used).
struct Pool {
  int device = 0;
  bool live = true;
  bool created = false;
  unsigned long long release_threshold = 0;
  int reuse[3] = {1, 1, 1};  // FollowEventDependencies, AllowOpportunistic, AllowInternalDeps
  std::vector<int> access;   // cudaMemAccessFlags by device
  std::int64_t used_bytes = 0;
  std::int64_t high_bytes = 0;
  unsigned handle_types = 0;  // cudaMemPoolProps::handleTypes (exportable to other processes)
  bool imported = false;      // cudaMemPoolImportFromShareableHandle's stand-in
};

struct Variable {
  void* storage = nullptr;
  std::size_t size = 0;
  std::string name;
};

struct MemoryState {
  std::mutex mutex;
  std::map<std::uintptr_t, Allocation> allocations;  // by base address
  std::vector<std::int64_t> used;
  std::vector<std::int64_t> peak;
  std::int64_t pinned = 0;  // pinned host bytes of the process (against host_memory_bytes)
  std::unordered_set<std::uintptr_t> freed;  // recently freed bases (bounded)
  std::deque<std::uintptr_t> freed_order;
  std::map<const void*, Variable> variables;  // by host shadow address
  std::vector<Pool> pools;                    // default pools first, by device
  std::vector<int> current_pool;              // per device: cudaDeviceSetMemPool's (index)
};

MemoryState& memory() {
  static MemoryState* m = [] {
    auto* state = new MemoryState;  // never destroyed: frees arrive from atexit handlers
    state->used.assign(config().devices, 0);
    state->peak.assign(config().devices, 0);
    for (int d = 0; d < config().devices; ++d) {
      Pool pool;
      pool.device = d;
      pool.access.assign(config().devices, cudaMemAccessFlagsProtNone);
      pool.access[d] = cudaMemAccessFlagsProtReadWrite;
      state->pools.push_back(std::move(pool));
      state->current_pool.push_back(d);
    }
    return state;
  }();
  return *m;
}

std::size_t round_up(std::size_t value, std::size_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

// Gets host memory for an allocation; nullptr if the host itself is out of address space.
// `whole_pages`: page-aligned and page-sized (managed memory, whose hints are kept per page).
void* obtain(std::size_t bytes, bool backed, Backing* backing, std::size_t* mapped,
             bool whole_pages = false) {
  const std::size_t size = round_up(bytes, kAlignment);
  if (backed && size <= kHeapLimit && !whole_pages) {
    *backing = Backing::kHeap;
    *mapped = size;
    return std::aligned_alloc(kAlignment, size);
  }
  const std::size_t page = 4096;
  *mapped = round_up(size, page);
  *backing = backed ? Backing::kMapped : Backing::kReserved;
  void* p = ::mmap(nullptr, *mapped, backed ? PROT_READ | PROT_WRITE : PROT_NONE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}

void release(std::uintptr_t base, const Allocation& a) {
  switch (a.backing) {
    case Backing::kHeap:
      std::free(reinterpret_cast<void*>(base));
      break;
    case Backing::kMapped:
    case Backing::kReserved:
      ::munmap(reinterpret_cast<void*>(base), a.mapped);
      break;
    case Backing::kExternal:
      break;
  }
}

void remember_freed(MemoryState& m, std::uintptr_t base) {
  if (m.freed.insert(base).second) {
    m.freed_order.push_back(base);
    if (m.freed_order.size() > kFreedRemembered) {
      m.freed.erase(m.freed_order.front());
      m.freed_order.pop_front();
    }
  }
}

struct AllocRequest {
  AllocKind kind = AllocKind::kDevice;
  std::size_t bytes = 0;
  unsigned flags = 0;
  const char* api = "";
  std::int64_t stream = kInvalidStream;  // stream-ordered allocations only
  int device = 0;
  bool physical = false;  // cuMemCreate: accounted, address space only (mapped elsewhere)
  int pool = -1;          // stream-ordered: index of the memory pool
};

// Allocates and records. Returns cudaSuccess, cudaErrorMemoryAllocation (device capacity or host
// address space exhausted) — never throws.
cudaError_t allocate(const AllocRequest& request, std::int64_t start, void** out) {
  const bool host = request.kind == AllocKind::kHost;
  const bool backed =
      !request.physical && (host || request.kind == AllocKind::kManaged ||
                            static_cast<std::int64_t>(request.bytes) <= config().backed_limit);
  MemoryState& m = memory();
  void* pointer = nullptr;
  std::int64_t used = 0;
  bool ok = false;
  bool host_exhausted = false;
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    const std::int64_t capacity = config().memory_bytes - config().reserved_bytes;
    const auto bytes = static_cast<std::int64_t>(request.bytes);
    const bool fits = host ? bytes <= config().host_memory_bytes - m.pinned
                           : m.used[request.device] + bytes <= capacity;
    if (fits) {
      Allocation a;
      pointer =
          obtain(request.bytes, backed, &a.backing, &a.mapped, request.kind == AllocKind::kManaged);
      if (pointer != nullptr) {
        a.bytes = request.bytes;
        a.device = request.device;
        a.kind = request.kind;
        a.flags = request.flags;
        a.accounted = !host;
        a.physical = request.physical;
        a.pool = request.pool;
        if (a.pool >= 0 && static_cast<std::size_t>(a.pool) < m.pools.size()) {
          Pool& pool = m.pools[static_cast<std::size_t>(a.pool)];
          pool.used_bytes += bytes;
          pool.high_bytes = std::max(pool.high_bytes, pool.used_bytes);
        }
        const auto base = reinterpret_cast<std::uintptr_t>(pointer);
        m.allocations[base] = a;
        if (m.freed.erase(base) > 0) {
          // Address reused: it is live again (the deque entry expires harmlessly).
        }
        if (host) m.pinned += bytes;
        if (a.accounted) {
          m.used[request.device] += static_cast<std::int64_t>(request.bytes);
          if (m.used[request.device] > m.peak[request.device]) {
            m.peak[request.device] = m.used[request.device];
          }
        }
        ok = true;
      } else {
        host_exhausted = true;
      }
    }
    used = m.used[request.device];
  }
  if (host_exhausted) {
    report_misuse(request.api, "the host could not provide address space for " +
                                   std::to_string(request.bytes) + " bytes");
  }
  Record record = make_record(Op::kMalloc, start, request.device);
  record.a[0] = static_cast<std::int64_t>(reinterpret_cast<std::uintptr_t>(pointer));
  record.a[1] = static_cast<std::int64_t>(request.bytes);
  record.a[2] = used;
  record.sub = static_cast<std::uint8_t>(request.kind);
  record.flag = ok;
  record.a[3] = request.stream;
  record.a[4] = request.stream != kInvalidStream ? next_correlation() : 0;
  record.api = request.api;
  append(std::move(record));
  if (!ok) return fail(cudaErrorMemoryAllocation);
  *out = pointer;
  return cudaSuccess;
}

// Which allocation kinds an API may free.
enum class FreeAs { kDevice, kHost, kPhysical };

cudaError_t deallocate(void* pointer, FreeAs as, const char* api, std::int64_t stream,
                       std::int64_t start) {
  if (pointer == nullptr) return cudaSuccess;  // cudaFree(NULL) is a no-op
  MemoryState& m = memory();
  const auto base = reinterpret_cast<std::uintptr_t>(pointer);
  std::string problem;
  Allocation a;
  std::int64_t used = 0;
  {
    std::lock_guard<std::mutex> lock(m.mutex);
    const auto it = m.allocations.find(base);
    if (it == m.allocations.end()) {
      auto next = m.allocations.upper_bound(base);
      if (m.freed.count(base) > 0) {
        problem = "double free: " + pointer_text(pointer) + " was already freed";
      } else if (next != m.allocations.begin() &&
                 base < std::prev(next)->first +
                            std::max<std::size_t>(std::prev(next)->second.bytes, 1)) {
        problem = pointer_text(pointer) + " points inside the allocation at " +
                  pointer_text(reinterpret_cast<void*>(std::prev(next)->first)) +
                  "; pass the pointer the allocation returned";
      } else {
        problem = pointer_text(pointer) + " was not allocated by the CUDA runtime";
      }
    } else if (it->second.variable) {
      problem = pointer_text(pointer) + " is a __device__ variable, not an allocation";
    } else if (it->second.mapping) {
      problem = pointer_text(pointer) + " is mapped with cuMemMap; use cuMemUnmap";
    } else if (it->second.physical != (as == FreeAs::kPhysical)) {
      problem = pointer_text(pointer) + (it->second.physical
                                             ? " is a cuMemCreate handle; use cuMemRelease"
                                             : " is not a cuMemCreate handle");
    } else if (it->second.backing == Backing::kExternal) {
      problem = pointer_text(pointer) + " is registered host memory; use cudaHostUnregister";
    } else if ((as == FreeAs::kHost) != (it->second.kind == AllocKind::kHost)) {
      problem = pointer_text(pointer) + (as == FreeAs::kHost
                                             ? " is device memory; use cudaFree"
                                             : " is pinned host memory; use cudaFreeHost");
    } else {
      a = it->second;
      m.allocations.erase(it);
      remember_freed(m, base);
      if (a.accounted) m.used[a.device] -= static_cast<std::int64_t>(a.bytes);
      if (a.kind == AllocKind::kHost) m.pinned -= static_cast<std::int64_t>(a.bytes);
      if (a.pool >= 0 && static_cast<std::size_t>(a.pool) < m.pools.size()) {
        m.pools[static_cast<std::size_t>(a.pool)].used_bytes -= static_cast<std::int64_t>(a.bytes);
      }
      used = m.used[a.device];
      release(base, a);
    }
  }
  if (!problem.empty()) return misuse(api, cudaErrorInvalidValue, problem);
  Record record = make_record(Op::kFree, start, a.device);
  record.a[0] = static_cast<std::int64_t>(base);
  record.a[1] = static_cast<std::int64_t>(a.bytes);
  record.a[2] = used;
  record.sub = static_cast<std::uint8_t>(a.kind);
  record.a[3] = stream;
  record.a[4] = stream != kInvalidStream ? next_correlation() : 0;
  record.api = api;
  append(std::move(record));
  return cudaSuccess;
}

cudaError_t device_alloc(void** out, std::size_t bytes, AllocKind kind, unsigned flags,
                         const char* api) {
  const std::int64_t start = now_ns();
  if (out == nullptr) return misuse(api, cudaErrorInvalidValue, "the result pointer is NULL");
  if (bytes == 0) {
    *out = nullptr;  // as the runtime: success and a NULL pointer, nothing allocated
    return cudaSuccess;
  }
  AllocRequest request;
  request.kind = kind;
  request.bytes = bytes;
  request.flags = flags;
  request.api = api;
  request.device = current_device();
  return allocate(request, start, out);
}

constexpr std::uintptr_t kPoolTag = std::uintptr_t{0x504c} << 48;  // "PL" | device

// Index of a live pool (the handle is kPoolTag | index), or -1. Caller holds memory().mutex.
int pool_index_locked(const MemoryState& m, cudaMemPool_t pool) {
  const auto bits = reinterpret_cast<std::uintptr_t>(pool);
  if ((bits >> 48) != (kPoolTag >> 48)) return -1;
  const std::uintptr_t index = bits & 0xffffffffu;
  if (index >= m.pools.size() || !m.pools[index].live) return -1;
  return static_cast<int>(index);
}

cudaMemPool_t pool_handle(int index) {
  return reinterpret_cast<cudaMemPool_t>(kPoolTag | static_cast<std::uintptr_t>(index));
}

// The live pool's index and device; false for a forged or destroyed handle.
bool pool_device(cudaMemPool_t pool, int* device, int* index = nullptr) {
  MemoryState& m = memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  const int i = pool_index_locked(m, pool);
  if (i < 0) return false;
  *device = m.pools[static_cast<std::size_t>(i)].device;
  if (index != nullptr) *index = i;
  return true;
}

// A live pool found with memory().mutex held. The caller uses `pool` only while `lock` is held
// and unlocks before reporting misuse.
struct LockedPool {
  std::unique_lock<std::mutex> lock;
  Pool* pool = nullptr;  // nullptr: a forged or destroyed handle
};

LockedPool lock_pool(cudaMemPool_t handle) {
  MemoryState& m = memory();
  LockedPool found{std::unique_lock<std::mutex>(m.mutex)};
  const int index = pool_index_locked(m, handle);
  if (index >= 0) found.pool = &m.pools[static_cast<std::size_t>(index)];
  return found;
}

}  // namespace

PointerInfo lookup_pointer(const void* pointer) {
  PointerInfo info;
  const auto address = reinterpret_cast<std::uintptr_t>(pointer);
  MemoryState& m = memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  auto next = m.allocations.upper_bound(address);
  if (next == m.allocations.begin()) return info;
  const auto& [base, a] = *std::prev(next);
  if (address >= base + std::max<std::size_t>(a.bytes, 1) || a.physical) return info;
  info.known = true;
  info.device_side = a.kind != AllocKind::kHost;
  info.backed = a.backing != Backing::kReserved;
  info.device = a.device;
  info.kind = a.kind;
  info.base = base;
  info.bytes = a.bytes;
  info.available = base + a.bytes - address;
  return info;
}

std::vector<std::int64_t> peak_used_per_device() {
  std::lock_guard<std::mutex> lock(memory().mutex);
  return memory().peak;
}

std::int64_t used_bytes(int device) {
  std::lock_guard<std::mutex> lock(memory().mutex);
  if (device < 0 || device >= static_cast<int>(memory().used.size())) return 0;
  return memory().used[device];
}

void release_device_allocations(int device) {
  std::vector<std::uintptr_t> bases;
  {
    std::lock_guard<std::mutex> lock(memory().mutex);
    for (const auto& [base, a] : memory().allocations) {
      if (a.device == device && a.kind != AllocKind::kHost && !a.variable && !a.physical &&
          !a.mapping) {
        bases.push_back(base);
      }
    }
  }
  for (const std::uintptr_t base : bases) {
    deallocate(reinterpret_cast<void*>(base), FreeAs::kDevice, "cudaDeviceReset", kInvalidStream,
               now_ns());
  }
}

void register_variable(const void* host_var, const char* name, std::size_t size, bool managed,
                       void** managed_ptr_address) {
  if (host_var == nullptr && managed_ptr_address == nullptr) return;
  MemoryState& m = memory();
  const void* key = managed ? static_cast<const void*>(managed_ptr_address) : host_var;
  std::lock_guard<std::mutex> lock(m.mutex);
  if (m.variables.count(key) > 0) return;  // registered twice (module loaded again)
  Allocation a;
  const std::size_t bytes = size > 0 ? size : 1;
  void* storage = obtain(bytes, true, &a.backing, &a.mapped, managed);
  if (storage == nullptr) return;
  // The host shadow of a __device__ variable carries its initializer; managed variables start
  // zeroed (their initial value lives only in the device image).
  if (!managed && host_var != nullptr && size > 0) {
    std::memcpy(storage, host_var, size);
  } else {
    std::memset(storage, 0, bytes);
  }
  a.bytes = bytes;
  a.kind = managed ? AllocKind::kManaged : AllocKind::kDevice;
  a.accounted = false;
  a.variable = true;
  m.allocations[reinterpret_cast<std::uintptr_t>(storage)] = a;
  m.variables[key] = Variable{storage, size, name != nullptr ? name : ""};
  if (managed && managed_ptr_address != nullptr) *managed_ptr_address = storage;
}

VariableInfo lookup_variable(const void* symbol) {
  VariableInfo info;
  MemoryState& m = memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  const auto it = m.variables.find(symbol);
  if (it == m.variables.end()) return info;
  info.known = true;
  info.storage = it->second.storage;
  info.size = it->second.size;
  return info;
}

// ---- managed-memory advice and prefetch locations ----------------------------------------------

namespace {

constexpr std::size_t kHostPage = 4096;  // advice and prefetch ranges round to CPU pages

// The stretch of one managed allocation that [pointer, pointer + count) covers, rounded out to
// pages and clipped to the allocation (offsets from its base). The caller holds the lock.
struct ManagedStretch {
  Allocation* allocation = nullptr;
  std::size_t first = 0;
  std::size_t last = 0;
};

// A managed allocation's pages (it is page-aligned: obtain's `whole_pages`).
std::size_t managed_extent(const Allocation& a) { return round_up(a.bytes, kHostPage); }

bool managed_stretch(MemoryState& m, const void* pointer, std::size_t count, ManagedStretch* out) {
  const auto address = reinterpret_cast<std::uintptr_t>(pointer);
  auto next = m.allocations.upper_bound(address);
  if (pointer == nullptr || count == 0 || next == m.allocations.begin()) return false;
  auto& [base, a] = *std::prev(next);
  // The range may run to the end of the allocation's last page, which is managed memory too.
  const std::size_t extent = managed_extent(a);
  if (a.kind != AllocKind::kManaged || address - base >= extent ||
      count > base + extent - address) {
    return false;
  }
  const std::uintptr_t page_first = address / kHostPage * kHostPage;
  const std::uintptr_t page_last = (address + count + kHostPage - 1) / kHostPage * kHostPage;
  out->allocation = &a;
  out->first = page_first > base ? page_first - base : 0;
  out->last = std::min<std::uintptr_t>(page_last - base, extent);
  return true;
}

// Starts a stretch at `offset` (a copy of the hints it falls in).
void split_hints_at(std::map<std::size_t, RangeHints>& hints, std::size_t offset) {
  if (hints.empty()) hints.emplace(0, RangeHints{});
  auto at = std::prev(hints.upper_bound(offset));
  if (at->first != offset) hints.emplace_hint(std::next(at), offset, at->second);
}

template <typename Change>
void change_hints(const ManagedStretch& stretch, Change&& change) {
  auto& hints = stretch.allocation->hints;
  split_hints_at(hints, stretch.first);
  if (stretch.last < managed_extent(*stretch.allocation)) split_hints_at(hints, stretch.last);
  for (auto it = hints.find(stretch.first); it != hints.end() && it->first < stretch.last; ++it) {
    change(it->second);
  }
  for (auto it = hints.begin(); it != hints.end();) {
    const auto following = std::next(it);
    if (following != hints.end() && following->second == it->second) {
      hints.erase(following);
    } else {
      it = following;
    }
  }
}

// Every stretch of hints the range overlaps (one default stretch where none were set).
std::vector<RangeHints> hints_over(const ManagedStretch& stretch) {
  const auto& hints = stretch.allocation->hints;
  if (hints.empty()) return {RangeHints{}};
  std::vector<RangeHints> over;
  for (auto it = std::prev(hints.upper_bound(stretch.first));
       it != hints.end() && it->first < stretch.last; ++it) {
    over.push_back(it->second);
  }
  return over;
}

// A location as advice and prefetches keep it: the NUMA node nearest the caller is node 0 (the
// emulated host has one). Invalid for what the advice cannot name.
bool normalized_place(const cudaMemLocation& location, bool allow_numa, Place* place,
                      cudaError_t* error) {
  *error = cudaErrorInvalidValue;
  switch (location.type) {
    case cudaMemLocationTypeDevice:
      if (location.id < 0 || location.id >= config().devices) {
        *error = cudaErrorInvalidDevice;
        return false;
      }
      *place = Place{cudaMemLocationTypeDevice, location.id};
      return true;
    case cudaMemLocationTypeHost:
      *place = Place{cudaMemLocationTypeHost, 0};
      return true;
    case cudaMemLocationTypeHostNuma:
      if (!allow_numa || location.id != 0) return false;
      *place = Place{cudaMemLocationTypeHostNuma, 0};
      return true;
    case cudaMemLocationTypeHostNumaCurrent:
      if (!allow_numa) return false;
      *place = Place{cudaMemLocationTypeHostNuma, 0};
      return true;
    default:
      return false;
  }
}

// The single place every stretch shares, or an invalid one.
Place common_place(const std::vector<RangeHints>& over, Place RangeHints::*field) {
  const Place first = over.front().*field;
  for (const RangeHints& h : over) {
    if (!(h.*field == first)) return Place{};
  }
  return first;
}

// The legacy int form: a device ordinal, cudaCpuDeviceId for the host, cudaInvalidDeviceId.
int legacy_device(const Place& place) {
  switch (place.type) {
    case cudaMemLocationTypeDevice:
      return place.id;
    case cudaMemLocationTypeHost:
    case cudaMemLocationTypeHostNuma:
      return cudaCpuDeviceId;
    default:
      return cudaInvalidDeviceId;
  }
}

// A location normalized_place refused (`numa`: host NUMA node 0 was allowed).
cudaError_t bad_place(const char* api, cudaError_t error, const char* what,
                      const cudaMemLocation& location, bool numa) {
  return misuse(api, error,
                std::string(what) + " type " + std::to_string(location.type) + " id " +
                    std::to_string(location.id) + " is not a device of this emulation" +
                    (numa ? ", the host or host NUMA node 0" : " or the host"));
}

cudaError_t not_managed(const char* api, const void* pointer, std::size_t count) {
  return misuse(api, cudaErrorInvalidValue,
                "[" + pointer_text(pointer) + ", +" + std::to_string(count) +
                    " bytes) is not inside managed memory");
}

// Calls `use` with the managed stretch of [pointer, +count), under the memory lock; false (and
// nothing called) when the range is not inside managed memory. The lock is released on return,
// so the caller may report misuse.
template <typename Use>
bool with_managed_stretch(const void* pointer, std::size_t count, Use&& use) {
  MemoryState& m = memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  ManagedStretch stretch;
  if (!managed_stretch(m, pointer, count, &stretch)) return false;
  use(stretch);
  return true;
}

}  // namespace

cudaMemLocation legacy_location(int device) {
  cudaMemLocation location = {};
  if (device == cudaCpuDeviceId) {
    location.type = cudaMemLocationTypeHost;
  } else if (device >= 0) {
    location.type = cudaMemLocationTypeDevice;
    location.id = device;
  } else {
    location.type = cudaMemLocationTypeInvalid;
    location.id = device;
  }
  return location;
}

cudaError_t advise_managed(const char* api, const void* pointer, std::size_t count, int advice,
                           const cudaMemLocation& location) {
  if (advice < cudaMemAdviseSetReadMostly || advice > cudaMemAdviseUnsetAccessedBy) {
    return misuse(api, cudaErrorInvalidValue,
                  "advice " + std::to_string(advice) + " is not a cudaMemoryAdvise");
  }
  Place place;
  if (advice == cudaMemAdviseSetPreferredLocation || advice == cudaMemAdviseSetAccessedBy ||
      advice == cudaMemAdviseUnsetAccessedBy) {
    cudaError_t error = cudaSuccess;
    const bool numa = advice == cudaMemAdviseSetPreferredLocation;
    if (!normalized_place(location, numa, &place, &error)) {
      return bad_place(api, error, "location", location, numa);
    }
  }
  const auto advise = [&](RangeHints& h) {
    switch (advice) {
      case cudaMemAdviseSetReadMostly:
        h.read_mostly = true;
        break;
      case cudaMemAdviseUnsetReadMostly:
        h.read_mostly = false;
        break;
      case cudaMemAdviseSetPreferredLocation:
        h.preferred = place;
        break;
      case cudaMemAdviseUnsetPreferredLocation:
        h.preferred = Place{};
        break;
      case cudaMemAdviseSetAccessedBy: {
        const auto at = std::lower_bound(h.accessed_by.begin(), h.accessed_by.end(), place);
        if (at == h.accessed_by.end() || !(*at == place)) h.accessed_by.insert(at, place);
        break;
      }
      default:  // cudaMemAdviseUnsetAccessedBy
        std::erase(h.accessed_by, place);
        break;
    }
  };
  if (!with_managed_stretch(
          pointer, count, [&](const ManagedStretch& stretch) { change_hints(stretch, advise); })) {
    return not_managed(api, pointer, count);
  }
  return cudaSuccess;
}

cudaError_t check_prefetch_location(const char* api, const cudaMemLocation& location) {
  Place place;
  cudaError_t error = cudaSuccess;
  if (normalized_place(location, true, &place, &error)) return cudaSuccess;
  return bad_place(api, error, "prefetch location", location, true);
}

void note_prefetch(const void* pointer, std::size_t count, const cudaMemLocation& location) {
  Place place;
  cudaError_t error = cudaSuccess;
  if (!normalized_place(location, true, &place, &error)) return;
  // Not managed: nothing to remember.
  with_managed_stretch(pointer, count, [&](const ManagedStretch& stretch) {
    change_hints(stretch, [&](RangeHints& h) { h.last_prefetch = place; });
  });
}

cudaError_t prefetch_managed(const char* api, const void* pointer, std::size_t count,
                             const cudaMemLocation& location, cudaStream_t stream,
                             bool per_thread) {
  if (const cudaError_t bad = check_prefetch_location(api, location); bad != cudaSuccess) {
    return bad;
  }
  const cudaError_t status = impl::stream_accept(stream, per_thread, api);
  if (status == cudaSuccess) note_prefetch(pointer, count, location);
  return status;
}

cudaError_t managed_range_attribute(const char* api, void* data, std::size_t data_size,
                                    int attribute, const void* pointer, std::size_t count) {
  const bool list = attribute == cudaMemRangeAttributeAccessedBy;
  if (attribute < cudaMemRangeAttributeReadMostly ||
      attribute > cudaMemRangeAttributeLastPrefetchLocationId) {
    return misuse(api, cudaErrorInvalidValue,
                  "attribute " + std::to_string(attribute) + " is not a cudaMemRangeAttribute");
  }
  if (data == nullptr || (list ? data_size == 0 || data_size % 4 != 0 : data_size != 4)) {
    return misuse(api, cudaErrorInvalidValue,
                  "data is NULL or dataSize " + std::to_string(data_size) + " is not " +
                      (list ? "a non-zero multiple of 4" : "4"));
  }
  std::vector<RangeHints> over;
  if (!with_managed_stretch(pointer, count,
                            [&](const ManagedStretch& stretch) { over = hints_over(stretch); })) {
    return not_managed(api, pointer, count);
  }
  auto* out = static_cast<int*>(data);
  switch (attribute) {
    case cudaMemRangeAttributeReadMostly:
      *out =
          std::all_of(over.begin(), over.end(), [](const RangeHints& h) { return h.read_mostly; })
              ? 1
              : 0;
      break;
    case cudaMemRangeAttributePreferredLocation:
      *out = legacy_device(common_place(over, &RangeHints::preferred));
      break;
    case cudaMemRangeAttributeLastPrefetchLocation:
      *out = legacy_device(common_place(over, &RangeHints::last_prefetch));
      break;
    case cudaMemRangeAttributePreferredLocationType:
      *out = common_place(over, &RangeHints::preferred).type;
      break;
    case cudaMemRangeAttributePreferredLocationId:
      *out = common_place(over, &RangeHints::preferred).id;
      break;
    case cudaMemRangeAttributeLastPrefetchLocationType:
      *out = common_place(over, &RangeHints::last_prefetch).type;
      break;
    case cudaMemRangeAttributeLastPrefetchLocationId:
      *out = common_place(over, &RangeHints::last_prefetch).id;
      break;
    default: {  // cudaMemRangeAttributeAccessedBy: who has it over the whole range
      std::vector<Place> everywhere = over.front().accessed_by;
      for (const RangeHints& h : over) {
        std::vector<Place> both;
        std::set_intersection(everywhere.begin(), everywhere.end(), h.accessed_by.begin(),
                              h.accessed_by.end(), std::back_inserter(both));
        everywhere = std::move(both);
      }
      const std::size_t slots = data_size / 4;
      for (std::size_t i = 0; i < slots; ++i) {
        out[i] = i < everywhere.size() ? legacy_device(everywhere[i]) : cudaInvalidDeviceId;
      }
      break;
    }
  }
  return cudaSuccess;
}

namespace impl {

cudaError_t malloc_async(void** pointer, size_t size, cudaStream_t stream, bool per_thread,
                         const char* api, const cudaMemPool_t* from_pool) {
  const std::int64_t start = now_ns();
  StreamRef ref;
  if (!stream_or_fail(stream, per_thread, api, &ref)) return cudaErrorInvalidResourceHandle;
  if (pointer == nullptr) return misuse(api, cudaErrorInvalidValue, "devPtr is NULL");
  if (size == 0) {
    *pointer = nullptr;
    return cudaSuccess;
  }
  AllocRequest request;
  request.kind = AllocKind::kAsync;
  request.bytes = size;
  request.api = api;
  request.stream = ref.id;
  request.device = ref.device;
  {
    // The stream's device's current pool (cudaDeviceSetMemPool; the default pool until set).
    MemoryState& m = memory();
    std::lock_guard<std::mutex> lock(m.mutex);
    request.pool = m.current_pool[static_cast<std::size_t>(ref.device)];
  }
  if (from_pool != nullptr) {
    // cudaMallocFromPoolAsync: the memory is on the pool's device, whichever the stream's.
    int device = 0;
    int index = -1;
    if (!pool_device(*from_pool, &device, &index)) {
      return misuse(api, cudaErrorInvalidValue, "invalid memory pool " + pointer_text(*from_pool));
    }
    request.device = device;
    request.pool = index;
  }
  return allocate(request, start, pointer);
}

cudaError_t free_async(void* pointer, cudaStream_t stream, bool per_thread, const char* api) {
  const std::int64_t start = now_ns();
  StreamRef ref;
  if (!stream_or_fail(stream, per_thread, api, &ref)) return cudaErrorInvalidResourceHandle;
  return deallocate(pointer, FreeAs::kDevice, api, ref.id, start);
}

}  // namespace impl
}  // namespace powertrain::emu::detail

namespace powertrain::emu {

int allocate_device_memory(void** pointer, std::size_t bytes, const char* api) {
  return detail::device_alloc(pointer, bytes, detail::AllocKind::kDevice, 0, api);
}

int free_device_memory(void* pointer, const char* api) {
  return detail::deallocate(pointer, detail::FreeAs::kDevice, api, kInvalidStream, now_ns());
}

namespace detail {

cudaError_t allocate_physical(void** handle, std::size_t bytes, int device, const char* api) {
  const std::int64_t start = now_ns();
  AllocRequest request;
  request.bytes = bytes;
  request.api = api;
  request.device = device;
  request.physical = true;
  return allocate(request, start, handle);
}

cudaError_t allocate_on_device(void** out, std::size_t bytes, int device, const char* api) {
  const std::int64_t start = now_ns();
  AllocRequest request;
  request.bytes = bytes;
  request.api = api;
  request.device = device;
  return allocate(request, start, out);
}

cudaError_t release_physical(void* handle, const char* api) {
  return deallocate(handle, FreeAs::kPhysical, api, kInvalidStream, now_ns());
}

bool add_mapping(void* address, std::size_t bytes, int device, bool backed) {
  MemoryState& m = memory();
  const auto base = reinterpret_cast<std::uintptr_t>(address);
  std::lock_guard<std::mutex> lock(m.mutex);
  auto next = m.allocations.lower_bound(base);
  if (next != m.allocations.end() && next->first < base + bytes) return false;
  if (next != m.allocations.begin()) {
    const auto& [b, a] = *std::prev(next);
    if (b + std::max<std::size_t>(a.bytes, 1) > base) return false;
  }
  Allocation a;
  a.bytes = bytes;
  a.mapped = bytes;
  a.device = device;
  a.kind = AllocKind::kDevice;
  a.backing = backed ? Backing::kExternal : Backing::kReserved;
  a.accounted = false;
  a.mapping = true;
  m.allocations[base] = a;
  return true;
}

bool remove_mapping(void* address) {
  MemoryState& m = memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  const auto it = m.allocations.find(reinterpret_cast<std::uintptr_t>(address));
  if (it == m.allocations.end() || !it->second.mapping) return false;
  m.allocations.erase(it);
  return true;
}

}  // namespace detail

}  // namespace powertrain::emu

namespace detail = powertrain::emu::detail;
namespace impl = powertrain::emu::detail::impl;
using detail::AllocKind;
using detail::misuse;

PT_EXPORT cudaError_t cudaMalloc(void** devPtr, size_t size) {
  return detail::device_alloc(devPtr, size, AllocKind::kDevice, 0, "cudaMalloc");
}

PT_EXPORT cudaError_t cudaMallocManaged(void** devPtr, size_t size, unsigned int flags) {
  if (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost) {
    return misuse("cudaMallocManaged", cudaErrorInvalidValue,
                  "flags must be cudaMemAttachGlobal or cudaMemAttachHost");
  }
  return detail::device_alloc(devPtr, size, AllocKind::kManaged, flags, "cudaMallocManaged");
}

PT_EXPORT cudaError_t cudaMallocHost(void** ptr, size_t size) {
  return detail::device_alloc(ptr, size, AllocKind::kHost, cudaHostAllocDefault, "cudaMallocHost");
}

PT_EXPORT cudaError_t cudaHostAlloc(void** pHost, size_t size, unsigned int flags) {
  constexpr unsigned kValid =
      cudaHostAllocPortable | cudaHostAllocMapped | cudaHostAllocWriteCombined;
  if ((flags & ~kValid) != 0) {
    return misuse("cudaHostAlloc", cudaErrorInvalidValue, "unknown flags " + std::to_string(flags));
  }
  return detail::device_alloc(pHost, size, AllocKind::kHost, flags, "cudaHostAlloc");
}

PT_EXPORT cudaError_t cudaMallocPitch(void** devPtr, size_t* pitch, size_t width, size_t height) {
  if (pitch == nullptr) return misuse("cudaMallocPitch", cudaErrorInvalidValue, "pitch is NULL");
  const size_t row = detail::round_up(width > 0 ? width : 1, detail::kPitchAlignment);
  const cudaError_t error =
      detail::device_alloc(devPtr, row * height, AllocKind::kDevice, 0, "cudaMallocPitch");
  if (error == cudaSuccess) *pitch = row;
  return error;
}

PT_EXPORT cudaError_t cudaMalloc3D(struct cudaPitchedPtr* pitchedDevPtr, struct cudaExtent extent) {
  if (pitchedDevPtr == nullptr) {
    return misuse("cudaMalloc3D", cudaErrorInvalidValue, "pitchedDevPtr is NULL");
  }
  const size_t row = detail::round_up(extent.width > 0 ? extent.width : 1, detail::kPitchAlignment);
  void* pointer = nullptr;
  const cudaError_t error = detail::device_alloc(&pointer, row * extent.height * extent.depth,
                                                 AllocKind::kDevice, 0, "cudaMalloc3D");
  if (error == cudaSuccess) {
    *pitchedDevPtr = cudaPitchedPtr{pointer, row, extent.width, extent.height};
  }
  return error;
}

PT_EXPORT cudaError_t cudaFree(void* devPtr) {
  return detail::deallocate(devPtr, detail::FreeAs::kDevice, "cudaFree",
                            powertrain::emu::kInvalidStream, powertrain::emu::now_ns());
}

PT_EXPORT cudaError_t cudaFreeHost(void* ptr) {
  return detail::deallocate(ptr, detail::FreeAs::kHost, "cudaFreeHost",
                            powertrain::emu::kInvalidStream, powertrain::emu::now_ns());
}

PT_EXPORT cudaError_t cudaMallocAsync(void** devPtr, size_t size, cudaStream_t hStream) {
  return impl::malloc_async(devPtr, size, hStream, false, "cudaMallocAsync");
}

PT_EXPORT cudaError_t cudaFreeAsync(void* devPtr, cudaStream_t hStream) {
  return impl::free_async(devPtr, hStream, false, "cudaFreeAsync");
}

PT_EXPORT cudaError_t cudaMallocFromPoolAsync(void** ptr, size_t size, cudaMemPool_t memPool,
                                              cudaStream_t stream) {
  return impl::malloc_async(ptr, size, stream, false, "cudaMallocFromPoolAsync", &memPool);
}

// Memory pools: each device's default pool and pools made by cudaMemPoolCreate (pinned device
// memory; no IPC export). Attributes are kept as set and read back; the emulator caches nothing,
// so a pool's reserved bytes equal its used bytes and trimming has nothing to give back.
PT_EXPORT cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* memPool, int device) {
  if (memPool == nullptr || device < 0 || device >= powertrain::emu::device_count()) {
    return misuse("cudaDeviceGetDefaultMemPool", cudaErrorInvalidValue,
                  "memPool is NULL or invalid device " + std::to_string(device));
  }
  *memPool = detail::pool_handle(device);
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaDeviceGetMemPool(cudaMemPool_t* memPool, int device) {
  if (memPool == nullptr || device < 0 || device >= powertrain::emu::device_count()) {
    return misuse("cudaDeviceGetMemPool", cudaErrorInvalidValue,
                  "memPool is NULL or invalid device " + std::to_string(device));
  }
  detail::MemoryState& m = detail::memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  *memPool = detail::pool_handle(m.current_pool[static_cast<std::size_t>(device)]);
  return cudaSuccess;
}

namespace {
// cudaDeviceSetMemPool and cudaMemSetMemPool: the pool cudaMallocAsync on `device` draws from.
cudaError_t set_current_pool(int device, cudaMemPool_t memPool, const char* api) {
  if (device < 0 || device >= powertrain::emu::device_count()) {
    return misuse(api, cudaErrorInvalidDevice, "invalid device " + std::to_string(device));
  }
  // Checked and set under one lock: a pool destroyed meanwhile never becomes current.
  detail::LockedPool found = detail::lock_pool(memPool);
  if (found.pool == nullptr) {
    found.lock.unlock();
    return misuse(api, cudaErrorInvalidValue,
                  "invalid memory pool " + detail::pointer_text(memPool));
  }
  if (found.pool->device != device) {
    const int pool_device = found.pool->device;
    found.lock.unlock();
    return misuse(api, cudaErrorInvalidDevice,
                  "the pool is on device " + std::to_string(pool_device) + ", not device " +
                      std::to_string(device));
  }
  detail::MemoryState& m = detail::memory();
  m.current_pool[static_cast<std::size_t>(device)] = static_cast<int>(found.pool - m.pools.data());
  return cudaSuccess;
}

// The device a CUDA 13 pool query names: pinned device memory only (the emulator has no host or
// managed pools); anything else is reported as unsupported by name.
cudaError_t pool_location_device(const cudaMemLocation* location, cudaMemAllocationType type,
                                 const char* api, int* device) {
  if (location == nullptr) return misuse(api, cudaErrorInvalidValue, "location is NULL");
  if (location->type != cudaMemLocationTypeDevice || type != cudaMemAllocationTypePinned) {
    powertrain::emu::report_unsupported(std::string(api) + " (host or managed pools)");
    return detail::fail(cudaErrorNotSupported);
  }
  if (location->id < 0 || location->id >= powertrain::emu::device_count()) {
    return misuse(api, cudaErrorInvalidDevice, "invalid device " + std::to_string(location->id));
  }
  *device = location->id;
  return cudaSuccess;
}
}  // namespace

PT_EXPORT cudaError_t cudaDeviceSetMemPool(int device, cudaMemPool_t memPool) {
  return set_current_pool(device, memPool, "cudaDeviceSetMemPool");
}

PT_EXPORT cudaError_t cudaMemGetDefaultMemPool(cudaMemPool_t* memPool,
                                               struct cudaMemLocation* location,
                                               enum cudaMemAllocationType type) {
  int device = 0;
  if (const cudaError_t e =
          pool_location_device(location, type, "cudaMemGetDefaultMemPool", &device);
      e != cudaSuccess)
    return e;
  return cudaDeviceGetDefaultMemPool(memPool, device);
}

PT_EXPORT cudaError_t cudaMemGetMemPool(cudaMemPool_t* memPool, struct cudaMemLocation* location,
                                        enum cudaMemAllocationType type) {
  int device = 0;
  if (const cudaError_t e = pool_location_device(location, type, "cudaMemGetMemPool", &device);
      e != cudaSuccess)
    return e;
  return cudaDeviceGetMemPool(memPool, device);
}

PT_EXPORT cudaError_t cudaMemSetMemPool(struct cudaMemLocation* location,
                                        enum cudaMemAllocationType type, cudaMemPool_t memPool) {
  int device = 0;
  if (const cudaError_t e = pool_location_device(location, type, "cudaMemSetMemPool", &device);
      e != cudaSuccess)
    return e;
  return set_current_pool(device, memPool, "cudaMemSetMemPool");
}

PT_EXPORT cudaError_t cudaMemPoolCreate(cudaMemPool_t* memPool,
                                        const struct cudaMemPoolProps* poolProps) {
  const char* api = "cudaMemPoolCreate";
  if (memPool == nullptr || poolProps == nullptr) {
    return misuse(api, cudaErrorInvalidValue, "memPool or poolProps is NULL");
  }
  if (poolProps->allocType != cudaMemAllocationTypePinned) {
    return misuse(api, cudaErrorInvalidValue,
                  "allocType " + std::to_string(static_cast<int>(poolProps->allocType)) +
                      " (only cudaMemAllocationTypePinned)");
  }
  if (poolProps->location.type != cudaMemLocationTypeDevice || poolProps->location.id < 0 ||
      poolProps->location.id >= powertrain::emu::device_count()) {
    return misuse(api, cudaErrorInvalidValue,
                  "location must be a device of this process (type " +
                      std::to_string(static_cast<int>(poolProps->location.type)) + ", id " +
                      std::to_string(poolProps->location.id) + ")");
  }
  // Shareable handle types are accepted: only cudaMemPoolExportToShareableHandle would use them,
  // and that stub reports itself by name (streamOrderedAllocationIPC).
  detail::MemoryState& m = detail::memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  if (m.pools.size() >= 0xffffffffu) return detail::fail(cudaErrorMemoryAllocation);
  detail::Pool pool;
  pool.device = poolProps->location.id;
  pool.created = true;
  pool.handle_types = static_cast<unsigned>(poolProps->handleTypes);
  pool.access.assign(static_cast<std::size_t>(powertrain::emu::device_count()),
                     cudaMemAccessFlagsProtNone);
  pool.access[static_cast<std::size_t>(pool.device)] = cudaMemAccessFlagsProtReadWrite;
  m.pools.push_back(std::move(pool));
  *memPool = detail::pool_handle(static_cast<int>(m.pools.size() - 1));
  return cudaSuccess;
}

namespace powertrain::emu::detail {
int share_through_fd(const void* description, std::size_t bytes, const char* name) {
  const int fd = ::memfd_create(name, MFD_CLOEXEC);
  if (fd < 0) return -1;
  if (::write(fd, description, bytes) != static_cast<ssize_t>(bytes)) {
    ::close(fd);
    return -1;
  }
  return fd;
}

bool read_shared_fd(int fd, void* description, std::size_t bytes) {
  return ::pread(fd, description, bytes, 0) == static_cast<ssize_t>(bytes);
}
}  // namespace powertrain::emu::detail

// ---- memory-pool IPC (streamOrderedAllocationIPC): a pool created with a POSIX file descriptor
// handle type is exported as a memfd describing {magic, exporting process, pool, device}; its
// allocations as 64 bytes {magic, exporting process, pointer, size}. Another process imports a
// stand-in pool on the same device, and each pointer as a stand-in allocation of the same size
// from it (processes share no memory, as for cudaIpcOpenMemHandle); in the exporting process an
// imported pointer is the allocation itself.
namespace {

constexpr char kPoolShareMagic[8] = {'P', 'T', 'E', 'M', 'U', 'P', 'O', 'L'};
constexpr char kPointerShareMagic[8] = {'P', 'T', 'E', 'M', 'U', 'P', 'T', 'R'};

struct PoolShare {
  char magic[8];
  std::int64_t process = 0;
  std::int32_t device = 0;
  std::uint32_t handle_types = 0;
};

struct PointerShare {
  char magic[8];
  std::int64_t process = 0;
  std::uint64_t pointer = 0;
  std::uint64_t bytes = 0;
};
static_assert(sizeof(PointerShare) <= sizeof(cudaMemPoolPtrExportData));

}  // namespace

PT_EXPORT cudaError_t cudaMemPoolExportToShareableHandle(
    void* shareableHandle, cudaMemPool_t memPool, enum cudaMemAllocationHandleType handleType,
    unsigned int flags) {
  const char* api = "cudaMemPoolExportToShareableHandle";
  if (shareableHandle == nullptr || flags != 0) {
    return misuse(api, cudaErrorInvalidValue, "shareableHandle is NULL or flags != 0");
  }
  PoolShare share{};
  std::memcpy(share.magic, kPoolShareMagic, sizeof(share.magic));
  share.process = static_cast<std::int64_t>(::getpid());
  {
    detail::LockedPool found = detail::lock_pool(memPool);
    if (found.pool == nullptr || (found.pool->handle_types & handleType) == 0 ||
        handleType != cudaMemHandleTypePosixFileDescriptor) {
      found.lock.unlock();
      return misuse(api, cudaErrorInvalidValue,
                    "invalid pool, or a pool not created with the POSIX file descriptor handle "
                    "type " +
                        detail::pointer_text(memPool));
    }
    share.device = found.pool->device;
    share.handle_types = found.pool->handle_types;
  }
  const int fd = detail::share_through_fd(&share, sizeof(share), "powertrain-emu-pool");
  if (fd < 0) return detail::fail(cudaErrorMemoryAllocation);
  *static_cast<int*>(shareableHandle) = fd;
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaMemPoolImportFromShareableHandle(
    cudaMemPool_t* memPool, void* shareableHandle, enum cudaMemAllocationHandleType handleType,
    unsigned int flags) {
  const char* api = "cudaMemPoolImportFromShareableHandle";
  if (memPool == nullptr || flags != 0 || handleType != cudaMemHandleTypePosixFileDescriptor) {
    return misuse(api, cudaErrorInvalidValue,
                  "memPool is NULL, flags != 0 or not a POSIX file descriptor handle");
  }
  const int fd = static_cast<int>(reinterpret_cast<std::intptr_t>(shareableHandle));
  PoolShare share{};
  if (!detail::read_shared_fd(fd, &share, sizeof(share)) ||
      std::memcmp(share.magic, kPoolShareMagic, sizeof(share.magic)) != 0 || share.device < 0 ||
      share.device >= powertrain::emu::device_count()) {
    return misuse(api, cudaErrorInvalidValue,
                  "file descriptor " + std::to_string(fd) + " does not hold an exported pool");
  }
  detail::MemoryState& m = detail::memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  detail::Pool pool;
  pool.device = share.device;
  pool.created = true;
  pool.imported = true;
  pool.handle_types = share.handle_types;
  pool.access.assign(static_cast<std::size_t>(powertrain::emu::device_count()),
                     cudaMemAccessFlagsProtNone);
  pool.access[static_cast<std::size_t>(pool.device)] = cudaMemAccessFlagsProtReadWrite;
  m.pools.push_back(std::move(pool));
  *memPool = detail::pool_handle(static_cast<int>(m.pools.size() - 1));
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaMemPoolExportPointer(struct cudaMemPoolPtrExportData* exportData,
                                               void* ptr) {
  const char* api = "cudaMemPoolExportPointer";
  if (exportData == nullptr) return misuse(api, cudaErrorInvalidValue, "exportData is NULL");
  PointerShare share{};
  std::memcpy(share.magic, kPointerShareMagic, sizeof(share.magic));
  share.process = static_cast<std::int64_t>(::getpid());
  share.pointer = reinterpret_cast<std::uintptr_t>(ptr);
  bool exportable = false;
  {
    detail::MemoryState& m = detail::memory();
    std::lock_guard<std::mutex> lock(m.mutex);
    const auto it = m.allocations.find(reinterpret_cast<std::uintptr_t>(ptr));
    exportable = it != m.allocations.end() && it->second.pool >= 0 &&
                 m.pools[static_cast<std::size_t>(it->second.pool)].handle_types != 0;
    if (exportable) share.bytes = it->second.bytes;
  }
  if (!exportable) {  // reported with the lock released, as every misuse here
    return misuse(
        api, cudaErrorInvalidValue,
        detail::pointer_text(ptr) + " is not the start of an allocation from an exportable pool");
  }
  std::memset(exportData, 0, sizeof(*exportData));
  std::memcpy(exportData, &share, sizeof(share));
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaMemPoolImportPointer(void** ptr, cudaMemPool_t memPool,
                                               struct cudaMemPoolPtrExportData* exportData) {
  const char* api = "cudaMemPoolImportPointer";
  if (ptr == nullptr || exportData == nullptr) {
    return misuse(api, cudaErrorInvalidValue, "ptr or exportData is NULL");
  }
  PointerShare share{};
  std::memcpy(static_cast<void*>(&share), exportData, sizeof(share));
  int device = 0;
  int index = -1;
  if (std::memcmp(share.magic, kPointerShareMagic, sizeof(share.magic)) != 0 || share.bytes == 0 ||
      !detail::pool_device(memPool, &device, &index)) {
    return misuse(api, cudaErrorInvalidValue,
                  "invalid pool or export data not made by cudaMemPoolExportPointer");
  }
  if (share.process == static_cast<std::int64_t>(::getpid())) {
    *ptr = reinterpret_cast<void*>(static_cast<std::uintptr_t>(share.pointer));
    return cudaSuccess;
  }
  detail::AllocRequest request;
  request.kind = AllocKind::kAsync;
  request.bytes = static_cast<std::size_t>(share.bytes);
  request.api = api;
  request.stream = 0;
  request.device = device;
  request.pool = index;
  return detail::allocate(request, powertrain::emu::now_ns(), ptr);
}

PT_EXPORT cudaError_t cudaMemPoolDestroy(cudaMemPool_t memPool) {
  detail::LockedPool found = detail::lock_pool(memPool);
  if (found.pool == nullptr || !found.pool->created) {
    found.lock.unlock();
    // A default pool cannot be destroyed (the runtime answers cudaErrorInvalidValue too).
    return misuse(
        "cudaMemPoolDestroy", cudaErrorInvalidValue,
        "invalid memory pool or a device's default pool " + detail::pointer_text(memPool));
  }
  // Outstanding allocations stay valid until freed, as in the runtime; a device whose current
  // pool it was falls back to its default pool.
  found.pool->live = false;
  detail::MemoryState& m = detail::memory();
  const auto index = static_cast<int>(found.pool - m.pools.data());
  for (std::size_t d = 0; d < m.current_pool.size(); ++d) {
    if (m.current_pool[d] == index) m.current_pool[d] = static_cast<int>(d);
  }
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaMemPoolSetAccess(cudaMemPool_t memPool,
                                           const struct cudaMemAccessDesc* descList, size_t count) {
  const char* api = "cudaMemPoolSetAccess";
  if (descList == nullptr && count != 0) {
    return misuse(api, cudaErrorInvalidValue, "descList is NULL");
  }
  detail::LockedPool found = detail::lock_pool(memPool);
  if (found.pool == nullptr) {
    found.lock.unlock();
    return misuse(api, cudaErrorInvalidValue,
                  "invalid memory pool " + detail::pointer_text(memPool));
  }
  detail::Pool& pool = *found.pool;
  // Validate everything first: a bad entry changes nothing.
  for (size_t k = 0; k < count; ++k) {
    const cudaMemAccessDesc& d = descList[k];
    std::string problem;
    if (d.location.type != cudaMemLocationTypeDevice || d.location.id < 0 ||
        d.location.id >= static_cast<int>(pool.access.size())) {
      problem = "descList[" + std::to_string(k) + "] is not a device of this process";
    } else if (d.flags != cudaMemAccessFlagsProtNone && d.flags != cudaMemAccessFlagsProtRead &&
               d.flags != cudaMemAccessFlagsProtReadWrite) {
      problem = "descList[" + std::to_string(k) + "] has unknown flags";
    } else if (d.location.id == pool.device && d.flags != cudaMemAccessFlagsProtReadWrite) {
      problem = "the pool's own device always has read-write access";
    }
    if (!problem.empty()) {
      found.lock.unlock();
      return misuse(api, cudaErrorInvalidValue, problem);
    }
  }
  for (size_t k = 0; k < count; ++k) {
    pool.access[static_cast<std::size_t>(descList[k].location.id)] = descList[k].flags;
  }
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaMemPoolGetAccess(enum cudaMemAccessFlags* flags, cudaMemPool_t memPool,
                                           struct cudaMemLocation* location) {
  const char* api = "cudaMemPoolGetAccess";
  if (flags == nullptr || location == nullptr) {
    return misuse(api, cudaErrorInvalidValue, "flags or location is NULL");
  }
  detail::LockedPool found = detail::lock_pool(memPool);
  const detail::Pool* pool = found.pool;
  if (pool == nullptr || location->type != cudaMemLocationTypeDevice || location->id < 0 ||
      location->id >= static_cast<int>(pool->access.size())) {
    found.lock.unlock();
    return misuse(api, cudaErrorInvalidValue, "invalid memory pool or location");
  }
  *flags = static_cast<cudaMemAccessFlags>(pool->access[static_cast<std::size_t>(location->id)]);
  return cudaSuccess;
}

namespace {
// Index into Pool::reuse of a reuse-policy attribute, or -1.
int reuse_slot(cudaMemPoolAttr attr) {
  switch (attr) {
    case cudaMemPoolReuseFollowEventDependencies:
      return 0;
    case cudaMemPoolReuseAllowOpportunistic:
      return 1;
    case cudaMemPoolReuseAllowInternalDependencies:
      return 2;
    default:
      return -1;
  }
}
}  // namespace

PT_EXPORT cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr,
                                              void* value) {
  const char* api = "cudaMemPoolSetAttribute";
  detail::LockedPool found = detail::lock_pool(memPool);
  if (found.pool == nullptr || value == nullptr) {
    found.lock.unlock();
    return misuse(api, cudaErrorInvalidValue, "invalid memory pool or NULL value");
  }
  detail::Pool& pool = *found.pool;
  const int slot = reuse_slot(attr);
  // Reuse flags are int, the others cuuint64_t: read only the value's own width.
  const unsigned long long v = slot >= 0 ? 0 : *static_cast<const unsigned long long*>(value);
  if (slot >= 0) {
    pool.reuse[slot] = *static_cast<const int*>(value) != 0 ? 1 : 0;
  } else if (attr == cudaMemPoolAttrReleaseThreshold) {
    pool.release_threshold = v;
  } else if ((attr == cudaMemPoolAttrReservedMemHigh || attr == cudaMemPoolAttrUsedMemHigh) &&
             v == 0) {
    pool.high_bytes = pool.used_bytes;  // only a reset to 0 is allowed, as in the runtime
  } else {
    found.lock.unlock();
    return misuse(api, cudaErrorInvalidValue,
                  "attribute " + std::to_string(static_cast<int>(attr)) +
                      " cannot be set (or a high watermark set to a value other than 0)");
  }
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr,
                                              void* value) {
  const char* api = "cudaMemPoolGetAttribute";
  detail::LockedPool found = detail::lock_pool(memPool);
  if (found.pool == nullptr || value == nullptr) {
    found.lock.unlock();
    return misuse(api, cudaErrorInvalidValue, "invalid memory pool or NULL value");
  }
  const detail::Pool& pool = *found.pool;
  const int slot = reuse_slot(attr);
  // Reuse flags are int, byte counters and thresholds are cuuint64_t.
  if (slot >= 0) {
    *static_cast<int*>(value) = pool.reuse[slot];
    return cudaSuccess;
  }
  unsigned long long out = 0;
  switch (attr) {
    case cudaMemPoolAttrReleaseThreshold:
      out = pool.release_threshold;
      break;
    case cudaMemPoolAttrReservedMemCurrent:
    case cudaMemPoolAttrUsedMemCurrent:
      out = static_cast<unsigned long long>(std::max<std::int64_t>(pool.used_bytes, 0));
      break;
    case cudaMemPoolAttrReservedMemHigh:
    case cudaMemPoolAttrUsedMemHigh:
      out = static_cast<unsigned long long>(std::max<std::int64_t>(pool.high_bytes, 0));
      break;
    default:
      break;  // attributes this runtime does not model read as 0
  }
  *static_cast<unsigned long long*>(value) = out;
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep) {
  int device = 0;
  (void)minBytesToKeep;
  if (!detail::pool_device(memPool, &device)) {
    return misuse("cudaMemPoolTrimTo", cudaErrorInvalidValue, "invalid memory pool");
  }
  return cudaSuccess;  // nothing is cached beyond the live allocations
}

// ---- IPC memory handles (simpleIPC) -----------------------------------------------------------
// The handle names the exporting process and the allocation. Opened in that process (or a child
// forked after the export, whose copy of the emulator still has the allocation at that address),
// it is the allocation itself; in any other process a stand-in device allocation of the same size
// (a `malloc` named cudaIpcOpenMemHandle), since emulated processes share no memory: bytes written
// by one are not seen by the other (kernels compute nothing here anyway).
namespace powertrain::emu::detail {
namespace {
struct IpcOpened {
  bool stand_in = false;  // a local allocation cudaIpcCloseMemHandle frees
  int opens = 0;
};
struct IpcState {
  std::mutex mutex;
  std::map<const void*, IpcOpened> opened;  // by the pointer cudaIpcOpenMemHandle returned
};
IpcState& ipc_state() {
  static IpcState* s = new IpcState;  // never destroyed (calls arrive during exit)
  return *s;
}
}  // namespace
}  // namespace powertrain::emu::detail

PT_EXPORT cudaError_t cudaIpcGetMemHandle(cudaIpcMemHandle_t* handle, void* devPtr) {
  const char* api = "cudaIpcGetMemHandle";
  if (handle == nullptr) return misuse(api, cudaErrorInvalidValue, "handle is NULL");
  const detail::PointerInfo info = detail::lookup_pointer(devPtr);
  if (!info.known || info.kind != AllocKind::kDevice ||
      info.base != reinterpret_cast<std::uintptr_t>(devPtr)) {
    return misuse(api, cudaErrorInvalidValue,
                  detail::pointer_text(devPtr) + " is not the start of a cudaMalloc allocation");
  }
  detail::IpcHandle h;
  std::memcpy(h.magic, detail::kIpcMagic, sizeof h.magic);
  h.pid = ::getpid();
  h.value = info.base;
  h.bytes = info.bytes;
  h.device = info.device;
  *handle = cudaIpcMemHandle_t{};
  std::memcpy(handle->reserved, &h, sizeof h);
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaIpcOpenMemHandle(void** devPtr, cudaIpcMemHandle_t handle,
                                           unsigned int flags) {
  const char* api = "cudaIpcOpenMemHandle";
  if (devPtr == nullptr) return misuse(api, cudaErrorInvalidValue, "devPtr is NULL");
  if (flags != 0 && flags != cudaIpcMemLazyEnablePeerAccess) {
    return misuse(api, cudaErrorInvalidValue, "unknown flags " + std::to_string(flags));
  }
  detail::IpcHandle h;
  std::memcpy(&h, handle.reserved, sizeof h);
  if (std::memcmp(h.magic, detail::kIpcMagic, sizeof h.magic) != 0 || h.bytes == 0) {
    return misuse(api, cudaErrorInvalidValue, "not a memory handle from cudaIpcGetMemHandle");
  }
  void* original = reinterpret_cast<void*>(static_cast<std::uintptr_t>(h.value));
  const detail::PointerInfo info = detail::lookup_pointer(original);
  void* opened = nullptr;
  bool stand_in = false;
  if (info.known && info.base == h.value && info.bytes == h.bytes) {
    opened = original;  // the exporter itself, or a child forked after the export
  } else {
    static std::once_flag once;
    std::call_once(once, [&] {
      std::fprintf(stderr,
                   "powertrain-emu: cudaIpcOpenMemHandle: memory of process %lld is opened as a "
                   "stand-in allocation of the same size: emulated processes share no memory, so "
                   "data written through the handle is not seen by the other process\n",
                   static_cast<long long>(h.pid));
    });
    const int device = h.device >= 0 && h.device < detail::config().devices
                           ? h.device
                           : powertrain::emu::current_device();
    const cudaError_t error = detail::allocate_on_device(&opened, h.bytes, device, api);
    if (error != cudaSuccess) return error;
    stand_in = true;
  }
  {
    detail::IpcState& ipc = detail::ipc_state();
    std::lock_guard<std::mutex> lock(ipc.mutex);
    detail::IpcOpened& o = ipc.opened[opened];
    o.stand_in = stand_in;
    ++o.opens;
  }
  *devPtr = opened;
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaIpcCloseMemHandle(void* devPtr) {
  bool free_it = false;
  {
    detail::IpcState& ipc = detail::ipc_state();
    std::lock_guard<std::mutex> lock(ipc.mutex);
    const auto it = ipc.opened.find(devPtr);
    if (it == ipc.opened.end()) {
      return misuse("cudaIpcCloseMemHandle", cudaErrorInvalidValue,
                    detail::pointer_text(devPtr) + " was not opened with cudaIpcOpenMemHandle");
    }
    if (--it->second.opens == 0) {
      free_it = it->second.stand_in;
      ipc.opened.erase(it);
    }
  }
  if (free_it) powertrain::emu::free_device_memory(devPtr, "cudaIpcCloseMemHandle");
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaMemGetInfo(size_t* free, size_t* total) {
  // Free starts below the total by what the context holds (Config::reserved_bytes).
  const std::int64_t capacity = detail::config().memory_bytes;
  const std::int64_t used =
      detail::used_bytes(powertrain::emu::current_device()) + detail::config().reserved_bytes;
  if (free != nullptr) *free = static_cast<size_t>(capacity - used);
  if (total != nullptr) *total = static_cast<size_t>(capacity);
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes* attributes,
                                               const void* ptr) {
  if (attributes == nullptr) {
    return misuse("cudaPointerGetAttributes", cudaErrorInvalidValue, "attributes is NULL");
  }
  *attributes = cudaPointerAttributes{};
  const detail::PointerInfo info = detail::lookup_pointer(ptr);
  if (!info.known) {
    attributes->type = cudaMemoryTypeUnregistered;  // plain host memory: success, as CUDA 11+
    attributes->device = -2;
    attributes->hostPointer = const_cast<void*>(ptr);
    return cudaSuccess;
  }
  attributes->device = info.device;
  switch (info.kind) {
    case AllocKind::kHost:
      attributes->type = cudaMemoryTypeHost;
      attributes->hostPointer = const_cast<void*>(ptr);
      attributes->devicePointer = const_cast<void*>(ptr);
      break;
    case AllocKind::kManaged:
      attributes->type = cudaMemoryTypeManaged;
      attributes->hostPointer = const_cast<void*>(ptr);
      attributes->devicePointer = const_cast<void*>(ptr);
      break;
    case AllocKind::kDevice:
    case AllocKind::kAsync:
      attributes->type = cudaMemoryTypeDevice;
      attributes->devicePointer = const_cast<void*>(ptr);
      break;
  }
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaHostRegister(void* ptr, size_t size, unsigned int flags) {
  const char* api = "cudaHostRegister";
  if (ptr == nullptr || size == 0) return misuse(api, cudaErrorInvalidValue, "NULL or empty range");
  detail::MemoryState& m = detail::memory();
  std::lock_guard<std::mutex> lock(m.mutex);
  const auto base = reinterpret_cast<std::uintptr_t>(ptr);
  if (m.allocations.count(base) > 0) {
    return detail::fail(cudaErrorHostMemoryAlreadyRegistered);
  }
  detail::Allocation a;
  a.bytes = size;
  a.mapped = size;
  a.kind = AllocKind::kHost;
  a.backing = detail::Backing::kExternal;
  a.flags = flags;
  a.accounted = false;
  m.allocations[base] = a;
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaHostUnregister(void* ptr) {
  detail::MemoryState& m = detail::memory();
  std::unique_lock<std::mutex> lock(m.mutex);
  const auto it = m.allocations.find(reinterpret_cast<std::uintptr_t>(ptr));
  if (it == m.allocations.end() || it->second.backing != detail::Backing::kExternal ||
      it->second.mapping) {
    lock.unlock();
    return detail::fail(cudaErrorHostMemoryNotRegistered);
  }
  m.allocations.erase(it);
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaHostGetDevicePointer(void** pDevice, void* pHost, unsigned int flags) {
  (void)flags;
  const detail::PointerInfo info = detail::lookup_pointer(pHost);
  if (pDevice == nullptr || !info.known || info.kind != AllocKind::kHost) {
    return misuse("cudaHostGetDevicePointer", cudaErrorInvalidValue,
                  detail::pointer_text(pHost) + " is not pinned or registered host memory");
  }
  *pDevice = pHost;  // unified addressing: the same address on both sides
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaHostGetFlags(unsigned int* pFlags, void* pHost) {
  detail::MemoryState& m = detail::memory();
  std::unique_lock<std::mutex> lock(m.mutex);
  const auto it = m.allocations.find(reinterpret_cast<std::uintptr_t>(pHost));
  if (pFlags == nullptr || it == m.allocations.end() || it->second.kind != AllocKind::kHost) {
    lock.unlock();
    return misuse("cudaHostGetFlags", cudaErrorInvalidValue,
                  detail::pointer_text(pHost) + " is not pinned host memory");
  }
  *pFlags = it->second.flags;
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaGetSymbolAddress(void** devPtr, const void* symbol) {
  const detail::VariableInfo v = detail::lookup_variable(symbol);
  if (!v.known) {
    return misuse("cudaGetSymbolAddress", cudaErrorInvalidSymbol,
                  detail::pointer_text(symbol) + " is not a registered __device__ variable");
  }
  if (devPtr == nullptr) return misuse("cudaGetSymbolAddress", cudaErrorInvalidValue, "NULL");
  *devPtr = v.storage;
  return cudaSuccess;
}

PT_EXPORT cudaError_t cudaGetSymbolSize(size_t* size, const void* symbol) {
  const detail::VariableInfo v = detail::lookup_variable(symbol);
  if (!v.known) {
    return misuse("cudaGetSymbolSize", cudaErrorInvalidSymbol,
                  detail::pointer_text(symbol) + " is not a registered __device__ variable");
  }
  if (size == nullptr) return misuse("cudaGetSymbolSize", cudaErrorInvalidValue, "NULL");
  *size = v.size;
  return cudaSuccess;
}

// Placement hints for managed memory have no effect on the emulated device's timing; they are
// kept per range, so cudaMemRangeGetAttribute(s) reads back what was set. Under the CUDA 12 ABI
// the fourth argument is `int device` (cudaCpuDeviceId for the host), in the register that holds
// the location's type in CUDA 13's form.
PT_EXPORT cudaError_t cudaMemAdvise(const void* devPtr, size_t count, enum cudaMemoryAdvise advice,
                                    struct cudaMemLocation location) {
  if (detail::cudart_abi() == 12) location = detail::legacy_location(location.type);
  return detail::advise_managed("cudaMemAdvise", devPtr, count, advice, location);
}

PT_EXPORT cudaError_t cudaMemRangeGetAttribute(void* data, size_t dataSize,
                                               enum cudaMemRangeAttribute attribute,
                                               const void* devPtr, size_t count) {
  return detail::managed_range_attribute("cudaMemRangeGetAttribute", data, dataSize, attribute,
                                         devPtr, count);
}

PT_EXPORT cudaError_t cudaMemRangeGetAttributes(void** data, size_t* dataSizes,
                                                enum cudaMemRangeAttribute* attributes,
                                                size_t numAttributes, const void* devPtr,
                                                size_t count) {
  if (numAttributes == 0 || data == nullptr || dataSizes == nullptr || attributes == nullptr) {
    return misuse("cudaMemRangeGetAttributes", cudaErrorInvalidValue,
                  "numAttributes is 0 or data/dataSizes/attributes is NULL");
  }
  for (size_t i = 0; i < numAttributes; ++i) {
    const cudaError_t status = detail::managed_range_attribute(
        "cudaMemRangeGetAttributes", data[i], dataSizes[i], attributes[i], devPtr, count);
    if (status != cudaSuccess) return status;
  }
  return cudaSuccess;
}

// cudaMemPrefetchAsync and its _ptsz form are in cudart_prefetch.cc (their CUDA 12 and 13
// signatures differ in where the stream is).

// The CUDA 12.2–12.9 names of the location-based forms (CUDA 13 gave them the plain names).
PT_EXPORT cudaError_t cudaMemPrefetchAsync_v2(const void* devPtr, size_t count,
                                              struct cudaMemLocation location,
                                              unsigned int /*flags*/, cudaStream_t stream) {
  return detail::prefetch_managed("cudaMemPrefetchAsync_v2", devPtr, count, location, stream,
                                  false);
}

PT_EXPORT cudaError_t cudaMemAdvise_v2(const void* devPtr, size_t count,
                                       enum cudaMemoryAdvise advice,
                                       struct cudaMemLocation location) {
  return detail::advise_managed("cudaMemAdvise_v2", devPtr, count, advice, location);
}
