#include "kareus/search.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <numeric>
#include <random>

#include "kareus/profiler.h"
#include "kareus/surrogate.h"

namespace powertrain::kareus {

Schedule SearchSpace::at(std::size_t i) const {
  const std::size_t slots = launch_slots.size(), sms = comm_sms.size();
  Schedule s;
  s.launch_slot = launch_slots[i % slots];
  s.comm_sms = comm_sms[(i / slots) % sms];
  s.clock_mhz = clocks_mhz[i / (slots * sms)];
  return s;
}

SearchSpace default_search_space(const device::GpuSpec& gpu, const ConcurrencyParams& params,
                                 const PartitionType& partition, int clock_stride,
                                 double min_clock_fraction) {
  SearchSpace space;
  const std::vector<int>& clocks = gpu.clocks_mhz;
  const double lowest = min_clock_fraction * gpu.max_clock_mhz() - 1e-9;
  for (std::size_t i = clocks.size(); i-- > 0;) {
    if ((clocks.size() - 1 - i) % static_cast<std::size_t>(std::max(1, clock_stride)) != 0)
      continue;
    if (clocks[i] < lowest) break;
    space.clocks_mhz.push_back(clocks[i]);
  }
  std::reverse(space.clocks_mhz.begin(), space.clocks_mhz.end());
  if (partition.group_size >= 4) {
    for (int k = 3; k <= 30 && k < gpu.sm_count; k += 3) space.comm_sms.push_back(k);
  } else {
    for (int k = 1; k <= 20 && k < gpu.sm_count; ++k) space.comm_sms.push_back(k);
  }
  // Exclude launch slots after which even the fastest collective is exposed longer than overlapped.
  const double comm_fastest =
      partition.comm.work.link_bytes /
      comm_rate_bytes_s(gpu, params, partition.comm.work, space.comm_sms.back());
  double remaining = 0.0;
  std::vector<double> remaining_from(partition.compute.size());
  for (std::size_t i = partition.compute.size(); i-- > 0;) {
    remaining += evaluate_solo(gpu, params, {partition.compute[i]}, gpu.max_clock_mhz()).time_s;
    remaining_from[i] = remaining;
  }
  for (std::size_t i = 0; i < partition.compute.size(); ++i)
    if (i == 0 || remaining_from[i] >= 0.5 * comm_fastest)
      space.launch_slots.push_back(static_cast<int>(i));
  return space;
}

std::vector<Evaluated> exhaustive(const device::GpuSpec& gpu, const ConcurrencyParams& params,
                                  const PartitionType& partition, const SearchSpace& space) {
  std::vector<Evaluated> out(space.size());
  for (std::size_t i = 0; i < space.size(); ++i) {
    out[i].index = i;
    out[i].schedule = space.at(i);
    out[i].cost = evaluate_partition(gpu, params, partition, out[i].schedule);
  }
  return out;
}

core::Result<std::vector<Evaluated>> exhaustive(Profiler& profiler, const PartitionType& partition,
                                                const SearchSpace& space) {
  std::vector<Evaluated> out(space.size());
  for (std::size_t i = 0; i < space.size(); ++i) {
    out[i].index = i;
    out[i].schedule = space.at(i);
    auto cost = profiler.measure(partition, out[i].schedule);
    if (!cost) return cost.error();
    out[i].cost = *cost;
  }
  return out;
}

std::vector<Point2> pareto_front(std::vector<Point2> points) {
  std::sort(points.begin(), points.end(),
            [](const Point2& a, const Point2& b) { return a.x != b.x ? a.x < b.x : a.y < b.y; });
  std::vector<Point2> front;
  for (const Point2& p : points)
    if (front.empty() || p.y < front.back().y) front.push_back(p);
  return front;
}

double hypervolume(const std::vector<Point2>& points, Point2 reference) {
  std::vector<Point2> inside;
  for (const Point2& p : points)
    if (p.x < reference.x && p.y < reference.y) inside.push_back(p);
  const std::vector<Point2> front = pareto_front(std::move(inside));
  double area = 0.0;
  for (std::size_t i = 0; i < front.size(); ++i) {
    const double next_x = i + 1 < front.size() ? front[i + 1].x : reference.x;
    area += (next_x - front[i].x) * (reference.y - front[i].y);
  }
  return area;
}

double hypervolume_improvement(const std::vector<Point2>& front, Point2 p, Point2 reference) {
  if (p.x >= reference.x || p.y >= reference.y) return 0.0;
  // The region p dominates that the front does not: a staircase walk over the front (sorted by x
  // ascending, y descending), clipped to [p.x, ref.x) × [p.y, ref.y).
  double area = 0.0;
  double x = p.x;
  double ceiling = reference.y;  // the front's y at x: points with x' <= x bound the region
  std::size_t i = 0;
  for (; i < front.size() && front[i].x <= p.x; ++i) ceiling = std::min(ceiling, front[i].y);
  while (x < reference.x) {
    const double next_x = i < front.size() ? std::min(front[i].x, reference.x) : reference.x;
    if (ceiling > p.y) area += (next_x - x) * (ceiling - p.y);
    x = next_x;
    if (i < front.size()) ceiling = std::min(ceiling, front[i++].y);
    if (ceiling <= p.y) break;
  }
  return area;
}

const char* pass_name(Pass pass) {
  switch (pass) {
    case Pass::kInitial:
      return "initial";
    case Pass::kTotal:
      return "total-energy HVI";
    case Pass::kDynamic:
      return "dynamic-energy HVI";
    case Pass::kStatic:
      return "static-energy HVI";
    case Pass::kUncertainty:
      return "uncertainty";
  }
  return "?";
}

MboOptions app_c_options(const PartitionType& partition, std::uint64_t seed) {
  MboOptions o;
  o.seed = seed;
  const std::size_t n = partition.compute.size();
  if (n <= 1) {
    o.initial_samples = 36, o.max_batches = 3, o.batch_size = 16;
  } else if (n <= 3) {
    o.initial_samples = 48, o.max_batches = 4, o.batch_size = 16;
  } else {
    o.initial_samples = 96, o.max_batches = 4, o.batch_size = 32;
  }
  return o;
}

namespace {

std::vector<double> features(const SearchSpace& space, const Schedule& s) {
  return {double(s.clock_mhz) / space.clocks_mhz.back(), double(s.comm_sms) / space.comm_sms.back(),
          double(s.launch_slot)};
}

double stddev(const std::vector<double>& v) {
  const double mean = std::accumulate(v.begin(), v.end(), 0.0) / double(v.size());
  double s = 0.0;
  for (double x : v) s += (x - mean) * (x - mean);
  return std::sqrt(s / double(v.size()));
}

// Indices of the k largest scores not yet chosen (ties: lower index).
std::vector<std::size_t> top_k(const std::vector<double>& score, const std::vector<bool>& skip,
                               std::size_t k) {
  std::vector<std::size_t> order;
  for (std::size_t i = 0; i < score.size(); ++i)
    if (!skip[i]) order.push_back(i);
  const std::size_t take = std::min(k, order.size());
  std::partial_sort(order.begin(), order.begin() + static_cast<long>(take), order.end(),
                    [&](std::size_t a, std::size_t b) {
                      return score[a] != score[b] ? score[a] > score[b] : a < b;
                    });
  order.resize(take);
  return order;
}

// Normalization of the search's objectives: the initial sample's maxima.
struct Scales {
  double time_s = 0.0;
  double dynamic_j = 0.0;
  double total_j = 0.0;
  double static_j = 0.0;  // time_s × static power
};

// Exploitation (Alg. 1's three HVI passes): the (time, energy) views of total, dynamic and static
// energy, each normalized, reference 1.1 × the worst observed.
class ExploitationViews {
 public:
  ExploitationViews(const std::vector<Evaluated>& evaluated, const std::vector<double>& t_hat,
                    const std::vector<double>& e_hat, const Scales& scale, double p_static)
      : t_hat_(t_hat), e_hat_(e_hat), scale_(scale), p_static_(p_static) {
    for (int view = 0; view < 3; ++view) {
      std::vector<Point2> observed;
      double max_x = 0.0, max_y = 0.0;
      for (const Evaluated& e : evaluated) {
        const Point2 p = point(view, e.cost.time_s, e.cost.dynamic_j);
        observed.push_back(p);
        max_x = std::max(max_x, p.x), max_y = std::max(max_y, p.y);
      }
      reference_[view] = {1.1 * max_x, 1.1 * max_y};
      front_[view] = pareto_front(std::move(observed));
    }
  }

