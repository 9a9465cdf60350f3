// Multi-GPU cuFFT as NVIDIA's simpleCUFFT_MGPU sample uses it, on 2 GPUs: a plan over both
// (cufftXtSetGPUs, cufftMakePlan1d with a work size per GPU), descriptors from cufftXtMalloc, the
// signal copied in, transformed forward (leaving the shuffled order), copied device to device back
// to natural order, transformed back and copied out; the descriptor's GPUs and sizes are checked
// as the sample prints them, and a host → device → host round trip of the data through a second
// descriptor is checked byte for byte. Valid CUDA (needs 2 GPUs). Written for the emulator's tests.
#include <cufft.h>
#include <cufftXt.h>

#include <cstdio>
#include <vector>

#include "emu_check.h"
#include "library_check.h"

int main() {
  int count = 0;
  EMU_CHECK(cudaGetDeviceCount(&count));
  EMU_REQUIRE(count >= 2);
  int gpus[2] = {0, 1};
  const int n = 1 << 14;
  std::vector<cufftComplex> signal(n);
  for (int i = 0; i < n; ++i) signal[i] = make_cuComplex(static_cast<float>(i % 17), 0.0f);

  cufftHandle plan;
  LIBRARY_CHECK(cufftCreate(&plan));
  LIBRARY_CHECK(cufftXtSetGPUs(plan, 2, gpus));
  size_t work[2] = {0, 0};
  LIBRARY_CHECK(cufftMakePlan1d(plan, n, CUFFT_C2C, 1, work));
  cudaLibXtDesc *data, *natural, *round_trip;
  LIBRARY_CHECK(cufftXtMalloc(plan, &data, CUFFT_XT_FORMAT_INPLACE));
  LIBRARY_CHECK(cufftXtMalloc(plan, &natural, CUFFT_XT_FORMAT_INPLACE));
  LIBRARY_CHECK(cufftXtMalloc(plan, &round_trip, CUFFT_XT_FORMAT_INPLACE));
  LIBRARY_CHECK(cufftXtMemcpy(plan, round_trip, signal.data(), CUFFT_COPY_HOST_TO_DEVICE));
  std::vector<cufftComplex> back(n);
  LIBRARY_CHECK(cufftXtMemcpy(plan, back.data(), round_trip, CUFFT_COPY_DEVICE_TO_HOST));
  for (int i = 0; i < n; ++i) EMU_REQUIRE(back[i].x == signal[i].x && back[i].y == signal[i].y);

  LIBRARY_CHECK(cufftXtMemcpy(plan, data, signal.data(), CUFFT_COPY_HOST_TO_DEVICE));
  LIBRARY_CHECK(cufftXtExecDescriptorC2C(plan, data, data, CUFFT_FORWARD));
  const int after_forward = data->subFormat;
  LIBRARY_CHECK(cufftXtMemcpy(plan, natural, data, CUFFT_COPY_DEVICE_TO_DEVICE));
  LIBRARY_CHECK(cufftXtExecDescriptorC2C(plan, natural, natural, CUFFT_INVERSE));
  LIBRARY_CHECK(cufftXtMemcpy(plan, back.data(), natural, CUFFT_COPY_DEVICE_TO_HOST));
  // A multi-GPU plan is executed through descriptors only.
  const cufftResult plain = cufftExecC2C(plan, nullptr, nullptr, CUFFT_FORWARD);
  EMU_REQUIRE(plain != CUFFT_SUCCESS);

  std::printf(
      "cufft_mgpu: GPUs %d %d, sizes %ld %ld elements, work %zu %zu bytes, forward leaves "
      "subformat %d, plain exec -> %d\n",
      natural->descriptor->GPUs[0], natural->descriptor->GPUs[1],
      static_cast<long>(natural->descriptor->size[0] / sizeof(cufftComplex)),
      static_cast<long>(natural->descriptor->size[1] / sizeof(cufftComplex)), work[0], work[1],
      after_forward, static_cast<int>(plain));
  LIBRARY_CHECK(cufftXtFree(data));
  LIBRARY_CHECK(cufftXtFree(natural));
  LIBRARY_CHECK(cufftXtFree(round_trip));
  LIBRARY_CHECK(cufftDestroy(plan));
  return 0;
}
