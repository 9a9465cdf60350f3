// cuBLASLt emulation for the interposer: handles, matmul descriptors, matrix layouts,
// preferences and matrix-transform descriptors keep their attributes (set/get round-trip with
// cuBLASLt's sizes and defaults); cublasLtMatmulAlgoGetHeuristic returns one plausible
// algorithm, and the algorithm API (ids, init, configuration, capabilities, check) offers four
// that run alike; cublasLtMatmul derives the GEMM shape from the layouts and the descriptor's
// transpose attributes and writes a `gemm` record, cublasLtMatrixTransform a memory-bound kernel
// sized by the bytes it reads and writes (docs/emulation-trace.md). Nothing is computed. Every
// other symbol libcublasLt.so.13 exports is a generated stub (cublas_nccl_stubs.cc) that reports
// the call as unsupported and returns CUBLAS_STATUS_NOT_SUPPORTED. Objects are found in a
// registry before use and never freed, so invalid or destroyed handles are reported
// (CUBLAS_STATUS_NOT_INITIALIZED for the cuBLASLt handle, CUBLAS_STATUS_INVALID_VALUE for
// descriptors), never dereferenced.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>

#pragma GCC visibility push(default)
#include <cublasLt.h>
#include <cuda_runtime_api.h>
#pragma GCC visibility pop

#include "interposer/cublas_common.h"
#include "interposer/cublas_nccl_util.h"
#include "interposer/cudart_internal.h"
#include "interposer/emulator.h"

