// cuSOLVERMg (libcusolverMg: the dense solvers over several GPUs of one process, as NVIDIA's
// CUDALibrarySamples MgGetrf, MgPotrf and MgSyevd call them) on the emulated devices. The real
// library carries its own static runtime, so without these definitions its calls never reach the
// emulator. Handles with their selected devices, device grids (1 x G, column mapping) and matrix
// descriptors are kept and checked; the routines (getrf/getrs, potrf/potrs/potri, syevd and their
// _bufferSize queries) validate their distributed operands and are recorded, as cusolverDn's are
// (cusolver_emu.cc), not computed: `info` is set to 0, getrf's pivots to the identity where the
// memory is backed, syevd's eigenvalues are left as they were.
//
// Layout (cuSOLVERMg's 1-D block-cyclic column distribution): column tile t (colBlockSize
// columns) of a descriptor lives on device t mod G of its grid, as local tile t div G of that
// device's array (leading dimension numRows). Model, not measured:
//   - each device's share of the routine's FLOPs (the leading-order LAPACK counts of
//     cusolver_emu.cc; complex 4x) is the share of the matrix columns it owns; it is one `gemm`
//     record on that device's default stream with a `solver` object naming "mg_<routine>";
//   - the factorizations (getrf, potrf, potri, syevd) broadcast every column tile from its owner
//     to the other devices of the grid (a panel each step of the blocked algorithm), and the
//     solves (getrs, potrs) send A's tiles to the devices that own columns of B: peer copies
//     (cudaMemcpyPeerAsync) into the receiving device's workspace, so they are timed on the
//     modelled links;
//   - the routines return when every device is done (their `info` is a host pointer);
//   - workspace (elements per device, the _bufferSize answers): one column panel (numRows x
//     colBlockSize) for getrf/potrf, two for potri, plus n·nrhs for getrs/potrs; syevd adds its
//     share of dsyevd's 1 + 6n + 2n².
#include <cusolverMg.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "interposer/cublas_nccl_util.h"
#include "interposer/cudart_internal.h"
#include "interposer/trace_schema.h"

namespace trace_schema = powertrain::trace_schema;

