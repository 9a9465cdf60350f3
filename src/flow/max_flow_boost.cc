// Boost.Graph max flow: the maintained library implementation the hand-written Dinic is checked
// against.
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/boykov_kolmogorov_max_flow.hpp>
#include <boost/graph/edmonds_karp_max_flow.hpp>
#include <cmath>
#include <limits>

#include "flow/max_flow.h"
#include "flow/reachability.h"

namespace powertrain::flow {
namespace {

using Traits = boost::adjacency_list_traits<boost::vecS, boost::vecS, boost::directedS>;
using Graph = boost::adjacency_list<
    boost::vecS, boost::vecS, boost::directedS,
    boost::property<
        boost::vertex_color_t, boost::default_color_type,
        boost::property<boost::vertex_distance_t, long,
                        boost::property<boost::vertex_predecessor_t, Traits::edge_descriptor>>>,
    boost::property<
        boost::edge_capacity_t, double,
        boost::property<boost::edge_residual_capacity_t, double,
                        boost::property<boost::edge_reverse_t, Traits::edge_descriptor>>>>;

struct BoostNetwork {
  Graph graph;
  std::vector<std::pair<Traits::edge_descriptor, int>> arcs;  // forward edge, original index
};

// Builds the residual network; infinite capacities become (sum of finite ones + 1), which no finite
// cut can reach.
BoostNetwork build(int num_nodes, const std::vector<std::tuple<int, int, double>>& plain) {
  BoostNetwork net{Graph(num_nodes), {}};
  double finite_sum = 0.0;
  for (const auto& [from, to, capacity] : plain) {
    if (std::isfinite(capacity)) finite_sum += capacity;
  }
  auto capacity_map = boost::get(boost::edge_capacity, net.graph);
  auto reverse_map = boost::get(boost::edge_reverse, net.graph);
  int index = 0;
  for (const auto& [from, to, capacity] : plain) {
    auto forward = boost::add_edge(from, to, net.graph).first;
    auto backward = boost::add_edge(to, from, net.graph).first;
    capacity_map[forward] = std::isfinite(capacity) ? capacity : finite_sum + 1.0;
    capacity_map[backward] = 0.0;
    reverse_map[forward] = backward;
    reverse_map[backward] = forward;
    net.arcs.emplace_back(forward, index++);
  }
  return net;
}

}  // namespace

double boost_max_flow(int num_nodes, int source, int sink,
                      const std::vector<BoundedArc>& arcs_upper_only) {
  std::vector<std::tuple<int, int, double>> plain;
  for (const auto& arc : arcs_upper_only) plain.emplace_back(arc.from, arc.to, arc.upper);
  BoostNetwork net = build(num_nodes, plain);
  return boost::edmonds_karp_max_flow(net.graph, source, sink);
}

MinCut boost_min_cut_with_lower_bounds(int num_nodes, int source, int sink,
                                       const std::vector<BoundedArc>& arcs, bool boykov) {
  // Same construction as min_cut_with_lower_bounds, solved by Boost.
  std::vector<std::tuple<int, int, double>> plain;
  std::vector<double> demand(num_nodes, 0.0);
  for (const auto& arc : arcs) {
    plain.emplace_back(arc.from, arc.to, arc.upper - arc.lower);
    demand[arc.from] += arc.lower;
    demand[arc.to] -= arc.lower;
  }
  for (int v = 0; v < num_nodes; ++v) {
    if (v == source || v == sink) continue;
    if (demand[v] > 0.0) plain.emplace_back(v, sink, demand[v]);
    if (demand[v] < 0.0) plain.emplace_back(source, v, -demand[v]);
  }
  MinCut result;
  // Unbounded if an all-infinite path exists: Boost would report the substitute value instead.
  if (has_uncapacitated_path(num_nodes, source, sink, arcs)) {
    result.outcome = CutOutcome::kUnbounded;
    result.value = std::numeric_limits<double>::infinity();
    return result;
  }
  BoostNetwork net = build(num_nodes, plain);
  if (boykov)
    boost::boykov_kolmogorov_max_flow(net.graph, source, sink);
  else
    boost::edmonds_karp_max_flow(net.graph, source, sink);
  const double tolerance = flow_tolerance(arcs);
  auto residual_map = boost::get(boost::edge_residual_capacity, net.graph);
  const std::vector<char> seen = reachable_nodes(num_nodes, source, [&](int v, auto&& visit) {
    for (auto [it, end] = boost::out_edges(v, net.graph); it != end; ++it) {
      if (residual_map[*it] > tolerance) visit(static_cast<int>(boost::target(*it, net.graph)));
    }
  });
  result.source_side = seen;
  result.value = cut_capacity(arcs, seen);
  return result;
}

}  // namespace powertrain::flow
