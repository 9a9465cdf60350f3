// The search spec: parsing (defaults, one-line errors naming the field), decoding CMA-ES's unit
// points and repairing configurations (tests/search/search_test.cc runs the search itself).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "search/space.h"
#include "search/trial.h"

namespace powertrain::search {
namespace {

TEST(SearchSpec, DefaultsAreMayasTable3) {
  auto spec = parse_search_spec("{}", "s.json");
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_EQ(spec->grid_size(), 4 * 4 * 5 * 3 * 2 * 2 * 2);
  EXPECT_EQ(grid_configs(*spec).size(), 1920u);
}

TEST(SearchSpec, ErrorsNameTheField) {
  auto bad = [](const char* text) {
    auto spec = parse_search_spec(text, "s.json");
    EXPECT_FALSE(spec);
    return spec ? std::string() : spec.error().message;
  };
  EXPECT_NE(bad(R"({"knobs": {"tp": [0]}})").find("s.json: field 'knobs.tp'"), std::string::npos);
  EXPECT_NE(bad(R"({"knobs": {"tpp": [1]}})").find("'knobs.tpp' is unknown"), std::string::npos);
  EXPECT_NE(bad(R"({"knobs": {"recompute": [1]}})").find("'knobs.recompute'"), std::string::npos);
  EXPECT_NE(bad(R"({"objective": "speed"})").find("'objective' must be time, energy or both"),
            std::string::npos);
  EXPECT_NE(bad(R"({"num_gpus": -4})").find("'num_gpus'"), std::string::npos);
  EXPECT_NE(bad(R"({"colour": 1})").find("'colour' is unknown"), std::string::npos);
  EXPECT_NE(bad(R"({"early_stop": {"top": 0}})").find("'early_stop.top'"), std::string::npos);
  EXPECT_NE(bad("{").find("s.json: invalid JSON"), std::string::npos);
  auto ok = parse_search_spec(
      R"({"knobs": {"tp": [4, 1, 4], "recompute": [true]}, "algorithm": "cmaes", "seed": 7})",
      "s.json");
  ASSERT_TRUE(ok) << ok.error().message;
  EXPECT_EQ(ok->values[kTp], (std::vector<int>{1, 4}));
  EXPECT_EQ(ok->values[kRecompute], (std::vector<int>{1}));
  EXPECT_EQ(ok->algorithm, Algorithm::kCmaes);
  EXPECT_EQ(ok->seed, 7u);
}

TEST(SearchSpec, DecodeCoversEveryValue) {
  const SearchSpec spec = default_search_spec();
  std::map<int, int> seen;
  for (double u = -0.5; u <= 1.5; u += 0.01) {
    const Config c = decode_unit_point(spec, std::vector<double>(kNumKnobs, u));
    seen[c.index[kMicrobatchSize]]++;
  }
  EXPECT_EQ(seen.size(), 5u);
  EXPECT_EQ(decode_unit_point(spec, std::vector<double>(kNumKnobs, 2.0)).index[kTp], 3);
}

// The CMA-ES relaxation never proposes an impossible configuration: every grid point repairs to a
// structurally valid one, and valid ones stay as they are.
TEST(SearchSpec, RepairMapsEveryConfigurationToAValidOne) {
  for (int gpus : {8, 64}) {
    SearchSpec spec = default_search_spec();
    spec.model = "gpt3-2.7b";
    spec.gpu = "h100";
    spec.num_gpus = gpus;
    spec.global_batch = 64;  // 64 / (6 x dp) is never whole: microbatch 6 steps down
    int repaired = 0;
    for (const Config& c : grid_configs(spec)) {
      const Config r = repair_config(spec, c);
      const TrialResult before = check_config(spec, c);
      const TrialResult after = check_config(spec, r);
      if (before.status != TrialStatus::kInvalid) {
        EXPECT_EQ(r, c) << config_label(spec, c);
      } else {
        ++repaired;
        EXPECT_NE(after.status, TrialStatus::kInvalid)
            << gpus << " GPUs: " << config_label(spec, c) << " -> " << config_label(spec, r) << ": "
            << after.reason;
      }
    }
    EXPECT_GT(repaired, 1000);
  }
}

}  // namespace
}  // namespace powertrain::search
