// cuRAND's host API on the emulated devices. A device generator's curandGenerate* is recorded as
// a kernel named curand_<distribution>_<dtype> on the generator's stream, sized so that the
// memory-bound kernel estimate moves the output's bytes (256 threads per block, 16 bytes per
// thread), after a `curand` record with the exact call (count, distribution, parameters).
// Numbers are really generated (std::mt19937_64 from the seed) where the output is real memory —
// host generators, and device outputs up to the backed limit — so programs that check their
// statistics pass; they are not cuRAND's sequences.
#include <curand.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <unordered_set>

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
