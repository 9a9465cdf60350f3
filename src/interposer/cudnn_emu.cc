// cuDNN's convolution API (the legacy descriptor API that PyTorch's cudnn convolutions and the
// NVIDIA samples call) on the emulated devices. A convolution (forward, backward data, backward
// filter) is recorded as a `gemm` record of its implicit GEMM — so the existing GEMM estimator
// times it at the device model's roofline — with the convolution's own shape in a `conv` object:
// N, C, spatial input, K, filter, output, padding, strides, dilations, groups, dtypes and FLOPs
// (2·N·K·Πout·(C/g)·Πfilter, equal to the implicit GEMM's 2·m·n·k·batch).
//   forward:         m = N·Πout, n = K/g, k = (C/g)·Πfilter, batch = g
//   backward data:   m = N·Πout, n = (C/g)·Πfilter, k = K/g, batch = g (dy times the filter,
//                    then col2im: the forward's FLOPs)
//   backward filter: m = K/g,    n = (C/g)·Πfilter, k = N·Πout, batch = g
// Bias addition (cudnnAddTensor), activations, pooling and softmax (forward and backward) are
// memory-bound kernels named cudnn_<op>_<dtype>, sized to move their tensors' bytes once.
// So are the tensor transforms, op/reduce tensor, LRN, batch normalization and dropout. The v8
// RNN API is recorded as its GEMMs (per layer, direction and time step) and pointwise kernels.
// Descriptor handles are heap objects checked against registries; a bad one is
// CUDNN_STATUS_BAD_PARAM plus a `misuse` record. Algorithm queries answer the implicit
// precomputed GEMM algorithm with no workspace.
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"  // the legacy API is deprecated
#include <cudnn.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <mutex>
#include <string>
#include <unordered_set>
#include <vector>

#include "interposer/cudart_internal.h"
#include "interposer/cudnn_dtype.h"
#include "interposer/trace_schema.h"

namespace trace_schema = powertrain::trace_schema;

namespace powertrain::emu::detail {
namespace {

struct Handle {
  cudaStream_t stream = nullptr;
};

struct Tensor {
  cudnnDataType_t dtype = CUDNN_DATA_FLOAT;
  int dims = 0;
  int dim[CUDNN_DIM_MAX] = {};
  int stride[CUDNN_DIM_MAX] = {};  // as given, or packed (NCHW, or NHWC for that 4-d format)
  bool set = false;
};

struct Filter {
  cudnnDataType_t dtype = CUDNN_DATA_FLOAT;
  cudnnTensorFormat_t format = CUDNN_TENSOR_NCHW;
  int dims = 0;
  int dim[CUDNN_DIM_MAX] = {};  // K, C/groups, spatial...
  bool set = false;
};

struct Conv {
  int spatial = 0;
  int pad[CUDNN_DIM_MAX] = {};
  int stride[CUDNN_DIM_MAX] = {};
  int dilation[CUDNN_DIM_MAX] = {};
  cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  int groups = 1;
  cudnnReorderType_t reorder = CUDNN_DEFAULT_REORDER;
  bool set = false;
};

struct Activation {
  cudnnActivationMode_t mode = CUDNN_ACTIVATION_RELU;
  cudnnNanPropagation_t nan = CUDNN_NOT_PROPAGATE_NAN;
  double coef = 0.0;
  double swish_beta = 1.0;
  bool set = false;
};

struct Pooling {
  cudnnPoolingMode_t mode = CUDNN_POOLING_MAX;
  int spatial = 0;
  int window[CUDNN_DIM_MAX] = {};
  int pad[CUDNN_DIM_MAX] = {};
  int stride[CUDNN_DIM_MAX] = {};
  bool set = false;
};

// The other legacy descriptors: their settings as given (read back by the Get calls).
struct OpTensorDesc {
  cudnnOpTensorOp_t op = CUDNN_OP_TENSOR_ADD;
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  cudnnNanPropagation_t nan = CUDNN_NOT_PROPAGATE_NAN;
  bool set = false;
};
struct ReduceTensorDesc {
  cudnnReduceTensorOp_t op = CUDNN_REDUCE_TENSOR_ADD;
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  cudnnNanPropagation_t nan = CUDNN_NOT_PROPAGATE_NAN;
  cudnnReduceTensorIndices_t indices = CUDNN_REDUCE_TENSOR_NO_INDICES;
  cudnnIndicesType_t index_type = CUDNN_32BIT_INDICES;
  bool set = false;
};
struct LrnDesc {
  unsigned n = 5;
  double alpha = 1e-4, beta = 0.75, k = 2.0;  // cuDNN's defaults
};
struct DropoutDesc {
  float dropout = 0.0f;
  void* states = nullptr;
  std::size_t state_bytes = 0;
  unsigned long long seed = 0;
  bool set = false;
};

struct RnnDesc {
  cudnnRNNAlgo_t algo = CUDNN_RNN_ALGO_STANDARD;
  cudnnRNNMode_t cell = CUDNN_LSTM;
  cudnnRNNBiasMode_t bias = CUDNN_RNN_DOUBLE_BIAS;
  cudnnDirectionMode_t direction = CUDNN_UNIDIRECTIONAL;
  cudnnRNNInputMode_t input_mode = CUDNN_LINEAR_INPUT;
  cudnnDataType_t dtype = CUDNN_DATA_FLOAT;
  cudnnDataType_t math_precision = CUDNN_DATA_FLOAT;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  std::int32_t input_size = 0, hidden_size = 0, projection_size = 0, layers = 0;
  cudnnDropoutDescriptor_t dropout = nullptr;
  std::uint32_t aux_flags = 0;
  cudnnRNNClipMode_t clip = CUDNN_RNN_CLIP_NONE;
  cudnnNanPropagation_t clip_nan = CUDNN_NOT_PROPAGATE_NAN;
  double left_clip = 0.0, right_clip = 0.0;
  bool set = false;
};

struct RnnData {
  cudnnDataType_t dtype = CUDNN_DATA_FLOAT;
  cudnnRNNDataLayout_t layout = CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED;
  int max_length = 0, batch = 0, vector_size = 0;
  std::vector<int> lengths;  // per sequence, host copy
  double padding_fill = 0.0;
  bool set = false;
};

struct TransformDesc {
  std::uint32_t dims = 0;
  cudnnTensorFormat_t format = CUDNN_TENSOR_NCHW;
  std::int32_t pad_before[CUDNN_DIM_MAX] = {}, pad_after[CUDNN_DIM_MAX] = {};
  std::uint32_t fold[CUDNN_DIM_MAX] = {};
  cudnnFoldingDirection_t direction = CUDNN_TRANSFORM_FOLD;
  bool set = false;
};

struct SpatialTransformer {
  cudnnDataType_t dtype = CUDNN_DATA_FLOAT;
  int dims = 0;
  int dim[CUDNN_DIM_MAX] = {};  // the output: N, C, H, W
  bool set = false;
};

struct CtcLossDesc {
  cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  cudnnLossNormalizationMode_t normalization = CUDNN_LOSS_NORMALIZATION_NONE;
  cudnnNanPropagation_t nan = CUDNN_NOT_PROPAGATE_NAN;
  cudnnCTCGradMode_t grad_mode = CUDNN_CTC_ZERO_OOB_GRADIENTS;
  int max_label_length = 256;  // cuDNN's limit when no maximum is given
  bool set = false;
};

struct DnnState {
  std::mutex mutex;
  std::unordered_set<const void*> handles, tensors, filters, convs, activations, poolings,
      op_tensors, reduce_tensors, lrns, dropouts, rnns, rnn_datas, seq_datas, attns, transforms,
      spatial_transformers, ctc_losses;
};

DnnState& dnn() {
  static DnnState* s = new DnnState;  // never destroyed
  return *s;
}

template <typename T>
T* live(std::unordered_set<const void*>& set, const void* handle) {
  std::lock_guard<std::mutex> lock(dnn().mutex);
  return set.count(handle) > 0 ? const_cast<T*>(static_cast<const T*>(handle)) : nullptr;
}

template <typename T, typename H>
cudnnStatus_t create(std::unordered_set<const void*>& set, H* out, const char* api) {
  if (out == nullptr) {
    report_misuse(api, "the result pointer is NULL");
    return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  }
  T* object = new T;
  {
    std::lock_guard<std::mutex> lock(dnn().mutex);
    set.insert(object);
  }
  *out = reinterpret_cast<H>(object);
  return CUDNN_STATUS_SUCCESS;
}

template <typename T>
cudnnStatus_t destroy(std::unordered_set<const void*>& set, const void* handle, const char* api) {
  {
    std::lock_guard<std::mutex> lock(dnn().mutex);
    if (set.erase(handle) > 0) {
      delete static_cast<const T*>(handle);
      return CUDNN_STATUS_SUCCESS;
    }
  }
  if (handle == nullptr) return CUDNN_STATUS_SUCCESS;  // as cuDNN: destroying NULL is fine
  report_misuse(api, "invalid or destroyed descriptor " + pointer_text(handle));
  return CUDNN_STATUS_BAD_PARAM;
}

// cudnnGetLastErrorString's message (per thread) and cudnnSetCallback's receiver.
thread_local std::string last_error;
struct Callback {
  std::mutex mutex;
  unsigned mask = 0;
  void* user_data = nullptr;
  cudnnCallback_t function = nullptr;
};
Callback& callback() {
  static auto* c = new Callback;  // never destroyed
  return *c;
}

cudnnStatus_t bad(const char* api, const std::string& what) {
  report_misuse(api, what);
  last_error = std::string(api) + ": " + what;
  unsigned mask = 0;
  void* user_data = nullptr;
  cudnnCallback_t function = nullptr;
  {
    std::lock_guard<std::mutex> lock(callback().mutex);
    mask = callback().mask, user_data = callback().user_data, function = callback().function;
  }
  if (function != nullptr && (mask & CUDNN_SEV_ERROR_EN) != 0) {
    cudnnDebug_t debug{};
    debug.cudnn_version = CUDNN_VERSION;
    debug.cudnnStatus = CUDNN_STATUS_BAD_PARAM;
    function(CUDNN_SEV_ERROR, user_data, &debug, last_error.c_str());
  }
  return CUDNN_STATUS_BAD_PARAM;
}

const char* dtype_name(cudnnDataType_t t) { return cudnn_dtype_name(t); }

// Output extent of one spatial dimension.
int output_extent(int in, int filter, int pad, int stride, int dilation) {
  const int effective = (filter - 1) * dilation + 1;
  return (in + 2 * pad - effective) / stride + 1;
}

bool output_dims(const Conv& c, const Tensor& x, const Filter& w, int* out) {
  if (x.dims != c.spatial + 2 || w.dims != c.spatial + 2) return false;
  out[0] = x.dim[0];
  out[1] = w.dim[0];
  for (int i = 0; i < c.spatial; ++i) {
    out[2 + i] = output_extent(x.dim[2 + i], w.dim[2 + i], c.pad[i], c.stride[i], c.dilation[i]);
    if (out[2 + i] <= 0) return false;
  }
  return true;
}

std::string dims_json(const int* d, int n) {
  std::string s = "[";
  for (int i = 0; i < n; ++i) {
    if (i > 0) s += ',';
    s += std::to_string(d[i]);  // appended piecewise: GCC 12 warns falsely on "," + string
  }
  s += ']';
  return s;
}

enum class Direction { kForward, kBackwardData, kBackwardFilter };

// Checks the descriptors and pointers of a convolution and records it. `x` is the input
// activation tensor (x for forward and backward filter, dx for backward data), `y` the output
// activation tensor (y or dy).
cudnnStatus_t convolution(Direction direction, cudnnHandle_t handle, const Tensor* x,
                          const void* x_data, const Filter* w, const void* w_data, const Conv* c,
                          const Tensor* y, const void* y_data, const char* api) {
  const std::int64_t start = now_ns();
  Handle* h = live<Handle>(dnn().handles, handle);
  if (h == nullptr) return bad(api, "invalid or destroyed cuDNN handle " + pointer_text(handle));
  if (x == nullptr || w == nullptr || c == nullptr || y == nullptr || !x->set || !w->set ||
      !c->set || !y->set) {
    return bad(api, "a descriptor is invalid, destroyed or not set");
  }
  int out[CUDNN_DIM_MAX] = {};
  if (!output_dims(*c, *x, *w, out) || y->dims != x->dims ||
      !std::equal(out, out + y->dims, y->dim)) {
    return bad(api, "output tensor " + dims_json(y->dim, y->dims) + " does not match the " +
                        "convolution of " + dims_json(x->dim, x->dims) + " with filter " +
                        dims_json(w->dim, w->dims) + " (expected " + dims_json(out, x->dims) + ")");
  }
  if (x->dim[1] != w->dim[1] * c->groups || w->dim[0] % c->groups != 0) {
    return bad(api, "input channels " + std::to_string(x->dim[1]) + " != filter channels " +
                        std::to_string(w->dim[1]) + " x groups " + std::to_string(c->groups));
  }
  for (const void* p : {x_data, w_data, y_data}) {
    const PointerInfo info = lookup_pointer(p);
    if (!info.known || !info.device_side) {
      return bad(api, pointer_text(p) + " is not device memory allocated through the runtime");
    }
  }
  int device = 0;
  const std::int64_t stream = stream_id(h->stream, false, &device);
  if (stream == kInvalidStream) return bad(api, "the handle's stream was destroyed");

  const std::int64_t groups = c->groups;
  const std::int64_t n = x->dim[0], channels = x->dim[1], k = w->dim[0];
  std::int64_t in_points = 1, out_points = 1, filter_points = 1;
  for (int i = 0; i < c->spatial; ++i) {
    in_points *= x->dim[2 + i];
    out_points *= out[2 + i];
    filter_points *= w->dim[2 + i];
  }
  const std::int64_t c_per_group = channels / groups, k_per_group = k / groups;
  std::int64_t gm = 0, gn = 0, gk = 0;
  switch (direction) {
    case Direction::kForward:
      gm = n * out_points, gn = k_per_group, gk = c_per_group * filter_points;
      break;
    case Direction::kBackwardData:
      // Written as the forward's GEMM transposed (same FLOPs as cuDNN's implicit GEMM).
      gm = n * out_points, gn = c_per_group * filter_points, gk = k_per_group;
      break;
    case Direction::kBackwardFilter:
      gm = k_per_group, gn = c_per_group * filter_points, gk = n * out_points;
      break;
  }
  const std::int64_t flops = 2 * n * k * out_points * c_per_group * filter_points;
  const char* dtype = dtype_name(x->dtype);
  const char* weights = dtype_name(w->dtype);
  const char* compute = dtype_name(c->compute);
  // cuDNN uses TF32 tensor cores for fp32 convolutions unless the math type is FMA.
  std::string compute_name = compute != nullptr ? compute : "float32";
  if (c->compute == CUDNN_DATA_FLOAT && x->dtype == CUDNN_DATA_FLOAT && c->math != CUDNN_FMA_MATH) {
    compute_name = "float32_fast_tf32";
  }

  auto r = begin_work(trace_schema::op::kGemm, start);
  r.field(trace_schema::field::kApi, std::string_view(api));
  r.field(trace_schema::field::kM, gm);
  r.field(trace_schema::field::kN, gn);
  r.field(trace_schema::field::kK, gk);
  r.field(trace_schema::field::kBatch, groups);
  r.field("transa", std::string_view("N"));
  r.field("transb", std::string_view("N"));
  r.field(trace_schema::field::kDtypeA, std::string_view(dtype != nullptr ? dtype : "float32"));
  r.field(trace_schema::field::kDtypeB, std::string_view(weights != nullptr ? weights : "float32"));
  r.field(trace_schema::field::kDtypeC, std::string_view(dtype != nullptr ? dtype : "float32"));
  r.field(trace_schema::field::kCompute, std::string_view(compute_name));
  r.field(trace_schema::field::kFlops, flops);
  std::string conv = "{\"direction\":\"";
  conv += direction == Direction::kForward        ? "forward"
          : direction == Direction::kBackwardData ? "backward_data"
                                                  : "backward_filter";
  conv += "\",\"input\":" + dims_json(x->dim, x->dims);
  conv += ",\"filter\":" + dims_json(w->dim, w->dims);
  conv += ",\"output\":" + dims_json(out, x->dims);
  conv += ",\"pad\":" + dims_json(c->pad, c->spatial);
  conv += ",\"stride\":" + dims_json(c->stride, c->spatial);
  conv += ",\"dilation\":" + dims_json(c->dilation, c->spatial);
  conv += ",\"groups\":" + std::to_string(c->groups);
  conv += ",\"math\":" + std::to_string(static_cast<int>(c->math));
  conv += "}";
  r.raw("conv", conv);
  end_work(r, device, stream, 0);  // captured into a CUDA graph like a kernel
  return CUDNN_STATUS_SUCCESS;
}

}  // namespace
}  // namespace powertrain::emu::detail

namespace detail = powertrain::emu::detail;
using detail::dnn;

// ---- memory-bound operations (bias, activation, pooling, softmax) ----------------------------

namespace powertrain::emu::detail {
namespace {

std::size_t dtype_bytes(cudnnDataType_t t) {
  return static_cast<std::size_t>(cudnn_dtype_bytes(t));
}

std::size_t tensor_bytes(const Tensor& t) {
  std::size_t elements = 1;
  for (int i = 0; i < t.dims; ++i) elements *= static_cast<std::size_t>(t.dim[i]);
  return elements * dtype_bytes(t.dtype);
}

// Device (or managed) memory of at least `bytes` from `p`.
bool device_buffer(const void* p, std::size_t bytes) {
  const PointerInfo info = lookup_pointer(p);
  return info.known && info.device_side && info.available >= bytes;
}

// Bytes from the first to one past the last element: what strided storage must hold.
std::size_t tensor_span_bytes(const Tensor& t) {
  std::size_t span = 1;
  for (int i = 0; i < t.dims; ++i) {
    if (t.dim[i] == 0) return 0;
    span += static_cast<std::size_t>(t.dim[i] - 1) * static_cast<std::size_t>(t.stride[i]);
  }
  return span * dtype_bytes(t.dtype);
}

// Checks the handle, the tensors (set, data in device memory) and records one kernel named
// cudnn_<what>_<dtype of the first tensor> moving every tensor's bytes once (`extra_reads`:
// tensors read twice, e.g. the accumulated C of cudnnAddTensor).
cudnnStatus_t memory_op(cudnnHandle_t handle, const std::string& what,
                        const std::vector<std::pair<const void*, const void*>>& tensors,
                        std::size_t extra_bytes, const char* api) {
  const std::int64_t start = now_ns();
  Handle* h = live<Handle>(dnn().handles, handle);
  if (h == nullptr) return bad(api, "invalid or destroyed cuDNN handle " + pointer_text(handle));
  std::size_t bytes = extra_bytes;
  const char* dtype = nullptr;
  for (const auto& [desc, data] : tensors) {
    const Tensor* t = live<Tensor>(dnn().tensors, desc);
    if (t == nullptr || !t->set) return bad(api, "a tensor descriptor is invalid or not set");
    if (!device_buffer(data, tensor_span_bytes(*t))) {
      return bad(api, pointer_text(data) + " is not device memory holding its tensor");
    }
    bytes += tensor_bytes(*t);
    if (dtype == nullptr) dtype = dtype_name(t->dtype);
  }
  const std::string name = "cudnn_" + what + "_" + (dtype != nullptr ? dtype : "unknown");
  return append_sized_kernel(name, bytes, h->stream, api, start) ? CUDNN_STATUS_SUCCESS
                                                                 : CUDNN_STATUS_BAD_PARAM;
}

const char* activation_name(cudnnActivationMode_t mode) {
  switch (mode) {
    case CUDNN_ACTIVATION_SIGMOID:
      return "sigmoid";
    case CUDNN_ACTIVATION_RELU:
      return "relu";
    case CUDNN_ACTIVATION_TANH:
      return "tanh";
    case CUDNN_ACTIVATION_CLIPPED_RELU:
      return "clipped_relu";
    case CUDNN_ACTIVATION_ELU:
      return "elu";
    case CUDNN_ACTIVATION_IDENTITY:
      return "identity";
    case CUDNN_ACTIVATION_SWISH:
      return "swish";
    default:
      return "activation";
  }
}

bool same_shape(const void* a, const void* b) {
  const Tensor* x = live<Tensor>(dnn().tensors, a);
  const Tensor* y = live<Tensor>(dnn().tensors, b);
  return x != nullptr && y != nullptr && x->dims == y->dims &&
         std::equal(x->dim, x->dim + x->dims, y->dim);
}

bool pooling_output(const Pooling& p, const Tensor& x, int* out) {
  if (x.dims != p.spatial + 2) return false;
  out[0] = x.dim[0];
  out[1] = x.dim[1];
  for (int i = 0; i < p.spatial; ++i) {
    out[2 + i] = (x.dim[2 + i] + 2 * p.pad[i] - p.window[i]) / p.stride[i] + 1;
    if (out[2 + i] <= 0) return false;
  }
  return true;
}

}  // namespace
}  // namespace powertrain::emu::detail

// ---- handle, versions, errors -------------------------------------------------------------

PT_EXPORT size_t cudnnGetVersion() { return CUDNN_VERSION; }
PT_EXPORT size_t cudnnGetMaxDeviceVersion() { return 1000; }  // compute capability 10.0
PT_EXPORT size_t cudnnGetCudartVersion() { return 13000; }

PT_EXPORT const char* cudnnGetErrorString(cudnnStatus_t status) {
  switch (status) {
    case CUDNN_STATUS_SUCCESS:
      return "CUDNN_STATUS_SUCCESS";
    case CUDNN_STATUS_NOT_INITIALIZED:
      return "CUDNN_STATUS_NOT_INITIALIZED";
    case CUDNN_STATUS_BAD_PARAM:
      return "CUDNN_STATUS_BAD_PARAM";
    case CUDNN_STATUS_BAD_PARAM_NULL_POINTER:
      return "CUDNN_STATUS_BAD_PARAM_NULL_POINTER";
    case CUDNN_STATUS_NOT_SUPPORTED:
      return "CUDNN_STATUS_NOT_SUPPORTED";
    case CUDNN_STATUS_EXECUTION_FAILED:
      return "CUDNN_STATUS_EXECUTION_FAILED";
    default:
      return "CUDNN_STATUS_UNKNOWN (emulated cuDNN)";
  }
}

PT_EXPORT cudnnStatus_t cudnnGetProperty(libraryPropertyType type, int* value) {
  if (value == nullptr) return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  switch (type) {
    case MAJOR_VERSION:
      *value = CUDNN_MAJOR;
      return CUDNN_STATUS_SUCCESS;
    case MINOR_VERSION:
      *value = CUDNN_MINOR;
      return CUDNN_STATUS_SUCCESS;
    case PATCH_LEVEL:
      *value = CUDNN_PATCHLEVEL;
      return CUDNN_STATUS_SUCCESS;
    default:
      return CUDNN_STATUS_BAD_PARAM;
  }
}

namespace powertrain::emu::detail {
// For the backend (graph) API in cudnn_graph_emu.cc: false for an invalid handle.
bool cudnn_handle_stream(const void* handle, cudaStream_t* stream) {
  const Handle* h = live<Handle>(dnn().handles, handle);
  if (h == nullptr) return false;
  *stream = h->stream;
  return true;
}
}  // namespace powertrain::emu::detail

PT_EXPORT cudnnStatus_t cudnnCreate(cudnnHandle_t* handle) {
  return detail::create<detail::Handle>(dnn().handles, handle, "cudnnCreate");
}

PT_EXPORT cudnnStatus_t cudnnDestroy(cudnnHandle_t handle) {
  return detail::destroy<detail::Handle>(dnn().handles, handle, "cudnnDestroy");
}

