// cuFFTW (libcufftw.so: the FFTW3 interface on the GPU) on the emulated devices. The real library
// carries its own static CUDA runtime, so its work never reaches the emulated runtime: without
// these definitions a cuFFTW program stops inside its first plan (the static runtime asks the
// driver for its private export tables). Every fftw_* and fftwf_* function libcufftw exports is
// defined here, over the emulated cuFFT (cufft_emu.cc):
//   - a plan (basic, advanced "many" and guru/guru64 interfaces; C2C, R2C, C2R; rank 1–3 as
//     cuFFTW allows; any number of batch dimensions, strides in elements) keeps its layout and
//     makes an emulated cuFFT plan of the same shape (rank, n, batch = product of the batch
//     dimensions, packed), so the work area is allocated and recorded as cuFFT's would be;
//   - an execution does what cuFFTW does with host arrays: the input is copied to device memory
//     (cudaMemcpy, timed as a PCIe transfer), the transform runs (an `fft` record and its sized
//     kernel, cufft_emu.cc's model), and the output is copied back. Arrays already in device
//     memory (cuFFTW accepts them) are used in place, without the copies. The device buffers for
//     host arrays are allocated at the first execution that needs them and freed by
//     fftw_destroy_plan;
//   - the result is computed on the host (Eigen's FFT module, a kissfft derivative, in the
//     plan's precision) when both arrays are readable here (host memory or backed device memory)
//     and the transform is small enough (below), so a program that checks its spectrum or
//     round-trips its data sees the right numbers. Larger transforms are recorded, not computed:
//     their output is left as it was, and an `assumption` record (a warning) says so.
// FFTW's conventions: FFTW_FORWARD is e^{-2πi jk/n}, FFTW_BACKWARD e^{+2πi jk/n}, neither scaled;
// R2C writes the last dimension's n/2+1 non-redundant outputs; C2R reads them and assumes
// Hermitian symmetry. fftw_flops reports the modelled FLOPs (5·N·log2 N per complex transform,
// half for real ones, as cuFFT's records), split evenly into adds and multiplies; fftw_cost
// returns 0 (no measurement); the wisdom functions have no effect (import reports that nothing
// was imported, 0); planner flags are accepted and kept (they change nothing here).
#include <cuda_runtime.h>
#include <cufftw.h>
#include <dlfcn.h>

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unsupported/Eigen/FFT>
#include <utility>
#include <vector>

#include "interposer/cudart_internal.h"

namespace powertrain::emu::fftw_detail {
namespace {

enum class Kind { kC2C, kR2C, kC2R };

struct Dim {
  std::int64_t n = 0;
  std::int64_t in_stride = 0;   // in elements of the input's type (real or complex)
  std::int64_t out_stride = 0;  // in elements of the output's type
};

struct Plan {
  bool double_precision = false;
  Kind kind = Kind::kC2C;
  int sign = FFTW_FORWARD;
  std::vector<Dim> dims;     // the transform's dimensions, slowest first
  std::vector<Dim> batches;  // the batch loops (guru "howmany" dimensions)
  void* in = nullptr;        // the planned arrays (fftw_execute); may be NULL at planning
  void* out = nullptr;
  unsigned flags = 0;
  std::int64_t points = 1;  // points of one transform (product of the dimensions)
  std::int64_t batch = 1;   // transforms per execution (product of the batch dimensions; 0: none)
  cufftHandle cufft = 0;    // the emulated cuFFT plan that records each execution
  // Device buffers standing in for host arrays (ours), made at the first execution that needs
  // them; guarded by State::mutex (FFTW allows concurrent new-array executions of one plan).
  void* device_in = nullptr;
  void* device_out = nullptr;
};

struct State {
  std::mutex mutex;
  std::unordered_map<const void*, Plan*> plans;
};
State& state() {
  static State* s = new State;  // never destroyed
  return *s;
}

// True when this process's fftw_* (or fftwf_*) calls are cuFFTW's: the library behind the
// interposer that defines them is libcufftw, or none does. A program using the CPU FFTW library
// (libfftw3, GROMACS-style codes next to their CUDA work) has its calls passed through unchanged.
bool emulating(bool double_precision) {
  auto decide = [](const char* probe) {
    void* next = ::dlsym(RTLD_NEXT, probe);
    if (next == nullptr) return true;
    Dl_info info{};
    return ::dladdr(next, &info) != 0 && info.dli_fname != nullptr &&
           std::strstr(info.dli_fname, "libcufftw") != nullptr;
  };
  static const bool double_ours = decide("fftw_execute");
  static const bool single_ours = decide("fftwf_execute");
  return double_precision ? double_ours : single_ours;
}

std::int64_t real_bytes(const Plan& p) { return p.double_precision ? 8 : 4; }
std::int64_t in_element_bytes(const Plan& p) {
  return p.kind == Kind::kR2C ? real_bytes(p) : 2 * real_bytes(p);
}
std::int64_t out_element_bytes(const Plan& p) {
  return p.kind == Kind::kC2R ? real_bytes(p) : 2 * real_bytes(p);
}

// Logical shape of one transform's input or output (the complex side of a real transform has
// n/2+1 in the last dimension).
std::vector<std::int64_t> shape(const Plan& p, bool input) {
  std::vector<std::int64_t> s;
  for (const Dim& d : p.dims) s.push_back(d.n);
  const bool half = input ? p.kind == Kind::kC2R : p.kind == Kind::kR2C;
  if (half && !s.empty()) s.back() = s.back() / 2 + 1;
  return s;
}

std::int64_t product(const std::vector<std::int64_t>& v) {
  std::int64_t n = 1;
  for (std::int64_t x : v) n *= x;
  return n;
}

// Logical elements of one side of one transform (the plan's sizes are checked against overflow).
std::int64_t side_elements(const Plan& p, bool input) { return product(shape(p, input)); }

// Visits the offsets (in elements) of a box of `extent` with `stride`, row-major (last fastest),
// one per next(), without storing them.
class Walker {
 public:
  Walker(std::vector<std::int64_t> extent, std::vector<std::int64_t> stride)
      : extent_(std::move(extent)), stride_(std::move(stride)), index_(extent_.size(), 0) {}
  std::int64_t next() {
    const std::int64_t current = offset_;
    for (std::size_t d = extent_.size(); d-- > 0;) {
      ++index_[d];
      offset_ += stride_[d];
      if (index_[d] < extent_[d]) break;
      offset_ -= stride_[d] * extent_[d];
      index_[d] = 0;
    }
    return current;
  }

