// A CUDA program that also uses the CPU FFTW library (libfftw3), as molecular-dynamics and
// cryo-EM codes do next to their GPU work: its fftw_* calls, including ones cuFFTW does not have
// (real-to-real transforms), must reach libfftw3 unchanged under the emulator, which defines
// fftw_* for cuFFTW programs. Host-only (its CUDA calls: a query and an upload).
#include <cuda_runtime.h>
#include <fftw3.h>

#include <cmath>
#include <complex>
#include <cstdio>

#include "emu_check.h"

int main() {
  int devices = 0;
  EMU_CHECK(cudaGetDeviceCount(&devices));
  // DCT-II (REDFT10) of 8 ones: 2·8 at frequency 0 (FFTW's unnormalized convention).
  double in[8], out[8];
  for (double& v : in) v = 1.0;
  fftw_plan dct = fftw_plan_r2r_1d(8, in, out, FFTW_REDFT10, FFTW_ESTIMATE);
  EMU_REQUIRE(dct != nullptr);
  fftw_execute(dct);
  fftw_destroy_plan(dct);
  std::printf("fftw3_cpu: DCT-II of 8 ones: %.1f\n", out[0]);
  // A complex DFT through the same library: e^{2πi·3j/16} has all its energy at k = 3.
  fftw_complex signal[16], spectrum[16];
  for (int j = 0; j < 16; ++j) {
    signal[j][0] = std::cos(2 * M_PI * 3 * j / 16);
    signal[j][1] = std::sin(2 * M_PI * 3 * j / 16);
  }
  fftw_plan dft = fftw_plan_dft_1d(16, signal, spectrum, FFTW_FORWARD, FFTW_ESTIMATE);
  EMU_REQUIRE(dft != nullptr);
  fftw_execute(dft);
  fftw_destroy_plan(dft);
  std::printf("fftw3_cpu: |X[3]| = %.1f, |X[0]| = %.1f, %d device(s)\n",
              std::hypot(spectrum[3][0], spectrum[3][1]),
              std::hypot(spectrum[0][0], spectrum[0][1]), devices);
  // The spectrum goes to the GPU (the program's own CUDA work, recorded as usual).
  void* device = nullptr;
  EMU_CHECK(cudaMalloc(&device, sizeof(spectrum)));
  EMU_CHECK(cudaMemcpy(device, spectrum, sizeof(spectrum), cudaMemcpyHostToDevice));
  EMU_CHECK(cudaFree(device));
  return out[0] == 16.0 ? 0 : 1;
}
