// cuBLASLt emulation for the interposer: handles, matmul descriptors, matrix layouts and
// preferences keep their attributes (set/get round-trip with cuBLASLt's sizes and defaults),
// cublasLtMatmulAlgoGetHeuristic returns one plausible algorithm, and cublasLtMatmul derives the
// GEMM shape from the layouts and the descriptor's transpose attributes and writes a `gemm`
// record (docs/emulation-trace.md). Nothing is computed. Every other symbol libcublasLt.so.13
// exports is a generated stub (cublas_nccl_stubs.cc) that reports the call as unsupported and
// returns CUBLAS_STATUS_NOT_SUPPORTED. Objects are found in a registry before use and never
// freed, so invalid or destroyed handles are reported (CUBLAS_STATUS_NOT_INITIALIZED for the
// cuBLASLt handle, CUBLAS_STATUS_INVALID_VALUE for descriptors), never dereferenced.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#pragma GCC visibility push(default)
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#pragma GCC visibility pop

#include "interposer/cublas_common.h"
#include "interposer/cublas_nccl_util.h"
#include "interposer/emulator.h"

namespace {

namespace emu = powertrain::emu;
namespace libs = powertrain::emu::libs;
using libs::handle_text;
using libs::misuse;

enum class Kind { kHandle, kMatmulDesc, kLayout, kPreference };

const char* kind_name(Kind kind) {
  switch (kind) {
    case Kind::kHandle:
      return "cuBLASLt handle";
    case Kind::kMatmulDesc:
      return "matmul descriptor";
    case Kind::kLayout:
      return "matrix layout";
    case Kind::kPreference:
      return "matmul preference";
  }
  return "?";
}

/// One attribute: its id, its size in bytes (what Set/Get check) and its default (raw bits).
struct AttrSpec {
  int id;
  std::size_t size;
  std::uint64_t fallback;
};

constexpr std::uint64_t kMinusOne32 = 0xffffffffull;

// cublasLtMatmulDescAttributes_t (COMPUTE_TYPE and SCALE_TYPE are set at creation).
constexpr AttrSpec kDescAttrs[] = {
    {CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, 4, 0},
    {CUBLASLT_MATMUL_DESC_SCALE_TYPE, 4, 0},
    {CUBLASLT_MATMUL_DESC_POINTER_MODE, 4, 0},
    {CUBLASLT_MATMUL_DESC_TRANSA, 4, 0},
    {CUBLASLT_MATMUL_DESC_TRANSB, 4, 0},
    {CUBLASLT_MATMUL_DESC_TRANSC, 4, 0},
    {CUBLASLT_MATMUL_DESC_FILL_MODE, 4, CUBLAS_FILL_MODE_FULL},
    {CUBLASLT_MATMUL_DESC_EPILOGUE, 4, CUBLASLT_EPILOGUE_DEFAULT},
    {CUBLASLT_MATMUL_DESC_BIAS_POINTER, 8, 0},
    {CUBLASLT_MATMUL_DESC_BIAS_BATCH_STRIDE, 8, 0},
    {CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, 8, 0},
    {CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, 8, 0},
    {CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_BATCH_STRIDE, 8, 0},
    {CUBLASLT_MATMUL_DESC_ALPHA_VECTOR_BATCH_STRIDE, 8, 0},
    {CUBLASLT_MATMUL_DESC_SM_COUNT_TARGET, 4, 0},
    {CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, 8, 0},
    {CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, 8, 0},
    {CUBLASLT_MATMUL_DESC_C_SCALE_POINTER, 8, 0},
    {CUBLASLT_MATMUL_DESC_D_SCALE_POINTER, 8, 0},
    {CUBLASLT_MATMUL_DESC_AMAX_D_POINTER, 8, 0},
    {CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, 4, kMinusOne32},
    {CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_POINTER, 8, 0},
    {CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_AMAX_POINTER, 8, 0},
    {CUBLASLT_MATMUL_DESC_FAST_ACCUM, 1, 0},
    {CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, 4, kMinusOne32},
    {CUBLASLT_MATMUL_DESC_A_SCALE_MODE, 4, 0},
    {CUBLASLT_MATMUL_DESC_B_SCALE_MODE, 4, 0},
    {CUBLASLT_MATMUL_DESC_C_SCALE_MODE, 4, 0},
    {CUBLASLT_MATMUL_DESC_D_SCALE_MODE, 4, 0},
    {CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_SCALE_MODE, 4, 0},
    {CUBLASLT_MATMUL_DESC_D_OUT_SCALE_POINTER, 8, 0},
    {CUBLASLT_MATMUL_DESC_D_OUT_SCALE_MODE, 4, 0},
    {CUBLASLT_MATMUL_DESC_EMULATION_DESCRIPTOR, 8, 0},
};

// cublasLtMatrixLayoutAttribute_t (TYPE, ROWS, COLS and LD are set at creation).
constexpr AttrSpec kLayoutAttrs[] = {
    {CUBLASLT_MATRIX_LAYOUT_TYPE, 4, 0},
    {CUBLASLT_MATRIX_LAYOUT_ORDER, 4, CUBLASLT_ORDER_COL},
    {CUBLASLT_MATRIX_LAYOUT_ROWS, 8, 0},
    {CUBLASLT_MATRIX_LAYOUT_COLS, 8, 0},
    {CUBLASLT_MATRIX_LAYOUT_LD, 8, 0},
    {CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, 4, 1},
    {CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, 8, 0},
    {CUBLASLT_MATRIX_LAYOUT_PLANE_OFFSET, 8, 0},
    {CUBLASLT_MATRIX_LAYOUT_BATCH_MODE, 4, CUBLASLT_BATCH_MODE_STRIDED},
};

// cublasLtMatmulPreferenceAttributes_t.
constexpr AttrSpec kPreferenceAttrs[] = {
    {CUBLASLT_MATMUL_PREF_SEARCH_MODE, 4, CUBLASLT_SEARCH_BEST_FIT},
    {CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, 8, 0},
    {CUBLASLT_MATMUL_PREF_REDUCTION_SCHEME_MASK, 4, CUBLASLT_REDUCTION_SCHEME_MASK},
    {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, 4, 256},
    {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, 4, 256},
    {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, 4, 256},
    {CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, 4, 256},
    {CUBLASLT_MATMUL_PREF_MAX_WAVES_COUNT, 4, 0},  // float 0.0f
    {CUBLASLT_MATMUL_PREF_IMPL_MASK, 8, ~0ull},
};

struct Object {
  Kind kind = Kind::kHandle;
  bool live = true;  // guarded by Registry::mu
  int device = 0;
  std::mutex mu;
  std::map<int, std::uint64_t> values;  // attribute id → raw bits (little-endian, size bytes)
};

struct Registry {
  std::mutex mu;
  std::unordered_map<const void*, Object*> objects;  // never erased, objects never freed
};

Registry& registry() {
  static auto* instance = new Registry;
  return *instance;
}

std::pair<const AttrSpec*, const AttrSpec*> specs(Kind kind) {
  switch (kind) {
    case Kind::kMatmulDesc:
      return {std::begin(kDescAttrs), std::end(kDescAttrs)};
    case Kind::kLayout:
      return {std::begin(kLayoutAttrs), std::end(kLayoutAttrs)};
    case Kind::kPreference:
      return {std::begin(kPreferenceAttrs), std::end(kPreferenceAttrs)};
    case Kind::kHandle:
      break;
  }
  return {nullptr, nullptr};
}

const AttrSpec* find_spec(Kind kind, int id) {
  const auto [begin, end] = specs(kind);
  const auto* it = std::find_if(begin, end, [id](const AttrSpec& s) { return s.id == id; });
  return it == end ? nullptr : it;
}

/// Registers an object at `address` (a new heap object, or the caller's opaque storage for the
/// *Init_internal entry points, which replaces any earlier object there).
Object* register_object(const void* address, Kind kind, Object* object) {
  object->kind = kind;
  object->device = emu::current_device();
  Registry& reg = registry();
  std::lock_guard lock(reg.mu);
  reg.objects[address] = object;
  return object;
}

template <typename Handle>
Handle create(Kind kind) {
  auto* object = new Object;
  register_object(object, kind, object);
  return reinterpret_cast<Handle>(object);
}

Object* find(const void* handle, Kind kind, std::string_view api) {
  const cublasStatus_t status =
      kind == Kind::kHandle ? CUBLAS_STATUS_NOT_INITIALIZED : CUBLAS_STATUS_INVALID_VALUE;
  if (handle == nullptr) {
    misuse(api, std::string("NULL ") + kind_name(kind), status);
    return nullptr;
  }
  Registry& reg = registry();
  std::unique_lock lock(reg.mu);
  const auto it = reg.objects.find(handle);
  if (it == reg.objects.end() || it->second->kind != kind || !it->second->live) {
    const bool destroyed = it != reg.objects.end() && it->second->kind == kind;
    lock.unlock();
    misuse(api,
           std::string(destroyed ? "destroyed " : "invalid ") + kind_name(kind) + " " +
               handle_text(handle),
           status);
    return nullptr;
  }
  return it->second;
}

cublasStatus_t destroy(const void* handle, Kind kind, std::string_view api) {
  Object* object = find(handle, kind, api);
  if (object == nullptr) {
    return kind == Kind::kHandle ? CUBLAS_STATUS_NOT_INITIALIZED : CUBLAS_STATUS_INVALID_VALUE;
  }
  Registry& reg = registry();
  std::lock_guard lock(reg.mu);
  object->live = false;
  return CUBLAS_STATUS_SUCCESS;
}

void put_value(Object* object, int id, std::uint64_t raw) {
  std::lock_guard lock(object->mu);
  object->values[id] = raw;
}

/// The attribute as a signed integer (4-byte values sign-extended, 1-byte values zero-extended).
std::int64_t value_of(Object* object, int id) {
  const AttrSpec* spec = find_spec(object->kind, id);
  std::uint64_t raw = spec != nullptr ? spec->fallback : 0;
  {
    std::lock_guard lock(object->mu);
    if (const auto it = object->values.find(id); it != object->values.end()) raw = it->second;
  }
  if (spec != nullptr && spec->size == 4) {
    return static_cast<std::int32_t>(static_cast<std::uint32_t>(raw));
  }
  return static_cast<std::int64_t>(raw);
}

cublasStatus_t set_attribute(const void* handle, Kind kind, const char* api, int attr,
                             const void* buf, std::size_t size) {
  Object* object = find(handle, kind, api);
  if (object == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  const AttrSpec* spec = find_spec(kind, attr);
  if (spec == nullptr) {
    return misuse(api, "unknown attribute " + std::to_string(attr), CUBLAS_STATUS_INVALID_VALUE);
  }
  if (buf == nullptr || size != spec->size) {
    return misuse(api,
                  "attribute " + std::to_string(attr) + " takes " + std::to_string(spec->size) +
                      " bytes, got " + std::to_string(size) + (buf == nullptr ? " (NULL buf)" : ""),
                  CUBLAS_STATUS_INVALID_VALUE);
  }
  std::uint64_t raw = 0;
  std::memcpy(&raw, buf, size);
  put_value(object, attr, raw);
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t get_attribute(const void* handle, Kind kind, const char* api, int attr, void* buf,
                             std::size_t size, std::size_t* size_written) {
  Object* object = find(handle, kind, api);
  if (object == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  const AttrSpec* spec = find_spec(kind, attr);
  if (spec == nullptr) {
    return misuse(api, "unknown attribute " + std::to_string(attr), CUBLAS_STATUS_INVALID_VALUE);
  }
  if (size == 0) {
    if (size_written == nullptr) {
      return misuse(api, "sizeInBytes is 0 and sizeWritten is NULL", CUBLAS_STATUS_INVALID_VALUE);
    }
    *size_written = spec->size;
    return CUBLAS_STATUS_SUCCESS;
  }
  if (buf == nullptr || size != spec->size) {
    return misuse(api,
                  "attribute " + std::to_string(attr) + " has " + std::to_string(spec->size) +
                      " bytes, buffer has " + std::to_string(size),
                  CUBLAS_STATUS_INVALID_VALUE);
  }
  std::uint64_t raw = spec->fallback;
  {
    std::lock_guard lock(object->mu);
    if (const auto it = object->values.find(attr); it != object->values.end()) raw = it->second;
  }
  std::memcpy(buf, &raw, size);
  if (size_written != nullptr) *size_written = size;
  return CUBLAS_STATUS_SUCCESS;
}

void init_desc(Object* object, cublasComputeType_t compute, cudaDataType_t scale) {
  put_value(object, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE, static_cast<std::uint32_t>(compute));
  put_value(object, CUBLASLT_MATMUL_DESC_SCALE_TYPE, static_cast<std::uint32_t>(scale));
}

void init_layout(Object* object, cudaDataType type, std::uint64_t rows, std::uint64_t cols,
                 std::int64_t ld) {
  put_value(object, CUBLASLT_MATRIX_LAYOUT_TYPE, static_cast<std::uint32_t>(type));
  put_value(object, CUBLASLT_MATRIX_LAYOUT_ROWS, rows);
  put_value(object, CUBLASLT_MATRIX_LAYOUT_COLS, cols);
  put_value(object, CUBLASLT_MATRIX_LAYOUT_LD, static_cast<std::uint64_t>(ld));
}

// ---- matmul shape ------------------------------------------------------------------------------

struct Layout {
  int type = 0;
  int order = 0;
  std::int64_t rows = 0, cols = 0, ld = 0, batch = 1;
};

Layout layout_of(Object* object) {
  Layout l;
  l.type = static_cast<int>(value_of(object, CUBLASLT_MATRIX_LAYOUT_TYPE));
  l.order = static_cast<int>(value_of(object, CUBLASLT_MATRIX_LAYOUT_ORDER));
  l.rows = value_of(object, CUBLASLT_MATRIX_LAYOUT_ROWS);
  l.cols = value_of(object, CUBLASLT_MATRIX_LAYOUT_COLS);
  l.ld = value_of(object, CUBLASLT_MATRIX_LAYOUT_LD);
  l.batch = value_of(object, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT);
  return l;
}

std::string dims(const Layout& l) { return std::to_string(l.rows) + "x" + std::to_string(l.cols); }

struct Matmul {
  Object* handle = nullptr;
  std::int64_t m = 0, n = 0, k = 0, batch = 1;
  int transa = 0, transb = 0;
  Layout a, b, c, d;
  int compute = 0;
  int scale = 0;
  std::uint32_t epilogue = CUBLASLT_EPILOGUE_DEFAULT;
};

/// Resolves the operands and derives (m, n, k, batch); CUBLAS_STATUS_SUCCESS or the error.
cublasStatus_t resolve(const char* api, cublasLtHandle_t handle, cublasLtMatmulDesc_t desc,
                       cublasLtMatrixLayout_t adesc, cublasLtMatrixLayout_t bdesc,
                       cublasLtMatrixLayout_t cdesc, cublasLtMatrixLayout_t ddesc, Matmul* out) {
  out->handle = find(handle, Kind::kHandle, api);
  if (out->handle == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  Object* d = find(desc, Kind::kMatmulDesc, api);
  if (d == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  Object* layouts[4] = {nullptr, nullptr, nullptr, nullptr};
  const cublasLtMatrixLayout_t given[4] = {adesc, bdesc, cdesc, ddesc};
  for (int i = 0; i < 4; ++i) {
    layouts[i] = find(given[i], Kind::kLayout, api);
    if (layouts[i] == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  }
  out->a = layout_of(layouts[0]);
  out->b = layout_of(layouts[1]);
  out->c = layout_of(layouts[2]);
  out->d = layout_of(layouts[3]);
  out->transa = static_cast<int>(value_of(d, CUBLASLT_MATMUL_DESC_TRANSA));
  out->transb = static_cast<int>(value_of(d, CUBLASLT_MATMUL_DESC_TRANSB));
  out->compute = static_cast<int>(value_of(d, CUBLASLT_MATMUL_DESC_COMPUTE_TYPE));
  out->scale = static_cast<int>(value_of(d, CUBLASLT_MATMUL_DESC_SCALE_TYPE));
  out->epilogue = static_cast<std::uint32_t>(value_of(d, CUBLASLT_MATMUL_DESC_EPILOGUE));
  if (libs::blas_op_text(out->transa) == nullptr || libs::blas_op_text(out->transb) == nullptr) {
    return misuse(api, "invalid TRANSA/TRANSB attribute", CUBLAS_STATUS_INVALID_VALUE);
  }
  const Layout& a = out->a;
  const Layout& b = out->b;
  out->m = out->transa == CUBLAS_OP_N ? a.rows : a.cols;
  out->k = out->transa == CUBLAS_OP_N ? a.cols : a.rows;
  const std::int64_t kb = out->transb == CUBLAS_OP_N ? b.rows : b.cols;
  out->n = out->transb == CUBLAS_OP_N ? b.cols : b.rows;
  const std::string shapes = "op(A) " + std::string(libs::blas_op_text(out->transa)) + " of " +
                             dims(a) + ", op(B) " + libs::blas_op_text(out->transb) + " of " +
                             dims(b) + ", C " + dims(out->c) + ", D " + dims(out->d);
  if (out->m < 0 || out->n < 0 || out->k < 0 || kb != out->k || out->c.rows != out->m ||
      out->c.cols != out->n || out->d.rows != out->m || out->d.cols != out->n) {
    return misuse(api, "inconsistent matrix shapes: " + shapes, CUBLAS_STATUS_INVALID_VALUE);
  }
  for (const Layout* l : {&out->a, &out->b, &out->c, &out->d}) {
    if ((l->order == CUBLASLT_ORDER_COL && l->ld < std::max<std::int64_t>(1, l->rows)) ||
        (l->order == CUBLASLT_ORDER_ROW && l->ld < std::max<std::int64_t>(1, l->cols))) {
      return misuse(api,
                    "leading dimension " + std::to_string(l->ld) + " too small for " + dims(*l),
                    CUBLAS_STATUS_INVALID_VALUE);
    }
    if (libs::cuda_dtype_name(l->type) == nullptr) {
      return misuse(api, "unknown cudaDataType " + std::to_string(l->type),
                    CUBLAS_STATUS_NOT_SUPPORTED);
    }
  }
  out->batch = std::max({out->a.batch, out->b.batch, out->c.batch, out->d.batch});
  for (const Layout* l : {&out->a, &out->b, &out->c, &out->d}) {
    if (l->batch < 1 || (l->batch != 1 && l->batch != out->batch)) {
      return misuse(api,
                    "inconsistent BATCH_COUNT attributes (A " + std::to_string(out->a.batch) +
                        ", B " + std::to_string(out->b.batch) + ", C " +
                        std::to_string(out->c.batch) + ", D " + std::to_string(out->d.batch) + ")",
                    CUBLAS_STATUS_INVALID_VALUE);
    }
  }
  if (libs::compute_type_name(out->compute) == nullptr) {
    return misuse(api, "unsupported compute type " + std::to_string(out->compute),
                  CUBLAS_STATUS_NOT_SUPPORTED);
  }
  return CUBLAS_STATUS_SUCCESS;
}

std::string epilogue_name(std::uint32_t epilogue) {
  switch (epilogue) {
    case CUBLASLT_EPILOGUE_DEFAULT:
      return "";
    case CUBLASLT_EPILOGUE_RELU:
      return "relu";
    case CUBLASLT_EPILOGUE_RELU_AUX:
      return "relu_aux";
    case CUBLASLT_EPILOGUE_BIAS:
      return "bias";
    case CUBLASLT_EPILOGUE_RELU_BIAS:
      return "relu_bias";
    case CUBLASLT_EPILOGUE_RELU_AUX_BIAS:
      return "relu_aux_bias";
    case CUBLASLT_EPILOGUE_DRELU:
      return "drelu";
    case CUBLASLT_EPILOGUE_DRELU_BGRAD:
      return "drelu_bgrad";
    case CUBLASLT_EPILOGUE_GELU:
      return "gelu";
    case CUBLASLT_EPILOGUE_GELU_AUX:
      return "gelu_aux";
    case CUBLASLT_EPILOGUE_GELU_BIAS:
      return "gelu_bias";
    case CUBLASLT_EPILOGUE_GELU_AUX_BIAS:
      return "gelu_aux_bias";
    case CUBLASLT_EPILOGUE_DGELU:
      return "dgelu";
    case CUBLASLT_EPILOGUE_DGELU_BGRAD:
      return "dgelu_bgrad";
    case CUBLASLT_EPILOGUE_BGRADA:
      return "bgrada";
    case CUBLASLT_EPILOGUE_BGRADB:
      return "bgradb";
    default:
      return "epilogue_" + std::to_string(epilogue);
  }
}

}  // namespace

// ===== library =================================================================================

PT_EXPORT cublasStatus_t cublasLtCreate(cublasLtHandle_t* light_handle) {
  if (light_handle == nullptr) {
    return misuse("cublasLtCreate", "lightHandle is NULL", CUBLAS_STATUS_INVALID_VALUE);
  }
  *light_handle = create<cublasLtHandle_t>(Kind::kHandle);
  return CUBLAS_STATUS_SUCCESS;
}

PT_EXPORT cublasStatus_t cublasLtDestroy(cublasLtHandle_t light_handle) {
  return destroy(light_handle, Kind::kHandle, "cublasLtDestroy");
}

PT_EXPORT const char* cublasLtGetStatusName(cublasStatus_t status) {
  return libs::blas_status_name(status);
}

PT_EXPORT const char* cublasLtGetStatusString(cublasStatus_t status) {
  return libs::blas_status_string(status);
}

PT_EXPORT size_t cublasLtGetVersion(void) { return CUBLAS_VERSION; }

PT_EXPORT size_t cublasLtGetCudartVersion(void) { return CUDART_VERSION; }

PT_EXPORT cublasStatus_t cublasLtGetProperty(libraryPropertyType type, int* value) {
  return static_cast<cublasStatus_t>(libs::library_property(
      "cublasLtGetProperty", type, value, CUBLAS_VER_MAJOR, CUBLAS_VER_MINOR, CUBLAS_VER_PATCH));
}

// Logging has nothing to report in the emulator: accepted and ignored.
PT_EXPORT cublasStatus_t cublasLtLoggerSetCallback(cublasLtLoggerCallback_t callback) {
  (void)callback;
  return CUBLAS_STATUS_SUCCESS;
}
PT_EXPORT cublasStatus_t cublasLtLoggerSetFile(FILE* file) {
  (void)file;
  return CUBLAS_STATUS_SUCCESS;
}
PT_EXPORT cublasStatus_t cublasLtLoggerOpenFile(const char* log_file) {
  (void)log_file;
  return CUBLAS_STATUS_SUCCESS;
}
PT_EXPORT cublasStatus_t cublasLtLoggerSetLevel(int level) {
  (void)level;
  return CUBLAS_STATUS_SUCCESS;
}
PT_EXPORT cublasStatus_t cublasLtLoggerSetMask(int mask) {
  (void)mask;
  return CUBLAS_STATUS_SUCCESS;
}
PT_EXPORT cublasStatus_t cublasLtLoggerForceDisable() { return CUBLAS_STATUS_SUCCESS; }

// ===== matmul descriptors ======================================================================

PT_EXPORT cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t* matmul_desc,
                                                  cublasComputeType_t compute_type,
                                                  cudaDataType_t scale_type) {
  if (matmul_desc == nullptr) {
    return misuse("cublasLtMatmulDescCreate", "matmulDesc is NULL", CUBLAS_STATUS_INVALID_VALUE);
  }
  auto desc = create<cublasLtMatmulDesc_t>(Kind::kMatmulDesc);
  init_desc(reinterpret_cast<Object*>(desc), compute_type, scale_type);
  *matmul_desc = desc;
  return CUBLAS_STATUS_SUCCESS;
}

PT_EXPORT cublasStatus_t cublasLtMatmulDescInit_internal(cublasLtMatmulDesc_t matmul_desc,
                                                         size_t size,
                                                         cublasComputeType_t compute_type,
                                                         cudaDataType_t scale_type) {
  if (matmul_desc == nullptr || size < sizeof(cublasLtMatmulDescOpaque_t)) {
    return misuse("cublasLtMatmulDescInit", "storage NULL or too small",
                  CUBLAS_STATUS_ALLOC_FAILED);
  }
  Object* object = register_object(matmul_desc, Kind::kMatmulDesc, new Object);
  init_desc(object, compute_type, scale_type);
  return CUBLAS_STATUS_SUCCESS;
}

PT_EXPORT cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t matmul_desc) {
  return destroy(matmul_desc, Kind::kMatmulDesc, "cublasLtMatmulDescDestroy");
}

PT_EXPORT cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t matmul_desc,
                                                        cublasLtMatmulDescAttributes_t attr,
                                                        const void* buf, size_t size) {
  return set_attribute(matmul_desc, Kind::kMatmulDesc, "cublasLtMatmulDescSetAttribute", attr, buf,
                       size);
}

PT_EXPORT cublasStatus_t cublasLtMatmulDescGetAttribute(cublasLtMatmulDesc_t matmul_desc,
                                                        cublasLtMatmulDescAttributes_t attr,
                                                        void* buf, size_t size,
                                                        size_t* size_written) {
  return get_attribute(matmul_desc, Kind::kMatmulDesc, "cublasLtMatmulDescGetAttribute", attr, buf,
                       size, size_written);
}

// ===== matrix layouts ==========================================================================

PT_EXPORT cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t* mat_layout,
                                                    cudaDataType type, uint64_t rows, uint64_t cols,
                                                    int64_t ld) {
  if (mat_layout == nullptr) {
    return misuse("cublasLtMatrixLayoutCreate", "matLayout is NULL", CUBLAS_STATUS_INVALID_VALUE);
  }
  auto layout = create<cublasLtMatrixLayout_t>(Kind::kLayout);
  init_layout(reinterpret_cast<Object*>(layout), type, rows, cols, ld);
  *mat_layout = layout;
  return CUBLAS_STATUS_SUCCESS;
}

PT_EXPORT cublasStatus_t cublasLtMatrixLayoutInit_internal(cublasLtMatrixLayout_t mat_layout,
                                                           size_t size, cudaDataType type,
                                                           uint64_t rows, uint64_t cols,
                                                           int64_t ld) {
  if (mat_layout == nullptr || size < sizeof(cublasLtMatrixLayoutOpaque_t)) {
    return misuse("cublasLtMatrixLayoutInit", "storage NULL or too small",
                  CUBLAS_STATUS_ALLOC_FAILED);
  }
  Object* object = register_object(mat_layout, Kind::kLayout, new Object);
  init_layout(object, type, rows, cols, ld);
  return CUBLAS_STATUS_SUCCESS;
}

PT_EXPORT cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t mat_layout) {
  return destroy(mat_layout, Kind::kLayout, "cublasLtMatrixLayoutDestroy");
}

PT_EXPORT cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t mat_layout,
                                                          cublasLtMatrixLayoutAttribute_t attr,
                                                          const void* buf, size_t size) {
  return set_attribute(mat_layout, Kind::kLayout, "cublasLtMatrixLayoutSetAttribute", attr, buf,
                       size);
}

