// The training-side nodes of cuDNN's backend (graph) API, as cudnn-frontend builds them for
// PyTorch/Transformer Engine: a LayerNorm forward (training: mean and inverse variance saved), an
// RMSNorm forward (inference), a LayerNorm backward, a convolution backward data and backward
// filter, and the fused SDPA forward and backward nodes (flash attention, bf16). Each graph is
// planned (heuristics, engine config, plan) and executed once. Written against the cuDNN 9
// backend headers for the emulator's tests (not run on a real GPU here).
#include <cudnn.h>

#include <cstdint>
#include <vector>

#include "cudnn_graph_util.h"

namespace {

using namespace cudnn_graph_util;

// Plans and executes a one-operation graph with the tensors `uids` bound to `pointers`.
void run_once(cudnnHandle_t handle, Desc op, const std::vector<int64_t>& uids,
              const std::vector<void*>& pointers, void* workspace) {
  DNN_CHECK(cudnnBackendFinalize(op));
  Desc graph = nullptr;
  DNN_CHECK(build_graph(handle, {op}, &graph));
  int64_t workspace_bytes = -1;
  Desc plan = plan_for(handle, graph, &workspace_bytes);
  EMU_REQUIRE(workspace_bytes == 0);
  Desc pack = variant_pack(uids, pointers, workspace);
  DNN_CHECK(cudnnBackendExecute(handle, plan, pack));
  for (Desc d : {pack, plan, graph, op}) DNN_CHECK(cudnnBackendDestroyDescriptor(d));
}

void* device_bytes(size_t bytes) {
  void* p = nullptr;
  EMU_CHECK(cudaMalloc(&p, bytes));
  return p;
}

}  // namespace

