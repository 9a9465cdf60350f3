// The cuDNN legacy API around the convolutions, as mnistCUDNN-style and classic CNN training code
// calls it: descriptor getters (strides of NCHW, NHWC and padded tensors, filters, convolutions,
// pooling, activations), cudnnSetTensor/ScaleTensor/TransformTensor (NCHW to NHWC), OpTensor,
// ReduceTensor with its workspace query, a fused convolution + bias + ReLU, LRN forward and
// backward, batch normalization (derived descriptor, training, inference, backward), dropout
// (states, reserve space, forward, backward) and the bias gradient. Every query's answer is
// checked against what the cuDNN documentation defines.
// Valid CUDA/cuDNN: the same binary runs on a real GPU.
#include <cudnn.h>

#include <cstdio>

#include "dnn_check.h"

int main() {
  cudnnHandle_t dnn;
  DNN_CHECK(cudnnCreate(&dnn));
  cudaStream_t stream;
  EMU_CHECK(cudaStreamCreate(&stream));
  DNN_CHECK(cudnnSetStream(dnn, stream));

  // x [4, 16, 8, 8] float, NCHW; the same shape NHWC; and NCHW padded to 2048 elements per image.
  const int n = 4, c = 16, h = 8, w = 8;
  cudnnTensorDescriptor_t x_desc, xh_desc, padded_desc, y_desc;
  DNN_CHECK(cudnnCreateTensorDescriptor(&x_desc));
  DNN_CHECK(cudnnCreateTensorDescriptor(&xh_desc));
  DNN_CHECK(cudnnCreateTensorDescriptor(&padded_desc));
  DNN_CHECK(cudnnCreateTensorDescriptor(&y_desc));
  DNN_CHECK(cudnnSetTensor4dDescriptor(x_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w));
  DNN_CHECK(cudnnSetTensor4dDescriptor(xh_desc, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, n, c, h, w));
  DNN_CHECK(
      cudnnSetTensor4dDescriptorEx(padded_desc, CUDNN_DATA_FLOAT, n, c, h, w, 2048, 64, 8, 1));
  DNN_CHECK(cudnnSetTensor4dDescriptor(y_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w));
  cudnnDataType_t dtype;
  int gn, gc, gh, gw, sn, sc, sh, sw;
  DNN_CHECK(cudnnGetTensor4dDescriptor(x_desc, &dtype, &gn, &gc, &gh, &gw, &sn, &sc, &sh, &sw));
  EMU_REQUIRE(dtype == CUDNN_DATA_FLOAT && gn == n && gc == c && gh == h && gw == w);
  EMU_REQUIRE(sn == c * h * w && sc == h * w && sh == w && sw == 1);
  DNN_CHECK(cudnnGetTensor4dDescriptor(xh_desc, &dtype, &gn, &gc, &gh, &gw, &sn, &sc, &sh, &sw));
  EMU_REQUIRE(sn == c * h * w && sc == 1 && sh == w * c && sw == c);
  int dims = 0, dim[4], stride[4];
  DNN_CHECK(cudnnGetTensorNdDescriptor(padded_desc, 4, &dtype, &dims, dim, stride));
  EMU_REQUIRE(dims == 4 && dim[1] == c && stride[0] == 2048 && stride[1] == 64);
  size_t x_bytes = 0, padded_bytes = 0;
  DNN_CHECK(cudnnGetTensorSizeInBytes(x_desc, &x_bytes));
  DNN_CHECK(cudnnGetTensorSizeInBytes(padded_desc, &padded_bytes));
  EMU_REQUIRE(x_bytes == sizeof(float) * n * c * h * w);
  EMU_REQUIRE(padded_bytes == sizeof(float) * (3 * 2048 + 15 * 64 + 7 * 8 + 7 + 1));

  // A 3x3 filter [16, 16, 3, 3], pad 1, and its convolution's getters.
  cudnnFilterDescriptor_t w_desc;
  cudnnConvolutionDescriptor_t conv;
  DNN_CHECK(cudnnCreateFilterDescriptor(&w_desc));
  DNN_CHECK(cudnnCreateConvolutionDescriptor(&conv));
  DNN_CHECK(cudnnSetFilter4dDescriptor(w_desc, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, c, c, 3, 3));
  DNN_CHECK(cudnnSetConvolution2dDescriptor(conv, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                            CUDNN_DATA_FLOAT));
  cudnnTensorFormat_t format;
  int k, fc, fh, fw;
  DNN_CHECK(cudnnGetFilter4dDescriptor(w_desc, &dtype, &format, &k, &fc, &fh, &fw));
  EMU_REQUIRE(format == CUDNN_TENSOR_NCHW && k == c && fc == c && fh == 3 && fw == 3);
  size_t w_bytes = 0;
  DNN_CHECK(cudnnGetFilterSizeInBytes(w_desc, &w_bytes));
  EMU_REQUIRE(w_bytes == sizeof(float) * c * c * 9);
  int pad_h, pad_w, u, v, dil_h, dil_w, groups = 0;
  cudnnConvolutionMode_t mode;
  DNN_CHECK(
      cudnnGetConvolution2dDescriptor(conv, &pad_h, &pad_w, &u, &v, &dil_h, &dil_w, &mode, &dtype));
  EMU_REQUIRE(pad_h == 1 && pad_w == 1 && u == 1 && dil_w == 1 && mode == CUDNN_CROSS_CORRELATION);
  DNN_CHECK(cudnnGetConvolutionGroupCount(conv, &groups));
  EMU_REQUIRE(groups == 1);
  DNN_CHECK(cudnnSetConvolutionReorderType(conv, CUDNN_NO_REORDER));
  cudnnReorderType_t reorder;
  DNN_CHECK(cudnnGetConvolutionReorderType(conv, &reorder));
  EMU_REQUIRE(reorder == CUDNN_NO_REORDER);

  cudnnPoolingDescriptor_t pool;
  DNN_CHECK(cudnnCreatePoolingDescriptor(&pool));
  DNN_CHECK(cudnnSetPooling2dDescriptor(pool, CUDNN_POOLING_MAX, CUDNN_NOT_PROPAGATE_NAN, 2, 2, 0,
                                        0, 2, 2));
  cudnnPoolingMode_t pool_mode;
  cudnnNanPropagation_t nan;
  int win_h, win_w, ph, pw, stride_h, stride_w;
  DNN_CHECK(cudnnGetPooling2dDescriptor(pool, &pool_mode, &nan, &win_h, &win_w, &ph, &pw, &stride_h,
                                        &stride_w));
  EMU_REQUIRE(pool_mode == CUDNN_POOLING_MAX && win_h == 2 && stride_w == 2 && ph == 0);

  cudnnActivationDescriptor_t relu;
  DNN_CHECK(cudnnCreateActivationDescriptor(&relu));
  DNN_CHECK(cudnnSetActivationDescriptor(relu, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0));
  cudnnActivationMode_t act_mode;
  double coef = -1;
  DNN_CHECK(cudnnGetActivationDescriptor(relu, &act_mode, &nan, &coef));
  EMU_REQUIRE(act_mode == CUDNN_ACTIVATION_RELU && nan == CUDNN_PROPAGATE_NAN && coef == 0.0);
  DNN_CHECK(cudnnSetActivationDescriptorSwishBeta(relu, 1.5));
  double beta_swish = 0;
  DNN_CHECK(cudnnGetActivationDescriptorSwishBeta(relu, &beta_swish));
  EMU_REQUIRE(beta_swish == 1.5);

  const size_t bytes = x_bytes;
  float *x, *xh, *y, *z, *dy, *dx, *wt, *sum, *bias, *dbias;
  EMU_CHECK(cudaMalloc(&x, bytes));
  EMU_CHECK(cudaMalloc(&xh, bytes));
  EMU_CHECK(cudaMalloc(&y, bytes));
  EMU_CHECK(cudaMalloc(&z, bytes));
  EMU_CHECK(cudaMalloc(&dy, bytes));
  EMU_CHECK(cudaMalloc(&dx, bytes));
  EMU_CHECK(cudaMalloc(&wt, w_bytes));
  EMU_CHECK(cudaMalloc(&sum, sizeof(float)));
  EMU_CHECK(cudaMalloc(&bias, sizeof(float) * c));
  EMU_CHECK(cudaMalloc(&dbias, sizeof(float) * c));
  const float one = 1.0f, zero = 0.0f, half = 0.5f;

  // Tensor transforms: fill, scale, NCHW -> NHWC.
  DNN_CHECK(cudnnSetTensor(dnn, x_desc, x, &one));
  DNN_CHECK(cudnnScaleTensor(dnn, x_desc, x, &half));
  DNN_CHECK(cudnnTransformTensor(dnn, &one, x_desc, x, &zero, xh_desc, xh));

  // z = x + x, then the sum of every element of z into [1, 1, 1, 1].
  cudnnOpTensorDescriptor_t add;
  DNN_CHECK(cudnnCreateOpTensorDescriptor(&add));
  DNN_CHECK(cudnnSetOpTensorDescriptor(add, CUDNN_OP_TENSOR_ADD, CUDNN_DATA_FLOAT,
                                       CUDNN_NOT_PROPAGATE_NAN));
  cudnnOpTensorOp_t op;
  DNN_CHECK(cudnnGetOpTensorDescriptor(add, &op, &dtype, &nan));
  EMU_REQUIRE(op == CUDNN_OP_TENSOR_ADD);
  DNN_CHECK(cudnnOpTensor(dnn, add, &one, x_desc, x, &one, x_desc, x, &zero, y_desc, z));
  cudnnTensorDescriptor_t scalar_desc;
  DNN_CHECK(cudnnCreateTensorDescriptor(&scalar_desc));
  DNN_CHECK(
      cudnnSetTensor4dDescriptor(scalar_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 1, 1, 1));
  cudnnReduceTensorDescriptor_t reduce;
  DNN_CHECK(cudnnCreateReduceTensorDescriptor(&reduce));
  DNN_CHECK(cudnnSetReduceTensorDescriptor(reduce, CUDNN_REDUCE_TENSOR_ADD, CUDNN_DATA_FLOAT,
                                           CUDNN_NOT_PROPAGATE_NAN, CUDNN_REDUCE_TENSOR_NO_INDICES,
                                           CUDNN_32BIT_INDICES));
  size_t indices_bytes = 1, reduce_workspace = 0;
  DNN_CHECK(cudnnGetReductionIndicesSize(dnn, reduce, y_desc, scalar_desc, &indices_bytes));
  DNN_CHECK(cudnnGetReductionWorkspaceSize(dnn, reduce, y_desc, scalar_desc, &reduce_workspace));
  EMU_REQUIRE(indices_bytes == 0);  // an ADD reduction has no indices
  void* reduce_scratch = nullptr;
  if (reduce_workspace > 0) EMU_CHECK(cudaMalloc(&reduce_scratch, reduce_workspace));
  DNN_CHECK(cudnnReduceTensor(dnn, reduce, nullptr, 0, reduce_scratch, reduce_workspace, &one,
                              y_desc, z, &zero, scalar_desc, sum));

  // y = ReLU(conv(x, w) + z + bias): the fused forward.
  cudnnTensorDescriptor_t bias_desc;
  DNN_CHECK(cudnnCreateTensorDescriptor(&bias_desc));
  DNN_CHECK(cudnnSetTensor4dDescriptor(bias_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, c, 1, 1));
  int returned = 0;
  cudnnConvolutionFwdAlgoPerf_t perf;
  DNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(dnn, x_desc, x, w_desc, wt, conv, y_desc, y, 1,
                                                   &returned, &perf, nullptr, 0));
  EMU_REQUIRE(returned == 1 && perf.status == CUDNN_STATUS_SUCCESS);
  size_t conv_workspace = 0;
  DNN_CHECK(cudnnGetConvolutionForwardWorkspaceSize(dnn, x_desc, w_desc, conv, y_desc, perf.algo,
                                                    &conv_workspace));
  void* conv_scratch = nullptr;
  if (conv_workspace > 0) EMU_CHECK(cudaMalloc(&conv_scratch, conv_workspace));
  DNN_CHECK(cudnnSetActivationDescriptor(relu, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0));
  DNN_CHECK(cudnnConvolutionBiasActivationForward(dnn, &one, x_desc, x, w_desc, wt, conv, perf.algo,
                                                  conv_scratch, conv_workspace, &one, y_desc, z,
                                                  bias_desc, bias, relu, y_desc, y));

  // Local response normalization across channels (AlexNet's n 5, alpha 1e-4, beta 0.75, k 2).
  cudnnLRNDescriptor_t lrn;
  DNN_CHECK(cudnnCreateLRNDescriptor(&lrn));
  DNN_CHECK(cudnnSetLRNDescriptor(lrn, 5, 1e-4, 0.75, 2.0));
  unsigned lrn_n = 0;
  double lrn_alpha, lrn_beta, lrn_k;
  DNN_CHECK(cudnnGetLRNDescriptor(lrn, &lrn_n, &lrn_alpha, &lrn_beta, &lrn_k));
  EMU_REQUIRE(lrn_n == 5 && lrn_beta == 0.75 && lrn_k == 2.0);
  DNN_CHECK(cudnnLRNCrossChannelForward(dnn, lrn, CUDNN_LRN_CROSS_CHANNEL_DIM1, &one, y_desc, y,
                                        &zero, y_desc, z));
  DNN_CHECK(cudnnLRNCrossChannelBackward(dnn, lrn, CUDNN_LRN_CROSS_CHANNEL_DIM1, &one, y_desc, z,
                                         y_desc, dy, y_desc, y, &zero, y_desc, dx));

  // Spatial batch normalization: per-channel statistics [1, 16, 1, 1].
  cudnnTensorDescriptor_t bn_desc;
  DNN_CHECK(cudnnCreateTensorDescriptor(&bn_desc));
  DNN_CHECK(cudnnDeriveBNTensorDescriptor(bn_desc, x_desc, CUDNN_BATCHNORM_SPATIAL));
  DNN_CHECK(cudnnGetTensor4dDescriptor(bn_desc, &dtype, &gn, &gc, &gh, &gw, &sn, &sc, &sh, &sw));
  EMU_REQUIRE(gn == 1 && gc == c && gh == 1 && gw == 1 && dtype == CUDNN_DATA_FLOAT);
  float *scale, *shift, *mean, *var, *saved_mean, *saved_inv_var, *dscale, *dshift;
  for (float** p : {&scale, &shift, &mean, &var, &saved_mean, &saved_inv_var, &dscale, &dshift}) {
    EMU_CHECK(cudaMalloc(p, sizeof(float) * c));
  }
  DNN_CHECK(cudnnBatchNormalizationForwardTraining(
      dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, x_desc, y, y_desc, z, bn_desc, scale, shift, 0.1,
      mean, var, CUDNN_BN_MIN_EPSILON, saved_mean, saved_inv_var));
  DNN_CHECK(cudnnBatchNormalizationForwardInference(dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero,
                                                    x_desc, y, y_desc, z, bn_desc, scale, shift,
                                                    mean, var, CUDNN_BN_MIN_EPSILON));
  DNN_CHECK(cudnnBatchNormalizationBackward(
      dnn, CUDNN_BATCHNORM_SPATIAL, &one, &zero, &one, &zero, x_desc, y, y_desc, dy, x_desc, dx,
      bn_desc, scale, dscale, dshift, CUDNN_BN_MIN_EPSILON, saved_mean, saved_inv_var));

  // Dropout with p = 0.1: generator states, a one-byte-per-element mask, forward and backward.
  cudnnDropoutDescriptor_t drop;
  DNN_CHECK(cudnnCreateDropoutDescriptor(&drop));
  size_t states_bytes = 0, reserve_bytes = 0;
  DNN_CHECK(cudnnDropoutGetStatesSize(dnn, &states_bytes));
  DNN_CHECK(cudnnDropoutGetReserveSpaceSize(x_desc, &reserve_bytes));
  EMU_REQUIRE(states_bytes > 0 && reserve_bytes >= static_cast<size_t>(n) * c * h * w);
  void *states, *reserve;
  EMU_CHECK(cudaMalloc(&states, states_bytes));
  EMU_CHECK(cudaMalloc(&reserve, reserve_bytes));
  DNN_CHECK(cudnnSetDropoutDescriptor(drop, dnn, 0.1f, states, states_bytes, 1234ULL));
  float p = 0;
  void* got_states = nullptr;
  unsigned long long seed = 0;
  DNN_CHECK(cudnnGetDropoutDescriptor(drop, dnn, &p, &got_states, &seed));
  EMU_REQUIRE(p == 0.1f && got_states == states && seed == 1234ULL);
  DNN_CHECK(cudnnDropoutForward(dnn, drop, x_desc, z, y_desc, y, reserve, reserve_bytes));
  DNN_CHECK(cudnnDropoutBackward(dnn, drop, y_desc, dy, x_desc, dx, reserve, reserve_bytes));

  // The bias gradient: dy summed over n, h and w.
  DNN_CHECK(cudnnConvolutionBackwardBias(dnn, &one, y_desc, dy, &zero, bias_desc, dbias));
  EMU_CHECK(cudaStreamSynchronize(stream));

  std::printf(
      "cudnn_legacy_ops: tensor %zu bytes, padded %zu bytes, reduction workspace %zu bytes, "
      "dropout states %zu bytes and reserve %zu bytes, getters checked\n",
      x_bytes, padded_bytes, reduce_workspace, states_bytes, reserve_bytes);

  for (void* q : {(void*)x,
                  (void*)xh,
                  (void*)y,
                  (void*)z,
                  (void*)dy,
                  (void*)dx,
                  (void*)wt,
                  (void*)sum,
                  (void*)bias,
                  (void*)dbias,
                  (void*)scale,
                  (void*)shift,
                  (void*)mean,
                  (void*)var,
                  (void*)saved_mean,
                  (void*)saved_inv_var,
                  (void*)dscale,
                  (void*)dshift,
                  states,
                  reserve,
                  reduce_scratch,
                  conv_scratch}) {
    if (q != nullptr) EMU_CHECK(cudaFree(q));
  }
  DNN_CHECK(cudnnDestroyDropoutDescriptor(drop));
  DNN_CHECK(cudnnDestroyLRNDescriptor(lrn));
  DNN_CHECK(cudnnDestroyReduceTensorDescriptor(reduce));
  DNN_CHECK(cudnnDestroyOpTensorDescriptor(add));
  DNN_CHECK(cudnnDestroyActivationDescriptor(relu));
  DNN_CHECK(cudnnDestroyPoolingDescriptor(pool));
  DNN_CHECK(cudnnDestroyConvolutionDescriptor(conv));
  DNN_CHECK(cudnnDestroyFilterDescriptor(w_desc));
  for (cudnnTensorDescriptor_t t :
       {x_desc, xh_desc, padded_desc, y_desc, scalar_desc, bias_desc, bn_desc}) {
    DNN_CHECK(cudnnDestroyTensorDescriptor(t));
  }
  DNN_CHECK(cudnnDestroy(dnn));
  EMU_CHECK(cudaStreamDestroy(stream));
  return 0;
}