PT_EXPORT cublasStatus_t cublasLtMatrixLayoutGetAttribute(cublasLtMatrixLayout_t mat_layout,
                                                          cublasLtMatrixLayoutAttribute_t attr,
                                                          void* buf, size_t size,
                                                          size_t* size_written) {
  return get_attribute(mat_layout, Kind::kLayout, "cublasLtMatrixLayoutGetAttribute", attr, buf,
                       size, size_written);
}

// ===== preferences =============================================================================

PT_EXPORT cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t* pref) {
  if (pref == nullptr) {
    return misuse("cublasLtMatmulPreferenceCreate", "pref is NULL", CUBLAS_STATUS_INVALID_VALUE);
  }
  *pref = create<cublasLtMatmulPreference_t>(Kind::kPreference);
  return CUBLAS_STATUS_SUCCESS;
}

PT_EXPORT cublasStatus_t cublasLtMatmulPreferenceInit_internal(cublasLtMatmulPreference_t pref,
                                                               size_t size) {
  if (pref == nullptr || size < sizeof(cublasLtMatmulPreferenceOpaque_t)) {
    return misuse("cublasLtMatmulPreferenceInit", "storage NULL or too small",
                  CUBLAS_STATUS_ALLOC_FAILED);
  }
  register_object(pref, Kind::kPreference, new Object);
  return CUBLAS_STATUS_SUCCESS;
}

