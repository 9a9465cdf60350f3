// cublasXt (the multi-GPU, host-memory level-3 API, as NVIDIA's simpleCUBLASXT sample uses it) on
// the emulated devices: handle, device selection, block size, pinning mode, CPU routine and ratio
// settings (kept; the emulator gives the CPU no share), and GEMM, SYMM/HEMM, SYRK/HERK,
// SYR2K/HER2K, SYRKX/HERKX, TRSM, TRMM and SPMM in S/D/C/Z.
//
// cublasXt splits the output's columns over the selected devices and streams the operands through
// them. Each call is recorded that way: on every selected device (the first device when none was
// selected), the operands it needs that are in host memory are copied in (all of A, its share of
// B and, for beta ≠ 0, of C), its share of the product is a `gemm` record of the equivalent GEMM
// (as for cuBLAS, cublas_blas_emu.cc), and its share of the result is copied back; the call then
// waits for every device, as cublasXt returns when the result is in place. The copies go through
// the emulated runtime (cudaMalloc, cudaMemcpyAsync, cudaFree on the device's legacy stream), so
// they are timed as PCIe transfers and appear as the runtime calls cublasXt makes internally.
// GEMMs (the only routine computed) are computed for real on the host when A, B and C are host
// or backed memory and the product has at most 2·10^9 FLOPs, so a program's check of its result
// passes; every other routine is recorded, not computed.
#include <cublasXt.h>

#include <algorithm>
#include <complex>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "interposer/cublas_typed.h"