namespace powertrain::emu::detail {
namespace {

struct MgHandle {
  std::vector<int> devices;  // cusolverMgDeviceSelect
};
struct MgGrid {
  std::vector<int> devices;  // the grid's column devices, in order
};
struct MgDesc {
  std::int64_t rows = 0, cols = 0, row_block = 0, col_block = 0;
  cudaDataType dtype = CUDA_R_64F;
  std::vector<int> devices;  // of its grid (copied: the grid may be destroyed first)
};

// Handles, grids and descriptors are 1-byte tokens that are never freed, so a destroyed one is
// never handed out again and its later use is caught (as nccl_emu.cc's communicators).
struct MgState {
  std::mutex mutex;
  std::unordered_map<const void*, MgHandle> handles;
  std::unordered_map<const void*, MgGrid> grids;
  std::unordered_map<const void*, MgDesc> descs;
};
MgState& mg() {
  static MgState* s = new MgState;  // never destroyed
  return *s;
}

cusolverStatus_t bad(const char* api, const std::string& what) {
  report_misuse(api, what);
  return CUSOLVER_STATUS_INVALID_VALUE;
}

// Bytes of an element of the types cuSOLVERMg takes (fp32/fp64, real or complex); 0 otherwise.
int element_bytes(cudaDataType type) {
  const bool supported =
      type == CUDA_R_32F || type == CUDA_R_64F || type == CUDA_C_32F || type == CUDA_C_64F;
  return supported ? libs::cuda_dtype_bits(type) / 8 : 0;
}
bool is_complex(cudaDataType type) { return type == CUDA_C_32F || type == CUDA_C_64F; }

int device_count() {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess) return 0;
  return count;
}

// Width of column tile t of `cols` columns in tiles of `block`.
std::int64_t tile_width(std::int64_t t, std::int64_t cols, std::int64_t block) {
  return std::min(block, cols - t * block);
}
std::int64_t tiles(std::int64_t cols, std::int64_t block) { return (cols + block - 1) / block; }

// Columns of the descriptor's first `cols` columns that device index g of its grid owns.
std::int64_t local_columns(const MgDesc& d, std::int64_t cols, std::size_t g) {
  const auto count = static_cast<std::int64_t>(d.devices.size());
  std::int64_t owned = 0;
  for (std::int64_t t = static_cast<std::int64_t>(g); t < tiles(cols, d.col_block); t += count) {
    owned += tile_width(t, cols, d.col_block);
  }
  return owned;
}

// One distributed operand as a routine sees it.
struct Operand {
  const char* name = "A";
  void* const* arrays = nullptr;  // one local array per grid device
  int ia = 1, ja = 1;
  const void* desc = nullptr;
  std::int64_t rows = 0, cols = 0;  // the part the routine uses
  int element = 0;                  // bytes; 0: the descriptor's type
};

// Checks an operand: live descriptor of the compute type, (IA, JA) = (1, 1) as cuSOLVERMg
// supports, the used part inside the descriptor, and each device's local array in device memory
// of that device holding its columns (not for a _bufferSize query). Fills `desc`.
bool check_operand(const Operand& o, cudaDataType compute, bool check_arrays, const char* api,
                   MgDesc* desc) {
  {
    std::lock_guard<std::mutex> lock(mg().mutex);
    const auto it = mg().descs.find(o.desc);
    if (it == mg().descs.end()) {
      report_misuse(api, std::string("descriptor of ") + o.name + " " + pointer_text(o.desc) +
                             " is invalid or destroyed");
      return false;
    }
    *desc = it->second;
  }
  if (o.element == 0 && desc->dtype != compute) {
    report_misuse(api, std::string("descriptor of ") + o.name + " is of type " +
                           libs::cuda_dtype_name(desc->dtype) + ", the compute type " +
                           libs::cuda_dtype_name(compute));
    return false;
  }
  if (o.ia != 1 || o.ja != 1) {
    report_misuse(api, std::string("I") + o.name + ", J" + o.name + " = " + std::to_string(o.ia) +
                           ", " + std::to_string(o.ja) + ": cuSOLVERMg supports only 1, 1");
    return false;
  }
  if (o.rows < 0 || o.cols < 0 || o.rows > desc->rows || o.cols > desc->cols) {
    report_misuse(api, std::string(o.name) + " is " + std::to_string(o.rows) + " x " +
                           std::to_string(o.cols) + ", its descriptor " +
                           std::to_string(desc->rows) + " x " + std::to_string(desc->cols));
    return false;
  }
  if (!check_arrays) return true;  // a _bufferSize query: the arrays need not exist yet
  if (o.arrays == nullptr) {
    report_misuse(api, std::string("the array of ") + o.name + "'s local pointers is NULL");
    return false;
  }
  const int element = o.element > 0 ? o.element : element_bytes(desc->dtype);
  for (std::size_t g = 0; g < desc->devices.size(); ++g) {
    const std::int64_t owned = local_columns(*desc, desc->cols, g);
    if (owned == 0) continue;
    // In doubles: descriptors up to 2^31 x 2^31 of 16-byte elements overflow 64-bit products.
    const double need = static_cast<double>(o.element > 0 ? owned : desc->rows) *
                        static_cast<double>(o.element > 0 ? 1 : owned) * element;
    const PointerInfo info = lookup_pointer(o.arrays[g]);
    if (!info.known || !info.device_side || info.device != desc->devices[g] ||
        static_cast<double>(info.available) < need) {
      report_misuse(api, std::string("local ") + o.name + " of device " +
                             std::to_string(desc->devices[g]) + " " + pointer_text(o.arrays[g]) +
                             " is not device memory of that device holding " +
                             std::to_string(static_cast<long long>(std::min(need, 9e18))) +
                             " bytes");
      return false;
    }
  }
  return true;
}

// The handle's devices, or false after a misuse report.
bool handle_devices(cusolverMgHandle_t handle, const char* api, std::vector<int>* devices) {
  std::lock_guard<std::mutex> lock(mg().mutex);
  const auto it = mg().handles.find(handle);
  if (it == mg().handles.end()) {
    report_misuse(api, "invalid or destroyed cuSOLVERMg handle " + pointer_text(handle));
    return false;
  }
  if (it->second.devices.empty()) {
    report_misuse(api, "no devices selected (call cusolverMgDeviceSelect first)");
    return false;
  }
  *devices = it->second.devices;
  return true;
}

// The compute types cuSOLVERMg accepts.
bool check_compute(cudaDataType compute, const char* api) {
  if (element_bytes(compute) == 0) {
    report_misuse(api, std::string("compute type ") + libs::cuda_dtype_name(compute) +
                           " is not R_32F, R_64F, C_32F or C_64F");
    return false;
  }
  return true;
}

double panel_elements(const MgDesc& d) {
  return static_cast<double>(d.rows) * static_cast<double>(d.col_block);
}

// What one routine records.
struct MgCall {
  const char* api = "";
  const char* routine = "";
  cudaDataType compute = CUDA_R_64F;
  std::int64_t n = 0, nrhs = 0;
  double flops = 0;    // real-arithmetic count (complex: x4 when recorded)
  bool factor = true;  // broadcasts every tile of A (else sends A's tiles to B's owners)
  const MgDesc* a = nullptr;
  void* const* arrays_a = nullptr;
  const MgDesc* b = nullptr;  // solves: B's descriptor
  void* const* work = nullptr;
  std::int64_t lwork = 0;  // elements per device
  std::int64_t start = 0;
};

// FLOPs and bytes as written: at most the trace reader's 2^50 for bytes (FLOPs fit a double).
std::int64_t saturate(double value) {
  return value >= 9.2e18 ? std::int64_t{9200000000000000000} : static_cast<std::int64_t>(value);
}
std::int64_t saturate_bytes(double value) {
  return static_cast<std::int64_t>(std::min(value, 1125899906842624.0));
}

// Records the routine: peer copies of A's tiles, each device's share as a `gemm` record, and the
// wait for every device. The calling thread's current device is restored.
cusolverStatus_t record(const MgCall& c) {
  const MgDesc& a = *c.a;
  const int element = element_bytes(c.compute);
  const auto count = static_cast<std::int64_t>(a.devices.size());
  int current = 0;
  cudaGetDevice(&current);
  // Tiles of A to the devices that need them.
  std::vector<bool> receives(a.devices.size(), c.factor);
  if (!c.factor && c.b != nullptr) {
    for (std::size_t g = 0; g < c.b->devices.size(); ++g) {
      if (local_columns(*c.b, c.b->cols, g) == 0) continue;
      const auto it = std::find(a.devices.begin(), a.devices.end(), c.b->devices[g]);
      if (it != a.devices.end()) receives[static_cast<std::size_t>(it - a.devices.begin())] = true;
    }
  }
  const std::int64_t work_bytes = c.lwork * element;
  for (std::int64_t t = 0; count > 1 && t < tiles(c.n, a.col_block); ++t) {
    const std::size_t owner = static_cast<std::size_t>(t % count);
    const std::int64_t bytes =
        std::min(a.rows * tile_width(t, c.n, a.col_block) * element, work_bytes);
    const auto* source = static_cast<const unsigned char*>(c.arrays_a[owner]) +
                         (t / count) * a.col_block * a.rows * element;
    for (std::size_t g = 0; g < a.devices.size(); ++g) {
      if (g == owner || !receives[g] || bytes <= 0) continue;
      cudaSetDevice(a.devices[owner]);
      cudaMemcpyPeerAsync(c.work[g], a.devices[g], source, a.devices[owner],
                          static_cast<std::size_t>(bytes), nullptr);
    }
  }
  const double scale = is_complex(c.compute) ? 4.0 : 1.0;
  const char* dtype = libs::cuda_dtype_name(c.compute);
  for (std::size_t g = 0; g < a.devices.size(); ++g) {
    const std::int64_t owned = local_columns(a, c.n, g);
    if (owned == 0 || c.n == 0) continue;
    cudaSetDevice(a.devices[g]);
    int device = 0;
    const std::int64_t stream = emu::stream_id(nullptr, false, &device);
    const double share = static_cast<double>(owned) / static_cast<double>(c.n);
    auto r = begin_work(trace_schema::op::kGemm, c.start);
    r.field(trace_schema::field::kApi, std::string_view(c.api));
    r.field(trace_schema::field::kM, c.n);
    r.field(trace_schema::field::kN, owned);
    r.field(trace_schema::field::kK, std::max<std::int64_t>(c.nrhs > 0 ? c.nrhs : c.n, 1));
    r.field(trace_schema::field::kBatch, std::int64_t{1});
    r.field("transa", std::string_view("N"));
    r.field("transb", std::string_view("N"));
    r.field(trace_schema::field::kDtypeA, std::string_view(dtype));
    r.field(trace_schema::field::kDtypeB, std::string_view(dtype));
    r.field(trace_schema::field::kDtypeC, std::string_view(dtype));
    r.field(trace_schema::field::kCompute, std::string_view(dtype));
    r.field(trace_schema::field::kFlops, saturate(scale * c.flops * share));
    r.field(
        trace_schema::field::kBytes,
        saturate_bytes(static_cast<double>(a.rows) * static_cast<double>(owned) * element * 2.0));
    r.raw("solver", std::string("{\"routine\":\"mg_") + c.routine +
                        "\",\"devices\":" + std::to_string(count) + "}");
    end_work(r, device, stream, 0);
  }
  for (int d : a.devices) {
    cudaSetDevice(d);
    cudaDeviceSynchronize();
  }
  cudaSetDevice(current);
  return CUSOLVER_STATUS_SUCCESS;
}

// The workspace model (elements per device).
std::int64_t workspace(const char* routine, const MgDesc& a, std::int64_t n, std::int64_t nrhs) {
  const double panel = panel_elements(a);
  const std::string r(routine);
  double elements = panel;
  if (r == "potri") elements = 2 * panel;
  if (r == "getrs" || r == "potrs") elements = panel + static_cast<double>(n) * nrhs;
  if (r == "syevd") {
    elements = panel + (1.0 + 6.0 * n + 2.0 * static_cast<double>(n) * n) /
                           static_cast<double>(a.devices.size());
  }
  return std::max<std::int64_t>(1, saturate(elements));
}

bool check_info(int* info, const char* api) {
  if (info == nullptr) {
    report_misuse(api, "info is NULL (a host pointer)");
    return false;
  }
  *info = 0;
  return true;
}

bool check_work(void* const* work, std::int64_t lwork, std::int64_t needed, const MgDesc& a,
                int element, const char* api) {
  if (lwork < needed) {
    report_misuse(api, "lwork " + std::to_string(lwork) + " is below the " +
                           std::to_string(needed) +
                           " elements per device the _bufferSize call gives");
    return false;
  }
  if (work == nullptr) {
    report_misuse(api, "the array of workspace pointers is NULL");
    return false;
  }
  for (std::size_t g = 0; g < a.devices.size(); ++g) {
    const PointerInfo info = lookup_pointer(work[g]);
    if (!info.known || !info.device_side || info.device != a.devices[g] ||
        static_cast<double>(info.available) <
            static_cast<double>(lwork) * static_cast<double>(element)) {
      report_misuse(api, "workspace of device " + std::to_string(a.devices[g]) + " " +
                             pointer_text(work[g]) + " is not device memory of that device of " +
                             std::to_string(lwork) + " elements");
      return false;
    }
  }
  return true;
}

// getrf's pivots: the identity (no row exchange), written where the local arrays are backed.
void identity_pivots(const MgDesc& a, int* const* ipiv, std::int64_t n) {
  const auto count = static_cast<std::int64_t>(a.devices.size());
  for (std::int64_t t = 0; t < tiles(n, a.col_block); ++t) {
    const std::size_t owner = static_cast<std::size_t>(t % count);
    const PointerInfo info = lookup_pointer(ipiv[owner]);
    if (!info.backed) continue;
    for (std::int64_t j = 0; j < tile_width(t, n, a.col_block); ++j) {
      ipiv[owner][(t / count) * a.col_block + j] = static_cast<int>(t * a.col_block + j + 1);
    }
  }
}

// The shared path of every routine: handle, compute type, operands, workspace; then the record.
struct Routine {
  const char* api;
  const char* routine;
  cusolverMgHandle_t handle;
  cudaDataType compute;
  std::int64_t n, nrhs;
  double flops;
  bool factor;
  Operand a;
  const Operand* b;     // solves
  const Operand* ipiv;  // getrf/getrs
  void* const* work;    // nullptr: a _bufferSize query
  std::int64_t lwork;
  std::int64_t* lwork_out;
  int* info;
};

cusolverStatus_t run(const Routine& r) {
  const std::int64_t start = now_ns();
  std::vector<int> devices;
  if (!handle_devices(r.handle, r.api, &devices)) return CUSOLVER_STATUS_NOT_INITIALIZED;
  if (!check_compute(r.compute, r.api)) return CUSOLVER_STATUS_INVALID_VALUE;
  if (r.n < 0 || r.nrhs < 0) return bad(r.api, "a size is negative");
  const bool query = r.work == nullptr;
  MgDesc a, b, pivots;
  if (!check_operand(r.a, r.compute, !query, r.api, &a) ||
      (r.b != nullptr && !check_operand(*r.b, r.compute, !query, r.api, &b)) ||
      (r.ipiv != nullptr && !check_operand(*r.ipiv, r.compute, !query, r.api, &pivots))) {
    return CUSOLVER_STATUS_INVALID_VALUE;
  }
  for (const MgDesc* d :
       {&a, r.b != nullptr ? &b : nullptr, r.ipiv != nullptr ? &pivots : nullptr}) {
    if (d == nullptr) continue;
    for (int device : d->devices) {
      if (std::find(devices.begin(), devices.end(), device) == devices.end()) {
        return bad(r.api, "device " + std::to_string(device) +
                              " of an operand's grid is not one the handle selected");
      }
    }
  }
  const std::int64_t needed = workspace(r.routine, a, r.n, r.nrhs);
  if (query) {
    if (r.lwork_out == nullptr) return bad(r.api, "lwork is NULL");
    *r.lwork_out = needed;
    return CUSOLVER_STATUS_SUCCESS;
  }
  if (!check_work(r.work, r.lwork, needed, a, element_bytes(r.compute), r.api) ||
      !check_info(r.info, r.api)) {
    return CUSOLVER_STATUS_INVALID_VALUE;
  }
  if (r.ipiv != nullptr && std::string(r.routine) == "getrf") {
    identity_pivots(pivots, reinterpret_cast<int* const*>(r.ipiv->arrays), r.n);
  }
  MgCall c;
  c.api = r.api;
  c.routine = r.routine;
  c.compute = r.compute;
  c.n = r.n;
  c.nrhs = r.nrhs;
  c.flops = r.flops;
  c.factor = r.factor;
  c.a = &a;
  c.arrays_a = r.a.arrays;
  c.b = r.b != nullptr ? &b : nullptr;
  c.work = r.work;
  c.lwork = r.lwork;
  c.start = start;
  return record(c);
}

double cube(std::int64_t n) { return static_cast<double>(n) * n * n; }

}  // namespace
}  // namespace powertrain::emu::detail

