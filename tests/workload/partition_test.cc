// Partitions: uniform and parsed layouts, the exact minimum-imbalance search against brute
// force, and the shapes of Perseus's Table 7.
#include "workload/partition.h"

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <limits>
#include <random>

#include "workload/job.h"

namespace powertrain::workload {
namespace {

std::vector<int> bounds(const core::Result<Partition>& p) {
  EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message);
  return p.ok() ? p->boundaries : std::vector<int>{};
}

std::string parse_error(std::string_view text, int units, int stages) {
  auto p = parse_partition(text, units, stages);
  return p.ok() ? "(ok)" : p.error().message;
}

TEST(PartitionTest, UniformSplitsLayersAndGivesTheLmHeadToTheLastStage) {
  EXPECT_EQ(bounds(uniform_partition(97, 8)),
            (std::vector<int>{0, 12, 24, 36, 48, 60, 72, 84, 97}));
  EXPECT_EQ(bounds(uniform_partition(25, 4)), (std::vector<int>{0, 6, 12, 18, 25}));
  EXPECT_EQ(bounds(uniform_partition(31, 4)), (std::vector<int>{0, 8, 16, 23, 31}));
  EXPECT_EQ(bounds(uniform_partition(25, 1)), (std::vector<int>{0, 25}));
  auto too_many = uniform_partition(25, 25);
  ASSERT_FALSE(too_many.ok());
  EXPECT_EQ(too_many.error().message,
            "uniform partition: stages must be between 1 and the 24 Transformer layers, got 25");
}

TEST(PartitionTest, ParsesThePaperForm) {
  EXPECT_EQ(bounds(parse_partition("[0, 6, 12, 19, 25]", 25, 4)),
            (std::vector<int>{0, 6, 12, 19, 25}));
  EXPECT_EQ(bounds(parse_partition(" 0,6,12,19,25 ", 25, 4)), (std::vector<int>{0, 6, 12, 19, 25}));
  EXPECT_EQ(to_string(*parse_partition("[0,6,12,19,25]", 25, 4)), "[0, 6, 12, 19, 25]");
}

TEST(PartitionTest, ParseErrorsSayWhatIsWrong) {
  EXPECT_EQ(parse_error("[1, 6, 12, 19, 25]", 25, 4),
            "partition [1, 6, 12, 19, 25]: must start at 0, got 1");
  EXPECT_EQ(parse_error("[0, 6, 6, 19, 25]", 25, 4),
            "partition [0, 6, 6, 19, 25]: boundaries must strictly increase; stage 1 (6 to 6) "
            "would be empty or negative");
  EXPECT_EQ(parse_error("[0, 6, 12, 25]", 25, 4),
            "partition [0, 6, 12, 25]: has 4 numbers, expected 5 for 4 stages");
  EXPECT_EQ(parse_error("[0, 6, 12, 19, 24]", 25, 4),
            "partition [0, 6, 12, 19, 24]: must end at 25 (the number of layer units), got 24");
  EXPECT_EQ(parse_error("[0, 6, x, 19, 25]", 25, 4),
            "partition '[0, 6, x, 19, 25]': expected comma-separated integers, got 'x'");
  EXPECT_EQ(parse_error("[0, 6, 12, 19, 25", 25, 4),
            "partition '[0, 6, 12, 19, 25': missing closing ']'");
  EXPECT_EQ(parse_error("", 25, 4), "partition '': expected comma-separated integers, got ''");
}

// Every partition by enumeration; the same order of preference as min_imbalance_partition:
// ratio (ties within the tolerance), then max stage cost, then lexicographic boundaries.
ImbalanceResult brute_force(const std::vector<double>& costs, int stages) {
  const int n = static_cast<int>(costs.size());
  std::vector<Partition> all;
  std::vector<int> current{0};
  std::function<void(int)> extend = [&](int at) {
    const int placed = static_cast<int>(current.size()) - 1;
    if (placed == stages - 1) {
      current.push_back(n);
      all.push_back(Partition{current});
      current.pop_back();
      return;
    }
    for (int next = at + 1; next <= n - (stages - 1 - placed); ++next) {
      current.push_back(next);
      extend(next);
      current.pop_back();
    }
  };
  extend(0);
  double best_ratio = std::numeric_limits<double>::infinity();
  for (const Partition& p : all) best_ratio = std::min(best_ratio, imbalance_ratio(costs, p));
  const double limit = best_ratio * (1 + kImbalanceTieTolerance);
  double best_max = std::numeric_limits<double>::infinity();
  for (const Partition& p : all) {
    if (imbalance_ratio(costs, p) > limit) continue;
    const auto sc = stage_costs(costs, p);
    best_max = std::min(best_max, *std::max_element(sc.begin(), sc.end()));
  }
  for (const Partition& p : all) {  // enumeration order is lexicographic
    const auto sc = stage_costs(costs, p);
    if (imbalance_ratio(costs, p) <= limit &&
        *std::max_element(sc.begin(), sc.end()) <= best_max * (1 + 1e-12)) {
      return {p, sc, imbalance_ratio(costs, p)};
    }
  }
  return {};
}

TEST(PartitionTest, MinimumImbalanceMatchesBruteForce) {
  std::mt19937 rng(20240611);
  for (int trial = 0; trial < 600; ++trial) {
    const int n = std::uniform_int_distribution<int>(1, 14)(rng);
    // Mostly up to 5 stages; every tenth case allows up to n (single-unit stages).
    const int max_stages = trial % 10 == 9 ? n : std::min(5, n);
    const int stages = std::uniform_int_distribution<int>(1, max_stages)(rng);
    std::vector<double> costs(n);
    // Half the cases use small integers, which tie often and exercise the tie-break.
    const bool integers = trial % 2 == 0;
    for (double& c : costs) {
      c = integers ? std::uniform_int_distribution<int>(1, 4)(rng)
                   : std::uniform_real_distribution<double>(0.1, 3.0)(rng);
    }
    auto fast = min_imbalance_partition(costs, stages);
    ASSERT_TRUE(fast.ok()) << fast.error().message;
    const ImbalanceResult slow = brute_force(costs, stages);
    ASSERT_NEAR(fast->imbalance_ratio, slow.imbalance_ratio, 1e-12) << "trial " << trial;
    EXPECT_EQ(fast->partition.boundaries, slow.partition.boundaries) << "trial " << trial;
  }
}

// Table 7's GPT-3 1.3B rows: 24 layers of cost 1 and an LM head unit of cost h.
std::vector<double> gpt_like(int layers, double head) {
  std::vector<double> costs(layers, 1.0);
  costs.push_back(head);
  return costs;
}

TEST(PartitionTest, ReproducesTable7ShapeForGpt3_1_3B) {
  // LM head between one and two layers (A100 PCIe column): 7/6 and 4/3.
  for (double head : {1.2, 1.5, 1.89}) {
    auto four = min_imbalance_partition(gpt_like(24, head), 4);
    ASSERT_TRUE(four.ok());
    EXPECT_NEAR(four->imbalance_ratio, 7.0 / 6.0, 1e-12);
    EXPECT_EQ(four->partition.boundaries, (std::vector<int>{0, 6, 12, 19, 25}));  // as printed
    auto eight = min_imbalance_partition(gpt_like(24, head), 8);
    ASSERT_TRUE(eight.ok());
    EXPECT_NEAR(eight->imbalance_ratio, 4.0 / 3.0, 1e-12);
    // Seven partitions tie (the 4-layer stage anywhere in stages 0-6); the paper printed
    // [0, 4, 7, ..., 25], the tie-break picks the lexicographically smallest.
    EXPECT_EQ(eight->partition.boundaries, (std::vector<int>{0, 3, 6, 9, 12, 15, 18, 22, 25}));
  }
  // LM head a little under one layer (A40 column): unique optima.
  auto four = min_imbalance_partition(gpt_like(24, 0.93), 4);
  ASSERT_TRUE(four.ok());
  EXPECT_EQ(four->partition.boundaries, (std::vector<int>{0, 6, 12, 18, 25}));
  EXPECT_NEAR(four->imbalance_ratio, 6.93 / 6.0, 1e-12);  // 1.155, printed 1.15
  auto eight = min_imbalance_partition(gpt_like(24, 0.93), 8);
  ASSERT_TRUE(eight.ok());
  EXPECT_EQ(eight->partition.boundaries, (std::vector<int>{0, 3, 6, 9, 12, 15, 18, 21, 25}));
  EXPECT_NEAR(eight->imbalance_ratio, 3.93 / 3.0, 1e-12);  // 1.31
}

// FLOP-proportional unit costs from the op model (microbatch 4 as in Perseus's runs).
ImbalanceResult flop_partition(const char* name, int stages) {
  auto m = find_model(name);
  EXPECT_TRUE(m.ok());
  ParallelConfig c = make_parallel_config(*m);
  c.microbatch_size = 4;
  c.pp = stages;
  auto result = min_imbalance_partition(unit_forward_flops(layer_units(*m, c)), stages);
  EXPECT_TRUE(result.ok());
  return *result;
}

TEST(PartitionTest, FlopProportionalCostsGiveTable7Partitions) {
  // GPT-3 1.3B: the LM head costs 1.89 layers.
  ImbalanceResult r = flop_partition("gpt3-1.3b", 4);
  EXPECT_EQ(r.partition.boundaries, (std::vector<int>{0, 6, 12, 19, 25}));
  EXPECT_NEAR(r.imbalance_ratio, 7.0 / 6.0, 1e-9);
  r = flop_partition("gpt3-1.3b", 8);
  EXPECT_NEAR(r.imbalance_ratio, 4.0 / 3.0, 1e-9);
  // GPT-3 2.7B: the LM head costs 1.54 layers; the paper's A100 partition and ratios.
  r = flop_partition("gpt3-2.7b", 4);
  EXPECT_EQ(r.partition.boundaries, (std::vector<int>{0, 8, 16, 25, 33}));
  EXPECT_NEAR(r.imbalance_ratio, 9.0 / 8.0, 1e-9);
  r = flop_partition("gpt3-2.7b", 8);
  EXPECT_EQ(r.partition.boundaries, (std::vector<int>{0, 4, 8, 12, 16, 20, 24, 29, 33}));
  EXPECT_NEAR(r.imbalance_ratio, 5.0 / 4.0, 1e-9);
  // GPT-3 175B: the LM head is a third of a layer; uniform is optimal.
  r = flop_partition("gpt3-175b", 8);
  EXPECT_EQ(r.partition.boundaries, (std::vector<int>{0, 12, 24, 36, 48, 60, 72, 84, 97}));
  EXPECT_NEAR(r.imbalance_ratio, 1.028, 0.001);  // paper: 1.03 (A100), 1.02 (A40)
}

TEST(PartitionTest, MinimumImbalanceIsFastForLargeModels) {
  std::mt19937 rng(7);
  for (const auto& [units, stages] : {std::pair{97, 8}, {140, 16}, {97, 4}, {200, 32}}) {
    std::vector<double> costs(units);
    for (double& c : costs) c = std::uniform_real_distribution<double>(0.8, 1.2)(rng);
    const auto start = std::chrono::steady_clock::now();
    auto result = min_imbalance_partition(costs, stages);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_TRUE(result.ok());
    EXPECT_EQ(result->partition.num_stages(), stages);
    EXPECT_LT(seconds, 0.5) << units << " units, " << stages << " stages";
    // Optimal: no single boundary move improves the ratio.
    for (int s = 1; s < stages; ++s) {
      for (int delta : {-1, 1}) {
        Partition moved = result->partition;
        moved.boundaries[s] += delta;
        if (moved.boundaries[s] <= moved.boundaries[s - 1] ||
            moved.boundaries[s] >= moved.boundaries[s + 1]) {
          continue;
        }
        EXPECT_GE(imbalance_ratio(costs, moved), result->imbalance_ratio * (1 - 1e-12));
      }
    }
  }
}

// More than 64 stages: stage-count bit sets span several words.
TEST(PartitionTest, MinimumImbalanceHandlesManyStages) {
  std::vector<int> even;
  for (int b = 0; b <= 130; b += 2) even.push_back(b);
  auto exact = min_imbalance_partition(std::vector<double>(130, 1.0), 65);
  ASSERT_TRUE(exact.ok());
  EXPECT_EQ(exact->partition.boundaries, even);
  EXPECT_EQ(exact->imbalance_ratio, 1.0);
  // One unit more: one stage of 3 (ratio 1.5), placed last by the lexicographic tie-break.
  auto odd = min_imbalance_partition(std::vector<double>(131, 1.0), 65);
  ASSERT_TRUE(odd.ok());
  even.back() = 131;
  EXPECT_EQ(odd->partition.boundaries, even);
  EXPECT_EQ(odd->imbalance_ratio, 1.5);
}

TEST(PartitionTest, MinimumImbalanceRejectsBadInput) {
  auto zero = min_imbalance_partition({1.0, 0.0, 1.0}, 2);
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.error().message,
            "minimum-imbalance partition: unit 1 cost must be finite and positive, got 0");
  auto many = min_imbalance_partition({1.0, 1.0}, 3);
  ASSERT_FALSE(many.ok());
  EXPECT_EQ(many.error().message,
            "minimum-imbalance partition: stages must be between 1 and the 2 units, got 3");
  auto single = min_imbalance_partition({2.0, 3.0, 4.0}, 3);
  ASSERT_TRUE(single.ok());
  EXPECT_NEAR(single->imbalance_ratio, 2.0, 1e-15);
}

}  // namespace
}  // namespace powertrain::workload
