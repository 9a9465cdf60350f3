#include "search/cmaes.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace powertrain::search {

CmaEs::CmaEs(std::vector<double> mean, double sigma, int lambda, std::uint64_t seed)
    : n_(static_cast<int>(mean.size())), sigma_(sigma), rng_(seed) {
  const double n = n_;
  lambda_ = lambda > 0 ? lambda : 4 + static_cast<int>(std::floor(3.0 * std::log(n)));
  mu_ = lambda_ / 2;
  weights_.resize(mu_);
  for (int i = 0; i < mu_; ++i) weights_(i) = std::log(lambda_ / 2.0 + 0.5) - std::log(i + 1.0);
  weights_ /= weights_.sum();
  mueff_ = 1.0 / weights_.squaredNorm();
  cc_ = (4.0 + mueff_ / n) / (n + 4.0 + 2.0 * mueff_ / n);
  cs_ = (mueff_ + 2.0) / (n + mueff_ + 5.0);
  c1_ = 2.0 / ((n + 1.3) * (n + 1.3) + mueff_);
  cmu_ =
      std::min(1.0 - c1_, 2.0 * (mueff_ - 2.0 + 1.0 / mueff_) / ((n + 2.0) * (n + 2.0) + mueff_));
  damps_ = 1.0 + 2.0 * std::max(0.0, std::sqrt((mueff_ - 1.0) / (n + 1.0)) - 1.0) + cs_;
  chi_n_ = std::sqrt(n) * (1.0 - 1.0 / (4.0 * n) + 1.0 / (21.0 * n * n));
  mean_ = Eigen::Map<Eigen::VectorXd>(mean.data(), n_);
  pc_ = Eigen::VectorXd::Zero(n_);
  ps_ = Eigen::VectorXd::Zero(n_);
  c_ = b_ = inv_sqrt_c_ = Eigen::MatrixXd::Identity(n_, n_);
  d_ = Eigen::VectorXd::Ones(n_);
  a_ = Eigen::VectorXd::Ones(n_);
}

void CmaEs::set_margin(std::vector<int> levels, double alpha) {
  levels.resize(static_cast<std::size_t>(n_), 0);
  levels_ = std::move(levels);
  alpha_ = alpha > 0.0 ? alpha : 1.0 / (static_cast<double>(n_) * lambda_);
  alpha_ = std::min(alpha_, 0.25);
}

namespace {

double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

// Φ⁻¹(p) for p in (0, 1): bisection on erfc, ample for a handful of calls per generation.
double normal_quantile(double p) {
  double lo = -40.0, hi = 40.0;
  for (int i = 0; i < 200 && hi - lo > 1e-14; ++i) {
    const double mid = 0.5 * (lo + hi);
    (normal_cdf(mid) < p ? lo : hi) = mid;
  }
  return 0.5 * (lo + hi);
}

}  // namespace

// The margin correction of CMA-ES with Margin (Hamano et al. 2022, and the cmaes library's
// CMAwM): for each discrete coordinate, with the marginal N(m_i, (σ A_i)² C_ii), take the
// thresholds around m_i. At an end value (one neighbour) move m_i towards the threshold until
// the tail beyond it is α; in between, reset m_i and A_i so each side's tail is at least α/2.
void CmaEs::apply_margin() {
  if (levels_.empty()) return;
  for (int i = 0; i < n_; ++i) {
    const int levels = levels_[static_cast<std::size_t>(i)];
    if (levels < 2) continue;
    const double m = mean_(i);
    if (!std::isfinite(m)) continue;
    // Index of the value m decodes to (clamped like decode_unit_point, in double: no overflow).
    const int j = static_cast<int>(std::clamp(std::floor(m * levels), 0.0, levels - 1.0));
    const double scale = sigma_ * a_(i) * std::sqrt(std::max(c_(i, i), 1e-300));
    if (!(scale > 0.0) || !std::isfinite(scale)) continue;
    if (j == 0 || j == levels - 1) {
      // One neighbour: the threshold between this end value and the next.
      const double t = (j == 0 ? 1.0 : static_cast<double>(levels - 1)) / levels;
      const double tail = j == 0 ? 1.0 - normal_cdf((t - m) / scale) : normal_cdf((t - m) / scale);
      if (tail >= alpha_) continue;
      const double dist = scale * normal_quantile(1.0 - alpha_);
      mean_(i) = j == 0 ? t - dist : t + dist;
      continue;
    }
    const double lo_t = static_cast<double>(j) / levels, up_t = static_cast<double>(j + 1) / levels;
    double low = normal_cdf((lo_t - m) / scale);
    double up = 1.0 - normal_cdf((up_t - m) / scale);
    const double mid = 1.0 - low - up;
    const double half = alpha_ / 2.0;
    low = std::max(low, half);
    up = std::max(up, half);
    // Take the excess back from the parts above the floor, in proportion (as CMAwM does).
    const double excess = 1.0 - low - up - mid;
    const double denom = low + mid + up - 3.0 * half;
    if (denom > 0.0) {
      const double nl = low + excess * (low - half) / denom;
      const double nu = up + excess * (up - half) / denom;
      low = nl;
      up = nu;
    }
    low = std::clamp(low, 1e-10, 0.5 - 1e-10);
    up = std::clamp(up, 1e-10, 0.5 - 1e-10);
    const double q_low = normal_quantile(1.0 - low), q_up = normal_quantile(1.0 - up);
    // Solve m - σA√C·q_low = lo_t and m + σA√C·q_up = up_t for A and m (σ, C fixed).
    const double a =
        (up_t - lo_t) / ((q_low + q_up) * sigma_ * std::sqrt(std::max(c_(i, i), 1e-300)));
    if (!std::isfinite(a)) continue;  // σ underflowed: nothing left to correct
    a_(i) = a;
    mean_(i) = (lo_t * q_up + up_t * q_low) / (q_low + q_up);
  }
}

