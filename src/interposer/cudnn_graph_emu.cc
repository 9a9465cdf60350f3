// cuDNN's backend (graph) API on the emulated devices: what cudnn-frontend, PyTorch's cuDNN SDPA
// and convolution paths and NVIDIA's graph samples call. Descriptors are generic attribute stores
// (cudnnBackendSetAttribute keeps the bytes; cudnnBackendGetAttribute returns them), checked at
// cudnnBackendFinalize: tensors (type, dimensions, strides, unique id), matmul and convolution
// operations (shapes must agree), pointwise and reduction operations, operation graphs, engine
// heuristics (one engine, no workspace), engine configs, execution plans and variant packs.
// Convolution backward data/filter, normalization forward/backward (layer, RMS, batch, ...) and
// the fused SDPA forward/backward nodes are checked and recorded too. An operation graph with any
// other operation (resampling, RNG, reshape, MoE, ...) fails to finalize with
// CUDNN_STATUS_NOT_SUPPORTED and is reported by name
// ("cudnnBackendFinalize(operation graph with CUDNN_BACKEND_OPERATION_..._DESCRIPTOR)").
//
// cudnnBackendExecute checks that every non-virtual tensor has device memory in the variant pack
// and records one `dnn_graph` record (the operations with shapes and dtypes, FLOPs and bytes),
// then the graph's work as the GEMM estimator sees it: one `gemm` record per matmul and per
// convolution (as its implicit GEMM, like the legacy API) with the FLOPs of that operation and,
// in `bytes`, only the bytes of its non-virtual tensors — a fused graph keeps its intermediates
// on chip, so a fused attention (Q·Kᵀ, scale, softmax, ·V) moves Q, K, V and O once, as flash
// attention does. The non-virtual tensors of the pointwise and reduction operations (a bias, a
// fused output) are added to the last matmul/convolution (the epilogue); a graph of pointwise and
// reduction operations only is one memory-bound kernel cudnn_graph_pointwise_<dtype>.
// FLOPs: matmul 2·batch·m·n·k; convolution 2·N·K·Πout·(C/g)·Πfilter; pointwise one per output
// element and reduction one per input element (counted in the dnn_graph record only).
#include <cudnn.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "interposer/cudart_internal.h"
#include "interposer/cudnn_dtype.h"
#include "interposer/trace_schema.h"

namespace trace_schema = powertrain::trace_schema;

namespace powertrain::emu::detail {

bool cudnn_handle_stream(const void* handle, cudaStream_t* stream);  // cudnn_emu.cc

namespace {

struct Attr {
  cudnnBackendAttributeType_t type = CUDNN_TYPE_INT64;
  std::int64_t count = 0;
  std::vector<unsigned char> data;
};

struct Desc {
  cudnnBackendDescriptorType_t type = CUDNN_BACKEND_TENSOR_DESCRIPTOR;
  bool live = true;
  bool finalized = false;
  std::map<int, Attr> attrs;
  std::int64_t graph_id = 0;  // operation graphs: numbered at finalize
};

struct GraphState {
  std::mutex mutex;
  std::unordered_set<const Desc*> descs;  // every descriptor ever created (never freed)
  std::int64_t next_graph = 1;
};

GraphState& gs() {
  static GraphState* s = new GraphState;  // never destroyed
  return *s;
}

std::size_t element_size(cudnnBackendAttributeType_t type) {
  switch (type) {
    case CUDNN_TYPE_HANDLE:
    case CUDNN_TYPE_VOID_PTR:
    case CUDNN_TYPE_BACKEND_DESCRIPTOR:
      return sizeof(void*);
    case CUDNN_TYPE_INT64:
    case CUDNN_TYPE_DOUBLE:
      return 8;
    case CUDNN_TYPE_BOOLEAN:
      return sizeof(bool);
    case CUDNN_TYPE_CHAR:
      return 1;
    case CUDNN_TYPE_FRACTION:
      return sizeof(cudnnFraction_t);
    default:
      return 4;  // float, int32 and every enum
  }
}

// The live descriptor behind a handle (caller holds the mutex), or nullptr.
Desc* find(const void* handle) {
  const auto* d = static_cast<const Desc*>(handle);
  return gs().descs.count(d) > 0 && d->live ? const_cast<Desc*>(d) : nullptr;
}

// Any descriptor ever created, destroyed or not (caller holds the mutex): a finalized descriptor
// keeps what it was built from, as cuDNN copies it, so destroying a tensor after finalizing its
// operation changes nothing.
const Desc* find_any(const void* handle) {
  const auto* d = static_cast<const Desc*>(handle);
  return gs().descs.count(d) > 0 ? d : nullptr;
}

const char* type_name(cudnnBackendDescriptorType_t t) {
  switch (t) {
#define PT_NAME(x) \
  case x:          \
    return #x;
    PT_NAME(CUDNN_BACKEND_POINTWISE_DESCRIPTOR)
    PT_NAME(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR)
    PT_NAME(CUDNN_BACKEND_ENGINE_DESCRIPTOR)
    PT_NAME(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR)
    PT_NAME(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR)
    PT_NAME(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR)
    PT_NAME(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR)
    PT_NAME(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR)
    PT_NAME(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR)
    PT_NAME(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR)
    PT_NAME(CUDNN_BACKEND_OPERATION_GEN_STATS_DESCRIPTOR)
    PT_NAME(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR)
    PT_NAME(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR)
    PT_NAME(CUDNN_BACKEND_TENSOR_DESCRIPTOR)
    PT_NAME(CUDNN_BACKEND_MATMUL_DESCRIPTOR)
    PT_NAME(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR)
    PT_NAME(CUDNN_BACKEND_REDUCTION_DESCRIPTOR)
    PT_NAME(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR)
    PT_NAME(CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR)
    PT_NAME(CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR)
    PT_NAME(CUDNN_BACKEND_OPERATION_RESAMPLE_FWD_DESCRIPTOR)
    PT_NAME(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR)
    PT_NAME(CUDNN_BACKEND_OPERATION_RNG_DESCRIPTOR)
    PT_NAME(CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR)
    PT_NAME(CUDNN_BACKEND_OPERATION_SDPA_BWD_DESCRIPTOR)
#undef PT_NAME
    default:
      return nullptr;
  }
}

std::string describe_type(cudnnBackendDescriptorType_t t) {
  const char* name = type_name(t);
  return name != nullptr ? std::string(name)
                         : "backend descriptor type " + std::to_string(static_cast<int>(t));
}

const char* dtype_name(std::int64_t t) {
  const char* name = cudnn_dtype_name(t);
  return name != nullptr ? name : "unknown";
}

std::int64_t dtype_bytes(std::int64_t t) { return cudnn_dtype_bytes(t); }

// ---- attribute access (caller holds the mutex) ---------------------------------------------

const Attr* attr(const Desc& d, int name) {
  const auto it = d.attrs.find(name);
  return it == d.attrs.end() ? nullptr : &it->second;
}

// Integer-valued attributes (int64, int32, enums, booleans); empty for other element types.
std::vector<std::int64_t> int64s(const Desc& d, int name) {
  std::vector<std::int64_t> out;
  const Attr* a = attr(d, name);
  if (a == nullptr || a->type == CUDNN_TYPE_FLOAT || a->type == CUDNN_TYPE_DOUBLE) return out;
  const std::size_t size = element_size(a->type);
  for (std::int64_t i = 0; i < a->count; ++i) {
    const unsigned char* at = a->data.data() + i * size;
    if (size == 8) {
      std::int64_t v = 0;
      std::memcpy(&v, at, 8);
      out.push_back(v);
    } else if (size == 4) {
      std::int32_t v = 0;
      std::memcpy(&v, at, 4);
      out.push_back(v);
    } else if (size == 1) {
      out.push_back(*at);
    } else {
      return {};
    }
  }
  return out;
}

// Saturating arithmetic for FLOP and byte counts of absurd shapes (never signed overflow).
std::int64_t mul(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}
std::int64_t add(std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  return __builtin_add_overflow(a, b, &r) ? INT64_MAX : r;
}

bool one_int(const Desc& d, int name, std::int64_t* out) {
  const std::vector<std::int64_t> v = int64s(d, name);
  if (v.empty()) return false;
  *out = v[0];
  return true;
}

bool boolean(const Desc& d, int name) {
  const Attr* a = attr(d, name);
  return a != nullptr && a->type == CUDNN_TYPE_BOOLEAN && a->count > 0 && a->data[0] != 0;
}

std::vector<void*> pointers(const Desc& d, int name) {
  std::vector<void*> out;
  const Attr* a = attr(d, name);
  if (a == nullptr || element_size(a->type) != sizeof(void*)) return out;
  out.resize(static_cast<std::size_t>(a->count));
  if (a->count > 0) std::memcpy(out.data(), a->data.data(), a->count * sizeof(void*));
  return out;
}

// The finalized descriptor of one descriptor-valued attribute of type `type`, or nullptr.
const Desc* child(const Desc& d, int name, cudnnBackendDescriptorType_t type) {
  const std::vector<void*> v = pointers(d, name);
  if (v.size() != 1) return nullptr;
  const Desc* c = find_any(v[0]);
  return c != nullptr && c->finalized && c->type == type ? c : nullptr;
}

struct Tensor {
  std::int64_t uid = 0;
  std::int64_t dtype = 0;
  std::vector<std::int64_t> dims, strides;
  bool is_virtual = false;
  bool by_value = false;

