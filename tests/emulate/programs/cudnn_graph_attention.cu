// cuDNN's backend (graph) API as cudnn-frontend and NVIDIA's graph samples drive it, with no
// frontend library: a fused scaled-dot-product attention graph (S = Q·Kᵀ, scaled by a by-value
// scalar, exponentiated, normalized by its row sums, O = P·V; bf16 Q/K/V/O, every intermediate
// virtual) planned once (heuristics, engine config, execution plan, workspace query) and executed
// 3 times; a fused convolution + bias + ReLU graph (fp16, NCHW) executed once; then a graph with
// a resampling node the emulator does not support (reported by name) and a matmul whose
// shapes disagree (refused at finalize). Valid cuDNN: the same binary runs on a real GPU (where
// the attention graph needs a max-subtraction only for numerical range, not for validity).
// Written for the emulator's tests.
#include <cudnn.h>

#include <cstdint>
#include <vector>

#include "cudnn_graph_util.h"

using namespace cudnn_graph_util;

int main() {
  cudaStream_t stream;
  cudnnHandle_t handle = handle_on_new_stream(&stream);

  // ---- fused attention: batch 2, 8 heads, 1024 tokens, head dim 64 ----
  const int64_t b = 2, h = 8, s = 1024, d = 64;
  const size_t qkv_bytes = sizeof(uint16_t) * b * h * s * d;
  void *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr;
  for (void** p : {&q, &k, &v, &o}) EMU_CHECK(cudaMalloc(p, qkv_bytes));
  Desc tq = tensor(1, CUDNN_DATA_BFLOAT16, {b, h, s, d});
  // Kᵀ as a view of K [b, h, s, d]: dims [b, h, d, s].
  Desc tkt = tensor(2, CUDNN_DATA_BFLOAT16, {b, h, d, s}, {h * s * d, s * d, 1, d});
  Desc ts = tensor(3, CUDNN_DATA_FLOAT, {b, h, s, s}, {}, true);
  Desc tscale = tensor(4, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {}, false, true);
  Desc ts2 = tensor(5, CUDNN_DATA_FLOAT, {b, h, s, s}, {}, true);
  Desc tp = tensor(6, CUDNN_DATA_FLOAT, {b, h, s, s}, {}, true);
  Desc tl = tensor(7, CUDNN_DATA_FLOAT, {b, h, s, 1}, {}, true);
  Desc tp2 = tensor(8, CUDNN_DATA_BFLOAT16, {b, h, s, s}, {}, true);
  Desc tv = tensor(9, CUDNN_DATA_BFLOAT16, {b, h, s, d});
  Desc to = tensor(10, CUDNN_DATA_BFLOAT16, {b, h, s, d});
  Desc qk = matmul(tq, tkt, ts);
  DNN_CHECK(cudnnBackendFinalize(qk));
  Desc pv = matmul(tp2, tv, to);
  DNN_CHECK(cudnnBackendFinalize(pv));
  const std::vector<Desc> attention = {qk,
                                       pointwise(CUDNN_POINTWISE_MUL, ts, tscale, ts2),
                                       pointwise(CUDNN_POINTWISE_EXP, ts2, nullptr, tp),
                                       reduction(CUDNN_REDUCE_TENSOR_ADD, tp, tl),
                                       pointwise(CUDNN_POINTWISE_DIV, tp, tl, tp2),
                                       pv};
  Desc attention_graph = nullptr;
  DNN_CHECK(build_graph(handle, attention, &attention_graph));
  int64_t attention_workspace = -1;
  Desc attention_plan = plan_for(handle, attention_graph, &attention_workspace);
  float scale = 0.125f;  // 1/sqrt(64), passed by value
  void* workspace = nullptr;
  EMU_CHECK(cudaMalloc(&workspace, attention_workspace > 0 ? attention_workspace : 16));
  Desc attention_pack = variant_pack({1, 2, 4, 9, 10}, {q, k, &scale, v, o}, workspace);
  for (int step = 0; step < 3; ++step) {
    DNN_CHECK(cudnnBackendExecute(handle, attention_plan, attention_pack));
  }

  // ---- fused convolution + bias + ReLU: 8 x 64 x 56 x 56 fp16, 128 3x3 filters ----
  void *x = nullptr, *w = nullptr, *bias = nullptr, *z = nullptr;
  EMU_CHECK(cudaMalloc(&x, sizeof(uint16_t) * 8 * 64 * 56 * 56));
  EMU_CHECK(cudaMalloc(&w, sizeof(uint16_t) * 128 * 64 * 3 * 3));
  EMU_CHECK(cudaMalloc(&bias, sizeof(uint16_t) * 128));
  EMU_CHECK(cudaMalloc(&z, sizeof(uint16_t) * 8 * 128 * 56 * 56));
  Desc tx = tensor(20, CUDNN_DATA_HALF, {8, 64, 56, 56});
  Desc tw = tensor(21, CUDNN_DATA_HALF, {128, 64, 3, 3});
  Desc ty = tensor(22, CUDNN_DATA_FLOAT, {8, 128, 56, 56}, {}, true);
  Desc tb = tensor(23, CUDNN_DATA_HALF, {1, 128, 1, 1});
  Desc ty2 = tensor(24, CUDNN_DATA_FLOAT, {8, 128, 56, 56}, {}, true);
  Desc tz = tensor(25, CUDNN_DATA_HALF, {8, 128, 56, 56});
  Desc conv = convolution(1);
  Desc conv_op = make(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR);
  const float alpha = 1.0f, beta = 0.0f;
  set_desc(conv_op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X, tx);
  set_desc(conv_op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W, tw);
  set_desc(conv_op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y, ty);
  set_desc(conv_op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC, conv);
  set(conv_op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
  set(conv_op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
  DNN_CHECK(cudnnBackendFinalize(conv_op));
  const std::vector<Desc> conv_ops = {conv_op, pointwise(CUDNN_POINTWISE_ADD, ty, tb, ty2),
                                      pointwise(CUDNN_POINTWISE_RELU_FWD, ty2, nullptr, tz)};
  Desc conv_graph = nullptr;
  DNN_CHECK(build_graph(handle, conv_ops, &conv_graph));
  int64_t conv_workspace = -1;
  Desc conv_plan = plan_for(handle, conv_graph, &conv_workspace);
  Desc conv_pack = variant_pack({20, 21, 23, 25}, {x, w, bias, z}, workspace);
  DNN_CHECK(cudnnBackendExecute(handle, conv_plan, conv_pack));
  EMU_CHECK(cudaStreamSynchronize(stream));

  // ---- refused: a resampling node, and a matmul whose inner dimensions differ ----
  Desc norm = make(CUDNN_BACKEND_OPERATION_RESAMPLE_FWD_DESCRIPTOR);
  const cudnnStatus_t norm_finalize = cudnnBackendFinalize(norm);
  Desc norm_graph = nullptr;
  const cudnnStatus_t norm_status = norm_finalize == CUDNN_STATUS_SUCCESS
                                        ? build_graph(handle, {norm}, &norm_graph)
                                        : norm_finalize;
  Desc bad = matmul(tq, tv, to);  // [.., s, d] x [.., s, d]: d != s
  const cudnnStatus_t bad_status = cudnnBackendFinalize(bad);

  std::printf(
      "cudnn_graph_attention: cuDNN %zu, workspaces %lld and %lld bytes, resampling "
      "graph -> %s, mismatched matmul -> %s\n",
      cudnnGetVersion(), static_cast<long long>(attention_workspace),
      static_cast<long long>(conv_workspace), cudnnGetErrorString(norm_status),
      cudnnGetErrorString(bad_status));
  for (Desc desc :
       {attention_pack, attention_plan, attention_graph, conv_pack, conv_plan, conv_graph}) {
    DNN_CHECK(cudnnBackendDestroyDescriptor(desc));
  }
  for (void* p : {q, k, v, o, x, w, bias, z, workspace}) EMU_CHECK(cudaFree(p));
  DNN_CHECK(cudnnDestroy(handle));
  EMU_CHECK(cudaStreamDestroy(stream));
  return norm_status != CUDNN_STATUS_SUCCESS && bad_status != CUDNN_STATUS_SUCCESS ? 0 : 1;
}