 private:
  std::vector<std::int64_t> extent_, stride_, index_;
  std::int64_t offset_ = 0;
};

// The walk over one side's logical elements: optionally the batch dimensions (outermost), then
// the transform's dimensions.
Walker walker(const Plan& p, bool input, bool with_batches) {
  std::vector<std::int64_t> extent, stride;
  if (with_batches) {
    for (const Dim& d : p.batches) {
      extent.push_back(d.n);
      stride.push_back(input ? d.in_stride : d.out_stride);
    }
  }
  const std::vector<std::int64_t> s = shape(p, input);
  for (std::size_t i = 0; i < p.dims.size(); ++i) {
    extent.push_back(s[i]);
    stride.push_back(input ? p.dims[i].in_stride : p.dims[i].out_stride);
  }
  return Walker(std::move(extent), std::move(stride));
}

// Each transform's origin, in batch order.
Walker batch_walker(const Plan& p, bool input) {
  std::vector<std::int64_t> extent, stride;
  for (const Dim& d : p.batches) {
    extent.push_back(d.n);
    stride.push_back(input ? d.in_stride : d.out_stride);
  }
  return Walker(std::move(extent), std::move(stride));
}

std::vector<std::int64_t> element_offsets(const Plan& p, bool input) {
  Walker w = walker(p, input, false);
  std::vector<std::int64_t> offsets(static_cast<std::size_t>(side_elements(p, input)));
  for (std::int64_t& o : offsets) o = w.next();
  return offsets;
}

// The bytes one side's layout touches, as [low, high) relative to the array pointer.
std::pair<std::int64_t, std::int64_t> byte_extent(const Plan& p, bool input) {
  std::int64_t low = 0, high = 0;
  auto span = [&](std::int64_t n, std::int64_t stride) {
    if (n <= 1) return;
    (stride >= 0 ? high : low) += (n - 1) * stride;
  };
  for (const Dim& d : p.batches) span(d.n, input ? d.in_stride : d.out_stride);
  const std::vector<std::int64_t> s = shape(p, input);
  for (std::size_t i = 0; i < p.dims.size(); ++i) {
    span(s[i], input ? p.dims[i].in_stride : p.dims[i].out_stride);
  }
  const std::int64_t size = input ? in_element_bytes(p) : out_element_bytes(p);
  return {low * size, (high + 1) * size};
}

// True when one side's logical elements lie packed, in order, from the array pointer.
bool packed(const Plan& p, bool input) {
  std::vector<std::int64_t> extent, stride;
  for (const Dim& d : p.batches) {
    extent.push_back(d.n);
    stride.push_back(input ? d.in_stride : d.out_stride);
  }
  const std::vector<std::int64_t> s = shape(p, input);
  for (std::size_t i = 0; i < p.dims.size(); ++i) {
    extent.push_back(s[i]);
    stride.push_back(input ? p.dims[i].in_stride : p.dims[i].out_stride);
  }
  std::int64_t expected = 1;
  for (std::size_t d = extent.size(); d-- > 0;) {
    if (extent[d] > 1 && stride[d] != expected) return false;
    expected *= extent[d];
  }
  return true;
}

std::int64_t largest_prime_factor(std::int64_t n) {
  std::int64_t largest = 1;
  for (std::int64_t f = 2; f * f <= n; ++f) {
    while (n % f == 0) {
      largest = f;
      n /= f;
    }
  }
  return std::max(largest, n);
}

// Host computation bounds: Eigen's mixed-radix FFT does about n·(log2 n + p) operations per
// line of n points (p its largest prime factor); beyond 2·10^9 in all, or 1 GiB of scratch
// memory, the result is not computed (as cublasXt's host GEMMs stop at 2·10^9 FLOPs), so a huge
// or prime-sized transform can neither stall the emulated program nor exhaust its memory.
constexpr double kComputeLimit = 2e9;
constexpr double kComputeMemoryBytes = 1024.0 * 1024.0 * 1024.0;

double compute_cost(const Plan& p) {
  double per_point = 0;
  for (const Dim& d : p.dims) {
    per_point += std::log2(static_cast<double>(std::max<std::int64_t>(d.n, 2))) +
                 static_cast<double>(largest_prime_factor(d.n));
  }
  return static_cast<double>(p.points) * per_point * static_cast<double>(p.batch);
}

// The input and output byte ranges overlap (in place, or layouts that interleave).
bool overlapping(const Plan& p, const void* in, const void* out) {
  const auto [in_low, in_high] = byte_extent(p, true);
  const auto [out_low, out_high] = byte_extent(p, false);
  const auto a = reinterpret_cast<std::intptr_t>(in), b = reinterpret_cast<std::intptr_t>(out);
  return a + in_low < b + out_high && b + out_low < a + in_high;
}

double compute_memory(const Plan& p, bool overlap) {
  const double complex_bytes = 2.0 * static_cast<double>(real_bytes(p));
  double bytes = static_cast<double>(p.points) * complex_bytes +
                 8.0 * static_cast<double>(side_elements(p, true) + side_elements(p, false));
  if (overlap) {
    bytes += static_cast<double>(side_elements(p, true)) * static_cast<double>(p.batch) *
             static_cast<double>(in_element_bytes(p));
  }
  return bytes;
}

double model_flops(const Plan& p) {
  const double n = static_cast<double>(p.points);
  const double per = (p.kind == Kind::kC2C ? 5.0 : 2.5) * n * std::log2(std::max(n, 2.0));
  return per * static_cast<double>(p.batch);
}

// One transform of the plan's logical shape, in place on `data` (full complex array, row-major):
// 1-D transforms along every dimension longer than 1.
template <typename Real>
void transform(std::vector<std::complex<Real>>& data, const std::vector<std::int64_t>& n,
               bool forward, Eigen::FFT<Real>& fft) {
  std::vector<std::complex<Real>> line, result;
  std::int64_t inner = static_cast<std::int64_t>(data.size());
  for (std::size_t axis = 0; axis < n.size(); ++axis) {
    const std::int64_t len = n[axis];
    inner /= len;
    if (len == 1) continue;  // the identity (and Eigen's kissfft cannot plan it)
    const std::int64_t outer = static_cast<std::int64_t>(data.size()) / (len * inner);
    line.resize(static_cast<std::size_t>(len));
    result.resize(static_cast<std::size_t>(len));
    for (std::int64_t o = 0; o < outer; ++o) {
      for (std::int64_t i = 0; i < inner; ++i) {
        const std::int64_t base = o * len * inner + i;
        for (std::int64_t k = 0; k < len; ++k) line[k] = data[base + k * inner];
        if (forward) {
          fft.fwd(result.data(), line.data(), len);
        } else {
          fft.inv(result.data(), line.data(), len);
        }
        for (std::int64_t k = 0; k < len; ++k) data[base + k * inner] = result[k];
      }
    }
  }
}

// The plan's result computed on the host from `in` into `out` (both readable here, their byte
// ranges disjoint: overlapping inputs are gathered first by the caller).
template <typename Real>
void compute(const Plan& p, const void* in, void* out) {
  using Complex = std::complex<Real>;
  Eigen::FFT<Real> fft;
  fft.SetFlag(Eigen::FFT<Real>::Unscaled);
  std::vector<std::int64_t> n;
  for (const Dim& d : p.dims) n.push_back(d.n);
  const std::int64_t points = p.points;
  const std::int64_t last = n.back(), half_last = last / 2 + 1;
  const std::int64_t rows = points / last;
  const std::vector<std::int64_t> in_off = element_offsets(p, true);
  const std::vector<std::int64_t> out_off = element_offsets(p, false);
  Walker in_batches = batch_walker(p, true), out_batches = batch_walker(p, false);
  std::vector<Complex> data(static_cast<std::size_t>(points));
  for (std::int64_t b = 0; b < p.batch; ++b) {
    const std::int64_t in_origin = in_batches.next(), out_origin = out_batches.next();
    const auto* real_in = static_cast<const Real*>(in) + in_origin;
    const auto* complex_in = static_cast<const Complex*>(in) + in_origin;
    if (p.kind == Kind::kC2R) {
      // Rebuild the full spectrum from its non-redundant half: X[k] = conj(X[-k]).
      for (std::int64_t r = 0; r < rows; ++r) {
        for (std::int64_t j = 0; j < half_last; ++j) {
          data[r * last + j] = complex_in[in_off[r * half_last + j]];
        }
      }
      for (std::int64_t r = 0; r < rows; ++r) {
        std::int64_t mirror = 0, rest = r, scale = 1;  // the row of (-k0, -k1, ...) mod n
        for (std::size_t axis = n.size() - 1; axis-- > 0;) {
          const std::int64_t k = rest % n[axis];
          rest /= n[axis];
          mirror += ((n[axis] - k) % n[axis]) * scale;
          scale *= n[axis];
        }
        for (std::int64_t j = half_last; j < last; ++j) {
          data[r * last + j] = std::conj(complex_in[in_off[mirror * half_last + (last - j)]]);
        }
      }
    } else {
      for (std::int64_t k = 0; k < points; ++k) {
        data[k] = p.kind == Kind::kR2C ? Complex(real_in[in_off[k]], 0) : complex_in[in_off[k]];
      }
    }
    transform(data, n, p.kind == Kind::kR2C || (p.kind == Kind::kC2C && p.sign == FFTW_FORWARD),
              fft);
    auto* real_out = static_cast<Real*>(out) + out_origin;
    auto* complex_out = static_cast<Complex*>(out) + out_origin;
    if (p.kind == Kind::kC2R) {
      for (std::int64_t k = 0; k < points; ++k) real_out[out_off[k]] = data[k].real();
    } else if (p.kind == Kind::kR2C) {
      for (std::int64_t r = 0; r < rows; ++r) {
        for (std::int64_t j = 0; j < half_last; ++j) {
          complex_out[out_off[r * half_last + j]] = data[r * last + j];
        }
      }
    } else {
      for (std::int64_t k = 0; k < points; ++k) complex_out[out_off[k]] = data[k];
    }
  }
}

// Computes the result on the host, gathering an input that overlaps the output first (in-place
// plans whose batches interleave, a transposed output over its input).
void compute_result(const Plan& p, const void* in, void* out) {
  if (!overlapping(p, in, out)) {
    if (p.double_precision) {
      compute<double>(p, in, out);
    } else {
      compute<float>(p, in, out);
    }
    return;
  }
  const std::int64_t size = in_element_bytes(p);
  std::vector<unsigned char> gathered(
      static_cast<std::size_t>(side_elements(p, true) * p.batch * size));
  Walker w = walker(p, true, true);
  const auto* base = static_cast<const unsigned char*>(in);
  for (std::size_t at = 0; at < gathered.size(); at += static_cast<std::size_t>(size)) {
    std::memcpy(gathered.data() + at, base + w.next() * size, static_cast<std::size_t>(size));
  }
  Plan packed_in = p;  // the same transform reading the gathered copy, packed
  const std::vector<std::int64_t> s = shape(p, true);
  std::int64_t stride = 1;
  for (std::size_t i = p.dims.size(); i-- > 0;) {
    packed_in.dims[i].in_stride = stride;
    stride *= s[i];
  }
  for (std::size_t i = p.batches.size(); i-- > 0;) {
    packed_in.batches[i].in_stride = stride;
    stride *= p.batches[i].n;
  }
  if (p.double_precision) {
    compute<double>(packed_in, gathered.data(), out);
  } else {
    compute<float>(packed_in, gathered.data(), out);
  }
}

bool on_device(const void* p) {
  const detail::PointerInfo info = detail::lookup_pointer(p);
  return info.known && info.device_side;
}

const char* kind_name(const Plan& p) {
  switch (p.kind) {
    case Kind::kR2C:
      return p.double_precision ? "D2Z" : "R2C";
    case Kind::kC2R:
      return p.double_precision ? "Z2D" : "C2R";
    case Kind::kC2C:
      break;
  }
  return p.double_precision ? "Z2Z" : "C2C";
}

cufftType cufft_type(const Plan& p) {
  switch (p.kind) {
    case Kind::kR2C:
      return p.double_precision ? CUFFT_D2Z : CUFFT_R2C;
    case Kind::kC2R:
      return p.double_precision ? CUFFT_Z2D : CUFFT_C2R;
    case Kind::kC2C:
      break;
  }
  return p.double_precision ? CUFFT_Z2Z : CUFFT_C2C;
}

// A validated plan, or nullptr after a misuse report (FFTW returns NULL from a failed planner).
void* make_plan(Plan p, const char* api) {
  if (p.dims.empty() || p.dims.size() > 3) {
    report_misuse(api, "rank " + std::to_string(p.dims.size()) +
                           " is not supported (cuFFTW plans transforms of rank 1 to 3)");
    return nullptr;
  }
  // At most 2^48 elements in all, as cuFFT plans them (and no product overflows).
  constexpr std::int64_t kMaxElements = std::int64_t{1} << 48;
  for (const Dim& d : p.dims) {
    if (d.n < 1 || __builtin_mul_overflow(p.points, d.n, &p.points) || p.points > kMaxElements) {
      report_misuse(api, "dimension " + std::to_string(d.n) + " is not a valid size");
      return nullptr;
    }
  }
  for (const Dim& d : p.batches) {
    std::int64_t total = 0;
    if (d.n < 0 || __builtin_mul_overflow(p.batch, d.n, &p.batch) ||
        __builtin_mul_overflow(p.batch, p.points, &total) || total > kMaxElements) {
      report_misuse(api, "batch dimension " + std::to_string(d.n) + " is not a valid size");
      return nullptr;
    }
  }
  if (p.kind == Kind::kC2C && p.sign != FFTW_FORWARD && p.sign != FFTW_BACKWARD) {
    report_misuse(
        api, "sign " + std::to_string(p.sign) + " is not FFTW_FORWARD (-1) or FFTW_BACKWARD (1)");
    return nullptr;
  }
  if (p.batch > 0) {
    // Embeddings given (equal to the sizes) so the emulated cuFFT skips its packed-size check:
    // device arrays with FFTW strides (negative, zero, interleaved) are valid here.
    long long n[3] = {1, 1, 1};
    for (std::size_t i = 0; i < p.dims.size(); ++i) n[i] = p.dims[i].n;
    std::size_t work = 0;
    if (cufftCreate(&p.cufft) != CUFFT_SUCCESS ||
        cufftMakePlanMany64(p.cufft, static_cast<int>(p.dims.size()), n, n, 1, 0, n, 1, 0,
                            cufft_type(p), p.batch, &work) != CUFFT_SUCCESS) {
      if (p.cufft != 0) cufftDestroy(p.cufft);
      report_misuse(api, std::string("the emulated cuFFT could not make a ") + kind_name(p) +
                             " plan of this shape");
      return nullptr;
    }
  }
  auto* plan = new Plan(std::move(p));
  std::lock_guard<std::mutex> lock(state().mutex);
  state().plans[plan] = plan;
  return plan;
}

const Plan* find(const void* handle, const char* api) {
  std::lock_guard<std::mutex> lock(state().mutex);
  const auto it = state().plans.find(handle);
  if (it == state().plans.end()) {
    report_misuse(api, "invalid or destroyed cuFFTW plan " + detail::pointer_text(handle));
    return nullptr;
  }
  return it->second;
}

// The device buffer standing in for one host array of the plan (made once per plan and side).
void* device_buffer(const Plan* plan, bool input, std::int64_t bytes, const char* api) {
  std::lock_guard<std::mutex> lock(state().mutex);
  auto* p = const_cast<Plan*>(plan);
  void** slot = input ? &p->device_in : &p->device_out;
  if (*slot == nullptr && cudaMalloc(slot, static_cast<std::size_t>(bytes)) != cudaSuccess) {
    *slot = nullptr;
    report_misuse(api, "no device memory for the transform's " +
                           std::string(input ? "input" : "output") + " (" + std::to_string(bytes) +
                           " bytes)");
  }
  return *slot;
}

constexpr std::int64_t kChunkBytes = std::int64_t{64} << 20;

// The copy of a host array's logical elements to the device buffer: one cudaMemcpy from the array
// itself when they lie packed; else packed through a bounded staging buffer, chunk by chunk.
void copy_in(const Plan& p, const void* in, void* device, std::int64_t bytes) {
  if (packed(p, true)) {
    cudaMemcpy(device, in, static_cast<std::size_t>(bytes), cudaMemcpyHostToDevice);
    return;
  }
  const std::int64_t size = in_element_bytes(p);
  std::vector<unsigned char> staged(static_cast<std::size_t>(std::min(bytes, kChunkBytes)));
  Walker w = walker(p, true, true);
  const auto* base = static_cast<const unsigned char*>(in);
  for (std::int64_t done = 0; done < bytes;) {
    const std::int64_t chunk = std::min<std::int64_t>(bytes - done, staged.size());
    for (std::int64_t at = 0; at < chunk; at += size) {
      std::memcpy(staged.data() + at, base + w.next() * size, static_cast<std::size_t>(size));
    }
    cudaMemcpy(static_cast<unsigned char*>(device) + done, staged.data(),
               static_cast<std::size_t>(chunk), cudaMemcpyHostToDevice);
    done += chunk;
  }
}

// The copy of the result back, which cuFFTW's execution waits for: into the output array itself
// when it is packed and `direct` (the host result below then replaces the device buffer's
// bytes); else into a bounded scratch buffer, chunk by chunk.
void copy_out(const Plan& p, void* out, const void* device, std::int64_t bytes, bool direct) {
  if (direct && packed(p, false)) {
    cudaMemcpy(out, device, static_cast<std::size_t>(bytes), cudaMemcpyDeviceToHost);
    return;
  }
  std::vector<unsigned char> scratch(static_cast<std::size_t>(std::min(bytes, kChunkBytes)));
  for (std::int64_t done = 0; done < bytes;) {
    const std::int64_t chunk = std::min<std::int64_t>(bytes - done, scratch.size());
    cudaMemcpy(scratch.data(), static_cast<const unsigned char*>(device) + done,
               static_cast<std::size_t>(chunk), cudaMemcpyDeviceToHost);
    done += chunk;
  }
}

void execute(const void* handle, void* in, void* out, Kind expected, bool check_kind,
             const char* api) {
  const Plan* p = find(handle, api);
  if (p == nullptr) return;
  if (check_kind && p->kind != expected) {
    report_misuse(api, std::string("plan is ") + kind_name(*p) + ": this call executes " +
                           (expected == Kind::kC2C   ? "complex-to-complex"
                            : expected == Kind::kR2C ? "real-to-complex"
                                                     : "complex-to-real") +
                           " plans");
    return;
  }
  if (in == nullptr || out == nullptr) {
    report_misuse(api, "the input or output array is NULL");
    return;
  }
  if (p->batch == 0) return;  // a plan of no transforms does nothing
  const bool in_place = in == out;
  const std::int64_t in_bytes = side_elements(*p, true) * p->batch * in_element_bytes(*p);
  const std::int64_t out_bytes = side_elements(*p, false) * p->batch * out_element_bytes(*p);
  const bool in_device = on_device(in), out_device = on_device(out);
  // Device memory is used where it is (cuFFTW accepts it); host arrays go through buffers.
  void* device_in = in;
  void* device_out = out;
  if (!in_device) {
    device_in = device_buffer(p, true, in_place ? std::max(in_bytes, out_bytes) : in_bytes, api);
    if (device_in == nullptr) return;
    copy_in(*p, in, device_in, in_bytes);
  }
  if (in_place && !in_device) {
    device_out = device_in;
  } else if (!out_device) {
    device_out = device_buffer(p, false, out_bytes, api);
    if (device_out == nullptr) return;
  }
  if (detail::cufft_execute_as(p->cufft, device_in, device_out,
                               p->kind == Kind::kC2C ? p->sign : FFTW_FORWARD,
                               api) != CUFFT_SUCCESS) {
    return;  // reported by the cuFFT emulation
  }
  if (!out_device) {
    // Not into the output when it overlaps the input, which the host result still has to read.
    copy_out(*p, out, device_out, out_bytes, !overlapping(*p, in, out));
  } else {
    cudaDeviceSynchronize();  // cuFFTW's execute returns when the transform is done
  }
  if (!detail::host_accessible(in) || !detail::host_accessible(out)) {
    report_assumption(api,
                      "a transform on device memory too large to be backed here is timed "
                      "and recorded, but its output is not computed");
    return;
  }
  if (compute_cost(*p) > kComputeLimit ||
      compute_memory(*p, overlapping(*p, in, out)) > kComputeMemoryBytes) {
    report_assumption(api,
                      "a transform too large to compute on the host (n·(log2 n + largest "
                      "prime factor) above 2e9, or over 1 GiB of scratch) is timed and "
                      "recorded, but its output is not computed");
    return;
  }
  const HostComputeScope host_compute;  // not the program's time
  compute_result(*p, in, out);
}

void destroy(void* handle, const char* api) {
  Plan* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(state().mutex);
    const auto it = state().plans.find(handle);
    if (it != state().plans.end()) {
      p = it->second;
      state().plans.erase(it);
    }
  }
  if (p == nullptr) {
    if (handle != nullptr) {
      report_misuse(api, "invalid or destroyed cuFFTW plan " + detail::pointer_text(handle));
    }
    return;
  }
  if (p->cufft != 0) cufftDestroy(p->cufft);
  if (p->device_in != nullptr) cudaFree(p->device_in);
  if (p->device_out != nullptr) cudaFree(p->device_out);
  delete p;
}

void print_plan(const void* handle, const char* api) {
  const Plan* p = find(handle, api);
  if (p == nullptr) return;
  // Appended piece by piece (GCC 12 warns falsely about `std::string("literal") + ...`).
  std::string text = "(cufftw-emulated ";
  text.append(kind_name(*p));
  if (p->kind == Kind::kC2C) text.append(p->sign == FFTW_FORWARD ? " forward" : " backward");
  text.append(" n");
  for (const Dim& d : p->dims) text.append(" ").append(std::to_string(d.n));
  text.append(" batch ").append(std::to_string(p->batch)).append(")");
  std::fputs(text.c_str(), stdout);
}

void flops(const void* handle, double* add, double* mul, double* fma, const char* api) {
  const Plan* p = find(handle, api);
  const double total = p != nullptr ? model_flops(*p) : 0.0;
  if (add != nullptr) *add = total / 2;
  if (mul != nullptr) *mul = total / 2;
  if (fma != nullptr) *fma = 0;
}

void* aligned_malloc(std::size_t n) {
  if (n > SIZE_MAX - 63) return nullptr;
  return std::aligned_alloc(64, (std::max<std::size_t>(n, 1) + 63) / 64 * 64);
}

// ---- plan builders -------------------------------------------------------------------------

// Basic and advanced interfaces: a packed (or embedded) row-major array, `howmany` of them
// `dist` apart; `embed` the array's allocated shape (NULL: the logical shape).
Plan many(bool double_precision, Kind kind, int rank, const int* n, int howmany, void* in,
          const int* inembed, int istride, int idist, void* out, const int* onembed, int ostride,
          int odist, int sign, unsigned flags) {
  Plan p;
  p.double_precision = double_precision;
  p.kind = kind;
  p.sign = kind == Kind::kR2C ? FFTW_FORWARD : kind == Kind::kC2R ? FFTW_BACKWARD : sign;
  p.in = in;
  p.out = out;
  p.flags = flags;
  if (rank < 1 || n == nullptr) {
    p.dims.clear();
    return p;
  }
  std::vector<std::int64_t> logical(n, n + rank);
  auto side = [&](bool input) {
    std::vector<std::int64_t> s = logical;
    const bool half = input ? kind == Kind::kC2R : kind == Kind::kR2C;
    if (half) s.back() = s.back() / 2 + 1;
    return s;
  };
  std::vector<std::int64_t> in_shape = side(true), out_shape = side(false);
  // In place, the real side's last dimension is padded to hold the complex side (2·(n/2+1)
  // reals), as FFTW lays out in-place real transforms when no embedding is given.
  if (in == out && kind == Kind::kR2C && inembed == nullptr) {
    in_shape.back() = 2 * (logical.back() / 2 + 1);
  }
  if (in == out && kind == Kind::kC2R && onembed == nullptr) {
    out_shape.back() = 2 * (logical.back() / 2 + 1);
  }
  std::vector<std::int64_t> in_stride(rank), out_stride(rank);
  std::int64_t in_step = istride, out_step = ostride;
  for (int i = rank - 1; i >= 0; --i) {
    in_stride[i] = in_step;
    out_stride[i] = out_step;
    in_step *= inembed != nullptr ? inembed[i] : in_shape[i];
    out_step *= onembed != nullptr ? onembed[i] : out_shape[i];
  }
  for (int i = 0; i < rank; ++i) p.dims.push_back({logical[i], in_stride[i], out_stride[i]});
  // FFTW's default distance between transforms is the array's size (in_step/out_step).
  p.batches.push_back({howmany, idist, odist});
  return p;
}

template <typename IoDim>
Plan guru(bool double_precision, Kind kind, int rank, const IoDim* dims, int batch_rank,
          const IoDim* batch_dims, void* in, void* out, int sign, unsigned flags) {
  Plan p;
  p.double_precision = double_precision;
  p.kind = kind;
  p.sign = kind == Kind::kR2C ? FFTW_FORWARD : kind == Kind::kC2R ? FFTW_BACKWARD : sign;
  p.in = in;
  p.out = out;
  p.flags = flags;
  if (rank < 1 || dims == nullptr || batch_rank < 0 || (batch_rank > 0 && batch_dims == nullptr)) {
    return p;  // rank 0: refused by make_plan with its message
  }
  for (int i = 0; i < rank; ++i) p.dims.push_back({dims[i].n, dims[i].is, dims[i].os});
  for (int i = 0; i < batch_rank; ++i) {
    p.batches.push_back({batch_dims[i].n, batch_dims[i].is, batch_dims[i].os});
  }
  return p;
}

}  // namespace
}  // namespace powertrain::emu::fftw_detail

