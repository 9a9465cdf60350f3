// The C++ reference fit against scipy.optimize.curve_fit (tests/python/reference_fit.py) on every
// (stage, instruction) of the shared Perseus profiles.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

#include "../support/run_command.h"
#include "core/csv.h"
#include "frontier/cost_model.h"
#include "profile/profile.h"

namespace powertrain::frontier {
namespace {

namespace fs = std::filesystem;

using testing_support::run_command;

struct Case {
  const char* profile;
  double unit_time_s;
  double p_blocking_w;
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.profile; }

class ScipyCrossCheck : public ::testing::TestWithParam<Case> {};

TEST_P(ScipyCrossCheck, ReferenceFitMatchesCurveFit) {
  const Case& c = GetParam();
  const fs::path data = fs::path(POWERTRAIN_SOURCE_DIR) / ".." / "shared" / "data" / "perseus";
  const fs::path profile_path = data / c.profile;
  const fs::path script = fs::path(POWERTRAIN_SOURCE_DIR) / "tests" / "python" / "reference_fit.py";
  if (!fs::exists(profile_path)) GTEST_SKIP() << "real data not found at " << profile_path;
  if (!fs::exists("/usr/bin/python3")) GTEST_SKIP() << "no /usr/bin/python3";
  const auto [csv, status] = run_command(
      "/usr/bin/python3 '" + script.string() + "' '" + profile_path.string() + "' " +
      std::to_string(c.unit_time_s) + " " + std::to_string(c.p_blocking_w) + " 2>/dev/null");
  if (status == 2) GTEST_SKIP() << "python3-scipy/python3-numpy not installed";
  ASSERT_EQ(status, 0) << csv;
  auto table = core::parse_csv(csv, "reference_fit.py output");
  ASSERT_TRUE(table.ok()) << table.error().message;
  auto profile = profile::read_profile(profile_path.string());
  ASSERT_TRUE(profile.ok()) << profile.error().message;
  ASSERT_EQ(table->rows.size(), profile->entries.size());

  double worst_parameter = 0.0, worst_value = 0.0;
  for (const core::CsvRow& row : table->rows) {
    const int stage = std::stoi(row.fields[0]);
    const auto kind = pipeline::parse_profiled_instruction(row.fields[1]);
    ASSERT_TRUE(kind.has_value()) << row.fields[1];
    const profile::InstructionProfile* entry = profile->find(stage, *kind);
    ASSERT_NE(entry, nullptr);
    auto model =
        build_cost_model(*entry, c.unit_time_s, c.p_blocking_w, CostModelKind::kExponential,
                         Quantization::kFloor, FitMethod::kReference);
    ASSERT_TRUE(model.ok()) << model.error().message;
    const std::string what = row.fields[0] + " " + row.fields[1];
    // Same filtered options (units) and effective energies.
    std::string units;
    for (const auto& option : model->options()) {
      if (!units.empty()) units += ";";
      units += std::to_string(option.units);
    }
    EXPECT_EQ(units, row.fields[2]) << what;
    ASSERT_FALSE(row.fields[4].empty()) << what << ": scipy found no fit";
    const FitReport& fit = model->fit();
    ASSERT_EQ(fit.fallback, FitFallback::kNone) << what << ": " << fit.fallback_reason;
    const double a = std::stod(row.fields[4]), b = std::stod(row.fields[5]),
                 cc = std::stod(row.fields[6]);
    for (auto [ours, theirs] : {std::pair{fit.a, a}, {fit.b, b}, {fit.c, cc}}) {
      worst_parameter = std::max(worst_parameter, std::abs(ours - theirs) / std::abs(theirs));
    }
    for (const auto& option : model->options()) {
      const double scipy_value = a * std::exp(b * option.units) + cc;
      worst_value = std::max(worst_value, std::abs(model->cost(option.units) - scipy_value) /
                                              std::abs(option.energy_j));
    }
  }
  std::printf("scipy cross-check %s: worst parameter difference %.2e, fitted value %.2e\n",
              c.profile, worst_parameter, worst_value);
  // LM stops at ftol/xtol 1.5e-8 and A40 backward is a flat valley (b ~ -6e-4 per unit), so the
  // two stop at slightly different parameters (measured 7e-5) with the same fitted curve (1.4e-7).
  EXPECT_LT(worst_parameter, 1e-3);
  EXPECT_LT(worst_value, 1e-6);
}

INSTANTIATE_TEST_SUITE_P(Perseus, ScipyCrossCheck,
                         ::testing::Values(Case{"gpt3-175b+a100_sxm_bf16.csv", 1e-3, 83.64},
                                           Case{"gpt3-175b+a40_bf16.csv", 1e-4, 70.38}));

}  // namespace
}  // namespace powertrain::frontier