namespace {

using namespace powertrain::emu::cublas_detail;  // NOLINT: the shared cuBLAS pieces

struct XtHandle {
  std::vector<int> devices;
  int block_dim = 1024;
  cublasXtPinnedMemMode_t pinning = CUBLASXT_PINNING_DISABLED;
};

struct XtState {
  std::mutex mutex;
  std::unordered_set<const void*> handles;
};
XtState& xt_state() {
  static XtState* s = new XtState;  // never destroyed
  return *s;
}

// The handle's devices (a copy), or false after a misuse report.
bool xt_devices(cublasXtHandle_t handle, const char* api, std::vector<int>* devices) {
  std::lock_guard<std::mutex> lock(xt_state().mutex);
  if (xt_state().handles.count(handle) == 0) {
    emu::report_misuse(api, "invalid or destroyed cublasXt handle " + detail::pointer_text(handle));
    return false;
  }
  *devices = reinterpret_cast<const XtHandle*>(handle)->devices;
  if (devices->empty()) devices->push_back(0);
  return true;
}

bool on_host(const void* p) {
  const detail::PointerInfo info = detail::lookup_pointer(p);
  return !info.known || !info.device_side;
}

constexpr double kComputeLimitFlops = 2e9;

template <typename T>
void host_gemm(cublasOperation_t transa, cublasOperation_t transb, std::int64_t m, std::int64_t n,
               std::int64_t k, Val<T> alpha, const T* a, std::int64_t lda, const T* b,
               std::int64_t ldb, Val<T> beta, T* c, std::int64_t ldc) {
  using V = Val<T>;
  auto element = [](const T* base, std::int64_t ld, cublasOperation_t op, std::int64_t i,
                    std::int64_t j) {
    const V v = value_at<T>(base, op == CUBLAS_OP_N ? j * ld + i : i * ld + j);
    return apply_op(v, op);
  };
  std::vector<V> column(static_cast<std::size_t>(m));
  std::vector<V> a_cache(static_cast<std::size_t>(m * k));
  for (std::int64_t p = 0; p < k; ++p) {
    for (std::int64_t i = 0; i < m; ++i)
      a_cache[static_cast<std::size_t>(p * m + i)] = element(a, lda, transa, i, p);
  }
  for (std::int64_t j = 0; j < n; ++j) {
    std::fill(column.begin(), column.end(), V(0));
    for (std::int64_t p = 0; p < k; ++p) {
      const V bpj = element(b, ldb, transb, p, j);
      if (bpj == V(0)) continue;
      const V* ap = a_cache.data() + p * m;
      for (std::int64_t i = 0; i < m; ++i) column[static_cast<std::size_t>(i)] += ap[i] * bpj;
    }
    for (std::int64_t i = 0; i < m; ++i) {
      const V old = beta == V(0) ? V(0) : value_at<T>(c, j * ldc + i);
      store_at<T>(c, j * ldc + i, alpha * column[static_cast<std::size_t>(i)] + beta * old);
    }
  }
}

// One cublasXt level-3 call: the equivalent GEMM m × n × k of C's n columns split over the
// devices, with the host operands moved in and out. Operands are column-major (rows × columns at
// ld; a packed A is one column of its elements).
struct XtCall {
  const char* api;
  cublasXtHandle_t handle;
  std::int64_t m = 0, n = 0, k = 0;  // the equivalent GEMM (n: C's columns)
  cudaDataType type = CUDA_R_32F;
  int compute = CUBLAS_COMPUTE_32F;
  std::size_t elem = 4;
  const void* a = nullptr;  // all of A, to every device
  std::int64_t a_rows = 0, a_cols = 0, lda = 1;
  const void* b = nullptr;  // b_rows × (C's columns), split with C
  std::int64_t b_rows = 0, ldb = 1;
  void* c = nullptr;
  std::int64_t c_rows = 0, ldc = 1;
  bool reads_c = false;
};

// A host operand's part on one device: rows × cols at ld from `host`, copied in and/or out.
struct Part {
  const void* host;
  std::int64_t rows, cols, ld;
  bool in, out;
};

cublasStatus_t run_xt(const XtCall& call) {
  std::vector<int> devices;
  if (!xt_devices(call.handle, call.api, &devices)) return CUBLAS_STATUS_NOT_INITIALIZED;
  int current = 0;
  cudaGetDevice(&current);
  const std::int64_t count = static_cast<std::int64_t>(devices.size());
  const std::int64_t corr = emu::next_correlation();
  const char* compute = libs::compute_type_name(call.compute);
  const std::size_t elem = call.elem;
  for (std::int64_t d = 0; d < count; ++d) {
    const std::int64_t first = call.n * d / count, last = call.n * (d + 1) / count;
    const std::int64_t columns = last - first;
    if (columns <= 0 || call.m <= 0) continue;
    if (cudaSetDevice(devices[static_cast<std::size_t>(d)]) != cudaSuccess) {
      cudaSetDevice(current);
      return misuse(
          call.api,
          "device " + std::to_string(devices[static_cast<std::size_t>(d)]) + " cannot be used",
          CUBLAS_STATUS_EXECUTION_FAILED);
    }
    auto shifted = [&](const void* base, std::int64_t ld) -> const void* {
      return base == nullptr
                 ? nullptr
                 : static_cast<const char*>(base) + first * ld * static_cast<std::int64_t>(elem);
    };
    const Part parts[] = {
        {call.a, call.a_rows, call.a_cols, call.lda, true, false},
        {shifted(call.b, call.ldb), call.b_rows, columns, call.ldb, true, false},
        {shifted(call.c, call.ldc), call.c_rows, columns, call.ldc, call.reads_c, true},
    };
    std::vector<std::pair<const Part*, void*>> buffers;
    for (const Part& part : parts) {
      if (part.host == nullptr || part.rows <= 0 || part.cols <= 0 || !on_host(part.host)) continue;
      void* device_copy = nullptr;
      const std::size_t width = static_cast<std::size_t>(part.rows) * elem;
      if (cudaMalloc(&device_copy, width * static_cast<std::size_t>(part.cols)) != cudaSuccess)
        continue;
      buffers.emplace_back(&part, device_copy);
      if (part.in) {
        cudaMemcpy2DAsync(device_copy, width, part.host, static_cast<std::size_t>(part.ld) * elem,
                          width, static_cast<std::size_t>(part.cols), cudaMemcpyHostToDevice,
                          nullptr);
      }
    }
    int stream_device = 0;
    libs::GemmRecord record;
    record.api = call.api;
    record.start_ns = emu::now_ns();  // after this device's input copies, in stream order
    record.stream = emu::stream_id(nullptr, false, &stream_device);
    record.device = stream_device;
    record.m = call.m, record.n = columns, record.k = call.k, record.batch = 1;
    record.transa = CUBLAS_OP_N, record.transb = CUBLAS_OP_N;
    record.dtype_a = record.dtype_b = record.dtype_c = call.type;
    record.compute = compute != nullptr ? compute : "float32";
    record.corr = corr;
    libs::record_gemm(record);
    for (const auto& [part, device_copy] : buffers) {
      if (!part->out) continue;
      const std::size_t width = static_cast<std::size_t>(part->rows) * elem;
      cudaMemcpy2DAsync(const_cast<void*>(part->host), static_cast<std::size_t>(part->ld) * elem,
                        device_copy, width, width, static_cast<std::size_t>(part->cols),
                        cudaMemcpyDeviceToHost, nullptr);
    }
    cudaStreamSynchronize(nullptr);
    for (const auto& entry : buffers) cudaFree(entry.second);
  }
  for (const int device : devices) {
    cudaSetDevice(device);
    cudaDeviceSynchronize();
  }
  cudaSetDevice(current);
  return CUBLAS_STATUS_SUCCESS;
}

template <typename T>
XtCall typed_call(const char* api, cublasXtHandle_t handle) {
  XtCall call{api, handle};
  call.type = Blas<T>::kType;
  call.compute = std::is_same_v<Val<T>, double> || std::is_same_v<Val<T>, std::complex<double>>
                     ? CUBLAS_COMPUTE_64F
                     : CUBLAS_COMPUTE_32F;
  call.elem = sizeof(T);
  return call;
}

bool bad_handle(cublasXtHandle_t handle, const char* api) {
  std::vector<int> devices;
  return !xt_devices(handle, api, &devices);
}

cublasStatus_t refuse_xt(const char* api, cublasXtHandle_t handle, const std::string& what) {
  if (bad_handle(handle, api)) return CUBLAS_STATUS_NOT_INITIALIZED;
  return misuse(api, what, CUBLAS_STATUS_INVALID_VALUE);
}

template <typename T>
cublasStatus_t xt_gemm(const char* api, cublasXtHandle_t handle, cublasOperation_t transa,
                       cublasOperation_t transb, std::int64_t m, std::int64_t n, std::int64_t k,
                       const T* alpha, const T* a, std::int64_t lda, const T* b, std::int64_t ldb,
                       const T* beta, T* c, std::int64_t ldc) {
  const std::int64_t a_rows = transa == CUBLAS_OP_N ? m : k, b_rows = transb == CUBLAS_OP_N ? k : n;
  if (!valid_op(transa) || !valid_op(transb) || m < 0 || n < 0 || k < 0 ||
      lda < at_least_1(a_rows) || ldb < at_least_1(b_rows) || ldc < at_least_1(m) ||
      alpha == nullptr || beta == nullptr) {
    return refuse_xt(
        api, handle,
        "invalid trans, sizes or scalars (" +
            sizes_text({{"m", m}, {"n", n}, {"k", k}, {"lda", lda}, {"ldb", ldb}, {"ldc", ldc}}) +
            ")");
  }
  if (bad_handle(handle, api)) return CUBLAS_STATUS_NOT_INITIALIZED;
  // cublasXt's scalars are host memory.
  const Val<T> alpha_value = value_at<T>(alpha, 0), beta_value = value_at<T>(beta, 0);
  XtCall call = typed_call<T>(api, handle);
  call.m = m, call.n = n, call.k = k;
  call.a = a, call.a_rows = a_rows, call.a_cols = transa == CUBLAS_OP_N ? k : m, call.lda = lda;
  call.b = b, call.b_rows = b_rows, call.ldb = ldb;
  if (transb != CUBLAS_OP_N) call.b_rows = 0;  // Bᵀ's rows are C's columns: B is sent whole
  call.c = c, call.c_rows = m, call.ldc = ldc, call.reads_c = !(beta_value == Val<T>(0));
  const cublasStatus_t status = run_xt(call);
  // The result, after the copies back (which carry the device buffers' contents).
  if (status == CUBLAS_STATUS_SUCCESS && detail::host_accessible(a) && detail::host_accessible(b) &&
      detail::host_accessible(c) &&
      2.0 * static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k) <=
          kComputeLimitFlops) {
    const powertrain::emu::HostComputeScope host_compute;  // not the program's time
    host_gemm<T>(transa, transb, m, n, k, alpha_value, a, lda, b, ldb, beta_value, c, ldc);
  }
  return status;
}

