// CSV writing helpers shared by the writers.
#pragma once

#include <string>

namespace powertrain::report {

/// `text` as one CSV field: unchanged unless it holds a comma, quote or newline, then quoted with
/// inner quotes doubled (RFC 4180, as core::parse_csv reads it).
std::string csv_field(const std::string& text);

}  // namespace powertrain::report
