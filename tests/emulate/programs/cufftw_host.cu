// cuFFTW, the FFTW3 interface of the CUDA toolkit (libcufftw), as a program ported from FFTW uses
// it: host arrays from fftwf_malloc/fftw_malloc, plans of the basic, advanced ("many") and guru64
// interfaces, in-place real transforms with FFTW's padded layout, new-array execution on device
// memory, and FFTW's conventions (unnormalized, e^{-2πi jk/n} forward); edge shapes (1 point, a
// dimension of 1), an in-place plan whose output is its input transposed, and device memory read
// with a negative stride. Every result is compared with a direct DFT computed here, so the program
// checks the numbers, not only that calls return.
// The last plan asks for rank 4, which cuFFTW does not plan (NULL). Written for the emulator's
// tests; valid CUDA: the same binary runs on a real GPU and prints the same lines.
#include <cufftw.h>

#include <cmath>
#include <complex>
#include <cstdio>
#include <vector>

#include "emu_check.h"

namespace {

using cd = std::complex<double>;

// Direct multi-dimensional DFT of a row-major array (sign -1 forward, +1 backward, unscaled).
std::vector<cd> dft(const std::vector<cd>& x, const std::vector<int>& n, int sign) {
  std::vector<cd> data = x;
  std::size_t inner = data.size();
  for (std::size_t axis = 0; axis < n.size(); ++axis) {
    const std::size_t len = n[axis];
    inner /= len;
    const std::size_t outer = data.size() / (len * inner);
    std::vector<cd> line(len);
    for (std::size_t o = 0; o < outer; ++o) {
      for (std::size_t i = 0; i < inner; ++i) {
        const std::size_t base = o * len * inner + i;
        for (std::size_t k = 0; k < len; ++k) {
          cd sum = 0;
          for (std::size_t j = 0; j < len; ++j) {
            sum += data[base + j * inner] *
                   std::polar(1.0, sign * 2 * M_PI * static_cast<double>(j * k % len) / len);
          }
          line[k] = sum;
        }
        for (std::size_t k = 0; k < len; ++k) data[base + k * inner] = line[k];
      }
    }
  }
  return data;
}

double relative_error(const std::vector<cd>& got, const std::vector<cd>& want) {
  double err = 0, norm = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    err = std::max(err, std::abs(got[i] - want[i]));
    norm = std::max(norm, std::abs(want[i]));
  }
  return err / std::max(norm, 1e-30);
}

double signal(int i) { return std::sin(0.37 * i) + 0.25 * std::cos(1.9 * i) + (i % 5) * 0.1; }

void report(const char* what, double error, double tolerance) {
  std::printf("cufftw_host: %s relative error %.2e %s\n", what, error,
              error <= tolerance ? "ok" : "FAILED");
  EMU_REQUIRE(error <= tolerance);
}

}  // namespace