// SYMM/HEMM/SPMM (`packed` A), recorded as m × n × order.
template <typename T>
cublasStatus_t xt_symm(const char* api, cublasXtHandle_t handle, cublasSideMode_t side,
                       cublasFillMode_t uplo, std::int64_t m, std::int64_t n, const T* a,
                       std::int64_t lda, bool packed, const T* b, std::int64_t ldb, const T* beta,
                       T* c, std::int64_t ldc) {
  const std::int64_t order = side == CUBLAS_SIDE_LEFT ? m : n;
  if (!valid_side(side) || !valid_fill(uplo) || m < 0 || n < 0 ||
      (!packed && lda < at_least_1(order)) || ldb < at_least_1(m) || ldc < at_least_1(m) ||
      beta == nullptr) {
    return refuse_xt(
        api, handle,
        "invalid side/uplo or sizes (" +
            sizes_text({{"m", m}, {"n", n}, {"lda", lda}, {"ldb", ldb}, {"ldc", ldc}}) + ")");
  }
  XtCall call = typed_call<T>(api, handle);
  call.m = m, call.n = n, call.k = order;
  call.a = a, call.a_rows = packed ? order * (order + 1) / 2 : order;
  call.a_cols = packed ? 1 : order, call.lda = packed ? call.a_rows : lda;
  call.b = b, call.b_rows = m, call.ldb = ldb;
  call.c = c, call.c_rows = m, call.ldc = ldc;
  call.reads_c = !(value_at<T>(beta, 0) == Val<T>(0));
  return run_xt(call);
}