PT_EXPORT cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref) {
  return destroy(pref, Kind::kPreference, "cublasLtMatmulPreferenceDestroy");
}

PT_EXPORT cublasStatus_t cublasLtMatmulPreferenceSetAttribute(
    cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, const void* buf,
    size_t size) {
  return set_attribute(pref, Kind::kPreference, "cublasLtMatmulPreferenceSetAttribute", attr, buf,
                       size);
}

PT_EXPORT cublasStatus_t cublasLtMatmulPreferenceGetAttribute(
    cublasLtMatmulPreference_t pref, cublasLtMatmulPreferenceAttributes_t attr, void* buf,
    size_t size, size_t* size_written) {
  return get_attribute(pref, Kind::kPreference, "cublasLtMatmulPreferenceGetAttribute", attr, buf,
                       size, size_written);
}

// ===== heuristics and matmul ===================================================================

PT_EXPORT cublasStatus_t cublasLtMatmulAlgoGetHeuristic(
    cublasLtHandle_t light_handle, cublasLtMatmulDesc_t operation_desc,
    cublasLtMatrixLayout_t adesc, cublasLtMatrixLayout_t bdesc, cublasLtMatrixLayout_t cdesc,
    cublasLtMatrixLayout_t ddesc, cublasLtMatmulPreference_t preference, int requested_algo_count,
    cublasLtMatmulHeuristicResult_t heuristic_results_array[], int* return_algo_count) {
  const char* api = "cublasLtMatmulAlgoGetHeuristic";
  if (requested_algo_count <= 0 || heuristic_results_array == nullptr ||
      return_algo_count == nullptr) {
    return misuse(api, "requestedAlgoCount <= 0 or NULL output", CUBLAS_STATUS_INVALID_VALUE);
  }
  *return_algo_count = 0;
  if (preference != nullptr && find(preference, Kind::kPreference, api) == nullptr) {
    return CUBLAS_STATUS_INVALID_VALUE;
  }
  Matmul mm;
  if (const cublasStatus_t status =
          resolve(api, light_handle, operation_desc, adesc, bdesc, cdesc, ddesc, &mm);
      status != CUBLAS_STATUS_SUCCESS) {
    return status;
  }
  // One algorithm that needs no workspace and fills the device once.
  cublasLtMatmulHeuristicResult_t& result = heuristic_results_array[0];
  std::memset(&result, 0, sizeof result);
  result.algo.data[0] = 0x5054454d554c5400ull;  // "PTEMULT": an emulator algorithm
  result.workspaceSize = 0;
  result.state = CUBLAS_STATUS_SUCCESS;
  result.wavesCount = 1.0f;
  *return_algo_count = 1;
  return CUBLAS_STATUS_SUCCESS;
}

