// cuDNN's v8 RNN API as PyTorch's nn.LSTM calls it: a 2-layer LSTM (input 32, hidden 64, double
// bias, dropout 0.1 between layers) over a padded batch of 4 sequences of lengths 5, 5, 3, 2 —
// weight space and per-matrix pointers, scratch queries, a training forward, the data and weight
// gradients — then a bidirectional LSTM with a projection (hidden 32 projected to 16) in
// inference (5-d state descriptors, no device sequence lengths, as PyTorch calls it). The
// weight-space layout is checked through cudnnGetRNNWeightParams: every matrix
// and bias has the shape PyTorch expects, and together they tile the weight space exactly.
// Valid CUDA/cuDNN: the same binary runs on a real GPU.
#include <cudnn.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <utility>
#include <vector>

#include "dnn_check.h"

namespace {

// Elements of every matrix and bias of every pseudo-layer, checking shapes and that the pieces
// do not overlap and stay inside the weight space. Returns the elements found.
long long walk_weights(cudnnHandle_t dnn, cudnnRNNDescriptor_t rnn, int pseudo_layers, int dirs,
                       size_t weight_bytes, void* weights, int input, int hidden, int projection) {
  cudnnTensorDescriptor_t m_desc, b_desc;
  DNN_CHECK(cudnnCreateTensorDescriptor(&m_desc));
  DNN_CHECK(cudnnCreateTensorDescriptor(&b_desc));
  std::vector<std::pair<char*, char*>> pieces;
  long long elements = 0;
  const int gates = 4;  // LSTM: linLayerID 0-3 input, 4-7 recurrent, 8 the projection
  for (int layer = 0; layer < pseudo_layers; ++layer) {
    const int layer_input = layer < dirs ? input : projection * dirs;
    for (int lin = 0; lin <= 2 * gates; ++lin) {
      void *m = nullptr, *b = nullptr;
      DNN_CHECK(cudnnGetRNNWeightParams(dnn, rnn, layer, weight_bytes, weights, lin, m_desc, &m,
                                        b_desc, &b));
      const bool is_projection = lin == 2 * gates;
      EMU_REQUIRE((m != nullptr) == (!is_projection || projection < hidden));
      EMU_REQUIRE((b != nullptr) == !is_projection);  // double bias: every gate has both
      // Rows and columns each piece must have.
      const int rows = is_projection ? projection : hidden;
      const int cols = is_projection ? hidden : lin < gates ? layer_input : projection;
      for (auto [ptr, desc] : {std::make_pair(m, m_desc), std::make_pair(b, b_desc)}) {
        if (ptr == nullptr) continue;
        const bool is_bias = desc == b_desc;
        cudnnDataType_t dtype;
        int dims = 0, dim[3], stride[3];
        DNN_CHECK(cudnnGetTensorNdDescriptor(desc, 3, &dtype, &dims, dim, stride));
        EMU_REQUIRE(dims == 3 && dim[0] == 1 && dim[1] == rows && dim[2] == (is_bias ? 1 : cols));
        const long long n = 1LL * dim[1] * dim[2];
        char* start = static_cast<char*>(ptr);
        char* end = start + n * sizeof(float);
        EMU_REQUIRE(start >= static_cast<char*>(weights) &&
                    end <= static_cast<char*>(weights) + weight_bytes);
        pieces.push_back({start, end});
        elements += n;
      }
    }
  }
  std::sort(pieces.begin(), pieces.end());
  for (size_t i = 1; i < pieces.size(); ++i) EMU_REQUIRE(pieces[i - 1].second <= pieces[i].first);
  DNN_CHECK(cudnnDestroyTensorDescriptor(m_desc));
  DNN_CHECK(cudnnDestroyTensorDescriptor(b_desc));
  return elements;
}

}  // namespace

