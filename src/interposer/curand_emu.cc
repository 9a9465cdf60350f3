// cuRAND's host API on the emulated devices. A device generator's curandGenerate* is recorded as
// a kernel named curand_<distribution>_<dtype> on the generator's stream, sized so that the
// memory-bound kernel estimate moves the output's bytes (256 threads per block, 16 bytes per
// thread), after a `curand` record with the exact call (count, distribution, parameters).
// Numbers are really generated (std::mt19937_64 from the seed) where the output is real memory —
// host generators, and device outputs up to the backed limit — so programs that check their
// statistics pass; they are not cuRAND's sequences.
#include <curand.h>
#include <curand_discrete.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "interposer/cudart_impl.h"
#include "interposer/cudart_internal.h"
#include "interposer/trace_schema.h"

namespace trace_schema = powertrain::trace_schema;

namespace powertrain::emu::detail {
namespace {

struct Generator {
  curandRngType_t type = CURAND_RNG_PSEUDO_DEFAULT;
  bool host = false;
  unsigned long long seed = 0;
  unsigned long long offset = 0;
  cudaStream_t stream = nullptr;
  std::mt19937_64 engine;
  bool seeded = false;
  bool live = true;
};

struct RandState {
  std::mutex mutex;
  std::unordered_set<Generator*> generators;
};

RandState& rand_state() {
  static RandState* s = new RandState;  // never destroyed
  return *s;
}

// The live generator behind a handle, or nullptr (caller reports NOT_INITIALIZED).
Generator* live_generator(curandGenerator_t handle) {
  auto* g = reinterpret_cast<Generator*>(handle);
  std::lock_guard<std::mutex> lock(rand_state().mutex);
  return rand_state().generators.count(g) > 0 && g->live ? g : nullptr;
}

bool valid_type(curandRngType_t type) {
  switch (type) {
    case CURAND_RNG_PSEUDO_DEFAULT:
    case CURAND_RNG_PSEUDO_XORWOW:
    case CURAND_RNG_PSEUDO_MRG32K3A:
    case CURAND_RNG_PSEUDO_MTGP32:
    case CURAND_RNG_PSEUDO_MT19937:
    case CURAND_RNG_PSEUDO_PHILOX4_32_10:
    case CURAND_RNG_QUASI_DEFAULT:
    case CURAND_RNG_QUASI_SOBOL32:
    case CURAND_RNG_QUASI_SCRAMBLED_SOBOL32:
    case CURAND_RNG_QUASI_SOBOL64:
    case CURAND_RNG_QUASI_SCRAMBLED_SOBOL64:
      return true;
    default:
      return false;
  }
}

curandStatus_t create(curandGenerator_t* out, curandRngType_t type, bool host, const char* api) {
  if (out == nullptr) {
    report_misuse(api, "generator is NULL");
    return CURAND_STATUS_NOT_INITIALIZED;
  }
  if (!valid_type(type)) {
    report_misuse(api, "unknown generator type " + std::to_string(type));
    return CURAND_STATUS_TYPE_ERROR;
  }
  auto* g = new Generator;  // never freed: a destroyed handle stays recognisable
  g->type = type;
  g->host = host;
  {
    std::lock_guard<std::mutex> lock(rand_state().mutex);
    rand_state().generators.insert(g);
  }
  *out = reinterpret_cast<curandGenerator_t>(g);
  return CURAND_STATUS_SUCCESS;
}

curandStatus_t bad_generator(const char* api, curandGenerator_t handle) {
  report_misuse(api, "invalid or destroyed generator " + pointer_text(handle));
  return CURAND_STATUS_NOT_INITIALIZED;
}

enum class Distribution { kBits32, kBits64, kUniform, kNormal, kLogNormal, kPoisson };

const char* distribution_name(Distribution d) {
  switch (d) {
    case Distribution::kBits32:
      return "bits";
    case Distribution::kBits64:
      return "bits64";
    case Distribution::kUniform:
      return "uniform";
    case Distribution::kNormal:
      return "normal";
    case Distribution::kLogNormal:
      return "lognormal";
    case Distribution::kPoisson:
      return "poisson";
  }
  return "?";
}

struct Request {
  Distribution distribution = Distribution::kUniform;
  const char* dtype = "float32";
  std::size_t element_bytes = 4;
  double a = 0.0, b = 1.0;  // mean/stddev (normal, lognormal) or lambda (poisson, in a)
};

// Fills `n` values at `out` (real memory) like the distribution asks.
void fill(Generator& g, const Request& r, void* out, std::size_t n) {
  if (!g.seeded) {
    g.engine.seed(g.seed);
    g.engine.discard(g.offset);
    g.seeded = true;
  }
  auto& e = g.engine;
  std::uniform_real_distribution<double> uniform(0.0, 1.0);
  std::normal_distribution<double> normal(r.a, r.b);
  std::lognormal_distribution<double> lognormal(r.a, r.b);
  std::poisson_distribution<unsigned> poisson(r.a > 0 ? r.a : 1.0);
  for (std::size_t i = 0; i < n; ++i) {
    switch (r.distribution) {
      case Distribution::kBits32:
        static_cast<std::uint32_t*>(out)[i] = static_cast<std::uint32_t>(e());
        break;
      case Distribution::kBits64:
        static_cast<std::uint64_t*>(out)[i] = e();
        break;
      case Distribution::kPoisson:
        static_cast<unsigned*>(out)[i] = poisson(e);
        break;
      default: {
        double v = r.distribution == Distribution::kUniform  ? 1.0 - uniform(e)  // (0, 1]
                   : r.distribution == Distribution::kNormal ? normal(e)
                                                             : lognormal(e);
        if (r.element_bytes == 8) {
          static_cast<double*>(out)[i] = v;
        } else {
          static_cast<float*>(out)[i] = static_cast<float>(v);
        }
      }
    }
  }
}

curandStatus_t generate(curandGenerator_t handle, void* out, std::size_t n, const Request& r,
                        const char* api) {
  const std::int64_t start = now_ns();
  Generator* g = live_generator(handle);
  if (g == nullptr) return bad_generator(api, handle);
  if (out == nullptr) {
    report_misuse(api, "output pointer is NULL");
    return CURAND_STATUS_LAUNCH_FAILURE;
  }
  // Normal distributions come in pairs (Box-Muller) for pseudo-random generators.
  const bool quasi = g->type >= CURAND_RNG_QUASI_DEFAULT;
  if (!quasi && n % 2 != 0 &&
      (r.distribution == Distribution::kNormal || r.distribution == Distribution::kLogNormal)) {
    report_misuse(api, "normal distributions need an even count, got " + std::to_string(n));
    return CURAND_STATUS_LENGTH_NOT_MULTIPLE;
  }
  const std::size_t bytes = n * r.element_bytes;
  if (g->host) {
    fill(*g, r, out, n);
    return CURAND_STATUS_SUCCESS;
  }
  const PointerInfo info = lookup_pointer(out);
  if (!info.known || !info.device_side || info.available < bytes) {
    report_misuse(api, pointer_text(out) + " is not device memory with room for " +
                           std::to_string(bytes) + " bytes");
    return CURAND_STATUS_LAUNCH_FAILURE;
  }
  StreamRef ref;
  if (!stream_or_fail(g->stream, false, api, &ref)) return CURAND_STATUS_LAUNCH_FAILURE;
  if (info.backed) fill(*g, r, out, n);

  auto call = begin_record(trace_schema::op::kCurand, start, ref.device);
  call.field(trace_schema::field::kApi, std::string_view(api));
  call.field("distribution", std::string_view(distribution_name(r.distribution)));
  call.field(trace_schema::field::kDtype, std::string_view(r.dtype));
  call.field(trace_schema::field::kCount, static_cast<std::int64_t>(n));
  call.field("generator", static_cast<std::int64_t>(g->type));
  if (r.distribution == Distribution::kNormal || r.distribution == Distribution::kLogNormal) {
    call.field("mean", r.a);
    call.field("stddev", r.b);
  } else if (r.distribution == Distribution::kPoisson) {
    call.field("lambda", r.a);
  }
  call.field(trace_schema::field::kStream, ref.id);
  end_record(call);

  const std::string name =
      std::string("curand_") + distribution_name(r.distribution) + "_" + r.dtype;
  if (!append_sized_kernel(name, bytes, g->stream, api, start)) {
    return CURAND_STATUS_LAUNCH_FAILURE;
  }
  g->offset += n;
  return CURAND_STATUS_SUCCESS;
}

}  // namespace
}  // namespace powertrain::emu::detail