  // TopK by HVI on `view`, taken greedily: each pick's predicted point joins every view's front
  // (a "believer" in the surrogate) before the next pick is scored. Independent TopK scores every
  // candidate against the same front, so a batch spends its k picks on one gap (trees predict
  // whole blocks of schedules identically: the same predicted point k times); greedily, the k
  // picks are the best k together. Picks need a positive predicted improvement.
  std::vector<std::size_t> take(int view, std::size_t k, const std::vector<bool>& skip) {
    std::vector<std::size_t> picks;
    const std::size_t n = t_hat_.size();
    for (std::size_t round = 0; round < k; ++round) {
      std::size_t best = n;
      double best_hvi = 0.0;
      for (std::size_t j = 0; j < n; ++j) {
        if (skip[j] || std::find(picks.begin(), picks.end(), j) != picks.end()) continue;
        const double hvi =
            hypervolume_improvement(front_[view], predicted(view, j), reference_[view]);
        if (hvi > best_hvi) best_hvi = hvi, best = j;
      }
      if (best == n) break;
      picks.push_back(best);
      believe(best);
    }
    return picks;
  }
  // Adds candidate j's predicted point to every view's front (a pick of another pass).
  void believe(std::size_t j) {
    for (int view = 0; view < 3; ++view) {
      std::vector<Point2> pts = front_[view];
      pts.push_back(predicted(view, j));
      front_[view] = pareto_front(std::move(pts));
    }
  }

