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
  void* in = nullptr;        // the planned arrays (fftw_execute)
  void* out = nullptr;
  unsigned flags = 0;
  cufftHandle cufft = 0;      // the emulated cuFFT plan that records each execution
  void* device_in = nullptr;  // device buffers standing in for host arrays (ours)
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

std::int64_t batch_count(const Plan& p) {
  std::int64_t n = 1;
  for (const Dim& d : p.batches) n *= d.n;
  return n;
}

// Offsets of every index of the box `extent` with strides `stride`, row-major (last fastest).
std::vector<std::int64_t> odometer(const std::vector<std::int64_t>& extent,
                                   const std::vector<std::int64_t>& stride) {
  std::vector<std::int64_t> result(static_cast<std::size_t>(product(extent)));
  std::vector<std::int64_t> index(extent.size(), 0);
  std::int64_t offset = 0;
  for (std::size_t k = 0; k < result.size(); ++k) {
    result[k] = offset;
    for (std::size_t d = extent.size(); d-- > 0;) {
      ++index[d];
      offset += stride[d];
      if (index[d] < extent[d]) break;
      offset -= stride[d] * extent[d];
      index[d] = 0;
    }
  }
  return result;
}

// Element offsets (in elements of that side's type) of one transform's logical elements,
// row-major, from the transform's origin.
std::vector<std::int64_t> element_offsets(const Plan& p, bool input) {
  std::vector<std::int64_t> stride;
  for (const Dim& d : p.dims) stride.push_back(input ? d.in_stride : d.out_stride);
  return odometer(shape(p, input), stride);
}