namespace detail = powertrain::emu::detail;

PT_EXPORT curandStatus_t curandCreateGenerator(curandGenerator_t* generator,
                                               curandRngType_t rng_type) {
  return detail::create(generator, rng_type, false, "curandCreateGenerator");
}

PT_EXPORT curandStatus_t curandCreateGeneratorHost(curandGenerator_t* generator,
                                                   curandRngType_t rng_type) {
  return detail::create(generator, rng_type, true, "curandCreateGeneratorHost");
}

PT_EXPORT curandStatus_t curandDestroyGenerator(curandGenerator_t generator) {
  detail::Generator* g = detail::live_generator(generator);
  if (g == nullptr) return detail::bad_generator("curandDestroyGenerator", generator);
  std::lock_guard<std::mutex> lock(detail::rand_state().mutex);
  g->live = false;
  return CURAND_STATUS_SUCCESS;
}

PT_EXPORT curandStatus_t curandGetVersion(int* version) {
  if (version == nullptr) return CURAND_STATUS_OUT_OF_RANGE;
  *version = CURAND_VERSION;
  return CURAND_STATUS_SUCCESS;
}

PT_EXPORT curandStatus_t curandGetProperty(libraryPropertyType type, int* value) {
  if (value == nullptr) return CURAND_STATUS_OUT_OF_RANGE;
  switch (type) {
    case MAJOR_VERSION:
      *value = CURAND_VER_MAJOR;
      return CURAND_STATUS_SUCCESS;
    case MINOR_VERSION:
      *value = CURAND_VER_MINOR;
      return CURAND_STATUS_SUCCESS;
    case PATCH_LEVEL:
      *value = CURAND_VER_PATCH;
      return CURAND_STATUS_SUCCESS;
    default:
      return CURAND_STATUS_OUT_OF_RANGE;
  }
}