  std::int64_t elements() const {
    std::int64_t n = 1;
    for (std::int64_t d : dims) n = mul(n, d);
    return n;
  }
  // Bytes spanned in memory (strided: the farthest element + 1).
  std::int64_t span_bytes() const {
    std::int64_t last = 0;
    for (std::size_t i = 0; i < dims.size() && i < strides.size(); ++i) {
      last = add(last, mul(dims[i] - 1, strides[i]));
    }
    return mul(add(last, 1), dtype_bytes(dtype));
  }
  std::int64_t bytes() const { return mul(elements(), dtype_bytes(dtype)); }
};

Tensor tensor_of(const Desc& d) {
  Tensor t;
  one_int(d, CUDNN_ATTR_TENSOR_UNIQUE_ID, &t.uid);
  one_int(d, CUDNN_ATTR_TENSOR_DATA_TYPE, &t.dtype);
  t.dims = int64s(d, CUDNN_ATTR_TENSOR_DIMENSIONS);
  t.strides = int64s(d, CUDNN_ATTR_TENSOR_STRIDES);
  t.is_virtual = boolean(d, CUDNN_ATTR_TENSOR_IS_VIRTUAL);
  t.by_value = boolean(d, CUDNN_ATTR_TENSOR_IS_BY_VALUE);
  return t;
}

std::string dims_json(const std::vector<std::int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) {
    if (i > 0) s += ',';
    s += std::to_string(v[i]);
  }
  s += ']';
  return s;
}

// ---- finalize checks -------------------------------------------------------------------------

cudnnStatus_t bad(const std::string& what) {
  report_misuse("cudnnBackendFinalize", what);
  return CUDNN_STATUS_BAD_PARAM;
}

cudnnStatus_t finalize_tensor(const Desc& d) {
  const Tensor t = tensor_of(d);
  if (attr(d, CUDNN_ATTR_TENSOR_DATA_TYPE) == nullptr ||
      attr(d, CUDNN_ATTR_TENSOR_UNIQUE_ID) == nullptr) {
    return bad("tensor without data type or unique id");
  }
  if (t.dims.empty() || t.dims.size() > 12 || t.dims.size() != t.strides.size()) {
    return bad("tensor " + std::to_string(t.uid) + " has " + std::to_string(t.dims.size()) +
               " dimensions and " + std::to_string(t.strides.size()) + " strides");
  }
  std::int64_t elements = 1;
  for (std::size_t i = 0; i < t.dims.size(); ++i) {
    if (t.dims[i] < 1 || t.strides[i] < 0 ||
        __builtin_mul_overflow(elements, t.dims[i], &elements) ||
        elements > (std::int64_t{1} << 48) || t.strides[i] > (std::int64_t{1} << 48)) {
      return bad("tensor " + std::to_string(t.uid) + " has invalid dimensions " +
                 dims_json(t.dims) + " or strides " + dims_json(t.strides));
    }
  }
  return CUDNN_STATUS_SUCCESS;
}

const Desc* tensor_child(const Desc& d, int name) {
  return child(d, name, CUDNN_BACKEND_TENSOR_DESCRIPTOR);
}

// A [.., m, k] x B [.., k, n] = C [.., m, n], batch dimensions broadcast.
cudnnStatus_t finalize_matmul(const Desc& d) {
  const Desc* da = tensor_child(d, CUDNN_ATTR_OPERATION_MATMUL_ADESC);
  const Desc* db = tensor_child(d, CUDNN_ATTR_OPERATION_MATMUL_BDESC);
  const Desc* dc = tensor_child(d, CUDNN_ATTR_OPERATION_MATMUL_CDESC);
  if (da == nullptr || db == nullptr || dc == nullptr ||
      child(d, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_BACKEND_MATMUL_DESCRIPTOR) == nullptr) {
    return bad("matmul operation without finalized A, B, C tensors and matmul descriptor");
  }
  const Tensor a = tensor_of(*da), b = tensor_of(*db), c = tensor_of(*dc);
  const std::size_t r = c.dims.size();
  bool ok = r >= 2 && a.dims.size() == r && b.dims.size() == r;
  for (std::size_t i = 0; ok && i + 2 < r; ++i) {
    ok = (a.dims[i] == c.dims[i] || a.dims[i] == 1) && (b.dims[i] == c.dims[i] || b.dims[i] == 1);
  }
  ok = ok && a.dims[r - 2] == c.dims[r - 2] && b.dims[r - 1] == c.dims[r - 1] &&
       a.dims[r - 1] == b.dims[r - 2];
  if (!ok) {
    return bad("matmul shapes do not agree: A " + dims_json(a.dims) + " x B " + dims_json(b.dims) +
               " = C " + dims_json(c.dims));
  }
  return CUDNN_STATUS_SUCCESS;
}

struct ConvShape {
  Tensor x, w, y;  // backward data: x = dX, y = dY; backward filter: w = dW, y = dY
  std::vector<std::int64_t> pre, post, stride, dilation;
  cudnnBackendDescriptorType_t direction = CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR;
};

bool is_convolution(cudnnBackendDescriptorType_t t) {
  return t == CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR ||
         t == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR ||
         t == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR;
}

// The X, W, Y tensors and convolution descriptor of a forward, backward-data or backward-filter
// operation (the gradients stand in for the tensor they have the shape of).
bool conv_shape(const Desc& d, ConvShape* s) {
  int x = CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
      w = CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
      y = CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
      c = CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC;
  if (d.type == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR) {
    x = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
    w = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W;
    y = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY;
    c = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC;
  } else if (d.type == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR) {
    x = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X;
    w = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW;
    y = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY;
    c = CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC;
  }
  s->direction = d.type;
  const Desc* dx = tensor_child(d, x);
  const Desc* dw = tensor_child(d, w);
  const Desc* dy = tensor_child(d, y);
  const Desc* conv = child(d, c, CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  if (dx == nullptr || dw == nullptr || dy == nullptr || conv == nullptr) return false;
  s->x = tensor_of(*dx), s->w = tensor_of(*dw), s->y = tensor_of(*dy);
  s->pre = int64s(*conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS);
  s->post = int64s(*conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS);
  s->stride = int64s(*conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES);
  s->dilation = int64s(*conv, CUDNN_ATTR_CONVOLUTION_DILATIONS);
  return true;
}

cudnnStatus_t finalize_conv(const Desc& d) {
  ConvShape s;
  if (!conv_shape(d, &s)) {
    return bad("convolution without finalized X, W, Y tensors and convolution descriptor");
  }
  const std::size_t r = s.x.dims.size();
  const std::size_t spatial = r >= 2 ? r - 2 : 0;
  bool ok = r >= 3 && s.w.dims.size() == r && s.y.dims.size() == r && s.pre.size() == spatial &&
            s.post.size() == spatial && s.stride.size() == spatial &&
            s.dilation.size() == spatial && s.y.dims[0] == s.x.dims[0] &&
            s.y.dims[1] == s.w.dims[0] && s.w.dims[1] > 0 && s.x.dims[1] % s.w.dims[1] == 0;
  for (std::size_t i = 0; ok && i < spatial; ++i) {
    if (s.stride[i] < 1 || s.dilation[i] < 1) {
      ok = false;
      break;
    }
    const std::int64_t effective = (s.w.dims[2 + i] - 1) * s.dilation[i] + 1;
    const std::int64_t out = (s.x.dims[2 + i] + s.pre[i] + s.post[i] - effective) / s.stride[i] + 1;
    ok = out == s.y.dims[2 + i];
  }
  if (!ok) {
    return bad("convolution shapes do not agree: X " + dims_json(s.x.dims) + ", W " +
               dims_json(s.w.dims) + ", Y " + dims_json(s.y.dims));
  }
  return CUDNN_STATUS_SUCCESS;
}

// Tensors an operation reads and writes (descriptor attributes that name tensors).
std::vector<int> tensor_attrs(cudnnBackendDescriptorType_t type) {
  switch (type) {
    case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR:
      return {CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_ATTR_OPERATION_MATMUL_BDESC,
              CUDNN_ATTR_OPERATION_MATMUL_CDESC};
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
      return {CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
              CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y};
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
      return {CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_ATTR_OPERATION_POINTWISE_BDESC,
              CUDNN_ATTR_OPERATION_POINTWISE_TDESC, CUDNN_ATTR_OPERATION_POINTWISE_YDESC};
    case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR:
      return {CUDNN_ATTR_OPERATION_REDUCTION_XDESC, CUDNN_ATTR_OPERATION_REDUCTION_YDESC};
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
      return {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX};
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR:
      return {CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY,
              CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW};
    // Normalizations: X first, the output last (epsilon and the momentum are by-value scalars).
    case CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR:
      return {CUDNN_ATTR_OPERATION_NORM_FWD_XDESC,
              CUDNN_ATTR_OPERATION_NORM_FWD_SCALE_DESC,
              CUDNN_ATTR_OPERATION_NORM_FWD_BIAS_DESC,
              CUDNN_ATTR_OPERATION_NORM_FWD_MEAN_DESC,
              CUDNN_ATTR_OPERATION_NORM_FWD_INV_VARIANCE_DESC,
              CUDNN_ATTR_OPERATION_NORM_FWD_INPUT_RUNNING_MEAN_DESC,
              CUDNN_ATTR_OPERATION_NORM_FWD_INPUT_RUNNING_VAR_DESC,
              CUDNN_ATTR_OPERATION_NORM_FWD_OUTPUT_RUNNING_MEAN_DESC,
              CUDNN_ATTR_OPERATION_NORM_FWD_OUTPUT_RUNNING_VAR_DESC,
              CUDNN_ATTR_OPERATION_NORM_FWD_YDESC};
    case CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR:
      return {CUDNN_ATTR_OPERATION_NORM_BWD_XDESC,
              CUDNN_ATTR_OPERATION_NORM_BWD_DYDESC,
              CUDNN_ATTR_OPERATION_NORM_BWD_SCALE_DESC,
              CUDNN_ATTR_OPERATION_NORM_BWD_MEAN_DESC,
              CUDNN_ATTR_OPERATION_NORM_BWD_INV_VARIANCE_DESC,
              CUDNN_ATTR_OPERATION_NORM_BWD_DSCALE_DESC,
              CUDNN_ATTR_OPERATION_NORM_BWD_DBIAS_DESC,
              CUDNN_ATTR_OPERATION_NORM_BWD_DXDESC};
    // Fused attention nodes: Q, K, V, O first (the scale is a by-value scalar).
    case CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR:
      return {CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC, CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC,
              CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC, CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC,
              CUDNN_ATTR_OPERATION_SDPA_FWD_STATSDESC};
    case CUDNN_BACKEND_OPERATION_SDPA_BWD_DESCRIPTOR:
      return {CUDNN_ATTR_OPERATION_SDPA_BWD_QDESC,   CUDNN_ATTR_OPERATION_SDPA_BWD_KDESC,
              CUDNN_ATTR_OPERATION_SDPA_BWD_VDESC,   CUDNN_ATTR_OPERATION_SDPA_BWD_ODESC,
              CUDNN_ATTR_OPERATION_SDPA_BWD_DODDESC, CUDNN_ATTR_OPERATION_SDPA_BWD_STATSDESC,
              CUDNN_ATTR_OPERATION_SDPA_BWD_DQDESC,  CUDNN_ATTR_OPERATION_SDPA_BWD_DKDESC,
              CUDNN_ATTR_OPERATION_SDPA_BWD_DVDESC};
    default:
      return {};
  }
}

bool is_norm(cudnnBackendDescriptorType_t t) {
  return t == CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR ||
         t == CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR;
}
bool is_sdpa(cudnnBackendDescriptorType_t t) {
  return t == CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR ||
         t == CUDNN_BACKEND_OPERATION_SDPA_BWD_DESCRIPTOR;
}

// A normalization: X and its output (Y forward; dY and dX backward) of the same shape.
cudnnStatus_t finalize_norm(const Desc& d) {
  const bool forward = d.type == CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR;
  const Desc* dx = tensor_child(
      d, forward ? CUDNN_ATTR_OPERATION_NORM_FWD_XDESC : CUDNN_ATTR_OPERATION_NORM_BWD_XDESC);
  const Desc* dy = tensor_child(
      d, forward ? CUDNN_ATTR_OPERATION_NORM_FWD_YDESC : CUDNN_ATTR_OPERATION_NORM_BWD_DXDESC);
  const Desc* ddy = forward ? dy : tensor_child(d, CUDNN_ATTR_OPERATION_NORM_BWD_DYDESC);
  std::int64_t mode = 0;
  if (dx == nullptr || dy == nullptr || ddy == nullptr ||
      !one_int(d, forward ? CUDNN_ATTR_OPERATION_NORM_FWD_MODE : CUDNN_ATTR_OPERATION_NORM_BWD_MODE,
               &mode)) {
    return bad(std::string("normalization ") + (forward ? "forward" : "backward") +
               " without a mode and finalized X and " + (forward ? "Y" : "dY, dX") + " tensors");
  }
  const Tensor x = tensor_of(*dx), y = tensor_of(*dy), g = tensor_of(*ddy);
  if (x.dims != y.dims || x.dims != g.dims) {
    return bad("normalization shapes do not agree: X " + dims_json(x.dims) + ", output " +
               dims_json(y.dims));
  }
  return CUDNN_STATUS_SUCCESS;
}

struct SdpaShape {
  Tensor q, k, v, o;
  bool forward = true;
};

bool sdpa_shape(const Desc& d, SdpaShape* s) {
  s->forward = d.type == CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR;
  const int names[4] = {
      s->forward ? CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC : CUDNN_ATTR_OPERATION_SDPA_BWD_QDESC,
      s->forward ? CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC : CUDNN_ATTR_OPERATION_SDPA_BWD_KDESC,
      s->forward ? CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC : CUDNN_ATTR_OPERATION_SDPA_BWD_VDESC,
      s->forward ? CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC : CUDNN_ATTR_OPERATION_SDPA_BWD_ODESC};
  Tensor* out[4] = {&s->q, &s->k, &s->v, &s->o};
  for (int i = 0; i < 4; ++i) {
    const Desc* t = tensor_child(d, names[i]);
    if (t == nullptr) return false;
    *out[i] = tensor_of(*t);
  }
  if (!s->forward) {
    for (int name : {CUDNN_ATTR_OPERATION_SDPA_BWD_DODDESC, CUDNN_ATTR_OPERATION_SDPA_BWD_DQDESC,
                     CUDNN_ATTR_OPERATION_SDPA_BWD_DKDESC, CUDNN_ATTR_OPERATION_SDPA_BWD_DVDESC}) {
      if (tensor_child(d, name) == nullptr) return false;
    }
  }
  return true;
}

// Q [b, h, s_q, d], K [b, h_kv, s_kv, d], V [b, h_kv, s_kv, d_v], O [b, h, s_q, d_v]; h_kv
// divides h (grouped-query attention).
cudnnStatus_t finalize_sdpa(const Desc& d) {
  SdpaShape s;
  if (!sdpa_shape(d, &s)) {
    return bad(std::string("SDPA ") +
               (s.forward ? "forward without finalized Q, K, V, O"
                          : "backward without finalized Q, K, V, O, dO, dQ, dK, dV") +
               " tensors");
  }
  const auto& q = s.q.dims;
  const auto& k = s.k.dims;
  const auto& v = s.v.dims;
  const auto& o = s.o.dims;
  const bool ok = q.size() == 4 && k.size() == 4 && v.size() == 4 && o.size() == 4 &&
                  k[0] == q[0] && v[0] == q[0] && o[0] == q[0] && v[1] == k[1] && k[1] > 0 &&
                  q[1] % k[1] == 0 && o[1] == q[1] && k[3] == q[3] && v[2] == k[2] &&
                  o[2] == q[2] && o[3] == v[3];
  if (!ok) {
    return bad("SDPA shapes do not agree: Q " + dims_json(q) + ", K " + dims_json(k) + ", V " +
               dims_json(v) + ", O " + dims_json(o));
  }
  return CUDNN_STATUS_SUCCESS;
}

bool supported_operation(cudnnBackendDescriptorType_t type) { return !tensor_attrs(type).empty(); }

cudnnStatus_t finalize_pointwise(const Desc& d) {
  if (tensor_child(d, CUDNN_ATTR_OPERATION_POINTWISE_XDESC) == nullptr ||
      tensor_child(d, CUDNN_ATTR_OPERATION_POINTWISE_YDESC) == nullptr ||
      child(d, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_BACKEND_POINTWISE_DESCRIPTOR) ==
          nullptr) {
    return bad("pointwise operation without finalized X, Y tensors and pointwise descriptor");
  }
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t finalize_reduction(const Desc& d) {
  if (tensor_child(d, CUDNN_ATTR_OPERATION_REDUCTION_XDESC) == nullptr ||
      tensor_child(d, CUDNN_ATTR_OPERATION_REDUCTION_YDESC) == nullptr ||
      child(d, CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_BACKEND_REDUCTION_DESCRIPTOR) ==
          nullptr) {
    return bad("reduction operation without finalized X, Y tensors and reduction descriptor");
  }
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t finalize_graph(Desc& d) {
  const std::vector<void*> ops = pointers(d, CUDNN_ATTR_OPERATIONGRAPH_OPS);
  if (ops.empty()) return bad("operation graph without operations");
  for (void* p : ops) {
    const Desc* op = find_any(p);
    if (op == nullptr || !op->finalized)
      return bad("operation graph with an unfinalized operation");
    if (!supported_operation(op->type)) {
      report_unsupported("cudnnBackendFinalize(operation graph with " + describe_type(op->type) +
                         ")");
      return CUDNN_STATUS_NOT_SUPPORTED;
    }
  }
  d.graph_id = gs().next_graph++;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t finalize(Desc& d) {
  switch (d.type) {
    case CUDNN_BACKEND_TENSOR_DESCRIPTOR:
      return finalize_tensor(d);
    case CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR:
      return finalize_matmul(d);
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR:
      return finalize_conv(d);
    case CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR:
      return finalize_norm(d);
    case CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR:
    case CUDNN_BACKEND_OPERATION_SDPA_BWD_DESCRIPTOR:
      return finalize_sdpa(d);
    case CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR:
      return finalize_pointwise(d);
    case CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR:
      return finalize_reduction(d);
    case CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR:
      return finalize_graph(d);
    case CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR:
      return child(d, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                   CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR) != nullptr
                 ? CUDNN_STATUS_SUCCESS
                 : bad("engine heuristics without a finalized operation graph");
    case CUDNN_BACKEND_ENGINE_DESCRIPTOR:
      return child(d, CUDNN_ATTR_ENGINE_OPERATION_GRAPH, CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR) !=
                     nullptr
                 ? CUDNN_STATUS_SUCCESS
                 : bad("engine without a finalized operation graph");
    case CUDNN_BACKEND_ENGINECFG_DESCRIPTOR:
      return child(d, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_BACKEND_ENGINE_DESCRIPTOR) != nullptr
                 ? CUDNN_STATUS_SUCCESS
                 : bad("engine config without a finalized engine");
    case CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR:
      return child(d, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                   CUDNN_BACKEND_ENGINECFG_DESCRIPTOR) != nullptr
                 ? CUDNN_STATUS_SUCCESS
                 : bad("execution plan without a finalized engine config");
    case CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR: {
      const Attr* ids = attr(d, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS);
      const Attr* ptrs = attr(d, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS);
      if (ids == nullptr || ptrs == nullptr || ids->count != ptrs->count) {
        return bad("variant pack with unequal unique ids and data pointers");
      }
      return CUDNN_STATUS_SUCCESS;
    }
    default:
      return CUDNN_STATUS_SUCCESS;  // mode descriptors (pointwise, matmul, convolution, ...)
  }
}

// The operation graph behind a finalized execution plan (caller holds the mutex).
const Desc* plan_graph(const Desc& plan) {
  const Desc* cfg =
      child(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
  const Desc* engine =
      cfg != nullptr ? child(*cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_BACKEND_ENGINE_DESCRIPTOR)
                     : nullptr;
  return engine != nullptr ? child(*engine, CUDNN_ATTR_ENGINE_OPERATION_GRAPH,
                                   CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR)
                           : nullptr;
}

Attr make_attr(cudnnBackendAttributeType_t type, const void* data, std::int64_t count) {
  Attr a;
  a.type = type;
  a.count = count;
  a.data.resize(static_cast<std::size_t>(count) * element_size(type));
  if (!a.data.empty()) std::memcpy(a.data.data(), data, a.data.size());
  return a;
}

// One operation of an executed graph, as recorded.
struct OpWork {
  std::string json;  // the operation in the dnn_graph record
  bool gemm = false;
  std::int64_t m = 0, n = 0, k = 0, batch = 1, flops = 0, bytes = 0;
  std::string dtype_a, dtype_b, dtype_c, compute;
  std::string conv;  // convolutions: the shape object
  // Matmuls: the dims of A and C (for the causal mask's attention matmuls); pointwise: its mode
  // and the dims of its X.
  std::vector<std::int64_t> a_dims, c_dims;
  std::int64_t pointwise_mode = -1;
  std::vector<std::int64_t> x_dims;
};

// Elements (i, j) of an s_q × s_kv score matrix a causal mask keeps (j ≤ i, top-left aligned as
// cudnn-frontend's causal_mask): Σ_i min(i + 1, s_kv).
inline std::int64_t causal_kept(std::int64_t sq, std::int64_t skv) {
  if (sq <= 0 || skv <= 0) return 0;
  if (sq <= skv) return mul(sq, sq + 1) / 2;
  return add(mul(skv, skv + 1) / 2, mul(sq - skv, skv));
}

}  // namespace
}  // namespace powertrain::emu::detail

namespace detail = powertrain::emu::detail;
using detail::gs;

PT_EXPORT cudnnStatus_t cudnnBackendCreateDescriptor(cudnnBackendDescriptorType_t type,
                                                     cudnnBackendDescriptor_t* descriptor) {
  if (descriptor == nullptr) {
    powertrain::emu::report_misuse("cudnnBackendCreateDescriptor", "descriptor pointer is NULL");
    return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  }
  auto* d = new detail::Desc;  // never freed: a destroyed handle stays recognisable
  d->type = type;
  std::lock_guard<std::mutex> lock(gs().mutex);
  gs().descs.insert(d);
  *descriptor = d;
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnBackendDestroyDescriptor(cudnnBackendDescriptor_t descriptor) {
  std::lock_guard<std::mutex> lock(gs().mutex);
  detail::Desc* d = detail::find(descriptor);
  if (d == nullptr) {
    if (descriptor == nullptr) return CUDNN_STATUS_SUCCESS;
    powertrain::emu::report_misuse(
        "cudnnBackendDestroyDescriptor",
        "invalid or destroyed descriptor " + detail::pointer_text(descriptor));
    return CUDNN_STATUS_BAD_PARAM;
  }
  d->live = false;
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnBackendInitialize(cudnnBackendDescriptor_t descriptor) {
  std::lock_guard<std::mutex> lock(gs().mutex);
  detail::Desc* d = detail::find(descriptor);
  if (d == nullptr) return CUDNN_STATUS_BAD_PARAM;
  d->attrs.clear();
  d->finalized = false;
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnBackendSetAttribute(cudnnBackendDescriptor_t descriptor,
                                                 cudnnBackendAttributeName_t name,
                                                 cudnnBackendAttributeType_t type, int64_t count,
                                                 const void* elements) {
  const char* api = "cudnnBackendSetAttribute";
  if (count < 0 || count > (1 << 20) || (count > 0 && elements == nullptr)) {
    powertrain::emu::report_misuse(api, "invalid element count " + std::to_string(count));
    return CUDNN_STATUS_BAD_PARAM;
  }
  std::lock_guard<std::mutex> lock(gs().mutex);
  detail::Desc* d = detail::find(descriptor);
  if (d == nullptr) {
    powertrain::emu::report_misuse(
        api, "invalid or destroyed descriptor " + detail::pointer_text(descriptor));
    return CUDNN_STATUS_BAD_PARAM;
  }
  if (d->finalized) {
    powertrain::emu::report_misuse(api, "descriptor is already finalized");
    return CUDNN_STATUS_NOT_INITIALIZED;
  }
  d->attrs[name] = detail::make_attr(type, elements, count);
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnBackendFinalize(cudnnBackendDescriptor_t descriptor) {
  std::lock_guard<std::mutex> lock(gs().mutex);
  detail::Desc* d = detail::find(descriptor);
  if (d == nullptr) {
    powertrain::emu::report_misuse("cudnnBackendFinalize", "invalid or destroyed descriptor " +
                                                               detail::pointer_text(descriptor));
    return CUDNN_STATUS_BAD_PARAM;
  }
  const cudnnStatus_t status = detail::finalize(*d);
  if (status == CUDNN_STATUS_SUCCESS) d->finalized = true;
  return status;
}

PT_EXPORT cudnnStatus_t cudnnBackendGetAttribute(cudnnBackendDescriptor_t const descriptor,
                                                 cudnnBackendAttributeName_t name,
                                                 cudnnBackendAttributeType_t type,
                                                 int64_t requested, int64_t* count,
                                                 void* elements) {
  const char* api = "cudnnBackendGetAttribute";
  std::lock_guard<std::mutex> lock(gs().mutex);
  const detail::Desc* d = detail::find(descriptor);
  if (d == nullptr || requested < 0) {
    powertrain::emu::report_misuse(
        api, "invalid or destroyed descriptor " + detail::pointer_text(descriptor));
    return CUDNN_STATUS_BAD_PARAM;
  }
  const auto put_int64 = [&](std::int64_t value) {
    if (count != nullptr) *count = 1;
    if (requested >= 1 && elements != nullptr) std::memcpy(elements, &value, sizeof value);
    return CUDNN_STATUS_SUCCESS;
  };
  switch (name) {
    case CUDNN_ATTR_ENGINEHEUR_RESULTS: {
      // One engine for every graph: its config is written into the caller's descriptor.
      if (!d->finalized) return CUDNN_STATUS_NOT_INITIALIZED;
      if (count != nullptr) *count = 1;
      if (requested < 1 || elements == nullptr) return CUDNN_STATUS_SUCCESS;
      detail::Desc* cfg = detail::find(static_cast<void**>(elements)[0]);
      if (cfg == nullptr || cfg->type != CUDNN_BACKEND_ENGINECFG_DESCRIPTOR) {
        powertrain::emu::report_misuse(api,
                                       "engine heuristics results need an engine config "
                                       "descriptor");
        return CUDNN_STATUS_BAD_PARAM;
      }
      const std::vector<void*> graph = detail::pointers(*d, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH);
      auto* engine = new detail::Desc;
      engine->type = CUDNN_BACKEND_ENGINE_DESCRIPTOR;
      engine->attrs[CUDNN_ATTR_ENGINE_OPERATION_GRAPH] =
          detail::make_attr(CUDNN_TYPE_BACKEND_DESCRIPTOR, graph.data(), 1);
      const std::int64_t index = 0;
      engine->attrs[CUDNN_ATTR_ENGINE_GLOBAL_INDEX] =
          detail::make_attr(CUDNN_TYPE_INT64, &index, 1);
      engine->finalized = true;
      gs().descs.insert(engine);
      void* engine_handle = engine;
      cfg->attrs[CUDNN_ATTR_ENGINECFG_ENGINE] =
          detail::make_attr(CUDNN_TYPE_BACKEND_DESCRIPTOR, &engine_handle, 1);
      cfg->finalized = true;
      return CUDNN_STATUS_SUCCESS;
    }
    case CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT:
      return put_int64(1);
    case CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE:
    case CUDNN_ATTR_ENGINECFG_WORKSPACE_SIZE:
      return put_int64(0);  // no workspace
    default:
      break;
  }
  const detail::Attr* a = detail::attr(*d, name);
  if (a == nullptr) {
    if (count != nullptr) *count = 0;
    return CUDNN_STATUS_SUCCESS;
  }
  if (count != nullptr) *count = a->count;
  const std::int64_t n = std::min<std::int64_t>(requested, a->count);
  if (n <= 0 || elements == nullptr) return CUDNN_STATUS_SUCCESS;
  if (a->type == CUDNN_TYPE_BACKEND_DESCRIPTOR && type == CUDNN_TYPE_BACKEND_DESCRIPTOR) {
    // As cuDNN: descriptor-valued attributes are copied into the caller's descriptors.
    for (std::int64_t i = 0; i < n; ++i) {
      void* source = nullptr;
      std::memcpy(&source, a->data.data() + i * sizeof(void*), sizeof(void*));
      const detail::Desc* from = detail::find_any(source);
      detail::Desc* to = detail::find(static_cast<void**>(elements)[i]);
      if (from == nullptr || to == nullptr) return CUDNN_STATUS_BAD_PARAM;
      if (to != from) *to = *from;
    }
    return CUDNN_STATUS_SUCCESS;
  }
  if (detail::element_size(type) != detail::element_size(a->type)) {
    powertrain::emu::report_misuse(
        api, "attribute " + std::to_string(name) + " requested with another element type");
    return CUDNN_STATUS_BAD_PARAM;
  }
  std::memcpy(elements, a->data.data(), static_cast<std::size_t>(n) * detail::element_size(type));
  return CUDNN_STATUS_SUCCESS;
}

namespace {

// A matmul operation's GEMM (C = A·B, batched over C's leading dimensions).
detail::OpWork matmul_work(const detail::Desc& desc, const std::vector<detail::Tensor>& tensors,
                           std::int64_t op_bytes) {
  const detail::Desc* op = &desc;
  detail::OpWork w;
  const detail::Tensor &a = tensors[0], &b = tensors[1], &c = tensors[2];
  const std::size_t r = c.dims.size();
  w.gemm = true;
  w.m = c.dims[r - 2], w.n = c.dims[r - 1], w.k = a.dims[r - 1];
  for (std::size_t i = 0; i + 2 < r; ++i) w.batch = detail::mul(w.batch, c.dims[i]);
  w.flops = detail::mul(detail::mul(2 * w.batch, w.m), detail::mul(w.n, w.k));
  w.bytes = op_bytes;
  w.dtype_a = detail::dtype_name(a.dtype), w.dtype_b = detail::dtype_name(b.dtype);
  w.dtype_c = detail::dtype_name(c.dtype);
  const detail::Desc* mm =
      detail::child(*op, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_BACKEND_MATMUL_DESCRIPTOR);
  std::int64_t comp = CUDNN_DATA_FLOAT;
  if (mm != nullptr) detail::one_int(*mm, CUDNN_ATTR_MATMUL_COMP_TYPE, &comp);
  w.compute = detail::dtype_name(comp);
  w.json = "{\"op\":\"matmul\",\"a\":" + detail::dims_json(a.dims) +
           ",\"b\":" + detail::dims_json(b.dims) + ",\"c\":" + detail::dims_json(c.dims) +
           ",\"virtual\":[" + (a.is_virtual ? "true," : "false,") +
           (b.is_virtual ? "true," : "false,") + (c.is_virtual ? "true]" : "false]") +
           ",\"flops\":" + std::to_string(w.flops) + "}";
  return w;
}

// A convolution (forward, backward data or backward filter) as its implicit GEMM (one per group),
// oriented as the legacy API records it; the FLOPs are the same in the three directions.
detail::OpWork convolution_work(const detail::ConvShape& s, std::int64_t op_bytes) {
  detail::OpWork w;
  const std::int64_t groups = s.x.dims[1] / s.w.dims[1];
  std::int64_t out_points = 1, filter_points = 1;
  for (std::size_t i = 2; i < s.y.dims.size(); ++i) {
    out_points = detail::mul(out_points, s.y.dims[i]);
    filter_points = detail::mul(filter_points, s.w.dims[i]);
  }
  w.gemm = true;
  const std::int64_t rows = detail::mul(s.x.dims[0], out_points);      // N·P·Q
  const std::int64_t inner = detail::mul(s.w.dims[1], filter_points);  // (C/g)·R·S
  const std::int64_t k_per_group = s.w.dims[0] / groups;
  const char* direction = "forward";
  if (s.direction == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR) {
    w.m = rows, w.n = inner, w.k = k_per_group, direction = "backward_data";
  } else if (s.direction == CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR) {
    w.m = k_per_group, w.n = inner, w.k = rows, direction = "backward_filter";
  } else {
    w.m = rows, w.n = k_per_group, w.k = inner;
  }
  w.batch = groups;
  w.flops = detail::mul(detail::mul(2 * rows, s.w.dims[0]), inner);
  w.bytes = op_bytes;
  w.dtype_a = w.dtype_c = detail::dtype_name(s.x.dtype);
  w.dtype_b = detail::dtype_name(s.w.dtype);
  w.compute = "float32";
  w.conv =
      std::string("{\"direction\":\"") + direction + "\",\"input\":" + detail::dims_json(s.x.dims) +
      ",\"filter\":" + detail::dims_json(s.w.dims) + ",\"output\":" + detail::dims_json(s.y.dims) +
      ",\"pad\":" + detail::dims_json(s.pre) + ",\"stride\":" + detail::dims_json(s.stride) +
      ",\"dilation\":" + detail::dims_json(s.dilation) + ",\"groups\":" + std::to_string(groups) +
      "}";
  w.json = std::string("{\"op\":\"convolution_") + direction +
           "\",\"x\":" + detail::dims_json(s.x.dims) + ",\"w\":" + detail::dims_json(s.w.dims) +
           ",\"y\":" + detail::dims_json(s.y.dims) + ",\"flops\":" + std::to_string(w.flops) + "}";
  return w;
}

// A fused attention node (flash attention) as one GEMM record: m = s_q, n = s_kv, k = d, batch =
// b·h. FLOPs: forward Q·Kᵀ and P·V, 2·b·h·s_q·s_kv·(d + d_v); backward recomputes S = Q·Kᵀ and
// computes dV = Pᵀ·dO, dP = dO·Vᵀ, dQ = dS·K, dK = dSᵀ·Q: 2·b·h·s_q·s_kv·(3·d + 2·d_v) (2.5× the
// forward for d = d_v). Softmax and scaling are not counted (elementwise, hidden under the
// matmuls). Bytes: the non-virtual tensors, once (the S/P matrices stay on chip).
detail::OpWork sdpa_work(const detail::SdpaShape& s, std::int64_t op_bytes) {
  detail::OpWork w;
  const std::int64_t b = s.q.dims[0], h = s.q.dims[1], sq = s.q.dims[2], skv = s.k.dims[2],
                     d = s.q.dims[3], dv = s.v.dims[3];
  w.gemm = true;
  w.m = sq, w.n = skv, w.k = d, w.batch = detail::mul(b, h);
  const std::int64_t per_d = s.forward ? detail::add(d, dv) : detail::add(3 * d, 2 * dv);
  w.flops = detail::mul(detail::mul(2 * w.batch, detail::mul(sq, skv)), per_d);
  w.bytes = op_bytes;
  w.dtype_a = w.dtype_b = detail::dtype_name(s.q.dtype);
  w.dtype_c = detail::dtype_name(s.o.dtype);
  w.compute = "float32";
  w.json = std::string("{\"op\":\"sdpa_") + (s.forward ? "forward" : "backward") +
           "\",\"q\":" + detail::dims_json(s.q.dims) + ",\"k\":" + detail::dims_json(s.k.dims) +
           ",\"v\":" + detail::dims_json(s.v.dims) + ",\"o\":" + detail::dims_json(s.o.dims) +
           ",\"flops\":" + std::to_string(w.flops) + "}";
  return w;
}

// A normalization (layer, RMS, batch, instance, group norm; forward or backward): memory-bound.
// FLOPs (modelled, counted in the dnn_graph record and the graph's kernel): 5 per element of X
// forward (mean, variance, normalize, scale, shift), 8 backward; its bytes (every non-virtual
// tensor once) go with the graph's other non-GEMM work.
detail::OpWork norm_work(const detail::Desc& op, const std::vector<detail::Tensor>& tensors,
                         std::int64_t op_bytes, std::int64_t& epilogue_bytes,
                         std::string& epilogue_dtype) {
  detail::OpWork w;
  const bool forward = op.type == CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR;
  w.flops = detail::mul(forward ? 5 : 8, tensors.front().elements());
  std::int64_t mode = -1;
  detail::one_int(
      op, forward ? CUDNN_ATTR_OPERATION_NORM_FWD_MODE : CUDNN_ATTR_OPERATION_NORM_BWD_MODE, &mode);
  epilogue_bytes = detail::add(epilogue_bytes, op_bytes);
  epilogue_dtype = detail::dtype_name(tensors.front().dtype);
  const char* names[] = {"layer_norm", "instance_norm", "batch_norm", "group_norm",
                         "rms_norm",   "ada_layer_norm"};  // cudnnBackendNormMode_t
  const char* mode_name = mode >= 0 && mode < 6 ? names[mode] : "unknown";
  w.json = std::string("{\"op\":\"norm_") + (forward ? "forward" : "backward") + "\",\"mode\":\"" +
           mode_name + "\",\"x\":" + detail::dims_json(tensors.front().dims) +
           ",\"flops\":" + std::to_string(w.flops) + "}";
  return w;
}

// A pointwise or reduction operation (a fused epilogue): its FLOPs and JSON; its bytes go to
// `epilogue_bytes` (and its dtype to `epilogue_dtype` when it moves any).
detail::OpWork epilogue_work(const detail::Desc& desc, const std::vector<detail::Tensor>& tensors,
                             std::int64_t op_bytes, std::int64_t& epilogue_bytes,
                             std::string& epilogue_dtype) {
  const detail::Desc* op = &desc;
  detail::OpWork w;
  // Pointwise (one FLOP per output element) or reduction (one per input element).
  const bool pointwise = op->type == CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR;
  const detail::Tensor& counted_tensor = pointwise ? tensors.back() : tensors.front();
  w.flops = counted_tensor.elements();
  std::int64_t mode = -1;
  const detail::Desc* mode_desc =
      pointwise ? detail::child(*op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR,
                                CUDNN_BACKEND_POINTWISE_DESCRIPTOR)
                : detail::child(*op, CUDNN_ATTR_OPERATION_REDUCTION_DESC,
                                CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
  if (mode_desc != nullptr) {
    detail::one_int(*mode_desc,
                    pointwise ? CUDNN_ATTR_POINTWISE_MODE : CUDNN_ATTR_REDUCTION_OPERATOR, &mode);
  }
  if (pointwise) w.pointwise_mode = mode;
  epilogue_bytes = detail::add(epilogue_bytes, op_bytes);
  if (op_bytes > 0) epilogue_dtype = detail::dtype_name(tensors.back().dtype);
  w.json = std::string("{\"op\":\"") + (pointwise ? "pointwise" : "reduction") +
           "\",\"mode\":" + std::to_string(mode) +
           ",\"y\":" + detail::dims_json(tensors.back().dims) +
           ",\"flops\":" + std::to_string(w.flops) + "}";
  return w;
}

// A causal mask as cudnn-frontend builds it (GEN_INDEX of the rows and of the columns of the
// score matrix S, a comparison, BINARY_SELECT of −inf where it fails): flash attention skips the
// masked tiles, so the attention matmuls — the one producing S (Q·Kᵀ) and the one consuming it
// (P·V), recognised by S's dims — do only the kept fraction of their work (about half for
// s_q = s_kv). The comparison's direction and the alignment are not read: top-left, diagonal kept.
void apply_causal_mask(std::vector<detail::OpWork>& work) {
  const std::vector<std::int64_t>* scores = nullptr;
  bool select = false, compare = false;
  for (const detail::OpWork& w : work) {
    if (w.pointwise_mode == CUDNN_POINTWISE_GEN_INDEX && w.x_dims.size() >= 2) scores = &w.x_dims;
    if (w.pointwise_mode == CUDNN_POINTWISE_BINARY_SELECT) select = true;
    if (w.pointwise_mode >= CUDNN_POINTWISE_CMP_GT && w.pointwise_mode <= CUDNN_POINTWISE_CMP_LE)
      compare = true;
  }
  if (scores == nullptr || !select || !compare) return;
  const std::int64_t sq = (*scores)[scores->size() - 2], skv = scores->back();
  const std::int64_t all = detail::mul(sq, skv);
  if (all <= 0) return;
  const std::int64_t kept = detail::causal_kept(sq, skv);
  for (detail::OpWork& w : work) {
    if (!w.gemm || (w.c_dims != *scores && w.a_dims != *scores)) continue;
    // flops · kept / all without overflow: kept ≤ all.
    w.flops = static_cast<std::int64_t>(static_cast<long double>(w.flops) * kept / all);
    const std::size_t at = w.json.rfind(",\"flops\":");
    if (at != std::string::npos) {
      w.json = w.json.substr(0, at) + ",\"causal\":true,\"flops\":" + std::to_string(w.flops) + "}";
    }
  }
}

// The dnn_graph record: the graph's operations with their FLOPs, its totals and its stream.
void write_graph_record(const std::vector<detail::OpWork>& work, std::int64_t graph_id,
                        std::int64_t total_flops, std::int64_t total_bytes, const char* api,
                        std::int64_t start, const detail::StreamRef& ref) {
  auto r = powertrain::emu::begin_record(trace_schema::op::kDnnGraph, start, ref.device);
  r.field(trace_schema::field::kApi, std::string_view(api));
  r.field("dnn_graph", graph_id);
  std::string ops = "[";
  for (std::size_t i = 0; i < work.size(); ++i) {
    if (i > 0) ops += ',';
    ops += work[i].json;
  }
  ops += ']';
  r.raw("ops", ops);
  r.field(trace_schema::field::kFlops, total_flops);
  r.field(trace_schema::field::kBytes, total_bytes);
  r.field(trace_schema::field::kStream, ref.id);
  powertrain::emu::end_record(r);
}

// One GEMM record of a graph's matmul or convolution, tied to the graph by dnn_graph/dnn_op.
void write_gemm_record(const detail::OpWork& w, std::size_t i, std::int64_t graph_id,
                       const char* api, std::int64_t start, const detail::StreamRef& ref) {
  auto g = powertrain::emu::begin_work(trace_schema::op::kGemm, start);
  g.field(trace_schema::field::kApi, std::string_view(api));
  g.field(trace_schema::field::kM, w.m);
  g.field(trace_schema::field::kN, w.n);
  g.field(trace_schema::field::kK, w.k);
  g.field(trace_schema::field::kBatch, w.batch);
  g.field("transa", std::string_view("N"));
  g.field("transb", std::string_view("N"));
  g.field(trace_schema::field::kDtypeA, std::string_view(w.dtype_a));
  g.field(trace_schema::field::kDtypeB, std::string_view(w.dtype_b));
  g.field(trace_schema::field::kDtypeC, std::string_view(w.dtype_c));
  g.field(trace_schema::field::kCompute, std::string_view(w.compute));
  g.field(trace_schema::field::kFlops, w.flops);
  if (w.bytes > 0) g.field(trace_schema::field::kBytes, w.bytes);
  g.field("dnn_graph", graph_id);
  g.field("dnn_op", static_cast<std::int64_t>(i));
  if (!w.conv.empty()) g.raw("conv", w.conv);
  powertrain::emu::end_work(g, ref.device, ref.id, 0);
}

}  // namespace

PT_EXPORT cudnnStatus_t cudnnBackendExecute(cudnnHandle_t handle,
                                            cudnnBackendDescriptor_t plan_handle,
                                            cudnnBackendDescriptor_t pack_handle) {
  const char* api = "cudnnBackendExecute";
  const std::int64_t start = powertrain::emu::now_ns();
  cudaStream_t stream = nullptr;
  if (!detail::cudnn_handle_stream(handle, &stream)) {
    powertrain::emu::report_misuse(
        api, "invalid or destroyed cuDNN handle " + detail::pointer_text(handle));
    return CUDNN_STATUS_BAD_PARAM;
  }
  std::vector<detail::OpWork> work;
  std::int64_t graph_id = 0, total_flops = 0, total_bytes = 0, epilogue_bytes = 0;
  std::string epilogue_dtype = "unknown";
  bool has_norm = false;
  std::int64_t norm_flops = 0;
  {
    std::lock_guard<std::mutex> lock(gs().mutex);
    const detail::Desc* plan = detail::find(plan_handle);
    const detail::Desc* pack = detail::find(pack_handle);
    if (plan == nullptr || !plan->finalized ||
        plan->type != CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR || pack == nullptr ||
        !pack->finalized || pack->type != CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR) {
      powertrain::emu::report_misuse(api, "not a finalized execution plan and variant pack");
      return CUDNN_STATUS_BAD_PARAM;
    }
    const detail::Desc* graph = detail::plan_graph(*plan);
    if (graph == nullptr) {
      powertrain::emu::report_misuse(api, "the execution plan has no finalized operation graph");
      return CUDNN_STATUS_BAD_PARAM;
    }
    graph_id = graph->graph_id;
    const std::vector<std::int64_t> uids =
        detail::int64s(*pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS);
    const std::vector<void*> data = detail::pointers(*pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS);
    std::map<std::int64_t, bool> counted;  // non-virtual tensors, counted once per graph
    for (void* p : detail::pointers(*graph, CUDNN_ATTR_OPERATIONGRAPH_OPS)) {
      const detail::Desc* op = detail::find_any(p);
      if (op == nullptr) {
        powertrain::emu::report_misuse(api, "an operation of the graph is not a descriptor");
        return CUDNN_STATUS_BAD_PARAM;
      }
      std::vector<detail::Tensor> tensors;
      std::int64_t op_bytes = 0;
      for (int name : detail::tensor_attrs(op->type)) {
        const detail::Desc* t = detail::tensor_child(*op, name);
        if (t == nullptr) continue;
        const detail::Tensor tensor = detail::tensor_of(*t);
        tensors.push_back(tensor);
        if (tensor.is_virtual || tensor.by_value) continue;
        const auto it = std::find(uids.begin(), uids.end(), tensor.uid);
        const void* pointer =
            it != uids.end() ? data[static_cast<std::size_t>(it - uids.begin())] : nullptr;
        const detail::PointerInfo info = detail::lookup_pointer(pointer);
        if (!info.known || !info.device_side ||
            info.available < static_cast<std::size_t>(tensor.span_bytes())) {
          powertrain::emu::report_misuse(
              api, "tensor " + std::to_string(tensor.uid) + " has no device memory of " +
                       std::to_string(tensor.span_bytes()) + " bytes in the variant pack");
          return CUDNN_STATUS_BAD_PARAM;
        }
        if (!counted[tensor.uid]) {
          counted[tensor.uid] = true;
          op_bytes = detail::add(op_bytes, tensor.bytes());
        }
      }
      total_bytes = detail::add(total_bytes, op_bytes);
      detail::OpWork w;
      detail::ConvShape s;
      detail::SdpaShape attention;
      if (tensors.size() < 2 ||
          (op->type == CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR && tensors.size() != 3) ||
          (detail::is_convolution(op->type) && !detail::conv_shape(*op, &s)) ||
          (detail::is_sdpa(op->type) && !detail::sdpa_shape(*op, &attention))) {
        powertrain::emu::report_misuse(api, "an operation of the graph lost its tensors");
        return CUDNN_STATUS_BAD_PARAM;
      }
      if (op->type == CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR) {
        w = matmul_work(*op, tensors, op_bytes);
        w.a_dims = tensors[0].dims;
        w.c_dims = tensors[2].dims;
      } else if (detail::is_convolution(op->type)) {
        w = convolution_work(s, op_bytes);
      } else if (detail::is_sdpa(op->type)) {
        w = sdpa_work(attention, op_bytes);
      } else if (detail::is_norm(op->type)) {
        w = norm_work(*op, tensors, op_bytes, epilogue_bytes, epilogue_dtype);
        has_norm = true;
        norm_flops = detail::add(norm_flops, w.flops);
      } else {
        w = epilogue_work(*op, tensors, op_bytes, epilogue_bytes, epilogue_dtype);
        w.x_dims = tensors.front().dims;
      }
      work.push_back(std::move(w));
    }
  }
  apply_causal_mask(work);
  for (const detail::OpWork& w : work) total_flops = detail::add(total_flops, w.flops);
  detail::StreamRef ref;
  if (!detail::stream_or_fail(stream, false, api, &ref)) return CUDNN_STATUS_EXECUTION_FAILED;
  write_graph_record(work, graph_id, total_flops, total_bytes, api, start, ref);

  // The fused epilogue's bytes go to the last matmul/convolution.
  std::size_t last_gemm = work.size();
  for (std::size_t i = 0; i < work.size(); ++i) {
    if (work[i].gemm) last_gemm = i;
  }
  if (last_gemm == work.size()) {
    // A normalization graph is one kernel carrying its FLOPs and bytes (timed by their roofline);
    // a pointwise/reduction-only graph a raw kernel sized for its bytes.
    return detail::append_sized_kernel(
               (has_norm ? "cudnn_graph_norm_" : "cudnn_graph_pointwise_") + epilogue_dtype,
               static_cast<std::size_t>(std::max<std::int64_t>(epilogue_bytes, 1)), stream, api,
               start, has_norm ? std::max<std::int64_t>(norm_flops, 1) : 0)
               ? CUDNN_STATUS_SUCCESS
               : CUDNN_STATUS_EXECUTION_FAILED;
  }
  work[last_gemm].bytes = detail::add(work[last_gemm].bytes, epilogue_bytes);
  for (std::size_t i = 0; i < work.size(); ++i) {
    const detail::OpWork& w = work[i];
    if (!w.gemm) continue;
    write_gemm_record(w, i, graph_id, api, start, ref);
  }
  return CUDNN_STATUS_SUCCESS;
}