int main() {
  cudnnHandle_t dnn;
  DNN_CHECK(cudnnCreate(&dnn));
  cudaStream_t stream;
  EMU_CHECK(cudaStreamCreate(&stream));
  DNN_CHECK(cudnnSetStream(dnn, stream));

  // --- A 2-layer LSTM, trained: nn.LSTM(32, 64, num_layers=2, dropout=0.1).
  const int input = 32, hidden = 64, layers = 2, batch = 4, max_length = 5;
  const int lengths[batch] = {5, 5, 3, 2};
  cudnnDropoutDescriptor_t drop;
  DNN_CHECK(cudnnCreateDropoutDescriptor(&drop));
  size_t states_bytes = 0;
  DNN_CHECK(cudnnDropoutGetStatesSize(dnn, &states_bytes));
  void* states;
  EMU_CHECK(cudaMalloc(&states, states_bytes));
  DNN_CHECK(cudnnSetDropoutDescriptor(drop, dnn, 0.1f, states, states_bytes, 7ULL));
  cudnnRNNDescriptor_t rnn;
  DNN_CHECK(cudnnCreateRNNDescriptor(&rnn));
  DNN_CHECK(cudnnSetRNNDescriptor_v8(
      rnn, CUDNN_RNN_ALGO_STANDARD, CUDNN_LSTM, CUDNN_RNN_DOUBLE_BIAS, CUDNN_UNIDIRECTIONAL,
      CUDNN_LINEAR_INPUT, CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH, input, hidden,
      hidden, layers, drop, CUDNN_RNN_PADDED_IO_ENABLED));
  cudnnRNNMode_t cell;
  int32_t got_hidden = 0, got_layers = 0;
  cudnnDropoutDescriptor_t got_drop = nullptr;
  DNN_CHECK(cudnnGetRNNDescriptor_v8(rnn, nullptr, &cell, nullptr, nullptr, nullptr, nullptr,
                                     nullptr, nullptr, nullptr, &got_hidden, nullptr, &got_layers,
                                     &got_drop, nullptr));
  EMU_REQUIRE(cell == CUDNN_LSTM && got_hidden == hidden && got_layers == layers &&
              got_drop == drop);
  DNN_CHECK(cudnnRNNSetClip_v9(rnn, CUDNN_RNN_CLIP_MINMAX, -5.0, 5.0));
  cudnnRNNClipMode_t clip;
  double left = 0, right = 0;
  DNN_CHECK(cudnnRNNGetClip_v9(rnn, &clip, &left, &right));
  EMU_REQUIRE(clip == CUDNN_RNN_CLIP_MINMAX && left == -5.0 && right == 5.0);

  cudnnRNNDataDescriptor_t x_desc, y_desc;
  DNN_CHECK(cudnnCreateRNNDataDescriptor(&x_desc));
  DNN_CHECK(cudnnCreateRNNDataDescriptor(&y_desc));
  float fill = 0.0f;
  DNN_CHECK(cudnnSetRNNDataDescriptor(x_desc, CUDNN_DATA_FLOAT,
                                      CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED, max_length, batch,
                                      input, lengths, &fill));
  DNN_CHECK(cudnnSetRNNDataDescriptor(y_desc, CUDNN_DATA_FLOAT,
                                      CUDNN_RNN_DATA_LAYOUT_SEQ_MAJOR_UNPACKED, max_length, batch,
                                      hidden, lengths, &fill));
  int got_lengths[batch] = {};
  int got_batch = 0, got_vector = 0;
  DNN_CHECK(cudnnGetRNNDataDescriptor(x_desc, nullptr, nullptr, nullptr, &got_batch, &got_vector,
                                      batch, got_lengths, nullptr));
  EMU_REQUIRE(got_batch == batch && got_vector == input && got_lengths[2] == 3);

  // Hidden and cell state: [layers, batch, hidden].
  cudnnTensorDescriptor_t h_desc, c_desc;
  DNN_CHECK(cudnnCreateTensorDescriptor(&h_desc));
  DNN_CHECK(cudnnCreateTensorDescriptor(&c_desc));
  const int state_dim[3] = {layers, batch, hidden}, state_stride[3] = {batch * hidden, hidden, 1};
  DNN_CHECK(cudnnSetTensorNdDescriptor(h_desc, CUDNN_DATA_FLOAT, 3, state_dim, state_stride));
  DNN_CHECK(cudnnSetTensorNdDescriptor(c_desc, CUDNN_DATA_FLOAT, 3, state_dim, state_stride));

  size_t weight_bytes = 0, work_bytes = 0, reserve_bytes = 0;
  DNN_CHECK(cudnnGetRNNWeightSpaceSize(dnn, rnn, &weight_bytes));
  // PyTorch's count: per layer 4H x in + 4H x H + two 4H biases.
  const long long parameters =
      4LL * hidden * input + 4LL * hidden * hidden + 8LL * hidden +  // layer 0
      4LL * hidden * hidden + 4LL * hidden * hidden + 8LL * hidden;  // layer 1
  EMU_REQUIRE(weight_bytes == sizeof(float) * parameters);
  DNN_CHECK(cudnnGetRNNTempSpaceSizes(dnn, rnn, CUDNN_FWD_MODE_TRAINING, x_desc, &work_bytes,
                                      &reserve_bytes));
  EMU_REQUIRE(work_bytes > 0 && reserve_bytes > 0);
  size_t inference_reserve = 1;
  DNN_CHECK(cudnnGetRNNTempSpaceSizes(dnn, rnn, CUDNN_FWD_MODE_INFERENCE, x_desc, nullptr,
                                      &inference_reserve));
  EMU_REQUIRE(inference_reserve == 0);

  const size_t x_bytes = sizeof(float) * max_length * batch * input;
  const size_t y_bytes = sizeof(float) * max_length * batch * hidden;
  const size_t state_bytes = sizeof(float) * layers * batch * hidden;
  float *x, *dx, *y, *dy, *hx, *cx, *hy, *cy, *dhy, *dcy, *dhx, *dcx;
  void *weights, *dweights, *work, *reserve;
  int32_t* dev_lengths;
  EMU_CHECK(cudaMalloc(&x, x_bytes));
  EMU_CHECK(cudaMalloc(&dx, x_bytes));
  EMU_CHECK(cudaMalloc(&y, y_bytes));
  EMU_CHECK(cudaMalloc(&dy, y_bytes));
  for (float** p : {&hx, &cx, &hy, &cy, &dhy, &dcy, &dhx, &dcx}) {
    EMU_CHECK(cudaMalloc(p, state_bytes));
  }
  EMU_CHECK(cudaMalloc(&weights, weight_bytes));
  EMU_CHECK(cudaMalloc(&dweights, weight_bytes));
  EMU_CHECK(cudaMalloc(&work, work_bytes));
  EMU_CHECK(cudaMalloc(&reserve, reserve_bytes));
  EMU_CHECK(cudaMalloc(&dev_lengths, sizeof(lengths)));
  EMU_CHECK(cudaMemcpy(dev_lengths, lengths, sizeof(lengths), cudaMemcpyHostToDevice));
  const long long walked =
      walk_weights(dnn, rnn, layers, 1, weight_bytes, weights, input, hidden, hidden);
  EMU_REQUIRE(walked == parameters);

  DNN_CHECK(cudnnRNNForward(dnn, rnn, CUDNN_FWD_MODE_TRAINING, dev_lengths, x_desc, x, y_desc, y,
                            h_desc, hx, hy, c_desc, cx, cy, weight_bytes, weights, work_bytes, work,
                            reserve_bytes, reserve));
  DNN_CHECK(cudnnRNNBackwardData_v8(dnn, rnn, dev_lengths, y_desc, y, dy, x_desc, dx, h_desc, hx,
                                    dhy, dhx, c_desc, cx, dcy, dcx, weight_bytes, weights,
                                    work_bytes, work, reserve_bytes, reserve));
  EMU_CHECK(cudaMemsetAsync(dweights, 0, weight_bytes, stream));
  DNN_CHECK(cudnnRNNBackwardWeights_v8(dnn, rnn, CUDNN_WGRAD_MODE_ADD, dev_lengths, x_desc, x,
                                       h_desc, hx, y_desc, y, weight_bytes, dweights, work_bytes,
                                       work, reserve_bytes, reserve));

  // --- A bidirectional LSTM projecting hidden 32 to 16, inference: 2 sequences of 3 steps.
  cudnnRNNDescriptor_t projected;
  DNN_CHECK(cudnnCreateRNNDescriptor(&projected));
  DNN_CHECK(cudnnSetRNNDescriptor_v8(projected, CUDNN_RNN_ALGO_STANDARD, CUDNN_LSTM,
                                     CUDNN_RNN_DOUBLE_BIAS, CUDNN_BIDIRECTIONAL, CUDNN_LINEAR_INPUT,
                                     CUDNN_DATA_FLOAT, CUDNN_DATA_FLOAT, CUDNN_DEFAULT_MATH, 16, 32,
                                     16, 1, nullptr, 0));
  const int short_lengths[2] = {3, 3};
  cudnnRNNDataDescriptor_t px_desc, py_desc;
  DNN_CHECK(cudnnCreateRNNDataDescriptor(&px_desc));
  DNN_CHECK(cudnnCreateRNNDataDescriptor(&py_desc));
  DNN_CHECK(cudnnSetRNNDataDescriptor(px_desc, CUDNN_DATA_FLOAT,
                                      CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED, 3, 2, 16,
                                      short_lengths, nullptr));
  DNN_CHECK(cudnnSetRNNDataDescriptor(py_desc, CUDNN_DATA_FLOAT,
                                      CUDNN_RNN_DATA_LAYOUT_BATCH_MAJOR_UNPACKED, 3, 2, 32,
                                      short_lengths, nullptr));
  cudnnTensorDescriptor_t ph_desc, pc_desc;
  DNN_CHECK(cudnnCreateTensorDescriptor(&ph_desc));
  DNN_CHECK(cudnnCreateTensorDescriptor(&pc_desc));
  // 5-d state descriptors with trailing 1s, as PyTorch builds them.
  const int ph_dim[5] = {2, 2, 16, 1, 1}, ph_stride[5] = {32, 16, 1, 1, 1};
  const int pc_dim[5] = {2, 2, 32, 1, 1}, pc_stride[5] = {64, 32, 1, 1, 1};
  DNN_CHECK(cudnnSetTensorNdDescriptor(ph_desc, CUDNN_DATA_FLOAT, 5, ph_dim, ph_stride));
  DNN_CHECK(cudnnSetTensorNdDescriptor(pc_desc, CUDNN_DATA_FLOAT, 5, pc_dim, pc_stride));
  size_t pweight_bytes = 0, pwork_bytes = 0, preserve_bytes = 0;
  DNN_CHECK(cudnnGetRNNWeightSpaceSize(dnn, projected, &pweight_bytes));
  // Per direction: 4·32×16 input, 4·32×16 recurrent (on the projected state), 16×32
  // projection, 2·4·32 biases.
  EMU_REQUIRE(pweight_bytes == sizeof(float) * 2 * (4 * 32 * 16 + 4 * 32 * 16 + 16 * 32 + 8 * 32));
  DNN_CHECK(cudnnGetRNNTempSpaceSizes(dnn, projected, CUDNN_FWD_MODE_INFERENCE, px_desc,
                                      &pwork_bytes, &preserve_bytes));
  void *pweights, *pwork, *px, *py;
  EMU_CHECK(cudaMalloc(&pweights, pweight_bytes));
  EMU_CHECK(cudaMalloc(&pwork, pwork_bytes));
  EMU_CHECK(cudaMalloc(&px, sizeof(float) * 3 * 2 * 16));
  EMU_CHECK(cudaMalloc(&py, sizeof(float) * 3 * 2 * 32));
  const long long pwalked = walk_weights(dnn, projected, 2, 2, pweight_bytes, pweights, 16, 32, 16);
  EMU_REQUIRE(pwalked * static_cast<long long>(sizeof(float)) ==
              static_cast<long long>(pweight_bytes));
  // No device copy of the lengths (optional since cuDNN 8.9.1; PyTorch passes NULL).
  DNN_CHECK(cudnnRNNForward(dnn, projected, CUDNN_FWD_MODE_INFERENCE, nullptr, px_desc, px, py_desc,
                            py, ph_desc, nullptr, nullptr, pc_desc, nullptr, nullptr, pweight_bytes,
                            pweights, pwork_bytes, pwork, 0, nullptr));
  EMU_CHECK(cudaStreamSynchronize(stream));

  std::printf(
      "cudnn_rnn: LSTM weight space %zu bytes (%lld parameters walked), work %zu bytes, reserve "
      "%zu bytes; projected bidirectional LSTM weight space %zu bytes\n",
      weight_bytes, walked, work_bytes, reserve_bytes, pweight_bytes);

  for (void* p : {(void*)x,  (void*)dx, (void*)y,   (void*)dy,  (void*)hx,          (void*)cx,
                  (void*)hy, (void*)cy, (void*)dhy, (void*)dcy, (void*)dhx,         (void*)dcx,
                  weights,   dweights,  work,       reserve,    (void*)dev_lengths, states,
                  pweights,  pwork,     px,         py}) {
    EMU_CHECK(cudaFree(p));
  }
  for (cudnnTensorDescriptor_t t : {h_desc, c_desc, ph_desc, pc_desc}) {
    DNN_CHECK(cudnnDestroyTensorDescriptor(t));
  }
  for (cudnnRNNDataDescriptor_t d : {x_desc, y_desc, px_desc, py_desc}) {
    DNN_CHECK(cudnnDestroyRNNDataDescriptor(d));
  }
  DNN_CHECK(cudnnDestroyRNNDescriptor(rnn));
  DNN_CHECK(cudnnDestroyRNNDescriptor(projected));
  DNN_CHECK(cudnnDestroyDropoutDescriptor(drop));
  DNN_CHECK(cudnnDestroy(dnn));
  EMU_CHECK(cudaStreamDestroy(stream));
  return 0;
}