PT_EXPORT curandStatus_t curandSetStream(curandGenerator_t generator, cudaStream_t stream) {
  const char* api = "curandSetStream";
  detail::Generator* g = detail::live_generator(generator);
  if (g == nullptr) return detail::bad_generator(api, generator);
  detail::StreamRef ref;
  if (!detail::stream_or_fail(stream, false, api, &ref)) return CURAND_STATUS_OUT_OF_RANGE;
  g->stream = stream;
  return CURAND_STATUS_SUCCESS;
}

PT_EXPORT curandStatus_t curandSetPseudoRandomGeneratorSeed(curandGenerator_t generator,
                                                            unsigned long long seed) {
  const char* api = "curandSetPseudoRandomGeneratorSeed";
  detail::Generator* g = detail::live_generator(generator);
  if (g == nullptr) return detail::bad_generator(api, generator);
  if (g->type >= CURAND_RNG_QUASI_DEFAULT) return CURAND_STATUS_TYPE_ERROR;
  g->seed = seed;
  g->seeded = false;
  return CURAND_STATUS_SUCCESS;
}

PT_EXPORT curandStatus_t curandSetGeneratorOffset(curandGenerator_t generator,
                                                  unsigned long long offset) {
  detail::Generator* g = detail::live_generator(generator);
  if (g == nullptr) return detail::bad_generator("curandSetGeneratorOffset", generator);
  g->offset = offset;
  g->seeded = false;
  return CURAND_STATUS_SUCCESS;
}

