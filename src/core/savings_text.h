// "saves 3.21 %" or "uses 0.05 % more": a negative saving is never printed as one.
#pragma once

#include <fmt/core.h>

#include <cmath>
#include <string>

namespace powertrain::core {

/// Phrase for an energy saving given as a fraction of a baseline (0.0321 → "saves 3.21 %").
inline std::string savings_phrase(double fraction) {
  const double percent = 100.0 * fraction;
  if (std::round(percent * 100.0) == 0.0) return "saves 0.00 %";
  if (percent > 0.0) return fmt::format("saves {:.2f} %", percent);
  return fmt::format("uses {:.2f} % more", -percent);
}

}  // namespace powertrain::core