int main() {
  // 1. Single precision, 1-D, 1000 points (2^3·5^3), forward, out of place.
  {
    const int n = 1000;
    auto* in = static_cast<fftwf_complex*>(fftwf_malloc(sizeof(fftwf_complex) * n));
    auto* out = static_cast<fftwf_complex*>(fftwf_malloc(sizeof(fftwf_complex) * n));
    fftwf_plan plan = fftwf_plan_dft_1d(n, in, out, FFTW_FORWARD, FFTW_ESTIMATE);
    EMU_REQUIRE(plan != nullptr);
    std::vector<cd> x(n);
    for (int i = 0; i < n; ++i) {
      in[i][0] = static_cast<float>(signal(i));
      in[i][1] = static_cast<float>(signal(3 * i + 1));
      x[i] = cd(in[i][0], in[i][1]);
    }
    fftwf_execute(plan);
    std::vector<cd> got(n);
    for (int i = 0; i < n; ++i) got[i] = cd(out[i][0], out[i][1]);
    report("C2C 1000 forward", relative_error(got, dft(x, {n}, -1)), 1e-5);
    double add = 0, mul = 0, fma = 0;
    fftwf_flops(plan, &add, &mul, &fma);
    std::printf("cufftw_host: flops %.0f\n", add + mul + fma);
    fftwf_destroy_plan(plan);
    fftwf_free(in);
    fftwf_free(out);
  }
  // 2. Double precision, 2-D 24 x 36, forward then backward in place: N times the input.
  {
    const int n0 = 24, n1 = 36, n = n0 * n1;
    auto* a = static_cast<fftw_complex*>(fftw_malloc(sizeof(fftw_complex) * n));
    fftw_plan forward = fftw_plan_dft_2d(n0, n1, a, a, FFTW_FORWARD, FFTW_MEASURE);
    fftw_plan backward = fftw_plan_dft_2d(n0, n1, a, a, FFTW_BACKWARD, FFTW_MEASURE);
    EMU_REQUIRE(forward != nullptr && backward != nullptr);
    std::vector<cd> x(n);
    for (int i = 0; i < n; ++i) {
      a[i][0] = signal(i);
      a[i][1] = -signal(i + 7);
      x[i] = cd(a[i][0], a[i][1]);
    }
    fftw_execute(forward);
    std::vector<cd> got(n);
    for (int i = 0; i < n; ++i) got[i] = cd(a[i][0], a[i][1]);
    report("Z2Z 24x36 forward in place", relative_error(got, dft(x, {n0, n1}, -1)), 1e-12);
    fftw_execute(backward);
    for (int i = 0; i < n; ++i) got[i] = cd(a[i][0], a[i][1]) / static_cast<double>(n);
    report("Z2Z 24x36 round trip", relative_error(got, x), 1e-12);
    fftw_destroy_plan(forward);
    fftw_destroy_plan(backward);
    fftw_free(a);
  }
  // 3. Double precision real 2-D 12 x 10, in place (rows padded to 2·(10/2+1) = 12 reals),
  //    R2C then C2R: N times the input.
  {
    const int n0 = 12, n1 = 10, padded = 2 * (n1 / 2 + 1), half = n1 / 2 + 1;
    auto* r = static_cast<double*>(fftw_malloc(sizeof(double) * n0 * padded));
    auto* c = reinterpret_cast<fftw_complex*>(r);
    fftw_plan r2c = fftw_plan_dft_r2c_2d(n0, n1, r, c, FFTW_ESTIMATE);
    fftw_plan c2r = fftw_plan_dft_c2r_2d(n0, n1, c, r, FFTW_ESTIMATE);
    EMU_REQUIRE(r2c != nullptr && c2r != nullptr);
    std::vector<cd> x(n0 * n1);
    for (int i = 0; i < n0; ++i) {
      for (int j = 0; j < n1; ++j) {
        r[i * padded + j] = signal(i * n1 + j);
        x[i * n1 + j] = r[i * padded + j];
      }
    }
    fftw_execute(r2c);
    const std::vector<cd> full = dft(x, {n0, n1}, -1);
    std::vector<cd> got, want;
    for (int i = 0; i < n0; ++i) {
      for (int j = 0; j < half; ++j) {
        got.emplace_back(c[i * half + j][0], c[i * half + j][1]);
        want.push_back(full[i * n1 + j]);
      }
    }
    report("D2Z 12x10 in place", relative_error(got, want), 1e-12);
    fftw_execute(c2r);
    got.clear();
    for (int i = 0; i < n0; ++i) {
      for (int j = 0; j < n1; ++j) got.emplace_back(r[i * padded + j] / (n0 * n1));
    }
    report("Z2D 12x10 round trip", relative_error(got, x), 1e-12);
    fftw_destroy_plan(r2c);
    fftw_destroy_plan(c2r);
    fftw_free(r);
  }
  // 4. Advanced interface: 3 interleaved 64-point transforms (stride 3, distance 1), backward.
  {
    const int n = 64, howmany = 3;
    std::vector<std::complex<float>> in_data(n * howmany), out_data(n * howmany);
    auto* in = reinterpret_cast<fftwf_complex*>(in_data.data());
    auto* out = reinterpret_cast<fftwf_complex*>(out_data.data());
    const int dims[1] = {n};
    fftwf_plan plan = fftwf_plan_many_dft(1, dims, howmany, in, nullptr, howmany, 1, out, nullptr,
                                          howmany, 1, FFTW_BACKWARD, FFTW_ESTIMATE);
    EMU_REQUIRE(plan != nullptr);
    for (int i = 0; i < n * howmany; ++i) {
      in[i][0] = static_cast<float>(signal(i));
      in[i][1] = 0;
    }
    fftwf_execute(plan);
    double worst = 0;
    for (int b = 0; b < howmany; ++b) {
      std::vector<cd> x(n), got(n);
      for (int i = 0; i < n; ++i) {
        x[i] = cd(in[i * howmany + b][0], in[i * howmany + b][1]);
        got[i] = cd(out[i * howmany + b][0], out[i * howmany + b][1]);
      }
      worst = std::max(worst, relative_error(got, dft(x, {n}, +1)));
    }
    report("C2C many 3x64 interleaved backward", worst, 1e-5);
    fftwf_destroy_plan(plan);
  }
  // 5. Guru64 interface: R2C of 2 rows of 30 reals, one batch dimension, then a new-array
  //    execution of the same plan on device memory (no copies: the arrays are already there).
  {
    const int n = 30, rows = 2, half = n / 2 + 1;
    std::vector<float> in(n * rows);
    std::vector<std::complex<float>> out_data(half * rows);
    auto* out = reinterpret_cast<fftwf_complex*>(out_data.data());
    fftwf_iodim64 dim = {n, 1, 1};
    fftwf_iodim64 batch = {rows, n, half};
    fftwf_plan plan = fftwf_plan_guru64_dft_r2c(1, &dim, 1, &batch, in.data(), out, FFTW_ESTIMATE);
    EMU_REQUIRE(plan != nullptr);
    for (int i = 0; i < n * rows; ++i) in[i] = static_cast<float>(signal(2 * i));
    fftwf_execute(plan);
    double worst = 0;
    for (int b = 0; b < rows; ++b) {
      std::vector<cd> x(n), got(half), want(half);
      for (int i = 0; i < n; ++i) x[i] = in[b * n + i];
      const std::vector<cd> full = dft(x, {n}, -1);
      for (int k = 0; k < half; ++k) {
        got[k] = cd(out[b * half + k][0], out[b * half + k][1]);
        want[k] = full[k];
      }
      worst = std::max(worst, relative_error(got, want));
    }
    report("R2C guru64 2x30", worst, 1e-5);
    float* device_in = nullptr;
    fftwf_complex* device_out = nullptr;
    EMU_CHECK(cudaMalloc(&device_in, sizeof(float) * n * rows));
    EMU_CHECK(cudaMalloc(&device_out, sizeof(fftwf_complex) * half * rows));
    EMU_CHECK(cudaMemcpy(device_in, in.data(), sizeof(float) * n * rows, cudaMemcpyHostToDevice));
    fftwf_execute_dft_r2c(plan, device_in, device_out);
    EMU_CHECK(
        cudaMemcpy(out, device_out, sizeof(fftwf_complex) * half * rows, cudaMemcpyDeviceToHost));
    EMU_CHECK(cudaFree(device_in));
    EMU_CHECK(cudaFree(device_out));
    fftwf_destroy_plan(plan);
  }
  // 6. Edge shapes: a 1-point transform and a 2-D transform with a dimension of 1.
  {
    std::vector<std::complex<double>> a(8), b(8);
    auto* in = reinterpret_cast<fftw_complex*>(a.data());
    auto* out = reinterpret_cast<fftw_complex*>(b.data());
    a[0] = {3.5, -1.0};
    fftw_plan one = fftw_plan_dft_1d(1, in, out, FFTW_FORWARD, FFTW_ESTIMATE);
    EMU_REQUIRE(one != nullptr);
    fftw_execute(one);
    report("Z2Z 1 point", std::abs(b[0] - a[0]) / std::abs(a[0]), 1e-15);
    fftw_destroy_plan(one);
    std::vector<cd> x(8);
    for (int i = 0; i < 8; ++i) x[i] = a[i] = cd(signal(i), signal(i + 3));
    fftw_plan flat = fftw_plan_dft_2d(1, 8, in, out, FFTW_BACKWARD, FFTW_ESTIMATE);
    EMU_REQUIRE(flat != nullptr);
    fftw_execute(flat);
    report("Z2Z 1x8 backward", relative_error(b, dft(x, {1, 8}, +1)), 1e-14);
    fftw_destroy_plan(flat);
  }
  // 7. In place with a transposed output: 3 transforms of 4 points read along rows (stride 1,
  //    4 apart) and written along columns (stride 3, 1 apart), over the same 12 values, so one
  //    transform's output lands on another's input.
  {
    std::vector<std::complex<double>> a(12);
    auto* array = reinterpret_cast<fftw_complex*>(a.data());
    const fftw_iodim dim = {4, 1, 3};
    const fftw_iodim batch = {3, 4, 1};
    fftw_plan plan =
        fftw_plan_guru_dft(1, &dim, 1, &batch, array, array, FFTW_FORWARD, FFTW_ESTIMATE);
    EMU_REQUIRE(plan != nullptr);
    for (int i = 0; i < 12; ++i) a[i] = cd(signal(i), -signal(2 * i));
    const std::vector<cd> x(a.begin(), a.end());
    fftw_execute(plan);
    double worst = 0;
    for (int b = 0; b < 3; ++b) {
      const std::vector<cd> want =
          dft(std::vector<cd>(x.begin() + 4 * b, x.begin() + 4 * b + 4), {4}, -1);
      std::vector<cd> got(4);
      for (int k = 0; k < 4; ++k) got[k] = a[3 * k + b];
      worst = std::max(worst, relative_error(got, want));
    }
    report("Z2Z guru in place transposed", worst, 1e-14);
    fftw_destroy_plan(plan);
  }
  // 8. Device memory read backwards (stride -1 from the last element): no copies, and the
  //    emulated cuFFT accepts the layout.
  {
    const int n = 16;
    fftwf_complex* device_in = nullptr;
    fftwf_complex* device_out = nullptr;
    EMU_CHECK(cudaMalloc(&device_in, sizeof(fftwf_complex) * n));
    EMU_CHECK(cudaMalloc(&device_out, sizeof(fftwf_complex) * n));
    const fftwf_iodim64 dim = {n, -1, 1};
    fftwf_plan plan = fftwf_plan_guru64_dft(1, &dim, 0, nullptr, device_in + (n - 1), device_out,
                                            FFTW_FORWARD, FFTW_ESTIMATE);
    EMU_REQUIRE(plan != nullptr);
    fftwf_execute(plan);
    fftwf_destroy_plan(plan);
    EMU_CHECK(cudaFree(device_in));
    EMU_CHECK(cudaFree(device_out));
  }
  // 9. Rank 4: cuFFTW plans ranks 1 to 3 only.
  {
    const int n[4] = {2, 2, 2, 2};
    std::vector<std::complex<double>> a(16);
    auto* array = reinterpret_cast<fftw_complex*>(a.data());
    fftw_plan plan = fftw_plan_dft(4, n, array, array, FFTW_FORWARD, FFTW_ESTIMATE);
    std::printf("cufftw_host: rank 4 plan %s\n", plan == nullptr ? "refused" : "made");
    if (plan != nullptr) fftw_destroy_plan(plan);
  }
  fftw_cleanup();
  std::printf("cufftw_host: done\n");
  return 0;
}