PT_EXPORT curandStatus_t curandSetGeneratorOrdering(curandGenerator_t generator,
                                                    curandOrdering_t order) {
  (void)order;  // the order of the sequence does not change what is recorded
  detail::Generator* g = detail::live_generator(generator);
  if (g == nullptr) return detail::bad_generator("curandSetGeneratorOrdering", generator);
  return CURAND_STATUS_SUCCESS;
}

PT_EXPORT curandStatus_t curandSetQuasiRandomGeneratorDimensions(curandGenerator_t generator,
                                                                 unsigned int dimensions) {
  detail::Generator* g = detail::live_generator(generator);
  if (g == nullptr) {
    return detail::bad_generator("curandSetQuasiRandomGeneratorDimensions", generator);
  }
  if (g->type < CURAND_RNG_QUASI_DEFAULT) return CURAND_STATUS_TYPE_ERROR;
  if (dimensions == 0 || dimensions > 20000) return CURAND_STATUS_OUT_OF_RANGE;
  return CURAND_STATUS_SUCCESS;
}

PT_EXPORT curandStatus_t curandGenerateSeeds(curandGenerator_t generator) {
  detail::Generator* g = detail::live_generator(generator);
  if (g == nullptr) return detail::bad_generator("curandGenerateSeeds", generator);
  return CURAND_STATUS_SUCCESS;
}

namespace {
detail::Request request(detail::Distribution d, const char* dtype, std::size_t bytes,
                        double a = 0.0, double b = 1.0) {
  detail::Request r;
  r.distribution = d;
  r.dtype = dtype;
  r.element_bytes = bytes;
  r.a = a;
  r.b = b;
  return r;
}
}  // namespace

PT_EXPORT curandStatus_t curandGenerate(curandGenerator_t generator, unsigned int* out, size_t n) {
  return detail::generate(generator, out, n, request(detail::Distribution::kBits32, "uint32", 4),
                          "curandGenerate");
}

PT_EXPORT curandStatus_t curandGenerateLongLong(curandGenerator_t generator,
                                                unsigned long long* out, size_t n) {
  return detail::generate(generator, out, n, request(detail::Distribution::kBits64, "uint64", 8),
                          "curandGenerateLongLong");
}

PT_EXPORT curandStatus_t curandGenerateUniform(curandGenerator_t generator, float* out, size_t n) {
  return detail::generate(generator, out, n, request(detail::Distribution::kUniform, "float32", 4),
                          "curandGenerateUniform");
}

PT_EXPORT curandStatus_t curandGenerateUniformDouble(curandGenerator_t generator, double* out,
                                                     size_t n) {
  return detail::generate(generator, out, n, request(detail::Distribution::kUniform, "float64", 8),
                          "curandGenerateUniformDouble");
}

PT_EXPORT curandStatus_t curandGenerateNormal(curandGenerator_t generator, float* out, size_t n,
                                              float mean, float stddev) {
  return detail::generate(generator, out, n,
                          request(detail::Distribution::kNormal, "float32", 4, mean, stddev),
                          "curandGenerateNormal");
}

PT_EXPORT curandStatus_t curandGenerateNormalDouble(curandGenerator_t generator, double* out,
                                                    size_t n, double mean, double stddev) {
  return detail::generate(generator, out, n,
                          request(detail::Distribution::kNormal, "float64", 8, mean, stddev),
                          "curandGenerateNormalDouble");
}

PT_EXPORT curandStatus_t curandGenerateLogNormal(curandGenerator_t generator, float* out, size_t n,
                                                 float mean, float stddev) {
  return detail::generate(generator, out, n,
                          request(detail::Distribution::kLogNormal, "float32", 4, mean, stddev),
                          "curandGenerateLogNormal");
}

PT_EXPORT curandStatus_t curandGenerateLogNormalDouble(curandGenerator_t generator, double* out,
                                                       size_t n, double mean, double stddev) {
  return detail::generate(generator, out, n,
                          request(detail::Distribution::kLogNormal, "float64", 8, mean, stddev),
                          "curandGenerateLogNormalDouble");
}