// SYRK/HERK (factor 1, no B), SYR2K/HER2K (2), SYRKX/HERKX (1, with B): n × n triangle.
template <typename T, typename R>
cublasStatus_t xt_rank_k(const char* api, cublasXtHandle_t handle, cublasFillMode_t uplo,
                         cublasOperation_t trans, std::int64_t n, std::int64_t k, const T* a,
                         std::int64_t lda, const T* b, std::int64_t ldb, const R* beta, T* c,
                         std::int64_t ldc, int factor) {
  const std::int64_t rows = trans == CUBLAS_OP_N ? n : k;
  if (!valid_fill(uplo) || !valid_op(trans) || n < 0 || k < 0 || lda < at_least_1(rows) ||
      (b != nullptr && ldb < at_least_1(rows)) || ldc < at_least_1(n) || beta == nullptr) {
    return refuse_xt(
        api, handle,
        "invalid uplo/trans or sizes (" +
            sizes_text({{"n", n}, {"k", k}, {"lda", lda}, {"ldb", ldb}, {"ldc", ldc}}) + ")");
  }
  XtCall call = typed_call<T>(api, handle);
  call.m = n, call.n = (n + 2) / 2, call.k = factor * k;
  call.a = a, call.a_rows = rows, call.a_cols = trans == CUBLAS_OP_N ? k : n, call.lda = lda;
  // B (the 2k and x forms) goes whole with A; C's triangle is split by columns.
  call.c = c, call.c_rows = n, call.ldc = ldc;
  call.reads_c = !(value_at<R>(beta, 0) == Val<R>(0));
  if (b != nullptr) call.b = b, call.b_rows = 0;
  return run_xt(call);
}

