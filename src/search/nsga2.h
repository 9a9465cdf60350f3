// NSGA-II (Deb et al. 2002): fast non-dominated sorting, crowding distance, binary tournaments,
// simulated binary crossover and polynomial mutation over a box. Minimizes every objective;
// seeded and deterministic. Checked on ZDT1 against its known front (tests/search/nsga2_test.cc).
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

namespace powertrain::search {

struct Nsga2Options {
  int population = 100;  // even, at least 4
  int generations = 250;
  double crossover_probability = 0.9;
  double eta_crossover = 15.0;  // SBX distribution index
  double eta_mutation = 20.0;   // polynomial mutation index; rate 1 / dimensions
  std::uint64_t seed = 1;
};

struct Nsga2Individual {
  std::vector<double> x;
  std::vector<double> objectives;
  int rank = 0;  // 0 = the first non-dominated front
  double crowding = 0.0;
};

/// Non-dominated fronts of `points` (indices), best front first. O(objectives × n²).
std::vector<std::vector<int>> non_dominated_fronts(const std::vector<std::vector<double>>& points);

/// Runs NSGA-II on f over the box [lower, upper] and returns the final population's first front,
/// sorted by the first objective. Precondition: lower and upper have the same size, lower ≤ upper.
std::vector<Nsga2Individual> nsga2_minimize(
    const std::function<std::vector<double>(const std::vector<double>&)>& f,
    const std::vector<double>& lower, const std::vector<double>& upper,
    const Nsga2Options& options = {});

}  // namespace powertrain::search
