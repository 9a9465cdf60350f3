// Shared by the cuSOLVER test programs: a checked library call (any library whose success status
// is 0: cuSOLVER, cuSPARSE; emu_sparse_check.h prints cuSPARSE's status string) and the
// relative residual of a CSR solve, as NVIDIA's sparse samples compute it.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

// A library call that must return status 0 (SUCCESS); otherwise prints it and exits.
#define LIBRARY_CHECK(call)                                                                \
  do {                                                                                     \
    const int library_status = static_cast<int>(call);                                     \
    if (library_status != 0) {                                                             \
      std::fprintf(stderr, "%s:%d: %s failed with status %d\n", __FILE__, __LINE__, #call, \
                   library_status);                                                        \
      std::exit(1);                                                                        \
    }                                                                                      \
  } while (0)

// |b − (A − mu·I)·x|∞ / (|A|∞·|x|∞ + |b|∞) for the square CSR matrix A (base 0).
inline double relative_residual(int n, const std::vector<int>& offsets,
                                const std::vector<int>& columns, const std::vector<double>& values,
                                const std::vector<double>& x, const std::vector<double>& b,
                                double mu = 0.0) {
  double r_inf = 0, a_inf = 0, x_inf = 0, b_inf = 0;
  for (int i = 0; i < n; ++i) {
    double ax = -mu * x[i], row_sum = 0;
    for (int k = offsets[i]; k < offsets[i + 1]; ++k) {
      ax += values[k] * x[columns[k]];
      row_sum += std::fabs(values[k]);
    }
    r_inf = std::max(r_inf, std::fabs(b[i] - ax));
    a_inf = std::max(a_inf, row_sum);
    x_inf = std::max(x_inf, std::fabs(x[i]));
    b_inf = std::max(b_inf, std::fabs(b[i]));
  }
  return r_inf / (a_inf * x_inf + b_inf);
}