// Box–Muller on the raw 64-bit engine: the same numbers with every standard library.
double CmaEs::normal() {
  const double u1 = (static_cast<double>(rng_() >> 11) + 0.5) * 0x1.0p-53;
  const double u2 = (static_cast<double>(rng_() >> 11) + 0.5) * 0x1.0p-53;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

std::vector<std::vector<double>> CmaEs::ask() {
  last_.clear();
  std::vector<std::vector<double>> out;
  for (int k = 0; k < lambda_; ++k) {
    Eigen::VectorXd z(n_);
    for (int i = 0; i < n_; ++i) z(i) = normal();
    Eigen::VectorXd x = mean_ + sigma_ * (b_ * d_.cwiseProduct(z));
    last_.push_back(x);
    // The margin's A widens the discrete coordinates of what is evaluated, not of x itself.
    if (!levels_.empty()) x = mean_ + a_.cwiseProduct(x - mean_);
    out.emplace_back(x.data(), x.data() + n_);
  }
  return out;
}

void CmaEs::tell(const std::vector<double>& fitness) {
  std::vector<int> order(static_cast<std::size_t>(lambda_));
  std::iota(order.begin(), order.end(), 0);
  // Stable: ties (equal times, or several +inf) keep the sampling order, so runs repeat.
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
    return fitness[static_cast<std::size_t>(a)] < fitness[static_cast<std::size_t>(b)];
  });
  const Eigen::VectorXd old = mean_;
  mean_.setZero();
  for (int i = 0; i < mu_; ++i)
    mean_ += weights_(i) * last_[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])];
  const Eigen::VectorXd step = (mean_ - old) / sigma_;
  ps_ = (1.0 - cs_) * ps_ + std::sqrt(cs_ * (2.0 - cs_) * mueff_) * (inv_sqrt_c_ * step);
  ++generation_;
  const double ps_norm = ps_.norm();
  const bool hsig = ps_norm / std::sqrt(1.0 - std::pow(1.0 - cs_, 2.0 * generation_)) / chi_n_ <
                    1.4 + 2.0 / (n_ + 1.0);
  pc_ = (1.0 - cc_) * pc_ + (hsig ? std::sqrt(cc_ * (2.0 - cc_) * mueff_) : 0.0) * step;
  Eigen::MatrixXd rank_mu = Eigen::MatrixXd::Zero(n_, n_);
  for (int i = 0; i < mu_; ++i) {
    const Eigen::VectorXd y =
        (last_[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])] - old) / sigma_;
    rank_mu += weights_(i) * y * y.transpose();
  }
  c_ = (1.0 - c1_ - cmu_) * c_ +
       c1_ * (pc_ * pc_.transpose() + (hsig ? 0.0 : cc_ * (2.0 - cc_)) * c_) + cmu_ * rank_mu;
  sigma_ *= std::exp((cs_ / damps_) * (ps_norm / chi_n_ - 1.0));
  sigma_ = std::clamp(sigma_, 1e-300, 1e300);
  c_ = 0.5 * (c_ + c_.transpose());
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> eig(c_);
  d_ = eig.eigenvalues().cwiseMax(1e-300).cwiseSqrt();
  b_ = eig.eigenvectors();
  inv_sqrt_c_ = b_ * d_.cwiseInverse().asDiagonal() * b_.transpose();
  apply_margin();
}

double cmaes_minimize(const std::function<double(const std::vector<double>&)>& f,
                      std::vector<double> x0, double sigma, long long evaluations,
                      std::uint64_t seed) {
  CmaEs es(std::move(x0), sigma, 0, seed);
  double best = std::numeric_limits<double>::infinity();
  long long used = 0;
  while (used + es.lambda() <= evaluations) {
    const auto xs = es.ask();
    std::vector<double> values;
    for (const auto& x : xs) values.push_back(f(x));
    used += es.lambda();
    best = std::min(best, *std::min_element(values.begin(), values.end()));
    es.tell(values);
  }
  return best;
}

}  // namespace powertrain::search