namespace mgd = powertrain::emu::detail;

// ---- handles, grids, descriptors --------------------------------------------------------------

PT_EXPORT cusolverStatus_t cusolverMgCreate(cusolverMgHandle_t* handle) {
  if (handle == nullptr) return mgd::bad("cusolverMgCreate", "the handle pointer is NULL");
  auto* h = new char;  // a distinct address; the state is in the map
  std::lock_guard<std::mutex> lock(mgd::mg().mutex);
  mgd::mg().handles[h] = {};
  *handle = reinterpret_cast<cusolverMgHandle_t>(h);
  return CUSOLVER_STATUS_SUCCESS;
}

PT_EXPORT cusolverStatus_t cusolverMgDestroy(cusolverMgHandle_t handle) {
  std::lock_guard<std::mutex> lock(mgd::mg().mutex);
  if (mgd::mg().handles.erase(handle) == 0) {
    powertrain::emu::report_misuse(
        "cusolverMgDestroy", "invalid or destroyed cuSOLVERMg handle " + mgd::pointer_text(handle));
    return CUSOLVER_STATUS_NOT_INITIALIZED;
  }
  return CUSOLVER_STATUS_SUCCESS;
}

namespace powertrain::emu::detail {
namespace {
// Devices of a selection or grid: each valid and distinct.
bool check_devices(int count, const int* ids, const char* api, std::vector<int>* devices) {
  if (count < 1 || ids == nullptr) {
    report_misuse(api, ids == nullptr ? std::string("the device list is NULL")
                                      : "no devices given (" + std::to_string(count) + ")");
    return false;
  }
  const int available = device_count();
  for (int i = 0; i < count; ++i) {
    if (ids[i] < 0 || ids[i] >= available ||
        std::find(devices->begin(), devices->end(), ids[i]) != devices->end()) {
      report_misuse(api, "device " + std::to_string(ids[i]) + " is not one of the " +
                             std::to_string(available) + " emulated devices, or repeated");
      return false;
    }
    devices->push_back(ids[i]);
  }
  return true;
}
}  // namespace
}  // namespace powertrain::emu::detail

