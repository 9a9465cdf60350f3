// Shared by the cuDNN backend-API test programs (cudnn_graph_*.cu): descriptor creation and
// attributes, packed tensors, operation graph -> heuristics -> engine config -> execution plan,
// variant packs. Every call is checked (DNN_CHECK exits non-zero with the call and its status).
#pragma once

#include <cudnn.h>

#include <cstdint>
#include <vector>

#include "dnn_check.h"

namespace cudnn_graph_util {

using Desc = cudnnBackendDescriptor_t;

inline Desc make(cudnnBackendDescriptorType_t type) {
  Desc d = nullptr;
  DNN_CHECK(cudnnBackendCreateDescriptor(type, &d));
  return d;
}

inline void set(Desc d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type,
                int64_t count, const void* values) {
  DNN_CHECK(cudnnBackendSetAttribute(d, name, type, count, values));
}

inline void set_desc(Desc d, cudnnBackendAttributeName_t name, Desc value) {
  set(d, name, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &value);
}

// A packed tensor (row-major strides unless given).
inline Desc tensor(int64_t uid, cudnnDataType_t type, std::vector<int64_t> dims,
                   std::vector<int64_t> strides = {}, bool is_virtual = false,
                   bool by_value = false) {
  if (strides.empty()) {
    strides.assign(dims.size(), 1);
    for (int i = static_cast<int>(dims.size()) - 2; i >= 0; --i) {
      strides[i] = strides[i + 1] * dims[i + 1];
    }
  }
  Desc t = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
  const int64_t alignment = 16;
  set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &type);
  set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, dims.size(), dims.data());
  set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, strides.size(), strides.data());
  set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid);
  set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment);
  set(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual);
  if (by_value) set(t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value);
  DNN_CHECK(cudnnBackendFinalize(t));
  return t;
}

// Operation graph → heuristics → engine config → execution plan.
inline cudnnStatus_t build_graph(cudnnHandle_t handle, const std::vector<Desc>& ops, Desc* graph) {
  *graph = make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR);
  set(*graph, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, ops.size(), ops.data());
  set(*graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
  return cudnnBackendFinalize(*graph);
}

inline Desc plan_for(cudnnHandle_t handle, Desc graph, int64_t* workspace) {
  Desc heur = make(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
  set_desc(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, graph);
  set(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
  DNN_CHECK(cudnnBackendFinalize(heur));
  int64_t available = 0;
  DNN_CHECK(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &available, nullptr));
  EMU_REQUIRE(available >= 1);
  Desc cfg = make(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
  int64_t returned = 0;
  DNN_CHECK(cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &returned, &cfg));
  Desc plan = make(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
  set(plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle);
  set_desc(plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, cfg);
  DNN_CHECK(cudnnBackendFinalize(plan));
  int64_t count = 0;
  DNN_CHECK(cudnnBackendGetAttribute(plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                     CUDNN_TYPE_INT64, 1, &count, workspace));
  return plan;
}

inline Desc variant_pack(const std::vector<int64_t>& uids, const std::vector<void*>& pointers,
                         void* workspace) {
  Desc pack = make(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR);
  set(pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, uids.size(), uids.data());
  set(pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, pointers.size(),
      pointers.data());
  set(pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &workspace);
  DNN_CHECK(cudnnBackendFinalize(pack));
  return pack;
}

// A matmul operation C = A·B (fp32 compute); finalized by the caller.
inline Desc matmul(Desc a, Desc b, Desc c) {
  Desc mm = make(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  set(mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
  DNN_CHECK(cudnnBackendFinalize(mm));
  Desc op = make(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
  set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, a);
  set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, b);
  set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, c);
  set_desc(op, CUDNN_ATTR_OPERATION_MATMUL_DESC, mm);
  return op;  // finalized by the caller (the shape check is the point of one test)
}

// A pointwise operation y = mode(x[, b]); `mask` is BINARY_SELECT's T input, `axis` GEN_INDEX's
// axis (each left out when null / negative).
inline Desc pointwise(cudnnPointwiseMode_t mode, Desc x, Desc b, Desc y, Desc mask = nullptr,
                      int64_t axis = -1) {
  Desc pw = make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
  const cudnnDataType_t precision = CUDNN_DATA_FLOAT;
  set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode);
  set(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &precision);
  if (axis >= 0) set(pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis);
  DNN_CHECK(cudnnBackendFinalize(pw));
  Desc op = make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
  set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, pw);
  set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x);
  if (b != nullptr) set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, b);
  if (mask != nullptr) set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, mask);
  set_desc(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
  DNN_CHECK(cudnnBackendFinalize(op));
  return op;
}

inline Desc reduction(cudnnReduceTensorOp_t mode, Desc x, Desc y) {
  Desc red = make(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  set(red, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &mode);
  set(red, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
  DNN_CHECK(cudnnBackendFinalize(red));
  Desc op = make(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
  set_desc(op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x);
  set_desc(op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y);
  set_desc(op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, red);
  DNN_CHECK(cudnnBackendFinalize(op));
  return op;
}

// A 2-D cross-correlation (fp32 compute), padding `pad` on every side, unit strides and dilations.
inline Desc convolution(int64_t pad) {
  Desc conv = make(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR);
  const int64_t spatial = 2, pads[2] = {pad, pad}, ones[2] = {1, 1};
  const cudnnDataType_t compute = CUDNN_DATA_FLOAT;
  const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
  set(conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64, 1, &spatial);
  set(conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &compute);
  set(conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE, CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode);
  set(conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64, 2, pads);
  set(conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64, 2, pads);
  set(conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES, CUDNN_TYPE_INT64, 2, ones);
  set(conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64, 2, ones);
  DNN_CHECK(cudnnBackendFinalize(conv));
  return conv;
}

// A cuDNN handle working on a new stream (returned in `stream`).
inline cudnnHandle_t handle_on_new_stream(cudaStream_t* stream) {
  cudnnHandle_t handle;
  DNN_CHECK(cudnnCreate(&handle));
  EMU_CHECK(cudaStreamCreate(stream));
  DNN_CHECK(cudnnSetStream(handle, *stream));
  return handle;
}

}  // namespace cudnn_graph_util