PT_EXPORT cublasStatus_t cublasLtMatmul(cublasLtHandle_t light_handle,
                                        cublasLtMatmulDesc_t compute_desc, const void* alpha,
                                        const void* A, cublasLtMatrixLayout_t adesc, const void* B,
                                        cublasLtMatrixLayout_t bdesc, const void* beta,
                                        const void* C, cublasLtMatrixLayout_t cdesc, void* D,
                                        cublasLtMatrixLayout_t ddesc,
                                        const cublasLtMatmulAlgo_t* algo, void* workspace,
                                        size_t workspace_bytes, cudaStream_t stream) {
  (void)alpha, (void)A, (void)B, (void)beta, (void)C, (void)D, (void)algo, (void)workspace,
      (void)workspace_bytes;
  const std::int64_t start_ns = emu::now_ns();
  const char* api = "cublasLtMatmul";
  Matmul mm;
  if (const cublasStatus_t status =
          resolve(api, light_handle, compute_desc, adesc, bdesc, cdesc, ddesc, &mm);
      status != CUBLAS_STATUS_SUCCESS) {
    return status;
  }
  int stream_device = 0;
  const std::int64_t stream_id = emu::stream_id(stream, false, &stream_device);
  if (stream_id == emu::kInvalidStream) {
    return misuse(api, "invalid CUDA stream " + handle_text(stream),
                  CUBLAS_STATUS_EXECUTION_FAILED);
  }
  if (mm.m == 0 || mm.n == 0) return CUBLAS_STATUS_SUCCESS;  // nothing launched
  const std::string epilogue = epilogue_name(mm.epilogue);
  const char* scale = libs::cuda_dtype_name(mm.scale);
  libs::GemmRecord record;
  record.api = api;
  record.start_ns = start_ns;
  record.device = stream_device;  // the device the work runs on (the current one for NULL)
  record.stream = stream_id;
  record.m = mm.m;
  record.n = mm.n;
  record.k = mm.k;
  record.batch = mm.batch;
  record.transa = mm.transa;
  record.transb = mm.transb;
  record.dtype_a = mm.a.type;
  record.dtype_b = mm.b.type;
  record.dtype_c = mm.c.type;
  record.dtype_d = mm.d.type;
  record.compute = libs::compute_type_name(mm.compute);
  record.scale = scale != nullptr ? scale : "";
  record.epilogue = epilogue;
  libs::record_gemm(record);
  return CUBLAS_STATUS_SUCCESS;
}
