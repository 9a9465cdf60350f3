// Causal attention through cuDNN's backend API as cudnn-frontend builds it (its causal_mask):
// S = Q·Kᵀ, scaled; row and column indices of S (GEN_INDEX on axes 2 and 3), kept where
// row ≥ column (CMP_GE), −inf elsewhere (BINARY_SELECT); exp, normalized by the row sums;
// O = P·V. bf16 Q/K/V/O [2, 8, 4096, 64], every intermediate virtual. The same attention without
// the mask is executed first, then the causal graph, once each, so a test can compare the two.
// Valid cuDNN: the same binary runs on a real GPU (which would want a max-subtraction for range).
// Written for the emulator's tests.
#include <cudnn.h>

#include <cstdint>
#include <limits>
#include <vector>

#include "cudnn_graph_util.h"

using namespace cudnn_graph_util;

int main() {
  cudaStream_t stream;
  cudnnHandle_t handle = handle_on_new_stream(&stream);

  const int64_t b = 2, h = 8, s = 4096, d = 64;
  const size_t qkv_bytes = sizeof(uint16_t) * b * h * s * d;
  void *q = nullptr, *k = nullptr, *v = nullptr, *o = nullptr;
  for (void** p : {&q, &k, &v, &o}) EMU_CHECK(cudaMalloc(p, qkv_bytes));
  const std::vector<int64_t> scores = {b, h, s, s};
  Desc tq = tensor(1, CUDNN_DATA_BFLOAT16, {b, h, s, d});
  Desc tkt = tensor(2, CUDNN_DATA_BFLOAT16, {b, h, d, s}, {h * s * d, s * d, 1, d});  // Kᵀ view
  Desc tscale = tensor(4, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {}, false, true);
  Desc tneg = tensor(5, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {}, false, true);
  Desc tv = tensor(9, CUDNN_DATA_BFLOAT16, {b, h, s, d});
  Desc to = tensor(10, CUDNN_DATA_BFLOAT16, {b, h, s, d});
  float scale = 0.125f;  // 1/sqrt(64), by value
  float neg_inf = -std::numeric_limits<float>::infinity();
  void* workspace = nullptr;
  EMU_CHECK(cudaMalloc(&workspace, 1 << 20));

  for (const bool causal : {false, true}) {
    int64_t uid = 100;
    const auto virt = [&](cudnnDataType_t type, std::vector<int64_t> dims) {
      return tensor(uid++, type, std::move(dims), {}, true);
    };
    Desc ts = virt(CUDNN_DATA_FLOAT, scores);
    Desc ts2 = virt(CUDNN_DATA_FLOAT, scores);
    std::vector<Desc> ops;
    Desc qk = matmul(tq, tkt, ts);
    DNN_CHECK(cudnnBackendFinalize(qk));
    ops.push_back(qk);
    ops.push_back(pointwise(CUDNN_POINTWISE_MUL, ts, tscale, ts2));
    Desc logits = ts2;
    if (causal) {
      Desc row = virt(CUDNN_DATA_INT32, scores);
      Desc col = virt(CUDNN_DATA_INT32, scores);
      Desc keep = virt(CUDNN_DATA_BOOLEAN, scores);
      Desc masked = virt(CUDNN_DATA_FLOAT, scores);
      ops.push_back(pointwise(CUDNN_POINTWISE_GEN_INDEX, ts2, nullptr, row, nullptr, 2));
      ops.push_back(pointwise(CUDNN_POINTWISE_GEN_INDEX, ts2, nullptr, col, nullptr, 3));
      ops.push_back(pointwise(CUDNN_POINTWISE_CMP_GE, row, col, keep));
      // y = keep ? x : b (BINARY_SELECT: X, B and the mask T)
      ops.push_back(pointwise(CUDNN_POINTWISE_BINARY_SELECT, ts2, tneg, masked, keep));
      logits = masked;
    }
    Desc tp = virt(CUDNN_DATA_FLOAT, scores);
    Desc tl = virt(CUDNN_DATA_FLOAT, {b, h, s, 1});
    Desc tp2 = virt(CUDNN_DATA_BFLOAT16, scores);
    ops.push_back(pointwise(CUDNN_POINTWISE_EXP, logits, nullptr, tp));
    ops.push_back(reduction(CUDNN_REDUCE_TENSOR_ADD, tp, tl));
    ops.push_back(pointwise(CUDNN_POINTWISE_DIV, tp, tl, tp2));
    Desc pv = matmul(tp2, tv, to);
    DNN_CHECK(cudnnBackendFinalize(pv));
    ops.push_back(pv);
    Desc graph = nullptr;
    DNN_CHECK(build_graph(handle, ops, &graph));
    int64_t workspace_bytes = -1;
    Desc plan = plan_for(handle, graph, &workspace_bytes);
    std::vector<int64_t> uids = {1, 2, 4, 9, 10};
    std::vector<void*> pointers = {q, k, &scale, v, o};
    if (causal) {
      uids.push_back(5);
      pointers.push_back(&neg_inf);
    }
    Desc pack = variant_pack(uids, pointers, workspace);
    DNN_CHECK(cudnnBackendExecute(handle, plan, pack));
    EMU_CHECK(cudaStreamSynchronize(stream));
    std::printf("cudnn_graph_causal: %s attention, %zu operations\n", causal ? "causal" : "full",
                ops.size());
  }
  DNN_CHECK(cudnnDestroy(handle));
  return 0;
}
