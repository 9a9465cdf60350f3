// cuSOLVER's refactorization library (cusolverRf) on the emulated devices, as NVIDIA's cuSolverRf
// sample calls it: the handle and its settings (numeric properties, algorithms, matrix format,
// fast reset mode), setup from host or device memory, analysis, value reset, refactorization,
// solve, the extraction of the factors, and the batched forms.
//
// The handle keeps what the setup gave it: the pattern and values of A, of L and of U, and P and Q
// (host copies), and it holds the bundled factor M = L + U (CSR, on the device) that
// cusolverRfAccessBundledFactorsDevice returns. Setup allocates the device arrays the real library
// allocates (M, P, Q) and copies into them with cudaMemcpy, so the upload is in the trace as
// copies. Analysis checks the call order only. Reset, refactor and solve are checked (call order,
// arrays in device memory of their sizes) and written as `sparse` records with a kernel
// cusolverrf_<routine>_csr_float64; nothing is computed on the device (x is left as it is, the
// zero pivot is -1), and the extracted factors are the ones given at setup. Model, not measured:
//   refactor  FLOPs 2·Σ_i Σ_{k in L(i,:)} nnz(U(k,:))   (the row updates of a left-looking LU in
//             the fixed pattern), bytes: M read and written + A (values and pattern) + P and Q
//   reset     bytes: A read + M written
//   solve     FLOPs 2·(nnz(L) + nnz(U)) per right-hand side, bytes: M read + 4 vectors (P·b,
//             the two triangular sweeps, Q)
// Batched: the same per system, × batchSize, on the one pattern.
#define DISABLE_CUSOLVER_DEPRECATED  // cusolverRf is deprecated in favour of cuDSS, not removed
#include <cusolverRf.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "interposer/cusolver_sp_internal.h"

