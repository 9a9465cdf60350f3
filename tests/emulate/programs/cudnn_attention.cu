// cuDNN's legacy multi-head attention API as NVIDIA's multiHeadAttention sample drives it: 4
// heads, Q/K/V of 64 projected to 16 per head, an output projection back to 64 with biases, a
// batch of 2 sequences of lengths 8 and 6. A training forward with residuals over full windows,
// the data and weight gradients, a causal inference pass (query t sees keys [0, t]) and one
// incremental decoding step (currIdx 3). The weight buffer's layout is checked through
// cudnnGetMultiHeadAttnWeights: the eight pieces have their documented shapes and tile the buffer.
// Valid CUDA/cuDNN: the same binary runs on a real GPU.
#include <cudnn.h>

#include <algorithm>
#include <cstdio>
#include <utility>
#include <vector>

#include "dnn_check.h"

int main() {
  cudnnHandle_t dnn;
  DNN_CHECK(cudnnCreate(&dnn));
  cudaStream_t stream;
  EMU_CHECK(cudaStreamCreate(&stream));
  DNN_CHECK(cudnnSetStream(dnn, stream));

  const int heads = 4, size = 64, proj = 16, batch = 2, max_length = 8;
  cudnnAttnDescriptor_t attn;
  DNN_CHECK(cudnnCreateAttnDescriptor(&attn));
  DNN_CHECK(cudnnSetAttnDescriptor(
      attn, CUDNN_ATTN_QUERYMAP_ALL_TO_ONE | CUDNN_ATTN_ENABLE_PROJ_BIASES, heads, 0.25,
      CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH, nullptr, nullptr, size, size, size,
      proj, proj, proj, size, max_length, max_length, batch, 1));
  int got_heads = 0, got_o = 0;
  double scale = 0;
  DNN_CHECK(cudnnGetAttnDescriptor(attn, nullptr, &got_heads, &scale, nullptr, nullptr, nullptr,
                                   nullptr, nullptr, nullptr, nullptr, nullptr, nullptr, nullptr,
                                   nullptr, &got_o, nullptr, nullptr, nullptr, nullptr));
  EMU_REQUIRE(got_heads == heads && scale == 0.25 && got_o == size);

  size_t weight_bytes = 0, work_bytes = 0, reserve_bytes = 0, inference_work = 0;
  DNN_CHECK(cudnnGetMultiHeadAttnBuffers(dnn, attn, &weight_bytes, &work_bytes, &reserve_bytes));
  DNN_CHECK(cudnnGetMultiHeadAttnBuffers(dnn, attn, &weight_bytes, &inference_work, nullptr));
  // Q, K, V: heads x 16 x 64; O: heads x 64 x 16; biases 4 x 16 three times and 64.
  const size_t parameters = 4 * heads * proj * size + 3 * heads * proj + size;
  EMU_REQUIRE(weight_bytes == sizeof(float) * parameters);
  EMU_REQUIRE(work_bytes > 0 && reserve_bytes > 0 && inference_work > 0);

  void *weights, *dweights, *work, *reserve;
  EMU_CHECK(cudaMalloc(&weights, weight_bytes));
  EMU_CHECK(cudaMalloc(&dweights, weight_bytes));
  EMU_CHECK(cudaMalloc(&work, work_bytes));
  EMU_CHECK(cudaMalloc(&reserve, reserve_bytes));

  cudnnTensorDescriptor_t w_desc;
  DNN_CHECK(cudnnCreateTensorDescriptor(&w_desc));
  std::vector<std::pair<char*, char*>> pieces;
  size_t walked = 0;
  for (int kind = 0; kind < CUDNN_ATTN_WKIND_COUNT; ++kind) {
    void* address = nullptr;
    DNN_CHECK(cudnnGetMultiHeadAttnWeights(dnn, attn,
                                           static_cast<cudnnMultiHeadAttnWeightKind_t>(kind),
                                           weight_bytes, weights, w_desc, &address));
    EMU_REQUIRE(address != nullptr);
    cudnnDataType_t dtype;
    int dims = 0, dim[3], stride[3];
    DNN_CHECK(cudnnGetTensorNdDescriptor(w_desc, 3, &dtype, &dims, dim, stride));
    EMU_REQUIRE(dims == 3);
    if (kind < CUDNN_MH_ATTN_O_WEIGHTS) {
      EMU_REQUIRE(dim[0] == heads && dim[1] == proj && dim[2] == size);
    } else if (kind == CUDNN_MH_ATTN_O_WEIGHTS) {
      EMU_REQUIRE(dim[0] == heads && dim[1] == size && dim[2] == proj);
    } else if (kind < CUDNN_MH_ATTN_O_BIASES) {
      EMU_REQUIRE(dim[0] == heads && dim[1] == proj && dim[2] == 1);
    } else {
      EMU_REQUIRE(dim[0] == 1 && dim[1] == size && dim[2] == 1);
    }
    const size_t n = static_cast<size_t>(dim[0]) * dim[1] * dim[2];
    pieces.push_back(
        {static_cast<char*>(address), static_cast<char*>(address) + n * sizeof(float)});
    walked += n;
  }
  std::sort(pieces.begin(), pieces.end());
  EMU_REQUIRE(pieces.front().first == weights);
  for (size_t i = 1; i < pieces.size(); ++i) EMU_REQUIRE(pieces[i - 1].second == pieces[i].first);
  EMU_REQUIRE(walked == parameters);

  // Sequences [batch, beam, time, vector] with lengths 8 and 6, for Q/O and for K/V.
  const int lengths[batch] = {8, 6};
  int dim[CUDNN_SEQDATA_DIM_COUNT];
  dim[CUDNN_SEQDATA_TIME_DIM] = max_length, dim[CUDNN_SEQDATA_BATCH_DIM] = batch;
  dim[CUDNN_SEQDATA_BEAM_DIM] = 1, dim[CUDNN_SEQDATA_VECT_DIM] = size;
  const cudnnSeqDataAxis_t axes[CUDNN_SEQDATA_DIM_COUNT] = {
      CUDNN_SEQDATA_BATCH_DIM, CUDNN_SEQDATA_BEAM_DIM, CUDNN_SEQDATA_TIME_DIM,
      CUDNN_SEQDATA_VECT_DIM};
  cudnnSeqDataDescriptor_t q_desc, k_desc;
  DNN_CHECK(cudnnCreateSeqDataDescriptor(&q_desc));
  DNN_CHECK(cudnnCreateSeqDataDescriptor(&k_desc));
  DNN_CHECK(
      cudnnSetSeqDataDescriptor(q_desc, CUDNN_DATA_FLOAT, 4, dim, axes, batch, lengths, nullptr));
  DNN_CHECK(
      cudnnSetSeqDataDescriptor(k_desc, CUDNN_DATA_FLOAT, 4, dim, axes, batch, lengths, nullptr));
  int got_dim[4] = {};
  size_t got_count = 0;
  int got_lengths[batch] = {};
  DNN_CHECK(cudnnGetSeqDataDescriptor(q_desc, nullptr, nullptr, 4, got_dim, nullptr, &got_count,
                                      batch, got_lengths, nullptr));
  EMU_REQUIRE(got_dim[CUDNN_SEQDATA_VECT_DIM] == size && got_count == 2 && got_lengths[1] == 6);

  const size_t data_bytes = sizeof(float) * batch * max_length * size;
  float *q, *k, *v, *o, *dq, *dk, *dv, *dout;
  for (float** p : {&q, &k, &v, &o, &dq, &dk, &dv, &dout}) EMU_CHECK(cudaMalloc(p, data_bytes));
  int *dev_q_lengths, *dev_kv_lengths;
  EMU_CHECK(cudaMalloc(&dev_q_lengths, sizeof(lengths)));
  EMU_CHECK(cudaMalloc(&dev_kv_lengths, sizeof(lengths)));
  EMU_CHECK(cudaMemcpy(dev_q_lengths, lengths, sizeof(lengths), cudaMemcpyHostToDevice));
  EMU_CHECK(cudaMemcpy(dev_kv_lengths, lengths, sizeof(lengths), cudaMemcpyHostToDevice));

  // Training: every query sees every key of its sequence; residuals are the queries.
  int lo[max_length], hi[max_length];
  for (int t = 0; t < max_length; ++t) lo[t] = 0, hi[t] = max_length;
  DNN_CHECK(cudnnMultiHeadAttnForward(dnn, attn, -1, lo, hi, dev_q_lengths, dev_kv_lengths, q_desc,
                                      q, q, k_desc, k, k_desc, v, q_desc, o, weight_bytes, weights,
                                      work_bytes, work, reserve_bytes, reserve));
  DNN_CHECK(cudnnMultiHeadAttnBackwardData(
      dnn, attn, lo, hi, dev_q_lengths, dev_kv_lengths, q_desc, dout, q_desc, dq, q, k_desc, dk, k,
      k_desc, dv, v, weight_bytes, weights, work_bytes, work, reserve_bytes, reserve));
  EMU_CHECK(cudaMemsetAsync(dweights, 0, weight_bytes, stream));
  DNN_CHECK(cudnnMultiHeadAttnBackwardWeights(dnn, attn, CUDNN_WGRAD_MODE_ADD, q_desc, q, k_desc, k,
                                              k_desc, v, q_desc, dout, weight_bytes, weights,
                                              dweights, work_bytes, work, reserve_bytes, reserve));

  // Inference with a causal window, then one decoding step.
  for (int t = 0; t < max_length; ++t) hi[t] = t + 1;
  DNN_CHECK(cudnnMultiHeadAttnForward(dnn, attn, -1, lo, hi, dev_q_lengths, dev_kv_lengths, q_desc,
                                      q, nullptr, k_desc, k, k_desc, v, q_desc, o, weight_bytes,
                                      weights, inference_work, work, 0, nullptr));
  DNN_CHECK(cudnnMultiHeadAttnForward(dnn, attn, 3, lo, hi, dev_q_lengths, dev_kv_lengths, q_desc,
                                      q, nullptr, k_desc, k, k_desc, v, q_desc, o, weight_bytes,
                                      weights, inference_work, work, 0, nullptr));
  EMU_CHECK(cudaStreamSynchronize(stream));
  std::printf(
      "cudnn_attention: weights %zu bytes in 8 pieces (%zu parameters walked), workspace %zu "
      "bytes, reserve %zu bytes\n",
      weight_bytes, walked, work_bytes, reserve_bytes);

  for (void* p :
       {(void*)q, (void*)k, (void*)v, (void*)o, (void*)dq, (void*)dk, (void*)dv, (void*)dout,
        (void*)dev_q_lengths, (void*)dev_kv_lengths, weights, dweights, work, reserve}) {
    EMU_CHECK(cudaFree(p));
  }
  DNN_CHECK(cudnnDestroySeqDataDescriptor(q_desc));
  DNN_CHECK(cudnnDestroySeqDataDescriptor(k_desc));
  DNN_CHECK(cudnnDestroyTensorDescriptor(w_desc));
  DNN_CHECK(cudnnDestroyAttnDescriptor(attn));
  DNN_CHECK(cudnnDestroy(dnn));
  EMU_CHECK(cudaStreamDestroy(stream));
  return 0;
}