// TRSM (in place in B) and TRMM (into C).
template <typename T>
cublasStatus_t xt_triangular(const char* api, cublasXtHandle_t handle, cublasSideMode_t side,
                             cublasFillMode_t uplo, cublasOperation_t trans, cublasDiagType_t diag,
                             std::int64_t m, std::int64_t n, const T* a, std::int64_t lda,
                             const T* b, std::int64_t ldb, T* c, std::int64_t ldc) {
  const std::int64_t order = side == CUBLAS_SIDE_LEFT ? m : n;
  if (!valid_side(side) || !valid_fill(uplo) || !valid_op(trans) || !valid_diag(diag) || m < 0 ||
      n < 0 || lda < at_least_1(order) || ldb < at_least_1(m) || ldc < at_least_1(m)) {
    return refuse_xt(
        api, handle,
        "invalid side/uplo/trans/diag or sizes (" +
            sizes_text({{"m", m}, {"n", n}, {"lda", lda}, {"ldb", ldb}, {"ldc", ldc}}) + ")");
  }
  XtCall call = typed_call<T>(api, handle);
  call.m = m, call.n = n, call.k = (order + 1) / 2;
  call.a = a, call.a_rows = order, call.a_cols = order, call.lda = lda;
  call.b = b, call.b_rows = m, call.ldb = ldb;
  call.c = c, call.c_rows = m, call.ldc = ldc;
  if (b == c) call.b = nullptr, call.reads_c = true;  // TRSM works in place in B
  return run_xt(call);
}

}  // namespace

PT_EXPORT cublasStatus_t cublasXtCreate(cublasXtHandle_t* handle) {
  if (handle == nullptr)
    return misuse("cublasXtCreate", "handle is NULL", CUBLAS_STATUS_INVALID_VALUE);
  auto* h = new XtHandle;
  std::lock_guard<std::mutex> lock(xt_state().mutex);
  xt_state().handles.insert(h);
  *handle = reinterpret_cast<cublasXtHandle_t>(h);
  return CUBLAS_STATUS_SUCCESS;
}

PT_EXPORT cublasStatus_t cublasXtDestroy(cublasXtHandle_t handle) {
  std::lock_guard<std::mutex> lock(xt_state().mutex);
  if (xt_state().handles.erase(handle) == 0) {
    emu::report_misuse("cublasXtDestroy",
                       "invalid or destroyed cublasXt handle " + detail::pointer_text(handle));
    return CUBLAS_STATUS_NOT_INITIALIZED;
  }
  delete reinterpret_cast<XtHandle*>(handle);
  return CUBLAS_STATUS_SUCCESS;
}

PT_EXPORT cublasStatus_t cublasXtGetNumBoards(int nbDevices, int deviceId[], int* nbBoards) {
  if (nbBoards == nullptr || nbDevices < 0 || (nbDevices > 0 && deviceId == nullptr))
    return misuse("cublasXtGetNumBoards", "invalid arguments", CUBLAS_STATUS_INVALID_VALUE);
  *nbBoards = nbDevices;  // every emulated GPU is its own board
  return CUBLAS_STATUS_SUCCESS;
}

PT_EXPORT cublasStatus_t cublasXtMaxBoards(int* nbGpuBoards) {
  if (nbGpuBoards == nullptr)
    return misuse("cublasXtMaxBoards", "NULL", CUBLAS_STATUS_INVALID_VALUE);
  int count = 0;
  cudaGetDeviceCount(&count);
  *nbGpuBoards = count;
  return CUBLAS_STATUS_SUCCESS;
}

PT_EXPORT cublasStatus_t cublasXtDeviceSelect(cublasXtHandle_t handle, int nbDevices,
                                              int deviceId[]) {
  const char* api = "cublasXtDeviceSelect";
  int count = 0;
  cudaGetDeviceCount(&count);
  if (nbDevices < 1 || deviceId == nullptr) {
    return refuse_xt(api, handle, "nbDevices " + std::to_string(nbDevices) + " or a NULL list");
  }
  std::vector<int> devices(deviceId, deviceId + nbDevices);
  for (int d : devices) {
    if (d < 0 || d >= count || std::count(devices.begin(), devices.end(), d) > 1) {
      return refuse_xt(api, handle,
                       "device " + std::to_string(d) + " is not one of the " +
                           std::to_string(count) + " emulated devices, or is listed twice");
    }
  }
  std::lock_guard<std::mutex> lock(xt_state().mutex);
  if (xt_state().handles.count(handle) == 0) {
    emu::report_misuse(api, "invalid or destroyed cublasXt handle " + detail::pointer_text(handle));
    return CUBLAS_STATUS_NOT_INITIALIZED;
  }
  reinterpret_cast<XtHandle*>(handle)->devices = std::move(devices);
  return CUBLAS_STATUS_SUCCESS;
}

