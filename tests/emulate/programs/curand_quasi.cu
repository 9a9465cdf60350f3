// cuRAND's quasirandom tables and discrete distributions, as the Sobol' and Poisson users of the
// device API (NVIDIA's quasirandomGenerator-style code, curand_poisson) set them up: 32- and
// 64-bit direction vectors (plain and scrambled) and scramble constants, checked for the Sobol'
// structure (vector k of every dimension is an odd direction number over 2^(k+1), and the first
// 2^10 points of each of 10 dimensions, plain and scrambled, fall one per dyadic interval of
// length 2^-10); Poisson
// histograms for a small and a large lambda; a device generator's Poisson numbers by method.
// Valid CUDA: the same binary runs on a real GPU.
#include <curand.h>

#include <cstdio>
#include <vector>

#include "emu_check.h"
#include "rand_check.h"

namespace {

// Vector k of each dimension is m_k / 2^(k+1) with m_k odd: its lowest set bit is bit 31 - k
// (63 - k for 64-bit words).
template <typename Word>
bool direction_numbers(const Word* vectors, int dimensions) {
  constexpr int kBits = sizeof(Word) * 8;
  for (int d = 0; d < dimensions; ++d) {
    for (int k = 0; k < kBits; ++k) {
      const Word v = vectors[d * kBits + k];
      if (((v >> (kBits - 1 - k)) & 1) == 0) return false;
      if (k + 1 < kBits && (v & ((Word{1} << (kBits - 1 - k)) - 1)) != 0) return false;
    }
  }
  return true;
}

// The first 2^10 points (Gray-code order) of a dimension: one in each interval of 2^-10.
bool stratified(const unsigned int* v) {
  std::vector<int> seen(1024, 0);
  unsigned int x = 0;
  for (unsigned int i = 0; i < 1024; ++i) {
    ++seen[x >> 22];
    x ^= v[__builtin_ctz(~i)];
  }
  for (int count : seen) {
    if (count != 1) return false;
  }
  return true;
}

}  // namespace

int main() {
  curandDirectionVectors32_t* v32 = nullptr;
  curandDirectionVectors32_t* s32 = nullptr;
  curandDirectionVectors64_t* v64 = nullptr;
  RAND_CHECK(curandGetDirectionVectors32(&v32, CURAND_DIRECTION_VECTORS_32_JOEKUO6));
  RAND_CHECK(curandGetDirectionVectors32(&s32, CURAND_SCRAMBLED_DIRECTION_VECTORS_32_JOEKUO6));
  RAND_CHECK(curandGetDirectionVectors64(&v64, CURAND_DIRECTION_VECTORS_64_JOEKUO6));
  EMU_REQUIRE(curandGetDirectionVectors32(&v32, CURAND_DIRECTION_VECTORS_64_JOEKUO6) ==
              CURAND_STATUS_OUT_OF_RANGE);
  unsigned int* c32 = nullptr;
  unsigned long long* c64 = nullptr;
  RAND_CHECK(curandGetScrambleConstants32(&c32));
  RAND_CHECK(curandGetScrambleConstants64(&c64));
  // (Scrambled vectors are a linear scramble of these: their low bits are not zero.)
  const bool structure =
      direction_numbers(&v32[0][0], 20000) && direction_numbers(&v64[0][0], 20000);
  int stratified_dimensions = 0;
  for (int d = 0; d < 10; ++d) stratified_dimensions += stratified(v32[d]) && stratified(s32[d]);
  const bool constants = c32[0] != c32[1] && c64[0] != c64[1];

  // Poisson histograms (the large lambda uses the normal approximation), then generated numbers.
  curandDiscreteDistribution_t small = nullptr, large = nullptr;
  RAND_CHECK(curandCreatePoissonDistribution(4.5, &small));
  RAND_CHECK(curandCreatePoissonDistribution(3000.0, &large));
  EMU_REQUIRE(curandCreatePoissonDistribution(-1.0, &small) == CURAND_STATUS_OUT_OF_RANGE);
  curandGenerator_t gen;
  RAND_CHECK(curandCreateGenerator(&gen, CURAND_RNG_PSEUDO_XORWOW));
  RAND_CHECK(curandSetPseudoRandomGeneratorSeed(gen, 42ULL));
  unsigned int* counts;
  EMU_CHECK(cudaMalloc(&counts, 4096 * sizeof(unsigned int)));
  RAND_CHECK(curandGeneratePoissonMethod(gen, counts, 4096, 4.5, CURAND_POISSON));
  EMU_CHECK(cudaDeviceSynchronize());
  RAND_CHECK(curandDestroyDistribution(small));
  RAND_CHECK(curandDestroyDistribution(large));
  EMU_REQUIRE(curandDestroyDistribution(small) == CURAND_STATUS_NOT_INITIALIZED);
  RAND_CHECK(curandDestroyGenerator(gen));
  EMU_CHECK(cudaFree(counts));
  std::printf(
      "curand_quasi: direction vectors structured (%s), %d of 10 dimensions stratified, scramble "
      "constants (%s)\n",
      structure ? "yes" : "no", stratified_dimensions, constants ? "yes" : "no");
  return structure && stratified_dimensions == 10 && constants ? 0 : 1;
}