namespace fd = powertrain::emu::fftw_detail;

// Passes a call through to the FFTW library behind the interposer when the process's fftw calls
// are not cuFFTW's (fd::emulating): a program linked with the CPU FFTW library runs as it would.
#define PT_FFTW_PASS(name, D, ...)                                                         \
  if (!fd::emulating(D)) {                                                                 \
    static const auto next = reinterpret_cast<decltype(&name)>(::dlsym(RTLD_NEXT, #name)); \
    if (next != nullptr) return next(__VA_ARGS__);                                         \
  }

// Every entry point of one precision: P is the prefix (fftw / fftwf), R the real type, C the
// complex type, D true for double precision.
#define PT_FFTW_API(P, R, C, D)                                                                   \
  PT_EXPORT P##_plan P##_plan_many_dft(                                                           \
      int rank, const int* n, int batch, C* in, const int* inembed, int istride, int idist,       \
      C* out, const int* onembed, int ostride, int odist, int sign, unsigned flags) {             \
    PT_FFTW_PASS(P##_plan_many_dft, D, rank, n, batch, in, inembed, istride, idist, out, onembed, \
                 ostride, odist, sign, flags);                                                    \
    return fd::make_plan(fd::many(D, fd::Kind::kC2C, rank, n, batch, in, inembed, istride, idist, \
                                  out, onembed, ostride, odist, sign, flags),                     \
                         #P "_plan_many_dft");                                                    \
  }                                                                                               \
  PT_EXPORT P##_plan P##_plan_many_dft_r2c(                                                       \
      int rank, const int* n, int batch, R* in, const int* inembed, int istride, int idist,       \
      C* out, const int* onembed, int ostride, int odist, unsigned flags) {                       \
    PT_FFTW_PASS(P##_plan_many_dft_r2c, D, rank, n, batch, in, inembed, istride, idist, out,      \
                 onembed, ostride, odist, flags);                                                 \
    return fd::make_plan(fd::many(D, fd::Kind::kR2C, rank, n, batch, in, inembed, istride, idist, \
                                  out, onembed, ostride, odist, FFTW_FORWARD, flags),             \
                         #P "_plan_many_dft_r2c");                                                \
  }                                                                                               \
  PT_EXPORT P##_plan P##_plan_many_dft_c2r(                                                       \
      int rank, const int* n, int batch, C* in, const int* inembed, int istride, int idist,       \
      R* out, const int* onembed, int ostride, int odist, unsigned flags) {                       \
    PT_FFTW_PASS(P##_plan_many_dft_c2r, D, rank, n, batch, in, inembed, istride, idist, out,      \
                 onembed, ostride, odist, flags);                                                 \
    return fd::make_plan(fd::many(D, fd::Kind::kC2R, rank, n, batch, in, inembed, istride, idist, \
                                  out, onembed, ostride, odist, FFTW_BACKWARD, flags),            \
                         #P "_plan_many_dft_c2r");                                                \
  }                                                                                               \
  PT_EXPORT P##_plan P##_plan_dft(int rank, const int* n, C* in, C* out, int sign,                \
                                  unsigned flags) {                                               \
    PT_FFTW_PASS(P##_plan_dft, D, rank, n, in, out, sign, flags);                                 \
    return fd::make_plan(fd::many(D, fd::Kind::kC2C, rank, n, 1, in, nullptr, 1, 0, out, nullptr, \
                                  1, 0, sign, flags),                                             \
                         #P "_plan_dft");                                                         \
  }                                                                                               \
  PT_EXPORT P##_plan P##_plan_dft_1d(int n0, C* in, C* out, int sign, unsigned flags) {           \
    PT_FFTW_PASS(P##_plan_dft_1d, D, n0, in, out, sign, flags);                                   \
    const int n[1] = {n0};                                                                        \
    return fd::make_plan(                                                                         \
        fd::many(D, fd::Kind::kC2C, 1, n, 1, in, nullptr, 1, 0, out, nullptr, 1, 0, sign, flags), \
        #P "_plan_dft_1d");                                                                       \
  }                                                                                               \
  PT_EXPORT P##_plan P##_plan_dft_2d(int n0, int n1, C* in, C* out, int sign, unsigned flags) {   \
    PT_FFTW_PASS(P##_plan_dft_2d, D, n0, n1, in, out, sign, flags);                               \
    const int n[2] = {n0, n1};                                                                    \
    return fd::make_plan(                                                                         \
        fd::many(D, fd::Kind::kC2C, 2, n, 1, in, nullptr, 1, 0, out, nullptr, 1, 0, sign, flags), \
        #P "_plan_dft_2d");                                                                       \
  }                                                                                               \
  PT_EXPORT P##_plan P##_plan_dft_3d(int n0, int n1, int n2, C* in, C* out, int sign,             \
                                     unsigned flags) {                                            \
    PT_FFTW_PASS(P##_plan_dft_3d, D, n0, n1, n2, in, out, sign, flags);                           \
    const int n[3] = {n0, n1, n2};                                                                \
    return fd::make_plan(                                                                         \
        fd::many(D, fd::Kind::kC2C, 3, n, 1, in, nullptr, 1, 0, out, nullptr, 1, 0, sign, flags), \
        #P "_plan_dft_3d");                                                                       \
  }                                                                                               \
  PT_EXPORT P##_plan P##_plan_dft_r2c(int rank, const int* n, R* in, C* out, unsigned flags) {    \
    PT_FFTW_PASS(P##_plan_dft_r2c, D, rank, n, in, out, flags);                                   \
    return fd::make_plan(fd::many(D, fd::Kind::kR2C, rank, n, 1, in, nullptr, 1, 0, out, nullptr, \
                                  1, 0, FFTW_FORWARD, flags),                                     \
                         #P "_plan_dft_r2c");                                                     \
  }                                                                                               \
  PT_EXPORT P##_plan P##_plan_dft_r2c_1d(int n0, R* in, C* out, unsigned flags) {                 \
    PT_FFTW_PASS(P##_plan_dft_r2c_1d, D, n0, in, out, flags);                                     \
    const int n[1] = {n0};                                                                        \
    return fd::make_plan(fd::many(D, fd::Kind::kR2C, 1, n, 1, in, nullptr, 1, 0, out, nullptr, 1, \
                                  0, FFTW_FORWARD, flags),                                        \
                         #P "_plan_dft_r2c_1d");                                                  \
  }                                                                                               \
  PT_EXPORT P##_plan P##_plan_dft_r2c_2d(int n0, int n1, R* in, C* out, unsigned flags) {         \
    PT_FFTW_PASS(P##_plan_dft_r2c_2d, D, n0, n1, in, out, flags);                                 \
    const int n[2] = {n0, n1};                                                                    \
    return fd::make_plan(fd::many(D, fd::Kind::kR2C, 2, n, 1, in, nullptr, 1, 0, out, nullptr, 1, \
                                  0, FFTW_FORWARD, flags),                                        \
                         #P "_plan_dft_r2c_2d");                                                  \
  }                                                                                               \
  PT_EXPORT P##_plan P##_plan_dft_r2c_3d(int n0, int n1, int n2, R* in, C* out, unsigned flags) { \
    PT_FFTW_PASS(P##_plan_dft_r2c_3d, D, n0, n1, n2, in, out, flags);                             \
    const int n[3] = {n0, n1, n2};                                                                \
    return fd::make_plan(fd::many(D, fd::Kind::kR2C, 3, n, 1, in, nullptr, 1, 0, out, nullptr, 1, \
                                  0, FFTW_FORWARD, flags),                                        \
                         #P "_plan_dft_r2c_3d");                                                  \
  }                                                                                               \
  PT_EXPORT P##_plan P##_plan_dft_c2r(int rank, const int* n, C* in, R* out, unsigned flags) {    \
    PT_FFTW_PASS(P##_plan_dft_c2r, D, rank, n, in, out, flags);                                   \
    return fd::make_plan(fd::many(D, fd::Kind::kC2R, rank, n, 1, in, nullptr, 1, 0, out, nullptr, \
                                  1, 0, FFTW_BACKWARD, flags),                                    \
                         #P "_plan_dft_c2r");                                                     \
  }                                                                                               \
  PT_EXPORT P##_plan P##_plan_dft_c2r_1d(int n0, C* in, R* out, unsigned flags) {                 \
    PT_FFTW_PASS(P##_plan_dft_c2r_1d, D, n0, in, out, flags);                                     \
    const int n[1] = {n0};                                                                        \
    return fd::make_plan(fd::many(D, fd::Kind::kC2R, 1, n, 1, in, nullptr, 1, 0, out, nullptr, 1, \
                                  0, FFTW_BACKWARD, flags),                                       \
                         #P "_plan_dft_c2r_1d");                                                  \
  }                                                                                               \
  PT_EXPORT P##_plan P##_plan_dft_c2r_2d(int n0, int n1, C* in, R* out, unsigned flags) {         \
    PT_FFTW_PASS(P##_plan_dft_c2r_2d, D, n0, n1, in, out, flags);                                 \
    const int n[2] = {n0, n1};                                                                    \
    return fd::make_plan(fd::many(D, fd::Kind::kC2R, 2, n, 1, in, nullptr, 1, 0, out, nullptr, 1, \
                                  0, FFTW_BACKWARD, flags),                                       \
                         #P "_plan_dft_c2r_2d");                                                  \
  }                                                                                               \
  PT_EXPORT P##_plan P##_plan_dft_c2r_3d(int n0, int n1, int n2, C* in, R* out, unsigned flags) { \
    PT_FFTW_PASS(P##_plan_dft_c2r_3d, D, n0, n1, n2, in, out, flags);                             \
    const int n[3] = {n0, n1, n2};                                                                \
    return fd::make_plan(fd::many(D, fd::Kind::kC2R, 3, n, 1, in, nullptr, 1, 0, out, nullptr, 1, \
                                  0, FFTW_BACKWARD, flags),                                       \
                         #P "_plan_dft_c2r_3d");                                                  \
  }                                                                                               \
  PT_EXPORT P##_plan P##_plan_guru_dft(int rank, const P##_iodim* dims, int batch_rank,           \
                                       const P##_iodim* batch_dims, C* in, C* out, int sign,      \
                                       unsigned flags) {                                          \
    PT_FFTW_PASS(P##_plan_guru_dft, D, rank, dims, batch_rank, batch_dims, in, out, sign, flags); \
    return fd::make_plan(                                                                         \
        fd::guru(D, fd::Kind::kC2C, rank, dims, batch_rank, batch_dims, in, out, sign, flags),    \
        #P "_plan_guru_dft");                                                                     \
  }                                                                                               \
  PT_EXPORT P##_plan P##_plan_guru_dft_r2c(int rank, const P##_iodim* dims, int batch_rank,       \
                                           const P##_iodim* batch_dims, R* in, C* out,            \
                                           unsigned flags) {                                      \
    PT_FFTW_PASS(P##_plan_guru_dft_r2c, D, rank, dims, batch_rank, batch_dims, in, out, flags);   \
    return fd::make_plan(fd::guru(D, fd::Kind::kR2C, rank, dims, batch_rank, batch_dims, in, out, \
                                  FFTW_FORWARD, flags),                                           \
                         #P "_plan_guru_dft_r2c");                                                \
  }                                                                                               \
  PT_EXPORT P##_plan P##_plan_guru_dft_c2r(int rank, const P##_iodim* dims, int batch_rank,       \
                                           const P##_iodim* batch_dims, C* in, R* out,            \
                                           unsigned flags) {                                      \
    PT_FFTW_PASS(P##_plan_guru_dft_c2r, D, rank, dims, batch_rank, batch_dims, in, out, flags);   \
    return fd::make_plan(fd::guru(D, fd::Kind::kC2R, rank, dims, batch_rank, batch_dims, in, out, \
                                  FFTW_BACKWARD, flags),                                          \
                         #P "_plan_guru_dft_c2r");                                                \
  }                                                                                               \
  PT_EXPORT P##_plan P##_plan_guru64_dft(int rank, const P##_iodim64* dims, int batch_rank,       \
                                         const P##_iodim64* batch_dims, C* in, C* out, int sign,  \
                                         unsigned flags) {                                        \
    PT_FFTW_PASS(P##_plan_guru64_dft, D, rank, dims, batch_rank, batch_dims, in, out, sign,       \
                 flags);                                                                          \
    return fd::make_plan(                                                                         \
        fd::guru(D, fd::Kind::kC2C, rank, dims, batch_rank, batch_dims, in, out, sign, flags),    \
        #P "_plan_guru64_dft");                                                                   \
  }                                                                                               \
  PT_EXPORT P##_plan P##_plan_guru64_dft_r2c(int rank, const P##_iodim64* dims, int batch_rank,   \
                                             const P##_iodim64* batch_dims, R* in, C* out,        \
                                             unsigned flags) {                                    \
    PT_FFTW_PASS(P##_plan_guru64_dft_r2c, D, rank, dims, batch_rank, batch_dims, in, out, flags); \
    return fd::make_plan(fd::guru(D, fd::Kind::kR2C, rank, dims, batch_rank, batch_dims, in, out, \
                                  FFTW_FORWARD, flags),                                           \
                         #P "_plan_guru64_dft_r2c");                                              \
  }                                                                                               \
  PT_EXPORT P##_plan P##_plan_guru64_dft_c2r(int rank, const P##_iodim64* dims, int batch_rank,   \
                                             const P##_iodim64* batch_dims, C* in, R* out,        \
                                             unsigned flags) {                                    \
    PT_FFTW_PASS(P##_plan_guru64_dft_c2r, D, rank, dims, batch_rank, batch_dims, in, out, flags); \
    return fd::make_plan(fd::guru(D, fd::Kind::kC2R, rank, dims, batch_rank, batch_dims, in, out, \
                                  FFTW_BACKWARD, flags),                                          \
                         #P "_plan_guru64_dft_c2r");                                              \
  }                                                                                               \
  PT_EXPORT void P##_execute(const P##_plan plan) {                                               \
    PT_FFTW_PASS(P##_execute, D, plan);                                                           \
    const fd::Plan* p = fd::find(plan, #P "_execute");                                            \
    if (p != nullptr) fd::execute(plan, p->in, p->out, fd::Kind::kC2C, false, #P "_execute");     \
  }                                                                                               \
  PT_EXPORT void P##_execute_dft(const P##_plan plan, C* idata, C* odata) {                       \
    PT_FFTW_PASS(P##_execute_dft, D, plan, idata, odata);                                         \
    fd::execute(plan, idata, odata, fd::Kind::kC2C, true, #P "_execute_dft");                     \
  }                                                                                               \
  PT_EXPORT void P##_execute_dft_r2c(const P##_plan plan, R* idata, C* odata) {                   \
    PT_FFTW_PASS(P##_execute_dft_r2c, D, plan, idata, odata);                                     \
    fd::execute(plan, idata, odata, fd::Kind::kR2C, true, #P "_execute_dft_r2c");                 \
  }                                                                                               \
  PT_EXPORT void P##_execute_dft_c2r(const P##_plan plan, C* idata, R* odata) {                   \
    PT_FFTW_PASS(P##_execute_dft_c2r, D, plan, idata, odata);                                     \
    fd::execute(plan, idata, odata, fd::Kind::kC2R, true, #P "_execute_dft_c2r");                 \
  }                                                                                               \
  PT_EXPORT void* P##_malloc(size_t n) {                                                          \
    PT_FFTW_PASS(P##_malloc, D, n);                                                               \
    /* Host memory aligned for SIMD, as FFTW's allocator gives (cuFFTW's arrays are host). */     \
    return fd::aligned_malloc(n);                                                                 \
  }                                                                                               \
  PT_EXPORT void P##_free(void* pointer) {                                                        \
    PT_FFTW_PASS(P##_free, D, pointer);                                                           \
    std::free(pointer);                                                                           \
  }                                                                                               \
  PT_EXPORT void P##_export_wisdom_to_file(FILE* file) {                                          \
    PT_FFTW_PASS(P##_export_wisdom_to_file, D, file);                                             \
  }                                                                                               \
  PT_EXPORT int P##_import_wisdom_from_file(FILE* file) {                                         \
    PT_FFTW_PASS(P##_import_wisdom_from_file, D, file);                                           \
    return 0;                                                                                     \
  }                                                                                               \
  PT_EXPORT void P##_print_plan(const P##_plan plan) {                                            \
    PT_FFTW_PASS(P##_print_plan, D, plan);                                                        \
    fd::print_plan(plan, #P "_print_plan");                                                       \
  }                                                                                               \
  PT_EXPORT void P##_set_timelimit(double seconds) {                                              \
    PT_FFTW_PASS(P##_set_timelimit, D, seconds);                                                  \
  }                                                                                               \
  PT_EXPORT double P##_cost(const P##_plan plan) {                                                \
    PT_FFTW_PASS(P##_cost, D, plan);                                                              \
    return 0.0;                                                                                   \
  }                                                                                               \
  PT_EXPORT void P##_flops(const P##_plan plan, double* add, double* mul, double* fma) {          \
    PT_FFTW_PASS(P##_flops, D, plan, add, mul, fma);                                              \
    fd::flops(plan, add, mul, fma, #P "_flops");                                                  \
  }                                                                                               \
  PT_EXPORT void P##_destroy_plan(P##_plan plan) {                                                \
    PT_FFTW_PASS(P##_destroy_plan, D, plan);                                                      \
    fd::destroy(plan, #P "_destroy_plan");                                                        \
  }                                                                                               \
  PT_EXPORT void P##_cleanup(void) { PT_FFTW_PASS(P##_cleanup, D); }

PT_FFTW_API(fftw, double, fftw_complex, true)
PT_FFTW_API(fftwf, float, fftwf_complex, false)
