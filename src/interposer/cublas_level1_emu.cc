// cuBLAS level 1 beyond cublas_emu.cc's real AXPY/SCAL/COPY/SWAP/DOT/NRM2/ASUM/IAMAX: the complex
// forms (C/Z axpy, scal, Cs/Zd scal, copy, swap, dotu, dotc, Sc/Dz nrm2 and asum, Ic/Iz amax and
// amin) and the rotations (S/D/C/Z/Cs/Zd rot, S/D/C/Z rotg, S/D rotm and rotmg).
//
// As for the real forms: each vector call is one memory-bound kernel `cublas_<op>_<dtype>` with
// its FLOPs (complex multiply-add 8, complex scale 6, |re| + |im| 2) and bytes, computed where
// every operand is backed memory; a scalar result in host pointer mode is followed by a stream
// synchronization (a blocking call in cuBLAS). rotg and rotmg work on four scalars: in host
// pointer mode they are computed on the host, as cuBLAS does, and launch nothing; in device pointer
// mode they are one small kernel, computed where the scalars are backed. The reference BLAS
// algorithms are used (srotg/crotg scaling, srotmg with its rescaling by 4096²).
#include <complex>
#include <cstring>
#include <vector>

#include "interposer/cublas_typed.h"

namespace {

using namespace powertrain::emu::cublas_detail;  // NOLINT: the shared cuBLAS pieces

template <typename V>
double abs1(const V& v) {  // cuBLAS's |re| + |im| for the complex amax/amin/asum
  if constexpr (std::is_floating_point_v<V>) {
    return std::abs(v);
  } else {
    return std::abs(v.real()) + std::abs(v.imag());
  }
}

bool vectors(const Blas1& c, Vec& x, Vec* y) {
  return device_vector(x, c.api, "x") && (y == nullptr || device_vector(*y, c.api, "y"));
}

// y = alpha·x + y (complex)
template <typename T>
cublasStatus_t caxpy(Blas1 c, std::int64_t n, const T* alpha, const T* x, std::int64_t incx, T* y,
                     std::int64_t incy) {
  if (!open_call(c)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (bad_sizes(c, n, incx, incy, true)) return CUBLAS_STATUS_INVALID_VALUE;
  Val<T> a;
  if (!scalar<T>(alpha, c, "alpha", &a)) return CUBLAS_STATUS_INVALID_VALUE;
  Vec vx{x, n, incx, sizeof(T)}, vy{y, n, incy, sizeof(T)};
  if (!vectors(c, vx, &vy)) return CUBLAS_STATUS_EXECUTION_FAILED;
  if ((vx.backed && vy.backed) && !detail::capturing_stream(c.stream)) {
    const powertrain::emu::HostComputeScope host_compute;  // not the program's time
    for (std::int64_t i = 0; i < n; ++i)
      store_at<T>(y, vy.offset(i), value_at<T>(y, vy.offset(i)) + a * value_at<T>(x, vx.offset(i)));
  }
  return finish(c, "axpy", Blas<T>::kName, sat_mul(2 * Blas<T>::kFlopFactor, n),
                sat_mul(sat_mul(3, n), sizeof(T)), false);
}

// x = alpha·x, alpha of type R (complex, or real for Cs/Zd)
template <typename T, typename R>
cublasStatus_t cscal(Blas1 c, std::int64_t n, const R* alpha, T* x, std::int64_t incx) {
  if (!open_call(c)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (bad_sizes(c, n, incx, 1, false)) return CUBLAS_STATUS_INVALID_VALUE;
  Val<R> a;
  if (!scalar<R>(alpha, c, "alpha", &a)) return CUBLAS_STATUS_INVALID_VALUE;
  Vec vx{x, n, incx, sizeof(T)};
  if (!vectors(c, vx, nullptr)) return CUBLAS_STATUS_EXECUTION_FAILED;
  if ((vx.backed) && !detail::capturing_stream(c.stream)) {
    const powertrain::emu::HostComputeScope host_compute;  // not the program's time
    for (std::int64_t i = 0; i < n; ++i)
      store_at<T>(x, vx.offset(i), Val<T>(a) * value_at<T>(x, vx.offset(i)));
  }
  const int flops = !std::is_same_v<T, R> ? 2 : Blas<T>::kFlopFactor > 1 ? 6 : 1;
  return finish(c, "scal", Blas<T>::kName, sat_mul(flops, n), sat_mul(sat_mul(2, n), sizeof(T)),
                false);
}

template <typename T>
cublasStatus_t ccopy_or_swap(Blas1 c, bool swap, std::int64_t n, T* x, std::int64_t incx, T* y,
                             std::int64_t incy) {
  if (!open_call(c)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (bad_sizes(c, n, incx, incy, true)) return CUBLAS_STATUS_INVALID_VALUE;
  Vec vx{x, n, incx, sizeof(T)}, vy{y, n, incy, sizeof(T)};
  if (!vectors(c, vx, &vy)) return CUBLAS_STATUS_EXECUTION_FAILED;
  if ((vx.backed && vy.backed) && !detail::capturing_stream(c.stream)) {
    const powertrain::emu::HostComputeScope host_compute;  // not the program's time
    for (std::int64_t i = 0; i < n; ++i) {
      const Val<T> xi = value_at<T>(x, vx.offset(i));
      if (swap) store_at<T>(x, vx.offset(i), value_at<T>(y, vy.offset(i)));
      store_at<T>(y, vy.offset(i), xi);
    }
  }
  return finish(c, swap ? "swap" : "copy", Blas<T>::kName, 0,
                sat_mul(sat_mul(swap ? 4 : 2, n), sizeof(T)), false);
}

// dotu (conjugate false) or dotc (x conjugated)
template <typename T>
cublasStatus_t cdot(Blas1 c, bool conjugate, std::int64_t n, const T* x, std::int64_t incx,
                    const T* y, std::int64_t incy, T* result) {
  if (!open_call(c)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (bad_sizes(c, n, incx, incy, true)) return CUBLAS_STATUS_INVALID_VALUE;
  Vec vx{x, n, incx, sizeof(T)}, vy{y, n, incy, sizeof(T)};
  if (!vectors(c, vx, &vy)) return CUBLAS_STATUS_EXECUTION_FAILED;
  std::complex<double> sum = 0;
  if ((vx.backed && vy.backed) && !detail::capturing_stream(c.stream)) {
    const powertrain::emu::HostComputeScope host_compute;  // not the program's time
    for (std::int64_t i = 0; i < n; ++i) {
      const std::complex<double> xi(value_at<T>(x, vx.offset(i)));
      sum += (conjugate ? std::conj(xi) : xi) * std::complex<double>(value_at<T>(y, vy.offset(i)));
    }
  }
  Val<T> value;
  if constexpr (std::is_floating_point_v<Val<T>>) {
    value = static_cast<Val<T>>(sum.real());
  } else {
    value = Val<T>(sum);
  }
  if (!write_result(result, *reinterpret_cast<T*>(&value), c)) return CUBLAS_STATUS_INVALID_VALUE;
  const char* op = Blas<T>::kFlopFactor == 1 ? "dot" : conjugate ? "dotc" : "dotu";
  return finish(c, op, Blas<T>::kName, sat_mul(2 * Blas<T>::kFlopFactor, n),
                sat_mul(sat_mul(2, n), sizeof(T)), true);
}

// ‖x‖₂ (nrm2) or Σ |re| + |im| (asum) of a complex vector, into a real result R.
template <typename T, typename R>
cublasStatus_t creduce(Blas1 c, bool norm, std::int64_t n, const T* x, std::int64_t incx,
                       R* result) {
  if (!open_call(c)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (bad_sizes(c, n, incx, 1, false)) return CUBLAS_STATUS_INVALID_VALUE;
  Vec vx{x, n, incx, sizeof(T)};
  if (!vectors(c, vx, nullptr)) return CUBLAS_STATUS_EXECUTION_FAILED;
  double sum = 0;
  if ((vx.backed) && !detail::capturing_stream(c.stream)) {
    const powertrain::emu::HostComputeScope host_compute;  // not the program's time
    for (std::int64_t i = 0; i < n; ++i) {
      const auto v = value_at<T>(x, vx.offset(i));
      sum += norm ? std::norm(std::complex<double>(v)) : abs1(v);
    }
  }
  if (norm) sum = std::sqrt(sum);
  if (!write_result(result, static_cast<R>(sum), c)) return CUBLAS_STATUS_INVALID_VALUE;
  const int per = (norm ? 2 : 1) * (Blas<T>::kFlopFactor > 1 ? 2 : 1);
  return finish(c, norm ? "nrm2" : "asum", Blas<T>::kName, sat_mul(per, n), sat_mul(n, sizeof(T)),
                true);
}

// 1-based index of the first element of largest (smallest) |re| + |im|.
template <typename T, typename I>
cublasStatus_t ciamax(Blas1 c, bool largest, std::int64_t n, const T* x, std::int64_t incx,
                      I* result) {
  if (!open_call(c)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (n < 0 || incx <= 0) n = 0;  // cuBLAS answers 0 for n ≤ 0 or incx ≤ 0
  Vec vx{x, n, incx, sizeof(T)};
  if (!vectors(c, vx, nullptr)) return CUBLAS_STATUS_EXECUTION_FAILED;
  std::int64_t best = n > 0 ? 1 : 0;
  if ((vx.backed && n > 0) && !detail::capturing_stream(c.stream)) {
    const powertrain::emu::HostComputeScope host_compute;  // not the program's time
    double value = abs1(value_at<T>(x, 0));
    for (std::int64_t i = 1; i < n; ++i) {
      const double v = abs1(value_at<T>(x, vx.offset(i)));
      if (largest ? v > value : v < value) value = v, best = i + 1;
    }
  }
  if (!write_result(result, static_cast<I>(best), c)) return CUBLAS_STATUS_INVALID_VALUE;
  return finish(c, largest ? "iamax" : "iamin", Blas<T>::kName,
                sat_mul(Blas<T>::kFlopFactor > 1 ? 2 : 1, n), sat_mul(n, sizeof(T)), true);
}

// x' = c·x + s·y, y' = c·y − conj(s)·x (real s: the plane rotation), C the cosine type (real),
// S the sine type.
template <typename T, typename C, typename S>
cublasStatus_t rot(Blas1 c, std::int64_t n, T* x, std::int64_t incx, T* y, std::int64_t incy,
                   const C* cosine, const S* sine) {
  if (!open_call(c)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (bad_sizes(c, n, incx, incy, true)) return CUBLAS_STATUS_INVALID_VALUE;
  Val<C> cv;
  Val<S> sv;
  if (!scalar<C>(cosine, c, "c", &cv) || !scalar<S>(sine, c, "s", &sv))
    return CUBLAS_STATUS_INVALID_VALUE;
  Vec vx{x, n, incx, sizeof(T)}, vy{y, n, incy, sizeof(T)};
  if (!vectors(c, vx, &vy)) return CUBLAS_STATUS_EXECUTION_FAILED;
  if ((vx.backed && vy.backed) && !detail::capturing_stream(c.stream)) {
    const powertrain::emu::HostComputeScope host_compute;  // not the program's time
    for (std::int64_t i = 0; i < n; ++i) {
      const Val<T> xi = value_at<T>(x, vx.offset(i)), yi = value_at<T>(y, vy.offset(i));
      Val<T> s_conj;
      if constexpr (std::is_floating_point_v<Val<S>>) {
        s_conj = Val<T>(sv);
      } else {
        s_conj = Val<T>(std::conj(sv));
      }
      store_at<T>(x, vx.offset(i), Val<T>(cv) * xi + Val<T>(sv) * yi);
      store_at<T>(y, vy.offset(i), Val<T>(cv) * yi - s_conj * xi);
    }
  }
  const int flops = std::is_floating_point_v<Val<T>>   ? 6
                    : std::is_floating_point_v<Val<S>> ? 12
                                                       : 20;
  return finish(c, "rot", Blas<T>::kName, sat_mul(flops, n), sat_mul(sat_mul(4, n), sizeof(T)),
                false);
}

// The modified rotation H of param (flag −2 identity, −1 full, 0 and 1 with implied entries).
template <typename T>
cublasStatus_t rotm(Blas1 c, std::int64_t n, T* x, std::int64_t incx, T* y, std::int64_t incy,
                    const T* param) {
  if (!open_call(c)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (bad_sizes(c, n, incx, incy, true)) return CUBLAS_STATUS_INVALID_VALUE;
  if (param == nullptr) return misuse(c.api, "param is NULL", CUBLAS_STATUS_INVALID_VALUE);
  T p[5] = {T(-2), 0, 0, 0, 0};
  bool known = true;
  if (c.mode == CUBLAS_POINTER_MODE_DEVICE) {
    const detail::PointerInfo info = detail::lookup_pointer(param);
    if (!info.known || info.available < sizeof(p)) {
      return misuse(c.api,
                    "param " + detail::pointer_text(param) +
                        " is not device memory of 5 elements (CUBLAS_POINTER_MODE_DEVICE)",
                    CUBLAS_STATUS_INVALID_VALUE);
    }
    known = info.backed;
  }
  if (known) std::memcpy(p, param, sizeof(p));
  Vec vx{x, n, incx, sizeof(T)}, vy{y, n, incy, sizeof(T)};
  if (!vectors(c, vx, &vy)) return CUBLAS_STATUS_EXECUTION_FAILED;
  if ((known && p[0] != T(-2) && vx.backed && vy.backed) && !detail::capturing_stream(c.stream)) {
    const powertrain::emu::HostComputeScope host_compute;  // not the program's time
    const T h11 = p[0] == T(0) ? T(1) : p[1], h21 = p[0] == T(1) ? T(-1) : p[2];
    const T h12 = p[0] == T(1) ? T(1) : p[3], h22 = p[0] == T(0) ? T(1) : p[4];
    for (std::int64_t i = 0; i < n; ++i) {
      T& xi = *at<T>(vx, i);
      T& yi = *at<T>(vy, i);
      const T w = xi, z = yi;
      xi = h11 * w + h12 * z;
      yi = h21 * w + h22 * z;
    }
  }
  return finish(c, "rotm", Blas<T>::kName, sat_mul(6, n), sat_mul(sat_mul(4, n), sizeof(T)), false);
}

// The scalars of rotg/rotmg: host memory in host pointer mode, else device memory (read and
// written here where backed). Returns false (misuse) for an unusable pointer; *computable false
// when a device scalar has no memory behind it.
bool scalar_args(const Blas1& c, std::initializer_list<std::pair<const void*, std::size_t>> args,
                 bool* computable) {
  *computable = true;
  for (const auto& [p, bytes] : args) {
    if (p == nullptr) {
      emu::report_misuse(c.api, "a scalar argument is NULL");
      return false;
    }
    if (c.mode != CUBLAS_POINTER_MODE_DEVICE) continue;
    const detail::PointerInfo info = detail::lookup_pointer(p);
    if (!info.known || info.available < bytes) {
      emu::report_misuse(c.api, "scalar " + detail::pointer_text(p) +
                                    " is not device memory (CUBLAS_POINTER_MODE_DEVICE)");
      return false;
    }
    *computable = *computable && info.backed;
  }
  return true;
}

// The kernel of a device-mode scalar routine; nothing in host mode (computed on the host).
cublasStatus_t scalar_routine_done(const Blas1& c, const char* op, const char* dtype,
                                   std::int64_t bytes) {
  if (c.mode != CUBLAS_POINTER_MODE_DEVICE) return CUBLAS_STATUS_SUCCESS;
  return finish(c, op, dtype, 16, bytes, false);
}

// Generates the plane rotation that zeroes b (reference BLAS srotg/drotg, crotg/zrotg).
template <typename T, typename R>
cublasStatus_t rotg(Blas1 c, T* a, T* b, R* cosine, T* sine) {
  if (!open_call(c)) return CUBLAS_STATUS_NOT_INITIALIZED;
  bool computable = false;
  if (!scalar_args(c, {{a, sizeof(T)}, {b, sizeof(T)}, {cosine, sizeof(R)}, {sine, sizeof(T)}},
                   &computable))
    return CUBLAS_STATUS_INVALID_VALUE;
  using V = Val<T>;
  if (computable) {
    const V av = value_at<T>(a, 0), bv = value_at<T>(b, 0);
    if constexpr (std::is_floating_point_v<V>) {
      const V roe = std::abs(av) > std::abs(bv) ? av : bv;
      const V scale = std::abs(av) + std::abs(bv);
      V r = 0, cv = 1, sv = 0, z = 0;
      if (scale != 0) {
        r = scale * std::sqrt((av / scale) * (av / scale) + (bv / scale) * (bv / scale));
        r = roe < 0 ? -r : r;
        cv = av / r, sv = bv / r;
        z = std::abs(av) > std::abs(bv) ? sv : cv != 0 ? 1 / cv : V(1);
      }
      store_at<T>(a, 0, r), store_at<T>(b, 0, z);
      *cosine = static_cast<R>(cv);
      store_at<T>(sine, 0, sv);
    } else {
      using Real = typename V::value_type;
      if (std::abs(av) == Real(0)) {
        *cosine = R(0);
        store_at<T>(sine, 0, V(1));
        store_at<T>(a, 0, bv);
      } else {
        const Real scale = std::abs(av) + std::abs(bv);
        const Real norm = scale * std::sqrt(std::norm(av / scale) + std::norm(bv / scale));
        const V alpha = av / std::abs(av);
        *cosine = static_cast<R>(std::abs(av) / norm);
        store_at<T>(sine, 0, alpha * std::conj(bv) / norm);
        store_at<T>(a, 0, alpha * norm);
      }
    }
  }
  return scalar_routine_done(c, "rotg", Blas<T>::kName, 4 * sizeof(T));
}

// The modified Givens transformation (reference BLAS srotmg/drotmg).
template <typename T>
cublasStatus_t rotmg(Blas1 c, T* d1, T* d2, T* x1, const T* y1, T* param) {
  if (!open_call(c)) return CUBLAS_STATUS_NOT_INITIALIZED;
  bool computable = false;
  if (!scalar_args(c,
                   {{d1, sizeof(T)},
                    {d2, sizeof(T)},
                    {x1, sizeof(T)},
                    {y1, sizeof(T)},
                    {param, 5 * sizeof(T)}},
                   &computable))
    return CUBLAS_STATUS_INVALID_VALUE;
  if (computable) {
    const T gam = 4096, gamsq = gam * gam, rgamsq = 1 / gamsq;
    T sd1 = *d1, sd2 = *d2, sx1 = *x1;
    const T sy1 = *y1;
    T flag = 0, h11 = 0, h12 = 0, h21 = 0, h22 = 0;
    bool done = false;
    if (sd1 < 0) {
      flag = -1, sd1 = sd2 = sx1 = 0;
    } else {
      const T p2 = sd2 * sy1;
      if (p2 == 0) {
        param[0] = -2;
        done = true;
      } else {
        const T p1 = sd1 * sx1, q2 = p2 * sy1, q1 = p1 * sx1;
        if (std::abs(q1) > std::abs(q2)) {
          h21 = -sy1 / sx1, h12 = p2 / p1;
          const T u = 1 - h12 * h21;
          if (u > 0) {
            flag = 0, sd1 /= u, sd2 /= u, sx1 *= u;
          } else {
            flag = -1, h11 = h12 = h21 = h22 = 0, sd1 = sd2 = sx1 = 0;
          }
        } else if (q2 < 0) {
          flag = -1, h11 = h12 = h21 = h22 = 0, sd1 = sd2 = sx1 = 0;
        } else {
          flag = 1, h11 = p1 / p2, h22 = sx1 / sy1;
          const T u = 1 + h11 * h22, temp = sd2 / u;
          sd2 = sd1 / u, sd1 = temp, sx1 = sy1 * u;
        }
        if (sd1 != 0) {
          while (sd1 <= rgamsq || sd1 >= gamsq) {
            if (flag == 0) {
              h11 = 1, h22 = 1, flag = -1;
            } else {
              h21 = -1, h12 = 1, flag = -1;
            }
            if (sd1 <= rgamsq) {
              sd1 *= gamsq, sx1 /= gam, h11 /= gam, h12 /= gam;
            } else {
              sd1 /= gamsq, sx1 *= gam, h11 *= gam, h12 *= gam;
            }
          }
        }
        if (sd2 != 0) {
          while (std::abs(sd2) <= rgamsq || std::abs(sd2) >= gamsq) {
            if (flag == 0) {
              h11 = 1, h22 = 1, flag = -1;
            } else {
              h21 = -1, h12 = 1, flag = -1;
            }
            if (std::abs(sd2) <= rgamsq) {
              sd2 *= gamsq, h21 /= gam, h22 /= gam;
            } else {
              sd2 /= gamsq, h21 *= gam, h22 *= gam;
            }
          }
        }
      }
    }
    if (!done) {
      if (flag < 0) {
        param[1] = h11, param[2] = h21, param[3] = h12, param[4] = h22;
      } else if (flag == 0) {
        param[2] = h21, param[3] = h12;
      } else {
        param[1] = h11, param[4] = h22;
      }
      param[0] = flag;
      *d1 = sd1, *d2 = sd2, *x1 = sx1;
    }
  }
  return scalar_routine_done(c, "rotmg", Blas<T>::kName, 9 * sizeof(T));
}

}  // namespace

// ===== exported entry points ===================================================================

#define PT_COMPLEX_LEVEL1(P, T, R, RP, INT, SUFFIX)                                                \
  PT_EXPORT cublasStatus_t cublas##P##axpy_v2##SUFFIX(                                             \
      cublasHandle_t handle, INT n, const T* alpha, const T* x, INT incx, T* y, INT incy) {        \
    return caxpy<T>({"cublas" #P "axpy_v2" #SUFFIX, handle}, n, alpha, x, incx, y, incy);          \
  }                                                                                                \
  PT_EXPORT cublasStatus_t cublas##P##scal_v2##SUFFIX(cublasHandle_t handle, INT n,                \
                                                      const T* alpha, T* x, INT incx) {            \
    return cscal<T, T>({"cublas" #P "scal_v2" #SUFFIX, handle}, n, alpha, x, incx);                \
  }                                                                                                \
  PT_EXPORT cublasStatus_t cublas##P##RP##scal_v2##SUFFIX(cublasHandle_t handle, INT n,            \
                                                          const R* alpha, T* x, INT incx) {        \
    return cscal<T, R>({"cublas" #P #RP "scal_v2" #SUFFIX, handle}, n, alpha, x, incx);            \
  }                                                                                                \
  PT_EXPORT cublasStatus_t cublas##P##copy_v2##SUFFIX(cublasHandle_t handle, INT n, const T* x,    \
                                                      INT incx, T* y, INT incy) {                  \
    return ccopy_or_swap<T>({"cublas" #P "copy_v2" #SUFFIX, handle}, false, n, const_cast<T*>(x),  \
                            incx, y, incy);                                                        \
  }                                                                                                \
  PT_EXPORT cublasStatus_t cublas##P##swap_v2##SUFFIX(cublasHandle_t handle, INT n, T* x,          \
                                                      INT incx, T* y, INT incy) {                  \
    return ccopy_or_swap<T>({"cublas" #P "swap_v2" #SUFFIX, handle}, true, n, x, incx, y, incy);   \
  }                                                                                                \
  PT_EXPORT cublasStatus_t cublas##P##dotu_v2##SUFFIX(cublasHandle_t handle, INT n, const T* x,    \
                                                      INT incx, const T* y, INT incy, T* result) { \
    return cdot<T>({"cublas" #P "dotu_v2" #SUFFIX, handle}, false, n, x, incx, y, incy, result);   \
  }                                                                                                \
  PT_EXPORT cublasStatus_t cublas##P##dotc_v2##SUFFIX(cublasHandle_t handle, INT n, const T* x,    \
                                                      INT incx, const T* y, INT incy, T* result) { \
    return cdot<T>({"cublas" #P "dotc_v2" #SUFFIX, handle}, true, n, x, incx, y, incy, result);    \
  }                                                                                                \
  PT_EXPORT cublasStatus_t cublas##P##rot_v2##SUFFIX(cublasHandle_t handle, INT n, T* x, INT incx, \
                                                     T* y, INT incy, const R* c, const T* s) {     \
    return rot<T, R, T>({"cublas" #P "rot_v2" #SUFFIX, handle}, n, x, incx, y, incy, c, s);        \
  }                                                                                                \
  PT_EXPORT cublasStatus_t cublas##P##RP##rot_v2##SUFFIX(                                          \
      cublasHandle_t handle, INT n, T* x, INT incx, T* y, INT incy, const R* c, const R* s) {      \
    return rot<T, R, R>({"cublas" #P #RP "rot_v2" #SUFFIX, handle}, n, x, incx, y, incy, c, s);    \
  }

// Sc/Dz nrm2 and asum, Ic/Iz amax and amin: the real-result complex reductions.
#define PT_COMPLEX_REDUCE(P, S, T, R, INT, I, SUFFIX)                                            \
  PT_EXPORT cublasStatus_t cublas##S##nrm2_v2##SUFFIX(cublasHandle_t handle, INT n, const T* x,  \
                                                      INT incx, R* result) {                     \
    return creduce<T, R>({"cublas" #S "nrm2_v2" #SUFFIX, handle}, true, n, x, incx, result);     \
  }                                                                                              \
  PT_EXPORT cublasStatus_t cublas##S##asum_v2##SUFFIX(cublasHandle_t handle, INT n, const T* x,  \
                                                      INT incx, R* result) {                     \
    return creduce<T, R>({"cublas" #S "asum_v2" #SUFFIX, handle}, false, n, x, incx, result);    \
  }                                                                                              \
  PT_EXPORT cublasStatus_t cublasI##P##amax_v2##SUFFIX(cublasHandle_t handle, INT n, const T* x, \
                                                       INT incx, I* result) {                    \
    return ciamax<T, I>({"cublasI" #P "amax_v2" #SUFFIX, handle}, true, n, x, incx, result);     \
  }                                                                                              \
  PT_EXPORT cublasStatus_t cublasI##P##amin_v2##SUFFIX(cublasHandle_t handle, INT n, const T* x, \
                                                       INT incx, I* result) {                    \
    return ciamax<T, I>({"cublasI" #P "amin_v2" #SUFFIX, handle}, false, n, x, incx, result);    \
  }

PT_COMPLEX_LEVEL1(C, cuComplex, float, s, int, )
PT_COMPLEX_LEVEL1(C, cuComplex, float, s, int64_t, _64)
PT_COMPLEX_LEVEL1(Z, cuDoubleComplex, double, d, int, )
PT_COMPLEX_LEVEL1(Z, cuDoubleComplex, double, d, int64_t, _64)
PT_COMPLEX_REDUCE(c, Sc, cuComplex, float, int, int, )
PT_COMPLEX_REDUCE(c, Sc, cuComplex, float, int64_t, int64_t, _64)
PT_COMPLEX_REDUCE(z, Dz, cuDoubleComplex, double, int, int, )
PT_COMPLEX_REDUCE(z, Dz, cuDoubleComplex, double, int64_t, int64_t, _64)
#undef PT_COMPLEX_REDUCE
#undef PT_COMPLEX_LEVEL1

// S/D rot and rotm (vectors), rotg and rotmg (scalars); C/Z rotg.
#define PT_REAL_ROTATIONS(P, T, INT, SUFFIX)                                                       \
  PT_EXPORT cublasStatus_t cublas##P##rot_v2##SUFFIX(cublasHandle_t handle, INT n, T* x, INT incx, \
                                                     T* y, INT incy, const T* c, const T* s) {     \
    return rot<T, T, T>({"cublas" #P "rot_v2" #SUFFIX, handle}, n, x, incx, y, incy, c, s);        \
  }                                                                                                \
  PT_EXPORT cublasStatus_t cublas##P##rotm_v2##SUFFIX(cublasHandle_t handle, INT n, T* x,          \
                                                      INT incx, T* y, INT incy, const T* param) {  \
    return rotm<T>({"cublas" #P "rotm_v2" #SUFFIX, handle}, n, x, incx, y, incy, param);           \
  }
PT_REAL_ROTATIONS(S, float, int, )
PT_REAL_ROTATIONS(S, float, int64_t, _64)
PT_REAL_ROTATIONS(D, double, int, )
PT_REAL_ROTATIONS(D, double, int64_t, _64)
#undef PT_REAL_ROTATIONS

#define PT_ROTG(P, T, R)                                                                       \
  PT_EXPORT cublasStatus_t cublas##P##rotg_v2(cublasHandle_t handle, T* a, T* b, R* c, T* s) { \
    return rotg<T, R>({"cublas" #P "rotg_v2", handle}, a, b, c, s);                            \
  }
PT_ROTG(S, float, float)
PT_ROTG(D, double, double)
PT_ROTG(C, cuComplex, float)
PT_ROTG(Z, cuDoubleComplex, double)
#undef PT_ROTG

#define PT_ROTMG(P, T)                                                                     \
  PT_EXPORT cublasStatus_t cublas##P##rotmg_v2(cublasHandle_t handle, T* d1, T* d2, T* x1, \
                                               const T* y1, T* param) {                    \
    return rotmg<T>({"cublas" #P "rotmg_v2", handle}, d1, d2, x1, y1, param);              \
  }
PT_ROTMG(S, float)
PT_ROTMG(D, double)
#undef PT_ROTMG

// ---- the Ex forms: typed by cudaDataType arguments -------------------------------------------
// Real and complex float/double operands of one type (the scale's may be the real type of a
// complex vector) run the typed routines above, with the Ex name in the record. Half and
// bfloat16 vectors (CUDA_R_16F, CUDA_R_16BF) are validated and recorded as the kernel of their
// bytes, not computed (a host-mode scalar result reads 0). Any other combination is
// CUBLAS_STATUS_NOT_SUPPORTED, reported by name.

namespace {

int ex_bytes(cudaDataType type) {
  switch (type) {
    case CUDA_R_16F:
    case CUDA_R_16BF:
      return 2;
    case CUDA_R_32F:
      return 4;
    case CUDA_R_64F:
    case CUDA_C_32F:
      return 8;
    case CUDA_C_64F:
      return 16;
    default:
      return 0;
  }
}

bool is_half(cudaDataType type) { return type == CUDA_R_16F || type == CUDA_R_16BF; }

cublasStatus_t unsupported_types(const char* api, std::initializer_list<cudaDataType> types) {
  std::string list;
  for (cudaDataType t : types)
    list += (list.empty() ? "" : ", ") + std::to_string(static_cast<int>(t));
  emu::report_unsupported(std::string(api) + "(cudaDataType " + list + ")");
  return CUBLAS_STATUS_NOT_SUPPORTED;
}

// A half/bfloat16 vector operation: checked and recorded (`result_bytes` of a host-mode scalar
// result set to 0).
cublasStatus_t half_vector_op(Blas1 c, const char* op, cudaDataType type, std::int64_t n,
                              const void* x, std::int64_t incx, const void* y, std::int64_t incy,
                              int reads, std::int64_t flops, void* result, int result_bytes) {
  if (!open_call(c)) return CUBLAS_STATUS_NOT_INITIALIZED;
  if (bad_sizes(c, n, incx, y != nullptr ? incy : 1, y != nullptr))
    return CUBLAS_STATUS_INVALID_VALUE;
  Vec vx{x, n, incx, 2}, vy{y, y != nullptr ? n : 0, incy, 2};
  if (!vectors(c, vx, y != nullptr ? &vy : nullptr)) return CUBLAS_STATUS_EXECUTION_FAILED;
  if (result != nullptr && c.mode == CUBLAS_POINTER_MODE_HOST) std::memset(result, 0, result_bytes);
  return finish(c, op, type == CUDA_R_16F ? "float16" : "bfloat16", flops,
                sat_mul(sat_mul(reads, n), 2), result != nullptr);
}

#define PT_EX_TYPED(TYPE, CALL)  \
  switch (TYPE) {                \
    case CUDA_R_32F: {           \
      using T = float;           \
      using R = float;           \
      return CALL;               \
    }                            \
    case CUDA_R_64F: {           \
      using T = double;          \
      using R = double;          \
      return CALL;               \
    }                            \
    case CUDA_C_32F: {           \
      using T = cuComplex;       \
      using R = float;           \
      return CALL;               \
    }                            \
    case CUDA_C_64F: {           \
      using T = cuDoubleComplex; \
      using R = double;          \
      return CALL;               \
    }                            \
    default:                     \
      break;                     \
  }

template <typename Int>
cublasStatus_t axpy_ex(const char* api, cublasHandle_t handle, Int n, const void* alpha,
                       cudaDataType alpha_type, const void* x, cudaDataType x_type, Int incx,
                       void* y, cudaDataType y_type, Int incy, cudaDataType exec) {
  if (x_type == y_type && is_half(x_type)) {
    return half_vector_op({api, handle}, "axpy", x_type, n, x, incx, y, incy, 3, sat_mul(2, n),
                          nullptr, 0);
  }
  if (x_type == y_type && alpha_type == x_type) {
    PT_EX_TYPED(x_type, (caxpy<T>({api, handle}, n, static_cast<const T*>(alpha),
                                  static_cast<const T*>(x), incx, static_cast<T*>(y), incy)))
  }
  return unsupported_types(api, {alpha_type, x_type, y_type, exec});
}

template <typename Int>
cublasStatus_t scal_ex(const char* api, cublasHandle_t handle, Int n, const void* alpha,
                       cudaDataType alpha_type, void* x, cudaDataType x_type, Int incx,
                       cudaDataType exec) {
  if (is_half(x_type)) {
    return half_vector_op({api, handle}, "scal", x_type, n, x, incx, nullptr, 1, 2, n, nullptr, 0);
  }
  if (alpha_type == x_type) {
    PT_EX_TYPED(x_type, (cscal<T, T>({api, handle}, n, static_cast<const T*>(alpha),
                                     static_cast<T*>(x), incx)))
  }
  if ((x_type == CUDA_C_32F && alpha_type == CUDA_R_32F) ||
      (x_type == CUDA_C_64F && alpha_type == CUDA_R_64F)) {
    PT_EX_TYPED(x_type, (cscal<T, R>({api, handle}, n, static_cast<const R*>(alpha),
                                     static_cast<T*>(x), incx)))
  }
  return unsupported_types(api, {alpha_type, x_type, exec});
}

template <typename Int>
cublasStatus_t copy_swap_ex(const char* api, cublasHandle_t handle, bool swap, Int n, void* x,
                            cudaDataType x_type, Int incx, void* y, cudaDataType y_type, Int incy) {
  if (x_type == y_type && is_half(x_type)) {
    return half_vector_op({api, handle}, swap ? "swap" : "copy", x_type, n, x, incx, y, incy,
                          swap ? 4 : 2, 0, nullptr, 0);
  }
  if (x_type == y_type) {
    PT_EX_TYPED(x_type, (ccopy_or_swap<T>({api, handle}, swap, n, static_cast<T*>(x), incx,
                                          static_cast<T*>(y), incy)))
  }
  return unsupported_types(api, {x_type, y_type});
}

template <typename Int>
cublasStatus_t dot_ex(const char* api, cublasHandle_t handle, bool conjugate, Int n, const void* x,
                      cudaDataType x_type, Int incx, const void* y, cudaDataType y_type, Int incy,
                      void* result, cudaDataType result_type, cudaDataType exec) {
  if (x_type == y_type && is_half(x_type)) {
    return half_vector_op({api, handle}, "dot", x_type, n, x, incx, y, incy, 2, sat_mul(2, n),
                          result, std::max(ex_bytes(result_type), 2));
  }
  if (x_type == y_type && result_type == x_type) {
    PT_EX_TYPED(x_type, (cdot<T>({api, handle}, conjugate, n, static_cast<const T*>(x), incx,
                                 static_cast<const T*>(y), incy, static_cast<T*>(result))))
  }
  return unsupported_types(api, {x_type, y_type, result_type, exec});
}

// nrm2 (norm) or asum of a vector into a result of the vector's real type.
template <typename Int>
cublasStatus_t reduce_ex(const char* api, cublasHandle_t handle, bool norm, Int n, const void* x,
                         cudaDataType x_type, Int incx, void* result, cudaDataType result_type,
                         cudaDataType exec) {
  if (is_half(x_type)) {
    return half_vector_op({api, handle}, norm ? "nrm2" : "asum", x_type, n, x, incx, nullptr, 1, 1,
                          sat_mul(norm ? 2 : 1, n), result, std::max(ex_bytes(result_type), 2));
  }
  const bool real_result = result_type == (x_type == CUDA_C_32F   ? CUDA_R_32F
                                           : x_type == CUDA_C_64F ? CUDA_R_64F
                                                                  : x_type);
  if (real_result) {
    PT_EX_TYPED(x_type, (creduce<T, R>({api, handle}, norm, n, static_cast<const T*>(x), incx,
                                       static_cast<R*>(result))))
  }
  return unsupported_types(api, {x_type, result_type, exec});
}

template <typename Int>
cublasStatus_t iamax_ex(const char* api, cublasHandle_t handle, bool largest, Int n, const void* x,
                        cudaDataType x_type, Int incx, Int* result) {
  if (is_half(x_type)) {
    return half_vector_op({api, handle}, largest ? "iamax" : "iamin", x_type, n, x, incx, nullptr,
                          1, 1, n, result, sizeof(Int));
  }
  PT_EX_TYPED(x_type,
              (ciamax<T, Int>({api, handle}, largest, n, static_cast<const T*>(x), incx, result)))
  return unsupported_types(api, {x_type});
}

template <typename Int>
cublasStatus_t rot_ex(const char* api, cublasHandle_t handle, Int n, void* x, cudaDataType x_type,
                      Int incx, void* y, cudaDataType y_type, Int incy, const void* cosine,
                      const void* sine, cudaDataType cs_type, cudaDataType exec) {
  if (x_type == y_type && is_half(x_type)) {
    return half_vector_op({api, handle}, "rot", x_type, n, x, incx, y, incy, 4, sat_mul(6, n),
                          nullptr, 0);
  }
  if (x_type == y_type && cs_type == x_type) {  // complex sine, real cosine
    PT_EX_TYPED(x_type,
                (rot<T, R, T>({api, handle}, n, static_cast<T*>(x), incx, static_cast<T*>(y), incy,
                              static_cast<const R*>(cosine), static_cast<const T*>(sine))))
  }
  if (x_type == y_type && (cs_type == CUDA_R_32F || cs_type == CUDA_R_64F) &&
      ex_bytes(cs_type) * (x_type == CUDA_C_32F || x_type == CUDA_C_64F ? 2 : 1) ==
          ex_bytes(x_type)) {
    PT_EX_TYPED(x_type,
                (rot<T, R, R>({api, handle}, n, static_cast<T*>(x), incx, static_cast<T*>(y), incy,
                              static_cast<const R*>(cosine), static_cast<const R*>(sine))))
  }
  return unsupported_types(api, {x_type, y_type, cs_type, exec});
}

template <typename Int>
cublasStatus_t rotm_ex(const char* api, cublasHandle_t handle, Int n, void* x, cudaDataType x_type,
                       Int incx, void* y, cudaDataType y_type, Int incy, const void* param,
                       cudaDataType param_type, cudaDataType exec) {
  if (x_type == y_type && param_type == x_type && x_type == CUDA_R_32F) {
    return rotm<float>({api, handle}, n, static_cast<float*>(x), incx, static_cast<float*>(y), incy,
                       static_cast<const float*>(param));
  }
  if (x_type == y_type && param_type == x_type && x_type == CUDA_R_64F) {
    return rotm<double>({api, handle}, n, static_cast<double*>(x), incx, static_cast<double*>(y),
                        incy, static_cast<const double*>(param));
  }
  return unsupported_types(api, {x_type, y_type, param_type, exec});
}

}  // namespace

#define PT_EX_VECTOR(INT, SUFFIX)                                                                 \
  PT_EXPORT cublasStatus_t cublasAxpyEx##SUFFIX(                                                  \
      cublasHandle_t handle, INT n, const void* alpha, cudaDataType alphaType, const void* x,     \
      cudaDataType xType, INT incx, void* y, cudaDataType yType, INT incy,                        \
      cudaDataType executiontype) {                                                               \
    return axpy_ex<INT>("cublasAxpyEx" #SUFFIX, handle, n, alpha, alphaType, x, xType, incx, y,   \
                        yType, incy, executiontype);                                              \
  }                                                                                               \
  PT_EXPORT cublasStatus_t cublasScalEx##SUFFIX(                                                  \
      cublasHandle_t handle, INT n, const void* alpha, cudaDataType alphaType, void* x,           \
      cudaDataType xType, INT incx, cudaDataType executionType) {                                 \
    return scal_ex<INT>("cublasScalEx" #SUFFIX, handle, n, alpha, alphaType, x, xType, incx,      \
                        executionType);                                                           \
  }                                                                                               \
  PT_EXPORT cublasStatus_t cublasCopyEx##SUFFIX(cublasHandle_t handle, INT n, const void* x,      \
                                                cudaDataType xType, INT incx, void* y,            \
                                                cudaDataType yType, INT incy) {                   \
    return copy_swap_ex<INT>("cublasCopyEx" #SUFFIX, handle, false, n, const_cast<void*>(x),      \
                             xType, incx, y, yType, incy);                                        \
  }                                                                                               \
  PT_EXPORT cublasStatus_t cublasSwapEx##SUFFIX(cublasHandle_t handle, INT n, void* x,            \
                                                cudaDataType xType, INT incx, void* y,            \
                                                cudaDataType yType, INT incy) {                   \
    return copy_swap_ex<INT>("cublasSwapEx" #SUFFIX, handle, true, n, x, xType, incx, y, yType,   \
                             incy);                                                               \
  }                                                                                               \
  PT_EXPORT cublasStatus_t cublasDotEx##SUFFIX(                                                   \
      cublasHandle_t handle, INT n, const void* x, cudaDataType xType, INT incx, const void* y,   \
      cudaDataType yType, INT incy, void* result, cudaDataType resultType,                        \
      cudaDataType executionType) {                                                               \
    return dot_ex<INT>("cublasDotEx" #SUFFIX, handle, false, n, x, xType, incx, y, yType, incy,   \
                       result, resultType, executionType);                                        \
  }                                                                                               \
  PT_EXPORT cublasStatus_t cublasDotcEx##SUFFIX(                                                  \
      cublasHandle_t handle, INT n, const void* x, cudaDataType xType, INT incx, const void* y,   \
      cudaDataType yType, INT incy, void* result, cudaDataType resultType,                        \
      cudaDataType executionType) {                                                               \
    return dot_ex<INT>("cublasDotcEx" #SUFFIX, handle, true, n, x, xType, incx, y, yType, incy,   \
                       result, resultType, executionType);                                        \
  }                                                                                               \
  PT_EXPORT cublasStatus_t cublasNrm2Ex##SUFFIX(                                                  \
      cublasHandle_t handle, INT n, const void* x, cudaDataType xType, INT incx, void* result,    \
      cudaDataType resultType, cudaDataType executionType) {                                      \
    return reduce_ex<INT>("cublasNrm2Ex" #SUFFIX, handle, true, n, x, xType, incx, result,        \
                          resultType, executionType);                                             \
  }                                                                                               \
  PT_EXPORT cublasStatus_t cublasAsumEx##SUFFIX(                                                  \
      cublasHandle_t handle, INT n, const void* x, cudaDataType xType, INT incx, void* result,    \
      cudaDataType resultType, cudaDataType executiontype) {                                      \
    return reduce_ex<INT>("cublasAsumEx" #SUFFIX, handle, false, n, x, xType, incx, result,       \
                          resultType, executiontype);                                             \
  }                                                                                               \
  PT_EXPORT cublasStatus_t cublasIamaxEx##SUFFIX(cublasHandle_t handle, INT n, const void* x,     \
                                                 cudaDataType xType, INT incx, INT* result) {     \
    return iamax_ex<INT>("cublasIamaxEx" #SUFFIX, handle, true, n, x, xType, incx, result);       \
  }                                                                                               \
  PT_EXPORT cublasStatus_t cublasIaminEx##SUFFIX(cublasHandle_t handle, INT n, const void* x,     \
                                                 cudaDataType xType, INT incx, INT* result) {     \
    return iamax_ex<INT>("cublasIaminEx" #SUFFIX, handle, false, n, x, xType, incx, result);      \
  }                                                                                               \
  PT_EXPORT cublasStatus_t cublasRotEx##SUFFIX(                                                   \
      cublasHandle_t handle, INT n, void* x, cudaDataType xType, INT incx, void* y,               \
      cudaDataType yType, INT incy, const void* c, const void* s, cudaDataType csType,            \
      cudaDataType executiontype) {                                                               \
    return rot_ex<INT>("cublasRotEx" #SUFFIX, handle, n, x, xType, incx, y, yType, incy, c, s,    \
                       csType, executiontype);                                                    \
  }                                                                                               \
  PT_EXPORT cublasStatus_t cublasRotmEx##SUFFIX(                                                  \
      cublasHandle_t handle, INT n, void* x, cudaDataType xType, INT incx, void* y,               \
      cudaDataType yType, INT incy, const void* param, cudaDataType paramType,                    \
      cudaDataType executiontype) {                                                               \
    return rotm_ex<INT>("cublasRotmEx" #SUFFIX, handle, n, x, xType, incx, y, yType, incy, param, \
                        paramType, executiontype);                                                \
  }
PT_EX_VECTOR(int, )
PT_EX_VECTOR(int64_t, _64)
#undef PT_EX_VECTOR

PT_EXPORT cublasStatus_t cublasRotgEx(cublasHandle_t handle, void* a, void* b, cudaDataType abType,
                                      void* c, void* s, cudaDataType csType,
                                      cudaDataType executiontype) {
  const char* api = "cublasRotgEx";
  const bool real = abType == csType,
             complex_pair = (abType == CUDA_C_32F && csType == CUDA_R_32F) ||
                            (abType == CUDA_C_64F && csType == CUDA_R_64F);
  if (real || complex_pair) {
    PT_EX_TYPED(abType, (rotg<T, R>({api, handle}, static_cast<T*>(a), static_cast<T*>(b),
                                    static_cast<R*>(c), static_cast<T*>(s))))
  }
  return unsupported_types(api, {abType, csType, executiontype});
}

PT_EXPORT cublasStatus_t cublasRotmgEx(cublasHandle_t handle, void* d1, cudaDataType d1Type,
                                       void* d2, cudaDataType d2Type, void* x1, cudaDataType x1Type,
                                       const void* y1, cudaDataType y1Type, void* param,
                                       cudaDataType paramType, cudaDataType executiontype) {
  const char* api = "cublasRotmgEx";
  const bool same = d1Type == d2Type && d1Type == x1Type && d1Type == y1Type && d1Type == paramType;
  if (same && d1Type == CUDA_R_32F) {
    return rotmg<float>({api, handle}, static_cast<float*>(d1), static_cast<float*>(d2),
                        static_cast<float*>(x1), static_cast<const float*>(y1),
                        static_cast<float*>(param));
  }
  if (same && d1Type == CUDA_R_64F) {
    return rotmg<double>({api, handle}, static_cast<double*>(d1), static_cast<double*>(d2),
                         static_cast<double*>(x1), static_cast<const double*>(y1),
                         static_cast<double*>(param));
  }
  return unsupported_types(api, {d1Type, d2Type, x1Type, y1Type, paramType, executiontype});
}
#undef PT_EX_TYPED
