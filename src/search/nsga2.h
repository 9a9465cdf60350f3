// NSGA-II (Deb et al. 2002): fast non-dominated sorting, crowding distance, binary tournaments,
// simulated binary crossover and polynomial mutation over a box. Minimizes every objective;
// seeded and deterministic. Checked on ZDT1 against its known front (tests/search/nsga2_test.cc).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
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

/// Ask/tell form, for callers that evaluate a generation at once: the first ask() is the random
/// initial population, later ones the children of the current population; tell() takes the
/// objectives of the last ask() in order (+inf allowed) and keeps the best by rank and crowding.
class Nsga2 {
 public:
  Nsga2(std::vector<double> lower, std::vector<double> upper, const Nsga2Options& options);
  Nsga2(const Nsga2&) = delete;
  Nsga2& operator=(const Nsga2&) = delete;
  ~Nsga2();
  std::vector<std::vector<double>> ask();
  void tell(const std::vector<std::vector<double>>& objectives);
  const std::vector<Nsga2Individual>& population() const;

 private:
  struct State;
  std::unique_ptr<State> state_;
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