PT_EXPORT curandStatus_t curandGeneratePoisson(curandGenerator_t generator, unsigned int* out,
                                               size_t n, double lambda) {
  if (lambda <= 0.0) return CURAND_STATUS_OUT_OF_RANGE;
  return detail::generate(generator, out, n,
                          request(detail::Distribution::kPoisson, "uint32", 4, lambda),
                          "curandGeneratePoisson");
}

// ---- Poisson histograms, direction vectors and scramble constants ------------------------------
// curandCreatePoissonDistribution builds cuRAND's discrete-distribution structure in device
// memory (the structure and, for λ ≤ 2000, its histogram of λ + 10√λ + 16 entries — the normal
// approximation above needs none), filling the host-readable fields (mean, stddev) where backed;
// the histogram's values are not computed. The quasirandom tables are computed here, not read from
// cuRAND: dimension d ≥ 2 uses the d−1-th primitive polynomial over GF(2) in order of degree with
// unit initial direction numbers (a valid Sobol' construction, not Joe and Kuo's numbers, so
// sequences differ from cuRAND's); the scrambled sets apply a fixed random lower-triangular
// binary matrix per dimension (Owen's linear scramble), and the scramble constants are fixed
// pseudo-random words. 20,000 dimensions, as cuRAND provides.
namespace {
constexpr int kSobolDimensions = 20000;

// The degree of a GF(2) polynomial held as bits (bit i: the coefficient of x^i).
int degree(std::uint32_t p) { return 31 - __builtin_clz(p); }

// a·b mod p over GF(2), deg p ≤ 24.
std::uint32_t mul_mod(std::uint32_t a, std::uint32_t b, std::uint32_t p) {
  const int d = degree(p);
  std::uint32_t r = 0;
  while (b != 0) {
    if (b & 1u) r ^= a;
    b >>= 1;
    a <<= 1;
    if (a & (1u << d)) a ^= p;
  }
  return r;
}

std::uint32_t pow_mod(std::uint32_t base, std::uint64_t e, std::uint32_t p) {
  std::uint32_t r = 1;
  while (e != 0) {
    if (e & 1u) r = mul_mod(r, base, p);
    base = mul_mod(base, base, p);
    e >>= 1;
  }
  return r;
}

// Primitive: x has multiplicative order 2^d − 1 modulo p (which implies p is irreducible).
bool primitive(std::uint32_t p) {
  const int d = degree(p);
  if ((p & 1u) == 0) return false;
  const std::uint64_t order = (std::uint64_t{1} << d) - 1;
  if (pow_mod(2u, order, p) != 1u) return false;
  std::uint64_t rest = order;
  for (std::uint64_t q = 2; q * q <= rest; ++q) {
    if (rest % q != 0) continue;
    if (pow_mod(2u, order / q, p) == 1u) return false;
    while (rest % q == 0) rest /= q;
  }
  return rest <= 1 || pow_mod(2u, order / rest, p) != 1u;
}

template <typename Word>
const std::vector<Word>& sobol_table(bool scrambled) {
  static std::once_flag once[2];
  static std::vector<Word> tables[2];
  std::call_once(once[scrambled ? 1 : 0], [&] {
    constexpr int kBits = static_cast<int>(sizeof(Word) * 8);
    std::vector<Word>& v = tables[scrambled ? 1 : 0];
    v.assign(static_cast<std::size_t>(kSobolDimensions) * kBits, 0);
    for (int k = 0; k < kBits; ++k) v[static_cast<std::size_t>(k)] = Word{1} << (kBits - 1 - k);
    std::uint32_t poly = 2;  // x: the search starts at degree 1
    for (int dim = 1; dim < kSobolDimensions; ++dim) {
      do ++poly;
      while (!primitive(poly));
      const int s = degree(poly);
      std::vector<Word> m(static_cast<std::size_t>(kBits), 0);
      for (int k = 0; k < kBits; ++k) {
        if (k < s) {
          m[static_cast<std::size_t>(k)] = 1;  // unit initial direction numbers
          continue;
        }
        Word value = m[static_cast<std::size_t>(k - s)] ^ (m[static_cast<std::size_t>(k - s)] << s);
        for (int i = 1; i < s; ++i) {
          if ((poly >> (s - i)) & 1u) value ^= m[static_cast<std::size_t>(k - i)] << i;
        }
        m[static_cast<std::size_t>(k)] = value;
      }
      Word* out = &v[static_cast<std::size_t>(dim) * kBits];
      for (int k = 0; k < kBits; ++k) out[k] = m[static_cast<std::size_t>(k)] << (kBits - 1 - k);
    }
    if (!scrambled) return;
    std::mt19937_64 engine(0x5EED5C4A4B1EULL);  // fixed: the same tables in every run
    for (int dim = 0; dim < kSobolDimensions; ++dim) {
      // Row r of L (bit kBits−1−r of the result) has its diagonal and random bits above it.
      std::vector<Word> rows(static_cast<std::size_t>(kBits));
      for (int r = 0; r < kBits; ++r) {
        const Word above = r == 0 ? 0 : static_cast<Word>(engine()) & ~((~Word{0}) >> r);
        rows[static_cast<std::size_t>(r)] = above | (Word{1} << (kBits - 1 - r));
      }
      Word* out = &v[static_cast<std::size_t>(dim) * kBits];
      for (int k = 0; k < kBits; ++k) {
        Word scrambled_word = 0;
        for (int r = 0; r < kBits; ++r) {
          if (__builtin_parityll(
                  static_cast<unsigned long long>(rows[static_cast<std::size_t>(r)] & out[k])))
            scrambled_word |= Word{1} << (kBits - 1 - r);
        }
        out[k] = scrambled_word;
      }
    }
  });
  return tables[scrambled ? 1 : 0];
}

template <typename Word>
const std::vector<Word>& scramble_constants() {
  static std::once_flag once;
  static std::vector<Word> constants;
  std::call_once(once, [] {
    std::mt19937_64 engine(0xC0FFEE5C4A4B1EULL);
    constants.resize(kSobolDimensions);
    for (Word& c : constants) c = static_cast<Word>(engine());
  });
  return constants;
}
}  // namespace