PT_EXPORT cublasStatus_t cublasXtSetBlockDim(cublasXtHandle_t handle, int blockDim) {
  if (blockDim < 1) return refuse_xt("cublasXtSetBlockDim", handle, "blockDim below 1");
  if (bad_handle(handle, "cublasXtSetBlockDim")) return CUBLAS_STATUS_NOT_INITIALIZED;
  std::lock_guard<std::mutex> lock(xt_state().mutex);
  reinterpret_cast<XtHandle*>(handle)->block_dim = blockDim;
  return CUBLAS_STATUS_SUCCESS;
}

PT_EXPORT cublasStatus_t cublasXtGetBlockDim(cublasXtHandle_t handle, int* blockDim) {
  if (blockDim == nullptr) return refuse_xt("cublasXtGetBlockDim", handle, "blockDim is NULL");
  if (bad_handle(handle, "cublasXtGetBlockDim")) return CUBLAS_STATUS_NOT_INITIALIZED;
  std::lock_guard<std::mutex> lock(xt_state().mutex);
  *blockDim = reinterpret_cast<XtHandle*>(handle)->block_dim;
  return CUBLAS_STATUS_SUCCESS;
}

PT_EXPORT cublasStatus_t cublasXtGetPinningMemMode(cublasXtHandle_t handle,
                                                   cublasXtPinnedMemMode_t* mode) {
  if (mode == nullptr) return refuse_xt("cublasXtGetPinningMemMode", handle, "mode is NULL");
  if (bad_handle(handle, "cublasXtGetPinningMemMode")) return CUBLAS_STATUS_NOT_INITIALIZED;
  std::lock_guard<std::mutex> lock(xt_state().mutex);
  *mode = reinterpret_cast<XtHandle*>(handle)->pinning;
  return CUBLAS_STATUS_SUCCESS;
}

PT_EXPORT cublasStatus_t cublasXtSetPinningMemMode(cublasXtHandle_t handle,
                                                   cublasXtPinnedMemMode_t mode) {
  if (mode != CUBLASXT_PINNING_DISABLED && mode != CUBLASXT_PINNING_ENABLED)
    return refuse_xt("cublasXtSetPinningMemMode", handle, "unknown mode");
  if (bad_handle(handle, "cublasXtSetPinningMemMode")) return CUBLAS_STATUS_NOT_INITIALIZED;
  std::lock_guard<std::mutex> lock(xt_state().mutex);
  reinterpret_cast<XtHandle*>(handle)->pinning = mode;
  return CUBLAS_STATUS_SUCCESS;
}

// A CPU share of the work: accepted (a valid ratio) and not used; the emulated GPUs do it all.
PT_EXPORT cublasStatus_t cublasXtSetCpuRoutine(cublasXtHandle_t handle, cublasXtBlasOp_t blasOp,
                                               cublasXtOpType_t type, void* blasFunctor) {
  (void)blasOp, (void)type, (void)blasFunctor;
  return bad_handle(handle, "cublasXtSetCpuRoutine") ? CUBLAS_STATUS_NOT_INITIALIZED
                                                     : CUBLAS_STATUS_SUCCESS;
}

PT_EXPORT cublasStatus_t cublasXtSetCpuRatio(cublasXtHandle_t handle, cublasXtBlasOp_t blasOp,
                                             cublasXtOpType_t type, float ratio) {
  (void)blasOp, (void)type;
  if (!(ratio >= 0 && ratio <= 1))
    return refuse_xt("cublasXtSetCpuRatio", handle, "ratio outside [0, 1]");
  return bad_handle(handle, "cublasXtSetCpuRatio") ? CUBLAS_STATUS_NOT_INITIALIZED
                                                   : CUBLAS_STATUS_SUCCESS;
}

