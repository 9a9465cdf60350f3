// cuFFT plan properties, the work-area policy and callbacks, after NVIDIA's simpleCUFFT_callback
// sample: a 1D complex transform whose plan asks for patient JIT (read back, then reset), an LTO
// load callback given before the plan is made, a minimal work-area policy, a store callback
// given after, and three executions (callbacks installed, one cleared, none).
// Valid CUDA: on a real GPU the placeholder LTO fatbin and callback pointer are refused by cuFFT
// (it must JIT-link real LTO IR; device callbacks need the static library); the program then
// goes on without them and still checks the properties.
#include <cufft.h>
#include <cufftXt.h>

#include <cstdio>

#include "emu_check.h"
#include "fft_check.h"

int main() {
  const int n = 1024, batch = 4;
  cufftComplex* data;
  EMU_CHECK(cudaMalloc(&data, sizeof(cufftComplex) * n * batch));
  cufftHandle plan;
  FFT_CHECK(cufftCreate(&plan));
  FFT_CHECK(cufftSetPlanPropertyInt64(plan, NVFFT_PLAN_PROPERTY_INT64_PATIENT_JIT, 1));
  long long patient = 0;
  FFT_CHECK(cufftGetPlanPropertyInt64(plan, NVFFT_PLAN_PROPERTY_INT64_PATIENT_JIT, &patient));
  EMU_REQUIRE(patient == 1);
  FFT_CHECK(cufftResetPlanProperty(plan, NVFFT_PLAN_PROPERTY_INT64_PATIENT_JIT));
  FFT_CHECK(cufftGetPlanPropertyInt64(plan, NVFFT_PLAN_PROPERTY_INT64_PATIENT_JIT, &patient));
  EMU_REQUIRE(patient == 0);
  // A bad property value is refused.
  EMU_REQUIRE(cufftSetPlanPropertyInt64(plan, NVFFT_PLAN_PROPERTY_INT64_MAX_NUM_HOST_THREADS, 0) ==
              CUFFT_INVALID_VALUE);

  static const char placeholder_fatbin[32] = "placeholder, not LTO IR";
  const bool lto =
      cufftXtSetJITCallback(plan, "load_scaled", placeholder_fatbin, sizeof(placeholder_fatbin),
                            CUFFT_CB_LD_COMPLEX, nullptr) == CUFFT_SUCCESS;
  size_t work = 0;
  const cufftResult made = cufftMakePlan1d(plan, n, CUFFT_C2C, batch, &work);
  if (made != CUFFT_SUCCESS) {  // a real cuFFT cannot link the placeholder: plan without it
    FFT_CHECK(cufftDestroy(plan));
    FFT_CHECK(cufftCreate(&plan));
    FFT_CHECK(cufftMakePlan1d(plan, n, CUFFT_C2C, batch, &work));
  }
  size_t policy_size = 0;
  FFT_CHECK(cufftXtSetWorkAreaPolicy(plan, CUFFT_WORKAREA_MINIMAL, &policy_size));
  // An LTO callback after the plan is made is refused.
  const bool late_lto_refused =
      cufftXtSetJITCallback(plan, "load_scaled", placeholder_fatbin, sizeof(placeholder_fatbin),
                            CUFFT_CB_LD_COMPLEX, nullptr) != CUFFT_SUCCESS;
  void* store_routine = reinterpret_cast<void*>(0x1000);  // stands in for a device function
  const bool store =
      cufftXtSetCallback(plan, &store_routine, CUFFT_CB_ST_COMPLEX, nullptr) == CUFFT_SUCCESS;
  if (store) FFT_CHECK(cufftXtSetCallbackSharedSize(plan, CUFFT_CB_ST_COMPLEX, 1024));

  FFT_CHECK(cufftExecC2C(plan, data, data, CUFFT_FORWARD));
  if (store) FFT_CHECK(cufftXtClearCallback(plan, CUFFT_CB_ST_COMPLEX));
  FFT_CHECK(cufftExecC2C(plan, data, data, CUFFT_INVERSE));
  if (lto && made == CUFFT_SUCCESS) FFT_CHECK(cufftXtClearCallback(plan, CUFFT_CB_LD_COMPLEX));
  FFT_CHECK(cufftExecC2C(plan, data, data, CUFFT_FORWARD));
  EMU_CHECK(cudaDeviceSynchronize());
  std::printf(
      "cufft_callbacks: patient JIT read back and reset, LTO load callback %s, store callback "
      "%s, late LTO callback refused (%s)\n",
      lto && made == CUFFT_SUCCESS ? "installed" : "refused", store ? "installed" : "refused",
      late_lto_refused ? "yes" : "no");
  FFT_CHECK(cufftDestroy(plan));
  EMU_CHECK(cudaFree(data));
  return 0;
}
