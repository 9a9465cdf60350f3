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