PT_EXPORT cudnnStatus_t cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream) {
  const char* api = "cudnnSetStream";
  detail::Handle* h = detail::live<detail::Handle>(dnn().handles, handle);
  if (h == nullptr) return detail::bad(api, "invalid cuDNN handle " + detail::pointer_text(handle));
  int device = 0;
  if (powertrain::emu::stream_id(stream, false, &device) == powertrain::emu::kInvalidStream) {
    return detail::bad(api, "invalid stream " + detail::pointer_text(stream));
  }
  h->stream = stream;
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnGetStream(cudnnHandle_t handle, cudaStream_t* stream) {
  detail::Handle* h = detail::live<detail::Handle>(dnn().handles, handle);
  if (h == nullptr || stream == nullptr) return CUDNN_STATUS_BAD_PARAM;
  *stream = h->stream;
  return CUDNN_STATUS_SUCCESS;
}

// ---- descriptors ---------------------------------------------------------------------------

PT_EXPORT cudnnStatus_t cudnnCreateTensorDescriptor(cudnnTensorDescriptor_t* desc) {
  return detail::create<detail::Tensor>(dnn().tensors, desc, "cudnnCreateTensorDescriptor");
}
PT_EXPORT cudnnStatus_t cudnnDestroyTensorDescriptor(cudnnTensorDescriptor_t desc) {
  return detail::destroy<detail::Tensor>(dnn().tensors, desc, "cudnnDestroyTensorDescriptor");
}

namespace {
// Checks a shape (dims, positive extents, a known data type) and stores it in `shape`, a Tensor
// or a Filter; `what` names the descriptor kind in the message for a stale handle.
template <typename Shape>
cudnnStatus_t set_shape(Shape* shape, const void* desc, const char* what, cudnnDataType_t dtype,
                        int dims, const int* dim, const char* api) {
  if (shape == nullptr) {
    return detail::bad(
        api, std::string("invalid ") + what + " descriptor " + detail::pointer_text(desc));
  }
  if (dims < 3 || dims > CUDNN_DIM_MAX || dim == nullptr) {
    return detail::bad(api, "nbDims " + std::to_string(dims) + " outside [3, 8]");
  }
  for (int i = 0; i < dims; ++i) {
    if (dim[i] <= 0) return detail::bad(api, "dimension " + std::to_string(i) + " is not positive");
  }
  if (detail::dtype_name(dtype) == nullptr) {
    return detail::bad(api, "unsupported data type " + std::to_string(dtype));
  }
  shape->dtype = dtype;
  shape->dims = dims;
  std::copy(dim, dim + dims, shape->dim);
  shape->set = true;
  return CUDNN_STATUS_SUCCESS;
}

cudnnStatus_t set_tensor(cudnnTensorDescriptor_t desc, cudnnDataType_t dtype, int dims,
                         const int* dim, const char* api, const int* stride = nullptr,
                         bool nhwc = false) {
  detail::Tensor* t = detail::live<detail::Tensor>(dnn().tensors, desc);
  if (stride != nullptr && dims > 0 && dims <= CUDNN_DIM_MAX) {
    for (int i = 0; i < dims; ++i) {
      if (stride[i] <= 0)
        return detail::bad(api, "stride " + std::to_string(i) + " is not positive");
    }
  }
  const cudnnStatus_t status = set_shape(t, desc, "tensor", dtype, dims, dim, api);
  if (status != CUDNN_STATUS_SUCCESS) return status;
  if (stride != nullptr) {
    std::copy(stride, stride + dims, t->stride);
  } else if (nhwc && dims == 4) {  // n, c, h, w with c fastest
    t->stride[1] = 1, t->stride[3] = dim[1], t->stride[2] = dim[1] * dim[3];
    t->stride[0] = t->stride[2] * dim[2];
  } else {
    t->stride[dims - 1] = 1;
    for (int i = dims - 2; i >= 0; --i) t->stride[i] = t->stride[i + 1] * dim[i + 1];
  }
  return CUDNN_STATUS_SUCCESS;
}
}  // namespace

PT_EXPORT cudnnStatus_t cudnnSetTensor4dDescriptor(cudnnTensorDescriptor_t desc,
                                                   cudnnTensorFormat_t format,
                                                   cudnnDataType_t dtype, int n, int c, int h,
                                                   int w) {
  const int dim[4] = {n, c, h, w};
  return set_tensor(desc, dtype, 4, dim, "cudnnSetTensor4dDescriptor", nullptr,
                    format == CUDNN_TENSOR_NHWC);
}

PT_EXPORT cudnnStatus_t cudnnSetTensor4dDescriptorEx(cudnnTensorDescriptor_t desc,
                                                     cudnnDataType_t dtype, int n, int c, int h,
                                                     int w, int n_stride, int c_stride,
                                                     int h_stride, int w_stride) {
  const int dim[4] = {n, c, h, w};
  const int stride[4] = {n_stride, c_stride, h_stride, w_stride};
  return set_tensor(desc, dtype, 4, dim, "cudnnSetTensor4dDescriptorEx", stride);
}

PT_EXPORT cudnnStatus_t cudnnSetTensorNdDescriptor(cudnnTensorDescriptor_t desc,
                                                   cudnnDataType_t dtype, int dims, const int dim[],
                                                   const int stride[]) {
  return set_tensor(desc, dtype, dims, dim, "cudnnSetTensorNdDescriptor", stride);
}

PT_EXPORT cudnnStatus_t cudnnCreateFilterDescriptor(cudnnFilterDescriptor_t* desc) {
  return detail::create<detail::Filter>(dnn().filters, desc, "cudnnCreateFilterDescriptor");
}
PT_EXPORT cudnnStatus_t cudnnDestroyFilterDescriptor(cudnnFilterDescriptor_t desc) {
  return detail::destroy<detail::Filter>(dnn().filters, desc, "cudnnDestroyFilterDescriptor");
}

namespace {
cudnnStatus_t set_filter(cudnnFilterDescriptor_t desc, cudnnDataType_t dtype,
                         cudnnTensorFormat_t format, int dims, const int* dim, const char* api) {
  detail::Filter* f = detail::live<detail::Filter>(dnn().filters, desc);
  const cudnnStatus_t status = set_shape(f, desc, "filter", dtype, dims, dim, api);
  if (status == CUDNN_STATUS_SUCCESS) f->format = format;
  return status;
}
}  // namespace

PT_EXPORT cudnnStatus_t cudnnSetFilter4dDescriptor(cudnnFilterDescriptor_t desc,
                                                   cudnnDataType_t dtype,
                                                   cudnnTensorFormat_t format, int k, int c, int h,
                                                   int w) {
  const int dim[4] = {k, c, h, w};
  return set_filter(desc, dtype, format, 4, dim, "cudnnSetFilter4dDescriptor");
}

PT_EXPORT cudnnStatus_t cudnnSetFilterNdDescriptor(cudnnFilterDescriptor_t desc,
                                                   cudnnDataType_t dtype,
                                                   cudnnTensorFormat_t format, int dims,
                                                   const int dim[]) {
  return set_filter(desc, dtype, format, dims, dim, "cudnnSetFilterNdDescriptor");
}

PT_EXPORT cudnnStatus_t cudnnCreateConvolutionDescriptor(cudnnConvolutionDescriptor_t* desc) {
  return detail::create<detail::Conv>(dnn().convs, desc, "cudnnCreateConvolutionDescriptor");
}
PT_EXPORT cudnnStatus_t cudnnDestroyConvolutionDescriptor(cudnnConvolutionDescriptor_t desc) {
  return detail::destroy<detail::Conv>(dnn().convs, desc, "cudnnDestroyConvolutionDescriptor");
}

PT_EXPORT cudnnStatus_t cudnnSetConvolutionNdDescriptor(cudnnConvolutionDescriptor_t desc,
                                                        int length, const int pad[],
                                                        const int stride[], const int dilation[],
                                                        cudnnConvolutionMode_t mode,
                                                        cudnnDataType_t compute) {
  const char* api = "cudnnSetConvolutionNdDescriptor";
  detail::Conv* c = detail::live<detail::Conv>(dnn().convs, desc);
  if (c == nullptr) {
    return detail::bad(api, "invalid convolution descriptor " + detail::pointer_text(desc));
  }
  if (length < 1 || length > CUDNN_DIM_MAX - 2 || pad == nullptr || stride == nullptr ||
      dilation == nullptr) {
    return detail::bad(api, "arrayLength " + std::to_string(length) + " outside [1, 6]");
  }
  for (int i = 0; i < length; ++i) {
    if (pad[i] < 0 || stride[i] <= 0 || dilation[i] <= 0) {
      return detail::bad(api, "negative padding or non-positive stride/dilation");
    }
  }
  c->spatial = length;
  std::copy(pad, pad + length, c->pad);
  std::copy(stride, stride + length, c->stride);
  std::copy(dilation, dilation + length, c->dilation);
  c->mode = mode;
  c->compute = compute;
  c->set = true;
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnSetConvolution2dDescriptor(cudnnConvolutionDescriptor_t desc,
                                                        int pad_h, int pad_w, int u, int v,
                                                        int dilation_h, int dilation_w,
                                                        cudnnConvolutionMode_t mode,
                                                        cudnnDataType_t compute) {
  const int pad[2] = {pad_h, pad_w};
  const int stride[2] = {u, v};
  const int dilation[2] = {dilation_h, dilation_w};
  return cudnnSetConvolutionNdDescriptor(desc, 2, pad, stride, dilation, mode, compute);
}

PT_EXPORT cudnnStatus_t cudnnSetConvolutionMathType(cudnnConvolutionDescriptor_t desc,
                                                    cudnnMathType_t math) {
  detail::Conv* c = detail::live<detail::Conv>(dnn().convs, desc);
  if (c == nullptr) return detail::bad("cudnnSetConvolutionMathType", "invalid descriptor");
  c->math = math;
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnGetConvolutionMathType(cudnnConvolutionDescriptor_t desc,
                                                    cudnnMathType_t* math) {
  detail::Conv* c = detail::live<detail::Conv>(dnn().convs, desc);
  if (c == nullptr || math == nullptr) return CUDNN_STATUS_BAD_PARAM;
  *math = c->math;
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnSetConvolutionGroupCount(cudnnConvolutionDescriptor_t desc,
                                                      int groups) {
  detail::Conv* c = detail::live<detail::Conv>(dnn().convs, desc);
  if (c == nullptr || groups < 1) {
    return detail::bad("cudnnSetConvolutionGroupCount", "invalid descriptor or group count");
  }
  c->groups = groups;
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnGetConvolutionNdForwardOutputDim(
    const cudnnConvolutionDescriptor_t conv, const cudnnTensorDescriptor_t input,
    const cudnnFilterDescriptor_t filter, int dims, int out[]) {
  const char* api = "cudnnGetConvolutionNdForwardOutputDim";
  detail::Conv* c = detail::live<detail::Conv>(dnn().convs, conv);
  detail::Tensor* x = detail::live<detail::Tensor>(dnn().tensors, input);
  detail::Filter* w = detail::live<detail::Filter>(dnn().filters, filter);
  if (c == nullptr || x == nullptr || w == nullptr || out == nullptr || !c->set || !x->set ||
      !w->set) {
    return detail::bad(api, "a descriptor is invalid or not set");
  }
  int result[CUDNN_DIM_MAX] = {};
  if (dims != x->dims || !detail::output_dims(*c, *x, *w, result)) {
    return detail::bad(api, "the descriptors' ranks disagree or the output would be empty");
  }
  std::copy(result, result + dims, out);
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnGetConvolution2dForwardOutputDim(
    const cudnnConvolutionDescriptor_t conv, const cudnnTensorDescriptor_t input,
    const cudnnFilterDescriptor_t filter, int* n, int* c, int* h, int* w) {
  int out[4] = {};
  const cudnnStatus_t status = cudnnGetConvolutionNdForwardOutputDim(conv, input, filter, 4, out);
  if (status != CUDNN_STATUS_SUCCESS) return status;
  if (n == nullptr || c == nullptr || h == nullptr || w == nullptr) {
    return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  }
  *n = out[0];
  *c = out[1];
  *h = out[2];
  *w = out[3];
  return CUDNN_STATUS_SUCCESS;
}

// ---- algorithm choice: the implicit precomputed GEMM, no workspace ---------------------------

namespace {
template <typename Perf, typename Algo>
cudnnStatus_t one_algorithm(int requested, int* returned, Perf* results, Algo algo,
                            cudnnMathType_t math) {
  if (returned == nullptr || results == nullptr || requested < 1) return CUDNN_STATUS_BAD_PARAM;
  results[0] = Perf{};
  results[0].algo = algo;
  results[0].status = CUDNN_STATUS_SUCCESS;
  results[0].time = 0.0f;  // nothing is timed here: the pipeline predicts the duration
  results[0].memory = 0;
  results[0].determinism = CUDNN_DETERMINISTIC;
  results[0].mathType = math;
  *returned = 1;
  return CUDNN_STATUS_SUCCESS;
}
}  // namespace

PT_EXPORT cudnnStatus_t cudnnGetConvolutionForwardAlgorithmMaxCount(cudnnHandle_t, int* count) {
  if (count == nullptr) return CUDNN_STATUS_BAD_PARAM;
  *count = 1;
  return CUDNN_STATUS_SUCCESS;
}
PT_EXPORT cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithmMaxCount(cudnnHandle_t,
                                                                         int* count) {
  return cudnnGetConvolutionForwardAlgorithmMaxCount(nullptr, count);
}
PT_EXPORT cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(cudnnHandle_t,
                                                                           int* count) {
  return cudnnGetConvolutionForwardAlgorithmMaxCount(nullptr, count);
}

PT_EXPORT cudnnStatus_t cudnnGetConvolutionForwardAlgorithm_v7(
    cudnnHandle_t, const cudnnTensorDescriptor_t, const cudnnFilterDescriptor_t,
    const cudnnConvolutionDescriptor_t, const cudnnTensorDescriptor_t, const int requested,
    int* returned, cudnnConvolutionFwdAlgoPerf_t* results) {
  return one_algorithm(requested, returned, results,
                       CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, CUDNN_DEFAULT_MATH);
}
PT_EXPORT cudnnStatus_t cudnnFindConvolutionForwardAlgorithm(
    cudnnHandle_t, const cudnnTensorDescriptor_t, const cudnnFilterDescriptor_t,
    const cudnnConvolutionDescriptor_t, const cudnnTensorDescriptor_t, const int requested,
    int* returned, cudnnConvolutionFwdAlgoPerf_t* results) {
  return one_algorithm(requested, returned, results,
                       CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM, CUDNN_DEFAULT_MATH);
}
PT_EXPORT cudnnStatus_t cudnnGetConvolutionBackwardDataAlgorithm_v7(
    cudnnHandle_t, const cudnnFilterDescriptor_t, const cudnnTensorDescriptor_t,
    const cudnnConvolutionDescriptor_t, const cudnnTensorDescriptor_t, const int requested,
    int* returned, cudnnConvolutionBwdDataAlgoPerf_t* results) {
  return one_algorithm(requested, returned, results, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1,
                       CUDNN_DEFAULT_MATH);
}
PT_EXPORT cudnnStatus_t cudnnFindConvolutionBackwardDataAlgorithm(
    cudnnHandle_t, const cudnnFilterDescriptor_t, const cudnnTensorDescriptor_t,
    const cudnnConvolutionDescriptor_t, const cudnnTensorDescriptor_t, const int requested,
    int* returned, cudnnConvolutionBwdDataAlgoPerf_t* results) {
  return one_algorithm(requested, returned, results, CUDNN_CONVOLUTION_BWD_DATA_ALGO_1,
                       CUDNN_DEFAULT_MATH);
}
PT_EXPORT cudnnStatus_t cudnnGetConvolutionBackwardFilterAlgorithm_v7(
    cudnnHandle_t, const cudnnTensorDescriptor_t, const cudnnTensorDescriptor_t,
    const cudnnConvolutionDescriptor_t, const cudnnFilterDescriptor_t, const int requested,
    int* returned, cudnnConvolutionBwdFilterAlgoPerf_t* results) {
  return one_algorithm(requested, returned, results, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1,
                       CUDNN_DEFAULT_MATH);
}
PT_EXPORT cudnnStatus_t cudnnFindConvolutionBackwardFilterAlgorithm(
    cudnnHandle_t, const cudnnTensorDescriptor_t, const cudnnTensorDescriptor_t,
    const cudnnConvolutionDescriptor_t, const cudnnFilterDescriptor_t, const int requested,
    int* returned, cudnnConvolutionBwdFilterAlgoPerf_t* results) {
  return one_algorithm(requested, returned, results, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1,
                       CUDNN_DEFAULT_MATH);
}

PT_EXPORT cudnnStatus_t cudnnGetConvolutionForwardWorkspaceSize(
    cudnnHandle_t, const cudnnTensorDescriptor_t, const cudnnFilterDescriptor_t,
    const cudnnConvolutionDescriptor_t, const cudnnTensorDescriptor_t, cudnnConvolutionFwdAlgo_t,
    size_t* bytes) {
  if (bytes == nullptr) return CUDNN_STATUS_BAD_PARAM;
  *bytes = 0;
  return CUDNN_STATUS_SUCCESS;
}
PT_EXPORT cudnnStatus_t cudnnGetConvolutionBackwardDataWorkspaceSize(
    cudnnHandle_t, const cudnnFilterDescriptor_t, const cudnnTensorDescriptor_t,
    const cudnnConvolutionDescriptor_t, const cudnnTensorDescriptor_t,
    cudnnConvolutionBwdDataAlgo_t, size_t* bytes) {
  if (bytes == nullptr) return CUDNN_STATUS_BAD_PARAM;
  *bytes = 0;
  return CUDNN_STATUS_SUCCESS;
}
PT_EXPORT cudnnStatus_t cudnnGetConvolutionBackwardFilterWorkspaceSize(
    cudnnHandle_t, const cudnnTensorDescriptor_t, const cudnnTensorDescriptor_t,
    const cudnnConvolutionDescriptor_t, const cudnnFilterDescriptor_t,
    cudnnConvolutionBwdFilterAlgo_t, size_t* bytes) {
  if (bytes == nullptr) return CUDNN_STATUS_BAD_PARAM;
  *bytes = 0;
  return CUDNN_STATUS_SUCCESS;
}

// ---- execution -------------------------------------------------------------------------------

PT_EXPORT cudnnStatus_t cudnnConvolutionForward(cudnnHandle_t handle, const void* alpha,
                                                const cudnnTensorDescriptor_t xDesc, const void* x,
                                                const cudnnFilterDescriptor_t wDesc, const void* w,
                                                const cudnnConvolutionDescriptor_t convDesc,
                                                cudnnConvolutionFwdAlgo_t algo, void* workspace,
                                                size_t workspaceBytes, const void* beta,
                                                const cudnnTensorDescriptor_t yDesc, void* y) {
  (void)alpha, (void)beta, (void)algo, (void)workspace, (void)workspaceBytes;
  return detail::convolution(
      detail::Direction::kForward, handle, detail::live<detail::Tensor>(dnn().tensors, xDesc), x,
      detail::live<detail::Filter>(dnn().filters, wDesc), w,
      detail::live<detail::Conv>(dnn().convs, convDesc),
      detail::live<detail::Tensor>(dnn().tensors, yDesc), y, "cudnnConvolutionForward");
}

PT_EXPORT cudnnStatus_t cudnnConvolutionBackwardData(
    cudnnHandle_t handle, const void* alpha, const cudnnFilterDescriptor_t wDesc, const void* w,
    const cudnnTensorDescriptor_t dyDesc, const void* dy,
    const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionBwdDataAlgo_t algo,
    void* workspace, size_t workspaceBytes, const void* beta, const cudnnTensorDescriptor_t dxDesc,
    void* dx) {
  (void)alpha, (void)beta, (void)algo, (void)workspace, (void)workspaceBytes;
  return detail::convolution(
      detail::Direction::kBackwardData, handle, detail::live<detail::Tensor>(dnn().tensors, dxDesc),
      dx, detail::live<detail::Filter>(dnn().filters, wDesc), w,
      detail::live<detail::Conv>(dnn().convs, convDesc),
      detail::live<detail::Tensor>(dnn().tensors, dyDesc), dy, "cudnnConvolutionBackwardData");
}

PT_EXPORT cudnnStatus_t cudnnConvolutionBackwardFilter(
    cudnnHandle_t handle, const void* alpha, const cudnnTensorDescriptor_t xDesc, const void* x,
    const cudnnTensorDescriptor_t dyDesc, const void* dy,
    const cudnnConvolutionDescriptor_t convDesc, cudnnConvolutionBwdFilterAlgo_t algo,
    void* workspace, size_t workspaceBytes, const void* beta, const cudnnFilterDescriptor_t dwDesc,
    void* dw) {
  (void)alpha, (void)beta, (void)algo, (void)workspace, (void)workspaceBytes;
  return detail::convolution(detail::Direction::kBackwardFilter, handle,
                             detail::live<detail::Tensor>(dnn().tensors, xDesc), x,
                             detail::live<detail::Filter>(dnn().filters, dwDesc), dw,
                             detail::live<detail::Conv>(dnn().convs, convDesc),
                             detail::live<detail::Tensor>(dnn().tensors, dyDesc), dy,
                             "cudnnConvolutionBackwardFilter");
}

PT_EXPORT cudnnStatus_t cudnnAddTensor(cudnnHandle_t handle, const void* alpha,
                                       const cudnnTensorDescriptor_t aDesc, const void* A,
                                       const void* beta, const cudnnTensorDescriptor_t cDesc,
                                       void* C) {
  (void)alpha, (void)beta;
  const detail::Tensor* c = detail::live<detail::Tensor>(dnn().tensors, cDesc);
  // C is read and written (C = alpha·A + beta·C; A broadcasts, e.g. a bias).
  return detail::memory_op(handle, "add_tensor", {{aDesc, A}, {cDesc, C}},
                           c != nullptr ? detail::tensor_bytes(*c) : 0, "cudnnAddTensor");
}

PT_EXPORT cudnnStatus_t cudnnCreateActivationDescriptor(cudnnActivationDescriptor_t* desc) {
  return detail::create<detail::Activation>(dnn().activations, desc,
                                            "cudnnCreateActivationDescriptor");
}
PT_EXPORT cudnnStatus_t cudnnDestroyActivationDescriptor(cudnnActivationDescriptor_t desc) {
  return detail::destroy<detail::Activation>(dnn().activations, desc,
                                             "cudnnDestroyActivationDescriptor");
}
PT_EXPORT cudnnStatus_t cudnnSetActivationDescriptor(cudnnActivationDescriptor_t desc,
                                                     cudnnActivationMode_t mode,
                                                     cudnnNanPropagation_t nan, double coef) {
  detail::Activation* a = detail::live<detail::Activation>(dnn().activations, desc);
  if (a == nullptr) return detail::bad("cudnnSetActivationDescriptor", "invalid descriptor");
  a->mode = mode, a->nan = nan, a->coef = coef;
  a->set = true;
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnActivationForward(cudnnHandle_t handle,
                                               cudnnActivationDescriptor_t desc, const void* alpha,
                                               const cudnnTensorDescriptor_t xDesc, const void* x,
                                               const void* beta,
                                               const cudnnTensorDescriptor_t yDesc, void* y) {
  (void)alpha, (void)beta;
  const char* api = "cudnnActivationForward";
  const detail::Activation* a = detail::live<detail::Activation>(dnn().activations, desc);
  if (a == nullptr || !a->set) return detail::bad(api, "invalid or unset activation descriptor");
  if (!detail::same_shape(xDesc, yDesc)) return detail::bad(api, "x and y differ in shape");
  return detail::memory_op(handle, std::string(detail::activation_name(a->mode)) + "_fwd",
                           {{xDesc, x}, {yDesc, y}}, 0, api);
}

PT_EXPORT cudnnStatus_t cudnnActivationBackward(cudnnHandle_t handle,
                                                cudnnActivationDescriptor_t desc, const void* alpha,
                                                const cudnnTensorDescriptor_t yDesc, const void* y,
                                                const cudnnTensorDescriptor_t dyDesc,
                                                const void* dy, const cudnnTensorDescriptor_t xDesc,
                                                const void* x, const void* beta,
                                                const cudnnTensorDescriptor_t dxDesc, void* dx) {
  (void)alpha, (void)beta;
  const char* api = "cudnnActivationBackward";
  const detail::Activation* a = detail::live<detail::Activation>(dnn().activations, desc);
  if (a == nullptr || !a->set) return detail::bad(api, "invalid or unset activation descriptor");
  return detail::memory_op(handle, std::string(detail::activation_name(a->mode)) + "_bwd",
                           {{yDesc, y}, {dyDesc, dy}, {xDesc, x}, {dxDesc, dx}}, 0, api);
}

PT_EXPORT cudnnStatus_t cudnnSoftmaxForward(cudnnHandle_t handle, cudnnSoftmaxAlgorithm_t algo,
                                            cudnnSoftmaxMode_t mode, const void* alpha,
                                            const cudnnTensorDescriptor_t xDesc, const void* x,
                                            const void* beta, const cudnnTensorDescriptor_t yDesc,
                                            void* y) {
  (void)algo, (void)mode, (void)alpha, (void)beta;
  if (!detail::same_shape(xDesc, yDesc)) {
    return detail::bad("cudnnSoftmaxForward", "x and y differ in shape");
  }
  return detail::memory_op(handle, "softmax_fwd", {{xDesc, x}, {yDesc, y}}, 0,
                           "cudnnSoftmaxForward");
}

PT_EXPORT cudnnStatus_t cudnnSoftmaxBackward(cudnnHandle_t handle, cudnnSoftmaxAlgorithm_t algo,
                                             cudnnSoftmaxMode_t mode, const void* alpha,
                                             const cudnnTensorDescriptor_t yDesc, const void* y,
                                             const cudnnTensorDescriptor_t dyDesc, const void* dy,
                                             const void* beta, const cudnnTensorDescriptor_t dxDesc,
                                             void* dx) {
  (void)algo, (void)mode, (void)alpha, (void)beta;
  return detail::memory_op(handle, "softmax_bwd", {{yDesc, y}, {dyDesc, dy}, {dxDesc, dx}}, 0,
                           "cudnnSoftmaxBackward");
}

PT_EXPORT cudnnStatus_t cudnnCreatePoolingDescriptor(cudnnPoolingDescriptor_t* desc) {
  return detail::create<detail::Pooling>(dnn().poolings, desc, "cudnnCreatePoolingDescriptor");
}
PT_EXPORT cudnnStatus_t cudnnDestroyPoolingDescriptor(cudnnPoolingDescriptor_t desc) {
  return detail::destroy<detail::Pooling>(dnn().poolings, desc, "cudnnDestroyPoolingDescriptor");
}

PT_EXPORT cudnnStatus_t cudnnSetPoolingNdDescriptor(cudnnPoolingDescriptor_t desc,
                                                    cudnnPoolingMode_t mode,
                                                    cudnnNanPropagation_t nan, int dims,
                                                    const int window[], const int pad[],
                                                    const int stride[]) {
  (void)nan;
  const char* api = "cudnnSetPoolingNdDescriptor";
  detail::Pooling* p = detail::live<detail::Pooling>(dnn().poolings, desc);
  if (p == nullptr) return detail::bad(api, "invalid pooling descriptor");
  if (dims < 1 || dims > CUDNN_DIM_MAX - 2 || window == nullptr || pad == nullptr ||
      stride == nullptr) {
    return detail::bad(api, "nbDims outside [1, 6] or a NULL array");
  }
  for (int i = 0; i < dims; ++i) {
    if (window[i] <= 0 || pad[i] < 0 || stride[i] <= 0) {
      return detail::bad(api, "non-positive window or stride, or negative padding");
    }
  }
  p->mode = mode;
  p->spatial = dims;
  std::copy(window, window + dims, p->window);
  std::copy(pad, pad + dims, p->pad);
  std::copy(stride, stride + dims, p->stride);
  p->set = true;
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnSetPooling2dDescriptor(cudnnPoolingDescriptor_t desc,
                                                    cudnnPoolingMode_t mode,
                                                    cudnnNanPropagation_t nan, int window_h,
                                                    int window_w, int pad_h, int pad_w,
                                                    int stride_h, int stride_w) {
  const int window[2] = {window_h, window_w};
  const int pad[2] = {pad_h, pad_w};
  const int stride[2] = {stride_h, stride_w};
  return cudnnSetPoolingNdDescriptor(desc, mode, nan, 2, window, pad, stride);
}

PT_EXPORT cudnnStatus_t cudnnGetPoolingNdForwardOutputDim(const cudnnPoolingDescriptor_t desc,
                                                          const cudnnTensorDescriptor_t input,
                                                          int dims, int out[]) {
  const char* api = "cudnnGetPoolingNdForwardOutputDim";
  const detail::Pooling* p = detail::live<detail::Pooling>(dnn().poolings, desc);
  const detail::Tensor* x = detail::live<detail::Tensor>(dnn().tensors, input);
  int result[CUDNN_DIM_MAX] = {};
  if (p == nullptr || x == nullptr || !p->set || !x->set || out == nullptr || dims != x->dims ||
      !detail::pooling_output(*p, *x, result)) {
    return detail::bad(api, "invalid descriptors or ranks, or an empty output");
  }
  std::copy(result, result + dims, out);
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnGetPooling2dForwardOutputDim(const cudnnPoolingDescriptor_t desc,
                                                          const cudnnTensorDescriptor_t input,
                                                          int* n, int* c, int* h, int* w) {
  int out[4] = {};
  const cudnnStatus_t status = cudnnGetPoolingNdForwardOutputDim(desc, input, 4, out);
  if (status != CUDNN_STATUS_SUCCESS) return status;
  if (n == nullptr || c == nullptr || h == nullptr || w == nullptr) {
    return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
  }
  *n = out[0], *c = out[1], *h = out[2], *w = out[3];
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnPoolingForward(cudnnHandle_t handle,
                                            const cudnnPoolingDescriptor_t desc, const void* alpha,
                                            const cudnnTensorDescriptor_t xDesc, const void* x,
                                            const void* beta, const cudnnTensorDescriptor_t yDesc,
                                            void* y) {
  (void)alpha, (void)beta;
  const char* api = "cudnnPoolingForward";
  const detail::Pooling* p = detail::live<detail::Pooling>(dnn().poolings, desc);
  const detail::Tensor* in = detail::live<detail::Tensor>(dnn().tensors, xDesc);
  const detail::Tensor* out = detail::live<detail::Tensor>(dnn().tensors, yDesc);
  int expected[CUDNN_DIM_MAX] = {};
  if (p == nullptr || !p->set || in == nullptr || out == nullptr || !in->set || !out->set ||
      !detail::pooling_output(*p, *in, expected) || out->dims != in->dims ||
      !std::equal(expected, expected + in->dims, out->dim)) {
    return detail::bad(api, "invalid pooling descriptor or an output of the wrong shape");
  }
  const char* mode =
      p->mode == CUDNN_POOLING_MAX || p->mode == CUDNN_POOLING_MAX_DETERMINISTIC ? "max" : "avg";
  return detail::memory_op(handle, std::string("pool_") + mode + "_fwd", {{xDesc, x}, {yDesc, y}},
                           0, api);
}

PT_EXPORT cudnnStatus_t cudnnPoolingBackward(cudnnHandle_t handle,
                                             const cudnnPoolingDescriptor_t desc, const void* alpha,
                                             const cudnnTensorDescriptor_t yDesc, const void* y,
                                             const cudnnTensorDescriptor_t dyDesc, const void* dy,
                                             const cudnnTensorDescriptor_t xDesc, const void* x,
                                             const void* beta, const cudnnTensorDescriptor_t dxDesc,
                                             void* dx) {
  (void)alpha, (void)beta;
  const detail::Pooling* p = detail::live<detail::Pooling>(dnn().poolings, desc);
  if (p == nullptr || !p->set) return detail::bad("cudnnPoolingBackward", "invalid descriptor");
  return detail::memory_op(handle, "pool_bwd", {{yDesc, y}, {dyDesc, dy}, {xDesc, x}, {dxDesc, dx}},
                           0, "cudnnPoolingBackward");
}

// ---- descriptor getters, tensor ops, reductions, LRN, batch normalization, dropout, the fused
// convolution + bias + activation and the bias gradient
// --------------------------------------------- Getters answer what the setters stored (tensor
// strides as given, else packed). Every operation is, as above, one memory-bound kernel
// cudnn_<op>_<dtype> moving its tensors' bytes once (tensors read and written count twice), nothing
// computed; the fused convolution is the convolution's `gemm` record followed by the bias +
// activation kernel. Sizes the API asks for are modelled: reduction indices 4 bytes per output
// element (min/max with indices), workspace the input's size for a full reduction, 0 otherwise;
// batch normalization workspaces 0 and reserve space one byte per element (the activation mask) for
// the fused forms; dropout states one 48-byte Philox state per thread of 64 per SM-sized block
// (here a fixed 1 MiB), reserve space one byte per element.

namespace {

using detail::device_buffer;
using detail::Tensor;

const Tensor* tensor_of(const void* desc) { return detail::live<Tensor>(dnn().tensors, desc); }

std::size_t elements(const Tensor& t) {
  std::size_t n = 1;
  for (int i = 0; i < t.dims; ++i) n *= static_cast<std::size_t>(t.dim[i]);
  return n;
}

// The operands present (NULL data pointers are optional outputs left out).
std::vector<std::pair<const void*, const void*>> present(
    std::initializer_list<std::pair<const void*, const void*>> operands) {
  std::vector<std::pair<const void*, const void*>> out;
  for (const auto& operand : operands) {
    if (operand.first != nullptr && operand.second != nullptr) out.push_back(operand);
  }
  return out;
}

constexpr std::size_t kDropoutStateBytes = std::size_t{1} << 20;

}  // namespace

PT_EXPORT cudnnStatus_t cudnnGetTensor4dDescriptor(const cudnnTensorDescriptor_t desc,
                                                   cudnnDataType_t* dtype, int* n, int* c, int* h,
                                                   int* w, int* n_stride, int* c_stride,
                                                   int* h_stride, int* w_stride) {
  const Tensor* t = tensor_of(desc);
  if (t == nullptr || !t->set || t->dims != 4)
    return detail::bad("cudnnGetTensor4dDescriptor", "not a set 4-d tensor descriptor");
  int* out[] = {n, c, h, w};
  int* strides[] = {n_stride, c_stride, h_stride, w_stride};
  for (int i = 0; i < 4; ++i) {
    if (out[i] != nullptr) *out[i] = t->dim[i];
    if (strides[i] != nullptr) *strides[i] = t->stride[i];
  }
  if (dtype != nullptr) *dtype = t->dtype;
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnGetTensorNdDescriptor(const cudnnTensorDescriptor_t desc,
                                                   int requested, cudnnDataType_t* dtype, int* dims,
                                                   int dim[], int stride[]) {
  const Tensor* t = tensor_of(desc);
  if (t == nullptr || !t->set || requested < 0)
    return detail::bad("cudnnGetTensorNdDescriptor", "not a set tensor descriptor");
  if (dtype != nullptr) *dtype = t->dtype;
  if (dims != nullptr) *dims = t->dims;
  for (int i = 0; i < std::min(requested, t->dims); ++i) {
    if (dim != nullptr) dim[i] = t->dim[i];
    if (stride != nullptr) stride[i] = t->stride[i];
  }
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnGetTensorSizeInBytes(const cudnnTensorDescriptor_t desc,
                                                  size_t* size) {
  const Tensor* t = tensor_of(desc);
  if (t == nullptr || !t->set || size == nullptr)
    return detail::bad("cudnnGetTensorSizeInBytes", "not a set tensor descriptor, or NULL size");
  *size = detail::tensor_span_bytes(*t);
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnGetFilter4dDescriptor(const cudnnFilterDescriptor_t desc,
                                                   cudnnDataType_t* dtype,
                                                   cudnnTensorFormat_t* format, int* k, int* c,
                                                   int* h, int* w) {
  const auto* f = detail::live<detail::Filter>(dnn().filters, desc);
  if (f == nullptr || !f->set || f->dims != 4)
    return detail::bad("cudnnGetFilter4dDescriptor", "not a set 4-d filter descriptor");
  int* out[] = {k, c, h, w};
  for (int i = 0; i < 4; ++i) {
    if (out[i] != nullptr) *out[i] = f->dim[i];
  }
  if (dtype != nullptr) *dtype = f->dtype;
  if (format != nullptr) *format = f->format;
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnGetFilterNdDescriptor(const cudnnFilterDescriptor_t desc,
                                                   int requested, cudnnDataType_t* dtype,
                                                   cudnnTensorFormat_t* format, int* dims,
                                                   int dim[]) {
  const auto* f = detail::live<detail::Filter>(dnn().filters, desc);
  if (f == nullptr || !f->set || requested < 0)
    return detail::bad("cudnnGetFilterNdDescriptor", "not a set filter descriptor");
  if (dtype != nullptr) *dtype = f->dtype;
  if (format != nullptr) *format = f->format;
  if (dims != nullptr) *dims = f->dims;
  for (int i = 0; dim != nullptr && i < std::min(requested, f->dims); ++i) dim[i] = f->dim[i];
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnGetFilterSizeInBytes(const cudnnFilterDescriptor_t desc,
                                                  size_t* size) {
  const auto* f = detail::live<detail::Filter>(dnn().filters, desc);
  if (f == nullptr || !f->set || size == nullptr)
    return detail::bad("cudnnGetFilterSizeInBytes", "not a set filter descriptor, or NULL size");
  std::size_t n = 1;
  for (int i = 0; i < f->dims; ++i) n *= static_cast<std::size_t>(f->dim[i]);
  *size = n * detail::dtype_bytes(f->dtype);
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnGetConvolution2dDescriptor(const cudnnConvolutionDescriptor_t desc,
                                                        int* pad_h, int* pad_w, int* u, int* v,
                                                        int* dilation_h, int* dilation_w,
                                                        cudnnConvolutionMode_t* mode,
                                                        cudnnDataType_t* compute) {
  const auto* c = detail::live<detail::Conv>(dnn().convs, desc);
  if (c == nullptr || !c->set || c->spatial != 2)
    return detail::bad("cudnnGetConvolution2dDescriptor", "not a set 2-d convolution descriptor");
  int* out[] = {pad_h, pad_w, u, v, dilation_h, dilation_w};
  const int values[] = {c->pad[0],    c->pad[1],      c->stride[0],
                        c->stride[1], c->dilation[0], c->dilation[1]};
  for (int i = 0; i < 6; ++i) {
    if (out[i] != nullptr) *out[i] = values[i];
  }
  if (mode != nullptr) *mode = c->mode;
  if (compute != nullptr) *compute = c->compute;
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnGetConvolutionNdDescriptor(const cudnnConvolutionDescriptor_t desc,
                                                        int requested, int* length, int pad[],
                                                        int stride[], int dilation[],
                                                        cudnnConvolutionMode_t* mode,
                                                        cudnnDataType_t* compute) {
  const auto* c = detail::live<detail::Conv>(dnn().convs, desc);
  if (c == nullptr || !c->set || requested < 0)
    return detail::bad("cudnnGetConvolutionNdDescriptor", "not a set convolution descriptor");
  if (length != nullptr) *length = c->spatial;
  for (int i = 0; i < std::min(requested, c->spatial); ++i) {
    if (pad != nullptr) pad[i] = c->pad[i];
    if (stride != nullptr) stride[i] = c->stride[i];
    if (dilation != nullptr) dilation[i] = c->dilation[i];
  }
  if (mode != nullptr) *mode = c->mode;
  if (compute != nullptr) *compute = c->compute;
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnGetConvolutionGroupCount(cudnnConvolutionDescriptor_t desc,
                                                      int* groups) {
  const auto* c = detail::live<detail::Conv>(dnn().convs, desc);
  if (c == nullptr || groups == nullptr)
    return detail::bad("cudnnGetConvolutionGroupCount", "invalid descriptor or NULL result");
  *groups = c->groups;
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnSetConvolutionReorderType(cudnnConvolutionDescriptor_t desc,
                                                       cudnnReorderType_t type) {
  auto* c = detail::live<detail::Conv>(dnn().convs, desc);
  if (c == nullptr) return detail::bad("cudnnSetConvolutionReorderType", "invalid descriptor");
  // The reordering of INT8x32 filters does not change the modelled work.
  if (type != CUDNN_DEFAULT_REORDER && type != CUDNN_NO_REORDER)
    return detail::bad("cudnnSetConvolutionReorderType", "unknown reorder type");
  c->reorder = type;
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnGetConvolutionReorderType(cudnnConvolutionDescriptor_t desc,
                                                       cudnnReorderType_t* type) {
  const auto* c = detail::live<detail::Conv>(dnn().convs, desc);
  if (c == nullptr || type == nullptr)
    return detail::bad("cudnnGetConvolutionReorderType", "invalid descriptor or NULL result");
  *type = c->reorder;
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnGetPooling2dDescriptor(const cudnnPoolingDescriptor_t desc,
                                                    cudnnPoolingMode_t* mode,
                                                    cudnnNanPropagation_t* nan, int* window_h,
                                                    int* window_w, int* pad_h, int* pad_w,
                                                    int* stride_h, int* stride_w) {
  const auto* p = detail::live<detail::Pooling>(dnn().poolings, desc);
  if (p == nullptr || !p->set || p->spatial != 2)
    return detail::bad("cudnnGetPooling2dDescriptor", "not a set 2-d pooling descriptor");
  int* out[] = {window_h, window_w, pad_h, pad_w, stride_h, stride_w};
  const int values[] = {p->window[0], p->window[1], p->pad[0],
                        p->pad[1],    p->stride[0], p->stride[1]};
  for (int i = 0; i < 6; ++i) {
    if (out[i] != nullptr) *out[i] = values[i];
  }
  if (mode != nullptr) *mode = p->mode;
  if (nan != nullptr) *nan = CUDNN_NOT_PROPAGATE_NAN;
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnGetPoolingNdDescriptor(const cudnnPoolingDescriptor_t desc,
                                                    int requested, cudnnPoolingMode_t* mode,
                                                    cudnnNanPropagation_t* nan, int* dims,
                                                    int window[], int padding[], int stride[]) {
  const auto* p = detail::live<detail::Pooling>(dnn().poolings, desc);
  if (p == nullptr || !p->set || requested < 0)
    return detail::bad("cudnnGetPoolingNdDescriptor", "not a set pooling descriptor");
  if (mode != nullptr) *mode = p->mode;
  if (nan != nullptr) *nan = CUDNN_NOT_PROPAGATE_NAN;
  if (dims != nullptr) *dims = p->spatial;
  for (int i = 0; i < std::min(requested, p->spatial); ++i) {
    if (window != nullptr) window[i] = p->window[i];
    if (padding != nullptr) padding[i] = p->pad[i];
    if (stride != nullptr) stride[i] = p->stride[i];
  }
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnGetActivationDescriptor(const cudnnActivationDescriptor_t desc,
                                                     cudnnActivationMode_t* mode,
                                                     cudnnNanPropagation_t* nan, double* coef) {
  const auto* a = detail::live<detail::Activation>(dnn().activations, desc);
  if (a == nullptr || !a->set)
    return detail::bad("cudnnGetActivationDescriptor", "not a set activation descriptor");
  if (mode != nullptr) *mode = a->mode;
  if (nan != nullptr) *nan = a->nan;
  if (coef != nullptr) *coef = a->coef;
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnSetActivationDescriptorSwishBeta(cudnnActivationDescriptor_t desc,
                                                              double beta) {
  auto* a = detail::live<detail::Activation>(dnn().activations, desc);
  if (a == nullptr)
    return detail::bad("cudnnSetActivationDescriptorSwishBeta", "invalid descriptor");
  a->swish_beta = beta;
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnGetActivationDescriptorSwishBeta(cudnnActivationDescriptor_t desc,
                                                              double* beta) {
  const auto* a = detail::live<detail::Activation>(dnn().activations, desc);
  if (a == nullptr || beta == nullptr)
    return detail::bad("cudnnGetActivationDescriptorSwishBeta", "invalid descriptor or NULL");
  *beta = a->swish_beta;
  return CUDNN_STATUS_SUCCESS;
}

// -- element-wise tensor operations
PT_EXPORT cudnnStatus_t cudnnSetTensor(cudnnHandle_t handle, const cudnnTensorDescriptor_t y_desc,
                                       void* y, const void* value) {
  if (value == nullptr) return detail::bad("cudnnSetTensor", "valuePtr is NULL");
  return detail::memory_op(handle, "set_tensor", {{y_desc, y}}, 0, "cudnnSetTensor");
}

PT_EXPORT cudnnStatus_t cudnnScaleTensor(cudnnHandle_t handle, const cudnnTensorDescriptor_t y_desc,
                                         void* y, const void* alpha) {
  if (alpha == nullptr) return detail::bad("cudnnScaleTensor", "alpha is NULL");
  const Tensor* t = tensor_of(y_desc);
  return detail::memory_op(handle, "scale_tensor", {{y_desc, y}},
                           t != nullptr ? detail::tensor_bytes(*t) : 0, "cudnnScaleTensor");
}

PT_EXPORT cudnnStatus_t cudnnTransformTensor(cudnnHandle_t handle, const void* alpha,
                                             const cudnnTensorDescriptor_t x_desc, const void* x,
                                             const void* beta, const cudnnTensorDescriptor_t y_desc,
                                             void* y) {
  (void)alpha, (void)beta;
  const Tensor* a = tensor_of(x_desc);
  const Tensor* b = tensor_of(y_desc);
  if (a == nullptr || b == nullptr || elements(*a) != elements(*b))
    return detail::bad("cudnnTransformTensor", "x and y do not hold the same elements");
  return detail::memory_op(handle, "transform_tensor", {{x_desc, x}, {y_desc, y}}, 0,
                           "cudnnTransformTensor");
}

PT_EXPORT cudnnStatus_t cudnnCreateOpTensorDescriptor(cudnnOpTensorDescriptor_t* desc) {
  return detail::create<detail::OpTensorDesc>(dnn().op_tensors, desc,
                                              "cudnnCreateOpTensorDescriptor");
}
PT_EXPORT cudnnStatus_t cudnnDestroyOpTensorDescriptor(cudnnOpTensorDescriptor_t desc) {
  return detail::destroy<detail::OpTensorDesc>(dnn().op_tensors, desc,
                                               "cudnnDestroyOpTensorDescriptor");
}
PT_EXPORT cudnnStatus_t cudnnSetOpTensorDescriptor(cudnnOpTensorDescriptor_t desc,
                                                   cudnnOpTensorOp_t op, cudnnDataType_t compute,
                                                   cudnnNanPropagation_t nan) {
  auto* d = detail::live<detail::OpTensorDesc>(dnn().op_tensors, desc);
  if (d == nullptr) return detail::bad("cudnnSetOpTensorDescriptor", "invalid descriptor");
  d->op = op, d->compute = compute, d->nan = nan, d->set = true;
  return CUDNN_STATUS_SUCCESS;
}
PT_EXPORT cudnnStatus_t cudnnGetOpTensorDescriptor(const cudnnOpTensorDescriptor_t desc,
                                                   cudnnOpTensorOp_t* op, cudnnDataType_t* compute,
                                                   cudnnNanPropagation_t* nan) {
  const auto* d = detail::live<detail::OpTensorDesc>(dnn().op_tensors, desc);
  if (d == nullptr || !d->set) return detail::bad("cudnnGetOpTensorDescriptor", "not set");
  if (op != nullptr) *op = d->op;
  if (compute != nullptr) *compute = d->compute;
  if (nan != nullptr) *nan = d->nan;
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnOpTensor(cudnnHandle_t handle, const cudnnOpTensorDescriptor_t desc,
                                      const void* alpha1, const cudnnTensorDescriptor_t a_desc,
                                      const void* a, const void* alpha2,
                                      const cudnnTensorDescriptor_t b_desc, const void* b,
                                      const void* beta, const cudnnTensorDescriptor_t c_desc,
                                      void* c) {
  (void)alpha1, (void)alpha2, (void)beta;
  const char* api = "cudnnOpTensor";
  const auto* d = detail::live<detail::OpTensorDesc>(dnn().op_tensors, desc);
  if (d == nullptr || !d->set) return detail::bad(api, "invalid or unset op-tensor descriptor");
  const bool unary = d->op == CUDNN_OP_TENSOR_SQRT || d->op == CUDNN_OP_TENSOR_NOT;
  const Tensor* out = tensor_of(c_desc);
  return detail::memory_op(
      handle, "op_tensor",
      unary
          ? std::vector<std::pair<const void*, const void*>>{{a_desc, a}, {c_desc, c}}
          : std::vector<std::pair<const void*, const void*>>{{a_desc, a}, {b_desc, b}, {c_desc, c}},
      out != nullptr ? detail::tensor_bytes(*out) : 0, api);
}

PT_EXPORT cudnnStatus_t cudnnCreateReduceTensorDescriptor(cudnnReduceTensorDescriptor_t* desc) {
  return detail::create<detail::ReduceTensorDesc>(dnn().reduce_tensors, desc,
                                                  "cudnnCreateReduceTensorDescriptor");
}
PT_EXPORT cudnnStatus_t cudnnDestroyReduceTensorDescriptor(cudnnReduceTensorDescriptor_t desc) {
  return detail::destroy<detail::ReduceTensorDesc>(dnn().reduce_tensors, desc,
                                                   "cudnnDestroyReduceTensorDescriptor");
}
PT_EXPORT cudnnStatus_t cudnnSetReduceTensorDescriptor(
    cudnnReduceTensorDescriptor_t desc, cudnnReduceTensorOp_t op, cudnnDataType_t compute,
    cudnnNanPropagation_t nan, cudnnReduceTensorIndices_t indices, cudnnIndicesType_t index_type) {
  auto* d = detail::live<detail::ReduceTensorDesc>(dnn().reduce_tensors, desc);
  if (d == nullptr) return detail::bad("cudnnSetReduceTensorDescriptor", "invalid descriptor");
  d->op = op, d->compute = compute, d->nan = nan, d->indices = indices, d->index_type = index_type;
  d->set = true;
  return CUDNN_STATUS_SUCCESS;
}
PT_EXPORT cudnnStatus_t cudnnGetReduceTensorDescriptor(const cudnnReduceTensorDescriptor_t desc,
                                                       cudnnReduceTensorOp_t* op,
                                                       cudnnDataType_t* compute,
                                                       cudnnNanPropagation_t* nan,
                                                       cudnnReduceTensorIndices_t* indices,
                                                       cudnnIndicesType_t* index_type) {
  const auto* d = detail::live<detail::ReduceTensorDesc>(dnn().reduce_tensors, desc);
  if (d == nullptr || !d->set) return detail::bad("cudnnGetReduceTensorDescriptor", "not set");
  if (op != nullptr) *op = d->op;
  if (compute != nullptr) *compute = d->compute;
  if (nan != nullptr) *nan = d->nan;
  if (indices != nullptr) *indices = d->indices;
  if (index_type != nullptr) *index_type = d->index_type;
  return CUDNN_STATUS_SUCCESS;
}

namespace {
// C's dimensions must be A's or 1 (the reduced ones).
cudnnStatus_t reduction_shapes(const void* a_desc, const void* c_desc, const char* api,
                               const Tensor** a_out, const Tensor** c_out) {
  const Tensor* a = tensor_of(a_desc);
  const Tensor* c = tensor_of(c_desc);
  if (a == nullptr || c == nullptr || !a->set || !c->set || a->dims != c->dims)
    return detail::bad(api, "A and C must be set tensors of the same rank");
  for (int i = 0; i < a->dims; ++i) {
    if (c->dim[i] != a->dim[i] && c->dim[i] != 1)
      return detail::bad(api, "C's dimension " + std::to_string(i) + " is neither A's nor 1");
  }
  *a_out = a, *c_out = c;
  return CUDNN_STATUS_SUCCESS;
}
}  // namespace

PT_EXPORT cudnnStatus_t cudnnGetReductionIndicesSize(cudnnHandle_t handle,
                                                     const cudnnReduceTensorDescriptor_t desc,
                                                     const cudnnTensorDescriptor_t a_desc,
                                                     const cudnnTensorDescriptor_t c_desc,
                                                     size_t* size) {
  (void)handle;
  const char* api = "cudnnGetReductionIndicesSize";
  const auto* d = detail::live<detail::ReduceTensorDesc>(dnn().reduce_tensors, desc);
  const Tensor *a = nullptr, *c = nullptr;
  if (d == nullptr || size == nullptr) return detail::bad(api, "invalid descriptor or NULL size");
  if (const cudnnStatus_t s = reduction_shapes(a_desc, c_desc, api, &a, &c);
      s != CUDNN_STATUS_SUCCESS)
    return s;
  const bool with_indices = d->indices == CUDNN_REDUCE_TENSOR_FLATTENED_INDICES &&
                            (d->op == CUDNN_REDUCE_TENSOR_MIN || d->op == CUDNN_REDUCE_TENSOR_MAX ||
                             d->op == CUDNN_REDUCE_TENSOR_AMAX);
  *size = with_indices ? elements(*c) * 4 : 0;
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnGetReductionWorkspaceSize(cudnnHandle_t handle,
                                                       const cudnnReduceTensorDescriptor_t desc,
                                                       const cudnnTensorDescriptor_t a_desc,
                                                       const cudnnTensorDescriptor_t c_desc,
                                                       size_t* size) {
  (void)handle;
  const char* api = "cudnnGetReductionWorkspaceSize";
  const auto* d = detail::live<detail::ReduceTensorDesc>(dnn().reduce_tensors, desc);
  const Tensor *a = nullptr, *c = nullptr;
  if (d == nullptr || size == nullptr) return detail::bad(api, "invalid descriptor or NULL size");
  if (const cudnnStatus_t s = reduction_shapes(a_desc, c_desc, api, &a, &c);
      s != CUDNN_STATUS_SUCCESS)
    return s;
  *size = elements(*c) == 1 ? detail::tensor_bytes(*a) : 0;  // a full reduction: two passes
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnReduceTensor(cudnnHandle_t handle,
                                          const cudnnReduceTensorDescriptor_t desc, void* indices,
                                          size_t indices_bytes, void* workspace,
                                          size_t workspace_bytes, const void* alpha,
                                          const cudnnTensorDescriptor_t a_desc, const void* a,
                                          const void* beta, const cudnnTensorDescriptor_t c_desc,
                                          void* c) {
  (void)indices, (void)indices_bytes, (void)workspace, (void)workspace_bytes, (void)alpha,
      (void)beta;
  const char* api = "cudnnReduceTensor";
  const auto* d = detail::live<detail::ReduceTensorDesc>(dnn().reduce_tensors, desc);
  const Tensor *at = nullptr, *ct = nullptr;
  if (d == nullptr || !d->set) return detail::bad(api, "invalid or unset reduce descriptor");
  if (const cudnnStatus_t s = reduction_shapes(a_desc, c_desc, api, &at, &ct);
      s != CUDNN_STATUS_SUCCESS)
    return s;
  return detail::memory_op(handle, "reduce_tensor", {{a_desc, a}, {c_desc, c}}, 0, api);
}

// -- LRN
PT_EXPORT cudnnStatus_t cudnnCreateLRNDescriptor(cudnnLRNDescriptor_t* desc) {
  return detail::create<detail::LrnDesc>(dnn().lrns, desc, "cudnnCreateLRNDescriptor");
}
PT_EXPORT cudnnStatus_t cudnnDestroyLRNDescriptor(cudnnLRNDescriptor_t desc) {
  return detail::destroy<detail::LrnDesc>(dnn().lrns, desc, "cudnnDestroyLRNDescriptor");
}
PT_EXPORT cudnnStatus_t cudnnSetLRNDescriptor(cudnnLRNDescriptor_t desc, unsigned n, double alpha,
                                              double beta, double k) {
  auto* d = detail::live<detail::LrnDesc>(dnn().lrns, desc);
  if (d == nullptr) return detail::bad("cudnnSetLRNDescriptor", "invalid descriptor");
  if (n < 1 || n > 16 || k < 1e-5 || beta < 0.01)  // CUDNN_LRN_MIN_N .. MAX_N, MIN_K, MIN_BETA
    return detail::bad("cudnnSetLRNDescriptor", "lrnN outside [1, 16], k < 1e-5 or beta < 0.01");
  d->n = n, d->alpha = alpha, d->beta = beta, d->k = k;
  return CUDNN_STATUS_SUCCESS;
}
PT_EXPORT cudnnStatus_t cudnnGetLRNDescriptor(cudnnLRNDescriptor_t desc, unsigned* n, double* alpha,
                                              double* beta, double* k) {
  const auto* d = detail::live<detail::LrnDesc>(dnn().lrns, desc);
  if (d == nullptr) return detail::bad("cudnnGetLRNDescriptor", "invalid descriptor");
  if (n != nullptr) *n = d->n;
  if (alpha != nullptr) *alpha = d->alpha;
  if (beta != nullptr) *beta = d->beta;
  if (k != nullptr) *k = d->k;
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnLRNCrossChannelForward(cudnnHandle_t handle, cudnnLRNDescriptor_t desc,
                                                    cudnnLRNMode_t mode, const void* alpha,
                                                    const cudnnTensorDescriptor_t x_desc,
                                                    const void* x, const void* beta,
                                                    const cudnnTensorDescriptor_t y_desc, void* y) {
  (void)mode, (void)alpha, (void)beta;
  const char* api = "cudnnLRNCrossChannelForward";
  if (detail::live<detail::LrnDesc>(dnn().lrns, desc) == nullptr)
    return detail::bad(api, "invalid LRN descriptor");
  if (!detail::same_shape(x_desc, y_desc)) return detail::bad(api, "x and y differ in shape");
  return detail::memory_op(handle, "lrn_fwd", {{x_desc, x}, {y_desc, y}}, 0, api);
}

PT_EXPORT cudnnStatus_t cudnnLRNCrossChannelBackward(
    cudnnHandle_t handle, cudnnLRNDescriptor_t desc, cudnnLRNMode_t mode, const void* alpha,
    const cudnnTensorDescriptor_t y_desc, const void* y, const cudnnTensorDescriptor_t dy_desc,
    const void* dy, const cudnnTensorDescriptor_t x_desc, const void* x, const void* beta,
    const cudnnTensorDescriptor_t dx_desc, void* dx) {
  (void)mode, (void)alpha, (void)beta;
  const char* api = "cudnnLRNCrossChannelBackward";
  if (detail::live<detail::LrnDesc>(dnn().lrns, desc) == nullptr)
    return detail::bad(api, "invalid LRN descriptor");
  return detail::memory_op(handle, "lrn_bwd",
                           {{y_desc, y}, {dy_desc, dy}, {x_desc, x}, {dx_desc, dx}}, 0, api);
}

// -- batch normalization
PT_EXPORT cudnnStatus_t cudnnDeriveBNTensorDescriptor(cudnnTensorDescriptor_t derived,
                                                      const cudnnTensorDescriptor_t x_desc,
                                                      cudnnBatchNormMode_t mode) {
  const char* api = "cudnnDeriveBNTensorDescriptor";
  const Tensor* x = tensor_of(x_desc);
  if (x == nullptr || !x->set) return detail::bad(api, "x is not a set tensor descriptor");
  int dim[CUDNN_DIM_MAX];
  dim[0] = 1;
  for (int i = 1; i < x->dims; ++i) {
    dim[i] = mode == CUDNN_BATCHNORM_PER_ACTIVATION || i == 1 ? x->dim[i] : 1;
  }
  // Half inputs keep float statistics, as cuDNN derives them.
  const cudnnDataType_t dtype =
      x->dtype == CUDNN_DATA_HALF || x->dtype == CUDNN_DATA_BFLOAT16 ? CUDNN_DATA_FLOAT : x->dtype;
  return set_tensor(derived, dtype, x->dims, dim, api);
}

PT_EXPORT cudnnStatus_t cudnnBatchNormalizationForwardTraining(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void* alpha, const void* beta,
    const cudnnTensorDescriptor_t x_desc, const void* x, const cudnnTensorDescriptor_t y_desc,
    void* y, const cudnnTensorDescriptor_t bn_desc, const void* scale, const void* bias,
    double average_factor, void* running_mean, void* running_variance, double epsilon,
    void* save_mean, void* save_inv_variance) {
  (void)mode, (void)alpha, (void)beta, (void)average_factor, (void)epsilon;
  const char* api = "cudnnBatchNormalizationForwardTraining";
  if (!detail::same_shape(x_desc, y_desc)) return detail::bad(api, "x and y differ in shape");
  // x is read twice (statistics, then normalization); the running statistics read and written.
  const Tensor* xt = tensor_of(x_desc);
  return detail::memory_op(handle, "batchnorm_fwd_training",
                           present({{x_desc, x},
                                    {y_desc, y},
                                    {bn_desc, scale},
                                    {bn_desc, bias},
                                    {bn_desc, running_mean},
                                    {bn_desc, running_variance},
                                    {bn_desc, save_mean},
                                    {bn_desc, save_inv_variance}}),
                           xt != nullptr ? detail::tensor_bytes(*xt) : 0, api);
}

PT_EXPORT cudnnStatus_t cudnnBatchNormalizationForwardInference(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void* alpha, const void* beta,
    const cudnnTensorDescriptor_t x_desc, const void* x, const cudnnTensorDescriptor_t y_desc,
    void* y, const cudnnTensorDescriptor_t bn_desc, const void* scale, const void* bias,
    const void* mean, const void* variance, double epsilon) {
  (void)mode, (void)alpha, (void)beta, (void)epsilon;
  const char* api = "cudnnBatchNormalizationForwardInference";
  if (!detail::same_shape(x_desc, y_desc)) return detail::bad(api, "x and y differ in shape");
  return detail::memory_op(handle, "batchnorm_fwd_inference",
                           {{x_desc, x},
                            {y_desc, y},
                            {bn_desc, scale},
                            {bn_desc, bias},
                            {bn_desc, mean},
                            {bn_desc, variance}},
                           0, api);
}

PT_EXPORT cudnnStatus_t cudnnBatchNormalizationBackward(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, const void* alpha_data, const void* beta_data,
    const void* alpha_param, const void* beta_param, const cudnnTensorDescriptor_t x_desc,
    const void* x, const cudnnTensorDescriptor_t dy_desc, const void* dy,
    const cudnnTensorDescriptor_t dx_desc, void* dx, const cudnnTensorDescriptor_t bn_desc,
    const void* scale, void* d_scale, void* d_bias, double epsilon, const void* saved_mean,
    const void* saved_inv_variance) {
  (void)mode, (void)alpha_data, (void)beta_data, (void)alpha_param, (void)beta_param, (void)epsilon;
  const char* api = "cudnnBatchNormalizationBackward";
  // x and dy are read twice (the parameter gradients, then dx).
  const Tensor* xt = tensor_of(x_desc);
  return detail::memory_op(handle, "batchnorm_bwd",
                           present({{x_desc, x},
                                    {dy_desc, dy},
                                    {dx_desc, dx},
                                    {bn_desc, scale},
                                    {bn_desc, d_scale},
                                    {bn_desc, d_bias},
                                    {bn_desc, saved_mean},
                                    {bn_desc, saved_inv_variance}}),
                           xt != nullptr ? 2 * detail::tensor_bytes(*xt) : 0, api);
}

PT_EXPORT cudnnStatus_t cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t ops,
    const cudnnTensorDescriptor_t x_desc, const cudnnTensorDescriptor_t z_desc,
    const cudnnTensorDescriptor_t y_desc, const cudnnTensorDescriptor_t bn_desc,
    const cudnnActivationDescriptor_t activation, size_t* size) {
  (void)handle, (void)mode, (void)ops, (void)x_desc, (void)z_desc, (void)y_desc, (void)bn_desc,
      (void)activation;
  if (size == nullptr)
    return detail::bad("cudnnGetBatchNormalizationForwardTrainingExWorkspaceSize", "NULL size");
  *size = 0;
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnGetBatchNormalizationBackwardExWorkspaceSize(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t ops,
    const cudnnTensorDescriptor_t x_desc, const cudnnTensorDescriptor_t y_desc,
    const cudnnTensorDescriptor_t dy_desc, const cudnnTensorDescriptor_t dz_desc,
    const cudnnTensorDescriptor_t dx_desc, const cudnnTensorDescriptor_t bn_desc,
    const cudnnActivationDescriptor_t activation, size_t* size) {
  (void)handle, (void)mode, (void)ops, (void)x_desc, (void)y_desc, (void)dy_desc, (void)dz_desc,
      (void)dx_desc, (void)bn_desc, (void)activation;
  if (size == nullptr)
    return detail::bad("cudnnGetBatchNormalizationBackwardExWorkspaceSize", "NULL size");
  *size = 0;
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnGetBatchNormalizationTrainingExReserveSpaceSize(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t ops,
    const cudnnActivationDescriptor_t activation, const cudnnTensorDescriptor_t x_desc,
    size_t* size) {
  (void)handle, (void)mode, (void)activation;
  const Tensor* x = tensor_of(x_desc);
  if (x == nullptr || size == nullptr)
    return detail::bad("cudnnGetBatchNormalizationTrainingExReserveSpaceSize", "invalid x or size");
  *size = ops == CUDNN_BATCHNORM_OPS_BN ? 0 : elements(*x);  // the activation mask
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnBatchNormalizationForwardTrainingEx(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t ops, const void* alpha,
    const void* beta, const cudnnTensorDescriptor_t x_desc, const void* x,
    const cudnnTensorDescriptor_t z_desc, const void* z, const cudnnTensorDescriptor_t y_desc,
    void* y, const cudnnTensorDescriptor_t bn_desc, const void* scale, const void* bias,
    double average_factor, void* running_mean, void* running_variance, double epsilon,
    void* save_mean, void* save_inv_variance, cudnnActivationDescriptor_t activation,
    void* workspace, size_t workspace_bytes, void* reserve, size_t reserve_bytes) {
  (void)mode, (void)alpha, (void)beta, (void)average_factor, (void)epsilon, (void)activation,
      (void)workspace, (void)workspace_bytes, (void)reserve;
  const char* api = "cudnnBatchNormalizationForwardTrainingEx";
  if (!detail::same_shape(x_desc, y_desc)) return detail::bad(api, "x and y differ in shape");
  const Tensor* xt = tensor_of(x_desc);
  const bool add = ops == CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION;
  return detail::memory_op(handle, "batchnorm_fwd_training_ex",
                           present({{x_desc, x},
                                    {add ? z_desc : nullptr, z},
                                    {y_desc, y},
                                    {bn_desc, scale},
                                    {bn_desc, bias},
                                    {bn_desc, running_mean},
                                    {bn_desc, running_variance},
                                    {bn_desc, save_mean},
                                    {bn_desc, save_inv_variance}}),
                           (xt != nullptr ? detail::tensor_bytes(*xt) : 0) + reserve_bytes, api);
}

PT_EXPORT cudnnStatus_t cudnnBatchNormalizationBackwardEx(
    cudnnHandle_t handle, cudnnBatchNormMode_t mode, cudnnBatchNormOps_t ops,
    const void* alpha_data, const void* beta_data, const void* alpha_param, const void* beta_param,
    const cudnnTensorDescriptor_t x_desc, const void* x, const cudnnTensorDescriptor_t y_desc,
    const void* y, const cudnnTensorDescriptor_t dy_desc, const void* dy,
    const cudnnTensorDescriptor_t dz_desc, void* dz, const cudnnTensorDescriptor_t dx_desc,
    void* dx, const cudnnTensorDescriptor_t bn_desc, const void* scale, const void* bias,
    void* d_scale, void* d_bias, double epsilon, const void* saved_mean,
    const void* saved_inv_variance, cudnnActivationDescriptor_t activation, void* workspace,
    size_t workspace_bytes, void* reserve, size_t reserve_bytes) {
  (void)mode, (void)alpha_data, (void)beta_data, (void)alpha_param, (void)beta_param, (void)epsilon,
      (void)activation, (void)workspace, (void)workspace_bytes, (void)reserve;
  const char* api = "cudnnBatchNormalizationBackwardEx";
  const Tensor* xt = tensor_of(x_desc);
  const bool fused = ops != CUDNN_BATCHNORM_OPS_BN;
  const bool add = ops == CUDNN_BATCHNORM_OPS_BN_ADD_ACTIVATION;
  return detail::memory_op(handle, "batchnorm_bwd_ex",
                           present({{x_desc, x},
                                    {fused ? y_desc : nullptr, y},
                                    {dy_desc, dy},
                                    {add ? dz_desc : nullptr, dz},
                                    {dx_desc, dx},
                                    {bn_desc, scale},
                                    {bn_desc, bias},
                                    {bn_desc, d_scale},
                                    {bn_desc, d_bias},
                                    {bn_desc, saved_mean},
                                    {bn_desc, saved_inv_variance}}),
                           (xt != nullptr ? 2 * detail::tensor_bytes(*xt) : 0) + reserve_bytes,
                           api);
}

// -- dropout
PT_EXPORT cudnnStatus_t cudnnCreateDropoutDescriptor(cudnnDropoutDescriptor_t* desc) {
  return detail::create<detail::DropoutDesc>(dnn().dropouts, desc, "cudnnCreateDropoutDescriptor");
}
PT_EXPORT cudnnStatus_t cudnnDestroyDropoutDescriptor(cudnnDropoutDescriptor_t desc) {
  return detail::destroy<detail::DropoutDesc>(dnn().dropouts, desc,
                                              "cudnnDestroyDropoutDescriptor");
}
PT_EXPORT cudnnStatus_t cudnnDropoutGetStatesSize(cudnnHandle_t handle, size_t* size) {
  if (detail::live<detail::Handle>(dnn().handles, handle) == nullptr || size == nullptr)
    return detail::bad("cudnnDropoutGetStatesSize", "invalid handle or NULL size");
  *size = kDropoutStateBytes;
  return CUDNN_STATUS_SUCCESS;
}
PT_EXPORT cudnnStatus_t cudnnDropoutGetReserveSpaceSize(cudnnTensorDescriptor_t x_desc,
                                                        size_t* size) {
  const Tensor* x = tensor_of(x_desc);
  if (x == nullptr || !x->set || size == nullptr)
    return detail::bad("cudnnDropoutGetReserveSpaceSize", "invalid x or NULL size");
  *size = elements(*x);  // one mask byte per element
  return CUDNN_STATUS_SUCCESS;
}

namespace {
cudnnStatus_t set_dropout(cudnnDropoutDescriptor_t desc, cudnnHandle_t handle, float dropout,
                          void* states, size_t state_bytes, unsigned long long seed, bool init,
                          const char* api) {
  const std::int64_t start = powertrain::emu::now_ns();
  auto* d = detail::live<detail::DropoutDesc>(dnn().dropouts, desc);
  const detail::Handle* h = detail::live<detail::Handle>(dnn().handles, handle);
  if (d == nullptr || h == nullptr) return detail::bad(api, "invalid descriptor or handle");
  if (!(dropout >= 0.0f && dropout <= 1.0f)) return detail::bad(api, "dropout outside [0, 1]");
  if (states != nullptr) {
    if (!detail::device_buffer(states, state_bytes) || state_bytes < kDropoutStateBytes)
      return detail::bad(api, "states is not device memory of cudnnDropoutGetStatesSize bytes");
  }
  d->dropout = dropout, d->states = states, d->state_bytes = state_bytes, d->seed = seed;
  d->set = true;
  // Setting (not restoring) initializes the generator states: a kernel writing them once.
  if (init && states != nullptr &&
      !detail::append_sized_kernel("cudnn_dropout_init_states", state_bytes, h->stream, api, start))
    return CUDNN_STATUS_EXECUTION_FAILED;
  return CUDNN_STATUS_SUCCESS;
}
}  // namespace

PT_EXPORT cudnnStatus_t cudnnSetDropoutDescriptor(cudnnDropoutDescriptor_t desc,
                                                  cudnnHandle_t handle, float dropout, void* states,
                                                  size_t state_bytes, unsigned long long seed) {
  return set_dropout(desc, handle, dropout, states, state_bytes, seed, true,
                     "cudnnSetDropoutDescriptor");
}

PT_EXPORT cudnnStatus_t cudnnRestoreDropoutDescriptor(cudnnDropoutDescriptor_t desc,
                                                      cudnnHandle_t handle, float dropout,
                                                      void* states, size_t state_bytes,
                                                      unsigned long long seed) {
  return set_dropout(desc, handle, dropout, states, state_bytes, seed, false,
                     "cudnnRestoreDropoutDescriptor");
}

PT_EXPORT cudnnStatus_t cudnnGetDropoutDescriptor(cudnnDropoutDescriptor_t desc,
                                                  cudnnHandle_t handle, float* dropout,
                                                  void** states, unsigned long long* seed) {
  (void)handle;
  const auto* d = detail::live<detail::DropoutDesc>(dnn().dropouts, desc);
  if (d == nullptr) return detail::bad("cudnnGetDropoutDescriptor", "invalid descriptor");
  if (dropout != nullptr) *dropout = d->dropout;
  if (states != nullptr) *states = d->states;
  if (seed != nullptr) *seed = d->seed;
  return CUDNN_STATUS_SUCCESS;
}

namespace {
cudnnStatus_t dropout(cudnnHandle_t handle, const void* desc, const void* in_desc, const void* in,
                      const void* out_desc, void* out, void* reserve, size_t reserve_bytes,
                      bool forward, const char* api) {
  const auto* d = detail::live<detail::DropoutDesc>(dnn().dropouts, desc);
  if (d == nullptr || !d->set) return detail::bad(api, "invalid or unset dropout descriptor");
  const Tensor* x = tensor_of(in_desc);
  if (x == nullptr || !detail::same_shape(in_desc, out_desc))
    return detail::bad(api, "the input and output differ in shape");
  if (reserve_bytes < elements(*x) || !detail::lookup_pointer(reserve).known)
    return detail::bad(api, "reserveSpace is smaller than cudnnDropoutGetReserveSpaceSize");
  return detail::memory_op(handle, forward ? "dropout_fwd" : "dropout_bwd",
                           {{in_desc, in}, {out_desc, out}}, elements(*x), api);
}
}  // namespace

PT_EXPORT cudnnStatus_t cudnnDropoutForward(cudnnHandle_t handle,
                                            const cudnnDropoutDescriptor_t desc,
                                            const cudnnTensorDescriptor_t x_desc, const void* x,
                                            const cudnnTensorDescriptor_t y_desc, void* y,
                                            void* reserve, size_t reserve_bytes) {
  return dropout(handle, desc, x_desc, x, y_desc, y, reserve, reserve_bytes, true,
                 "cudnnDropoutForward");
}

PT_EXPORT cudnnStatus_t cudnnDropoutBackward(cudnnHandle_t handle,
                                             const cudnnDropoutDescriptor_t desc,
                                             const cudnnTensorDescriptor_t dy_desc, const void* dy,
                                             const cudnnTensorDescriptor_t dx_desc, void* dx,
                                             void* reserve, size_t reserve_bytes) {
  return dropout(handle, desc, dy_desc, dy, dx_desc, dx, reserve, reserve_bytes, false,
                 "cudnnDropoutBackward");
}

// -- the bias gradient and the fused convolution
PT_EXPORT cudnnStatus_t cudnnConvolutionBackwardBias(cudnnHandle_t handle, const void* alpha,
                                                     const cudnnTensorDescriptor_t dy_desc,
                                                     const void* dy, const void* beta,
                                                     const cudnnTensorDescriptor_t db_desc,
                                                     void* db) {
  (void)alpha, (void)beta;
  return detail::memory_op(handle, "conv_bwd_bias", {{dy_desc, dy}, {db_desc, db}}, 0,
                           "cudnnConvolutionBackwardBias");
}

PT_EXPORT cudnnStatus_t cudnnConvolutionBiasActivationForward(
    cudnnHandle_t handle, const void* alpha1, const cudnnTensorDescriptor_t x_desc, const void* x,
    const cudnnFilterDescriptor_t w_desc, const void* w,
    const cudnnConvolutionDescriptor_t conv_desc, cudnnConvolutionFwdAlgo_t algo, void* workspace,
    size_t workspace_bytes, const void* alpha2, const cudnnTensorDescriptor_t z_desc, const void* z,
    const cudnnTensorDescriptor_t bias_desc, const void* bias,
    const cudnnActivationDescriptor_t activation, const cudnnTensorDescriptor_t y_desc, void* y) {
  (void)alpha1, (void)algo, (void)workspace, (void)workspace_bytes, (void)alpha2;
  const char* api = "cudnnConvolutionBiasActivationForward";
  const auto* a = detail::live<detail::Activation>(dnn().activations, activation);
  if (a == nullptr || !a->set) return detail::bad(api, "invalid or unset activation descriptor");
  const cudnnStatus_t conv = detail::convolution(
      detail::Direction::kForward, handle, tensor_of(x_desc), x,
      detail::live<detail::Filter>(dnn().filters, w_desc), w,
      detail::live<detail::Conv>(dnn().convs, conv_desc), tensor_of(y_desc), y, api);
  if (conv != CUDNN_STATUS_SUCCESS) return conv;
  // y = act(conv + alpha2·z + bias): z (when it is not y itself) and the bias read, y rewritten.
  return detail::memory_op(
      handle, std::string("bias_") + detail::activation_name(a->mode),
      present({{z != y ? z_desc : nullptr, z}, {bias_desc, bias}, {y_desc, y}}),
      [&] {
        const Tensor* yt = tensor_of(y_desc);
        return yt != nullptr ? detail::tensor_bytes(*yt) : std::size_t{0};
      }(),
      api);
}

// The Ex searches: the same answer as the plain searches (the emulator has one algorithm).
PT_EXPORT cudnnStatus_t cudnnFindConvolutionForwardAlgorithmEx(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t x_desc, const void* x,
    const cudnnFilterDescriptor_t w_desc, const void* w,
    const cudnnConvolutionDescriptor_t conv_desc, const cudnnTensorDescriptor_t y_desc, void* y,
    const int requested, int* returned, cudnnConvolutionFwdAlgoPerf_t* results, void* workspace,
    size_t workspace_bytes) {
  (void)x, (void)w, (void)y, (void)workspace, (void)workspace_bytes;
  return cudnnFindConvolutionForwardAlgorithm(handle, x_desc, w_desc, conv_desc, y_desc, requested,
                                              returned, results);
}

PT_EXPORT cudnnStatus_t cudnnFindConvolutionBackwardDataAlgorithmEx(
    cudnnHandle_t handle, const cudnnFilterDescriptor_t w_desc, const void* w,
    const cudnnTensorDescriptor_t dy_desc, const void* dy,
    const cudnnConvolutionDescriptor_t conv_desc, const cudnnTensorDescriptor_t dx_desc, void* dx,
    const int requested, int* returned, cudnnConvolutionBwdDataAlgoPerf_t* results, void* workspace,
    size_t workspace_bytes) {
  (void)w, (void)dy, (void)dx, (void)workspace, (void)workspace_bytes;
  return cudnnFindConvolutionBackwardDataAlgorithm(handle, w_desc, dy_desc, conv_desc, dx_desc,
                                                   requested, returned, results);
}

PT_EXPORT cudnnStatus_t cudnnFindConvolutionBackwardFilterAlgorithmEx(
    cudnnHandle_t handle, const cudnnTensorDescriptor_t x_desc, const void* x,
    const cudnnTensorDescriptor_t dy_desc, const void* dy,
    const cudnnConvolutionDescriptor_t conv_desc, const cudnnFilterDescriptor_t dw_desc, void* dw,
    const int requested, int* returned, cudnnConvolutionBwdFilterAlgoPerf_t* results,
    void* workspace, size_t workspace_bytes) {
  (void)x, (void)dy, (void)dw, (void)workspace, (void)workspace_bytes;
  return cudnnFindConvolutionBackwardFilterAlgorithm(handle, x_desc, dy_desc, conv_desc, dw_desc,
                                                     requested, returned, results);
}

// ---- recurrent networks: the v8 RNN API (PyTorch's nn.LSTM, nn.GRU and nn.RNN call it) -------
// Weights live in one weight space, laid out per pseudo-layer (layer × direction): the input
// matrices (linLayerID 0..G-1, H × input), the recurrent ones (G..2G-1, H × P), the LSTM
// projection (2G, P × H), then the input and recurrent biases in linLayerID order (G gates: 1
// for ReLU/tanh cells, 3 for GRU, 4 for LSTM; P the projection size, H without one). A forward
// pass is, per layer and direction, one input GEMM over every token and then, per time step, a
// recurrent GEMM over the sequences still running, a pointwise cell kernel and (LSTM with
// projection) the projection GEMM: the serial chain cuDNN's standard algorithm runs.
namespace {
using detail::RnnData;
using detail::RnnDesc;

std::int64_t rnn_gates(cudnnRNNMode_t cell) {
  return cell == CUDNN_LSTM ? 4 : cell == CUDNN_GRU ? 3 : 1;
}
const char* rnn_cell_name(cudnnRNNMode_t cell) {
  switch (cell) {
    case CUDNN_RNN_RELU:
      return "relu";
    case CUDNN_RNN_TANH:
      return "tanh";
    case CUDNN_LSTM:
      return "lstm";
    default:
      return "gru";
  }
}
std::int64_t rnn_directions(const RnnDesc& r) { return r.direction == CUDNN_BIDIRECTIONAL ? 2 : 1; }
bool rnn_projects(const RnnDesc& r) {
  return r.cell == CUDNN_LSTM && r.projection_size < r.hidden_size;
}
std::int64_t rnn_layer_input(const RnnDesc& r, std::int64_t layer) {
  return layer == 0 ? r.input_size : r.projection_size * rnn_directions(r);
}
bool rnn_has_input_matrix(const RnnDesc& r, std::int64_t layer) {
  return !(layer == 0 && r.input_mode == CUDNN_SKIP_INPUT);
}
bool rnn_input_bias(const RnnDesc& r) {
  return r.bias == CUDNN_RNN_DOUBLE_BIAS || r.bias == CUDNN_RNN_SINGLE_INP_BIAS;
}
bool rnn_recurrent_bias(const RnnDesc& r) {
  return r.bias == CUDNN_RNN_DOUBLE_BIAS || r.bias == CUDNN_RNN_SINGLE_REC_BIAS;
}

// A matrix or bias inside one pseudo-layer: offset in elements from the pseudo-layer's start
// (-1 when the parameter does not exist), rows and columns.
struct RnnParam {
  std::int64_t offset = -1, rows = 0, cols = 0;
};

// Parameters of a pseudo-layer in layout order; `count` receives the pseudo-layer's elements.
std::int64_t rnn_pseudo_layer(const RnnDesc& r, std::int64_t layer, std::int64_t lin, bool bias,
                              RnnParam* param) {
  const std::int64_t gates = rnn_gates(r.cell), h = r.hidden_size, p = r.projection_size;
  const std::int64_t in = rnn_layer_input(r, layer);
  std::int64_t offset = 0;
  RnnParam found;
  const auto place = [&](bool exists, bool is_bias, std::int64_t id, std::int64_t rows,
                         std::int64_t cols) {
    if (!exists) return;
    if (is_bias == bias && id == lin) found = {offset, rows, cols};
    offset += rows * cols;
  };
  for (std::int64_t g = 0; g < gates; ++g) place(rnn_has_input_matrix(r, layer), false, g, h, in);
  for (std::int64_t g = 0; g < gates; ++g) place(true, false, gates + g, h, p);
  place(rnn_projects(r), false, 2 * gates, p, h);
  for (std::int64_t g = 0; g < gates; ++g) place(rnn_input_bias(r), true, g, h, 1);
  for (std::int64_t g = 0; g < gates; ++g) place(rnn_recurrent_bias(r), true, gates + g, h, 1);
  if (param != nullptr) *param = found;
  return offset;
}

std::int64_t rnn_weight_elements(const RnnDesc& r) {
  std::int64_t total = 0;
  for (std::int64_t layer = 0; layer < r.layers; ++layer) {
    total += rnn_directions(r) * rnn_pseudo_layer(r, layer, -1, false, nullptr);
  }
  return total;
}

std::size_t rnn_dtype_bytes(cudnnDataType_t t) { return detail::dtype_bytes(t); }

std::int64_t rnn_tokens(const RnnData& d) {
  std::int64_t tokens = 0;
  for (int length : d.lengths) tokens += length;
  return tokens;
}

// The emulator's scratch sizes: the workspace holds one layer's input-GEMM output (every token,
// every gate, both directions); the reserve (training only) keeps, per layer, direction and
// token, the gate activations, the cell state and the output for the backward pass, plus one
// dropout mask byte per element between layers.
void rnn_temp_sizes(const RnnDesc& r, const RnnData& x, bool training, std::size_t* work,
                    std::size_t* reserve) {
  const auto bytes = static_cast<std::int64_t>(rnn_dtype_bytes(r.dtype));
  const std::int64_t tokens = rnn_tokens(x), dirs = rnn_directions(r);
  const std::int64_t gates = rnn_gates(r.cell), h = r.hidden_size, p = r.projection_size;
  *work = static_cast<std::size_t>(std::max<std::int64_t>(1, tokens * gates * h * dirs) * bytes);
  std::int64_t kept = 0;
  if (training) {
    kept = r.layers * dirs * tokens * (gates * h + h + p) * bytes;
    const auto* drop = detail::live<detail::DropoutDesc>(dnn().dropouts, r.dropout);
    if (drop != nullptr && drop->dropout > 0.0f) kept += (r.layers - 1) * tokens * p * dirs;
  }
  *reserve = static_cast<std::size_t>(kept);
}

bool rnn_data_type_ok(cudnnDataType_t t) {
  return t == CUDNN_DATA_HALF || t == CUDNN_DATA_FLOAT || t == CUDNN_DATA_DOUBLE ||
         t == CUDNN_DATA_BFLOAT16;
}
}  // namespace

PT_EXPORT cudnnStatus_t cudnnCreateRNNDescriptor(cudnnRNNDescriptor_t* desc) {
  return detail::create<RnnDesc>(dnn().rnns, desc, "cudnnCreateRNNDescriptor");
}
PT_EXPORT cudnnStatus_t cudnnDestroyRNNDescriptor(cudnnRNNDescriptor_t desc) {
  return detail::destroy<RnnDesc>(dnn().rnns, desc, "cudnnDestroyRNNDescriptor");
}

PT_EXPORT cudnnStatus_t cudnnSetRNNDescriptor_v8(
    cudnnRNNDescriptor_t desc, cudnnRNNAlgo_t algo, cudnnRNNMode_t cell, cudnnRNNBiasMode_t bias,
    cudnnDirectionMode_t direction, cudnnRNNInputMode_t input_mode, cudnnDataType_t dtype,
    cudnnDataType_t math_precision, cudnnMathType_t math, int32_t input_size, int32_t hidden_size,
    int32_t projection_size, int32_t layers, cudnnDropoutDescriptor_t dropout, uint32_t aux_flags) {
  const char* api = "cudnnSetRNNDescriptor_v8";
  auto* r = detail::live<RnnDesc>(dnn().rnns, desc);
  if (r == nullptr) return detail::bad(api, "invalid RNN descriptor " + detail::pointer_text(desc));
  if (algo < CUDNN_RNN_ALGO_STANDARD || algo > CUDNN_RNN_ALGO_PERSIST_STATIC_SMALL_H)
    return detail::bad(api, "unknown algo " + std::to_string(algo));
  if (cell < CUDNN_RNN_RELU || cell > CUDNN_GRU)
    return detail::bad(api, "unknown cellMode " + std::to_string(cell));
  if (bias < CUDNN_RNN_NO_BIAS || bias > CUDNN_RNN_SINGLE_REC_BIAS)
    return detail::bad(api, "unknown biasMode " + std::to_string(bias));
  if (direction != CUDNN_UNIDIRECTIONAL && direction != CUDNN_BIDIRECTIONAL)
    return detail::bad(api, "unknown dirMode " + std::to_string(direction));
  if (input_mode != CUDNN_LINEAR_INPUT && input_mode != CUDNN_SKIP_INPUT)
    return detail::bad(api, "unknown inputMode " + std::to_string(input_mode));
  if (!rnn_data_type_ok(dtype))
    return detail::bad(api, "unsupported dataType " + std::to_string(dtype));
  if (!rnn_data_type_ok(math_precision))
    return detail::bad(api, "unsupported mathPrec " + std::to_string(math_precision));
  if (input_size <= 0 || hidden_size <= 0 || layers <= 0)
    return detail::bad(api, "inputSize, hiddenSize and numLayers must be positive");
  if (projection_size <= 0 || projection_size > hidden_size ||
      (cell != CUDNN_LSTM && projection_size != hidden_size))
    return detail::bad(api, "projSize " + std::to_string(projection_size) +
                                " must equal hiddenSize, or be smaller for LSTM only");
  if (input_mode == CUDNN_SKIP_INPUT && input_size != hidden_size)
    return detail::bad(api, "CUDNN_SKIP_INPUT needs inputSize equal to hiddenSize");
  if (dropout != nullptr && detail::live<detail::DropoutDesc>(dnn().dropouts, dropout) == nullptr)
    return detail::bad(api, "invalid dropout descriptor " + detail::pointer_text(dropout));
  if ((aux_flags & ~CUDNN_RNN_PADDED_IO_ENABLED) != 0)
    return detail::bad(api, "unknown auxFlags bits " + std::to_string(aux_flags));
  r->algo = algo, r->cell = cell, r->bias = bias, r->direction = direction;
  r->input_mode = input_mode, r->dtype = dtype, r->math_precision = math_precision, r->math = math;
  r->input_size = input_size, r->hidden_size = hidden_size, r->projection_size = projection_size;
  r->layers = layers, r->dropout = dropout, r->aux_flags = aux_flags, r->set = true;
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnGetRNNDescriptor_v8(
    cudnnRNNDescriptor_t desc, cudnnRNNAlgo_t* algo, cudnnRNNMode_t* cell, cudnnRNNBiasMode_t* bias,
    cudnnDirectionMode_t* direction, cudnnRNNInputMode_t* input_mode, cudnnDataType_t* dtype,
    cudnnDataType_t* math_precision, cudnnMathType_t* math, int32_t* input_size,
    int32_t* hidden_size, int32_t* projection_size, int32_t* layers,
    cudnnDropoutDescriptor_t* dropout, uint32_t* aux_flags) {
  const auto* r = detail::live<RnnDesc>(dnn().rnns, desc);
  if (r == nullptr || !r->set)
    return detail::bad("cudnnGetRNNDescriptor_v8", "invalid or unset RNN descriptor");
  if (algo != nullptr) *algo = r->algo;
  if (cell != nullptr) *cell = r->cell;
  if (bias != nullptr) *bias = r->bias;
  if (direction != nullptr) *direction = r->direction;
  if (input_mode != nullptr) *input_mode = r->input_mode;
  if (dtype != nullptr) *dtype = r->dtype;
  if (math_precision != nullptr) *math_precision = r->math_precision;
  if (math != nullptr) *math = r->math;
  if (input_size != nullptr) *input_size = r->input_size;
  if (hidden_size != nullptr) *hidden_size = r->hidden_size;
  if (projection_size != nullptr) *projection_size = r->projection_size;
  if (layers != nullptr) *layers = r->layers;
  if (dropout != nullptr) *dropout = r->dropout;
  if (aux_flags != nullptr) *aux_flags = r->aux_flags;
  return CUDNN_STATUS_SUCCESS;
}

namespace {
cudnnStatus_t set_rnn_clip(cudnnRNNDescriptor_t desc, cudnnRNNClipMode_t mode,
                           cudnnNanPropagation_t nan, double left, double right, const char* api) {
  auto* r = detail::live<RnnDesc>(dnn().rnns, desc);
  if (r == nullptr || !r->set) return detail::bad(api, "invalid or unset RNN descriptor");
  if (mode != CUDNN_RNN_CLIP_NONE && mode != CUDNN_RNN_CLIP_MINMAX)
    return detail::bad(api, "unknown clipMode " + std::to_string(mode));
  if (mode == CUDNN_RNN_CLIP_MINMAX && !(left < right))
    return detail::bad(api, "lclip must be below rclip");
  r->clip = mode, r->clip_nan = nan, r->left_clip = left, r->right_clip = right;
  return CUDNN_STATUS_SUCCESS;
}
cudnnStatus_t get_rnn_clip(cudnnRNNDescriptor_t desc, cudnnRNNClipMode_t* mode,
                           cudnnNanPropagation_t* nan, double* left, double* right,
                           const char* api) {
  const auto* r = detail::live<RnnDesc>(dnn().rnns, desc);
  if (r == nullptr || !r->set) return detail::bad(api, "invalid or unset RNN descriptor");
  if (mode != nullptr) *mode = r->clip;
  if (nan != nullptr) *nan = r->clip_nan;
  if (left != nullptr) *left = r->left_clip;
  if (right != nullptr) *right = r->right_clip;
  return CUDNN_STATUS_SUCCESS;
}
}  // namespace

PT_EXPORT cudnnStatus_t cudnnRNNSetClip_v8(cudnnRNNDescriptor_t desc, cudnnRNNClipMode_t mode,
                                           cudnnNanPropagation_t nan, double left, double right) {
  return set_rnn_clip(desc, mode, nan, left, right, "cudnnRNNSetClip_v8");
}
PT_EXPORT cudnnStatus_t cudnnRNNSetClip_v9(cudnnRNNDescriptor_t desc, cudnnRNNClipMode_t mode,
                                           double left, double right) {
  return set_rnn_clip(desc, mode, CUDNN_NOT_PROPAGATE_NAN, left, right, "cudnnRNNSetClip_v9");
}
PT_EXPORT cudnnStatus_t cudnnRNNGetClip_v8(cudnnRNNDescriptor_t desc, cudnnRNNClipMode_t* mode,
                                           cudnnNanPropagation_t* nan, double* left,
                                           double* right) {
  return get_rnn_clip(desc, mode, nan, left, right, "cudnnRNNGetClip_v8");
}
PT_EXPORT cudnnStatus_t cudnnRNNGetClip_v9(cudnnRNNDescriptor_t desc, cudnnRNNClipMode_t* mode,
                                           double* left, double* right) {
  return get_rnn_clip(desc, mode, nullptr, left, right, "cudnnRNNGetClip_v9");
}

// Persistent-kernel compilation for CUDNN_RNN_ALGO_PERSIST_DYNAMIC happens on the host: nothing
// reaches the device.
PT_EXPORT cudnnStatus_t cudnnBuildRNNDynamic(cudnnHandle_t handle, cudnnRNNDescriptor_t desc,
                                             int mini_batch) {
  const char* api = "cudnnBuildRNNDynamic";
  const auto* r = detail::live<RnnDesc>(dnn().rnns, desc);
  if (detail::live<detail::Handle>(dnn().handles, handle) == nullptr || r == nullptr || !r->set)
    return detail::bad(api, "invalid handle or unset RNN descriptor");
  if (mini_batch <= 0) return detail::bad(api, "miniBatch must be positive");
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnCreateRNNDataDescriptor(cudnnRNNDataDescriptor_t* desc) {
  return detail::create<RnnData>(dnn().rnn_datas, desc, "cudnnCreateRNNDataDescriptor");
}
PT_EXPORT cudnnStatus_t cudnnDestroyRNNDataDescriptor(cudnnRNNDataDescriptor_t desc) {
  return detail::destroy<RnnData>(dnn().rnn_datas, desc, "cudnnDestroyRNNDataDescriptor");
}

PT_EXPORT cudnnStatus_t cudnnSetRNNDataDescriptor(cudnnRNNDataDescriptor_t desc,
                                                  cudnnDataType_t dtype,
                                                  cudnnRNNDataLayout_t layout, int max_length,
                                                  int batch, int vector_size, const int lengths[],
                                                  void* padding_fill) {
  const char* api = "cudnnSetRNNDataDescriptor";
  auto* d = detail::live<RnnData>(dnn().rnn_datas, desc);
  if (d == nullptr) return detail::bad(api, "invalid RNN data descriptor");
  if (!rnn_data_type_ok(dtype))
    return detail::bad(api, "unsupported dataType " + std::to_string(dtype));
  if (layout < CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED ||
      layout > CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED)
    return detail::bad(api, "unknown layout " + std::to_string(layout));
  if (max_length <= 0 || batch <= 0 || vector_size <= 0)
    return detail::bad(api, "maxSeqLength, batchSize and vectorSize must be positive");
  if (lengths == nullptr) return detail::bad(api, "seqLengthArray is NULL");
  std::vector<int> copy(lengths, lengths + batch);
  for (int i = 0; i < batch; ++i) {
    if (copy[i] < 0 || copy[i] > max_length)
      return detail::bad(api, "seqLengthArray[" + std::to_string(i) +
                                  "] = " + std::to_string(copy[i]) + " outside [0, maxSeqLength]");
    if (layout == CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED && i > 0 && copy[i] > copy[i - 1])
      return detail::bad(api, "a packed layout needs sequence lengths in non-increasing order");
  }
  d->dtype = dtype, d->layout = layout, d->max_length = max_length, d->batch = batch;
  d->vector_size = vector_size, d->lengths = std::move(copy);
  d->padding_fill = 0.0;
  if (padding_fill != nullptr && dtype == CUDNN_DATA_FLOAT)
    d->padding_fill = *static_cast<const float*>(padding_fill);
  if (padding_fill != nullptr && dtype == CUDNN_DATA_DOUBLE)
    d->padding_fill = *static_cast<const double*>(padding_fill);
  d->set = true;
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnGetRNNDataDescriptor(cudnnRNNDataDescriptor_t desc,
                                                  cudnnDataType_t* dtype,
                                                  cudnnRNNDataLayout_t* layout, int* max_length,
                                                  int* batch, int* vector_size, int requested,
                                                  int lengths[], void* padding_fill) {
  const char* api = "cudnnGetRNNDataDescriptor";
  const auto* d = detail::live<RnnData>(dnn().rnn_datas, desc);
  if (d == nullptr || !d->set) return detail::bad(api, "invalid or unset RNN data descriptor");
  if (requested < 0 || (requested > 0 && lengths == nullptr))
    return detail::bad(api, "arrayLengthRequested is negative or seqLengthArray is NULL");
  if (dtype != nullptr) *dtype = d->dtype;
  if (layout != nullptr) *layout = d->layout;
  if (max_length != nullptr) *max_length = d->max_length;
  if (batch != nullptr) *batch = d->batch;
  if (vector_size != nullptr) *vector_size = d->vector_size;
  for (int i = 0; i < std::min(requested, d->batch); ++i) lengths[i] = d->lengths[i];
  if (padding_fill != nullptr && d->dtype == CUDNN_DATA_FLOAT)
    *static_cast<float*>(padding_fill) = static_cast<float>(d->padding_fill);
  if (padding_fill != nullptr && d->dtype == CUDNN_DATA_DOUBLE)
    *static_cast<double*>(padding_fill) = d->padding_fill;
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnGetRNNWeightSpaceSize(cudnnHandle_t handle, cudnnRNNDescriptor_t desc,
                                                   size_t* size) {
  const char* api = "cudnnGetRNNWeightSpaceSize";
  const auto* r = detail::live<RnnDesc>(dnn().rnns, desc);
  if (detail::live<detail::Handle>(dnn().handles, handle) == nullptr || r == nullptr || !r->set ||
      size == nullptr)
    return detail::bad(api, "invalid handle, unset RNN descriptor or NULL size");
  *size = static_cast<std::size_t>(rnn_weight_elements(*r)) * rnn_dtype_bytes(r->dtype);
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnGetRNNTempSpaceSizes(cudnnHandle_t handle, cudnnRNNDescriptor_t desc,
                                                  cudnnForwardMode_t mode,
                                                  cudnnRNNDataDescriptor_t x_desc,
                                                  size_t* work_bytes, size_t* reserve_bytes) {
  const char* api = "cudnnGetRNNTempSpaceSizes";
  const auto* r = detail::live<RnnDesc>(dnn().rnns, desc);
  const auto* x = detail::live<RnnData>(dnn().rnn_datas, x_desc);
  if (detail::live<detail::Handle>(dnn().handles, handle) == nullptr || r == nullptr || !r->set ||
      x == nullptr || !x->set)
    return detail::bad(api, "invalid handle, or unset RNN or data descriptor");
  if (mode != CUDNN_FWD_MODE_INFERENCE && mode != CUDNN_FWD_MODE_TRAINING)
    return detail::bad(api, "unknown fwdMode " + std::to_string(mode));
  std::size_t work = 0, reserve = 0;
  rnn_temp_sizes(*r, *x, mode == CUDNN_FWD_MODE_TRAINING, &work, &reserve);
  if (work_bytes != nullptr) *work_bytes = work;
  if (reserve_bytes != nullptr) *reserve_bytes = reserve;
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnGetRNNWeightParams(cudnnHandle_t handle, cudnnRNNDescriptor_t desc,
                                                int32_t pseudo_layer, size_t weight_bytes,
                                                const void* weights, int32_t lin_layer,
                                                cudnnTensorDescriptor_t m_desc, void** m_addr,
                                                cudnnTensorDescriptor_t b_desc, void** b_addr) {
  const char* api = "cudnnGetRNNWeightParams";
  const auto* r = detail::live<RnnDesc>(dnn().rnns, desc);
  if (detail::live<detail::Handle>(dnn().handles, handle) == nullptr || r == nullptr || !r->set)
    return detail::bad(api, "invalid handle or unset RNN descriptor");
  const std::int64_t dirs = rnn_directions(*r), gates = rnn_gates(r->cell);
  if (pseudo_layer < 0 || pseudo_layer >= r->layers * dirs)
    return detail::bad(api, "pseudoLayer " + std::to_string(pseudo_layer) + " outside [0, " +
                                std::to_string(r->layers * dirs) + ")");
  const std::int64_t last_lin = r->cell == CUDNN_LSTM ? 2 * gates : 2 * gates - 1;
  if (lin_layer < 0 || lin_layer > last_lin)
    return detail::bad(api, "linLayerID " + std::to_string(lin_layer) + " outside [0, " +
                                std::to_string(last_lin) + "]");
  const std::size_t bytes = rnn_dtype_bytes(r->dtype);
  const std::size_t needed = static_cast<std::size_t>(rnn_weight_elements(*r)) * bytes;
  if (weight_bytes < needed)
    return detail::bad(api, "weightSpaceSize is below cudnnGetRNNWeightSpaceSize");
  const detail::PointerInfo info = detail::lookup_pointer(weights);
  if (!info.known || !info.device_side || info.available < needed)
    return detail::bad(api, "weightSpace is not device memory of the weight space's size");
  const std::int64_t layer = pseudo_layer / dirs;
  std::int64_t base = 0;  // elements before this pseudo-layer
  for (std::int64_t l = 0; l < layer; ++l)
    base += dirs * rnn_pseudo_layer(*r, l, -1, false, nullptr);
  base += (pseudo_layer % dirs) * rnn_pseudo_layer(*r, layer, -1, false, nullptr);
  const auto answer = [&](bool bias, cudnnTensorDescriptor_t out_desc, void** out_addr) {
    RnnParam param;
    rnn_pseudo_layer(*r, layer, lin_layer, bias, &param);
    if (out_addr != nullptr) {
      *out_addr = param.offset < 0 ? nullptr
                                   : static_cast<char*>(const_cast<void*>(weights)) +
                                         (base + param.offset) * static_cast<std::int64_t>(bytes);
    }
    if (out_desc != nullptr && param.offset >= 0) {
      const int dim[3] = {1, static_cast<int>(param.rows), static_cast<int>(param.cols)};
      return set_tensor(out_desc, r->dtype, 3, dim, api);
    }
    return CUDNN_STATUS_SUCCESS;
  };
  if (const cudnnStatus_t s = answer(false, m_desc, m_addr); s != CUDNN_STATUS_SUCCESS) return s;
  return answer(true, b_desc, b_addr);
}

namespace {
// Where an RNN call's work goes.
struct RnnRun {
  const RnnDesc* r = nullptr;
  const RnnData* x = nullptr;
  int device = 0;
  std::int64_t stream = 0;
  cudaStream_t stream_handle = nullptr;
  std::string compute;
  const char* dtype = "float32";
  std::int64_t dtype_bytes = 4;
  const char* api = "";
};

void rnn_gemm(const RnnRun& run, std::int64_t m, std::int64_t n, std::int64_t k, const char* part,
              std::int64_t layer, std::int64_t direction, std::int64_t step) {
  if (m <= 0 || n <= 0 || k <= 0) return;
  auto rec = powertrain::emu::begin_work(trace_schema::op::kGemm, powertrain::emu::now_ns());
  rec.field(trace_schema::field::kApi, std::string_view(run.api));
  rec.field(trace_schema::field::kM, m);
  rec.field(trace_schema::field::kN, n);
  rec.field(trace_schema::field::kK, k);
  rec.field(trace_schema::field::kBatch, std::int64_t{1});
  rec.field("transa", std::string_view("N"));
  rec.field("transb", std::string_view("N"));
  rec.field(trace_schema::field::kDtypeA, std::string_view(run.dtype));
  rec.field(trace_schema::field::kDtypeB, std::string_view(run.dtype));
  rec.field(trace_schema::field::kDtypeC, std::string_view(run.dtype));
  rec.field(trace_schema::field::kCompute, std::string_view(run.compute));
  rec.field(trace_schema::field::kFlops, 2 * m * n * k);
  std::string rnn = std::string("{\"cell\":\"") + rnn_cell_name(run.r->cell) + "\",\"part\":\"" +
                    part + "\",\"layer\":" + std::to_string(layer) +
                    ",\"direction\":" + std::to_string(direction);
  if (step >= 0) rnn += ",\"step\":" + std::to_string(step);
  rnn += "}";
  rec.raw("rnn", rnn);
  powertrain::emu::end_work(rec, run.device, run.stream, 0);
}

bool rnn_kernel(const RnnRun& run, const std::string& what, std::int64_t bytes) {
  if (bytes <= 0) return true;
  return detail::append_sized_kernel(
      std::string("cudnn_rnn_") + rnn_cell_name(run.r->cell) + "_" + what + "_" + run.dtype,
      static_cast<std::size_t>(bytes), run.stream_handle, run.api, powertrain::emu::now_ns());
}

// Sequences still running at each time step.
std::vector<std::int64_t> rnn_step_batches(const RnnData& x) {
  std::vector<std::int64_t> batch(static_cast<std::size_t>(x.max_length), 0);
  for (int length : x.lengths) {
    for (int t = 0; t < length; ++t) ++batch[static_cast<std::size_t>(t)];
  }
  while (!batch.empty() && batch.back() == 0) batch.pop_back();
  return batch;
}

// Passed as rnn_begin's c_desc by calls without a cell state (the weight gradient).
const cudnnTensorDescriptor_t kNoCellState = reinterpret_cast<cudnnTensorDescriptor_t>(-1);

// Checks what every RNN call shares: the handle, the descriptors (x's vectors are the first
// layer's input, y's every direction's output, same sequences), the weight space and the scratch
// buffers; `h_desc`/`c_desc` the hidden and cell state shapes [layers·dirs, batch, P or H].
cudnnStatus_t rnn_begin(cudnnHandle_t handle, cudnnRNNDescriptor_t desc, const int32_t* lengths,
                        cudnnRNNDataDescriptor_t x_desc, const void* x,
                        cudnnRNNDataDescriptor_t y_desc, const void* y,
                        cudnnTensorDescriptor_t h_desc, cudnnTensorDescriptor_t c_desc,
                        std::size_t weight_bytes, const void* weights, std::size_t work_bytes,
                        const void* work, std::size_t reserve_bytes, const void* reserve,
                        bool training, const char* api, RnnRun* run) {
  const auto* h = detail::live<detail::Handle>(dnn().handles, handle);
  if (h == nullptr) return detail::bad(api, "invalid or destroyed cuDNN handle");
  const auto* r = detail::live<RnnDesc>(dnn().rnns, desc);
  if (r == nullptr || !r->set) return detail::bad(api, "invalid or unset RNN descriptor");
  const auto* xd = detail::live<RnnData>(dnn().rnn_datas, x_desc);
  const auto* yd = detail::live<RnnData>(dnn().rnn_datas, y_desc);
  if (xd == nullptr || yd == nullptr || !xd->set || !yd->set)
    return detail::bad(api, "xDesc or yDesc is not a set RNN data descriptor");
  if (xd->dtype != r->dtype || yd->dtype != r->dtype)
    return detail::bad(api, "the data type of x or y differs from the RNN descriptor's");
  if (xd->vector_size != r->input_size)
    return detail::bad(api, "x's vectorSize " + std::to_string(xd->vector_size) +
                                " differs from inputSize " + std::to_string(r->input_size));
  const std::int64_t dirs = rnn_directions(*r);
  if (yd->vector_size != r->projection_size * dirs)
    return detail::bad(api, "y's vectorSize " + std::to_string(yd->vector_size) + " is not " +
                                std::to_string(r->projection_size * dirs) +
                                " (projSize x directions)");
  if (xd->layout != yd->layout || xd->batch != yd->batch || xd->max_length != yd->max_length ||
      xd->lengths != yd->lengths)
    return detail::bad(api, "x and y describe different sequences");
  // Since cuDNN 8.9.1 the device copy of the lengths is optional (PyTorch passes NULL): the data
  // descriptors carry them.
  if (lengths != nullptr && !device_buffer(lengths, sizeof(int32_t) * xd->batch))
    return detail::bad(api, "devSeqLengths is not device memory of batchSize int32 values");
  // [layers·dirs, batch, width], possibly padded with trailing 1s (PyTorch uses 5-d).
  const auto state_ok = [&](cudnnTensorDescriptor_t t_desc, std::int64_t width) {
    const Tensor* t = tensor_of(t_desc);
    if (t == nullptr || !t->set || t->dims < 3) return false;
    for (int i = 3; i < t->dims; ++i) {
      if (t->dim[i] != 1) return false;
    }
    return t->dim[0] == r->layers * dirs && t->dim[1] == xd->batch && t->dim[2] == width;
  };
  if (!state_ok(h_desc, r->projection_size))
    return detail::bad(api, "hDesc must be [numLayers x directions, batch, projSize] = [" +
                                std::to_string(r->layers * dirs) + ", " +
                                std::to_string(xd->batch) + ", " +
                                std::to_string(r->projection_size) + "]");
  if (r->cell == CUDNN_LSTM && c_desc != kNoCellState && !state_ok(c_desc, r->hidden_size))
    return detail::bad(api, "cDesc must be [numLayers x directions, batch, hiddenSize]");
  const std::size_t bytes = rnn_dtype_bytes(r->dtype);
  const std::size_t weights_needed = static_cast<std::size_t>(rnn_weight_elements(*r)) * bytes;
  if (weight_bytes < weights_needed || !device_buffer(weights, weights_needed))
    return detail::bad(api, "the weight space is smaller than cudnnGetRNNWeightSpaceSize (" +
                                std::to_string(weights_needed) + " bytes) or not device memory");
  const auto data_bytes = [&](const RnnData& d) {
    const std::size_t rows = d.layout == CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_PACKED
                                 ? static_cast<std::size_t>(rnn_tokens(d))
                                 : static_cast<std::size_t>(d.max_length) * d.batch;
    return rows * d.vector_size * bytes;
  };
  if (!device_buffer(x, data_bytes(*xd)) || !device_buffer(y, data_bytes(*yd)))
    return detail::bad(api, "x or y is not device memory holding its sequences");
  std::size_t work_needed = 0, reserve_needed = 0;
  rnn_temp_sizes(*r, *xd, training, &work_needed, &reserve_needed);
  if (work_bytes < work_needed || !device_buffer(work, work_needed))
    return detail::bad(api, "workSpace is smaller than cudnnGetRNNTempSpaceSizes's " +
                                std::to_string(work_needed) + " bytes or not device memory");
  if (training && (reserve_bytes < reserve_needed || !device_buffer(reserve, reserve_needed)))
    return detail::bad(api, "reserveSpace is smaller than cudnnGetRNNTempSpaceSizes's " +
                                std::to_string(reserve_needed) + " bytes or not device memory");
  int device = 0;
  const std::int64_t stream = powertrain::emu::stream_id(h->stream, false, &device);
  if (stream == powertrain::emu::kInvalidStream)
    return detail::bad(api, "the handle's stream was destroyed");
  run->r = r, run->x = xd, run->device = device, run->stream = stream;
  run->stream_handle = h->stream, run->api = api;
  run->dtype = detail::dtype_name(r->dtype);
  run->dtype_bytes = static_cast<std::int64_t>(bytes);
  // As for convolutions: fp32 RNNs run their GEMMs on TF32 tensor cores unless the math is FMA.
  run->compute = detail::dtype_name(r->math_precision);
  if (r->dtype == CUDNN_DATA_FLOAT && r->math_precision == CUDNN_DATA_FLOAT &&
      r->math != CUDNN_FMA_MATH)
    run->compute = "float32_fast_tf32";
  return CUDNN_STATUS_SUCCESS;
}
}  // namespace

PT_EXPORT cudnnStatus_t cudnnRNNForward(cudnnHandle_t handle, cudnnRNNDescriptor_t desc,
                                        cudnnForwardMode_t mode, const int32_t lengths[],
                                        cudnnRNNDataDescriptor_t x_desc, const void* x,
                                        cudnnRNNDataDescriptor_t y_desc, void* y,
                                        cudnnTensorDescriptor_t h_desc, const void* hx, void* hy,
                                        cudnnTensorDescriptor_t c_desc, const void* cx, void* cy,
                                        size_t weight_bytes, const void* weights, size_t work_bytes,
                                        void* work, size_t reserve_bytes, void* reserve) {
  (void)hx, (void)hy, (void)cx, (void)cy;
  const char* api = "cudnnRNNForward";
  if (mode != CUDNN_FWD_MODE_INFERENCE && mode != CUDNN_FWD_MODE_TRAINING)
    return detail::bad(api, "unknown fwdMode " + std::to_string(mode));
  const bool training = mode == CUDNN_FWD_MODE_TRAINING;
  RnnRun run;
  if (const cudnnStatus_t s =
          rnn_begin(handle, desc, lengths, x_desc, x, y_desc, y, h_desc, c_desc, weight_bytes,
                    weights, work_bytes, work, reserve_bytes, reserve, training, api, &run);
      s != CUDNN_STATUS_SUCCESS)
    return s;
  const RnnDesc& r = *run.r;
  const std::int64_t gates = rnn_gates(r.cell), h = r.hidden_size, p = r.projection_size;
  const std::int64_t tokens = rnn_tokens(*run.x), dirs = rnn_directions(r);
  const std::vector<std::int64_t> batches = rnn_step_batches(*run.x);
  const auto steps = static_cast<std::int64_t>(batches.size());
  const auto* drop = detail::live<detail::DropoutDesc>(dnn().dropouts, r.dropout);
  for (std::int64_t layer = 0; layer < r.layers; ++layer) {
    if (layer > 0 && training && drop != nullptr && drop->dropout > 0.0f &&
        !rnn_kernel(run, "dropout", tokens * p * dirs * (2 * run.dtype_bytes + 1)))
      return CUDNN_STATUS_EXECUTION_FAILED;
    for (std::int64_t d = 0; d < dirs; ++d) {
      if (rnn_has_input_matrix(r, layer))
        rnn_gemm(run, tokens, gates * h, rnn_layer_input(r, layer), "input", layer, d, -1);
      for (std::int64_t i = 0; i < steps; ++i) {
        const std::int64_t t = d == 0 ? i : steps - 1 - i;  // the reverse direction runs backwards
        const std::int64_t b = batches[static_cast<std::size_t>(t)];
        rnn_gemm(run, b, gates * h, p, "recurrent", layer, d, t);
        // Gates read, the state read and written, the output written; in training the gate
        // activations, the state and the output also go to the reserve.
        std::int64_t moved = b * (gates * h + 2 * h + p) * run.dtype_bytes;
        if (training) moved += b * (gates * h + h + p) * run.dtype_bytes;
        if (!rnn_kernel(run, "fwd", moved)) return CUDNN_STATUS_EXECUTION_FAILED;
        if (rnn_projects(r)) rnn_gemm(run, b, p, h, "projection", layer, d, t);
      }
    }
  }
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnRNNBackwardData_v8(
    cudnnHandle_t handle, cudnnRNNDescriptor_t desc, const int32_t lengths[],
    cudnnRNNDataDescriptor_t y_desc, const void* y, const void* dy, cudnnRNNDataDescriptor_t x_desc,
    void* dx, cudnnTensorDescriptor_t h_desc, const void* hx, const void* dhy, void* dhx,
    cudnnTensorDescriptor_t c_desc, const void* cx, const void* dcy, void* dcx, size_t weight_bytes,
    const void* weights, size_t work_bytes, void* work, size_t reserve_bytes, void* reserve) {
  (void)hx, (void)dhy, (void)dhx, (void)cx, (void)dcy, (void)dcx, (void)dy;
  const char* api = "cudnnRNNBackwardData_v8";
  RnnRun run;
  if (const cudnnStatus_t s =
          rnn_begin(handle, desc, lengths, x_desc, dx, y_desc, y, h_desc, c_desc, weight_bytes,
                    weights, work_bytes, work, reserve_bytes, reserve, true, api, &run);
      s != CUDNN_STATUS_SUCCESS)
    return s;
  const RnnDesc& r = *run.r;
  const std::int64_t gates = rnn_gates(r.cell), h = r.hidden_size, p = r.projection_size;
  const std::int64_t tokens = rnn_tokens(*run.x), dirs = rnn_directions(r);
  const std::vector<std::int64_t> batches = rnn_step_batches(*run.x);
  const auto steps = static_cast<std::int64_t>(batches.size());
  // Layers from the last; each direction walks its forward order backwards.
  for (std::int64_t layer = r.layers - 1; layer >= 0; --layer) {
    for (std::int64_t d = 0; d < dirs; ++d) {
      for (std::int64_t i = 0; i < steps; ++i) {
        const std::int64_t t = d == 0 ? steps - 1 - i : i;
        const std::int64_t b = batches[static_cast<std::size_t>(t)];
        if (rnn_projects(r)) rnn_gemm(run, b, h, p, "projection_grad", layer, d, t);
        // The reserve's activations and state read, the gate gradients written, the state
        // gradient read and written.
        if (!rnn_kernel(run, "bwd", b * (2 * gates * h + 3 * h + p) * run.dtype_bytes))
          return CUDNN_STATUS_EXECUTION_FAILED;
        rnn_gemm(run, b, p, gates * h, "recurrent_grad", layer, d, t);
      }
      if (rnn_has_input_matrix(r, layer))
        rnn_gemm(run, tokens, rnn_layer_input(r, layer), gates * h, "input_grad", layer, d, -1);
    }
  }
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnRNNBackwardWeights_v8(
    cudnnHandle_t handle, cudnnRNNDescriptor_t desc, cudnnWgradMode_t add_grad,
    const int32_t lengths[], cudnnRNNDataDescriptor_t x_desc, const void* x,
    cudnnTensorDescriptor_t h_desc, const void* hx, cudnnRNNDataDescriptor_t y_desc, const void* y,
    size_t weight_bytes, void* dweights, size_t work_bytes, void* work, size_t reserve_bytes,
    void* reserve) {
  (void)hx;
  const char* api = "cudnnRNNBackwardWeights_v8";
  if (add_grad != CUDNN_WGRAD_MODE_ADD && add_grad != CUDNN_WGRAD_MODE_SET)
    return detail::bad(api, "unknown addGrad " + std::to_string(add_grad));
  RnnRun run;
  // The weight gradient takes no cell state (cDesc is not an argument).
  if (const cudnnStatus_t s =
          rnn_begin(handle, desc, lengths, x_desc, x, y_desc, y, h_desc, kNoCellState, weight_bytes,
                    dweights, work_bytes, work, reserve_bytes, reserve, true, api, &run);
      s != CUDNN_STATUS_SUCCESS)
    return s;
  const RnnDesc& r = *run.r;
  const std::int64_t gates = rnn_gates(r.cell), h = r.hidden_size, p = r.projection_size;
  const std::int64_t tokens = rnn_tokens(*run.x), dirs = rnn_directions(r);
  for (std::int64_t layer = 0; layer < r.layers; ++layer) {
    for (std::int64_t d = 0; d < dirs; ++d) {
      if (rnn_has_input_matrix(r, layer))
        rnn_gemm(run, gates * h, rnn_layer_input(r, layer), tokens, "input_weight_grad", layer, d,
                 -1);
      rnn_gemm(run, gates * h, p, tokens, "recurrent_weight_grad", layer, d, -1);
      if (rnn_projects(r)) rnn_gemm(run, p, h, tokens, "projection_weight_grad", layer, d, -1);
      if (r.bias != CUDNN_RNN_NO_BIAS &&
          !rnn_kernel(run, "bias_grad", (tokens + 1) * gates * h * run.dtype_bytes))
        return CUDNN_STATUS_EXECUTION_FAILED;
    }
  }
  return CUDNN_STATUS_SUCCESS;
}

// ---- multi-head attention: the legacy attention API (cuDNN's multiHeadAttention sample) -------
// Sequence data are [time, batch, beam, vector] in any order with the vector innermost. The
// weight buffer holds, in order, the Q, K, V weights (nHeads × projection × input each), the
// output projection (nHeads × oProjSize × per-head value size), then the biases when enabled.
// A call is recorded as its GEMMs: input projections over every token, the scores and the
// weighted values per head over the (query, key) pairs inside each query's attention window,
// the output projection; softmax, residual and bias work are memory-bound kernels.
namespace powertrain::emu::detail {
namespace {
struct SeqData {
  cudnnDataType_t dtype = CUDNN_DATA_FLOAT;
  int dim[CUDNN_SEQDATA_DIM_COUNT] = {};  // by axis: time, batch, beam, vector
  cudnnSeqDataAxis_t axes[CUDNN_SEQDATA_DIM_COUNT] = {};
  std::vector<int> lengths;  // per (batch, beam), batch-major
  bool set = false;
};

struct AttnDesc {
  unsigned mode = 0;
  int heads = 0;
  double softmax_scale = 1.0;
  cudnnDataType_t dtype = CUDNN_DATA_FLOAT, compute = CUDNN_DATA_FLOAT;
  cudnnMathType_t math = CUDNN_DEFAULT_MATH;
  cudnnDropoutDescriptor_t attn_dropout = nullptr, post_dropout = nullptr;
  int q_size = 0, k_size = 0, v_size = 0;
  int q_proj = 0, k_proj = 0, v_proj = 0, o_proj = 0;
  int qo_max_length = 0, kv_max_length = 0, max_batch = 0, max_beam = 0;
  bool set = false;
};

}  // namespace
}  // namespace powertrain::emu::detail

namespace {
using detail::AttnDesc;
using detail::SeqData;

SeqData* seq_data_of(const void* desc) { return detail::live<SeqData>(dnn().seq_datas, desc); }
AttnDesc* attn_of(const void* desc) { return detail::live<AttnDesc>(dnn().attns, desc); }

// Per-head sizes: the projected sizes, or the inputs themselves without a projection.
std::int64_t attn_head_q(const AttnDesc& a) { return a.q_proj > 0 ? a.q_proj : a.q_size; }
std::int64_t attn_head_v(const AttnDesc& a) { return a.v_proj > 0 ? a.v_proj : a.v_size; }
std::int64_t attn_out_size(const AttnDesc& a) {
  return a.o_proj > 0 ? a.o_proj : a.heads * attn_head_v(a);
}
bool attn_biases(const AttnDesc& a) { return (a.mode & CUDNN_ATTN_ENABLE_PROJ_BIASES) != 0; }

// Elements of weight kind `kind` (0 when absent) and its [heads, rows, cols] shape.
std::int64_t attn_weight_shape(const AttnDesc& a, int kind, int shape[3]) {
  const int h = a.heads;
  int rows = 0, cols = 0, heads = h;
  switch (kind) {
    case CUDNN_MH_ATTN_Q_WEIGHTS:
      rows = a.q_proj, cols = a.q_size;
      break;
    case CUDNN_MH_ATTN_K_WEIGHTS:
      rows = a.k_proj, cols = a.k_size;
      break;
    case CUDNN_MH_ATTN_V_WEIGHTS:
      rows = a.v_proj, cols = a.v_size;
      break;
    case CUDNN_MH_ATTN_O_WEIGHTS:
      rows = a.o_proj, cols = static_cast<int>(attn_head_v(a));
      break;
    case CUDNN_MH_ATTN_Q_BIASES:
      rows = attn_biases(a) ? a.q_proj : 0, cols = 1;
      break;
    case CUDNN_MH_ATTN_K_BIASES:
      rows = attn_biases(a) ? a.k_proj : 0, cols = 1;
      break;
    case CUDNN_MH_ATTN_V_BIASES:
      rows = attn_biases(a) ? a.v_proj : 0, cols = 1;
      break;
    default:  // the output bias: one vector
      rows = attn_biases(a) ? a.o_proj : 0, cols = 1, heads = 1;
      break;
  }
  if (shape != nullptr) shape[0] = heads, shape[1] = rows, shape[2] = cols;
  return static_cast<std::int64_t>(heads) * rows * cols;
}

std::int64_t attn_weight_elements(const AttnDesc& a) {
  std::int64_t total = 0;
  for (int kind = 0; kind < CUDNN_ATTN_WKIND_COUNT; ++kind)
    total += attn_weight_shape(a, kind, nullptr);
  return total;
}

// The emulator's scratch: the projected Q, K and V, the scores of every head and the per-head
// outputs at the descriptor's maximum sizes; training keeps them all in the reserve for the
// backward pass.
std::size_t attn_scratch_bytes(const AttnDesc& a) {
  const std::int64_t queries = std::int64_t{a.max_batch} * a.max_beam * a.qo_max_length;
  const std::int64_t kv_sets = (a.mode & CUDNN_ATTN_QUERYMAP_ONE_TO_ONE) ? a.max_beam : 1;
  const std::int64_t keys = std::int64_t{a.max_batch} * kv_sets * a.kv_max_length;
  const std::int64_t h = a.heads, dq = attn_head_q(a), dv = attn_head_v(a);
  const std::int64_t elements =
      queries * h * dq + keys * h * (dq + dv) +
      std::int64_t{a.max_batch} * a.max_beam * h * a.qo_max_length * a.kv_max_length +
      queries * h * dv;
  return static_cast<std::size_t>(elements) * detail::dtype_bytes(a.dtype);
}

std::size_t seq_data_bytes(const SeqData& s) {
  std::size_t n = 1;
  for (int d : s.dim) n *= static_cast<std::size_t>(d);
  return n * detail::dtype_bytes(s.dtype);
}
std::int64_t seq_tokens(const SeqData& s) {
  std::int64_t n = 0;
  for (int length : s.lengths) n += length;
  return n;
}
}  // namespace

PT_EXPORT cudnnStatus_t cudnnCreateSeqDataDescriptor(cudnnSeqDataDescriptor_t* desc) {
  return detail::create<SeqData>(dnn().seq_datas, desc, "cudnnCreateSeqDataDescriptor");
}
PT_EXPORT cudnnStatus_t cudnnDestroySeqDataDescriptor(cudnnSeqDataDescriptor_t desc) {
  return detail::destroy<SeqData>(dnn().seq_datas, desc, "cudnnDestroySeqDataDescriptor");
}

PT_EXPORT cudnnStatus_t cudnnSetSeqDataDescriptor(cudnnSeqDataDescriptor_t desc,
                                                  cudnnDataType_t dtype, int dims, const int dim[],
                                                  const cudnnSeqDataAxis_t axes[],
                                                  size_t length_count, const int lengths[],
                                                  void* padding_fill) {
  (void)padding_fill;
  const char* api = "cudnnSetSeqDataDescriptor";
  SeqData* s = seq_data_of(desc);
  if (s == nullptr) return detail::bad(api, "invalid sequence data descriptor");
  if (dims != CUDNN_SEQDATA_DIM_COUNT || dim == nullptr || axes == nullptr)
    return detail::bad(api, "nbDims must be 4 (time, batch, beam, vector) with dimA and axes");
  if (!rnn_data_type_ok(dtype))
    return detail::bad(api, "unsupported dataType " + std::to_string(dtype));
  bool seen[CUDNN_SEQDATA_DIM_COUNT] = {};
  for (int i = 0; i < dims; ++i) {
    if (dim[i] <= 0) return detail::bad(api, "dimA[" + std::to_string(i) + "] is not positive");
    if (axes[i] < 0 || axes[i] >= CUDNN_SEQDATA_DIM_COUNT || seen[axes[i]])
      return detail::bad(api, "axes is not a permutation of the four axes");
    seen[axes[i]] = true;
  }
  if (axes[dims - 1] != CUDNN_SEQDATA_VECT_DIM)
    return detail::bad(api, "the vector axis must be the innermost (axes[3])");
  const std::size_t sequences = static_cast<std::size_t>(dim[CUDNN_SEQDATA_BATCH_DIM]) *
                                static_cast<std::size_t>(dim[CUDNN_SEQDATA_BEAM_DIM]);
  if (length_count != sequences || lengths == nullptr)
    return detail::bad(api, "seqLengthArraySize " + std::to_string(length_count) +
                                " is not batch x beam = " + std::to_string(sequences));
  for (std::size_t i = 0; i < sequences; ++i) {
    if (lengths[i] < 0 || lengths[i] > dim[CUDNN_SEQDATA_TIME_DIM])
      return detail::bad(api, "seqLengthArray[" + std::to_string(i) + "] is outside [0, time]");
  }
  s->dtype = dtype;
  std::copy(dim, dim + dims, s->dim);
  std::copy(axes, axes + dims, s->axes);
  s->lengths.assign(lengths, lengths + sequences);
  s->set = true;
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnGetSeqDataDescriptor(const cudnnSeqDataDescriptor_t desc,
                                                  cudnnDataType_t* dtype, int* dims,
                                                  int dims_requested, int dim[],
                                                  cudnnSeqDataAxis_t axes[], size_t* length_count,
                                                  size_t lengths_requested, int lengths[],
                                                  void* padding_fill) {
  (void)padding_fill;
  const SeqData* s = seq_data_of(desc);
  if (s == nullptr || !s->set) return detail::bad("cudnnGetSeqDataDescriptor", "not set");
  if (dtype != nullptr) *dtype = s->dtype;
  if (dims != nullptr) *dims = CUDNN_SEQDATA_DIM_COUNT;
  for (int i = 0; i < std::min(dims_requested, CUDNN_SEQDATA_DIM_COUNT); ++i) {
    if (dim != nullptr) dim[i] = s->dim[i];
    if (axes != nullptr) axes[i] = s->axes[i];
  }
  if (length_count != nullptr) *length_count = s->lengths.size();
  for (std::size_t i = 0; i < std::min(lengths_requested, s->lengths.size()); ++i) {
    if (lengths != nullptr) lengths[i] = s->lengths[i];
  }
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnCreateAttnDescriptor(cudnnAttnDescriptor_t* desc) {
  return detail::create<AttnDesc>(dnn().attns, desc, "cudnnCreateAttnDescriptor");
}
PT_EXPORT cudnnStatus_t cudnnDestroyAttnDescriptor(cudnnAttnDescriptor_t desc) {
  return detail::destroy<AttnDesc>(dnn().attns, desc, "cudnnDestroyAttnDescriptor");
}

PT_EXPORT cudnnStatus_t cudnnSetAttnDescriptor(cudnnAttnDescriptor_t desc, unsigned mode, int heads,
                                               double softmax_scale, cudnnDataType_t dtype,
                                               cudnnDataType_t compute, cudnnMathType_t math,
                                               cudnnDropoutDescriptor_t attn_dropout,
                                               cudnnDropoutDescriptor_t post_dropout, int q_size,
                                               int k_size, int v_size, int q_proj, int k_proj,
                                               int v_proj, int o_proj, int qo_max_length,
                                               int kv_max_length, int max_batch, int max_beam) {
  const char* api = "cudnnSetAttnDescriptor";
  AttnDesc* a = attn_of(desc);
  if (a == nullptr) return detail::bad(api, "invalid attention descriptor");
  if ((mode & ~(CUDNN_ATTN_QUERYMAP_ONE_TO_ONE | CUDNN_ATTN_ENABLE_PROJ_BIASES)) != 0)
    return detail::bad(api, "unknown attnMode bits " + std::to_string(mode));
  if (heads <= 0 || q_size <= 0 || k_size <= 0 || v_size <= 0)
    return detail::bad(api, "nHeads, qSize, kSize and vSize must be positive");
  if (q_proj < 0 || k_proj < 0 || v_proj < 0 || o_proj < 0)
    return detail::bad(api, "a projection size is negative");
  if (q_proj != k_proj) return detail::bad(api, "qProjSize and kProjSize must be equal");
  if (q_proj == 0 && q_size != k_size)
    return detail::bad(api, "without projections qSize and kSize must be equal");
  if (qo_max_length <= 0 || kv_max_length <= 0 || max_batch <= 0 || max_beam <= 0)
    return detail::bad(api, "the maximum lengths, batch and beam must be positive");
  if (!rnn_data_type_ok(dtype) || !rnn_data_type_ok(compute))
    return detail::bad(api, "unsupported dataType or computePrec");
  for (cudnnDropoutDescriptor_t d : {attn_dropout, post_dropout}) {
    if (d != nullptr && detail::live<detail::DropoutDesc>(dnn().dropouts, d) == nullptr)
      return detail::bad(api, "invalid dropout descriptor " + detail::pointer_text(d));
  }
  a->mode = mode, a->heads = heads, a->softmax_scale = softmax_scale, a->dtype = dtype;
  a->compute = compute, a->math = math, a->attn_dropout = attn_dropout;
  a->post_dropout = post_dropout, a->q_size = q_size, a->k_size = k_size, a->v_size = v_size;
  a->q_proj = q_proj, a->k_proj = k_proj, a->v_proj = v_proj, a->o_proj = o_proj;
  a->qo_max_length = qo_max_length, a->kv_max_length = kv_max_length;
  a->max_batch = max_batch, a->max_beam = max_beam, a->set = true;
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnGetAttnDescriptor(
    cudnnAttnDescriptor_t desc, unsigned* mode, int* heads, double* softmax_scale,
    cudnnDataType_t* dtype, cudnnDataType_t* compute, cudnnMathType_t* math,
    cudnnDropoutDescriptor_t* attn_dropout, cudnnDropoutDescriptor_t* post_dropout, int* q_size,
    int* k_size, int* v_size, int* q_proj, int* k_proj, int* v_proj, int* o_proj,
    int* qo_max_length, int* kv_max_length, int* max_batch, int* max_beam) {
  const AttnDesc* a = attn_of(desc);
  if (a == nullptr || !a->set) return detail::bad("cudnnGetAttnDescriptor", "not set");
  const auto put = [](auto* out, auto value) {
    if (out != nullptr) *out = value;
  };
  put(mode, a->mode), put(heads, a->heads), put(softmax_scale, a->softmax_scale);
  put(dtype, a->dtype), put(compute, a->compute), put(math, a->math);
  put(attn_dropout, a->attn_dropout), put(post_dropout, a->post_dropout);
  put(q_size, a->q_size), put(k_size, a->k_size), put(v_size, a->v_size);
  put(q_proj, a->q_proj), put(k_proj, a->k_proj), put(v_proj, a->v_proj), put(o_proj, a->o_proj);
  put(qo_max_length, a->qo_max_length), put(kv_max_length, a->kv_max_length);
  put(max_batch, a->max_batch), put(max_beam, a->max_beam);
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnGetMultiHeadAttnBuffers(cudnnHandle_t handle,
                                                     const cudnnAttnDescriptor_t desc,
                                                     size_t* weight_bytes, size_t* work_bytes,
                                                     size_t* reserve_bytes) {
  const char* api = "cudnnGetMultiHeadAttnBuffers";
  const AttnDesc* a = attn_of(desc);
  if (detail::live<detail::Handle>(dnn().handles, handle) == nullptr || a == nullptr || !a->set)
    return detail::bad(api, "invalid handle or unset attention descriptor");
  if (weight_bytes == nullptr || work_bytes == nullptr)
    return detail::bad(api, "weightSizeInBytes and workSpaceSizeInBytes must not be NULL");
  *weight_bytes =
      static_cast<std::size_t>(attn_weight_elements(*a)) * detail::dtype_bytes(a->dtype);
  *work_bytes = attn_scratch_bytes(*a);
  if (reserve_bytes != nullptr) *reserve_bytes = attn_scratch_bytes(*a);  // NULL: inference
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnGetMultiHeadAttnWeights(
    cudnnHandle_t handle, const cudnnAttnDescriptor_t desc, cudnnMultiHeadAttnWeightKind_t kind,
    size_t weight_bytes, const void* weights, cudnnTensorDescriptor_t w_desc, void** w_addr) {
  const char* api = "cudnnGetMultiHeadAttnWeights";
  const AttnDesc* a = attn_of(desc);
  if (detail::live<detail::Handle>(dnn().handles, handle) == nullptr || a == nullptr || !a->set)
    return detail::bad(api, "invalid handle or unset attention descriptor");
  if (kind < 0 || kind >= CUDNN_ATTN_WKIND_COUNT || w_addr == nullptr)
    return detail::bad(api, "unknown wKind " + std::to_string(kind) + " or NULL wAddr");
  const std::size_t bytes = detail::dtype_bytes(a->dtype);
  const std::size_t needed = static_cast<std::size_t>(attn_weight_elements(*a)) * bytes;
  if (weight_bytes < needed || !device_buffer(weights, needed))
    return detail::bad(api, "the weight buffer is smaller than cudnnGetMultiHeadAttnBuffers's " +
                                std::to_string(needed) + " bytes or not device memory");
  std::int64_t offset = 0;
  for (int k = 0; k < kind; ++k) offset += attn_weight_shape(*a, k, nullptr);
  int shape[3];
  if (attn_weight_shape(*a, kind, shape) == 0) {
    *w_addr = nullptr;  // no such projection or bias
    return CUDNN_STATUS_SUCCESS;
  }
  *w_addr =
      static_cast<char*>(const_cast<void*>(weights)) + offset * static_cast<std::int64_t>(bytes);
  return w_desc != nullptr ? set_tensor(w_desc, a->dtype, 3, shape, api) : CUDNN_STATUS_SUCCESS;
}

namespace {
const int* const kNoDeviceLengths = reinterpret_cast<const int*>(-1);

// An attention call's shapes, checked against the descriptor.
struct AttnRun {
  const AttnDesc* a = nullptr;
  RnnRun out;                  // stream, dtype and compute (shared with the RNN recorder)
  std::int64_t queries = 0;    // query tokens
  std::int64_t keys = 0;       // key/value tokens
  std::int64_t pairs = 0;      // (query, key) pairs inside the windows
  std::int64_t sequences = 0;  // query sequences (batch × beam)
  std::int64_t uniform_q = 0, uniform_w = 0;  // one query length and window width, or 0
};

cudnnStatus_t attn_begin(cudnnHandle_t handle, const cudnnAttnDescriptor_t desc, int current,
                         const int* lo_window, const int* hi_window, const int* q_lengths,
                         const int* kv_lengths, const cudnnSeqDataDescriptor_t q_desc,
                         const void* q, const cudnnSeqDataDescriptor_t k_desc, const void* k,
                         const cudnnSeqDataDescriptor_t v_desc, const void* v,
                         const cudnnSeqDataDescriptor_t o_desc, const void* o,
                         std::size_t weight_bytes, const void* weights, std::size_t work_bytes,
                         const void* work, std::size_t reserve_bytes, const void* reserve,
                         const char* api, AttnRun* run) {
  const auto* h = detail::live<detail::Handle>(dnn().handles, handle);
  if (h == nullptr) return detail::bad(api, "invalid or destroyed cuDNN handle");
  const AttnDesc* a = attn_of(desc);
  if (a == nullptr || !a->set) return detail::bad(api, "invalid or unset attention descriptor");
  const SeqData *qs = seq_data_of(q_desc), *ks = seq_data_of(k_desc), *vs = seq_data_of(v_desc),
                *os = seq_data_of(o_desc);
  if (qs == nullptr || ks == nullptr || vs == nullptr || os == nullptr || !qs->set || !ks->set ||
      !vs->set || !os->set)
    return detail::bad(api, "a sequence data descriptor is invalid or not set");
  const auto vect = [](const SeqData& s) { return s.dim[CUDNN_SEQDATA_VECT_DIM]; };
  if (vect(*qs) != a->q_size || vect(*ks) != a->k_size || vect(*vs) != a->v_size ||
      vect(*os) != attn_out_size(*a))
    return detail::bad(api, "vector sizes of q, k, v, o (" + std::to_string(vect(*qs)) + ", " +
                                std::to_string(vect(*ks)) + ", " + std::to_string(vect(*vs)) +
                                ", " + std::to_string(vect(*os)) + ") differ from the " +
                                "descriptor's (" + std::to_string(a->q_size) + ", " +
                                std::to_string(a->k_size) + ", " + std::to_string(a->v_size) +
                                ", " + std::to_string(attn_out_size(*a)) + ")");
  for (int axis : {CUDNN_SEQDATA_TIME_DIM, CUDNN_SEQDATA_BATCH_DIM, CUDNN_SEQDATA_BEAM_DIM}) {
    if (qs->dim[axis] != os->dim[axis] || ks->dim[axis] != vs->dim[axis])
      return detail::bad(api, "q and o, or k and v, differ in time, batch or beam");
  }
  if (qs->lengths != os->lengths || ks->lengths != vs->lengths)
    return detail::bad(api, "q and o, or k and v, differ in sequence lengths");
  const bool one_to_one = (a->mode & CUDNN_ATTN_QUERYMAP_ONE_TO_ONE) != 0;
  const int beam = qs->dim[CUDNN_SEQDATA_BEAM_DIM], batch = qs->dim[CUDNN_SEQDATA_BATCH_DIM];
  if (ks->dim[CUDNN_SEQDATA_BATCH_DIM] != batch ||
      ks->dim[CUDNN_SEQDATA_BEAM_DIM] != (one_to_one ? beam : 1))
    return detail::bad(api,
                       "k's batch must be q's and its beam 1 (all-to-one) or q's (one-to-one)");
  if (qs->dim[CUDNN_SEQDATA_TIME_DIM] > a->qo_max_length ||
      ks->dim[CUDNN_SEQDATA_TIME_DIM] > a->kv_max_length || batch > a->max_batch ||
      beam > a->max_beam)
    return detail::bad(api, "the sequences exceed the descriptor's maximum lengths, batch or beam");
  if (lo_window == nullptr || hi_window == nullptr)
    return detail::bad(api, "loWinIdx and hiWinIdx (host arrays) must not be NULL");
  // The weight gradient takes no length arrays (kNoDeviceLengths): the descriptors' lengths.
  const bool lengths_given = q_lengths != kNoDeviceLengths;
  if (lengths_given && (q_lengths == nullptr || kv_lengths == nullptr ||
                        !device_buffer(q_lengths, sizeof(int) * qs->lengths.size()) ||
                        !device_buffer(kv_lengths, sizeof(int) * ks->lengths.size())))
    return detail::bad(api,
                       "the device sequence-length arrays are not device memory of batch x "
                       "beam ints");
  if (current >= qs->dim[CUDNN_SEQDATA_TIME_DIM])
    return detail::bad(api, "currIdx is beyond the query sequences");
  const std::size_t bytes = detail::dtype_bytes(a->dtype);
  const std::size_t weights_needed = static_cast<std::size_t>(attn_weight_elements(*a)) * bytes;
  if (weights_needed > 0 &&
      (weight_bytes < weights_needed || !device_buffer(weights, weights_needed)))
    return detail::bad(api, "the weight buffer is smaller than cudnnGetMultiHeadAttnBuffers's");
  for (const auto& [s, data] : {std::make_pair(qs, q), std::make_pair(ks, k), std::make_pair(vs, v),
                                std::make_pair(os, o)}) {
    if (data != nullptr && !device_buffer(data, seq_data_bytes(*s)))
      return detail::bad(api, detail::pointer_text(data) +
                                  " is not device memory holding its "
                                  "sequences");
  }
  const std::size_t scratch = attn_scratch_bytes(*a);
  if (work_bytes < scratch || !device_buffer(work, scratch))
    return detail::bad(api, "workSpace is smaller than cudnnGetMultiHeadAttnBuffers's " +
                                std::to_string(scratch) + " bytes or not device memory");
  if (reserve != nullptr && (reserve_bytes < scratch || !device_buffer(reserve, scratch)))
    return detail::bad(api, "reserveSpace is smaller than cudnnGetMultiHeadAttnBuffers's");
  int device = 0;
  const std::int64_t stream = powertrain::emu::stream_id(h->stream, false, &device);
  if (stream == powertrain::emu::kInvalidStream)
    return detail::bad(api, "the handle's stream was destroyed");

  // The (query, key) pairs: query t of sequence s sees keys [lo[t], hi[t]) of its key sequence.
  std::int64_t pairs = 0, queries = 0;
  std::int64_t width = -1, q_length = -1;
  bool uniform = true;
  for (std::size_t s = 0; s < qs->lengths.size(); ++s) {
    const std::size_t kv_index = one_to_one ? s : s / static_cast<std::size_t>(beam);
    const int kv_length = ks->lengths[kv_index];
    const int first = current >= 0 ? current : 0;
    const int last = current >= 0 ? std::min(current + 1, qs->lengths[s]) : qs->lengths[s];
    if (q_length < 0) q_length = last - first;
    uniform = uniform && q_length == last - first;
    for (int t = first; t < last; ++t) {
      const int lo = std::clamp(lo_window[t], 0, kv_length);
      const int hi = std::clamp(hi_window[t], lo, kv_length);
      if (width < 0) width = hi - lo;
      uniform = uniform && width == hi - lo;
      pairs += hi - lo;
      ++queries;
    }
  }
  run->a = a, run->queries = queries, run->keys = seq_tokens(*ks), run->pairs = pairs;
  run->sequences = static_cast<std::int64_t>(qs->lengths.size());
  if (uniform && q_length > 0 && width > 0) run->uniform_q = q_length, run->uniform_w = width;
  RnnRun& out = run->out;
  out.device = device, out.stream = stream, out.stream_handle = h->stream, out.api = api;
  out.dtype = detail::dtype_name(a->dtype);
  out.dtype_bytes = static_cast<std::int64_t>(bytes);
  out.compute = detail::dtype_name(a->compute);
  if (a->dtype == CUDNN_DATA_FLOAT && a->compute == CUDNN_DATA_FLOAT && a->math != CUDNN_FMA_MATH)
    out.compute = "float32_fast_tf32";
  return CUDNN_STATUS_SUCCESS;
}

void attn_gemm(const AttnRun& run, std::int64_t m, std::int64_t n, std::int64_t k,
               std::int64_t batch, const char* part, std::int64_t moved_bytes) {
  if (m <= 0 || n <= 0 || k <= 0 || batch <= 0) return;
  auto rec = powertrain::emu::begin_work(trace_schema::op::kGemm, powertrain::emu::now_ns());
  rec.field(trace_schema::field::kApi, std::string_view(run.out.api));
  rec.field(trace_schema::field::kM, m);
  rec.field(trace_schema::field::kN, n);
  rec.field(trace_schema::field::kK, k);
  rec.field(trace_schema::field::kBatch, batch);
  rec.field("transa", std::string_view("N"));
  rec.field("transb", std::string_view("N"));
  rec.field(trace_schema::field::kDtypeA, std::string_view(run.out.dtype));
  rec.field(trace_schema::field::kDtypeB, std::string_view(run.out.dtype));
  rec.field(trace_schema::field::kDtypeC, std::string_view(run.out.dtype));
  rec.field(trace_schema::field::kCompute, std::string_view(run.out.compute));
  rec.field(trace_schema::field::kFlops, 2 * m * n * k * batch);
  if (moved_bytes > 0) rec.field("bytes", moved_bytes);
  rec.raw("attention", std::string("{\"part\":\"") + part +
                           "\",\"heads\":" + std::to_string(run.a->heads) +
                           ",\"pairs\":" + std::to_string(run.pairs) + "}");
  powertrain::emu::end_work(rec, run.out.device, run.out.stream, 0);
}

bool attn_kernel(const AttnRun& run, const std::string& what, std::int64_t bytes) {
  if (bytes <= 0) return true;
  return detail::append_sized_kernel("cudnn_attn_" + what + "_" + run.out.dtype,
                                     static_cast<std::size_t>(bytes), run.out.stream_handle,
                                     run.out.api, powertrain::emu::now_ns());
}

// Scores (contracting over `inner`) or weighted values (producing `inner` per query) over the
// window pairs: one batched GEMM per head and sequence when every query sees as many keys,
// else one GEMM per head over the pairs, with the bytes really moved.
void attn_pairs_gemm(const AttnRun& run, bool scores, std::int64_t inner, const char* part) {
  const std::int64_t h = run.a->heads, b = run.out.dtype_bytes;
  if (run.uniform_q > 0) {
    if (scores) {
      attn_gemm(run, run.uniform_q, run.uniform_w, inner, h * run.sequences, part, 0);
    } else {
      attn_gemm(run, run.uniform_q, inner, run.uniform_w, h * run.sequences, part, 0);
    }
    return;
  }
  const std::int64_t moved = h * (run.queries * inner + run.keys * inner + run.pairs) * b;
  if (scores) {
    attn_gemm(run, run.pairs, 1, inner, h, part, moved);
  } else {
    attn_gemm(run, run.pairs, inner, 1, h, part, moved);
  }
}
}  // namespace

PT_EXPORT cudnnStatus_t cudnnMultiHeadAttnForward(
    cudnnHandle_t handle, const cudnnAttnDescriptor_t desc, int current, const int lo_window[],
    const int hi_window[], const int q_lengths[], const int kv_lengths[],
    const cudnnSeqDataDescriptor_t q_desc, const void* queries, const void* residuals,
    const cudnnSeqDataDescriptor_t k_desc, const void* keys, const cudnnSeqDataDescriptor_t v_desc,
    const void* values, const cudnnSeqDataDescriptor_t o_desc, void* out, size_t weight_bytes,
    const void* weights, size_t work_bytes, void* work, size_t reserve_bytes, void* reserve) {
  const char* api = "cudnnMultiHeadAttnForward";
  AttnRun run;
  if (const cudnnStatus_t s =
          attn_begin(handle, desc, current, lo_window, hi_window, q_lengths, kv_lengths, q_desc,
                     queries, k_desc, keys, v_desc, values, o_desc, out, weight_bytes, weights,
                     work_bytes, work, reserve_bytes, reserve, api, &run);
      s != CUDNN_STATUS_SUCCESS)
    return s;
  if (residuals != nullptr && !device_buffer(residuals, seq_data_bytes(*seq_data_of(q_desc))))
    return detail::bad(api, "residuals is not device memory holding the query sequences");
  const AttnDesc& a = *run.a;
  const std::int64_t h = a.heads, dq = attn_head_q(a), dv = attn_head_v(a), b = run.out.dtype_bytes;
  attn_gemm(run, run.queries, h * a.q_proj, a.q_size, 1, "q_projection", 0);
  attn_gemm(run, run.keys, h * a.k_proj, a.k_size, 1, "k_projection", 0);
  attn_gemm(run, run.keys, h * a.v_proj, a.v_size, 1, "v_projection", 0);
  attn_pairs_gemm(run, true, dq, "scores");
  // Softmax over each query's window, read and written (and the dropout mask in training).
  std::int64_t softmax = 2 * h * run.pairs * b;
  const auto* drop = detail::live<detail::DropoutDesc>(dnn().dropouts, a.attn_dropout);
  if (reserve != nullptr && drop != nullptr && drop->dropout > 0.0f) softmax += h * run.pairs;
  if (!attn_kernel(run, "softmax_fwd", softmax)) return CUDNN_STATUS_EXECUTION_FAILED;
  attn_pairs_gemm(run, false, dv, "weighted_values");
  attn_gemm(run, run.queries, a.o_proj, h * dv, 1, "o_projection", 0);
  if (residuals != nullptr &&
      !attn_kernel(run, "residual_add", 3 * run.queries * attn_out_size(a) * b))
    return CUDNN_STATUS_EXECUTION_FAILED;
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnMultiHeadAttnBackwardData(
    cudnnHandle_t handle, const cudnnAttnDescriptor_t desc, const int lo_window[],
    const int hi_window[], const int q_lengths[], const int kv_lengths[],
    const cudnnSeqDataDescriptor_t do_desc, const void* dout,
    const cudnnSeqDataDescriptor_t dq_desc, void* dqueries, const void* queries,
    const cudnnSeqDataDescriptor_t dk_desc, void* dkeys, const void* keys,
    const cudnnSeqDataDescriptor_t dv_desc, void* dvalues, const void* values, size_t weight_bytes,
    const void* weights, size_t work_bytes, void* work, size_t reserve_bytes, void* reserve) {
  (void)queries, (void)keys, (void)values;
  const char* api = "cudnnMultiHeadAttnBackwardData";
  if (reserve == nullptr)
    return detail::bad(api, "reserveSpace (from the training forward) is NULL");
  AttnRun run;
  if (const cudnnStatus_t s =
          attn_begin(handle, desc, -1, lo_window, hi_window, q_lengths, kv_lengths, dq_desc,
                     dqueries, dk_desc, dkeys, dv_desc, dvalues, do_desc, dout, weight_bytes,
                     weights, work_bytes, work, reserve_bytes, reserve, api, &run);
      s != CUDNN_STATUS_SUCCESS)
    return s;
  const AttnDesc& a = *run.a;
  const std::int64_t h = a.heads, dq = attn_head_q(a), dv = attn_head_v(a), b = run.out.dtype_bytes;
  attn_gemm(run, run.queries, h * dv, a.o_proj, 1, "o_projection_grad", 0);
  attn_pairs_gemm(run, true, dv, "probabilities_grad");  // dP = dO·Vᵀ
  if (!attn_kernel(run, "softmax_bwd", 3 * h * run.pairs * b)) return CUDNN_STATUS_EXECUTION_FAILED;
  attn_pairs_gemm(run, false, dq, "q_grad");  // dQ = dS·K
  attn_pairs_gemm(run, false, dq, "k_grad");  // dK = dSᵀ·Q
  attn_pairs_gemm(run, false, dv, "v_grad");  // dV = Pᵀ·dO
  attn_gemm(run, run.queries, a.q_size, h * a.q_proj, 1, "q_input_grad", 0);
  attn_gemm(run, run.keys, a.k_size, h * a.k_proj, 1, "k_input_grad", 0);
  attn_gemm(run, run.keys, a.v_size, h * a.v_proj, 1, "v_input_grad", 0);
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnMultiHeadAttnBackwardWeights(
    cudnnHandle_t handle, const cudnnAttnDescriptor_t desc, cudnnWgradMode_t add_grad,
    const cudnnSeqDataDescriptor_t q_desc, const void* queries,
    const cudnnSeqDataDescriptor_t k_desc, const void* keys, const cudnnSeqDataDescriptor_t v_desc,
    const void* values, const cudnnSeqDataDescriptor_t do_desc, const void* dout,
    size_t weight_bytes, const void* weights, void* dweights, size_t work_bytes, void* work,
    size_t reserve_bytes, void* reserve) {
  const char* api = "cudnnMultiHeadAttnBackwardWeights";
  if (add_grad != CUDNN_WGRAD_MODE_ADD && add_grad != CUDNN_WGRAD_MODE_SET)
    return detail::bad(api, "unknown addGrad " + std::to_string(add_grad));
  if (reserve == nullptr)
    return detail::bad(api, "reserveSpace (from the training forward) is NULL");
  const AttnDesc* a0 = attn_of(desc);
  const std::size_t needed = a0 != nullptr ? static_cast<std::size_t>(attn_weight_elements(*a0)) *
                                                 detail::dtype_bytes(a0->dtype)
                                           : 0;
  if (needed > 0 && !device_buffer(dweights, needed))
    return detail::bad(api, "dweights is not device memory of the weight buffer's size");
  // The windows do not change the weight gradients' shapes: full windows stand in for them.
  const std::vector<int> lo(static_cast<std::size_t>(a0 != nullptr ? a0->qo_max_length : 0), 0);
  const std::vector<int> hi(lo.size(), a0 != nullptr ? a0->kv_max_length : 0);
  // The sequence lengths are taken from the descriptors; the device arrays are not arguments.
  const SeqData* qs = seq_data_of(q_desc);
  const SeqData* ks = seq_data_of(k_desc);
  AttnRun run;
  if (a0 == nullptr || qs == nullptr || ks == nullptr)
    return detail::bad(api, "invalid attention or sequence data descriptor");
  if (const cudnnStatus_t s =
          attn_begin(handle, desc, -1, lo.data(), hi.data(), kNoDeviceLengths, kNoDeviceLengths,
                     q_desc, queries, k_desc, keys, v_desc, values, do_desc, dout, weight_bytes,
                     weights, work_bytes, work, reserve_bytes, reserve, api, &run);
      s != CUDNN_STATUS_SUCCESS)
    return s;
  const AttnDesc& a = *run.a;
  const std::int64_t h = a.heads, dv = attn_head_v(a), b = run.out.dtype_bytes;
  attn_gemm(run, h * a.q_proj, a.q_size, run.queries, 1, "q_weight_grad", 0);
  attn_gemm(run, h * a.k_proj, a.k_size, run.keys, 1, "k_weight_grad", 0);
  attn_gemm(run, h * a.v_proj, a.v_size, run.keys, 1, "v_weight_grad", 0);
  attn_gemm(run, a.o_proj, h * dv, run.queries, 1, "o_weight_grad", 0);
  if (attn_biases(a) &&
      !attn_kernel(
          run, "bias_grad",
          (run.queries * (h * a.q_proj + a.o_proj) + run.keys * h * (a.k_proj + a.v_proj)) * b))
    return CUDNN_STATUS_EXECUTION_FAILED;
  return CUDNN_STATUS_SUCCESS;
}

// ---- errors, callbacks and version checks -----------------------------------------------------
PT_EXPORT void cudnnGetLastErrorString(char* message, size_t max_size) {
  if (message == nullptr || max_size == 0) return;
  const std::string& text = detail::last_error;
  const std::size_t n = std::min(text.size(), max_size - 1);
  std::copy(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(n), message);
  message[n] = '\0';
}

// Kernels of the emulated device never fail on their own: no deferred runtime error exists.
PT_EXPORT cudnnStatus_t cudnnQueryRuntimeError(cudnnHandle_t handle, cudnnStatus_t* status,
                                               cudnnErrQueryMode_t mode, cudnnRuntimeTag_t* tag) {
  (void)tag;
  if (detail::live<detail::Handle>(dnn().handles, handle) == nullptr || status == nullptr)
    return detail::bad("cudnnQueryRuntimeError", "invalid handle or NULL rstatus");
  if (mode < CUDNN_ERRQUERY_RAWCODE || mode > CUDNN_ERRQUERY_BLOCKING)
    return detail::bad("cudnnQueryRuntimeError", "unknown mode " + std::to_string(mode));
  *status = CUDNN_STATUS_SUCCESS;
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnSetCallback(unsigned mask, void* user_data, cudnnCallback_t function) {
  std::lock_guard<std::mutex> lock(detail::callback().mutex);
  detail::callback().mask = mask;
  detail::callback().user_data = user_data;
  detail::callback().function = function;
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnGetCallback(unsigned* mask, void** user_data,
                                         cudnnCallback_t* function) {
  if (mask == nullptr || user_data == nullptr || function == nullptr)
    return detail::bad("cudnnGetCallback", "a result pointer is NULL");
  std::lock_guard<std::mutex> lock(detail::callback().mutex);
  *mask = detail::callback().mask;
  *user_data = detail::callback().user_data;
  *function = detail::callback().function;
  return CUDNN_STATUS_SUCCESS;
}

// One library stands in for all of cuDNN's sub-libraries: their versions always agree.
PT_EXPORT cudnnStatus_t cudnnGraphVersionCheck(void) { return CUDNN_STATUS_SUCCESS; }
PT_EXPORT cudnnStatus_t cudnnOpsVersionCheck(void) { return CUDNN_STATUS_SUCCESS; }
PT_EXPORT cudnnStatus_t cudnnCnnVersionCheck(void) { return CUDNN_STATUS_SUCCESS; }
PT_EXPORT cudnnStatus_t cudnnAdvVersionCheck(void) { return CUDNN_STATUS_SUCCESS; }

// ---- tensor transforms: padding, folding and layout changes -----------------------------------
PT_EXPORT cudnnStatus_t cudnnSetTensorNdDescriptorEx(cudnnTensorDescriptor_t desc,
                                                     cudnnTensorFormat_t format,
                                                     cudnnDataType_t dtype, int dims,
                                                     const int dim[]) {
  const char* api = "cudnnSetTensorNdDescriptorEx";
  if (format != CUDNN_TENSOR_NCHW && format != CUDNN_TENSOR_NHWC)
    return detail::bad(api, "format " + std::to_string(format) + " is not NCHW or NHWC");
  if (format == CUDNN_TENSOR_NCHW || dims < 3 || dims > CUDNN_DIM_MAX || dim == nullptr)
    return set_tensor(desc, dtype, dims, dim, api);
  // Channels last: C fastest, then the spatial dimensions from the last, then N.
  int stride[CUDNN_DIM_MAX];
  stride[1] = 1;
  int next = dim[1];
  for (int i = dims - 1; i >= 2; --i) stride[i] = next, next *= dim[i];
  stride[0] = next;
  for (int i = 0; i < dims; ++i) {
    if (dim[i] <= 0) return detail::bad(api, "dimension " + std::to_string(i) + " is not positive");
  }
  return set_tensor(desc, dtype, dims, dim, api, stride);
}

PT_EXPORT cudnnStatus_t
cudnnCreateTensorTransformDescriptor(cudnnTensorTransformDescriptor_t* desc) {
  return detail::create<detail::TransformDesc>(dnn().transforms, desc,
                                               "cudnnCreateTensorTransformDescriptor");
}
PT_EXPORT cudnnStatus_t
cudnnDestroyTensorTransformDescriptor(cudnnTensorTransformDescriptor_t desc) {
  return detail::destroy<detail::TransformDesc>(dnn().transforms, desc,
                                                "cudnnDestroyTensorTransformDescriptor");
}

PT_EXPORT cudnnStatus_t cudnnSetTensorTransformDescriptor(
    cudnnTensorTransformDescriptor_t desc, const uint32_t dims, const cudnnTensorFormat_t format,
    const int32_t pad_before[], const int32_t pad_after[], const uint32_t fold[],
    const cudnnFoldingDirection_t direction) {
  const char* api = "cudnnSetTensorTransformDescriptor";
  auto* t = detail::live<detail::TransformDesc>(dnn().transforms, desc);
  if (t == nullptr) return detail::bad(api, "invalid tensor transform descriptor");
  if (dims < 3 || dims > CUDNN_DIM_MAX)
    return detail::bad(api, "nbDims " + std::to_string(dims) + " outside [3, 8]");
  if (format != CUDNN_TENSOR_NCHW && format != CUDNN_TENSOR_NHWC)
    return detail::bad(api, "destFormat is not NCHW or NHWC");
  if (direction != CUDNN_TRANSFORM_FOLD && direction != CUDNN_TRANSFORM_UNFOLD)
    return detail::bad(api, "unknown folding direction");
  for (std::uint32_t i = 0; i < dims; ++i) {
    t->pad_before[i] = pad_before != nullptr ? pad_before[i] : 0;
    t->pad_after[i] = pad_after != nullptr ? pad_after[i] : 0;
    if (t->pad_before[i] < 0 || t->pad_after[i] < 0)
      return detail::bad(api, "a padding is negative");
  }
  for (std::uint32_t i = 0; i + 2 < dims; ++i) {
    t->fold[i] = fold != nullptr ? fold[i] : 1;
    if (t->fold[i] == 0) return detail::bad(api, "a fold is 0");
  }
  t->dims = dims, t->format = format, t->direction = direction, t->set = true;
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnGetTensorTransformDescriptor(cudnnTensorTransformDescriptor_t desc,
                                                          uint32_t dims_requested,
                                                          cudnnTensorFormat_t* format,
                                                          int32_t pad_before[], int32_t pad_after[],
                                                          uint32_t fold[],
                                                          cudnnFoldingDirection_t* direction) {
  const auto* t = detail::live<detail::TransformDesc>(dnn().transforms, desc);
  if (t == nullptr || !t->set)
    return detail::bad("cudnnGetTensorTransformDescriptor", "invalid or unset descriptor");
  if (format != nullptr) *format = t->format;
  if (direction != nullptr) *direction = t->direction;
  for (std::uint32_t i = 0; i < std::min(dims_requested, t->dims); ++i) {
    if (pad_before != nullptr) pad_before[i] = t->pad_before[i];
    if (pad_after != nullptr) pad_after[i] = t->pad_after[i];
    if (fold != nullptr && i + 2 < t->dims) fold[i] = t->fold[i];
  }
  return CUDNN_STATUS_SUCCESS;
}

// The destination of a transform: each dimension padded, then each spatial dimension folded
// into the channels (its extent divided by the fold, rounded up; channels multiplied) or
// unfolded back; packed in the transform's format.
PT_EXPORT cudnnStatus_t cudnnInitTransformDest(const cudnnTensorTransformDescriptor_t desc,
                                               const cudnnTensorDescriptor_t src_desc,
                                               cudnnTensorDescriptor_t dest_desc,
                                               size_t* dest_bytes) {
  const char* api = "cudnnInitTransformDest";
  const auto* t = detail::live<detail::TransformDesc>(dnn().transforms, desc);
  const Tensor* src = tensor_of(src_desc);
  if (t == nullptr || !t->set || src == nullptr || !src->set)
    return detail::bad(api, "unset transform or source descriptor");
  if (static_cast<int>(t->dims) != src->dims)
    return detail::bad(api, "the transform has " + std::to_string(t->dims) +
                                " dimensions, the source " + std::to_string(src->dims));
  int dim[CUDNN_DIM_MAX];
  for (int i = 0; i < src->dims; ++i) dim[i] = src->dim[i] + t->pad_before[i] + t->pad_after[i];
  for (int i = 2; i < src->dims; ++i) {
    const int f = static_cast<int>(t->fold[i - 2]);
    if (t->direction == CUDNN_TRANSFORM_FOLD) {
      dim[i] = (dim[i] + f - 1) / f, dim[1] *= f;
    } else {
      if (dim[1] % f != 0) return detail::bad(api, "the channels do not unfold evenly");
      dim[i] *= f, dim[1] /= f;
    }
  }
  const cudnnStatus_t s =
      cudnnSetTensorNdDescriptorEx(dest_desc, t->format, src->dtype, src->dims, dim);
  if (s == CUDNN_STATUS_SUCCESS && dest_bytes != nullptr)
    return cudnnGetTensorSizeInBytes(dest_desc, dest_bytes);
  return s;
}

PT_EXPORT cudnnStatus_t
cudnnTransformTensorEx(cudnnHandle_t handle, const cudnnTensorTransformDescriptor_t desc,
                       const void* alpha, const cudnnTensorDescriptor_t src_desc, const void* src,
                       const void* beta, const cudnnTensorDescriptor_t dest_desc, void* dest) {
  (void)alpha, (void)beta;
  const char* api = "cudnnTransformTensorEx";
  const auto* t = detail::live<detail::TransformDesc>(dnn().transforms, desc);
  if (t == nullptr || !t->set) return detail::bad(api, "invalid or unset transform descriptor");
  return detail::memory_op(handle, "transform_tensor_ex", {{src_desc, src}, {dest_desc, dest}}, 0,
                           api);
}

PT_EXPORT cudnnStatus_t cudnnTransformFilter(cudnnHandle_t handle,
                                             const cudnnTensorTransformDescriptor_t desc,
                                             const void* alpha,
                                             const cudnnFilterDescriptor_t src_desc,
                                             const void* src, const void* beta,
                                             const cudnnFilterDescriptor_t dest_desc, void* dest) {
  (void)alpha, (void)beta;
  const char* api = "cudnnTransformFilter";
  const std::int64_t start = powertrain::emu::now_ns();
  const auto* t = detail::live<detail::TransformDesc>(dnn().transforms, desc);
  const auto* h = detail::live<detail::Handle>(dnn().handles, handle);
  const auto* from = detail::live<detail::Filter>(dnn().filters, src_desc);
  const auto* to = detail::live<detail::Filter>(dnn().filters, dest_desc);
  if (t == nullptr || !t->set || h == nullptr || from == nullptr || to == nullptr || !from->set ||
      !to->set)
    return detail::bad(api, "an invalid or unset handle, transform or filter descriptor");
  const auto filter_bytes = [](const detail::Filter& f) {
    std::size_t n = detail::dtype_bytes(f.dtype);
    for (int i = 0; i < f.dims; ++i) n *= static_cast<std::size_t>(f.dim[i]);
    return n;
  };
  if (!device_buffer(src, filter_bytes(*from)) || !device_buffer(dest, filter_bytes(*to)))
    return detail::bad(api, "the filters are not device memory of their sizes");
  return detail::append_sized_kernel(
             std::string("cudnn_transform_filter_") + detail::dtype_name(from->dtype),
             filter_bytes(*from) + filter_bytes(*to), h->stream, api, start)
             ? CUDNN_STATUS_SUCCESS
             : CUDNN_STATUS_EXECUTION_FAILED;
}

// im2col: every output point's receptive field copied out, C·Πfilter × N·Πout elements.
PT_EXPORT cudnnStatus_t cudnnIm2Col(cudnnHandle_t handle, const cudnnTensorDescriptor_t x_desc,
                                    const void* x, const cudnnFilterDescriptor_t w_desc,
                                    const cudnnConvolutionDescriptor_t conv_desc,
                                    void* col_buffer) {
  const char* api = "cudnnIm2Col";
  const std::int64_t start = powertrain::emu::now_ns();
  const auto* h = detail::live<detail::Handle>(dnn().handles, handle);
  const Tensor* xt = tensor_of(x_desc);
  const auto* w = detail::live<detail::Filter>(dnn().filters, w_desc);
  const auto* c = detail::live<detail::Conv>(dnn().convs, conv_desc);
  if (h == nullptr || xt == nullptr || w == nullptr || c == nullptr || !xt->set || !w->set ||
      !c->set)
    return detail::bad(api, "an invalid or unset handle or descriptor");
  int out[CUDNN_DIM_MAX] = {};
  if (!detail::output_dims(*c, *xt, *w, out))
    return detail::bad(api, "the convolution does not fit the input");
  std::size_t columns = static_cast<std::size_t>(xt->dim[0]);
  std::size_t rows = static_cast<std::size_t>(xt->dim[1]);
  for (int i = 0; i < c->spatial; ++i) {
    columns *= static_cast<std::size_t>(out[2 + i]);
    rows *= static_cast<std::size_t>(w->dim[2 + i]);
  }
  const std::size_t col_bytes = rows * columns * detail::dtype_bytes(xt->dtype);
  if (!device_buffer(x, detail::tensor_span_bytes(*xt)) || !device_buffer(col_buffer, col_bytes))
    return detail::bad(api, "x or colBuffer (" + std::to_string(col_bytes) +
                                " bytes) is not device memory of its size");
  return detail::append_sized_kernel(std::string("cudnn_im2col_") + detail::dtype_name(xt->dtype),
                                     detail::tensor_bytes(*xt) + col_bytes, h->stream, api, start)
             ? CUDNN_STATUS_SUCCESS
             : CUDNN_STATUS_EXECUTION_FAILED;
}

PT_EXPORT cudnnStatus_t cudnnReorderFilterAndBias(cudnnHandle_t handle,
                                                  const cudnnFilterDescriptor_t w_desc,
                                                  cudnnReorderType_t type, const void* filter,
                                                  void* reordered_filter, int reorder_bias,
                                                  const void* bias, void* reordered_bias) {
  const char* api = "cudnnReorderFilterAndBias";
  const std::int64_t start = powertrain::emu::now_ns();
  const auto* h = detail::live<detail::Handle>(dnn().handles, handle);
  const auto* w = detail::live<detail::Filter>(dnn().filters, w_desc);
  if (h == nullptr || w == nullptr || !w->set)
    return detail::bad(api, "invalid handle or unset filter descriptor");
  if (type != CUDNN_DEFAULT_REORDER && type != CUDNN_NO_REORDER)
    return detail::bad(api, "unknown reorder type");
  std::size_t bytes = detail::dtype_bytes(w->dtype);
  for (int i = 0; i < w->dims; ++i) bytes *= static_cast<std::size_t>(w->dim[i]);
  const std::size_t bias_bytes =
      reorder_bias != 0 ? static_cast<std::size_t>(w->dim[0]) * sizeof(float) : 0;
  if (!device_buffer(filter, bytes) || !device_buffer(reordered_filter, bytes) ||
      (reorder_bias != 0 &&
       (!device_buffer(bias, bias_bytes) || !device_buffer(reordered_bias, bias_bytes))))
    return detail::bad(api, "the filter or bias buffers are not device memory of their sizes");
  return detail::append_sized_kernel("cudnn_reorder_filter", 2 * (bytes + bias_bytes), h->stream,
                                     api, start)
             ? CUDNN_STATUS_SUCCESS
             : CUDNN_STATUS_EXECUTION_FAILED;
}

// ---- the normalization API (batch normalization's successor) and divisive normalization -------
PT_EXPORT cudnnStatus_t cudnnDeriveNormTensorDescriptor(cudnnTensorDescriptor_t scale_bias_desc,
                                                        cudnnTensorDescriptor_t mean_var_desc,
                                                        const cudnnTensorDescriptor_t x_desc,
                                                        cudnnNormMode_t mode, int groups) {
  const char* api = "cudnnDeriveNormTensorDescriptor";
  if (groups != 1) return detail::bad(api, "groupCnt must be 1");
  if (mode != CUDNN_NORM_PER_ACTIVATION && mode != CUDNN_NORM_PER_CHANNEL)
    return detail::bad(api, "unknown mode " + std::to_string(mode));
  const cudnnBatchNormMode_t bn =
      mode == CUDNN_NORM_PER_CHANNEL ? CUDNN_BATCHNORM_SPATIAL : CUDNN_BATCHNORM_PER_ACTIVATION;
  const cudnnStatus_t s = cudnnDeriveBNTensorDescriptor(scale_bias_desc, x_desc, bn);
  return s != CUDNN_STATUS_SUCCESS ? s : cudnnDeriveBNTensorDescriptor(mean_var_desc, x_desc, bn);
}

namespace {
cudnnStatus_t check_norm(cudnnNormOps_t ops, cudnnNormAlgo_t algo, int groups, const char* api) {
  if (groups != 1) return detail::bad(api, "groupCnt must be 1");
  if (ops < CUDNN_NORM_OPS_NORM || ops > CUDNN_NORM_OPS_NORM_ADD_ACTIVATION)
    return detail::bad(api, "unknown normOps " + std::to_string(ops));
  if (algo != CUDNN_NORM_ALGO_STANDARD && algo != CUDNN_NORM_ALGO_PERSIST)
    return detail::bad(api, "unknown algo " + std::to_string(algo));
  return CUDNN_STATUS_SUCCESS;
}
}  // namespace

PT_EXPORT cudnnStatus_t cudnnGetNormalizationForwardTrainingWorkspaceSize(
    cudnnHandle_t handle, cudnnNormMode_t mode, cudnnNormOps_t ops, cudnnNormAlgo_t algo,
    const cudnnTensorDescriptor_t x_desc, const cudnnTensorDescriptor_t z_desc,
    const cudnnTensorDescriptor_t y_desc, const cudnnTensorDescriptor_t scale_bias_desc,
    const cudnnActivationDescriptor_t activation, const cudnnTensorDescriptor_t mean_var_desc,
    size_t* size, int groups) {
  (void)handle, (void)mode, (void)x_desc, (void)z_desc, (void)y_desc, (void)scale_bias_desc,
      (void)activation, (void)mean_var_desc;
  const char* api = "cudnnGetNormalizationForwardTrainingWorkspaceSize";
  if (const cudnnStatus_t s = check_norm(ops, algo, groups, api); s != CUDNN_STATUS_SUCCESS)
    return s;
  if (size == nullptr) return detail::bad(api, "NULL size");
  *size = 0;
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnGetNormalizationBackwardWorkspaceSize(
    cudnnHandle_t handle, cudnnNormMode_t mode, cudnnNormOps_t ops, cudnnNormAlgo_t algo,
    const cudnnTensorDescriptor_t x_desc, const cudnnTensorDescriptor_t y_desc,
    const cudnnTensorDescriptor_t dy_desc, const cudnnTensorDescriptor_t dz_desc,
    const cudnnTensorDescriptor_t dx_desc, const cudnnTensorDescriptor_t scale_bias_desc,
    const cudnnActivationDescriptor_t activation, const cudnnTensorDescriptor_t mean_var_desc,
    size_t* size, int groups) {
  (void)handle, (void)mode, (void)x_desc, (void)y_desc, (void)dy_desc, (void)dz_desc, (void)dx_desc,
      (void)scale_bias_desc, (void)activation, (void)mean_var_desc;
  const char* api = "cudnnGetNormalizationBackwardWorkspaceSize";
  if (const cudnnStatus_t s = check_norm(ops, algo, groups, api); s != CUDNN_STATUS_SUCCESS)
    return s;
  if (size == nullptr) return detail::bad(api, "NULL size");
  *size = 0;
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnGetNormalizationTrainingReserveSpaceSize(
    cudnnHandle_t handle, cudnnNormMode_t mode, cudnnNormOps_t ops, cudnnNormAlgo_t algo,
    const cudnnActivationDescriptor_t activation, const cudnnTensorDescriptor_t x_desc,
    size_t* size, int groups) {
  (void)handle, (void)mode, (void)activation;
  const char* api = "cudnnGetNormalizationTrainingReserveSpaceSize";
  if (const cudnnStatus_t s = check_norm(ops, algo, groups, api); s != CUDNN_STATUS_SUCCESS)
    return s;
  const Tensor* x = tensor_of(x_desc);
  if (x == nullptr || !x->set || size == nullptr) return detail::bad(api, "invalid x or NULL size");
  *size = ops == CUDNN_NORM_OPS_NORM ? 0 : elements(*x);  // the activation mask
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnNormalizationForwardTraining(
    cudnnHandle_t handle, cudnnNormMode_t mode, cudnnNormOps_t ops, cudnnNormAlgo_t algo,
    const void* alpha, const void* beta, const cudnnTensorDescriptor_t x_desc, const void* x,
    const cudnnTensorDescriptor_t scale_bias_desc, const void* scale, const void* bias,
    double average_factor, const cudnnTensorDescriptor_t mean_var_desc, void* running_mean,
    void* running_variance, double epsilon, void* save_mean, void* save_inv_variance,
    cudnnActivationDescriptor_t activation, const cudnnTensorDescriptor_t z_desc, const void* z,
    const cudnnTensorDescriptor_t y_desc, void* y, void* workspace, size_t workspace_bytes,
    void* reserve, size_t reserve_bytes, int groups) {
  (void)mode, (void)alpha, (void)beta, (void)average_factor, (void)epsilon, (void)activation,
      (void)workspace, (void)workspace_bytes, (void)reserve;
  const char* api = "cudnnNormalizationForwardTraining";
  if (const cudnnStatus_t s = check_norm(ops, algo, groups, api); s != CUDNN_STATUS_SUCCESS)
    return s;
  if (!detail::same_shape(x_desc, y_desc)) return detail::bad(api, "x and y differ in shape");
  const Tensor* xt = tensor_of(x_desc);
  const bool add = ops == CUDNN_NORM_OPS_NORM_ADD_ACTIVATION;
  // Statistics pass (x read) and normalization pass (x read again, y written).
  return detail::memory_op(handle, "norm_fwd_training",
                           present({{x_desc, x},
                                    {add ? z_desc : nullptr, z},
                                    {y_desc, y},
                                    {scale_bias_desc, scale},
                                    {scale_bias_desc, bias},
                                    {mean_var_desc, running_mean},
                                    {mean_var_desc, running_variance},
                                    {mean_var_desc, save_mean},
                                    {mean_var_desc, save_inv_variance}}),
                           (xt != nullptr ? detail::tensor_bytes(*xt) : 0) + reserve_bytes, api);
}

PT_EXPORT cudnnStatus_t cudnnNormalizationForwardInference(
    cudnnHandle_t handle, cudnnNormMode_t mode, cudnnNormOps_t ops, cudnnNormAlgo_t algo,
    const void* alpha, const void* beta, const cudnnTensorDescriptor_t x_desc, const void* x,
    const cudnnTensorDescriptor_t scale_bias_desc, const void* scale, const void* bias,
    const cudnnTensorDescriptor_t mean_var_desc, const void* mean, const void* variance,
    const cudnnTensorDescriptor_t z_desc, const void* z, cudnnActivationDescriptor_t activation,
    const cudnnTensorDescriptor_t y_desc, void* y, double epsilon, int groups) {
  (void)mode, (void)alpha, (void)beta, (void)activation, (void)epsilon;
  const char* api = "cudnnNormalizationForwardInference";
  if (const cudnnStatus_t s = check_norm(ops, algo, groups, api); s != CUDNN_STATUS_SUCCESS)
    return s;
  if (!detail::same_shape(x_desc, y_desc)) return detail::bad(api, "x and y differ in shape");
  const bool add = ops == CUDNN_NORM_OPS_NORM_ADD_ACTIVATION;
  return detail::memory_op(handle, "norm_fwd_inference",
                           present({{x_desc, x},
                                    {add ? z_desc : nullptr, z},
                                    {y_desc, y},
                                    {scale_bias_desc, scale},
                                    {scale_bias_desc, bias},
                                    {mean_var_desc, mean},
                                    {mean_var_desc, variance}}),
                           0, api);
}

PT_EXPORT cudnnStatus_t cudnnNormalizationBackward(
    cudnnHandle_t handle, cudnnNormMode_t mode, cudnnNormOps_t ops, cudnnNormAlgo_t algo,
    const void* alpha_data, const void* beta_data, const void* alpha_param, const void* beta_param,
    const cudnnTensorDescriptor_t x_desc, const void* x, const cudnnTensorDescriptor_t y_desc,
    const void* y, const cudnnTensorDescriptor_t dy_desc, const void* dy,
    const cudnnTensorDescriptor_t dz_desc, void* dz, const cudnnTensorDescriptor_t dx_desc,
    void* dx, const cudnnTensorDescriptor_t scale_bias_desc, const void* scale, const void* bias,
    void* d_scale, void* d_bias, double epsilon, const cudnnTensorDescriptor_t mean_var_desc,
    const void* saved_mean, const void* saved_inv_variance, cudnnActivationDescriptor_t activation,
    void* workspace, size_t workspace_bytes, void* reserve, size_t reserve_bytes, int groups) {
  (void)mode, (void)alpha_data, (void)beta_data, (void)alpha_param, (void)beta_param, (void)epsilon,
      (void)activation, (void)workspace, (void)workspace_bytes, (void)reserve;
  const char* api = "cudnnNormalizationBackward";
  if (const cudnnStatus_t s = check_norm(ops, algo, groups, api); s != CUDNN_STATUS_SUCCESS)
    return s;
  const Tensor* xt = tensor_of(x_desc);
  const bool fused = ops != CUDNN_NORM_OPS_NORM;
  const bool add = ops == CUDNN_NORM_OPS_NORM_ADD_ACTIVATION;
  // Two passes over x and dy: the parameter gradients, then dx.
  return detail::memory_op(handle, "norm_bwd",
                           present({{x_desc, x},
                                    {fused ? y_desc : nullptr, y},
                                    {dy_desc, dy},
                                    {add ? dz_desc : nullptr, dz},
                                    {dx_desc, dx},
                                    {scale_bias_desc, scale},
                                    {scale_bias_desc, bias},
                                    {scale_bias_desc, d_scale},
                                    {scale_bias_desc, d_bias},
                                    {mean_var_desc, saved_mean},
                                    {mean_var_desc, saved_inv_variance}}),
                           (xt != nullptr ? 2 * detail::tensor_bytes(*xt) : 0) + reserve_bytes,
                           api);
}

PT_EXPORT cudnnStatus_t cudnnDivisiveNormalizationForward(
    cudnnHandle_t handle, cudnnLRNDescriptor_t desc, cudnnDivNormMode_t mode, const void* alpha,
    const cudnnTensorDescriptor_t x_desc, const void* x, const void* means, void* temp, void* temp2,
    const void* beta, const cudnnTensorDescriptor_t y_desc, void* y) {
  (void)alpha, (void)beta;
  const char* api = "cudnnDivisiveNormalizationForward";
  if (detail::live<detail::LrnDesc>(dnn().lrns, desc) == nullptr)
    return detail::bad(api, "invalid LRN descriptor");
  if (mode != CUDNN_DIVNORM_PRECOMPUTED_MEANS) return detail::bad(api, "unknown mode");
  // The local means subtracted, the local variances (temp, temp2) computed, y written.
  return detail::memory_op(
      handle, "divisive_norm_fwd",
      present({{x_desc, x}, {x_desc, means}, {x_desc, temp}, {x_desc, temp2}, {y_desc, y}}), 0,
      api);
}

PT_EXPORT cudnnStatus_t cudnnDivisiveNormalizationBackward(
    cudnnHandle_t handle, cudnnLRNDescriptor_t desc, cudnnDivNormMode_t mode, const void* alpha,
    const cudnnTensorDescriptor_t x_desc, const void* x, const void* means, const void* dy,
    void* temp, void* temp2, const void* beta, const cudnnTensorDescriptor_t dx_desc, void* dx,
    void* d_means) {
  (void)alpha, (void)beta;
  const char* api = "cudnnDivisiveNormalizationBackward";
  if (detail::live<detail::LrnDesc>(dnn().lrns, desc) == nullptr)
    return detail::bad(api, "invalid LRN descriptor");
  if (mode != CUDNN_DIVNORM_PRECOMPUTED_MEANS) return detail::bad(api, "unknown mode");
  return detail::memory_op(handle, "divisive_norm_bwd",
                           present({{x_desc, x},
                                    {x_desc, means},
                                    {x_desc, dy},
                                    {x_desc, temp},
                                    {x_desc, temp2},
                                    {dx_desc, dx},
                                    {dx_desc, d_means}}),
                           0, api);
}

// ---- spatial transformer networks (PyTorch's cudnn_grid_sampler) ------------------------------
PT_EXPORT cudnnStatus_t
cudnnCreateSpatialTransformerDescriptor(cudnnSpatialTransformerDescriptor_t* desc) {
  return detail::create<detail::SpatialTransformer>(dnn().spatial_transformers, desc,
                                                    "cudnnCreateSpatialTransformerDescriptor");
}
PT_EXPORT cudnnStatus_t
cudnnDestroySpatialTransformerDescriptor(cudnnSpatialTransformerDescriptor_t desc) {
  return detail::destroy<detail::SpatialTransformer>(dnn().spatial_transformers, desc,
                                                     "cudnnDestroySpatialTransformerDescriptor");
}

PT_EXPORT cudnnStatus_t cudnnSetSpatialTransformerNdDescriptor(
    cudnnSpatialTransformerDescriptor_t desc, cudnnSamplerType_t sampler, cudnnDataType_t dtype,
    const int dims, const int dim[]) {
  const char* api = "cudnnSetSpatialTransformerNdDescriptor";
  auto* st = detail::live<detail::SpatialTransformer>(dnn().spatial_transformers, desc);
  if (st == nullptr) return detail::bad(api, "invalid spatial transformer descriptor");
  if (sampler != CUDNN_SAMPLER_BILINEAR) return detail::bad(api, "only bilinear sampling exists");
  if (dims != 4 || dim == nullptr) return detail::bad(api, "nbDims must be 4 (N, C, H, W)");
  if (detail::dtype_name(dtype) == nullptr) return detail::bad(api, "unsupported dataType");
  for (int i = 0; i < dims; ++i) {
    if (dim[i] <= 0) return detail::bad(api, "dimA[" + std::to_string(i) + "] is not positive");
  }
  st->dtype = dtype, st->dims = dims, st->set = true;
  std::copy(dim, dim + dims, st->dim);
  return CUDNN_STATUS_SUCCESS;
}

namespace {
// The sampling grid: N × H × W points of 2 coordinates; theta: N affine 2 × 3 matrices.
cudnnStatus_t grid_generator(cudnnHandle_t handle, cudnnSpatialTransformerDescriptor_t desc,
                             const void* in, void* out, bool forward, const char* api) {
  const std::int64_t start = powertrain::emu::now_ns();
  const auto* h = detail::live<detail::Handle>(dnn().handles, handle);
  const auto* st = detail::live<detail::SpatialTransformer>(dnn().spatial_transformers, desc);
  if (h == nullptr || st == nullptr || !st->set)
    return detail::bad(api, "invalid handle or unset spatial transformer descriptor");
  const std::size_t bytes = detail::dtype_bytes(st->dtype);
  const std::size_t theta = static_cast<std::size_t>(st->dim[0]) * 6 * bytes;
  const std::size_t grid =
      static_cast<std::size_t>(st->dim[0]) * st->dim[2] * st->dim[3] * 2 * bytes;
  if (!device_buffer(forward ? in : out, theta) || !device_buffer(forward ? out : in, grid))
    return detail::bad(api, "theta (N x 2 x 3) or the grid (N x H x W x 2) is not device memory");
  const std::int64_t points = std::int64_t{st->dim[0]} * st->dim[2] * st->dim[3];
  return detail::append_sized_kernel(std::string("cudnn_spatial_tf_grid_") +
                                         (forward ? "fwd_" : "bwd_") +
                                         detail::dtype_name(st->dtype),
                                     theta + grid, h->stream, api, start, 12 * points)
             ? CUDNN_STATUS_SUCCESS
             : CUDNN_STATUS_EXECUTION_FAILED;
}
}  // namespace

PT_EXPORT cudnnStatus_t cudnnSpatialTfGridGeneratorForward(
    cudnnHandle_t handle, const cudnnSpatialTransformerDescriptor_t desc, const void* theta,
    void* grid) {
  return grid_generator(handle, desc, theta, grid, true, "cudnnSpatialTfGridGeneratorForward");
}
PT_EXPORT cudnnStatus_t cudnnSpatialTfGridGeneratorBackward(
    cudnnHandle_t handle, const cudnnSpatialTransformerDescriptor_t desc, const void* dgrid,
    void* dtheta) {
  return grid_generator(handle, desc, dgrid, dtheta, false, "cudnnSpatialTfGridGeneratorBackward");
}

namespace {
std::size_t grid_bytes(const detail::SpatialTransformer& st) {
  return static_cast<std::size_t>(st.dim[0]) * st.dim[2] * st.dim[3] * 2 *
         detail::dtype_bytes(st.dtype);
}
}  // namespace

// Bilinear sampling: each output point reads its grid coordinates and 4 input neighbours.
PT_EXPORT cudnnStatus_t cudnnSpatialTfSamplerForward(
    cudnnHandle_t handle, cudnnSpatialTransformerDescriptor_t desc, const void* alpha,
    const cudnnTensorDescriptor_t x_desc, const void* x, const void* grid, const void* beta,
    cudnnTensorDescriptor_t y_desc, void* y) {
  (void)alpha, (void)beta;
  const char* api = "cudnnSpatialTfSamplerForward";
  const auto* st = detail::live<detail::SpatialTransformer>(dnn().spatial_transformers, desc);
  const Tensor* yt = tensor_of(y_desc);
  if (st == nullptr || !st->set || yt == nullptr || !yt->set || yt->dims != 4 ||
      !std::equal(st->dim, st->dim + 4, yt->dim))
    return detail::bad(api, "y must have the spatial transformer's N, C, H, W");
  if (!device_buffer(grid, grid_bytes(*st))) return detail::bad(api, "grid is not device memory");
  return detail::memory_op(handle, "spatial_tf_sampler_fwd", {{x_desc, x}, {y_desc, y}},
                           grid_bytes(*st) + 3 * detail::tensor_bytes(*yt), api);
}

PT_EXPORT cudnnStatus_t cudnnSpatialTfSamplerBackward(
    cudnnHandle_t handle, cudnnSpatialTransformerDescriptor_t desc, const void* alpha,
    const cudnnTensorDescriptor_t x_desc, const void* x, const void* beta,
    const cudnnTensorDescriptor_t dx_desc, void* dx, const void* alpha_dgrid,
    const cudnnTensorDescriptor_t dy_desc, const void* dy, const void* grid, const void* beta_dgrid,
    void* dgrid) {
  (void)alpha, (void)beta, (void)alpha_dgrid, (void)beta_dgrid;
  const char* api = "cudnnSpatialTfSamplerBackward";
  const auto* st = detail::live<detail::SpatialTransformer>(dnn().spatial_transformers, desc);
  const Tensor* dyt = tensor_of(dy_desc);
  if (st == nullptr || !st->set || dyt == nullptr || !dyt->set || dyt->dims != 4 ||
      !std::equal(st->dim, st->dim + 4, dyt->dim))
    return detail::bad(api, "dy must have the spatial transformer's N, C, H, W");
  if (!device_buffer(grid, grid_bytes(*st)) || !device_buffer(dgrid, grid_bytes(*st)))
    return detail::bad(api, "grid or dgrid is not device memory");
  // dx scattered to 4 neighbours per point (read and written), the grid read, dgrid written.
  return detail::memory_op(handle, "spatial_tf_sampler_bwd",
                           {{x_desc, x}, {dx_desc, dx}, {dy_desc, dy}},
                           2 * grid_bytes(*st) + 6 * detail::tensor_bytes(*dyt), api);
}

// ---- CTC loss (PyTorch's ctc_loss on cuDNN) ---------------------------------------------------
// One kernel per call: the probabilities read, the forward (alpha) and backward (beta) tables of
// 2·label + 1 states per step written and read in the workspace, the costs and (when asked) the
// gradients written. The workspace holds both tables at the longest label.
PT_EXPORT cudnnStatus_t cudnnCreateCTCLossDescriptor(cudnnCTCLossDescriptor_t* desc) {
  return detail::create<detail::CtcLossDesc>(dnn().ctc_losses, desc,
                                             "cudnnCreateCTCLossDescriptor");
}
PT_EXPORT cudnnStatus_t cudnnDestroyCTCLossDescriptor(cudnnCTCLossDescriptor_t desc) {
  return detail::destroy<detail::CtcLossDesc>(dnn().ctc_losses, desc,
                                              "cudnnDestroyCTCLossDescriptor");
}

namespace {
cudnnStatus_t set_ctc(cudnnCTCLossDescriptor_t desc, cudnnDataType_t compute,
                      cudnnLossNormalizationMode_t normalization, cudnnNanPropagation_t nan,
                      cudnnCTCGradMode_t grad_mode, int max_label_length, const char* api) {
  auto* d = detail::live<detail::CtcLossDesc>(dnn().ctc_losses, desc);
  if (d == nullptr) return detail::bad(api, "invalid CTC loss descriptor");
  if (compute != CUDNN_DATA_FLOAT) return detail::bad(api, "compType must be CUDNN_DATA_FLOAT");
  if (normalization != CUDNN_LOSS_NORMALIZATION_NONE &&
      normalization != CUDNN_LOSS_NORMALIZATION_SOFTMAX)
    return detail::bad(api, "unknown normMode " + std::to_string(normalization));
  if (grad_mode != CUDNN_CTC_ZERO_OOB_GRADIENTS && grad_mode != CUDNN_CTC_SKIP_OOB_GRADIENTS)
    return detail::bad(api, "unknown ctcGradMode " + std::to_string(grad_mode));
  if (max_label_length <= 0) return detail::bad(api, "maxLabelLength must be positive");
  d->compute = compute, d->normalization = normalization, d->nan = nan;
  d->grad_mode = grad_mode, d->max_label_length = max_label_length, d->set = true;
  return CUDNN_STATUS_SUCCESS;
}
const detail::CtcLossDesc* ctc_of(cudnnCTCLossDescriptor_t desc, const char* api) {
  const auto* d = detail::live<detail::CtcLossDesc>(dnn().ctc_losses, desc);
  if (d == nullptr || !d->set) detail::bad(api, "invalid or unset CTC loss descriptor");
  return d != nullptr && d->set ? d : nullptr;
}
}  // namespace

PT_EXPORT cudnnStatus_t cudnnSetCTCLossDescriptor(cudnnCTCLossDescriptor_t desc,
                                                  cudnnDataType_t compute) {
  return set_ctc(desc, compute, CUDNN_LOSS_NORMALIZATION_NONE, CUDNN_NOT_PROPAGATE_NAN,
                 CUDNN_CTC_ZERO_OOB_GRADIENTS, 256, "cudnnSetCTCLossDescriptor");
}
PT_EXPORT cudnnStatus_t cudnnSetCTCLossDescriptorEx(cudnnCTCLossDescriptor_t desc,
                                                    cudnnDataType_t compute,
                                                    cudnnLossNormalizationMode_t normalization,
                                                    cudnnNanPropagation_t nan) {
  return set_ctc(desc, compute, normalization, nan, CUDNN_CTC_ZERO_OOB_GRADIENTS, 256,
                 "cudnnSetCTCLossDescriptorEx");
}
PT_EXPORT cudnnStatus_t cudnnSetCTCLossDescriptor_v8(cudnnCTCLossDescriptor_t desc,
                                                     cudnnDataType_t compute,
                                                     cudnnLossNormalizationMode_t normalization,
                                                     cudnnNanPropagation_t nan,
                                                     int max_label_length) {
  return set_ctc(desc, compute, normalization, nan, CUDNN_CTC_ZERO_OOB_GRADIENTS, max_label_length,
                 "cudnnSetCTCLossDescriptor_v8");
}
PT_EXPORT cudnnStatus_t cudnnSetCTCLossDescriptor_v9(cudnnCTCLossDescriptor_t desc,
                                                     cudnnDataType_t compute,
                                                     cudnnLossNormalizationMode_t normalization,
                                                     cudnnCTCGradMode_t grad_mode,
                                                     int max_label_length) {
  return set_ctc(desc, compute, normalization, CUDNN_NOT_PROPAGATE_NAN, grad_mode, max_label_length,
                 "cudnnSetCTCLossDescriptor_v9");
}

namespace {
// The CTC descriptor getters: every requested (non-NULL) field of a set descriptor.
cudnnStatus_t get_ctc(cudnnCTCLossDescriptor_t desc, cudnnDataType_t* compute,
                      cudnnLossNormalizationMode_t* normalization, cudnnNanPropagation_t* nan,
                      cudnnCTCGradMode_t* grad_mode, int* max_label_length, const char* api) {
  const auto* d = ctc_of(desc, api);
  if (d == nullptr) return CUDNN_STATUS_BAD_PARAM;
  if (compute != nullptr) *compute = d->compute;
  if (normalization != nullptr) *normalization = d->normalization;
  if (nan != nullptr) *nan = d->nan;
  if (grad_mode != nullptr) *grad_mode = d->grad_mode;
  if (max_label_length != nullptr) *max_label_length = d->max_label_length;
  return CUDNN_STATUS_SUCCESS;
}
}  // namespace

PT_EXPORT cudnnStatus_t cudnnGetCTCLossDescriptor(cudnnCTCLossDescriptor_t desc,
                                                  cudnnDataType_t* compute) {
  return get_ctc(desc, compute, nullptr, nullptr, nullptr, nullptr, "cudnnGetCTCLossDescriptor");
}
PT_EXPORT cudnnStatus_t cudnnGetCTCLossDescriptorEx(cudnnCTCLossDescriptor_t desc,
                                                    cudnnDataType_t* compute,
                                                    cudnnLossNormalizationMode_t* normalization,
                                                    cudnnNanPropagation_t* nan) {
  return get_ctc(desc, compute, normalization, nan, nullptr, nullptr,
                 "cudnnGetCTCLossDescriptorEx");
}
PT_EXPORT cudnnStatus_t cudnnGetCTCLossDescriptor_v8(cudnnCTCLossDescriptor_t desc,
                                                     cudnnDataType_t* compute,
                                                     cudnnLossNormalizationMode_t* normalization,
                                                     cudnnNanPropagation_t* nan,
                                                     int* max_label_length) {
  return get_ctc(desc, compute, normalization, nan, nullptr, max_label_length,
                 "cudnnGetCTCLossDescriptor_v8");
}
PT_EXPORT cudnnStatus_t cudnnGetCTCLossDescriptor_v9(cudnnCTCLossDescriptor_t desc,
                                                     cudnnDataType_t* compute,
                                                     cudnnLossNormalizationMode_t* normalization,
                                                     cudnnCTCGradMode_t* grad_mode,
                                                     int* max_label_length) {
  return get_ctc(desc, compute, normalization, nullptr, grad_mode, max_label_length,
                 "cudnnGetCTCLossDescriptor_v9");
}

namespace {
// probs (and gradients) are [T, N, A] float tensors.
cudnnStatus_t ctc_shapes(const cudnnTensorDescriptor_t probs_desc,
                         const cudnnTensorDescriptor_t grads_desc, const char* api,
                         const Tensor** probs) {
  const Tensor* p = tensor_of(probs_desc);
  if (p == nullptr || !p->set || p->dims != 3 || p->dtype != CUDNN_DATA_FLOAT)
    return detail::bad(api, "probsDesc must be a [T, N, A] float tensor");
  if (grads_desc != nullptr) {
    const Tensor* g = tensor_of(grads_desc);
    if (g == nullptr || !g->set || g->dims != 3 || !std::equal(p->dim, p->dim + 3, g->dim))
      return detail::bad(api, "gradientsDesc must have probsDesc's [T, N, A] shape");
  }
  *probs = p;
  return CUDNN_STATUS_SUCCESS;
}

// Host label arrays (the v7 API): every label within the alphabet (0 is the blank), every
// length within cuDNN's 256; returns the longest label.
cudnnStatus_t ctc_host_labels(const Tensor& probs, const int* labels, const int* label_lengths,
                              const int* input_lengths, const char* api, int* longest) {
  if (labels == nullptr || label_lengths == nullptr || input_lengths == nullptr)
    return detail::bad(api, "the host label, label-length and input-length arrays are required");
  const int steps = probs.dim[0], batch = probs.dim[1], alphabet = probs.dim[2];
  std::int64_t offset = 0;
  *longest = 0;
  for (int i = 0; i < batch; ++i) {
    if (input_lengths[i] <= 0 || input_lengths[i] > steps)
      return detail::bad(api, "inputLengths[" + std::to_string(i) +
                                  "] = " + std::to_string(input_lengths[i]) + " is outside [1, T]");
    // A label longer than its input fits no alignment: cuDNN accepts it and zeroes or skips its
    // gradient (cudnnCTCGradMode_t), so only cuDNN's 256 limit is checked.
    if (label_lengths[i] < 0 || label_lengths[i] > 256)
      return detail::bad(api, "labelLengths[" + std::to_string(i) + "] = " +
                                  std::to_string(label_lengths[i]) + " is outside [0, 256]");
    for (int j = 0; j < label_lengths[i]; ++j) {
      const int label = labels[offset + j];
      if (label <= 0 || label >= alphabet)
        return detail::bad(api, "label " + std::to_string(label) + " of sequence " +
                                    std::to_string(i) + " is outside [1, A)");
    }
    offset += label_lengths[i];
    *longest = std::max(*longest, label_lengths[i]);
  }
  return CUDNN_STATUS_SUCCESS;
}

std::size_t ctc_workspace(const Tensor& probs, int longest) {
  return 2 * static_cast<std::size_t>(probs.dim[0]) * probs.dim[1] *
         static_cast<std::size_t>(2 * longest + 1) * sizeof(float);
}

cudnnStatus_t ctc_run(cudnnHandle_t handle, cudnnCTCLossAlgo_t algo, const Tensor& probs,
                      const void* probs_data, const void* costs, const void* grads,
                      std::size_t workspace_bytes, const void* workspace, int longest,
                      const char* api) {
  const std::int64_t start = powertrain::emu::now_ns();
  const auto* h = detail::live<detail::Handle>(dnn().handles, handle);
  if (h == nullptr) return detail::bad(api, "invalid or destroyed cuDNN handle");
  if (algo != CUDNN_CTC_LOSS_ALGO_DETERMINISTIC && algo != CUDNN_CTC_LOSS_ALGO_NON_DETERMINISTIC)
    return detail::bad(api, "unknown algo " + std::to_string(algo));
  const std::size_t table = ctc_workspace(probs, longest);
  const std::size_t bytes = detail::tensor_bytes(probs);
  const std::size_t costs_bytes = static_cast<std::size_t>(probs.dim[1]) * sizeof(float);
  if (!device_buffer(probs_data, bytes) || !device_buffer(costs, costs_bytes) ||
      (grads != nullptr && !device_buffer(grads, bytes)))
    return detail::bad(api, "probs, costs or gradients is not device memory of its size");
  if (workspace_bytes < table || !device_buffer(workspace, table))
    return detail::bad(api, "the workspace is smaller than cudnnGetCTCLossWorkspaceSize's " +
                                std::to_string(table) + " bytes or not device memory");
  // probs read twice (alpha and beta passes), both tables written and read, costs and
  // gradients written.
  const std::size_t moved = 2 * bytes + 2 * table + costs_bytes + (grads != nullptr ? bytes : 0);
  return detail::append_sized_kernel("cudnn_ctc_loss_float32", moved, h->stream, api, start)
             ? CUDNN_STATUS_SUCCESS
             : CUDNN_STATUS_EXECUTION_FAILED;
}
}  // namespace

PT_EXPORT cudnnStatus_t cudnnGetCTCLossWorkspaceSize(cudnnHandle_t handle,
                                                     const cudnnTensorDescriptor_t probs_desc,
                                                     const cudnnTensorDescriptor_t grads_desc,
                                                     const int* labels, const int* label_lengths,
                                                     const int* input_lengths,
                                                     cudnnCTCLossAlgo_t algo,
                                                     cudnnCTCLossDescriptor_t desc, size_t* size) {
  (void)handle, (void)algo;
  const char* api = "cudnnGetCTCLossWorkspaceSize";
  const Tensor* probs = nullptr;
  int longest = 0;
  if (ctc_of(desc, api) == nullptr) return CUDNN_STATUS_BAD_PARAM;
  if (const cudnnStatus_t s = ctc_shapes(probs_desc, grads_desc, api, &probs);
      s != CUDNN_STATUS_SUCCESS)
    return s;
  if (const cudnnStatus_t s =
          ctc_host_labels(*probs, labels, label_lengths, input_lengths, api, &longest);
      s != CUDNN_STATUS_SUCCESS)
    return s;
  if (size == nullptr) return detail::bad(api, "NULL sizeInBytes");
  *size = ctc_workspace(*probs, longest);
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnGetCTCLossWorkspaceSize_v8(cudnnHandle_t handle,
                                                        cudnnCTCLossAlgo_t algo,
                                                        cudnnCTCLossDescriptor_t desc,
                                                        const cudnnTensorDescriptor_t probs_desc,
                                                        const cudnnTensorDescriptor_t grads_desc,
                                                        size_t* size) {
  (void)handle, (void)algo;
  const char* api = "cudnnGetCTCLossWorkspaceSize_v8";
  const auto* d = ctc_of(desc, api);
  const Tensor* probs = nullptr;
  if (d == nullptr) return CUDNN_STATUS_BAD_PARAM;
  if (const cudnnStatus_t s = ctc_shapes(probs_desc, grads_desc, api, &probs);
      s != CUDNN_STATUS_SUCCESS)
    return s;
  if (size == nullptr) return detail::bad(api, "NULL sizeInBytes");
  *size = ctc_workspace(*probs, d->max_label_length);
  return CUDNN_STATUS_SUCCESS;
}

PT_EXPORT cudnnStatus_t cudnnCTCLoss(cudnnHandle_t handle, const cudnnTensorDescriptor_t probs_desc,
                                     const void* probs, const int host_labels[],
                                     const int host_label_lengths[], const int host_input_lengths[],
                                     void* costs, const cudnnTensorDescriptor_t grads_desc,
                                     void* grads, cudnnCTCLossAlgo_t algo,
                                     cudnnCTCLossDescriptor_t desc, void* workspace,
                                     size_t workspace_bytes) {
  const char* api = "cudnnCTCLoss";
  const Tensor* p = nullptr;
  int longest = 0;
  if (ctc_of(desc, api) == nullptr) return CUDNN_STATUS_BAD_PARAM;
  if (const cudnnStatus_t s =
          ctc_shapes(probs_desc, grads != nullptr ? grads_desc : nullptr, api, &p);
      s != CUDNN_STATUS_SUCCESS)
    return s;
  if (const cudnnStatus_t s =
          ctc_host_labels(*p, host_labels, host_label_lengths, host_input_lengths, api, &longest);
      s != CUDNN_STATUS_SUCCESS)
    return s;
  return ctc_run(handle, algo, *p, probs, costs, grads, workspace_bytes, workspace, longest, api);
}

PT_EXPORT cudnnStatus_t cudnnCTCLoss_v8(cudnnHandle_t handle, cudnnCTCLossAlgo_t algo,
                                        cudnnCTCLossDescriptor_t desc,
                                        const cudnnTensorDescriptor_t probs_desc, const void* probs,
                                        const int labels[], const int label_lengths[],
                                        const int input_lengths[], void* costs,
                                        const cudnnTensorDescriptor_t grads_desc, void* grads,
                                        size_t workspace_bytes, void* workspace) {
  const char* api = "cudnnCTCLoss_v8";
  const auto* d = ctc_of(desc, api);
  const Tensor* p = nullptr;
  if (d == nullptr) return CUDNN_STATUS_BAD_PARAM;
  if (const cudnnStatus_t s =
          ctc_shapes(probs_desc, grads != nullptr ? grads_desc : nullptr, api, &p);
      s != CUDNN_STATUS_SUCCESS)
    return s;
  const std::size_t per_sequence = static_cast<std::size_t>(p->dim[1]) * sizeof(int);
  // The label arrays live on the device here: their sizes are bounded by the descriptor.
  if (!device_buffer(labels, sizeof(int)) || !device_buffer(label_lengths, per_sequence) ||
      !device_buffer(input_lengths, per_sequence))
    return detail::bad(api, "labels, labelLengths or inputLengths is not device memory");
  return ctc_run(handle, algo, *p, probs, costs, grads, workspace_bytes, workspace,
                 d->max_label_length, api);
}