PT_EXPORT curandStatus_t curandGetDirectionVectors32(curandDirectionVectors32_t* vectors[],
                                                     curandDirectionVectorSet_t set) {
  if (vectors == nullptr) return CURAND_STATUS_OUT_OF_RANGE;
  if (set != CURAND_DIRECTION_VECTORS_32_JOEKUO6 &&
      set != CURAND_SCRAMBLED_DIRECTION_VECTORS_32_JOEKUO6)
    return CURAND_STATUS_OUT_OF_RANGE;
  const auto& table =
      sobol_table<std::uint32_t>(set == CURAND_SCRAMBLED_DIRECTION_VECTORS_32_JOEKUO6);
  *vectors =
      reinterpret_cast<curandDirectionVectors32_t*>(const_cast<std::uint32_t*>(table.data()));
  return CURAND_STATUS_SUCCESS;
}

PT_EXPORT curandStatus_t curandGetDirectionVectors64(curandDirectionVectors64_t* vectors[],
                                                     curandDirectionVectorSet_t set) {
  if (vectors == nullptr) return CURAND_STATUS_OUT_OF_RANGE;
  if (set != CURAND_DIRECTION_VECTORS_64_JOEKUO6 &&
      set != CURAND_SCRAMBLED_DIRECTION_VECTORS_64_JOEKUO6)
    return CURAND_STATUS_OUT_OF_RANGE;
  const auto& table =
      sobol_table<unsigned long long>(set == CURAND_SCRAMBLED_DIRECTION_VECTORS_64_JOEKUO6);
  *vectors =
      reinterpret_cast<curandDirectionVectors64_t*>(const_cast<unsigned long long*>(table.data()));
  return CURAND_STATUS_SUCCESS;
}

PT_EXPORT curandStatus_t curandGetScrambleConstants32(unsigned int** constants) {
  if (constants == nullptr) return CURAND_STATUS_OUT_OF_RANGE;
  *constants = const_cast<unsigned int*>(scramble_constants<unsigned int>().data());
  return CURAND_STATUS_SUCCESS;
}

