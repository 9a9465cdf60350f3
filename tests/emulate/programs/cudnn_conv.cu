// cuDNN convolutions as a CNN training step issues them: a 3x3 convolution (fp32, pad 1, stride
// 1) forward, backward data and backward filter, and a grouped, strided 3x3 convolution in fp16
// with tensor-op math forward, and after the first layer a bias (cudnnAddTensor), ReLU, 2x2 max
// pooling and a channel softmax, for 3 iterations with a stream synchronize after each. The
// descriptors, output-size queries, algorithm choice and workspace queries are checked.
// Valid CUDA/cuDNN: the same binary runs on a real GPU.
#include <cudnn.h>

#include "dnn_check.h"

int main() {
  cudnnHandle_t dnn;
  DNN_CHECK(cudnnCreate(&dnn));
  cudaStream_t stream;
  EMU_CHECK(cudaStreamCreate(&stream));
  DNN_CHECK(cudnnSetStream(dnn, stream));

  // Layer 1: x [8, 64, 56, 56] * w [128, 64, 3, 3], pad 1, stride 1 → y [8, 128, 56, 56], fp32.
  cudnnTensorDescriptor_t x_desc, y_desc;
  cudnnFilterDescriptor_t w_desc;
  cudnnConvolutionDescriptor_t conv;
  DNN_CHECK(cudnnCreateTensorDescriptor(&x_desc));
  DNN_CHECK(cudnnCreateTensorDescriptor(&y_desc));
  DNN_CHECK(cudnnCreateFilterDescriptor(&w_desc));
  DNN_CHECK(cudnnCreateConvolutionDescriptor(&conv));
  DNN_CHECK(cudnnSetTensor4dDescriptor(x_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 8, 64, 56, 56));
  DNN_CHECK(cudnnSetFilter4dDescriptor(w_desc, CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, 128, 64, 3, 3));
  DNN_CHECK(cudnnSetConvolution2dDescriptor(conv, 1, 1, 1, 1, 1, 1, CUDNN_CROSS_CORRELATION,
                                            CUDNN_DATA_FLOAT));
  int n, c, h, w;
  DNN_CHECK(cudnnGetConvolution2dForwardOutputDim(conv, x_desc, w_desc, &n, &c, &h, &w));
  EMU_REQUIRE(n == 8 && c == 128 && h == 56 && w == 56);
  DNN_CHECK(cudnnSetTensor4dDescriptor(y_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w));
  cudnnConvolutionFwdAlgoPerf_t fwd;
  int returned = 0;
  DNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(dnn, x_desc, w_desc, conv, y_desc, 1, &returned,
                                                   &fwd));
  EMU_REQUIRE(returned == 1);
  cudnnConvolutionBwdDataAlgoPerf_t bwd_data;
  DNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(dnn, w_desc, y_desc, conv, x_desc, 1,
                                                        &returned, &bwd_data));
  cudnnConvolutionBwdFilterAlgoPerf_t bwd_filter;
  DNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(dnn, x_desc, y_desc, conv, w_desc, 1,
                                                          &returned, &bwd_filter));
  size_t workspace_bytes = 0, bytes = 0;
  DNN_CHECK(
      cudnnGetConvolutionForwardWorkspaceSize(dnn, x_desc, w_desc, conv, y_desc, fwd.algo, &bytes));
  workspace_bytes = bytes > workspace_bytes ? bytes : workspace_bytes;
  DNN_CHECK(cudnnGetConvolutionBackwardDataWorkspaceSize(dnn, w_desc, y_desc, conv, x_desc,
                                                         bwd_data.algo, &bytes));
  workspace_bytes = bytes > workspace_bytes ? bytes : workspace_bytes;
  DNN_CHECK(cudnnGetConvolutionBackwardFilterWorkspaceSize(dnn, x_desc, y_desc, conv, w_desc,
                                                           bwd_filter.algo, &bytes));
  workspace_bytes = bytes > workspace_bytes ? bytes : workspace_bytes;

  float *x, *dx, *wt, *dw, *y, *dy;
  void* workspace = nullptr;
  EMU_CHECK(cudaMalloc(&x, sizeof(float) * 8 * 64 * 56 * 56));
  EMU_CHECK(cudaMalloc(&dx, sizeof(float) * 8 * 64 * 56 * 56));
  EMU_CHECK(cudaMalloc(&wt, sizeof(float) * 128 * 64 * 9));
  EMU_CHECK(cudaMalloc(&dw, sizeof(float) * 128 * 64 * 9));
  EMU_CHECK(cudaMalloc(&y, sizeof(float) * 8 * 128 * 56 * 56));
  EMU_CHECK(cudaMalloc(&dy, sizeof(float) * 8 * 128 * 56 * 56));
  if (workspace_bytes > 0) EMU_CHECK(cudaMalloc(&workspace, workspace_bytes));

  // Layer 2: grouped (4 groups), strided (2) 3x3 in fp16 with tensor-op math:
  // a [8, 128, 56, 56] * v [128, 32, 3, 3], pad 1 → b [8, 128, 28, 28].
  cudnnTensorDescriptor_t a_desc, b_desc;
  cudnnFilterDescriptor_t v_desc;
  cudnnConvolutionDescriptor_t grouped;
  DNN_CHECK(cudnnCreateTensorDescriptor(&a_desc));
  DNN_CHECK(cudnnCreateTensorDescriptor(&b_desc));
  DNN_CHECK(cudnnCreateFilterDescriptor(&v_desc));
  DNN_CHECK(cudnnCreateConvolutionDescriptor(&grouped));
  DNN_CHECK(cudnnSetTensor4dDescriptor(a_desc, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, 8, 128, 56, 56));
  DNN_CHECK(cudnnSetFilter4dDescriptor(v_desc, CUDNN_DATA_HALF, CUDNN_TENSOR_NHWC, 128, 32, 3, 3));
  DNN_CHECK(cudnnSetConvolution2dDescriptor(grouped, 1, 1, 2, 2, 1, 1, CUDNN_CROSS_CORRELATION,
                                            CUDNN_DATA_FLOAT));
  DNN_CHECK(cudnnSetConvolutionGroupCount(grouped, 4));
  DNN_CHECK(cudnnSetConvolutionMathType(grouped, CUDNN_TENSOR_OP_MATH));
  DNN_CHECK(cudnnGetConvolution2dForwardOutputDim(grouped, a_desc, v_desc, &n, &c, &h, &w));
  EMU_REQUIRE(n == 8 && c == 128 && h == 28 && w == 28);
  DNN_CHECK(cudnnSetTensor4dDescriptor(b_desc, CUDNN_TENSOR_NHWC, CUDNN_DATA_HALF, n, c, h, w));
  void *a, *v, *b;
  EMU_CHECK(cudaMalloc(&a, 2 * 8 * 128 * 56 * 56));
  EMU_CHECK(cudaMalloc(&v, 2 * 128 * 32 * 9));
  EMU_CHECK(cudaMalloc(&b, 2 * 8 * 128 * 28 * 28));

  // Bias, ReLU, 2x2 max pooling (stride 2) and softmax after layer 1.
  cudnnTensorDescriptor_t bias_desc, pooled_desc;
  DNN_CHECK(cudnnCreateTensorDescriptor(&bias_desc));
  DNN_CHECK(cudnnCreateTensorDescriptor(&pooled_desc));
  DNN_CHECK(
      cudnnSetTensor4dDescriptor(bias_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, 128, 1, 1));
  cudnnActivationDescriptor_t relu;
  DNN_CHECK(cudnnCreateActivationDescriptor(&relu));
  DNN_CHECK(cudnnSetActivationDescriptor(relu, CUDNN_ACTIVATION_RELU, CUDNN_PROPAGATE_NAN, 0.0));
  cudnnPoolingDescriptor_t pool;
  DNN_CHECK(cudnnCreatePoolingDescriptor(&pool));
  DNN_CHECK(
      cudnnSetPooling2dDescriptor(pool, CUDNN_POOLING_MAX, CUDNN_PROPAGATE_NAN, 2, 2, 0, 0, 2, 2));
  DNN_CHECK(cudnnGetPooling2dForwardOutputDim(pool, y_desc, &n, &c, &h, &w));
  EMU_REQUIRE(n == 8 && c == 128 && h == 28 && w == 28);
  DNN_CHECK(
      cudnnSetTensor4dDescriptor(pooled_desc, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, n, c, h, w));
  float *bias, *pooled, *probabilities;
  EMU_CHECK(cudaMalloc(&bias, sizeof(float) * 128));
  EMU_CHECK(cudaMalloc(&pooled, sizeof(float) * 8 * 128 * 28 * 28));
  EMU_CHECK(cudaMalloc(&probabilities, sizeof(float) * 8 * 128 * 28 * 28));

  // A mismatched output descriptor is refused.
  EMU_REQUIRE(cudnnConvolutionForward(dnn, nullptr, x_desc, x, w_desc, wt, conv, fwd.algo,
                                      workspace, workspace_bytes, nullptr, b_desc,
                                      b) == CUDNN_STATUS_BAD_PARAM);

  const float one = 1.0f, zero = 0.0f;
  for (int step = 0; step < 3; ++step) {
    DNN_CHECK(cudnnConvolutionForward(dnn, &one, x_desc, x, w_desc, wt, conv, fwd.algo, workspace,
                                      workspace_bytes, &zero, y_desc, y));
    DNN_CHECK(cudnnAddTensor(dnn, &one, bias_desc, bias, &one, y_desc, y));
    DNN_CHECK(cudnnActivationForward(dnn, relu, &one, y_desc, y, &zero, y_desc, y));
    DNN_CHECK(cudnnPoolingForward(dnn, pool, &one, y_desc, y, &zero, pooled_desc, pooled));
    DNN_CHECK(cudnnSoftmaxForward(dnn, CUDNN_SOFTMAX_ACCURATE, CUDNN_SOFTMAX_MODE_CHANNEL, &one,
                                  pooled_desc, pooled, &zero, pooled_desc, probabilities));
    DNN_CHECK(cudnnConvolutionForward(dnn, &one, a_desc, a, v_desc, v, grouped, fwd.algo, workspace,
                                      workspace_bytes, &zero, b_desc, b));
    DNN_CHECK(cudnnConvolutionBackwardData(dnn, &one, w_desc, wt, y_desc, dy, conv, bwd_data.algo,
                                           workspace, workspace_bytes, &zero, x_desc, dx));
    DNN_CHECK(cudnnConvolutionBackwardFilter(dnn, &one, x_desc, x, y_desc, dy, conv,
                                             bwd_filter.algo, workspace, workspace_bytes, &zero,
                                             w_desc, dw));
    EMU_CHECK(cudaStreamSynchronize(stream));
  }

  DNN_CHECK(cudnnDestroyTensorDescriptor(bias_desc));
  DNN_CHECK(cudnnDestroyTensorDescriptor(pooled_desc));
  DNN_CHECK(cudnnDestroyActivationDescriptor(relu));
  DNN_CHECK(cudnnDestroyPoolingDescriptor(pool));
  for (float* p : {bias, pooled, probabilities}) EMU_CHECK(cudaFree(p));
  DNN_CHECK(cudnnDestroyTensorDescriptor(x_desc));
  DNN_CHECK(cudnnDestroyTensorDescriptor(y_desc));
  DNN_CHECK(cudnnDestroyTensorDescriptor(a_desc));
  DNN_CHECK(cudnnDestroyTensorDescriptor(b_desc));
  DNN_CHECK(cudnnDestroyFilterDescriptor(w_desc));
  DNN_CHECK(cudnnDestroyFilterDescriptor(v_desc));
  DNN_CHECK(cudnnDestroyConvolutionDescriptor(conv));
  DNN_CHECK(cudnnDestroyConvolutionDescriptor(grouped));
  DNN_CHECK(cudnnDestroy(dnn));
  for (void* p : {static_cast<void*>(x), static_cast<void*>(dx), static_cast<void*>(wt),
                  static_cast<void*>(dw), static_cast<void*>(y), static_cast<void*>(dy), a, v, b}) {
    EMU_CHECK(cudaFree(p));
  }
  if (workspace != nullptr) EMU_CHECK(cudaFree(workspace));
  EMU_CHECK(cudaStreamDestroy(stream));
  std::printf("cudnn_conv: cuDNN %zu, 3 steps of 4 convolutions and 4 memory-bound ops\n",
              cudnnGetVersion());
  return 0;
}