PT_EXPORT cusolverStatus_t cusolverMgDeviceSelect(cusolverMgHandle_t handle, int nbDevices,
                                                  int deviceId[]) {
  const char* api = "cusolverMgDeviceSelect";
  std::vector<int> devices;
  if (!mgd::check_devices(nbDevices, deviceId, api, &devices)) {
    return CUSOLVER_STATUS_INVALID_VALUE;
  }
  std::lock_guard<std::mutex> lock(mgd::mg().mutex);
  const auto it = mgd::mg().handles.find(handle);
  if (it == mgd::mg().handles.end()) {
    powertrain::emu::report_misuse(
        api, "invalid or destroyed cuSOLVERMg handle " + mgd::pointer_text(handle));
    return CUSOLVER_STATUS_NOT_INITIALIZED;
  }
  it->second.devices = devices;
  return CUSOLVER_STATUS_SUCCESS;
}

PT_EXPORT cusolverStatus_t cusolverMgCreateDeviceGrid(cudaLibMgGrid_t* grid, int32_t numRowDevices,
                                                      int32_t numColDevices,
                                                      const int32_t deviceId[],
                                                      cusolverMgGridMapping_t mapping) {
  const char* api = "cusolverMgCreateDeviceGrid";
  if (grid == nullptr) return mgd::bad(api, "the grid pointer is NULL");
  if (numRowDevices != 1) {
    return mgd::bad(api, std::to_string(numRowDevices) +
                             " rows of devices: cuSOLVERMg supports a 1 x G grid only");
  }
  if (mapping != CUDALIBMG_GRID_MAPPING_COL_MAJOR && mapping != CUDALIBMG_GRID_MAPPING_ROW_MAJOR) {
    return mgd::bad(api, "unknown grid mapping " + std::to_string(static_cast<int>(mapping)));
  }
  std::vector<int> devices;
  if (!mgd::check_devices(numColDevices, deviceId, api, &devices)) {
    return CUSOLVER_STATUS_INVALID_VALUE;
  }
  auto* g = new char;
  std::lock_guard<std::mutex> lock(mgd::mg().mutex);
  mgd::mg().grids[g] = {devices};
  *grid = g;
  return CUSOLVER_STATUS_SUCCESS;
}