namespace {

namespace detail = powertrain::emu::detail;
using powertrain::emu::cusolver_sp::device_array;
using powertrain::emu::cusolver_sp::is_permutation;

// A host CSR matrix copied from the setup (0-based).
struct Csr {
  int n = 0, nnz = 0;
  std::vector<int> offsets, columns;
  std::vector<double> values;
};

struct RfHandle {
  double zero = 0.0, boost = 0.0;
  cusolverRfFactorization_t factorization = CUSOLVERRF_FACTORIZATION_ALG0;
  cusolverRfTriangularSolve_t solve = CUSOLVERRF_TRIANGULAR_SOLVE_ALG1;
  cusolverRfMatrixFormat_t format = CUSOLVERRF_MATRIX_FORMAT_CSR;
  cusolverRfUnitDiagonal_t diagonal = CUSOLVERRF_UNIT_DIAGONAL_STORED_L;
  cusolverRfResetValuesFastMode_t fast_mode = CUSOLVERRF_RESET_VALUES_FAST_MODE_OFF;
  int stage = 0;  // 0 created, 1 set up, 2 analysed, 3 refactored
  int batch = 0;  // 0: not batched
  int n = 0, nnz_a = 0;
  Csr lower, upper;
  std::vector<int> p, q;
  double refactor_flops = 0;
  // The bundled factor M on the device, and P and Q there.
  int nnz_m = 0;
  int *m_offsets = nullptr, *m_columns = nullptr;
  double* m_values = nullptr;
  int *device_p = nullptr, *device_q = nullptr;
};

struct RfState {
  std::mutex mutex;
  std::unordered_set<const void*> handles;
};
RfState& state() {
  static RfState* s = new RfState;  // never destroyed
  return *s;
}

cusolverStatus_t bad(const char* api, const std::string& what) {
  powertrain::emu::report_misuse(api, what);
  return CUSOLVER_STATUS_INVALID_VALUE;
}

// The live handle at `stage` or later, batched or not as `batched` asks (reported when not).
RfHandle* rf_handle(cusolverRfHandle_t handle, int stage, int batched, const char* api,
                    cusolverStatus_t* status) {
  std::lock_guard<std::mutex> lock(state().mutex);
  *status = CUSOLVER_STATUS_NOT_INITIALIZED;
  if (state().handles.count(handle) == 0) {
    powertrain::emu::report_misuse(
        api, "invalid or destroyed cusolverRf handle " + detail::pointer_text(handle));
    return nullptr;
  }
  auto* h = reinterpret_cast<RfHandle*>(handle);
  if (h->stage < stage) {
    static const char* const kNeeds[] = {"", "the setup", "the analysis", "the refactorization"};
    powertrain::emu::report_misuse(api, std::string(kNeeds[stage]) + " has not run on the handle");
    return nullptr;
  }
  if (batched >= 0 && stage > 0 && (h->batch > 0) != (batched > 0)) {
    powertrain::emu::report_misuse(
        api, h->batch > 0 ? "the handle was set up batched" : "the handle was not set up batched");
    *status = CUSOLVER_STATUS_INVALID_VALUE;
    return nullptr;
  }
  *status = CUSOLVER_STATUS_SUCCESS;
  return h;
}

bool host_array(const void* pointer, std::int64_t bytes) {
  if (bytes <= 0) return true;
  if (pointer == nullptr) return false;
  const detail::PointerInfo info = detail::lookup_pointer(pointer);
  return !info.known || !info.device_side || info.backed;
}

// Reads an n x n CSR matrix with `nnz` nonzeros (base 0, as cusolverRf requires) from host memory.
bool read_csr(int n, int nnz, const int* offsets, const int* columns, const double* values,
              const char* what, const char* api, Csr* out) {
  if (nnz < 0 || !host_array(offsets, (std::int64_t{n} + 1) * 4) ||
      !host_array(columns, std::int64_t{nnz} * 4) || !host_array(values, std::int64_t{nnz} * 8)) {
    powertrain::emu::report_misuse(
        api, std::string(what) + ": a NULL or device array, or nnz " + std::to_string(nnz));
    return false;
  }
  if (offsets[0] != 0 || offsets[n] != nnz) {
    powertrain::emu::report_misuse(
        api, std::string(what) + ": row offsets run from " + std::to_string(offsets[0]) + " to " +
                 std::to_string(offsets[n]) + ", not 0 to nnz (cusolverRf takes base 0)");
    return false;
  }
  for (int i = 0; i < n; ++i) {
    if (offsets[i + 1] < offsets[i]) {
      powertrain::emu::report_misuse(
          api, std::string(what) + ": row offsets decrease at row " + std::to_string(i));
      return false;
    }
    for (int k = offsets[i]; k < offsets[i + 1]; ++k) {
      if (columns[k] < 0 || columns[k] >= n) {
        powertrain::emu::report_misuse(api, std::string(what) + ": row " + std::to_string(i) +
                                                " has column " + std::to_string(columns[k]));
        return false;
      }
    }
  }
  out->n = n, out->nnz = nnz;
  out->offsets.assign(offsets, offsets + n + 1);
  out->columns.assign(columns, columns + nnz);
  out->values.assign(values, values + nnz);
  return true;
}

// The transpose of a square CSR matrix (a CSC matrix's arrays read as CSR give its transpose).
Csr transposed(const Csr& a) {
  Csr t;
  t.n = a.n, t.nnz = a.nnz;
  t.offsets.assign(static_cast<std::size_t>(a.n) + 1, 0);
  for (int j : a.columns) ++t.offsets[static_cast<std::size_t>(j) + 1];
  for (int i = 0; i < a.n; ++i)
    t.offsets[static_cast<std::size_t>(i) + 1] += t.offsets[static_cast<std::size_t>(i)];
  t.columns.resize(a.columns.size());
  t.values.resize(a.values.size());
  std::vector<int> next(t.offsets.begin(), t.offsets.end() - 1);
  for (int i = 0; i < a.n; ++i) {
    for (int k = a.offsets[static_cast<std::size_t>(i)];
         k < a.offsets[static_cast<std::size_t>(i) + 1]; ++k) {
      const int at = next[static_cast<std::size_t>(a.columns[static_cast<std::size_t>(k)])]++;
      t.columns[static_cast<std::size_t>(at)] = i;
      t.values[static_cast<std::size_t>(at)] = a.values[static_cast<std::size_t>(k)];
    }
  }
  return t;
}

void release_device(RfHandle* h) {
  for (void* pointer : {static_cast<void*>(h->m_offsets), static_cast<void*>(h->m_columns),
                        static_cast<void*>(h->m_values), static_cast<void*>(h->device_p),
                        static_cast<void*>(h->device_q)}) {
    if (pointer != nullptr) cudaFree(pointer);
  }
  h->m_offsets = h->m_columns = h->device_p = h->device_q = nullptr;
  h->m_values = nullptr;
}

// M = L + U row by row (the unit diagonal, stored or not, left out), 0-based.
Csr bundled(const RfHandle& h) {
  Csr m;
  m.n = h.n;
  m.offsets.assign(static_cast<std::size_t>(h.n) + 1, 0);
  // The diagonal of M is that of the factor whose diagonal is not the unit one.
  const bool unit_lower = h.diagonal == CUSOLVERRF_UNIT_DIAGONAL_STORED_L ||
                          h.diagonal == CUSOLVERRF_UNIT_DIAGONAL_ASSUMED_L;
  for (int i = 0; i < h.n; ++i) {
    for (const Csr* part : {&h.lower, &h.upper}) {
      for (int k = part->offsets[static_cast<std::size_t>(i)];
           k < part->offsets[static_cast<std::size_t>(i) + 1]; ++k) {
        const int j = part->columns[static_cast<std::size_t>(k)];
        if (part == &h.lower && (j > i || (j == i && unit_lower))) continue;
        if (part == &h.upper && (j < i || (j == i && !unit_lower))) continue;
        m.columns.push_back(j);
        m.values.push_back(part->values[static_cast<std::size_t>(k)]);
      }
    }
    m.offsets[static_cast<std::size_t>(i) + 1] = static_cast<int>(m.columns.size());
  }
  m.nnz = static_cast<int>(m.columns.size());
  return m;
}

// Allocates M, P and Q on the device and uploads them (a real setup's copies).
cusolverStatus_t upload(RfHandle* h, const char* api) {
  const Csr m = bundled(*h);
  const std::vector<int>& offsets = m.offsets;
  const std::vector<int>& columns = m.columns;
  const std::vector<double>& values = m.values;
  release_device(h);
  h->nnz_m = static_cast<int>(columns.size());
  const std::size_t n = static_cast<std::size_t>(h->n);
  const std::size_t nnz = std::max<std::size_t>(columns.size(), 1);
  void* mp = nullptr;
  void* mi = nullptr;
  void* mx = nullptr;
  void* dp = nullptr;
  void* dq = nullptr;
  if (cudaMalloc(&mp, (n + 1) * 4) != cudaSuccess || cudaMalloc(&mi, nnz * 4) != cudaSuccess ||
      cudaMalloc(&mx, nnz * 8) != cudaSuccess ||
      cudaMalloc(&dp, std::max<std::size_t>(n, 1) * 4) != cudaSuccess ||
      cudaMalloc(&dq, std::max<std::size_t>(n, 1) * 4) != cudaSuccess) {
    for (void* pointer : {mp, mi, mx, dp, dq}) {
      if (pointer != nullptr) cudaFree(pointer);
    }
    powertrain::emu::report_misuse(api, "out of device memory for the factors");
    return CUSOLVER_STATUS_ALLOC_FAILED;
  }
  h->m_offsets = static_cast<int*>(mp), h->m_columns = static_cast<int*>(mi);
  h->m_values = static_cast<double*>(mx);
  h->device_p = static_cast<int*>(dp), h->device_q = static_cast<int*>(dq);
  cudaMemcpy(mp, offsets.data(), (n + 1) * 4, cudaMemcpyHostToDevice);
  if (!columns.empty()) {
    cudaMemcpy(mi, columns.data(), columns.size() * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(mx, values.data(), values.size() * 8, cudaMemcpyHostToDevice);
  }
  if (n > 0) {
    cudaMemcpy(dp, h->p.data(), n * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(dq, h->q.data(), n * 4, cudaMemcpyHostToDevice);
  }
  // Row updates of the refactorization in the fixed pattern: row i of L times row k of U.
  double flops = 0;
  for (int i = 0; i < h->n; ++i) {
    for (int k = h->lower.offsets[static_cast<std::size_t>(i)];
         k < h->lower.offsets[static_cast<std::size_t>(i) + 1]; ++k) {
      const int j = h->lower.columns[static_cast<std::size_t>(k)];
      if (j >= i) continue;
      flops += 2.0 * (h->upper.offsets[static_cast<std::size_t>(j) + 1] -
                      h->upper.offsets[static_cast<std::size_t>(j)]);
    }
  }
  h->refactor_flops = flops;
  return CUSOLVER_STATUS_SUCCESS;
}

// The setup from host arrays (batch 0: not batched).
cusolverStatus_t setup(int batch, int n, int nnz_a, const int* a_offsets, const int* a_columns,
                       const double* a_values, int nnz_l, const int* l_offsets,
                       const int* l_columns, const double* l_values, int nnz_u,
                       const int* u_offsets, const int* u_columns, const double* u_values,
                       const int* p, const int* q, cusolverRfHandle_t handle, const char* api) {
  cusolverStatus_t status;
  RfHandle* h = rf_handle(handle, 0, -1, api, &status);
  if (h == nullptr) return status;
  if (n < 1) return bad(api, "n " + std::to_string(n) + " is below 1");
  Csr a, lower, upper;
  if (!read_csr(n, nnz_a, a_offsets, a_columns, a_values, "A", api, &a) ||
      !read_csr(n, nnz_l, l_offsets, l_columns, l_values, "L", api, &lower) ||
      !read_csr(n, nnz_u, u_offsets, u_columns, u_values, "U", api, &upper)) {
    return CUSOLVER_STATUS_INVALID_VALUE;
  }
  if (!host_array(p, std::int64_t{n} * 4) || !host_array(q, std::int64_t{n} * 4) ||
      !is_permutation(p, n) || !is_permutation(q, n)) {
    return bad(api, "P or Q is not a permutation of 0.." + std::to_string(n - 1));
  }
  std::lock_guard<std::mutex> lock(state().mutex);
  if (h->format == CUSOLVERRF_MATRIX_FORMAT_CSC) {  // read as CSR of the transpose
    lower = transposed(lower), upper = transposed(upper);
  }
  h->batch = batch, h->n = n, h->nnz_a = nnz_a;
  h->lower = std::move(lower), h->upper = std::move(upper);
  h->p.assign(p, p + n), h->q.assign(q, q + n);
  const cusolverStatus_t uploaded = upload(h, api);
  if (uploaded != CUSOLVER_STATUS_SUCCESS) return uploaded;
  h->stage = 1;
  return CUSOLVER_STATUS_SUCCESS;
}

// Copies a device array to the host (zeros where the emulator keeps no data behind it).
template <typename T>
std::vector<T> from_device(const T* pointer, int count) {
  std::vector<T> out(static_cast<std::size_t>(std::max(count, 0)), T(0));
  if (count > 0) cudaMemcpy(out.data(), pointer, out.size() * sizeof(T), cudaMemcpyDeviceToHost);
  return out;
}

cusolverStatus_t record(const RfHandle& h, const char* what, double flops, double bytes, int batch,
                        const char* api, std::int64_t start) {
  detail::SparseOp op;
  op.api = api;
  op.library = "cusolverrf";
  op.what = what;
  op.rows = op.cols = h.n;
  op.nnz = h.nnz_m;
  if (batch > 1) op.n = batch;
  op.dtype = op.compute = CUDA_R_64F;
  op.flops = static_cast<std::int64_t>(std::min(flops * std::max(batch, 1), 9.0e18));
  op.bytes = static_cast<std::int64_t>(std::min(bytes * std::max(batch, 1), 9.0e18));
  return detail::record_sparse_op(nullptr, op, start) ? CUSOLVER_STATUS_SUCCESS
                                                      : CUSOLVER_STATUS_EXECUTION_FAILED;
}

double m_bytes(const RfHandle& h) { return h.nnz_m * 12.0 + (h.n + 1.0) * 4; }
double a_bytes(const RfHandle& h) { return h.nnz_a * 12.0 + (h.n + 1.0) * 4; }

// Reset: A's new values (pattern as at setup) into M. `values` holds `batch` device arrays.
cusolverStatus_t reset(int batch, int n, int nnz_a, const int* offsets, const int* columns,
                       const double* const* values, const int* p, const int* q,
                       cusolverRfHandle_t handle, const char* api) {
  const std::int64_t start = powertrain::emu::now_ns();
  cusolverStatus_t status;
  RfHandle* h = rf_handle(handle, 1, batch, api, &status);
  if (h == nullptr) return status;
  if (n != h->n || nnz_a != h->nnz_a || (batch > 0 && batch != h->batch)) {
    return bad(api, "n, nnzA or the batch size is not the set-up one");
  }
  if (!device_array(offsets, (std::int64_t{n} + 1) * 4) ||
      !device_array(columns, std::int64_t{nnz_a} * 4) || !device_array(p, std::int64_t{n} * 4) ||
      !device_array(q, std::int64_t{n} * 4) || values == nullptr) {
    return bad(api, "an array is not device memory of its size");
  }
  for (int k = 0; k < std::max(batch, 1); ++k) {
    if (!device_array(values[k], std::int64_t{nnz_a} * 8))
      return bad(api, "the values of system " + std::to_string(k) +
                          " are not device memory of nnzA doubles");
  }
  return record(*h, "reset_values", 0.0, a_bytes(*h) + m_bytes(*h) + 2.0 * n * 4, batch, api,
                start);
}

cusolverStatus_t refactor(cusolverRfHandle_t handle, int batched, const char* api) {
  const std::int64_t start = powertrain::emu::now_ns();
  cusolverStatus_t status;
  RfHandle* h = rf_handle(handle, 2, batched, api, &status);
  if (h == nullptr) return status;
  {
    std::lock_guard<std::mutex> lock(state().mutex);
    h->stage = 3;
  }
  return record(*h, "refactor", h->refactor_flops, 2.0 * m_bytes(*h) + a_bytes(*h), h->batch, api,
                start);
}

cusolverStatus_t solve(cusolverRfHandle_t handle, const int* p, const int* q, int nrhs,
                       const double* temp, int ldt, const double* const* xf, int ldxf, int batched,
                       const char* api) {
  const std::int64_t start = powertrain::emu::now_ns();
  cusolverStatus_t status;
  RfHandle* h = rf_handle(handle, 3, batched, api, &status);
  if (h == nullptr) return status;
  const int n = h->n, systems = std::max(h->batch, 1);
  if (nrhs != 1) return bad(api, "nrhs " + std::to_string(nrhs) + " (only 1 is supported)");
  if (ldt < n || ldxf < n) return bad(api, "ldt or ldxf below n " + std::to_string(n));
  const std::int64_t temp_elements = batched > 0 ? 2LL * systems * n : std::int64_t{ldt};
  if (!device_array(p, std::int64_t{n} * 4) || !device_array(q, std::int64_t{n} * 4) ||
      !device_array(temp, temp_elements * 8) || xf == nullptr) {
    return bad(api, "P, Q or Temp is not device memory of its size");
  }
  for (int k = 0; k < systems; ++k) {
    if (!device_array(xf[k], std::int64_t{n} * 8))
      return bad(api, "XF of system " + std::to_string(k) + " is not device memory of n doubles");
  }
  const double flops = 2.0 * (h->lower.nnz + h->upper.nnz);
  return record(*h, "solve", flops, m_bytes(*h) + 4.0 * n * 8 + 2.0 * n * 4, h->batch, api, start);
}

// Host copies of `values` allocated with malloc (the caller frees them, as with the library).
template <typename T>
T* malloc_copy(const std::vector<T>& values) {
  auto* out = static_cast<T*>(std::malloc(std::max<std::size_t>(values.size(), 1) * sizeof(T)));
  if (out != nullptr && !values.empty()) std::memcpy(out, values.data(), values.size() * sizeof(T));
  return out;
}

}  // namespace

PT_EXPORT cusolverStatus_t cusolverRfCreate(cusolverRfHandle_t* handle) {
  if (handle == nullptr) return bad("cusolverRfCreate", "handle is NULL");
  auto* h = new RfHandle;
  std::lock_guard<std::mutex> lock(state().mutex);
  state().handles.insert(h);
  *handle = reinterpret_cast<cusolverRfHandle_t>(h);
  return CUSOLVER_STATUS_SUCCESS;
}

PT_EXPORT cusolverStatus_t cusolverRfDestroy(cusolverRfHandle_t handle) {
  RfHandle* h = nullptr;
  {
    std::lock_guard<std::mutex> lock(state().mutex);
    if (state().handles.erase(handle) == 0) {
      powertrain::emu::report_misuse(
          "cusolverRfDestroy",
          "invalid or destroyed cusolverRf handle " + detail::pointer_text(handle));
      return CUSOLVER_STATUS_NOT_INITIALIZED;
    }
    h = reinterpret_cast<RfHandle*>(handle);
  }
  release_device(h);
  delete h;
  return CUSOLVER_STATUS_SUCCESS;
}

#define PT_RF_HANDLE(api, stage)                            \
  cusolverStatus_t status;                                  \
  RfHandle* h = rf_handle(handle, stage, -1, api, &status); \
  if (h == nullptr) return status;                          \
  std::lock_guard<std::mutex> lock(state().mutex)

PT_EXPORT cusolverStatus_t cusolverRfSetNumericProperties(cusolverRfHandle_t handle, double zero,
                                                          double boost) {
  PT_RF_HANDLE("cusolverRfSetNumericProperties", 0);
  if (!(zero >= 0) || !(boost >= 0))
    return bad("cusolverRfSetNumericProperties", "zero or boost is negative");
  h->zero = zero, h->boost = boost;
  return CUSOLVER_STATUS_SUCCESS;
}

PT_EXPORT cusolverStatus_t cusolverRfGetNumericProperties(cusolverRfHandle_t handle, double* zero,
                                                          double* boost) {
  PT_RF_HANDLE("cusolverRfGetNumericProperties", 0);
  if (zero == nullptr || boost == nullptr)
    return bad("cusolverRfGetNumericProperties", "an output is NULL");
  *zero = h->zero, *boost = h->boost;
  return CUSOLVER_STATUS_SUCCESS;
}

PT_EXPORT cusolverStatus_t cusolverRfGetNumericBoostReport(cusolverRfHandle_t handle,
                                                           cusolverRfNumericBoostReport_t* report) {
  PT_RF_HANDLE("cusolverRfGetNumericBoostReport", 0);
  if (report == nullptr) return bad("cusolverRfGetNumericBoostReport", "report is NULL");
  *report = CUSOLVERRF_NUMERIC_BOOST_NOT_USED;  // the refactorization computes nothing to boost
  return CUSOLVER_STATUS_SUCCESS;
}

PT_EXPORT cusolverStatus_t cusolverRfSetAlgs(cusolverRfHandle_t handle,
                                             cusolverRfFactorization_t factorization,
                                             cusolverRfTriangularSolve_t solve_alg) {
  PT_RF_HANDLE("cusolverRfSetAlgs", 0);
  if (factorization < CUSOLVERRF_FACTORIZATION_ALG0 ||
      factorization > CUSOLVERRF_FACTORIZATION_ALG2 ||
      solve_alg < CUSOLVERRF_TRIANGULAR_SOLVE_ALG1 ||
      solve_alg > CUSOLVERRF_TRIANGULAR_SOLVE_ALG3) {
    return bad("cusolverRfSetAlgs", "unknown algorithm " + std::to_string(factorization) + " / " +
                                        std::to_string(solve_alg));
  }
  h->factorization = factorization, h->solve = solve_alg;
  return CUSOLVER_STATUS_SUCCESS;
}

PT_EXPORT cusolverStatus_t cusolverRfGetAlgs(cusolverRfHandle_t handle,
                                             cusolverRfFactorization_t* factorization,
                                             cusolverRfTriangularSolve_t* solve_alg) {
  PT_RF_HANDLE("cusolverRfGetAlgs", 0);
  if (factorization == nullptr || solve_alg == nullptr)
    return bad("cusolverRfGetAlgs", "an output is NULL");
  *factorization = h->factorization, *solve_alg = h->solve;
  return CUSOLVER_STATUS_SUCCESS;
}

PT_EXPORT cusolverStatus_t cusolverRfSetMatrixFormat(cusolverRfHandle_t handle,
                                                     cusolverRfMatrixFormat_t format,
                                                     cusolverRfUnitDiagonal_t diagonal) {
  PT_RF_HANDLE("cusolverRfSetMatrixFormat", 0);
  if (format != CUSOLVERRF_MATRIX_FORMAT_CSR && format != CUSOLVERRF_MATRIX_FORMAT_CSC) {
    return bad("cusolverRfSetMatrixFormat", "unknown format " + std::to_string(format));
  }
  if (diagonal < CUSOLVERRF_UNIT_DIAGONAL_STORED_L ||
      diagonal > CUSOLVERRF_UNIT_DIAGONAL_ASSUMED_U) {
    return bad("cusolverRfSetMatrixFormat", "unknown unit diagonal " + std::to_string(diagonal));
  }
  h->format = format, h->diagonal = diagonal;
  return CUSOLVER_STATUS_SUCCESS;
}

PT_EXPORT cusolverStatus_t cusolverRfGetMatrixFormat(cusolverRfHandle_t handle,
                                                     cusolverRfMatrixFormat_t* format,
                                                     cusolverRfUnitDiagonal_t* diagonal) {
  PT_RF_HANDLE("cusolverRfGetMatrixFormat", 0);
  if (format == nullptr || diagonal == nullptr)
    return bad("cusolverRfGetMatrixFormat", "an output is NULL");
  *format = h->format, *diagonal = h->diagonal;
  return CUSOLVER_STATUS_SUCCESS;
}

PT_EXPORT cusolverStatus_t cusolverRfSetResetValuesFastMode(cusolverRfHandle_t handle,
                                                            cusolverRfResetValuesFastMode_t mode) {
  PT_RF_HANDLE("cusolverRfSetResetValuesFastMode", 0);
  if (mode != CUSOLVERRF_RESET_VALUES_FAST_MODE_OFF &&
      mode != CUSOLVERRF_RESET_VALUES_FAST_MODE_ON) {
    return bad("cusolverRfSetResetValuesFastMode", "unknown mode " + std::to_string(mode));
  }
  h->fast_mode = mode;
  return CUSOLVER_STATUS_SUCCESS;
}

PT_EXPORT cusolverStatus_t cusolverRfGetResetValuesFastMode(cusolverRfHandle_t handle,
                                                            cusolverRfResetValuesFastMode_t* mode) {
  PT_RF_HANDLE("cusolverRfGetResetValuesFastMode", 0);
  if (mode == nullptr) return bad("cusolverRfGetResetValuesFastMode", "mode is NULL");
  *mode = h->fast_mode;
  return CUSOLVER_STATUS_SUCCESS;
}
#undef PT_RF_HANDLE

PT_EXPORT cusolverStatus_t cusolverRfSetupHost(int n, int nnz_a, int* a_offsets, int* a_columns,
                                               double* a_values, int nnz_l, int* l_offsets,
                                               int* l_columns, double* l_values, int nnz_u,
                                               int* u_offsets, int* u_columns, double* u_values,
                                               int* p, int* q, cusolverRfHandle_t handle) {
  return setup(0, n, nnz_a, a_offsets, a_columns, a_values, nnz_l, l_offsets, l_columns, l_values,
               nnz_u, u_offsets, u_columns, u_values, p, q, handle, "cusolverRfSetupHost");
}

// The same from device arrays: copied to the host first (where the emulator keeps their data).
PT_EXPORT cusolverStatus_t cusolverRfSetupDevice(int n, int nnz_a, int* a_offsets, int* a_columns,
                                                 double* a_values, int nnz_l, int* l_offsets,
                                                 int* l_columns, double* l_values, int nnz_u,
                                                 int* u_offsets, int* u_columns, double* u_values,
                                                 int* p, int* q, cusolverRfHandle_t handle) {
  const char* api = "cusolverRfSetupDevice";
  if (n < 1 || nnz_a < 0 || nnz_l < 0 || nnz_u < 0) return bad(api, "n below 1 or a negative nnz");
  const std::int64_t rows = (std::int64_t{n} + 1) * 4;
  if (!device_array(a_offsets, rows) || !device_array(a_columns, std::int64_t{nnz_a} * 4) ||
      !device_array(a_values, std::int64_t{nnz_a} * 8) || !device_array(l_offsets, rows) ||
      !device_array(l_columns, std::int64_t{nnz_l} * 4) ||
      !device_array(l_values, std::int64_t{nnz_l} * 8) || !device_array(u_offsets, rows) ||
      !device_array(u_columns, std::int64_t{nnz_u} * 4) ||
      !device_array(u_values, std::int64_t{nnz_u} * 8) || !device_array(p, std::int64_t{n} * 4) ||
      !device_array(q, std::int64_t{n} * 4)) {
    return bad(api, "an array is not device memory of its size");
  }
  const auto ao = from_device(a_offsets, n + 1), ac = from_device(a_columns, nnz_a);
  const auto lo = from_device(l_offsets, n + 1), lc = from_device(l_columns, nnz_l);
  const auto uo = from_device(u_offsets, n + 1), uc = from_device(u_columns, nnz_u);
  const auto av = from_device(a_values, nnz_a), lv = from_device(l_values, nnz_l);
  const auto uv = from_device(u_values, nnz_u);
  const auto hp = from_device(p, n), hq = from_device(q, n);
  return setup(0, n, nnz_a, ao.data(), ac.data(), av.data(), nnz_l, lo.data(), lc.data(), lv.data(),
               nnz_u, uo.data(), uc.data(), uv.data(), hp.data(), hq.data(), handle, api);
}

PT_EXPORT cusolverStatus_t cusolverRfAnalyze(cusolverRfHandle_t handle) {
  cusolverStatus_t status;
  RfHandle* h = rf_handle(handle, 1, 0, "cusolverRfAnalyze", &status);
  if (h == nullptr) return status;
  std::lock_guard<std::mutex> lock(state().mutex);
  h->stage = std::max(h->stage, 2);
  return CUSOLVER_STATUS_SUCCESS;
}

PT_EXPORT cusolverStatus_t cusolverRfResetValues(int n, int nnz_a, int* offsets, int* columns,
                                                 double* values, int* p, int* q,
                                                 cusolverRfHandle_t handle) {
  const double* systems[] = {values};
  return reset(0, n, nnz_a, offsets, columns, systems, p, q, handle, "cusolverRfResetValues");
}

PT_EXPORT cusolverStatus_t cusolverRfRefactor(cusolverRfHandle_t handle) {
  return refactor(handle, 0, "cusolverRfRefactor");
}

PT_EXPORT cusolverStatus_t cusolverRfSolve(cusolverRfHandle_t handle, int* p, int* q, int nrhs,
                                           double* temp, int ldt, double* xf, int ldxf) {
  const double* systems[] = {xf};
  return solve(handle, p, q, nrhs, temp, ldt, systems, ldxf, 0, "cusolverRfSolve");
}

PT_EXPORT cusolverStatus_t cusolverRfAccessBundledFactorsDevice(cusolverRfHandle_t handle,
                                                                int* nnz_m, int** m_offsets,
                                                                int** m_columns,
                                                                double** m_values) {
  const char* api = "cusolverRfAccessBundledFactorsDevice";
  cusolverStatus_t status;
  RfHandle* h = rf_handle(handle, 1, 0, api, &status);
  if (h == nullptr) return status;
  if (nnz_m == nullptr || m_offsets == nullptr || m_columns == nullptr || m_values == nullptr) {
    return bad(api, "an output is NULL");
  }
  *nnz_m = h->nnz_m, *m_offsets = h->m_offsets, *m_columns = h->m_columns;
  *m_values = h->m_values;
  return CUSOLVER_STATUS_SUCCESS;
}

PT_EXPORT cusolverStatus_t cusolverRfExtractBundledFactorsHost(cusolverRfHandle_t handle,
                                                               int* nnz_m, int** m_offsets,
                                                               int** m_columns, double** m_values) {
  const char* api = "cusolverRfExtractBundledFactorsHost";
  cusolverStatus_t status;
  RfHandle* h = rf_handle(handle, 1, 0, api, &status);
  if (h == nullptr) return status;
  if (nnz_m == nullptr || m_offsets == nullptr || m_columns == nullptr || m_values == nullptr) {
    return bad(api, "an output is NULL");
  }
  Csr m = bundled(*h);
  if (h->format == CUSOLVERRF_MATRIX_FORMAT_CSC) m = transposed(m);
  *nnz_m = m.nnz;
  *m_offsets = malloc_copy(m.offsets), *m_columns = malloc_copy(m.columns);
  *m_values = malloc_copy(m.values);
  return CUSOLVER_STATUS_SUCCESS;
}

PT_EXPORT cusolverStatus_t cusolverRfExtractSplitFactorsHost(cusolverRfHandle_t handle, int* nnz_l,
                                                             int** l_offsets, int** l_columns,
                                                             double** l_values, int* nnz_u,
                                                             int** u_offsets, int** u_columns,
                                                             double** u_values) {
  const char* api = "cusolverRfExtractSplitFactorsHost";
  cusolverStatus_t status;
  RfHandle* h = rf_handle(handle, 1, 0, api, &status);
  if (h == nullptr) return status;
  if (nnz_l == nullptr || l_offsets == nullptr || l_columns == nullptr || l_values == nullptr ||
      nnz_u == nullptr || u_offsets == nullptr || u_columns == nullptr || u_values == nullptr) {
    return bad(api, "an output is NULL");
  }
  // From M, every diagonal stored: the unit one in the factor the format names, M's in the other.
  const Csr m = bundled(*h);
  const bool unit_lower = h->diagonal == CUSOLVERRF_UNIT_DIAGONAL_STORED_L ||
                          h->diagonal == CUSOLVERRF_UNIT_DIAGONAL_ASSUMED_L;
  Csr lower, upper;
  for (Csr* part : {&lower, &upper}) {
    part->n = h->n;
    part->offsets.assign(static_cast<std::size_t>(h->n) + 1, 0);
  }
  for (int i = 0; i < h->n; ++i) {
    if (!unit_lower) upper.columns.push_back(i), upper.values.push_back(1.0);
    for (int k = m.offsets[static_cast<std::size_t>(i)];
         k < m.offsets[static_cast<std::size_t>(i) + 1]; ++k) {
      const int j = m.columns[static_cast<std::size_t>(k)];
      Csr& part = j < i || (j == i && !unit_lower) ? lower : upper;
      part.columns.push_back(j), part.values.push_back(m.values[static_cast<std::size_t>(k)]);
    }
    if (unit_lower) lower.columns.push_back(i), lower.values.push_back(1.0);
    lower.offsets[static_cast<std::size_t>(i) + 1] = static_cast<int>(lower.columns.size());
    upper.offsets[static_cast<std::size_t>(i) + 1] = static_cast<int>(upper.columns.size());
  }
  lower.nnz = static_cast<int>(lower.columns.size()),
  upper.nnz = static_cast<int>(upper.columns.size());
  if (h->format == CUSOLVERRF_MATRIX_FORMAT_CSC)
    lower = transposed(lower), upper = transposed(upper);
  *nnz_l = lower.nnz, *nnz_u = upper.nnz;
  *l_offsets = malloc_copy(lower.offsets), *l_columns = malloc_copy(lower.columns);
  *l_values = malloc_copy(lower.values);
  *u_offsets = malloc_copy(upper.offsets), *u_columns = malloc_copy(upper.columns);
  *u_values = malloc_copy(upper.values);
  return CUSOLVER_STATUS_SUCCESS;
}

// ---- batched
// -------------------------------------------------------------------------------------

PT_EXPORT cusolverStatus_t cusolverRfBatchSetupHost(int batch, int n, int nnz_a, int* a_offsets,
                                                    int* a_columns, double* a_values[], int nnz_l,
                                                    int* l_offsets, int* l_columns,
                                                    double* l_values, int nnz_u, int* u_offsets,
                                                    int* u_columns, double* u_values, int* p,
                                                    int* q, cusolverRfHandle_t handle) {
  const char* api = "cusolverRfBatchSetupHost";
  if (batch < 1 || a_values == nullptr) return bad(api, "batchSize below 1 or no value arrays");
  for (int k = 1; k < batch; ++k) {
    if (!host_array(a_values[k], std::int64_t{nnz_a} * 8))
      return bad(api, "the values of system " + std::to_string(k) + " are NULL or device memory");
  }
  return setup(batch, n, nnz_a, a_offsets, a_columns, a_values[0], nnz_l, l_offsets, l_columns,
               l_values, nnz_u, u_offsets, u_columns, u_values, p, q, handle, api);
}

PT_EXPORT cusolverStatus_t cusolverRfBatchAnalyze(cusolverRfHandle_t handle) {
  cusolverStatus_t status;
  RfHandle* h = rf_handle(handle, 1, 1, "cusolverRfBatchAnalyze", &status);
  if (h == nullptr) return status;
  std::lock_guard<std::mutex> lock(state().mutex);
  h->stage = std::max(h->stage, 2);
  return CUSOLVER_STATUS_SUCCESS;
}

PT_EXPORT cusolverStatus_t cusolverRfBatchResetValues(int batch, int n, int nnz_a, int* offsets,
                                                      int* columns, double* values[], int* p,
                                                      int* q, cusolverRfHandle_t handle) {
  return reset(batch, n, nnz_a, offsets, columns, values, p, q, handle,
               "cusolverRfBatchResetValues");
}

PT_EXPORT cusolverStatus_t cusolverRfBatchRefactor(cusolverRfHandle_t handle) {
  return refactor(handle, 1, "cusolverRfBatchRefactor");
}

PT_EXPORT cusolverStatus_t cusolverRfBatchSolve(cusolverRfHandle_t handle, int* p, int* q, int nrhs,
                                                double* temp, int ldt, double* xf[], int ldxf) {
  return solve(handle, p, q, nrhs, temp, ldt, xf, ldxf, 1, "cusolverRfBatchSolve");
}

PT_EXPORT cusolverStatus_t cusolverRfBatchZeroPivot(cusolverRfHandle_t handle, int* position) {
  const char* api = "cusolverRfBatchZeroPivot";
  cusolverStatus_t status;
  RfHandle* h = rf_handle(handle, 3, 1, api, &status);
  if (h == nullptr) return status;
  if (position == nullptr) return bad(api, "position is NULL");
  std::fill(position, position + h->batch, -1);  // not computed
  return CUSOLVER_STATUS_SUCCESS;
}
