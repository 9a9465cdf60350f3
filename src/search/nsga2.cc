#include "search/nsga2.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

namespace powertrain::search {
namespace {

bool dominates(const std::vector<double>& a, const std::vector<double>& b) {
  bool better = false;
  for (std::size_t k = 0; k < a.size(); ++k) {
    if (a[k] > b[k]) return false;
    if (a[k] < b[k]) better = true;
  }
  return better;
}

class Rng {
 public:
  explicit Rng(std::uint64_t seed) : engine_(seed) {}
  // (0, 1), the same numbers with every standard library.
  double unit() { return (static_cast<double>(engine_() >> 11) + 0.5) * 0x1.0p-53; }
  std::size_t below(std::size_t n) { return static_cast<std::size_t>(engine_() % n); }

 private:
  std::mt19937_64 engine_;
};

void assign_crowding(std::vector<Nsga2Individual>& pop, const std::vector<int>& front) {
  for (int i : front) pop[static_cast<std::size_t>(i)].crowding = 0.0;
  if (front.empty()) return;
  const std::size_t m = pop[static_cast<std::size_t>(front[0])].objectives.size();
  std::vector<int> order = front;
  for (std::size_t k = 0; k < m; ++k) {
    auto obj = [&](int i) { return pop[static_cast<std::size_t>(i)].objectives[k]; };
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return obj(a) < obj(b); });
    const double inf = std::numeric_limits<double>::infinity();
    pop[static_cast<std::size_t>(order.front())].crowding = inf;
    pop[static_cast<std::size_t>(order.back())].crowding = inf;
    const double span = obj(order.back()) - obj(order.front());
    // Infeasible points (+inf) sit at the ends; no finite span, no interior distances (no NaN).
    if (!(span > 0.0) || !std::isfinite(span)) continue;
    for (std::size_t j = 1; j + 1 < order.size(); ++j)
      pop[static_cast<std::size_t>(order[j])].crowding +=
          (obj(order[j + 1]) - obj(order[j - 1])) / span;
  }
}

// Ranks and crowding of every individual.
void rank_population(std::vector<Nsga2Individual>& pop) {
  std::vector<std::vector<double>> points;
  for (const auto& p : pop) points.push_back(p.objectives);
  const auto fronts = non_dominated_fronts(points);
  for (std::size_t r = 0; r < fronts.size(); ++r) {
    for (int i : fronts[r]) pop[static_cast<std::size_t>(i)].rank = static_cast<int>(r);
    assign_crowding(pop, fronts[r]);
  }
}

bool crowded_less(const Nsga2Individual& a, const Nsga2Individual& b) {
  return a.rank != b.rank ? a.rank < b.rank : a.crowding > b.crowding;
}

}  // namespace

std::vector<std::vector<int>> non_dominated_fronts(const std::vector<std::vector<double>>& points) {
  const std::size_t n = points.size();
  std::vector<std::vector<int>> dominated(n);
  std::vector<int> count(n, 0);
  std::vector<std::vector<int>> fronts(1);
  for (std::size_t p = 0; p < n; ++p) {
    for (std::size_t q = 0; q < n; ++q) {
      if (p == q) continue;
      if (dominates(points[p], points[q]))
        dominated[p].push_back(static_cast<int>(q));
      else if (dominates(points[q], points[p]))
        ++count[p];
    }
    if (count[p] == 0) fronts[0].push_back(static_cast<int>(p));
  }
  for (std::size_t f = 0; !fronts[f].empty(); ++f) {
    std::vector<int> next;
    for (int p : fronts[f])
      for (int q : dominated[static_cast<std::size_t>(p)])
        if (--count[static_cast<std::size_t>(q)] == 0) next.push_back(q);
    std::sort(next.begin(), next.end());
    fronts.push_back(std::move(next));
  }
  fronts.pop_back();  // the empty one that ended the loop
  return fronts;
}

struct Nsga2::State {
  std::vector<double> lower, upper;
  Nsga2Options options;
  Rng rng;
  std::vector<Nsga2Individual> pop;
  std::vector<std::vector<double>> asked;
  bool started = false;
  State(std::vector<double> lo, std::vector<double> hi, const Nsga2Options& o)
      : lower(std::move(lo)), upper(std::move(hi)), options(o), rng(o.seed) {}
};

Nsga2::Nsga2(std::vector<double> lower, std::vector<double> upper, const Nsga2Options& options)
    : state_(std::make_unique<State>(std::move(lower), std::move(upper), options)) {}
Nsga2::~Nsga2() = default;
const std::vector<Nsga2Individual>& Nsga2::population() const { return state_->pop; }