// Offsets of each transform's origin, in batch order (the batch dimensions row-major).
std::vector<std::int64_t> batch_offsets(const Plan& p, bool input) {
  std::vector<std::int64_t> extent, stride;
  for (const Dim& d : p.batches) {
    extent.push_back(d.n);
    stride.push_back(input ? d.in_stride : d.out_stride);
  }
  return odometer(extent, stride);
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

// Host computation bound: Eigen's mixed-radix FFT does about n·(log2 n + p) operations per
// line of n points (p its largest prime factor); beyond 2·10^9 in all the result is not computed
// (as cublasXt's host GEMMs stop at 2·10^9 FLOPs), so a huge or prime-sized transform cannot
// stall the emulated program.
constexpr double kComputeLimit = 2e9;

double compute_cost(const Plan& p) {
  double points = 1;
  for (const Dim& d : p.dims) points *= static_cast<double>(d.n);
  double per_point = 0;
  for (const Dim& d : p.dims) {
    per_point += std::log2(static_cast<double>(std::max<std::int64_t>(d.n, 2))) +
                 static_cast<double>(largest_prime_factor(d.n));
  }
  return points * per_point * static_cast<double>(batch_count(p));
}

double model_flops(const Plan& p) {
  double n = 1;
  for (const Dim& d : p.dims) n *= static_cast<double>(d.n);
  const double per = (p.kind == Kind::kC2C ? 5.0 : 2.5) * n * std::log2(std::max(n, 2.0));
  return per * static_cast<double>(batch_count(p));
}

// One transform of the plan's logical shape, in place on `data` (full complex array, row-major):
// 1-D transforms along every dimension.
template <typename Real>
void transform(std::vector<std::complex<Real>>& data, const std::vector<std::int64_t>& n,
               bool forward, Eigen::FFT<Real>& fft) {
  std::vector<std::complex<Real>> line, result;
  std::int64_t inner = static_cast<std::int64_t>(data.size());
  for (std::size_t axis = 0; axis < n.size(); ++axis) {
    const std::int64_t len = n[axis];
    inner /= len;
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

// The plan's result computed on the host from `in` into `out` (both readable here).
template <typename Real>
void compute(const Plan& p, const void* in, void* out) {
  using Complex = std::complex<Real>;
  Eigen::FFT<Real> fft;
  fft.SetFlag(Eigen::FFT<Real>::Unscaled);
  std::vector<std::int64_t> n;
  for (const Dim& d : p.dims) n.push_back(d.n);
  const std::int64_t points = product(n);
  const std::int64_t last = n.back(), half_last = last / 2 + 1;
  const std::vector<std::int64_t> in_elements = element_offsets(p, true);
  const std::vector<std::int64_t> out_elements = element_offsets(p, false);
  const std::vector<std::int64_t> in_batches = batch_offsets(p, true);
  const std::vector<std::int64_t> out_batches = batch_offsets(p, false);
  const std::int64_t rows = points / last;
  std::vector<Complex> data(static_cast<std::size_t>(points));
  for (std::size_t b = 0; b < in_batches.size(); ++b) {
    // A transform's whole input is read before its output is written (in place they alias).
    const auto* real_in = static_cast<const Real*>(in) + in_batches[b];
    const auto* complex_in = static_cast<const Complex*>(in) + in_batches[b];
    const std::int64_t* in_off = in_elements.data();
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
    auto* real_out = static_cast<Real*>(out) + out_batches[b];
    auto* complex_out = static_cast<Complex*>(out) + out_batches[b];
    const std::int64_t* out_off = out_elements.data();
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

bool readable(const void* p) {
  if (p == nullptr) return false;
  const detail::PointerInfo info = detail::lookup_pointer(p);
  return !info.known || info.backed;
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
  for (const Dim& d : p.dims) {
    if (d.n < 1) {
      report_misuse(api, "dimension " + std::to_string(d.n) + " is not positive");
      return nullptr;
    }
  }
  for (const Dim& d : p.batches) {
    if (d.n < 0) {
      report_misuse(api, "batch dimension " + std::to_string(d.n) + " is negative");
      return nullptr;
    }
  }
  if (p.kind == Kind::kC2C && p.sign != FFTW_FORWARD && p.sign != FFTW_BACKWARD) {
    report_misuse(
        api, "sign " + std::to_string(p.sign) + " is not FFTW_FORWARD (-1) or FFTW_BACKWARD (1)");
    return nullptr;
  }
  if (p.in == nullptr || p.out == nullptr) {
    report_misuse(api, "the input or output array is NULL");
    return nullptr;
  }
  if (batch_count(p) == 0) {
    report_misuse(api, "a batch dimension is 0: there is nothing to transform");
    return nullptr;
  }
  long long n[3] = {1, 1, 1};
  for (std::size_t i = 0; i < p.dims.size(); ++i) n[i] = p.dims[i].n;
  std::size_t work = 0;
  if (cufftCreate(&p.cufft) != CUFFT_SUCCESS ||
      cufftMakePlanMany64(p.cufft, static_cast<int>(p.dims.size()), n, nullptr, 1, 0, nullptr, 1, 0,
                          cufft_type(p), batch_count(p), &work) != CUFFT_SUCCESS) {
    if (p.cufft != 0) cufftDestroy(p.cufft);
    report_misuse(api, std::string("the emulated cuFFT could not make a ") + kind_name(p) +
                           " plan of this shape");
    return nullptr;
  }
  auto* plan = new Plan(std::move(p));
  std::lock_guard<std::mutex> lock(state().mutex);
  state().plans[plan] = plan;
  return plan;
}

Plan* find(const void* handle, const char* api) {
  std::lock_guard<std::mutex> lock(state().mutex);
  const auto it = state().plans.find(handle);
  if (it == state().plans.end()) {
    report_misuse(api, "invalid or destroyed cuFFTW plan " + detail::pointer_text(handle));
    return nullptr;
  }
  return it->second;
}

// One device buffer standing in for a host array; allocated once per plan and side.
void* device_buffer(Plan* p, bool input, std::int64_t bytes, const char* api) {
  void** slot = input ? &p->device_in : &p->device_out;
  if (*slot == nullptr) {
    if (cudaMalloc(slot, static_cast<std::size_t>(bytes)) != cudaSuccess) {
      *slot = nullptr;
      report_misuse(api, "no device memory for the transform's " +
                             std::string(input ? "input" : "output") + " (" +
                             std::to_string(bytes) + " bytes)");
    }
  }
  return *slot;
}

// The logical input elements of `array` (its layout), packed, as the copy to the device reads
// them.
void pack(const Plan& p, const void* array, std::vector<unsigned char>& buffer) {
  const std::int64_t size = in_element_bytes(p);
  const std::vector<std::int64_t> elements = element_offsets(p, true);
  const std::vector<std::int64_t> batches = batch_offsets(p, true);
  buffer.resize(elements.size() * batches.size() * static_cast<std::size_t>(size));
  const auto* base = static_cast<const unsigned char*>(array);
  unsigned char* to = buffer.data();
  for (std::int64_t b : batches) {
    for (std::int64_t e : elements) {
      std::memcpy(to, base + (b + e) * size, static_cast<std::size_t>(size));
      to += size;
    }
  }
}

void execute(const void* handle, void* in, void* out, const char* api) {
  Plan* p = find(handle, api);
  if (p == nullptr) return;
  if (in == nullptr || out == nullptr) {
    report_misuse(api, "the input or output array is NULL");
    return;
  }
  const bool in_place = in == out;
  const std::int64_t in_bytes = product(shape(*p, true)) * batch_count(*p) * in_element_bytes(*p);
  const std::int64_t out_bytes =
      product(shape(*p, false)) * batch_count(*p) * out_element_bytes(*p);
  const bool in_device = on_device(in), out_device = on_device(out);
  // Device memory is used where it is (cuFFTW accepts it); host arrays go through buffers.
  void* device_in = in;
  void* device_out = out;
  if (!in_device) {
    device_in = device_buffer(p, true, in_place ? std::max(in_bytes, out_bytes) : in_bytes, api);
    if (device_in == nullptr) return;
    std::vector<unsigned char> staged;
    pack(*p, in, staged);
    cudaMemcpy(device_in, staged.data(), staged.size(), cudaMemcpyHostToDevice);
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
    // The copy back is what cuFFTW's execution waits for; it is timed as a transfer. Its bytes
    // are the device buffer's (nothing ran there), so the host result below replaces them.
    std::vector<unsigned char> returned(static_cast<std::size_t>(out_bytes));
    cudaMemcpy(returned.data(), device_out, returned.size(), cudaMemcpyDeviceToHost);
  } else {
    cudaDeviceSynchronize();  // cuFFTW's execute returns when the transform is done
  }
  if (!readable(in) || !readable(out)) return;  // device memory without backing: nothing to read
  if (compute_cost(*p) > kComputeLimit) {
    report_assumption(api,
                      "a transform too large to compute on the host (n·(log2 n + largest "
                      "prime factor) above 2e9) is timed and recorded, but its output is "
                      "left as it was");
    return;
  }
  if (p->double_precision) {
    compute<double>(*p, in, out);
  } else {
    compute<float>(*p, in, out);
  }
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
  cufftDestroy(p->cufft);
  if (p->device_in != nullptr) cudaFree(p->device_in);
  if (p->device_out != nullptr) cudaFree(p->device_out);
  delete p;
}

void print_plan(const void* handle, const char* api) {
  const Plan* p = find(handle, api);
  if (p == nullptr) return;
  std::string text = std::string("(cufftw-emulated ") + kind_name(*p);
  if (p->kind == Kind::kC2C) text += p->sign == FFTW_FORWARD ? " forward" : " backward";
  text += " n";
  for (const Dim& d : p->dims) text += " " + std::to_string(d.n);
  text += " batch " + std::to_string(batch_count(*p)) + ")";
  std::fputs(text.c_str(), stdout);
}

void flops(const void* handle, double* add, double* mul, double* fma, const char* api) {
  const Plan* p = find(handle, api);
  const double total = p != nullptr ? model_flops(*p) : 0.0;
  if (add != nullptr) *add = total / 2;
  if (mul != nullptr) *mul = total / 2;
  if (fma != nullptr) *fma = 0;
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

// Every entry point of one precision: P is the prefix (fftw / fftwf), R the real type, C the
// complex type, D true for double precision.
#define PT_FFTW_API(P, R, C, D)                                                                   \
  PT_EXPORT P##_plan P##_plan_many_dft(                                                           \
      int rank, const int* n, int batch, C* in, const int* inembed, int istride, int idist,       \
      C* out, const int* onembed, int ostride, int odist, int sign, unsigned flags) {             \
    return fd::make_plan(fd::many(D, fd::Kind::kC2C, rank, n, batch, in, inembed, istride, idist, \
                                  out, onembed, ostride, odist, sign, flags),                     \
                         #P "_plan_many_dft");                                                    \
  }                                                                                               \
  PT_EXPORT P##_plan P##_plan_many_dft_r2c(                                                       \
      int rank, const int* n, int batch, R* in, const int* inembed, int istride, int idist,       \
      C* out, const int* onembed, int ostride, int odist, unsigned flags) {                       \
    return fd::make_plan(fd::many(D, fd::Kind::kR2C, rank, n, batch, in, inembed, istride, idist, \
                                  out, onembed, ostride, odist, FFTW_FORWARD, flags),             \
                         #P "_plan_many_dft_r2c");                                                \
  }                                                                                               \
  PT_EXPORT P##_plan P##_plan_many_dft_c2r(                                                       \
      int rank, const int* n, int batch, C* in, const int* inembed, int istride, int idist,       \
      R* out, const int* onembed, int ostride, int odist, unsigned flags) {                       \
    return fd::make_plan(fd::many(D, fd::Kind::kC2R, rank, n, batch, in, inembed, istride, idist, \
                                  out, onembed, ostride, odist, FFTW_BACKWARD, flags),            \
                         #P "_plan_many_dft_c2r");                                                \
  }                                                                                               \
  PT_EXPORT P##_plan P##_plan_dft(int rank, const int* n, C* in, C* out, int sign,                \
                                  unsigned flags) {                                               \
    return fd::make_plan(fd::many(D, fd::Kind::kC2C, rank, n, 1, in, nullptr, 1, 0, out, nullptr, \
                                  1, 0, sign, flags),                                             \
                         #P "_plan_dft");                                                         \
  }                                                                                               \
  PT_EXPORT P##_plan P##_plan_dft_1d(int n0, C* in, C* out, int sign, unsigned flags) {           \
    const int n[1] = {n0};                                                                        \
    return fd::make_plan(                                                                         \
        fd::many(D, fd::Kind::kC2C, 1, n, 1, in, nullptr, 1, 0, out, nullptr, 1, 0, sign, flags), \
        #P "_plan_dft_1d");                                                                       \
  }                                                                                               \
  PT_EXPORT P##_plan P##_plan_dft_2d(int n0, int n1, C* in, C* out, int sign, unsigned flags) {   \
    const int n[2] = {n0, n1};                                                                    \
    return fd::make_plan(                                                                         \
        fd::many(D, fd::Kind::kC2C, 2, n, 1, in, nullptr, 1, 0, out, nullptr, 1, 0, sign, flags), \
        #P "_plan_dft_2d");                                                                       \
  }                                                                                               \
  PT_EXPORT P##_plan P##_plan_dft_3d(int n0, int n1, int n2, C* in, C* out, int sign,             \
                                     unsigned flags) {                                            \
    const int n[3] = {n0, n1, n2};                                                                \
    return fd::make_plan(                                                                         \
        fd::many(D, fd::Kind::kC2C, 3, n, 1, in, nullptr, 1, 0, out, nullptr, 1, 0, sign, flags), \
        #P "_plan_dft_3d");                                                                       \
  }                                                                                               \
  PT_EXPORT P##_plan P##_plan_dft_r2c(int rank, const int* n, R* in, C* out, unsigned flags) {    \
    return fd::make_plan(fd::many(D, fd::Kind::kR2C, rank, n, 1, in, nullptr, 1, 0, out, nullptr, \
                                  1, 0, FFTW_FORWARD, flags),                                     \
                         #P "_plan_dft_r2c");                                                     \
  }                                                                                               \
  PT_EXPORT P##_plan P##_plan_dft_r2c_1d(int n0, R* in, C* out, unsigned flags) {                 \
    const int n[1] = {n0};                                                                        \
    return fd::make_plan(fd::many(D, fd::Kind::kR2C, 1, n, 1, in, nullptr, 1, 0, out, nullptr, 1, \
                                  0, FFTW_FORWARD, flags),                                        \
                         #P "_plan_dft_r2c_1d");                                                  \
  }                                                                                               \
  PT_EXPORT P##_plan P##_plan_dft_r2c_2d(int n0, int n1, R* in, C* out, unsigned flags) {         \
    const int n[2] = {n0, n1};                                                                    \
    return fd::make_plan(fd::many(D, fd::Kind::kR2C, 2, n, 1, in, nullptr, 1, 0, out, nullptr, 1, \
                                  0, FFTW_FORWARD, flags),                                        \
                         #P "_plan_dft_r2c_2d");                                                  \
  }                                                                                               \
  PT_EXPORT P##_plan P##_plan_dft_r2c_3d(int n0, int n1, int n2, R* in, C* out, unsigned flags) { \
    const int n[3] = {n0, n1, n2};                                                                \
    return fd::make_plan(fd::many(D, fd::Kind::kR2C, 3, n, 1, in, nullptr, 1, 0, out, nullptr, 1, \
                                  0, FFTW_FORWARD, flags),                                        \
                         #P "_plan_dft_r2c_3d");                                                  \
  }                                                                                               \
  PT_EXPORT P##_plan P##_plan_dft_c2r(int rank, const int* n, C* in, R* out, unsigned flags) {    \
    return fd::make_plan(fd::many(D, fd::Kind::kC2R, rank, n, 1, in, nullptr, 1, 0, out, nullptr, \
                                  1, 0, FFTW_BACKWARD, flags),                                    \
                         #P "_plan_dft_c2r");                                                     \
  }                                                                                               \
  PT_EXPORT P##_plan P##_plan_dft_c2r_1d(int n0, C* in, R* out, unsigned flags) {                 \
    const int n[1] = {n0};                                                                        \
    return fd::make_plan(fd::many(D, fd::Kind::kC2R, 1, n, 1, in, nullptr, 1, 0, out, nullptr, 1, \
                                  0, FFTW_BACKWARD, flags),                                       \
                         #P "_plan_dft_c2r_1d");                                                  \
  }                                                                                               \
  PT_EXPORT P##_plan P##_plan_dft_c2r_2d(int n0, int n1, C* in, R* out, unsigned flags) {         \
    const int n[2] = {n0, n1};                                                                    \
    return fd::make_plan(fd::many(D, fd::Kind::kC2R, 2, n, 1, in, nullptr, 1, 0, out, nullptr, 1, \
                                  0, FFTW_BACKWARD, flags),                                       \
                         #P "_plan_dft_c2r_2d");                                                  \
  }                                                                                               \
  PT_EXPORT P##_plan P##_plan_dft_c2r_3d(int n0, int n1, int n2, C* in, R* out, unsigned flags) { \
    const int n[3] = {n0, n1, n2};                                                                \
    return fd::make_plan(fd::many(D, fd::Kind::kC2R, 3, n, 1, in, nullptr, 1, 0, out, nullptr, 1, \
                                  0, FFTW_BACKWARD, flags),                                       \
                         #P "_plan_dft_c2r_3d");                                                  \
  }                                                                                               \
  PT_EXPORT P##_plan P##_plan_guru_dft(int rank, const P##_iodim* dims, int batch_rank,           \
                                       const P##_iodim* batch_dims, C* in, C* out, int sign,      \
                                       unsigned flags) {                                          \
    return fd::make_plan(                                                                         \
        fd::guru(D, fd::Kind::kC2C, rank, dims, batch_rank, batch_dims, in, out, sign, flags),    \
        #P "_plan_guru_dft");                                                                     \
  }                                                                                               \
  PT_EXPORT P##_plan P##_plan_guru_dft_r2c(int rank, const P##_iodim* dims, int batch_rank,       \
                                           const P##_iodim* batch_dims, R* in, C* out,            \
                                           unsigned flags) {                                      \
    return fd::make_plan(fd::guru(D, fd::Kind::kR2C, rank, dims, batch_rank, batch_dims, in, out, \
                                  FFTW_FORWARD, flags),                                           \
                         #P "_plan_guru_dft_r2c");                                                \
  }                                                                                               \
  PT_EXPORT P##_plan P##_plan_guru_dft_c2r(int rank, const P##_iodim* dims, int batch_rank,       \
                                           const P##_iodim* batch_dims, C* in, R* out,            \
                                           unsigned flags) {                                      \
    return fd::make_plan(fd::guru(D, fd::Kind::kC2R, rank, dims, batch_rank, batch_dims, in, out, \
                                  FFTW_BACKWARD, flags),                                          \
                         #P "_plan_guru_dft_c2r");                                                \
  }                                                                                               \
  PT_EXPORT P##_plan P##_plan_guru64_dft(int rank, const P##_iodim64* dims, int batch_rank,       \
                                         const P##_iodim64* batch_dims, C* in, C* out, int sign,  \
                                         unsigned flags) {                                        \
    return fd::make_plan(                                                                         \
        fd::guru(D, fd::Kind::kC2C, rank, dims, batch_rank, batch_dims, in, out, sign, flags),    \
        #P "_plan_guru64_dft");                                                                   \
  }                                                                                               \
  PT_EXPORT P##_plan P##_plan_guru64_dft_r2c(int rank, const P##_iodim64* dims, int batch_rank,   \
                                             const P##_iodim64* batch_dims, R* in, C* out,        \
                                             unsigned flags) {                                    \
    return fd::make_plan(fd::guru(D, fd::Kind::kR2C, rank, dims, batch_rank, batch_dims, in, out, \
                                  FFTW_FORWARD, flags),                                           \
                         #P "_plan_guru64_dft_r2c");                                              \
  }                                                                                               \
  PT_EXPORT P##_plan P##_plan_guru64_dft_c2r(int rank, const P##_iodim64* dims, int batch_rank,   \
                                             const P##_iodim64* batch_dims, C* in, R* out,        \
                                             unsigned flags) {                                    \
    return fd::make_plan(fd::guru(D, fd::Kind::kC2R, rank, dims, batch_rank, batch_dims, in, out, \
                                  FFTW_BACKWARD, flags),                                          \
                         #P "_plan_guru64_dft_c2r");                                              \
  }                                                                                               \
  PT_EXPORT void P##_execute(const P##_plan plan) {                                               \
    const fd::Plan* p = fd::find(plan, #P "_execute");                                            \
    if (p != nullptr) fd::execute(plan, p->in, p->out, #P "_execute");                            \
  }                                                                                               \
  PT_EXPORT void P##_execute_dft(const P##_plan plan, C* idata, C* odata) {                       \
    fd::execute(plan, idata, odata, #P "_execute_dft");                                           \
  }                                                                                               \
  PT_EXPORT void P##_execute_dft_r2c(const P##_plan plan, R* idata, C* odata) {                   \
    fd::execute(plan, idata, odata, #P "_execute_dft_r2c");                                       \
  }                                                                                               \
  PT_EXPORT void P##_execute_dft_c2r(const P##_plan plan, C* idata, R* odata) {                   \
    fd::execute(plan, idata, odata, #P "_execute_dft_c2r");                                       \
  }                                                                                               \
  PT_EXPORT void* P##_malloc(size_t n) {                                                          \
    /* Host memory aligned for SIMD, as FFTW's allocator gives (cuFFTW's arrays are host). */     \
    return std::aligned_alloc(64, (std::max<size_t>(n, 1) + 63) / 64 * 64);                       \
  }                                                                                               \
  PT_EXPORT void P##_free(void* pointer) { std::free(pointer); }                                  \
  PT_EXPORT void P##_export_wisdom_to_file(FILE*) {}                                              \
  PT_EXPORT int P##_import_wisdom_from_file(FILE*) { return 0; }                                  \
  PT_EXPORT void P##_print_plan(const P##_plan plan) { fd::print_plan(plan, #P "_print_plan"); }  \
  PT_EXPORT void P##_set_timelimit(double) {}                                                     \
  PT_EXPORT double P##_cost(const P##_plan) { return 0.0; }                                       \
  PT_EXPORT void P##_flops(const P##_plan plan, double* add, double* mul, double* fma) {          \
    fd::flops(plan, add, mul, fma, #P "_flops");                                                  \
  }                                                                                               \
  PT_EXPORT void P##_destroy_plan(P##_plan plan) { fd::destroy(plan, #P "_destroy_plan"); }       \
  PT_EXPORT void P##_cleanup(void) {}

PT_FFTW_API(fftw, double, fftw_complex, true)
PT_FFTW_API(fftwf, float, fftwf_complex, false)