PT_EXPORT curandStatus_t curandGetScrambleConstants64(unsigned long long** constants) {
  if (constants == nullptr) return CURAND_STATUS_OUT_OF_RANGE;
  *constants = const_cast<unsigned long long*>(scramble_constants<unsigned long long>().data());
  return CURAND_STATUS_SUCCESS;
}

namespace {
struct PoissonAllocation {
  void* structure = nullptr;
  void* histogram = nullptr;
};
std::mutex& poisson_mutex() {
  static auto* m = new std::mutex;
  return *m;
}
std::unordered_map<const void*, PoissonAllocation>& poisson_distributions() {
  static auto* d = new std::unordered_map<const void*, PoissonAllocation>;
  return *d;
}
}  // namespace

PT_EXPORT curandStatus_t
curandCreatePoissonDistribution(double lambda, curandDiscreteDistribution_t* distribution) {
  const char* api = "curandCreatePoissonDistribution";
  if (distribution == nullptr) return CURAND_STATUS_NOT_INITIALIZED;
  if (!(lambda > 0.0) || lambda > 400000.0) return CURAND_STATUS_OUT_OF_RANGE;
  PoissonAllocation a;
  if (powertrain::emu::allocate_device_memory(&a.structure, sizeof(curandDiscreteDistribution_st),
                                              api) != 0)
    return CURAND_STATUS_ALLOCATION_FAILED;
  if (lambda <= 2000.0) {
    const auto entries = static_cast<std::size_t>(lambda + 10.0 * std::sqrt(lambda) + 16.0);
    // The M2 histogram: a probability (double) and an alias index (unsigned) per entry.
    if (powertrain::emu::allocate_device_memory(
            &a.histogram, entries * (sizeof(double) + sizeof(unsigned)), api) != 0) {
      powertrain::emu::free_device_memory(a.structure, api);
      return CURAND_STATUS_ALLOCATION_FAILED;
    }
  }
  const detail::PointerInfo info = detail::lookup_pointer(a.structure);
  if (info.backed) {
    curandDiscreteDistribution_st fields{};
    fields.self_host_ptr = static_cast<curandDiscreteDistribution_t>(a.structure);
    fields.mean = lambda;
    fields.stddev = std::sqrt(lambda);
    fields.method = lambda <= 2000.0 ? CURAND_M2 : CURAND_DISCRETE_GAUSS;
    std::memcpy(a.structure, &fields, sizeof(fields));
  }
  {
    std::lock_guard<std::mutex> lock(poisson_mutex());
    poisson_distributions()[a.structure] = a;
  }
  *distribution = static_cast<curandDiscreteDistribution_t>(a.structure);
  return CURAND_STATUS_SUCCESS;
}

PT_EXPORT curandStatus_t curandDestroyDistribution(curandDiscreteDistribution_t distribution) {
  const char* api = "curandDestroyDistribution";
  PoissonAllocation a;
  {
    std::lock_guard<std::mutex> lock(poisson_mutex());
    const auto it = poisson_distributions().find(distribution);
    if (it == poisson_distributions().end()) return CURAND_STATUS_NOT_INITIALIZED;
    a = it->second;
    poisson_distributions().erase(it);
  }
  if (a.histogram != nullptr) powertrain::emu::free_device_memory(a.histogram, api);
  powertrain::emu::free_device_memory(a.structure, api);
  return CURAND_STATUS_SUCCESS;
}

PT_EXPORT curandStatus_t curandGeneratePoissonMethod(curandGenerator_t generator, unsigned int* out,
                                                     size_t n, double lambda,
                                                     curandMethod_t method) {
  if (method < CURAND_CHOOSE_BEST || method > CURAND_POISSON) return CURAND_STATUS_OUT_OF_RANGE;
  if (lambda <= 0.0) return CURAND_STATUS_OUT_OF_RANGE;
  return detail::generate(generator, out, n,
                          request(detail::Distribution::kPoisson, "uint32", 4, lambda),
                          "curandGeneratePoissonMethod");
}