 private:
  Point2 point(int view, double t_abs, double dyn_abs) const {
    const double x = t_abs / scale_.time_s;
    if (view == 0) return {x, (t_abs * p_static_ + dyn_abs) / scale_.total_j};
    if (view == 1) return {x, dyn_abs / scale_.dynamic_j};
    return {x, t_abs * p_static_ / scale_.static_j};
  }
  Point2 predicted(int view, std::size_t j) const {
    return point(view, t_hat_[j] * scale_.time_s, e_hat_[j] * scale_.dynamic_j);
  }
  const std::vector<double>& t_hat_;
  const std::vector<double>& e_hat_;
  Scales scale_;
  double p_static_;
  std::array<std::vector<Point2>, 3> front_;
  std::array<Point2, 3> reference_;
};

// Exploration: the disagreement of a bootstrap ensemble about each open schedule.
core::Result<std::vector<double>> ensemble_uncertainty(const FeatureMatrix& x,
                                                       const std::vector<double>& yt,
                                                       const std::vector<double>& ye,
                                                       const FeatureMatrix& query,
                                                       const MboOptions& options,
                                                       std::uint64_t seed, std::mt19937_64& rng) {
  std::vector<double> unc(query.size(), 0.0);
  std::vector<std::vector<double>> ts, es;
  const std::size_t m = std::max<std::size_t>(
      1, static_cast<std::size_t>(std::lround(options.bootstrap_fraction * double(x.size()))));
  for (int member = 0; member < options.ensemble_size; ++member) {
    FeatureMatrix bx;
    std::vector<double> bt, be;
    for (std::size_t s = 0; s < m; ++s) {
      const std::size_t r = static_cast<std::size_t>(rng() % x.size());
      bx.push_back(x[r]), bt.push_back(yt[r]), be.push_back(ye[r]);
    }
    auto pt = fit_predict(bx, bt, query, seed + 10 + 2 * member);
    if (!pt) return pt.error();
    auto pe = fit_predict(bx, be, query, seed + 11 + 2 * member);
    if (!pe) return pe.error();
    ts.push_back(std::move(*pt)), es.push_back(std::move(*pe));
  }
  for (std::size_t j = 0; j < query.size(); ++j) {
    std::vector<double> a, c;
    for (int member = 0; member < options.ensemble_size; ++member)
      a.push_back(ts[member][j]), c.push_back(es[member][j]);
    unc[j] = stddev(a) + stddev(c);
  }
  return unc;
}

// A Latin hypercube sample of `count` distinct candidates: per dimension (clock, SMs, slot) a
// random permutation of `count` strata, each stratum a contiguous range of that dimension's
// values; a candidate drawn twice moves to the next unsampled SM count at the same clock and slot
// (then to any unsampled candidate), so clock and slot strata stay exact.
std::vector<std::size_t> latin_hypercube(const SearchSpace& space, std::size_t count,
                                         std::mt19937_64& rng) {
  auto permutation = [&] {
    std::vector<std::size_t> p(count);
    std::iota(p.begin(), p.end(), 0);
    for (std::size_t i = count; i-- > 1;)
      std::swap(p[i], p[static_cast<std::size_t>(rng() % (i + 1))]);
    return p;
  };
  auto draw = [&](std::size_t stratum, std::size_t size) {
    const std::size_t lo = stratum * size / count;
    const std::size_t hi = std::max(lo + 1, (stratum + 1) * size / count);
    return lo + static_cast<std::size_t>(rng() % (hi - lo));
  };
  const std::size_t clocks = space.clocks_mhz.size(), sms = space.comm_sms.size(),
                    slots = space.launch_slots.size();
  const std::vector<std::size_t> pc = permutation(), pk = permutation(), ps = permutation();
  std::vector<bool> taken(space.size(), false);
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t c = draw(pc[i], clocks), k = draw(pk[i], sms), s = draw(ps[i], slots);
    std::size_t index = (c * sms + k) * slots + s;
    for (std::size_t step = 1; taken[index] && step < sms; ++step)
      index = (c * sms + (k + step) % sms) * slots + s;
    while (taken[index]) index = static_cast<std::size_t>(rng() % space.size());
    taken[index] = true;
    out.push_back(index);
  }
  return out;
}

// Stop when the moving average of the relative HV improvement over R batches is below ε.
bool hypervolume_settled(const std::vector<double>& hypervolumes, const MboOptions& options) {
  const std::size_t h = hypervolumes.size();
  if (h <= static_cast<std::size_t>(options.stop_window)) return false;
  double sum = 0.0;
  for (int r = 0; r < options.stop_window; ++r) {
    const double now = hypervolumes[h - 1 - r], before = hypervolumes[h - 2 - r];
    sum += before > 0.0 ? (now - before) / before : 1.0;
  }
  return sum / options.stop_window < options.stop_epsilon;
}

}  // namespace

