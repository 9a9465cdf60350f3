// cuFFT as NVIDIA's simpleCUFFT sample uses it, and a little beyond: a 1D complex convolution by
// FFT (forward transforms of a signal and a padded filter, a pointwise multiply-and-scale kernel,
// the inverse transform, in place), a 2D real-to-complex transform planned with cufftCreate +
// cufftMakePlan2d on a stream, a batched double-precision D2Z/Z2D pair (cufftPlanMany), and a
// 2^20-point Z2Z transform whose plan needs a work area, and a half-precision batched transform
// through cufftXtMakePlanMany/cufftXtExec (as torch.fft does). Then two deliberate errors:
// executing the C2C plan as R2C (CUFFT_INVALID_TYPE) and a multi-GPU call naming a second GPU on a
// one-GPU machine (cufftXtSetGPUs, CUFFT_INVALID_DEVICE). Written for the emulator's tests; valid
// CUDA: the same binary runs on a real GPU (where the multi-GPU call fails on a made plan, too).
#include <cufft.h>
#include <cufftXt.h>

#include <cmath>
#include <vector>

#include "emu_check.h"
#include "fft_check.h"

// Complex multiplication with scaling (the inverse transform is unnormalized).
__global__ void complex_pointwise_mul_and_scale(cufftComplex* a, const cufftComplex* b, int size,
                                                float scale) {
  for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < size; i += blockDim.x * gridDim.x) {
    const cufftComplex x = a[i], y = b[i];
    a[i].x = (x.x * y.x - x.y * y.y) * scale;
    a[i].y = (x.x * y.y + x.y * y.x) * scale;
  }
}

