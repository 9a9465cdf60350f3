// The rest of cuDNN's legacy helpers: error reporting (a deliberately invalid descriptor, seen by
// cudnnGetLastErrorString and a cudnnSetCallback receiver), version checks, channels-last Nd
// descriptors, tensor transforms with padding and folding, filter transforms and reordering,
// im2col, the normalization API with a fused add + ReLU, divisive normalization and a spatial
// transformer (grid generator and bilinear sampler, forward and backward) and the CTC loss (host
// and device label forms). Every size query is
// checked against what the cuDNN documentation defines.
// Valid CUDA/cuDNN: the same binary runs on a real GPU.
#include <cudnn.h>

#include <cstdio>
#include <cstring>

#include "dnn_check.h"

namespace {
int errors_seen = 0;
void on_message(cudnnSeverity_t severity, void*, const cudnnDebug_t*, const char*) {
  if (severity == CUDNN_SEV_ERROR) ++errors_seen;
}
}  // namespace

int main() {
  DNN_CHECK(cudnnOpsVersionCheck());
  DNN_CHECK(cudnnCnnVersionCheck());
  DNN_CHECK(cudnnAdvVersionCheck());
  DNN_CHECK(cudnnGraphVersionCheck());
  cudnnHandle_t dnn;
  DNN_CHECK(cudnnCreate(&dnn));
  cudaStream_t stream;
  EMU_CHECK(cudaStreamCreate(&stream));
  DNN_CHECK(cudnnSetStream(dnn, stream));

  // An invalid extent is refused, reported to the callback and kept as the last error.
  DNN_CHECK(cudnnSetCallback(CUDNN_SEV_ERROR_EN, nullptr, on_message));
  cudnnTensorDescriptor_t x_desc;
  DNN_CHECK(cudnnCreateTensorDescriptor(&x_desc));
  EMU_REQUIRE(cudnnSetTensor4dDescriptor(x_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, -8, 8,
                                         8) == CUDNN_STATUS_BAD_PARAM);
  char message[256] = {};
  cudnnGetLastErrorString(message, sizeof(message));
  EMU_REQUIRE(std::strlen(message) > 0 && errors_seen == 1);
  DNN_CHECK(cudnnSetCallback(0, nullptr, nullptr));

  // x [2, 8, 8, 8]; a channels-last 5-d tensor's strides.
  DNN_CHECK(cudnnSetTensor4dDescriptor(x_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, 8, 8, 8));
  cudnnTensorDescriptor_t volume;
  DNN_CHECK(cudnnCreateTensorDescriptor(&volume));
  const int volume_dim[5] = {2, 4, 3, 5, 6};
  DNN_CHECK(
      cudnnSetTensorNdDescriptorEx(volume, CUDNN_TENSOR_NHWC, CUDNN_DATA_FLOAT, 5, volume_dim));
  cudnnDataType_t dtype;
  int dims = 0, dim[5], stride[5];
  DNN_CHECK(cudnnGetTensorNdDescriptor(volume, 5, &dtype, &dims, dim, stride));
  EMU_REQUIRE(stride[1] == 1 && stride[4] == 4 && stride[3] == 24 && stride[2] == 120 &&
              stride[0] == 360);

  // Pad H and W by 1 on each side into NHWC; then fold H and W by 2 into the channels.
  cudnnTensorTransformDescriptor_t pad, fold;
  DNN_CHECK(cudnnCreateTensorTransformDescriptor(&pad));
  DNN_CHECK(cudnnCreateTensorTransformDescriptor(&fold));
  const int32_t before[4] = {0, 0, 1, 1}, after[4] = {0, 0, 1, 1};
  const uint32_t by_two[2] = {2, 2};
  DNN_CHECK(cudnnSetTensorTransformDescriptor(pad, 4, CUDNN_TENSOR_NHWC, before, after, nullptr,
                                              CUDNN_TRANSFORM_FOLD));
  DNN_CHECK(cudnnSetTensorTransformDescriptor(fold, 4, CUDNN_TENSOR_NCHW, nullptr, nullptr, by_two,
                                              CUDNN_TRANSFORM_FOLD));
  cudnnTensorFormat_t format;
  int32_t got_before[4] = {};
  DNN_CHECK(
      cudnnGetTensorTransformDescriptor(pad, 4, &format, got_before, nullptr, nullptr, nullptr));
  EMU_REQUIRE(format == CUDNN_TENSOR_NHWC && got_before[2] == 1);
  cudnnTensorDescriptor_t padded_desc, folded_desc;
  DNN_CHECK(cudnnCreateTensorDescriptor(&padded_desc));
  DNN_CHECK(cudnnCreateTensorDescriptor(&folded_desc));
  size_t padded_bytes = 0, folded_bytes = 0;
  DNN_CHECK(cudnnInitTransformDest(pad, x_desc, padded_desc, &padded_bytes));
  DNN_CHECK(cudnnInitTransformDest(fold, x_desc, folded_desc, &folded_bytes));
  int n, c, h, w, sn, sc, sh, sw;
  DNN_CHECK(cudnnGetTensor4dDescriptor(padded_desc, &dtype, &n, &c, &h, &w, &sn, &sc, &sh, &sw));
  EMU_REQUIRE(n == 2 && c == 8 && h == 10 && w == 10 && sc == 1 && sw == 8);
  EMU_REQUIRE(padded_bytes == sizeof(float) * 2 * 8 * 10 * 10);
  DNN_CHECK(cudnnGetTensor4dDescriptor(folded_desc, &dtype, &n, &c, &h, &w, &sn, &sc, &sh, &sw));
  EMU_REQUIRE(c == 32 && h == 4 && w == 4 && folded_bytes == sizeof(float) * 2 * 8 * 8 * 8);

  const size_t x_bytes = sizeof(float) * 2 * 8 * 8 * 8;
  float *x, *y, *z, *dx, *dy, *padded, *folded;
  for (float** p : {&x, &y, &z, &dx, &dy}) EMU_CHECK(cudaMalloc(p, x_bytes));
  EMU_CHECK(cudaMalloc(&padded, padded_bytes));
  EMU_CHECK(cudaMalloc(&folded, folded_bytes));
  const float one = 1.0f, zero = 0.0f;
  DNN_CHECK(cudnnTransformTensorEx(dnn, pad, &one, x_desc, x, &zero, padded_desc, padded));
  DNN_CHECK(cudnnTransformTensorEx(dnn, fold, &one, x_desc, x, &zero, folded_desc, folded));

  // A 3x3 filter [16, 8, 3, 3]: NCHW to NHWC, reordered, and im2col of x with pad 1.
  cudnnFilterDescriptor_t w_desc, wh_desc;
  DNN_CHECK(cudnnCreateFilterDescriptor(&w_desc));
  DNN_CHECK(cudnnCreateFilterDescriptor(&wh_desc));
  DNN_CHECK(cudnnSetFilter4dDescriptor(w_desc, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 16, 8, 3, 3));
  DNN_CHECK(cudnnSetFilter4dDescriptor(wh_desc, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NHWC, 16, 8, 3, 3));
  cudnnTensorTransformDescriptor_t to_nhwc;
  DNN_CHECK(cudnnCreateTensorTransformDescriptor(&to_nhwc));
  DNN_CHECK(cudnnSetTensorTransformDescriptor(to_nhwc, 4, CUDNN_TENSOR_NHWC, nullptr, nullptr,
                                              nullptr, CUDNN_TRANSFORM_FOLD));
  const size_t w_bytes = sizeof(float) * 16 * 8 * 9;
  float *wt, *wh, *wr, *bias, *br;
  EMU_CHECK(cudaMalloc(&wt, w_bytes));
  EMU_CHECK(cudaMalloc(&wh, w_bytes));
  EMU_CHECK(cudaMalloc(&wr, w_bytes));
  EMU_CHECK(cudaMalloc(&bias, sizeof(float) * 16));
  EMU_CHECK(cudaMalloc(&br, sizeof(float) * 16));
  DNN_CHECK(cudnnTransformFilter(dnn, to_nhwc, &one, w_desc, wt, &zero, wh_desc, wh));
  DNN_CHECK(cudnnReorderFilterAndBias(dnn, w_desc, CUDNN_DEFAULT_REORDER, wt, wr, 1, bias, br));
  cudnnConvolutionDescriptor_t conv;
  DNN_CHECK(cudnnCreateConvolutionDescriptor(&conv));
  DNN_CHECK(cudnnSetConvolution2dDescriptor(conv, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                            CUDNN_DATA_FLOAT));
  const size_t col_bytes = sizeof(float) * (8 * 9) * (2 * 8 * 8);  // C·R·S × N·P·Q
  float* col;
  EMU_CHECK(cudaMalloc(&col, col_bytes));
  DNN_CHECK(cudnnIm2Col(dnn, x_desc, x, w_desc, conv, col));

  // Normalization per channel fused with an add and a ReLU: y = relu(norm(x) + z).
  cudnnTensorDescriptor_t scale_desc, stats_desc;
  DNN_CHECK(cudnnCreateTensorDescriptor(&scale_desc));
  DNN_CHECK(cudnnCreateTensorDescriptor(&stats_desc));
  DNN_CHECK(
      cudnnDeriveNormTensorDescriptor(scale_desc, stats_desc, x_desc, CUDNN_NORM_PER_CHANNEL, 1));
  DNN_CHECK(cudnnGetTensor4dDescriptor(stats_desc, &dtype, &n, &c, &h, &w, &sn, &sc, &sh, &sw));
  EMU_REQUIRE(n == 1 && c == 8 && h == 1 && w == 1);
  cudnnActivationDescriptor_t relu;
  DNN_CHECK(cudnnCreateActivationDescriptor(&relu));
  DNN_CHECK(cudnnSetActivationDescriptor(relu, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0));
  size_t work_bytes = 1, reserve_bytes = 0;
  DNN_CHECK(cudnnGetNormalizationForwardTrainingWorkspaceSize(
      dnn, CUDNN_NORM_PER_CHANNEL, CUDNN_NORM_OPS_NORM_ADD_ACTIVATION, CUDNN_NORM_ALGO_STANDARD,
      x_desc, x_desc, x_desc, scale_desc, relu, stats_desc, &work_bytes, 1));
  DNN_CHECK(cudnnGetNormalizationTrainingReserveSpaceSize(
      dnn, CUDNN_NORM_PER_CHANNEL, CUDNN_NORM_OPS_NORM_ADD_ACTIVATION, CUDNN_NORM_ALGO_STANDARD,
      relu, x_desc, &reserve_bytes, 1));
  EMU_REQUIRE(reserve_bytes == 2 * 8 * 8 * 8);  // one mask byte per element
  float *scale, *shift, *mean, *var, *saved_mean, *saved_inv, *dscale, *dshift;
  for (float** p : {&scale, &shift, &mean, &var, &saved_mean, &saved_inv, &dscale, &dshift}) {
    EMU_CHECK(cudaMalloc(p, sizeof(float) * 8));
  }
  void* reserve;
  EMU_CHECK(cudaMalloc(&reserve, reserve_bytes));
  DNN_CHECK(cudnnNormalizationForwardTraining(
      dnn, CUDNN_NORM_PER_CHANNEL, CUDNN_NORM_OPS_NORM_ADD_ACTIVATION, CUDNN_NORM_ALGO_STANDARD,
      &one, &zero, x_desc, x, scale_desc, scale, shift, 0.1, stats_desc, mean, var, 1e-5,
      saved_mean, saved_inv, relu, x_desc, z, x_desc, y, nullptr, 0, reserve, reserve_bytes, 1));
  DNN_CHECK(cudnnNormalizationForwardInference(
      dnn, CUDNN_NORM_PER_CHANNEL, CUDNN_NORM_OPS_NORM_ADD_ACTIVATION, CUDNN_NORM_ALGO_STANDARD,
      &one, &zero, x_desc, x, scale_desc, scale, shift, stats_desc, mean, var, x_desc, z, relu,
      x_desc, y, 1e-5, 1));
  DNN_CHECK(cudnnNormalizationBackward(
      dnn, CUDNN_NORM_PER_CHANNEL, CUDNN_NORM_OPS_NORM_ADD_ACTIVATION, CUDNN_NORM_ALGO_STANDARD,
      &one, &zero, &one, &zero, x_desc, x, x_desc, y, x_desc, dy, x_desc, z, x_desc, dx, scale_desc,
      scale, shift, dscale, dshift, 1e-5, stats_desc, saved_mean, saved_inv, relu, nullptr, 0,
      reserve, reserve_bytes, 1));

  // Divisive (local contrast) normalization with precomputed means.
  cudnnLRNDescriptor_t lrn;
  DNN_CHECK(cudnnCreateLRNDescriptor(&lrn));
  DNN_CHECK(cudnnSetLRNDescriptor(lrn, 5, 1e-4, 0.75, 2.0));
  float *means, *temp, *temp2;
  for (float** p : {&means, &temp, &temp2}) EMU_CHECK(cudaMalloc(p, x_bytes));
  DNN_CHECK(cudnnDivisiveNormalizationForward(dnn, lrn, CUDNN_DIVNORM_PRECOMPUTED_MEANS, &one,
                                              x_desc, x, means, temp, temp2, &zero, x_desc, y));
  DNN_CHECK(cudnnDivisiveNormalizationBackward(dnn, lrn, CUDNN_DIVNORM_PRECOMPUTED_MEANS, &one,
                                               x_desc, x, means, dy, temp, temp2, &zero, x_desc, dx,
                                               nullptr));

  // A spatial transformer sampling x [2, 8, 8, 8] onto a 6x6 grid.
  cudnnSpatialTransformerDescriptor_t st;
  DNN_CHECK(cudnnCreateSpatialTransformerDescriptor(&st));
  const int st_dim[4] = {2, 8, 6, 6};
  DNN_CHECK(cudnnSetSpatialTransformerNdDescriptor(st, CUDNN_SAMPLER_BILINEAR, CUDNN_DATA_FLOAT, 4,
                                                   st_dim));
  cudnnTensorDescriptor_t sampled_desc;
  DNN_CHECK(cudnnCreateTensorDescriptor(&sampled_desc));
  DNN_CHECK(
      cudnnSetTensor4dDescriptor(sampled_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 2, 8, 6, 6));
  float *theta, *dtheta, *grid, *dgrid, *sampled, *dsampled;
  EMU_CHECK(cudaMalloc(&theta, sizeof(float) * 2 * 6));
  EMU_CHECK(cudaMalloc(&dtheta, sizeof(float) * 2 * 6));
  EMU_CHECK(cudaMalloc(&grid, sizeof(float) * 2 * 6 * 6 * 2));
  EMU_CHECK(cudaMalloc(&dgrid, sizeof(float) * 2 * 6 * 6 * 2));
  EMU_CHECK(cudaMalloc(&sampled, sizeof(float) * 2 * 8 * 6 * 6));
  EMU_CHECK(cudaMalloc(&dsampled, sizeof(float) * 2 * 8 * 6 * 6));
  DNN_CHECK(cudnnSpatialTfGridGeneratorForward(dnn, st, theta, grid));
  DNN_CHECK(
      cudnnSpatialTfSamplerForward(dnn, st, &one, x_desc, x, grid, &zero, sampled_desc, sampled));
  DNN_CHECK(cudnnSpatialTfSamplerBackward(dnn, st, &one, x_desc, x, &zero, x_desc, dx, &one,
                                          sampled_desc, dsampled, grid, &zero, dgrid));
  DNN_CHECK(cudnnSpatialTfGridGeneratorBackward(dnn, st, dgrid, dtheta));

  // CTC loss over T 10, N 2, an alphabet of 5 (0 the blank): labels 1 2 3 and 2 2; the second
  // sample's 1 input step cannot hold its label (cuDNN accepts it and zeroes its gradient).
  cudnnCTCLossDescriptor_t ctc, ctc_v8;
  DNN_CHECK(cudnnCreateCTCLossDescriptor(&ctc));
  DNN_CHECK(cudnnCreateCTCLossDescriptor(&ctc_v8));
  DNN_CHECK(cudnnSetCTCLossDescriptorEx(ctc, CUDNN_DATA_FLOAT, CUDNN_LOSS_NORMALIZATION_SOFTMAX,
                                        CUDNN_PROPAGATE_NAN));
  DNN_CHECK(cudnnSetCTCLossDescriptor_v9(ctc_v8, CUDNN_DATA_FLOAT, CUDNN_LOSS_NORMALIZATION_SOFTMAX,
                                         CUDNN_CTC_ZERO_OOB_GRADIENTS, 4));
  int max_label = 0;
  DNN_CHECK(cudnnGetCTCLossDescriptor_v9(ctc_v8, nullptr, nullptr, nullptr, &max_label));
  EMU_REQUIRE(max_label == 4);
  cudnnTensorDescriptor_t probs_desc;
  DNN_CHECK(cudnnCreateTensorDescriptor(&probs_desc));
  const int probs_dim[3] = {10, 2, 5}, probs_stride[3] = {10, 5, 1};
  DNN_CHECK(cudnnSetTensorNdDescriptor(probs_desc, CUDNN_DATA_FLOAT, 3, probs_dim, probs_stride));
  const int labels[5] = {1, 2, 3, 2, 2}, label_lengths[2] = {3, 2}, input_lengths[2] = {10, 1};
  size_t ctc_bytes = 0, ctc_v8_bytes = 0;
  DNN_CHECK(cudnnGetCTCLossWorkspaceSize(dnn, probs_desc, probs_desc, labels, label_lengths,
                                         input_lengths, CUDNN_CTC_LOSS_ALGO_DETERMINISTIC, ctc,
                                         &ctc_bytes));
  DNN_CHECK(cudnnGetCTCLossWorkspaceSize_v8(dnn, CUDNN_CTC_LOSS_ALGO_DETERMINISTIC, ctc_v8,
                                            probs_desc, nullptr, &ctc_v8_bytes));
  EMU_REQUIRE(ctc_bytes == 2 * 10 * 2 * 7 * sizeof(float));  // alpha and beta, 2·3 + 1 states
  EMU_REQUIRE(ctc_v8_bytes == 2 * 10 * 2 * 9 * sizeof(float));
  float *probs, *probs_grad, *costs;
  void* ctc_work;
  int *dev_labels, *dev_label_lengths, *dev_input_lengths;
  EMU_CHECK(cudaMalloc(&probs, sizeof(float) * 100));
  EMU_CHECK(cudaMalloc(&probs_grad, sizeof(float) * 100));
  EMU_CHECK(cudaMalloc(&costs, sizeof(float) * 2));
  EMU_CHECK(cudaMalloc(&ctc_work, ctc_v8_bytes));
  EMU_CHECK(cudaMalloc(&dev_labels, sizeof(labels)));
  EMU_CHECK(cudaMalloc(&dev_label_lengths, sizeof(label_lengths)));
  EMU_CHECK(cudaMalloc(&dev_input_lengths, sizeof(input_lengths)));
  EMU_CHECK(cudaMemcpy(dev_labels, labels, sizeof(labels), cudaMemcpyHostToDevice));
  EMU_CHECK(
      cudaMemcpy(dev_label_lengths, label_lengths, sizeof(label_lengths), cudaMemcpyHostToDevice));
  EMU_CHECK(
      cudaMemcpy(dev_input_lengths, input_lengths, sizeof(input_lengths), cudaMemcpyHostToDevice));
  DNN_CHECK(cudnnCTCLoss(dnn, probs_desc, probs, labels, label_lengths, input_lengths, costs,
                         probs_desc, probs_grad, CUDNN_CTC_LOSS_ALGO_DETERMINISTIC, ctc, ctc_work,
                         ctc_bytes));
  DNN_CHECK(cudnnCTCLoss_v8(dnn, CUDNN_CTC_LOSS_ALGO_DETERMINISTIC, ctc_v8, probs_desc, probs,
                            dev_labels, dev_label_lengths, dev_input_lengths, costs, probs_desc,
                            nullptr, ctc_v8_bytes, ctc_work));

  cudnnStatus_t runtime = CUDNN_STATUS_INTERNAL_ERROR;
  DNN_CHECK(cudnnQueryRuntimeError(dnn, &runtime, CUDNN_ERRQUERY_BLOCKING, nullptr));
  EMU_REQUIRE(runtime == CUDNN_STATUS_SUCCESS);
  EMU_CHECK(cudaStreamSynchronize(stream));
  std::printf(
      "cudnn_transforms: padded %zu bytes, folded %zu bytes, im2col %zu bytes, norm reserve %zu "
      "bytes, errors seen by the callback %d\n",
      padded_bytes, folded_bytes, col_bytes, reserve_bytes, errors_seen);

  for (void* p :
       {(void*)x,       (void*)y,      (void*)z,          (void*)dx,        (void*)dy,
        (void*)padded,  (void*)folded, (void*)wt,         (void*)wh,        (void*)wr,
        (void*)bias,    (void*)br,     (void*)col,        (void*)scale,     (void*)shift,
        (void*)mean,    (void*)var,    (void*)saved_mean, (void*)saved_inv, (void*)dscale,
        (void*)dshift,  reserve,       (void*)means,      (void*)temp,      (void*)temp2,
        (void*)theta,   (void*)dtheta, (void*)grid,       (void*)dgrid,     (void*)sampled,
        (void*)dsampled}) {
    EMU_CHECK(cudaFree(p));
  }
  for (cudnnTensorTransformDescriptor_t t : {pad, fold, to_nhwc}) {
    DNN_CHECK(cudnnDestroyTensorTransformDescriptor(t));
  }
  for (cudnnTensorDescriptor_t t : {x_desc, volume, padded_desc, folded_desc, scale_desc,
                                    stats_desc, sampled_desc, probs_desc}) {
    DNN_CHECK(cudnnDestroyTensorDescriptor(t));
  }
  DNN_CHECK(cudnnDestroyFilterDescriptor(w_desc));
  DNN_CHECK(cudnnDestroyFilterDescriptor(wh_desc));
  DNN_CHECK(cudnnDestroyConvolutionDescriptor(conv));
  DNN_CHECK(cudnnDestroyActivationDescriptor(relu));
  DNN_CHECK(cudnnDestroyLRNDescriptor(lrn));
  DNN_CHECK(cudnnDestroySpatialTransformerDescriptor(st));
  DNN_CHECK(cudnnDestroyCTCLossDescriptor(ctc));
  DNN_CHECK(cudnnDestroyCTCLossDescriptor(ctc_v8));
  DNN_CHECK(cudnnDestroy(dnn));
  EMU_CHECK(cudaStreamDestroy(stream));
  return 0;
}