core::Result<MboResult> run_mbo(const device::GpuSpec& gpu, const ConcurrencyParams& params,
                                const PartitionType& partition, const SearchSpace& space,
                                const MboOptions& options) {
  ModelProfiler model(gpu, params);
  return run_mbo(model, partition, space, options);
}

core::Result<MboResult> run_mbo(Profiler& profiler, const PartitionType& partition,
                                const SearchSpace& space, const MboOptions& options) {
  const double p_static = profiler.static_power_w();
  const std::size_t n = space.size();
  MboResult result;
  std::vector<bool> done(n, false);
  std::mt19937_64 rng(options.seed);
  auto evaluate = [&](std::size_t i, Pass pass) -> core::Status {
    Evaluated e;
    e.index = i;
    e.schedule = space.at(i);
    auto cost = profiler.measure(partition, e.schedule);
    if (!cost) return cost.error();
    e.cost = *cost;
    result.evaluated.push_back(e);
    result.found_by.push_back(pass);
    done[i] = true;
    return core::Ok{};
  };
  // Initial random sample, stratified per dimension (a Latin hypercube over clock × comm SMs ×
  // launch slot): every clock, SM count and slot range gets its share of the N_init samples, so
  // the surrogates see each knob's effect across the space rather than where uniform draws happen
  // to cluster. Raw engine output only (portable across standard libraries).
  const std::size_t initial = std::min<std::size_t>(n, std::max(1, options.initial_samples));
  for (std::size_t index : latin_hypercube(space, initial, rng))
    if (auto status = evaluate(index, Pass::kInitial); !status) return status.error();
  // Normalization: the initial sample's maxima.
  Scales scale;
  for (const Evaluated& e : result.evaluated) {
    scale.time_s = std::max(scale.time_s, e.cost.time_s);
    scale.dynamic_j = std::max(scale.dynamic_j, e.cost.dynamic_j);
    scale.total_j = std::max(scale.total_j, e.cost.energy_j);
  }
  scale.static_j = scale.time_s * p_static;
  const Point2 fixed_ref{1.1, 1.1};
  auto measured_hv = [&] {
    std::vector<Point2> pts;
    for (const Evaluated& e : result.evaluated)
      pts.push_back({e.cost.time_s / scale.time_s, e.cost.energy_j / scale.total_j});
    return hypervolume(pts, fixed_ref);
  };
  result.hypervolumes.push_back(measured_hv());

  const auto k_total =
      static_cast<std::size_t>(std::lround(options.pass_total * options.batch_size));
  const auto k_dyn =
      static_cast<std::size_t>(std::lround(options.pass_dynamic * options.batch_size));
  const auto k_stat =
      static_cast<std::size_t>(std::lround(options.pass_static * options.batch_size));
  for (int b = 1; b <= options.max_batches && result.evaluated.size() < n; ++b) {
    FeatureMatrix x;
    std::vector<double> yt, ye;
    for (const Evaluated& e : result.evaluated) {
      x.push_back(features(space, e.schedule));
      yt.push_back(e.cost.time_s / scale.time_s);
      ye.push_back(e.cost.dynamic_j / scale.dynamic_j);
    }
    std::vector<std::size_t> open;
    FeatureMatrix query;
    for (std::size_t i = 0; i < n; ++i)
      if (!done[i]) {
        open.push_back(i);
        query.push_back(features(space, space.at(i)));
      }
    const std::uint64_t seed = options.seed * 1000003ULL + static_cast<std::uint64_t>(b);
    auto t_hat = fit_predict(x, yt, query, seed);
    if (!t_hat) return t_hat.error();
    auto e_hat = fit_predict(x, ye, query, seed + 1);
    if (!e_hat) return e_hat.error();
    ExploitationViews views(result.evaluated, *t_hat, *e_hat, scale, p_static);
    auto unc = ensemble_uncertainty(x, yt, ye, query, options, seed, rng);
    if (!unc) return unc.error();
    // Multi-pass selection.
    std::vector<bool> chosen(open.size(), false);
    std::vector<std::pair<std::size_t, Pass>> batch;
    auto choose = [&](const std::vector<std::size_t>& picks, Pass pass) {
      for (std::size_t j : picks) {
        chosen[j] = true;
        batch.emplace_back(j, pass);
      }
    };
    choose(views.take(0, k_total, chosen), Pass::kTotal);
    choose(views.take(1, k_dyn, chosen), Pass::kDynamic);
    choose(views.take(2, k_stat, chosen), Pass::kStatic);
    const std::size_t rest = static_cast<std::size_t>(options.batch_size) > batch.size()
                                 ? static_cast<std::size_t>(options.batch_size) - batch.size()
                                 : 0;
    choose(top_k(*unc, chosen, rest), Pass::kUncertainty);
    for (const auto& [j, pass] : batch)
      if (auto status = evaluate(open[j], pass); !status) return status.error();
    result.batches = b;
    result.hypervolumes.push_back(measured_hv());
    if (hypervolume_settled(result.hypervolumes, options)) {
      result.converged = b < options.max_batches;
      break;
    }
  }
  return result;
}

double hypervolume_ratio(const std::vector<Evaluated>& found, const std::vector<Evaluated>& all) {
  double t_max = 0.0, e_max = 0.0;
  for (const Evaluated& e : all)
    t_max = std::max(t_max, e.cost.time_s), e_max = std::max(e_max, e.cost.energy_j);
  auto points = [&](const std::vector<Evaluated>& v) {
    std::vector<Point2> pts;
    for (const Evaluated& e : v) pts.push_back({e.cost.time_s / t_max, e.cost.energy_j / e_max});
    return pts;
  };
  const Point2 ref{1.1, 1.1};
  const double full = hypervolume(points(all), ref);
  return full > 0.0 ? hypervolume(points(found), ref) / full : 1.0;
}

}  // namespace powertrain::kareus