int main() {
  // 1. Convolution of a 4096-point signal with an 11-tap filter, by FFT.
  const int n = 4096, taps = 11;
  std::vector<cufftComplex> signal(n), filter(n);
  for (int i = 0; i < n; ++i) {
    signal[i].x = static_cast<float>(std::sin(0.01 * i));
    signal[i].y = 0.0f;
    filter[i].x = i < taps ? 1.0f / taps : 0.0f;
    filter[i].y = 0.0f;
  }
  cufftComplex *d_signal = nullptr, *d_filter = nullptr;
  const size_t bytes = sizeof(cufftComplex) * n;
  EMU_CHECK(cudaMalloc(&d_signal, bytes));
  EMU_CHECK(cudaMalloc(&d_filter, bytes));
  EMU_CHECK(cudaMemcpy(d_signal, signal.data(), bytes, cudaMemcpyHostToDevice));
  EMU_CHECK(cudaMemcpy(d_filter, filter.data(), bytes, cudaMemcpyHostToDevice));
  cufftHandle plan;
  FFT_CHECK(cufftPlan1d(&plan, n, CUFFT_C2C, 1));
  FFT_CHECK(cufftExecC2C(plan, d_signal, d_signal, CUFFT_FORWARD));
  FFT_CHECK(cufftExecC2C(plan, d_filter, d_filter, CUFFT_FORWARD));
  complex_pointwise_mul_and_scale<<<32, 256>>>(d_signal, d_filter, n, 1.0f / n);
  EMU_CHECK(cudaGetLastError());
  FFT_CHECK(cufftExecC2C(plan, d_signal, d_signal, CUFFT_INVERSE));
  EMU_CHECK(cudaMemcpy(signal.data(), d_signal, bytes, cudaMemcpyDeviceToHost));

  // 2. A 256 x 512 real-to-complex transform on a stream, planned in two steps.
  cudaStream_t stream;
  EMU_CHECK(cudaStreamCreate(&stream));
  const int nx = 256, ny = 512;
  float* d_real = nullptr;
  cufftComplex* d_spectrum = nullptr;
  EMU_CHECK(cudaMalloc(&d_real, sizeof(float) * nx * ny));
  EMU_CHECK(cudaMalloc(&d_spectrum, sizeof(cufftComplex) * nx * (ny / 2 + 1)));
  cufftHandle plan2d;
  size_t work_2d = 0;
  FFT_CHECK(cufftCreate(&plan2d));
  FFT_CHECK(cufftSetStream(plan2d, stream));
  FFT_CHECK(cufftMakePlan2d(plan2d, nx, ny, CUFFT_R2C, &work_2d));
  FFT_CHECK(cufftExecR2C(plan2d, d_real, d_spectrum));

  // 3. 64 batched 1024-point double transforms, forward and back.
  const int len = 1024, batch = 64;
  int dims[1] = {len};
  double* d_series = nullptr;
  cufftDoubleComplex* d_series_spectrum = nullptr;
  EMU_CHECK(cudaMalloc(&d_series, sizeof(double) * len * batch));
  EMU_CHECK(cudaMalloc(&d_series_spectrum, sizeof(cufftDoubleComplex) * (len / 2 + 1) * batch));
  cufftHandle forward, backward;
  FFT_CHECK(
      cufftPlanMany(&forward, 1, dims, nullptr, 1, len, nullptr, 1, len / 2 + 1, CUFFT_D2Z, batch));
  FFT_CHECK(cufftPlanMany(&backward, 1, dims, nullptr, 1, len / 2 + 1, nullptr, 1, len, CUFFT_Z2D,
                          batch));
  FFT_CHECK(cufftExecD2Z(forward, d_series, d_series_spectrum));
  FFT_CHECK(cufftExecZ2D(backward, d_series_spectrum, d_series));

  // 4. A 2^20-point double-complex transform: more than one pass, so the plan has a work area.
  const int big = 1 << 20;
  cufftDoubleComplex* d_big = nullptr;
  EMU_CHECK(cudaMalloc(&d_big, sizeof(cufftDoubleComplex) * big));
  size_t estimate = 0;
  FFT_CHECK(cufftEstimate1d(big, CUFFT_Z2Z, 1, &estimate));
  cufftHandle plan_big;
  FFT_CHECK(cufftPlan1d(&plan_big, big, CUFFT_Z2Z, 1));
  size_t work_big = 0;
  FFT_CHECK(cufftGetSize(plan_big, &work_big));
  FFT_CHECK(cufftExecZ2Z(plan_big, d_big, d_big, CUFFT_FORWARD));
  FFT_CHECK(cufftExecZ2Z(plan_big, d_big, d_big, CUFFT_INVERSE));

  // 5. What torch.fft calls: a cufftXt plan of 8 half-precision 1024-point transforms.
  cufftHandle plan_half;
  FFT_CHECK(cufftCreate(&plan_half));
  long long half_n[1] = {1024};
  size_t work_half = 0;
  FFT_CHECK(cufftXtMakePlanMany(plan_half, 1, half_n, nullptr, 1, 1024, CUDA_C_16F, nullptr, 1,
                                1024, CUDA_C_16F, 8, &work_half, CUDA_C_16F));
  void* d_half = nullptr;
  EMU_CHECK(cudaMalloc(&d_half, 8 * 1024 * 2 * sizeof(short)));  // 8 x 1024 complex fp16
  FFT_CHECK(cufftXtExec(plan_half, d_half, d_half, CUFFT_FORWARD));
  EMU_CHECK(cudaDeviceSynchronize());

  // 6. Errors: a C2C plan executed as R2C, and a multi-GPU call on a single-GPU plan.
  const cufftResult wrong_type = cufftExecR2C(plan, reinterpret_cast<float*>(d_signal), d_filter);
  int gpus[2] = {0, 1};
  const cufftResult multi_gpu = cufftXtSetGPUs(plan, 2, gpus);

  std::printf(
      "cufft_convolution: cuFFT %d, work areas %zu (2D R2C) and %zu bytes (2^20 Z2Z, "
      "estimated %zu), wrong type -> %d, cufftXtSetGPUs -> %d\n",
      [] {
        int v = 0;
        cufftGetVersion(&v);
        return v;
      }(),
      work_2d, work_big, estimate, static_cast<int>(wrong_type), static_cast<int>(multi_gpu));
  FFT_CHECK(cufftDestroy(plan));
  FFT_CHECK(cufftDestroy(plan2d));
  FFT_CHECK(cufftDestroy(forward));
  FFT_CHECK(cufftDestroy(backward));
  FFT_CHECK(cufftDestroy(plan_big));
  FFT_CHECK(cufftDestroy(plan_half));
  EMU_CHECK(cudaFree(d_half));
  EMU_CHECK(cudaFree(d_signal));
  EMU_CHECK(cudaFree(d_filter));
  EMU_CHECK(cudaFree(d_real));
  EMU_CHECK(cudaFree(d_spectrum));
  EMU_CHECK(cudaFree(d_series));
  EMU_CHECK(cudaFree(d_series_spectrum));
  EMU_CHECK(cudaFree(d_big));
  EMU_CHECK(cudaStreamDestroy(stream));
  return wrong_type == CUFFT_INVALID_TYPE ? 0 : 1;
}