PT_EXPORT cusolverStatus_t cusolverMgDestroyGrid(cudaLibMgGrid_t grid) {
  std::lock_guard<std::mutex> lock(mgd::mg().mutex);
  if (mgd::mg().grids.erase(grid) == 0) {
    powertrain::emu::report_misuse("cusolverMgDestroyGrid",
                                   "invalid or destroyed grid " + mgd::pointer_text(grid));
    return CUSOLVER_STATUS_INVALID_VALUE;
  }
  return CUSOLVER_STATUS_SUCCESS;
}

PT_EXPORT cusolverStatus_t cusolverMgCreateMatrixDesc(cudaLibMgMatrixDesc_t* desc, int64_t numRows,
                                                      int64_t numCols, int64_t rowBlockSize,
                                                      int64_t colBlockSize, cudaDataType dataType,
                                                      const cudaLibMgGrid_t grid) {
  const char* api = "cusolverMgCreateMatrixDesc";
  if (desc == nullptr) return mgd::bad(api, "the descriptor pointer is NULL");
  const std::int64_t limit = std::int64_t{1} << 31;
  if (numRows < 1 || numCols < 1 || rowBlockSize < 1 || colBlockSize < 1 || numRows >= limit ||
      numCols >= limit) {
    return mgd::bad(api, "sizes " + std::to_string(numRows) + " x " + std::to_string(numCols) +
                             " in tiles of " + std::to_string(rowBlockSize) + " x " +
                             std::to_string(colBlockSize) + " are not valid");
  }
  if (mgd::element_bytes(dataType) == 0) {
    return mgd::bad(api, std::string("data type ") +
                             powertrain::emu::libs::cuda_dtype_name(dataType) +
                             " is not R_32F, R_64F, C_32F or C_64F");
  }
  std::lock_guard<std::mutex> lock(mgd::mg().mutex);
  const auto it = mgd::mg().grids.find(grid);
  if (it == mgd::mg().grids.end()) {
    powertrain::emu::report_misuse(api, "invalid or destroyed grid " + mgd::pointer_text(grid));
    return CUSOLVER_STATUS_INVALID_VALUE;
  }
  auto* d = new char;
  mgd::mg().descs[d] = {numRows, numCols, rowBlockSize, colBlockSize, dataType, it->second.devices};
  *desc = d;
  return CUSOLVER_STATUS_SUCCESS;
}

