// A compact CMA-ES (Hansen's tutorial, arXiv:1604.00772): (μ/μ_w, λ) with cumulative step-size
// adaptation and rank-one + rank-μ covariance updates. Minimizes; seeded and deterministic.
// Optional margin (CMA-ES with Margin, Hamano et al., GECCO 2022) for discrete coordinates.
#pragma once

#include <Eigen/Dense>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

namespace powertrain::search {

class CmaEs {
 public:
  /// `lambda` 0 picks 4 + floor(3 ln n).
  CmaEs(std::vector<double> mean, double sigma, int lambda, std::uint64_t seed);
  /// λ new candidates.
  std::vector<std::vector<double>> ask();
  /// Fitness of the candidates of the last ask(), in order (lower is better; +inf allowed).
  void tell(const std::vector<double>& fitness);
  /// Marks coordinates as discrete: `levels[i]` > 1 means coordinate i decodes to
  /// floor(x·levels[i]) (thresholds j/levels[i]); 0 or 1 leaves it continuous. After every
  /// update the mean and a diagonal affine factor A are corrected so that each discrete
  /// coordinate leaves its current value with probability ≥ `alpha` (≤ 0: 1/(n·λ), the paper's).
  /// Without it, once σ shrinks a binary knob never flips again.
  void set_margin(std::vector<int> levels, double alpha = 0.0);
  int lambda() const { return lambda_; }
  double sigma() const { return sigma_; }
  const Eigen::VectorXd& mean() const { return mean_; }

 private:
  double normal();
  void apply_margin();
  int n_, lambda_, mu_;
  Eigen::VectorXd weights_;
  double mueff_, cc_, cs_, c1_, cmu_, damps_, chi_n_;
  Eigen::VectorXd mean_, pc_, ps_;
  Eigen::MatrixXd c_, b_, inv_sqrt_c_;
  Eigen::VectorXd d_;
  double sigma_;
  long long generation_ = 0;
  std::mt19937_64 rng_;
  std::vector<Eigen::VectorXd> last_;  // the samples before A (the update uses these)
  std::vector<int> levels_;            // empty: no margin
  double alpha_ = 0.0;
  Eigen::VectorXd a_;  // diagonal affine factor of the discrete coordinates
};

/// Minimizes f from x0 with CMA-ES for at most `evaluations`; returns the best value found.
double cmaes_minimize(const std::function<double(const std::vector<double>&)>& f,
                      std::vector<double> x0, double sigma, long long evaluations,
                      std::uint64_t seed);

}  // namespace powertrain::search