#define PT_XT_ROUTINES(P, T, R)                                                                    \
  PT_EXPORT cublasStatus_t cublasXt##P##gemm(                                                      \
      cublasXtHandle_t handle, cublasOperation_t transa, cublasOperation_t transb, size_t m,       \
      size_t n, size_t k, const T* alpha, const T* A, size_t lda, const T* B, size_t ldb,          \
      const T* beta, T* C, size_t ldc) {                                                           \
    return xt_gemm<T>("cublasXt" #P "gemm", handle, transa, transb, m, n, k, alpha, A, lda, B,     \
                      ldb, beta, C, ldc);                                                          \
  }                                                                                                \
  PT_EXPORT cublasStatus_t cublasXt##P##symm(cublasXtHandle_t handle, cublasSideMode_t side,       \
                                             cublasFillMode_t uplo, size_t m, size_t n,            \
                                             const T* alpha, const T* A, size_t lda, const T* B,   \
                                             size_t ldb, const T* beta, T* C, size_t ldc) {        \
    (void)alpha;                                                                                   \
    return xt_symm<T>("cublasXt" #P "symm", handle, side, uplo, m, n, A, lda, false, B, ldb, beta, \
                      C, ldc);                                                                     \
  }                                                                                                \
  PT_EXPORT cublasStatus_t cublasXt##P##spmm(                                                      \
      cublasXtHandle_t handle, cublasSideMode_t side, cublasFillMode_t uplo, size_t m, size_t n,   \
      const T* alpha, const T* AP, const T* B, size_t ldb, const T* beta, T* C, size_t ldc) {      \
    (void)alpha;                                                                                   \
    return xt_symm<T>("cublasXt" #P "spmm", handle, side, uplo, m, n, AP, 1, true, B, ldb, beta,   \
                      C, ldc);                                                                     \
  }                                                                                                \
  PT_EXPORT cublasStatus_t cublasXt##P##syrk(                                                      \
      cublasXtHandle_t handle, cublasFillMode_t uplo, cublasOperation_t trans, size_t n, size_t k, \
      const T* alpha, const T* A, size_t lda, const T* beta, T* C, size_t ldc) {                   \
    (void)alpha;                                                                                   \
    return xt_rank_k<T, T>("cublasXt" #P "syrk", handle, uplo, trans, n, k, A, lda, nullptr, 1,    \
                           beta, C, ldc, 1);                                                       \
  }                                                                                                \
  PT_EXPORT cublasStatus_t cublasXt##P##syr2k(cublasXtHandle_t handle, cublasFillMode_t uplo,      \
                                              cublasOperation_t trans, size_t n, size_t k,         \
                                              const T* alpha, const T* A, size_t lda, const T* B,  \
                                              size_t ldb, const T* beta, T* C, size_t ldc) {       \
    (void)alpha;                                                                                   \
    return xt_rank_k<T, T>("cublasXt" #P "syr2k", handle, uplo, trans, n, k, A, lda, B, ldb, beta, \
                           C, ldc, 2);                                                             \
  }                                                                                                \
  PT_EXPORT cublasStatus_t cublasXt##P##syrkx(cublasXtHandle_t handle, cublasFillMode_t uplo,      \
                                              cublasOperation_t trans, size_t n, size_t k,         \
                                              const T* alpha, const T* A, size_t lda, const T* B,  \
                                              size_t ldb, const T* beta, T* C, size_t ldc) {       \
    (void)alpha;                                                                                   \
    return xt_rank_k<T, T>("cublasXt" #P "syrkx", handle, uplo, trans, n, k, A, lda, B, ldb, beta, \
                           C, ldc, 1);                                                             \
  }                                                                                                \
  PT_EXPORT cublasStatus_t cublasXt##P##trsm(                                                      \
      cublasXtHandle_t handle, cublasSideMode_t side, cublasFillMode_t uplo,                       \
      cublasOperation_t trans, cublasDiagType_t diag, size_t m, size_t n, const T* alpha,          \
      const T* A, size_t lda, T* B, size_t ldb) {                                                  \
    (void)alpha;                                                                                   \
    return xt_triangular<T>("cublasXt" #P "trsm", handle, side, uplo, trans, diag, m, n, A, lda,   \
                            B, ldb, B, ldb);                                                       \
  }                                                                                                \
  PT_EXPORT cublasStatus_t cublasXt##P##trmm(                                                      \
      cublasXtHandle_t handle, cublasSideMode_t side, cublasFillMode_t uplo,                       \
      cublasOperation_t trans, cublasDiagType_t diag, size_t m, size_t n, const T* alpha,          \
      const T* A, size_t lda, const T* B, size_t ldb, T* C, size_t ldc) {                          \
    (void)alpha;                                                                                   \
    return xt_triangular<T>("cublasXt" #P "trmm", handle, side, uplo, trans, diag, m, n, A, lda,   \
                            B, ldb, C, ldc);                                                       \
  }