PT_EXPORT cusolverStatus_t cusolverMgDestroyMatrixDesc(cudaLibMgMatrixDesc_t desc) {
  std::lock_guard<std::mutex> lock(mgd::mg().mutex);
  if (mgd::mg().descs.erase(desc) == 0) {
    powertrain::emu::report_misuse("cusolverMgDestroyMatrixDesc",
                                   "invalid or destroyed descriptor " + mgd::pointer_text(desc));
    return CUSOLVER_STATUS_INVALID_VALUE;
  }
  return CUSOLVER_STATUS_SUCCESS;
}

// ---- routines --------------------------------------------------------------------------------

namespace powertrain::emu::detail {
namespace {

cusolverStatus_t getrf(cusolverMgHandle_t handle, int m, int n, void* array_d_A[], int ia, int ja,
                       cudaLibMgMatrixDesc_t descrA, int* array_d_IPIV[], cudaDataType compute,
                       void* array_d_work[], int64_t lwork, int64_t* lwork_out, int* info,
                       const char* api) {
  if (m != n)
    return bad(api, "M = " + std::to_string(m) + ", N = " + std::to_string(n) +
                        ": cuSOLVERMg factors square matrices only");
  const Operand pivots{"IPIV", reinterpret_cast<void* const*>(array_d_IPIV),
                       1,      ja,
                       descrA, 1,
                       n,      static_cast<int>(sizeof(int))};
  return run({api,
              "getrf",
              handle,
              compute,
              n,
              0,
              2.0 / 3.0 * cube(n),
              true,
              {"A", array_d_A, ia, ja, descrA, m, n, 0},
              nullptr,
              &pivots,
              array_d_work,
              lwork,
              lwork_out,
              info});
}

cusolverStatus_t getrs(cusolverMgHandle_t handle, cublasOperation_t trans, int n, int nrhs,
                       void* array_d_A[], int ia, int ja, cudaLibMgMatrixDesc_t descrA,
                       int* array_d_IPIV[], void* array_d_B[], int ib, int jb,
                       cudaLibMgMatrixDesc_t descrB, cudaDataType compute, void* array_d_work[],
                       int64_t lwork, int64_t* lwork_out, int* info, const char* api) {
  if (trans != CUBLAS_OP_N) {  // cuSOLVERMg's getrs solves A·X = B only
    return bad(api, "TRANS " + std::to_string(static_cast<int>(trans)) +
                        ": cuSOLVERMg supports only CUBLAS_OP_N");
  }
  const Operand b{"B", array_d_B, ib, jb, descrB, n, nrhs, 0};
  const Operand pivots{"IPIV", reinterpret_cast<void* const*>(array_d_IPIV),
                       1,      ja,
                       descrA, 1,
                       n,      static_cast<int>(sizeof(int))};
  return run({api,
              "getrs",
              handle,
              compute,
              n,
              nrhs,
              2.0 * static_cast<double>(n) * n * nrhs,
              false,
              {"A", array_d_A, ia, ja, descrA, n, n, 0},
              &b,
              &pivots,
              array_d_work,
              lwork,
              lwork_out,
              info});
}

bool valid_fill(cublasFillMode_t uplo) {
  return uplo == CUBLAS_FILL_MODE_LOWER || uplo == CUBLAS_FILL_MODE_UPPER;
}

cusolverStatus_t potrf_like(const char* routine, double flops, cusolverMgHandle_t handle,
                            cublasFillMode_t uplo, int n, void* array_d_A[], int ia, int ja,
                            cudaLibMgMatrixDesc_t descrA, cudaDataType compute,
                            void* array_d_work[], int64_t lwork, int64_t* lwork_out, int* info,
                            const char* api) {
  if (!valid_fill(uplo)) return bad(api, "uplo is not CUBLAS_FILL_MODE_LOWER or _UPPER");
  return run({api,
              routine,
              handle,
              compute,
              n,
              0,
              flops,
              true,
              {"A", array_d_A, ia, ja, descrA, n, n, 0},
              nullptr,
              nullptr,
              array_d_work,
              lwork,
              lwork_out,
              info});
}

cusolverStatus_t potrs(cusolverMgHandle_t handle, cublasFillMode_t uplo, int n, int nrhs,
                       void* array_d_A[], int ia, int ja, cudaLibMgMatrixDesc_t descrA,
                       void* array_d_B[], int ib, int jb, cudaLibMgMatrixDesc_t descrB,
                       cudaDataType compute, void* array_d_work[], int64_t lwork,
                       int64_t* lwork_out, int* info, const char* api) {
  if (!valid_fill(uplo)) return bad(api, "uplo is not CUBLAS_FILL_MODE_LOWER or _UPPER");
  const Operand b{"B", array_d_B, ib, jb, descrB, n, nrhs, 0};
  return run({api,
              "potrs",
              handle,
              compute,
              n,
              nrhs,
              2.0 * static_cast<double>(n) * n * nrhs,
              false,
              {"A", array_d_A, ia, ja, descrA, n, n, 0},
              &b,
              nullptr,
              array_d_work,
              lwork,
              lwork_out,
              info});
}

cusolverStatus_t syevd(cusolverMgHandle_t handle, cusolverEigMode_t jobz, cublasFillMode_t uplo,
                       int n, void* array_d_A[], int ia, int ja, cudaLibMgMatrixDesc_t descrA,
                       void* w, cudaDataType type_w, cudaDataType compute, void* array_d_work[],
                       int64_t lwork, int64_t* lwork_out, int* info, const char* api) {
  if (jobz != CUSOLVER_EIG_MODE_NOVECTOR && jobz != CUSOLVER_EIG_MODE_VECTOR) {
    return bad(api, "jobz is not CUSOLVER_EIG_MODE_NOVECTOR or _VECTOR");
  }
  if (uplo != CUBLAS_FILL_MODE_LOWER) {  // as the samples say: syevd takes the lower triangle
    return bad(api, "uplo: cuSOLVERMg's syevd supports only CUBLAS_FILL_MODE_LOWER");
  }
  const bool real_w = type_w == CUDA_R_32F || type_w == CUDA_R_64F;
  if (!real_w || element_bytes(type_w) * (is_complex(compute) ? 2 : 1) != element_bytes(compute)) {
    return bad(api, std::string("eigenvalue type ") + libs::cuda_dtype_name(type_w) +
                        " does not match the compute type " + libs::cuda_dtype_name(compute));
  }
  if (w == nullptr && array_d_work != nullptr) return bad(api, "W is NULL (a host array of n)");
  const double flops = (jobz == CUSOLVER_EIG_MODE_VECTOR ? 9.0 : 4.0 / 3.0) * cube(n);
  return run({api,
              "syevd",
              handle,
              compute,
              n,
              0,
              flops,
              true,
              {"A", array_d_A, ia, ja, descrA, n, n, 0},
              nullptr,
              nullptr,
              array_d_work,
              lwork,
              lwork_out,
              info});
}

}  // namespace
}  // namespace powertrain::emu::detail