int main() {
  cudaStream_t stream;
  cudnnHandle_t handle = handle_on_new_stream(&stream);
  void* workspace = device_bytes(16);
  float epsilon = 1e-5f;
  const float alpha = 1.0f, beta = 0.0f;

  // ---- normalizations: 4096 tokens x 1024 features, bf16 activations, fp32 statistics ----
  const int64_t n = 4096, c = 1024;
  void* x = device_bytes(sizeof(uint16_t) * n * c);
  void* y = device_bytes(sizeof(uint16_t) * n * c);
  void* dy = device_bytes(sizeof(uint16_t) * n * c);
  void* dx = device_bytes(sizeof(uint16_t) * n * c);
  void* scale = device_bytes(sizeof(float) * c);
  void* bias = device_bytes(sizeof(float) * c);
  void* dscale = device_bytes(sizeof(float) * c);
  void* dbias = device_bytes(sizeof(float) * c);
  void* mean = device_bytes(sizeof(float) * n);
  void* inv_var = device_bytes(sizeof(float) * n);
  Desc tx = tensor(1, CUDNN_DATA_BFLOAT16, {n, c, 1, 1});
  Desc tscale = tensor(2, CUDNN_DATA_FLOAT, {1, c, 1, 1});
  Desc tbias = tensor(3, CUDNN_DATA_FLOAT, {1, c, 1, 1});
  Desc teps = tensor(4, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {}, false, true);
  Desc tmean = tensor(5, CUDNN_DATA_FLOAT, {n, 1, 1, 1});
  Desc tinv = tensor(6, CUDNN_DATA_FLOAT, {n, 1, 1, 1});
  Desc ty = tensor(7, CUDNN_DATA_BFLOAT16, {n, c, 1, 1});
  {
    Desc op = make(CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR);
    const cudnnBackendNormMode_t mode = CUDNN_LAYER_NORM;
    const cudnnBackendNormFwdPhase_t phase = CUDNN_NORM_FWD_TRAINING;
    set(op, CUDNN_ATTR_OPERATION_NORM_FWD_MODE, CUDNN_TYPE_NORM_MODE, 1, &mode);
    set(op, CUDNN_ATTR_OPERATION_NORM_FWD_PHASE, CUDNN_TYPE_NORM_FWD_PHASE, 1, &phase);
    set_desc(op, CUDNN_ATTR_OPERATION_NORM_FWD_XDESC, tx);
    set_desc(op, CUDNN_ATTR_OPERATION_NORM_FWD_SCALE_DESC, tscale);
    set_desc(op, CUDNN_ATTR_OPERATION_NORM_FWD_BIAS_DESC, tbias);
    set_desc(op, CUDNN_ATTR_OPERATION_NORM_FWD_EPSILON_DESC, teps);
    set_desc(op, CUDNN_ATTR_OPERATION_NORM_FWD_MEAN_DESC, tmean);
    set_desc(op, CUDNN_ATTR_OPERATION_NORM_FWD_INV_VARIANCE_DESC, tinv);
    set_desc(op, CUDNN_ATTR_OPERATION_NORM_FWD_YDESC, ty);
    run_once(handle, op, {1, 2, 3, 4, 5, 6, 7}, {x, scale, bias, &epsilon, mean, inv_var, y},
             workspace);
  }
  {
    Desc op = make(CUDNN_BACKEND_OPERATION_NORM_FORWARD_DESCRIPTOR);
    const cudnnBackendNormMode_t mode = CUDNN_RMS_NORM;
    const cudnnBackendNormFwdPhase_t phase = CUDNN_NORM_FWD_INFERENCE;
    set(op, CUDNN_ATTR_OPERATION_NORM_FWD_MODE, CUDNN_TYPE_NORM_MODE, 1, &mode);
    set(op, CUDNN_ATTR_OPERATION_NORM_FWD_PHASE, CUDNN_TYPE_NORM_FWD_PHASE, 1, &phase);
    set_desc(op, CUDNN_ATTR_OPERATION_NORM_FWD_XDESC, tx);
    set_desc(op, CUDNN_ATTR_OPERATION_NORM_FWD_SCALE_DESC, tscale);
    set_desc(op, CUDNN_ATTR_OPERATION_NORM_FWD_EPSILON_DESC, teps);
    set_desc(op, CUDNN_ATTR_OPERATION_NORM_FWD_YDESC, ty);
    run_once(handle, op, {1, 2, 4, 7}, {x, scale, &epsilon, y}, workspace);
  }
  {
    Desc tdy = tensor(8, CUDNN_DATA_BFLOAT16, {n, c, 1, 1});
    Desc tdscale = tensor(9, CUDNN_DATA_FLOAT, {1, c, 1, 1});
    Desc tdbias = tensor(10, CUDNN_DATA_FLOAT, {1, c, 1, 1});
    Desc tdx = tensor(11, CUDNN_DATA_BFLOAT16, {n, c, 1, 1});
    Desc op = make(CUDNN_BACKEND_OPERATION_NORM_BACKWARD_DESCRIPTOR);
    const cudnnBackendNormMode_t mode = CUDNN_LAYER_NORM;
    set(op, CUDNN_ATTR_OPERATION_NORM_BWD_MODE, CUDNN_TYPE_NORM_MODE, 1, &mode);
    set_desc(op, CUDNN_ATTR_OPERATION_NORM_BWD_XDESC, tx);
    set_desc(op, CUDNN_ATTR_OPERATION_NORM_BWD_DYDESC, tdy);
    set_desc(op, CUDNN_ATTR_OPERATION_NORM_BWD_SCALE_DESC, tscale);
    set_desc(op, CUDNN_ATTR_OPERATION_NORM_BWD_MEAN_DESC, tmean);
    set_desc(op, CUDNN_ATTR_OPERATION_NORM_BWD_INV_VARIANCE_DESC, tinv);
    set_desc(op, CUDNN_ATTR_OPERATION_NORM_BWD_DSCALE_DESC, tdscale);
    set_desc(op, CUDNN_ATTR_OPERATION_NORM_BWD_DBIAS_DESC, tdbias);
    set_desc(op, CUDNN_ATTR_OPERATION_NORM_BWD_DXDESC, tdx);
    run_once(handle, op, {1, 8, 2, 5, 6, 9, 10, 11},
             {x, dy, scale, mean, inv_var, dscale, dbias, dx}, workspace);
  }

  // ---- convolution backward: 8 x 64 x 56 x 56 fp16, 128 3x3 filters, padding 1 ----
  void* cx = device_bytes(sizeof(uint16_t) * 8 * 64 * 56 * 56);
  void* cdx = device_bytes(sizeof(uint16_t) * 8 * 64 * 56 * 56);
  void* cw = device_bytes(sizeof(uint16_t) * 128 * 64 * 3 * 3);
  void* cdw = device_bytes(sizeof(uint16_t) * 128 * 64 * 3 * 3);
  void* cdy = device_bytes(sizeof(uint16_t) * 8 * 128 * 56 * 56);
  Desc tcx = tensor(20, CUDNN_DATA_HALF, {8, 64, 56, 56});
  Desc tcw = tensor(21, CUDNN_DATA_HALF, {128, 64, 3, 3});
  Desc tcdy = tensor(22, CUDNN_DATA_HALF, {8, 128, 56, 56});
  Desc tcdx = tensor(23, CUDNN_DATA_HALF, {8, 64, 56, 56});
  Desc tcdw = tensor(24, CUDNN_DATA_HALF, {128, 64, 3, 3});
  {
    Desc op = make(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR);
    set_desc(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W, tcw);
    set_desc(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY, tcdy);
    set_desc(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX, tcdx);
    set_desc(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC, convolution(1));
    set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
    set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
    run_once(handle, op, {21, 22, 23}, {cw, cdy, cdx}, workspace);
  }
  {
    Desc op = make(CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_FILTER_DESCRIPTOR);
    set_desc(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_X, tcx);
    set_desc(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DY, tcdy);
    set_desc(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_DW, tcdw);
    set_desc(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_CONV_DESC, convolution(1));
    set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_ALPHA, CUDNN_TYPE_FLOAT, 1, &alpha);
    set(op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_FILTER_BETA, CUDNN_TYPE_FLOAT, 1, &beta);
    run_once(handle, op, {20, 22, 24}, {cx, cdy, cdw}, workspace);
  }

  // ---- fused attention nodes: batch 2, 8 heads, 1024 tokens, head dim 64, bf16 ----
  const int64_t b = 2, h = 8, s = 1024, d = 64;
  const size_t qkv_bytes = sizeof(uint16_t) * b * h * s * d;
  void* q = device_bytes(qkv_bytes);
  void* k = device_bytes(qkv_bytes);
  void* v = device_bytes(qkv_bytes);
  void* o = device_bytes(qkv_bytes);
  void* dout = device_bytes(qkv_bytes);
  void* dq = device_bytes(qkv_bytes);
  void* dk = device_bytes(qkv_bytes);
  void* dv = device_bytes(qkv_bytes);
  void* stats = device_bytes(sizeof(float) * b * h * s);
  float attention_scale = 0.125f;
  Desc tq = tensor(30, CUDNN_DATA_BFLOAT16, {b, h, s, d});
  Desc tk = tensor(31, CUDNN_DATA_BFLOAT16, {b, h, s, d});
  Desc tv = tensor(32, CUDNN_DATA_BFLOAT16, {b, h, s, d});
  Desc to = tensor(33, CUDNN_DATA_BFLOAT16, {b, h, s, d});
  Desc tstats = tensor(34, CUDNN_DATA_FLOAT, {b, h, s, 1});
  Desc tsc = tensor(35, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {}, false, true);
  {
    Desc op = make(CUDNN_BACKEND_OPERATION_SDPA_FWD_DESCRIPTOR);
    set_desc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_QDESC, tq);
    set_desc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_KDESC, tk);
    set_desc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_VDESC, tv);
    set_desc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_ODESC, to);
    set_desc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_STATSDESC, tstats);
    set_desc(op, CUDNN_ATTR_OPERATION_SDPA_FWD_SCALEDESC, tsc);
    run_once(handle, op, {30, 31, 32, 33, 34, 35}, {q, k, v, o, stats, &attention_scale},
             workspace);
  }
  {
    Desc tdo = tensor(36, CUDNN_DATA_BFLOAT16, {b, h, s, d});
    Desc tdq = tensor(37, CUDNN_DATA_BFLOAT16, {b, h, s, d});
    Desc tdk = tensor(38, CUDNN_DATA_BFLOAT16, {b, h, s, d});
    Desc tdv = tensor(39, CUDNN_DATA_BFLOAT16, {b, h, s, d});
    Desc op = make(CUDNN_BACKEND_OPERATION_SDPA_BWD_DESCRIPTOR);
    set_desc(op, CUDNN_ATTR_OPERATION_SDPA_BWD_QDESC, tq);
    set_desc(op, CUDNN_ATTR_OPERATION_SDPA_BWD_KDESC, tk);
    set_desc(op, CUDNN_ATTR_OPERATION_SDPA_BWD_VDESC, tv);
    set_desc(op, CUDNN_ATTR_OPERATION_SDPA_BWD_ODESC, to);
    set_desc(op, CUDNN_ATTR_OPERATION_SDPA_BWD_DODDESC, tdo);
    set_desc(op, CUDNN_ATTR_OPERATION_SDPA_BWD_STATSDESC, tstats);
    set_desc(op, CUDNN_ATTR_OPERATION_SDPA_BWD_SCALEDESC, tsc);
    set_desc(op, CUDNN_ATTR_OPERATION_SDPA_BWD_DQDESC, tdq);
    set_desc(op, CUDNN_ATTR_OPERATION_SDPA_BWD_DKDESC, tdk);
    set_desc(op, CUDNN_ATTR_OPERATION_SDPA_BWD_DVDESC, tdv);
    run_once(handle, op, {30, 31, 32, 33, 36, 34, 35, 37, 38, 39},
             {q, k, v, o, dout, stats, &attention_scale, dq, dk, dv}, workspace);
  }
  EMU_CHECK(cudaStreamSynchronize(stream));
  std::printf(
      "cudnn_graph_training: layer norm fwd/bwd, rms norm, conv bwd data/filter, sdpa "
      "fwd/bwd executed\n");

  for (void* p : {x,   y,   dy, dx, scale, bias, dscale, dbias, mean, inv_var, cx,    cdx,      cw,
                  cdw, cdy, q,  k,  v,     o,    dout,   dq,    dk,   dv,      stats, workspace}) {
    EMU_CHECK(cudaFree(p));
  }
  DNN_CHECK(cudnnDestroy(handle));
  EMU_CHECK(cudaStreamDestroy(stream));
  return 0;
}