namespace {

namespace emu = powertrain::emu;
namespace libs = powertrain::emu::libs;
using libs::handle_text;
using libs::misuse;

constexpr std::uint64_t kHeuristicAlgoMarker = 0x5054454d554c5400ull;  // "PTEMULT", id 0

enum class Kind { kHandle, kMatmulDesc, kLayout, kPreference, kTransformDesc, kEmulationDesc };

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
    case Kind::kTransformDesc:
      return "matrix transform descriptor";
    case Kind::kEmulationDesc:
      return "emulation descriptor";
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

// cublasLtMatrixTransformDescAttributes_t (SCALE_TYPE is set at creation).
constexpr AttrSpec kTransformAttrs[] = {
    {CUBLASLT_MATRIX_TRANSFORM_DESC_SCALE_TYPE, 4, 0},
    {CUBLASLT_MATRIX_TRANSFORM_DESC_POINTER_MODE, 4, CUBLASLT_POINTER_MODE_HOST},
    {CUBLASLT_MATRIX_TRANSFORM_DESC_TRANSA, 4, CUBLAS_OP_N},
    {CUBLASLT_MATRIX_TRANSFORM_DESC_TRANSB, 4, CUBLAS_OP_N},
};

// cublasLtEmulationDescAttributes_t (floating-point emulation of FP32/FP64 GEMMs, CUDA 13).
constexpr AttrSpec kEmulationAttrs[] = {
    {CUBLASLT_EMULATION_DESC_STRATEGY, 4, 0},
    {CUBLASLT_EMULATION_DESC_SPECIAL_VALUES_SUPPORT, 4, 0xffff},
    {CUBLASLT_EMULATION_DESC_FIXEDPOINT_MANTISSA_CONTROL, 4, 0},
    {CUBLASLT_EMULATION_DESC_FIXEDPOINT_MAX_MANTISSA_BIT_COUNT, 4, 0},
    {CUBLASLT_EMULATION_DESC_FIXEDPOINT_MANTISSA_BIT_OFFSET, 4, 0},
    {CUBLASLT_EMULATION_DESC_FIXEDPOINT_MANTISSA_BIT_COUNT_POINTER, 8, 0},
};

std::pair<const AttrSpec*, const AttrSpec*> specs(Kind kind) {
  switch (kind) {
    case Kind::kEmulationDesc:
      return {std::begin(kEmulationAttrs), std::end(kEmulationAttrs)};
    case Kind::kTransformDesc:
      return {std::begin(kTransformAttrs), std::end(kTransformAttrs)};
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
  // Algorithm 0 of cublasLtMatmulAlgoGetIds, with cublasLtMatmulAlgoInit's defaults.
  result.algo.data[0] = kHeuristicAlgoMarker;
  result.algo.data[1] = CUBLASLT_MATMUL_TILE_UNDEFINED;
  result.algo.data[2] = 1;  // CUBLASLT_ALGO_CONFIG_SPLITK_NUM
  result.algo.data[3] = CUBLASLT_REDUCTION_SCHEME_NONE;
  result.algo.data[6] = CUBLASLT_MATMUL_STAGES_UNDEFINED;
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

// ===== algorithms chosen by the caller (cuBLASLt samples' LtSgemmCustomFind, LtDgemmPresetAlgo) ==
// The emulator offers kAlgoCount algorithms for every type combination; all run alike (the GEMM is
// timed by its shape). An algorithm is kept in the caller's cublasLtMatmulAlgo_t: data[0] holds
// a marker and the id, data[1..] the configuration attributes, so copies of it stay valid.

namespace {

constexpr int kAlgoCount = 4;
constexpr std::uint64_t kAlgoMarker = kHeuristicAlgoMarker;  // + the id in the low byte
constexpr std::uint32_t kTileIds[] = {CUBLASLT_MATMUL_TILE_64x64, CUBLASLT_MATMUL_TILE_128x128,
                                      CUBLASLT_MATMUL_TILE_128x256, CUBLASLT_MATMUL_TILE_256x128};
constexpr std::uint32_t kStageIds[] = {CUBLASLT_MATMUL_STAGES_16x3, CUBLASLT_MATMUL_STAGES_32x3,
                                       CUBLASLT_MATMUL_STAGES_64x3};

// Configuration attribute → (slot in data[], size in bytes, default).
struct ConfigSlot {
  int slot;
  std::size_t size;
  std::uint64_t fallback;
};

bool config_slot(int attr, ConfigSlot* out) {
  switch (attr) {
    case CUBLASLT_ALGO_CONFIG_ID:
      *out = {0, 4, 0};
      return true;
    case CUBLASLT_ALGO_CONFIG_TILE_ID:
      *out = {1, 4, CUBLASLT_MATMUL_TILE_UNDEFINED};
      return true;
    case CUBLASLT_ALGO_CONFIG_SPLITK_NUM:
      *out = {2, 4, 1};
      return true;
    case CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME:
      *out = {3, 4, CUBLASLT_REDUCTION_SCHEME_NONE};
      return true;
    case CUBLASLT_ALGO_CONFIG_CTA_SWIZZLING:
      *out = {4, 4, 0};
      return true;
    case CUBLASLT_ALGO_CONFIG_CUSTOM_OPTION:
      *out = {5, 4, 0};
      return true;
    case CUBLASLT_ALGO_CONFIG_STAGES_ID:
      *out = {6, 4, CUBLASLT_MATMUL_STAGES_UNDEFINED};
      return true;
    case CUBLASLT_ALGO_CONFIG_INNER_SHAPE_ID:
      *out = {7, 2, 0};
      return true;
    case CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID:
      *out = {7, 2, 0};  // shares data[7]: inner shape in bits 0-15, cluster shape in 16-31
      return true;
    default:
      return false;
  }
}

std::atomic<size_t> g_heuristics_cache_capacity{8192};  // cuBLASLt's default entries

int shift_of(int attr) { return attr == CUBLASLT_ALGO_CONFIG_CLUSTER_SHAPE_ID ? 16 : 0; }

bool valid_algo(const cublasLtMatmulAlgo_t* algo) {
  return algo != nullptr && (algo->data[0] & ~0xffull) == kAlgoMarker &&
         static_cast<int>(algo->data[0] & 0xff) < kAlgoCount;
}

// The data types of a type combination are known to the emulator (as cublasLtMatmul checks).
cublasStatus_t check_types(const char* api, int compute, int scale, std::initializer_list<int> ab) {
  if (libs::compute_type_name(compute) == nullptr) {
    return misuse(api, "unsupported compute type " + std::to_string(compute),
                  CUBLAS_STATUS_NOT_SUPPORTED);
  }
  if (libs::cuda_dtype_name(scale) == nullptr) {
    return misuse(api, "unknown scale type " + std::to_string(scale), CUBLAS_STATUS_NOT_SUPPORTED);
  }
  for (int t : ab) {
    if (libs::cuda_dtype_name(t) == nullptr) {
      return misuse(api, "unknown cudaDataType " + std::to_string(t), CUBLAS_STATUS_NOT_SUPPORTED);
    }
  }
  return CUBLAS_STATUS_SUCCESS;
}

// Writes a capability: a scalar of `size` bytes, or an array (size_written reports the bytes
// needed when size_in_bytes is 0).
cublasStatus_t write_capability(const char* api, const void* value, std::size_t bytes, bool array,
                                void* buf, std::size_t size_in_bytes, std::size_t* size_written) {
  if (size_in_bytes == 0) {
    if (size_written == nullptr) {
      return misuse(api, "sizeInBytes is 0 and sizeWritten is NULL", CUBLAS_STATUS_INVALID_VALUE);
    }
    *size_written = bytes;
    return CUBLAS_STATUS_SUCCESS;
  }
  if (buf == nullptr || (array ? size_in_bytes < bytes : size_in_bytes != bytes)) {
    return misuse(api,
                  "the capability has " + std::to_string(bytes) + " bytes, buffer has " +
                      std::to_string(size_in_bytes),
                  CUBLAS_STATUS_INVALID_VALUE);
  }
  std::memcpy(buf, value, bytes);
  if (size_written != nullptr) *size_written = bytes;
  return CUBLAS_STATUS_SUCCESS;
}

}  // namespace

PT_EXPORT cublasStatus_t cublasLtMatmulAlgoGetIds(cublasLtHandle_t light_handle,
                                                  cublasComputeType_t compute_type,
                                                  cudaDataType_t scale_type, cudaDataType_t a_type,
                                                  cudaDataType_t b_type, cudaDataType_t c_type,
                                                  cudaDataType_t d_type, int requested_algo_count,
                                                  int algo_ids_array[], int* return_algo_count) {
  const char* api = "cublasLtMatmulAlgoGetIds";
  if (find(light_handle, Kind::kHandle, api) == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (requested_algo_count <= 0 || algo_ids_array == nullptr || return_algo_count == nullptr) {
    return misuse(api, "requestedAlgoCount <= 0 or NULL output", CUBLAS_STATUS_INVALID_VALUE);
  }
  if (const cublasStatus_t status =
          check_types(api, compute_type, scale_type, {a_type, b_type, c_type, d_type});
      status != CUBLAS_STATUS_SUCCESS) {
    return status;
  }
  const int count = std::min(requested_algo_count, kAlgoCount);
  for (int i = 0; i < count; ++i) algo_ids_array[i] = i;
  *return_algo_count = count;
  return CUBLAS_STATUS_SUCCESS;
}

PT_EXPORT cublasStatus_t cublasLtMatmulAlgoInit(cublasLtHandle_t light_handle,
                                                cublasComputeType_t compute_type,
                                                cudaDataType_t scale_type, cudaDataType_t a_type,
                                                cudaDataType_t b_type, cudaDataType_t c_type,
                                                cudaDataType_t d_type, int algo_id,
                                                cublasLtMatmulAlgo_t* algo) {
  const char* api = "cublasLtMatmulAlgoInit";
  if (find(light_handle, Kind::kHandle, api) == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (algo == nullptr || algo_id < 0 || algo_id >= kAlgoCount) {
    return misuse(api,
                  "algo is NULL or algoId " + std::to_string(algo_id) + " is not one of the " +
                      std::to_string(kAlgoCount) + " of cublasLtMatmulAlgoGetIds",
                  CUBLAS_STATUS_INVALID_VALUE);
  }
  if (const cublasStatus_t status =
          check_types(api, compute_type, scale_type, {a_type, b_type, c_type, d_type});
      status != CUBLAS_STATUS_SUCCESS) {
    return status;
  }
  std::memset(algo, 0, sizeof *algo);
  algo->data[0] = kAlgoMarker | static_cast<std::uint64_t>(algo_id);
  for (int attr : {CUBLASLT_ALGO_CONFIG_TILE_ID, CUBLASLT_ALGO_CONFIG_SPLITK_NUM,
                   CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME, CUBLASLT_ALGO_CONFIG_STAGES_ID}) {
    ConfigSlot slot;
    config_slot(attr, &slot);
    algo->data[slot.slot] = slot.fallback;
  }
  return CUBLAS_STATUS_SUCCESS;
}

PT_EXPORT cublasStatus_t cublasLtMatmulAlgoConfigSetAttribute(
    cublasLtMatmulAlgo_t* algo, cublasLtMatmulAlgoConfigAttributes_t attr, const void* buf,
    size_t size_in_bytes) {
  const char* api = "cublasLtMatmulAlgoConfigSetAttribute";
  if (!valid_algo(algo)) {
    return misuse(api, "algo was not initialized by cublasLtMatmulAlgoInit",
                  CUBLAS_STATUS_INVALID_VALUE);
  }
  ConfigSlot slot;
  if (!config_slot(attr, &slot) || attr == CUBLASLT_ALGO_CONFIG_ID) {
    return misuse(api, "unknown or read-only attribute " + std::to_string(attr),
                  CUBLAS_STATUS_INVALID_VALUE);
  }
  if (buf == nullptr || size_in_bytes != slot.size) {
    return misuse(api,
                  "attribute " + std::to_string(attr) + " takes " + std::to_string(slot.size) +
                      " bytes, got " + std::to_string(size_in_bytes),
                  CUBLAS_STATUS_INVALID_VALUE);
  }
  std::uint64_t value = 0;
  std::memcpy(&value, buf, size_in_bytes);
  if (slot.size == 2) {
    const int shift = shift_of(attr);
    algo->data[7] = (algo->data[7] & ~(0xffffull << shift)) | (value << shift);
  } else {
    algo->data[slot.slot] = value;
  }
  return CUBLAS_STATUS_SUCCESS;
}

PT_EXPORT cublasStatus_t cublasLtMatmulAlgoConfigGetAttribute(
    const cublasLtMatmulAlgo_t* algo, cublasLtMatmulAlgoConfigAttributes_t attr, void* buf,
    size_t size_in_bytes, size_t* size_written) {
  const char* api = "cublasLtMatmulAlgoConfigGetAttribute";
  if (!valid_algo(algo)) {
    return misuse(api, "algo was not initialized by cublasLtMatmulAlgoInit",
                  CUBLAS_STATUS_INVALID_VALUE);
  }
  ConfigSlot slot;
  if (!config_slot(attr, &slot)) {
    return misuse(api, "unknown attribute " + std::to_string(attr), CUBLAS_STATUS_INVALID_VALUE);
  }
  std::uint64_t value = algo->data[slot.slot];
  if (attr == CUBLASLT_ALGO_CONFIG_ID) value &= 0xff;
  if (slot.size == 2) value = (value >> shift_of(attr)) & 0xffff;
  return write_capability(api, &value, slot.size, false, buf, size_in_bytes, size_written);
}

PT_EXPORT cublasStatus_t cublasLtMatmulAlgoCapGetAttribute(const cublasLtMatmulAlgo_t* algo,
                                                           cublasLtMatmulAlgoCapAttributes_t attr,
                                                           void* buf, size_t size_in_bytes,
                                                           size_t* size_written) {
  const char* api = "cublasLtMatmulAlgoCapGetAttribute";
  if (!valid_algo(algo)) {
    return misuse(api, "algo was not initialized by cublasLtMatmulAlgoInit",
                  CUBLAS_STATUS_INVALID_VALUE);
  }
  const std::int32_t yes = 1, no = 0;
  const std::uint32_t reduction_mask = CUBLASLT_REDUCTION_SCHEME_MASK;
  const std::uint32_t pointer_modes =
      CUBLASLT_POINTER_MODE_MASK_HOST | CUBLASLT_POINTER_MODE_MASK_DEVICE;
  const std::uint32_t epilogues = CUBLASLT_EPILOGUE_RELU | CUBLASLT_EPILOGUE_BIAS |
                                  CUBLASLT_EPILOGUE_GELU | CUBLASLT_EPILOGUE_GELU_AUX;
  const std::uint64_t numerical = CUBLASLT_NUMERICAL_IMPL_FLAGS_FMA;
  const std::uint32_t alignment = 16;
  switch (attr) {
    case CUBLASLT_ALGO_CAP_SPLITK_SUPPORT:
    case CUBLASLT_ALGO_CAP_STRIDED_BATCH_SUPPORT:
    case CUBLASLT_ALGO_CAP_OUT_OF_PLACE_RESULT_SUPPORT:
      return write_capability(api, &yes, 4, false, buf, size_in_bytes, size_written);
    case CUBLASLT_ALGO_CAP_UPLO_SUPPORT:
    case CUBLASLT_ALGO_CAP_CUSTOM_OPTION_MAX:
    case CUBLASLT_ALGO_CAP_CUSTOM_MEMORY_ORDER:
    case CUBLASLT_ALGO_CAP_LD_NEGATIVE:
    case CUBLASLT_ALGO_CAP_POINTER_ARRAY_BATCH_SUPPORT:
    case CUBLASLT_ALGO_CAP_FLOATING_POINT_EMULATION_SUPPORT:
      return write_capability(api, &no, 4, false, buf, size_in_bytes, size_written);
    case CUBLASLT_ALGO_CAP_REDUCTION_SCHEME_MASK:
      return write_capability(api, &reduction_mask, 4, false, buf, size_in_bytes, size_written);
    case CUBLASLT_ALGO_CAP_CTA_SWIZZLING_SUPPORT:
      return write_capability(api, &yes, 4, false, buf, size_in_bytes, size_written);
    case CUBLASLT_ALGO_CAP_TILE_IDS:
      return write_capability(api, kTileIds, sizeof kTileIds, true, buf, size_in_bytes,
                              size_written);
    case CUBLASLT_ALGO_CAP_STAGES_IDS:
      return write_capability(api, kStageIds, sizeof kStageIds, true, buf, size_in_bytes,
                              size_written);
    case CUBLASLT_ALGO_CAP_POINTER_MODE_MASK:
      return write_capability(api, &pointer_modes, 4, false, buf, size_in_bytes, size_written);
    case CUBLASLT_ALGO_CAP_EPILOGUE_MASK:
      return write_capability(api, &epilogues, 4, false, buf, size_in_bytes, size_written);
    case CUBLASLT_ALGO_CAP_NUMERICAL_IMPL_FLAGS:
      return write_capability(api, &numerical, 8, false, buf, size_in_bytes, size_written);
    case CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_A_BYTES:
    case CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_B_BYTES:
    case CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_C_BYTES:
    case CUBLASLT_ALGO_CAP_MIN_ALIGNMENT_D_BYTES:
      return write_capability(api, &alignment, 4, false, buf, size_in_bytes, size_written);
    default:
      return misuse(api, "unknown capability " + std::to_string(attr), CUBLAS_STATUS_INVALID_VALUE);
  }
}

PT_EXPORT cublasStatus_t
cublasLtMatmulAlgoCheck(cublasLtHandle_t light_handle, cublasLtMatmulDesc_t operation_desc,
                        cublasLtMatrixLayout_t adesc, cublasLtMatrixLayout_t bdesc,
                        cublasLtMatrixLayout_t cdesc, cublasLtMatrixLayout_t ddesc,
                        const cublasLtMatmulAlgo_t* algo, cublasLtMatmulHeuristicResult_t* result) {
  const char* api = "cublasLtMatmulAlgoCheck";
  if (result == nullptr) return misuse(api, "result is NULL", CUBLAS_STATUS_INVALID_VALUE);
  if (!valid_algo(algo)) {
    return misuse(api, "algo was not initialized by cublasLtMatmulAlgoInit",
                  CUBLAS_STATUS_INVALID_VALUE);
  }
  Matmul mm;
  if (const cublasStatus_t status =
          resolve(api, light_handle, operation_desc, adesc, bdesc, cdesc, ddesc, &mm);
      status != CUBLAS_STATUS_SUCCESS) {
    return status;
  }
  const cublasLtMatmulAlgo_t copy = *algo;  // algo may point to result->algo
  std::memset(result, 0, sizeof *result);
  result->algo = copy;
  // Split-K with an out-of-place reduction needs a partial product per split.
  const auto splits = static_cast<std::int64_t>(static_cast<std::int32_t>(copy.data[2]));
  const bool workspace_reduction = copy.data[3] == CUBLASLT_REDUCTION_SCHEME_OUTPUT_TYPE ||
                                   copy.data[3] == CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
  result->workspaceSize =
      splits > 1 && workspace_reduction ? static_cast<size_t>(splits * mm.m * mm.n * 4) : 0;
  result->state = CUBLAS_STATUS_SUCCESS;
  result->wavesCount = 1.0f;
  return CUBLAS_STATUS_SUCCESS;
}

PT_EXPORT cublasStatus_t cublasLtHeuristicsCacheGetCapacity(size_t* capacity) {
  if (capacity == nullptr) {
    return misuse("cublasLtHeuristicsCacheGetCapacity", "capacity is NULL",
                  CUBLAS_STATUS_INVALID_VALUE);
  }
  *capacity = g_heuristics_cache_capacity.load();
  return CUBLAS_STATUS_SUCCESS;
}

// Kept and read back (there is no cache: the one heuristic result is immediate).
PT_EXPORT cublasStatus_t cublasLtHeuristicsCacheSetCapacity(size_t capacity) {
  g_heuristics_cache_capacity = capacity;
  return CUBLAS_STATUS_SUCCESS;
}

// ===== matrix transform (C = alpha·op(A) + beta·op(B), layouts and orders converted) ============

PT_EXPORT cublasStatus_t cublasLtMatrixTransformDescCreate(
    cublasLtMatrixTransformDesc_t* transform_desc, cudaDataType scale_type) {
  if (transform_desc == nullptr) {
    return misuse("cublasLtMatrixTransformDescCreate", "transformDesc is NULL",
                  CUBLAS_STATUS_INVALID_VALUE);
  }
  auto desc = create<cublasLtMatrixTransformDesc_t>(Kind::kTransformDesc);
  put_value(reinterpret_cast<Object*>(desc), CUBLASLT_MATRIX_TRANSFORM_DESC_SCALE_TYPE,
            static_cast<std::uint32_t>(scale_type));
  *transform_desc = desc;
  return CUBLAS_STATUS_SUCCESS;
}

PT_EXPORT cublasStatus_t cublasLtMatrixTransformDescInit_internal(
    cublasLtMatrixTransformDesc_t transform_desc, size_t size, cudaDataType scale_type) {
  if (transform_desc == nullptr || size < sizeof(cublasLtMatrixTransformDescOpaque_t)) {
    return misuse("cublasLtMatrixTransformDescInit_internal", "NULL or too small storage",
                  CUBLAS_STATUS_ALLOC_FAILED);
  }
  Object* object = register_object(transform_desc, Kind::kTransformDesc, new Object);
  put_value(object, CUBLASLT_MATRIX_TRANSFORM_DESC_SCALE_TYPE,
            static_cast<std::uint32_t>(scale_type));
  return CUBLAS_STATUS_SUCCESS;
}

PT_EXPORT cublasStatus_t
cublasLtMatrixTransformDescDestroy(cublasLtMatrixTransformDesc_t transform_desc) {
  return destroy(transform_desc, Kind::kTransformDesc, "cublasLtMatrixTransformDescDestroy");
}

PT_EXPORT cublasStatus_t cublasLtMatrixTransformDescSetAttribute(
    cublasLtMatrixTransformDesc_t transform_desc, cublasLtMatrixTransformDescAttributes_t attr,
    const void* buf, size_t size) {
  return set_attribute(transform_desc, Kind::kTransformDesc,
                       "cublasLtMatrixTransformDescSetAttribute", attr, buf, size);
}

PT_EXPORT cublasStatus_t cublasLtMatrixTransformDescGetAttribute(
    cublasLtMatrixTransformDesc_t transform_desc, cublasLtMatrixTransformDescAttributes_t attr,
    void* buf, size_t size, size_t* size_written) {
  return get_attribute(transform_desc, Kind::kTransformDesc,
                       "cublasLtMatrixTransformDescGetAttribute", attr, buf, size, size_written);
}

PT_EXPORT cublasStatus_t cublasLtMatrixTransform(
    cublasLtHandle_t light_handle, cublasLtMatrixTransformDesc_t transform_desc, const void* alpha,
    const void* A, cublasLtMatrixLayout_t adesc, const void* beta, const void* B,
    cublasLtMatrixLayout_t bdesc, void* C, cublasLtMatrixLayout_t cdesc, cudaStream_t stream) {
  (void)alpha, (void)beta;
  const std::int64_t start_ns = emu::now_ns();
  const char* api = "cublasLtMatrixTransform";
  if (find(light_handle, Kind::kHandle, api) == nullptr) return CUBLAS_STATUS_NOT_INITIALIZED;
  Object* desc = find(transform_desc, Kind::kTransformDesc, api);
  Object* c_object = find(cdesc, Kind::kLayout, api);
  if (desc == nullptr || c_object == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
  const Layout c = layout_of(c_object);
  const int transa = static_cast<int>(value_of(desc, CUBLASLT_MATRIX_TRANSFORM_DESC_TRANSA));
  const int transb = static_cast<int>(value_of(desc, CUBLASLT_MATRIX_TRANSFORM_DESC_TRANSB));
  // Each input present (a NULL matrix with its NULL layout is skipped) must give C's shape.
  std::int64_t bits = 0;
  const auto element = [](int type) {
    return static_cast<std::int64_t>(libs::cuda_dtype_bits(type));
  };
  for (const auto& [matrix, layout, trans, label] :
       {std::tuple{A, adesc, transa, "A"}, std::tuple{B, bdesc, transb, "B"}}) {
    if (matrix == nullptr) continue;
    Object* o = find(layout, Kind::kLayout, api);
    if (o == nullptr) return CUBLAS_STATUS_INVALID_VALUE;
    const Layout l = layout_of(o);
    const std::int64_t rows = trans == CUBLAS_OP_N ? l.rows : l.cols;
    const std::int64_t cols = trans == CUBLAS_OP_N ? l.cols : l.rows;
    if (rows != c.rows || cols != c.cols || element(l.type) == 0) {
      return misuse(api,
                    std::string("op(") + label + ") is " + std::to_string(rows) + "x" +
                        std::to_string(cols) + " (" + label + " " + dims(l) +
                        (trans == CUBLAS_OP_N ? "" : ", transposed") + "), C is " + dims(c) +
                        (element(l.type) == 0 ? "; unknown data type" : ""),
                    CUBLAS_STATUS_INVALID_VALUE);
    }
    bits += l.rows * l.cols * std::max<std::int64_t>(l.batch, 1) * element(l.type);
  }
  if (C == nullptr || element(c.type) == 0) {
    return misuse(api, "C is NULL or its type is unknown", CUBLAS_STATUS_INVALID_VALUE);
  }
  bits += c.rows * c.cols * std::max<std::int64_t>(c.batch, 1) * element(c.type);
  const std::int64_t bytes = (bits + 7) / 8;
  const std::string name =
      std::string("cublasLt_matrix_transform_") + libs::cuda_dtype_name(c.type);
  if (!powertrain::emu::detail::append_sized_kernel(name, static_cast<std::size_t>(bytes), stream,
                                                    api, start_ns)) {
    return CUBLAS_STATUS_EXECUTION_FAILED;
  }
  return CUBLAS_STATUS_SUCCESS;
}

// ===== floating-point emulation descriptors (kept; the GEMM is timed by its declared types) ======

PT_EXPORT cublasStatus_t cublasLtEmulationDescCreate(cublasLtEmulationDesc_t* emulation_desc) {
  if (emulation_desc == nullptr) {
    return misuse("cublasLtEmulationDescCreate", "emulationDesc is NULL",
                  CUBLAS_STATUS_INVALID_VALUE);
  }
  *emulation_desc = create<cublasLtEmulationDesc_t>(Kind::kEmulationDesc);
  return CUBLAS_STATUS_SUCCESS;
}

PT_EXPORT cublasStatus_t cublasLtEmulationDescInit_internal(cublasLtEmulationDesc_t emulation_desc,
                                                            size_t size) {
  if (emulation_desc == nullptr || size < sizeof(cublasLtEmulationDescOpaque_t)) {
    return misuse("cublasLtEmulationDescInit_internal", "NULL or too small storage",
                  CUBLAS_STATUS_ALLOC_FAILED);
  }
  register_object(emulation_desc, Kind::kEmulationDesc, new Object);
  return CUBLAS_STATUS_SUCCESS;
}

PT_EXPORT cublasStatus_t cublasLtEmulationDescDestroy(cublasLtEmulationDesc_t emulation_desc) {
  return destroy(emulation_desc, Kind::kEmulationDesc, "cublasLtEmulationDescDestroy");
}

PT_EXPORT cublasStatus_t cublasLtEmulationDescSetAttribute(cublasLtEmulationDesc_t emulation_desc,
                                                           cublasLtEmulationDescAttributes_t attr,
                                                           const void* buf, size_t size) {
  return set_attribute(emulation_desc, Kind::kEmulationDesc, "cublasLtEmulationDescSetAttribute",
                       attr, buf, size);
}

PT_EXPORT cublasStatus_t cublasLtEmulationDescGetAttribute(cublasLtEmulationDesc_t emulation_desc,
                                                           cublasLtEmulationDescAttributes_t attr,
                                                           void* buf, size_t size,
                                                           size_t* size_written) {
  return get_attribute(emulation_desc, Kind::kEmulationDesc, "cublasLtEmulationDescGetAttribute",
                       attr, buf, size, size_written);
}