PT_EXPORT cusolverStatus_t cusolverMgGetrf_bufferSize(cusolverMgHandle_t handle, int M, int N,
                                                      void* array_d_A[], int IA, int JA,
                                                      cudaLibMgMatrixDesc_t descrA,
                                                      int* array_d_IPIV[], cudaDataType computeType,
                                                      int64_t* lwork) {
  return mgd::getrf(handle, M, N, array_d_A, IA, JA, descrA, array_d_IPIV, computeType, nullptr, 0,
                    lwork, nullptr, "cusolverMgGetrf_bufferSize");
}

PT_EXPORT cusolverStatus_t cusolverMgGetrf(cusolverMgHandle_t handle, int M, int N,
                                           void* array_d_A[], int IA, int JA,
                                           cudaLibMgMatrixDesc_t descrA, int* array_d_IPIV[],
                                           cudaDataType computeType, void* array_d_work[],
                                           int64_t lwork, int* info) {
  if (array_d_work == nullptr) return mgd::bad("cusolverMgGetrf", "array_d_work is NULL");
  return mgd::getrf(handle, M, N, array_d_A, IA, JA, descrA, array_d_IPIV, computeType,
                    array_d_work, lwork, nullptr, info, "cusolverMgGetrf");
}

PT_EXPORT cusolverStatus_t cusolverMgGetrs_bufferSize(
    cusolverMgHandle_t handle, cublasOperation_t TRANS, int N, int NRHS, void* array_d_A[], int IA,
    int JA, cudaLibMgMatrixDesc_t descrA, int* array_d_IPIV[], void* array_d_B[], int IB, int JB,
    cudaLibMgMatrixDesc_t descrB, cudaDataType computeType, int64_t* lwork) {
  return mgd::getrs(handle, TRANS, N, NRHS, array_d_A, IA, JA, descrA, array_d_IPIV, array_d_B, IB,
                    JB, descrB, computeType, nullptr, 0, lwork, nullptr,
                    "cusolverMgGetrs_bufferSize");
}

PT_EXPORT cusolverStatus_t cusolverMgGetrs(cusolverMgHandle_t handle, cublasOperation_t TRANS,
                                           int N, int NRHS, void* array_d_A[], int IA, int JA,
                                           cudaLibMgMatrixDesc_t descrA, int* array_d_IPIV[],
                                           void* array_d_B[], int IB, int JB,
                                           cudaLibMgMatrixDesc_t descrB, cudaDataType computeType,
                                           void* array_d_work[], int64_t lwork, int* info) {
  if (array_d_work == nullptr) return mgd::bad("cusolverMgGetrs", "array_d_work is NULL");
  return mgd::getrs(handle, TRANS, N, NRHS, array_d_A, IA, JA, descrA, array_d_IPIV, array_d_B, IB,
                    JB, descrB, computeType, array_d_work, lwork, nullptr, info, "cusolverMgGetrs");
}

PT_EXPORT cusolverStatus_t cusolverMgPotrf_bufferSize(cusolverMgHandle_t handle,
                                                      cublasFillMode_t uplo, int N,
                                                      void* array_d_A[], int IA, int JA,
                                                      cudaLibMgMatrixDesc_t descrA,
                                                      cudaDataType computeType, int64_t* lwork) {
  return mgd::potrf_like("potrf", mgd::cube(N) / 3.0, handle, uplo, N, array_d_A, IA, JA, descrA,
                         computeType, nullptr, 0, lwork, nullptr, "cusolverMgPotrf_bufferSize");
}