std::vector<std::vector<double>> Nsga2::ask() {
  State& st = *state_;
  const std::size_t n = st.lower.size();
  const std::size_t size = static_cast<std::size_t>(std::max(4, st.options.population / 2 * 2));
  const auto& lower = st.lower;
  const auto& upper = st.upper;
  Rng& rng = st.rng;
  st.asked.clear();
  if (!st.started || st.pop.empty()) {
    for (std::size_t k = 0; k < size; ++k) {
      std::vector<double> x(n);
      for (std::size_t i = 0; i < n; ++i) x[i] = lower[i] + rng.unit() * (upper[i] - lower[i]);
      st.asked.push_back(std::move(x));
    }
    return st.asked;
  }
  const auto& pop = st.pop;
  const double mutation_rate = n > 0 ? 1.0 / static_cast<double>(n) : 0.0;
  auto tournament = [&]() -> const Nsga2Individual& {
    const auto& a = pop[rng.below(pop.size())];
    const auto& b = pop[rng.below(pop.size())];
    return crowded_less(b, a) ? b : a;
  };
  // Polynomial mutation (Deb's bounded form).
  auto mutate = [&](std::vector<double>& x) {
    for (std::size_t i = 0; i < n; ++i) {
      if (rng.unit() >= mutation_rate) continue;
      const double range = upper[i] - lower[i];
      if (!(range > 0.0)) continue;
      const double d1 = (x[i] - lower[i]) / range, d2 = (upper[i] - x[i]) / range;
      const double u = rng.unit(), power = 1.0 / (st.options.eta_mutation + 1.0);
      double dq;
      if (u < 0.5) {
        const double v =
            2.0 * u + (1.0 - 2.0 * u) * std::pow(1.0 - d1, st.options.eta_mutation + 1.0);
        dq = std::pow(v, power) - 1.0;
      } else {
        const double v =
            2.0 * (1.0 - u) + 2.0 * (u - 0.5) * std::pow(1.0 - d2, st.options.eta_mutation + 1.0);
        dq = 1.0 - std::pow(v, power);
      }
      x[i] = std::clamp(x[i] + dq * range, lower[i], upper[i]);
    }
  };
  while (st.asked.size() < size) {
    std::vector<double> c1 = tournament().x, c2 = tournament().x;
    if (rng.unit() < st.options.crossover_probability) {
      // Simulated binary crossover, per coordinate with probability 1/2.
      const double e = 1.0 / (st.options.eta_crossover + 1.0);
      for (std::size_t i = 0; i < n; ++i) {
        if (rng.unit() >= 0.5) continue;
        const double u = rng.unit();
        const double beta = u <= 0.5 ? std::pow(2.0 * u, e) : std::pow(1.0 / (2.0 * (1.0 - u)), e);
        const double a = c1[i], b = c2[i];
        c1[i] = std::clamp(0.5 * ((1.0 + beta) * a + (1.0 - beta) * b), lower[i], upper[i]);
        c2[i] = std::clamp(0.5 * ((1.0 - beta) * a + (1.0 + beta) * b), lower[i], upper[i]);
      }
    }
    mutate(c1);
    mutate(c2);
    st.asked.push_back(std::move(c1));
    if (st.asked.size() < size) st.asked.push_back(std::move(c2));
  }
  return st.asked;
}

void Nsga2::tell(const std::vector<std::vector<double>>& objectives) {
  State& st = *state_;
  std::vector<Nsga2Individual> next;
  for (std::size_t i = 0; i < st.asked.size() && i < objectives.size(); ++i) {
    Nsga2Individual child;
    child.x = st.asked[i];
    child.objectives = objectives[i];
    next.push_back(std::move(child));
  }
  const std::size_t size = next.size();
  // Elitist survival: the best `size` of parents and children by rank, then crowding.
  for (auto& p : st.pop) next.push_back(std::move(p));
  rank_population(next);
  std::stable_sort(next.begin(), next.end(), crowded_less);
  next.resize(size);
  st.pop = std::move(next);
  rank_population(st.pop);
  st.started = true;
}

std::vector<Nsga2Individual> nsga2_minimize(
    const std::function<std::vector<double>(const std::vector<double>&)>& f,
    const std::vector<double>& lower, const std::vector<double>& upper,
    const Nsga2Options& options) {
  Nsga2 ga(lower, upper, options);
  for (int g = 0; g <= options.generations; ++g) {
    const auto xs = ga.ask();
    std::vector<std::vector<double>> objectives;
    for (const auto& x : xs) objectives.push_back(f(x));
    ga.tell(objectives);
  }
  std::vector<Nsga2Individual> front;
  for (const auto& p : ga.population())
    if (p.rank == 0) front.push_back(p);
  std::stable_sort(front.begin(), front.end(),
                   [](const Nsga2Individual& a, const Nsga2Individual& b) {
                     return a.objectives[0] < b.objectives[0];
                   });
  return front;
}

}  // namespace powertrain::search