PT_XT_ROUTINES(S, float, float)
PT_XT_ROUTINES(D, double, double)
PT_XT_ROUTINES(C, cuComplex, float)
PT_XT_ROUTINES(Z, cuDoubleComplex, double)
#undef PT_XT_ROUTINES

// The Hermitian forms: HEMM as SYMM; HERK/HER2K/HERKX with a real beta (R).
#define PT_XT_HERMITIAN(P, T, R)                                                                   \
  PT_EXPORT cublasStatus_t cublasXt##P##hemm(cublasXtHandle_t handle, cublasSideMode_t side,       \
                                             cublasFillMode_t uplo, size_t m, size_t n,            \
                                             const T* alpha, const T* A, size_t lda, const T* B,   \
                                             size_t ldb, const T* beta, T* C, size_t ldc) {        \
    (void)alpha;                                                                                   \
    return xt_symm<T>("cublasXt" #P "hemm", handle, side, uplo, m, n, A, lda, false, B, ldb, beta, \
                      C, ldc);                                                                     \
  }                                                                                                \
  PT_EXPORT cublasStatus_t cublasXt##P##herk(                                                      \
      cublasXtHandle_t handle, cublasFillMode_t uplo, cublasOperation_t trans, size_t n, size_t k, \
      const R* alpha, const T* A, size_t lda, const R* beta, T* C, size_t ldc) {                   \
    (void)alpha;                                                                                   \
    return xt_rank_k<T, R>("cublasXt" #P "herk", handle, uplo, trans, n, k, A, lda, nullptr, 1,    \
                           beta, C, ldc, 1);                                                       \
  }                                                                                                \
  PT_EXPORT cublasStatus_t cublasXt##P##her2k(cublasXtHandle_t handle, cublasFillMode_t uplo,      \
                                              cublasOperation_t trans, size_t n, size_t k,         \
                                              const T* alpha, const T* A, size_t lda, const T* B,  \
                                              size_t ldb, const R* beta, T* C, size_t ldc) {       \
    (void)alpha;                                                                                   \
    return xt_rank_k<T, R>("cublasXt" #P "her2k", handle, uplo, trans, n, k, A, lda, B, ldb, beta, \
                           C, ldc, 2);                                                             \
  }                                                                                                \
  PT_EXPORT cublasStatus_t cublasXt##P##herkx(cublasXtHandle_t handle, cublasFillMode_t uplo,      \
                                              cublasOperation_t trans, size_t n, size_t k,         \
                                              const T* alpha, const T* A, size_t lda, const T* B,  \
                                              size_t ldb, const R* beta, T* C, size_t ldc) {       \
    (void)alpha;                                                                                   \
    return xt_rank_k<T, R>("cublasXt" #P "herkx", handle, uplo, trans, n, k, A, lda, B, ldb, beta, \
                           C, ldc, 1);                                                             \
  }
PT_XT_HERMITIAN(C, cuComplex, float)
PT_XT_HERMITIAN(Z, cuDoubleComplex, double)
#undef PT_XT_HERMITIAN