PT_EXPORT cusolverStatus_t cusolverMgPotrf(cusolverMgHandle_t handle, cublasFillMode_t uplo, int N,
                                           void* array_d_A[], int IA, int JA,
                                           cudaLibMgMatrixDesc_t descrA, cudaDataType computeType,
                                           void* array_d_work[], int64_t lwork, int* h_info) {
  if (array_d_work == nullptr) return mgd::bad("cusolverMgPotrf", "array_d_work is NULL");
  return mgd::potrf_like("potrf", mgd::cube(N) / 3.0, handle, uplo, N, array_d_A, IA, JA, descrA,
                         computeType, array_d_work, lwork, nullptr, h_info, "cusolverMgPotrf");
}

PT_EXPORT cusolverStatus_t cusolverMgPotrs_bufferSize(
    cusolverMgHandle_t handle, cublasFillMode_t uplo, int n, int nrhs, void* array_d_A[], int IA,
    int JA, cudaLibMgMatrixDesc_t descrA, void* array_d_B[], int IB, int JB,
    cudaLibMgMatrixDesc_t descrB, cudaDataType computeType, int64_t* lwork) {
  return mgd::potrs(handle, uplo, n, nrhs, array_d_A, IA, JA, descrA, array_d_B, IB, JB, descrB,
                    computeType, nullptr, 0, lwork, nullptr, "cusolverMgPotrs_bufferSize");
}

PT_EXPORT cusolverStatus_t cusolverMgPotrs(cusolverMgHandle_t handle, cublasFillMode_t uplo, int n,
                                           int nrhs, void* array_d_A[], int IA, int JA,
                                           cudaLibMgMatrixDesc_t descrA, void* array_d_B[], int IB,
                                           int JB, cudaLibMgMatrixDesc_t descrB,
                                           cudaDataType computeType, void* array_d_work[],
                                           int64_t lwork, int* h_info) {
  if (array_d_work == nullptr) return mgd::bad("cusolverMgPotrs", "array_d_work is NULL");
  return mgd::potrs(handle, uplo, n, nrhs, array_d_A, IA, JA, descrA, array_d_B, IB, JB, descrB,
                    computeType, array_d_work, lwork, nullptr, h_info, "cusolverMgPotrs");
}

// potri: the inverse from the Cholesky factor (trtri n³/3 + lauum n³/3).
PT_EXPORT cusolverStatus_t cusolverMgPotri_bufferSize(cusolverMgHandle_t handle,
                                                      cublasFillMode_t uplo, int N,
                                                      void* array_d_A[], int IA, int JA,
                                                      cudaLibMgMatrixDesc_t descrA,
                                                      cudaDataType computeType, int64_t* lwork) {
  return mgd::potrf_like("potri", 2.0 * mgd::cube(N) / 3.0, handle, uplo, N, array_d_A, IA, JA,
                         descrA, computeType, nullptr, 0, lwork, nullptr,
                         "cusolverMgPotri_bufferSize");
}

PT_EXPORT cusolverStatus_t cusolverMgPotri(cusolverMgHandle_t handle, cublasFillMode_t uplo, int N,
                                           void* array_d_A[], int IA, int JA,
                                           cudaLibMgMatrixDesc_t descrA, cudaDataType computeType,
                                           void* array_d_work[], int64_t lwork, int* h_info) {
  if (array_d_work == nullptr) return mgd::bad("cusolverMgPotri", "array_d_work is NULL");
  return mgd::potrf_like("potri", 2.0 * mgd::cube(N) / 3.0, handle, uplo, N, array_d_A, IA, JA,
                         descrA, computeType, array_d_work, lwork, nullptr, h_info,
                         "cusolverMgPotri");
}

PT_EXPORT cusolverStatus_t cusolverMgSyevd_bufferSize(cusolverMgHandle_t handle,
                                                      cusolverEigMode_t jobz, cublasFillMode_t uplo,
                                                      int N, void* array_d_A[], int IA, int JA,
                                                      cudaLibMgMatrixDesc_t descrA, void* W,
                                                      cudaDataType dataTypeW,
                                                      cudaDataType computeType, int64_t* lwork) {
  return mgd::syevd(handle, jobz, uplo, N, array_d_A, IA, JA, descrA, W, dataTypeW, computeType,
                    nullptr, 0, lwork, nullptr, "cusolverMgSyevd_bufferSize");
}

PT_EXPORT cusolverStatus_t cusolverMgSyevd(cusolverMgHandle_t handle, cusolverEigMode_t jobz,
                                           cublasFillMode_t uplo, int N, void* array_d_A[], int IA,
                                           int JA, cudaLibMgMatrixDesc_t descrA, void* W,
                                           cudaDataType dataTypeW, cudaDataType computeType,
                                           void* array_d_work[], int64_t lwork, int* info) {
  if (array_d_work == nullptr) return mgd::bad("cusolverMgSyevd", "array_d_work is NULL");
  return mgd::syevd(handle, jobz, uplo, N, array_d_A, IA, JA, descrA, W, dataTypeW, computeType,
                    array_d_work, lwork, nullptr, info, "cusolverMgSyevd");
}
