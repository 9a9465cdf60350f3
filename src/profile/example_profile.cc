// The example profile: smooth, convex and deliberately imbalanced (heavier last stage).
#include "profile/example_profile.h"

#include <fmt/core.h>

#include <cmath>

namespace powertrain::profile {

std::string example_profile_csv() {
  constexpr int kStages = 4;
  constexpr double kMaxClockMhz = 1410.0;
  std::string csv = "stage,instruction,frequency,time,energy\n";
  for (int stage = 0; stage < kStages; ++stage) {
    const double stage_work = stage == kStages - 1 ? 1.3 : 1.0;
    for (int clock = 1410; clock >= 750; clock -= 30) {
      for (const auto& [name, work] : {std::pair{"forward", 1.0}, std::pair{"backward", 2.0}}) {
        const double ratio = clock / kMaxClockMhz;
        const double time_s = 0.02 * stage_work * work * (0.85 / ratio + 0.15);
        const double power_w = 130.0 + 225.0 * std::pow(ratio, 2.4);
        const double energy_j = power_w * time_s;
        fmt::format_to(std::back_inserter(csv), "{},{},{},{:.6f},{:.4f}\n", stage, name, clock,
                       time_s, energy_j);
      }
    }
  }
  return csv;
}

}  // namespace powertrain::profile
