// Small JSON pieces shared by several writers (replay, what-if, emulation).
#pragma once

#include <nlohmann/json.hpp>

#include "sim/metrics.h"

namespace powertrain::report {

/// A step-time breakdown as fractions in [0, 1]: exposed compute, exposed communication,
/// overlapped, other.
nlohmann::json breakdown_json(const sim::Breakdown& b);

}  // namespace powertrain::report
