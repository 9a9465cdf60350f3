// cuRAND's host API and NVTX ranges as a training loop uses them (dropout masks, profiler
// ranges): a Philox device generator on a stream fills uniform and normal buffers each step
// inside nested NVTX ranges (push/pop, a start/end range, a mark, a named domain); a host
// generator fills host memory. The generated numbers are checked (range and mean), as is the
// odd-length normal request cuRAND refuses.
// Valid CUDA: the same binary runs on a real GPU.
#include <curand.h>
#include <nvtx3/nvToolsExt.h>

#include <vector>

#include "emu_check.h"
#include "rand_check.h"

int main() {
  const size_t n = 1 << 20;
  nvtxRangePushA("setup");
  cudaStream_t stream;
  EMU_CHECK(cudaStreamCreate(&stream));
  float *uniform = nullptr, *normal = nullptr;
  EMU_CHECK(cudaMalloc(&uniform, n * sizeof(float)));
  EMU_CHECK(cudaMalloc(&normal, n * sizeof(float)));
  curandGenerator_t gen;
  RAND_CHECK(curandCreateGenerator(&gen, CURAND_RNG_PSEUDO_PHILOX4_32_10));
  RAND_CHECK(curandSetPseudoRandomGeneratorSeed(gen, 1234ULL));
  RAND_CHECK(curandSetStream(gen, stream));
  nvtxRangePop();

  nvtxDomainHandle_t domain = nvtxDomainCreateA("trainer");
  for (int step = 0; step < 3; ++step) {
    nvtxRangePushA("step");
    nvtxEventAttributes_t attributes = {};
    attributes.version = NVTX_VERSION;
    attributes.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    attributes.messageType = NVTX_MESSAGE_TYPE_ASCII;
    attributes.message.ascii = "dropout";
    nvtxDomainRangePushEx(domain, &attributes);
    RAND_CHECK(curandGenerateUniform(gen, uniform, n));
    RAND_CHECK(curandGenerateNormal(gen, normal, n, 0.0f, 1.0f));
    nvtxDomainRangePop(domain);
    nvtxMarkA("generated");
    const nvtxRangeId_t sync = nvtxRangeStartA("sync");
    EMU_CHECK(cudaStreamSynchronize(stream));
    nvtxRangeEnd(sync);
    nvtxRangePop();
  }
  // cuRAND refuses an odd count of normal numbers from a pseudo-random generator.
  EMU_REQUIRE(curandGenerateNormal(gen, normal, 3, 0.0f, 1.0f) ==
              CURAND_STATUS_LENGTH_NOT_MULTIPLE);

  std::vector<float> host(n);
  EMU_CHECK(cudaMemcpy(host.data(), uniform, n * sizeof(float), cudaMemcpyDeviceToHost));
  double sum = 0.0;
  for (float u : host) {
    EMU_REQUIRE(u > 0.0f && u <= 1.0f);
    sum += u;
  }
  const double mean = sum / n;
  EMU_REQUIRE(mean > 0.49 && mean < 0.51);

  curandGenerator_t host_gen;
  RAND_CHECK(curandCreateGeneratorHost(&host_gen, CURAND_RNG_PSEUDO_DEFAULT));
  RAND_CHECK(curandSetPseudoRandomGeneratorSeed(host_gen, 42ULL));
  std::vector<float> values(1000);
  RAND_CHECK(curandGenerateUniform(host_gen, values.data(), values.size()));
  double host_sum = 0.0;
  for (float u : values) host_sum += u;
  EMU_REQUIRE(host_sum / values.size() > 0.45 && host_sum / values.size() < 0.55);

  RAND_CHECK(curandDestroyGenerator(host_gen));
  RAND_CHECK(curandDestroyGenerator(gen));
  EMU_CHECK(cudaFree(uniform));
  EMU_CHECK(cudaFree(normal));
  EMU_CHECK(cudaStreamDestroy(stream));
  std::printf("curand_nvtx: mean of %zu uniform numbers %.3f\n", n, mean);
  return 0;
}
