// Token-level helpers of the Kineto reader. Timestamps are parsed digit by digit because
// epoch-µs floats such as 1711964646123456.789 carry 19 significant digits: a double would lose
// the nanoseconds.
#include "trace/kineto_values.h"

#include <array>
#include <charconv>
#include <cmath>
#include <limits>
#include <utility>

namespace powertrain::trace::detail {
namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

bool is_digit(char c) { return c >= '0' && c <= '9'; }

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

// Fallback for exponent forms: through double, then rounded.
bool scaled_via_double(std::string_view text, double scale, std::int64_t* out) {
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  double value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size()) return false;
  const double scaled = value * scale;
  // 9.2e18 is not representable exactly; stay strictly inside the int64 range.
  if (!std::isfinite(scaled) || std::fabs(scaled) >= 9.2e18) return false;
  *out = std::llround(scaled);
  return true;
}

// Decimal number at the start of `text` → round(value × 10^scale_digits), half away from zero.
// `*used` = characters that belong to the number.
bool scan_scaled(std::string_view text, int scale_digits, std::int64_t* out, std::size_t* used) {
  std::size_t i = 0;
  bool negative = false;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) {
    negative = text[i] == '-';
    ++i;
  }
  std::uint64_t integer = 0;
  bool any_digit = false;
  for (; i < text.size() && is_digit(text[i]); ++i) {
    if (integer > (std::numeric_limits<std::uint64_t>::max() - 9) / 10) return false;
    integer = integer * 10 + static_cast<std::uint64_t>(text[i] - '0');
    any_digit = true;
  }
  std::uint64_t fraction = 0;
  int fraction_digits = 0;
  bool round_up = false;
  if (i < text.size() && text[i] == '.') {
    ++i;
    for (; i < text.size() && is_digit(text[i]); ++i) {
      any_digit = true;
      if (fraction_digits < scale_digits) {
        fraction = fraction * 10 + static_cast<std::uint64_t>(text[i] - '0');
        ++fraction_digits;
      } else if (fraction_digits == scale_digits) {
        round_up = text[i] >= '5';  // later digits cannot change a half-away-from-zero rounding
        ++fraction_digits;
      }
    }
  }
  if (!any_digit) return false;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
    while (i < text.size() && is_digit(text[i])) ++i;
    *used = i;
    return scaled_via_double(text.substr(0, i), std::pow(10.0, scale_digits), out);
  }
  *used = i;
  for (int d = std::min(fraction_digits, scale_digits); d < scale_digits; ++d) fraction *= 10;
  std::uint64_t multiplier = 1;
  for (int d = 0; d < scale_digits; ++d) multiplier *= 10;
  if (integer > static_cast<std::uint64_t>(kMax) / multiplier) return false;
  const std::uint64_t magnitude = integer * multiplier + fraction + (round_up ? 1 : 0);
  if (magnitude > static_cast<std::uint64_t>(kMax)) return false;
  *out = negative ? -static_cast<std::int64_t>(magnitude) : static_cast<std::int64_t>(magnitude);
  return true;
}

// A JSON number token (plus the whitespace simdjson leaves after it) or a string holding a number
// (spaces around it allowed).
bool parse_number_token(std::string_view token, int scale_digits, std::int64_t* out) {
  if (token.empty()) return false;
  std::size_t used = 0;
  if (token.front() != '"') {
    if (!scan_scaled(token, scale_digits, out, &used)) return false;
    for (; used < token.size(); ++used) {
      if (!is_space(token[used])) return false;
    }
    return true;
  }
  std::string_view text;
  if (!string_contents(token, &text)) return false;
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  return scan_scaled(text, scale_digits, out, &used) && used == text.size() && used > 0;
}

void append_utf8(std::uint32_t code_point, std::string* out) {
  if (code_point < 0x80) {
    out->push_back(static_cast<char>(code_point));
  } else if (code_point < 0x800) {
    out->push_back(static_cast<char>(0xc0 | (code_point >> 6)));
    out->push_back(static_cast<char>(0x80 | (code_point & 0x3f)));
  } else if (code_point < 0x10000) {
    out->push_back(static_cast<char>(0xe0 | (code_point >> 12)));
    out->push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (code_point & 0x3f)));
  } else {
    out->push_back(static_cast<char>(0xf0 | (code_point >> 18)));
    out->push_back(static_cast<char>(0x80 | ((code_point >> 12) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | ((code_point >> 6) & 0x3f)));
    out->push_back(static_cast<char>(0x80 | (code_point & 0x3f)));
  }
}

bool hex4(std::string_view raw, std::size_t at, std::uint32_t* value) {
  if (at + 4 > raw.size()) return false;
  std::uint32_t result = 0;
  for (std::size_t i = at; i < at + 4; ++i) {
    const char c = raw[i];
    std::uint32_t digit = 0;
    if (c >= '0' && c <= '9') {
      digit = static_cast<std::uint32_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      digit = static_cast<std::uint32_t>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      digit = static_cast<std::uint32_t>(c - 'A' + 10);
    } else {
      return false;
    }
    result = result * 16 + digit;
  }
  *value = result;
  return true;
}

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

}  // namespace

bool parse_us_as_ns_slow(std::string_view token, std::int64_t* ns) {
  return parse_number_token(token, 3, ns);  // strings, exponents, more digits, rounding
}

bool parse_integer_slow(std::string_view token, std::int64_t* value) {
  return parse_number_token(token, 0, value);
}

bool json_unescape(std::string_view raw, std::string* out) {
  out->clear();
  out->reserve(raw.size());
  for (std::size_t i = 0; i < raw.size(); ++i) {
    const char c = raw[i];
    if (c != '\\') {
      out->push_back(c);
      continue;
    }
    if (++i >= raw.size()) return false;
    switch (raw[i]) {
      case '"':
        out->push_back('"');
        break;
      case '\\':
        out->push_back('\\');
        break;
      case '/':
        out->push_back('/');
        break;
      case 'b':
        out->push_back('\b');
        break;
      case 'f':
        out->push_back('\f');
        break;
      case 'n':
        out->push_back('\n');
        break;
      case 'r':
        out->push_back('\r');
        break;
      case 't':
        out->push_back('\t');
        break;
      case 'u': {
        std::uint32_t code = 0;
        if (!hex4(raw, i + 1, &code)) return false;
        i += 4;
        if (code >= 0xd800 && code <= 0xdbff) {  // high surrogate: a low one must follow
          std::uint32_t low = 0;
          if (i + 2 >= raw.size() || raw[i + 1] != '\\' || raw[i + 2] != 'u' ||
              !hex4(raw, i + 3, &low) || low < 0xdc00 || low > 0xdfff) {
            return false;
          }
          i += 6;
          code = 0x10000 + ((code - 0xd800) << 10) + (low - 0xdc00);
        } else if (code >= 0xdc00 && code <= 0xdfff) {
          return false;
        }
        append_utf8(code, out);
        break;
      }
      default:
        return false;
    }
  }
  return true;
}

std::string to_lower(std::string_view text) {
  std::string lower(text);
  for (char& c : lower) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return lower;
}

std::int64_t element_bytes(std::string_view dtype) {
  std::string name = to_lower(dtype);
  for (std::string_view prefix : {"c10::", "at::", "torch."}) {
    if (starts_with(name, prefix)) name.erase(0, prefix.size());
  }
  static constexpr std::array<std::pair<std::string_view, std::int64_t>, 52> kSizes{{
      {"float", 4},
      {"float32", 4},
      {"int", 4},
      {"int32", 4},
      {"int32_t", 4},
      {"uint32", 4},
      {"uint32_t", 4},
      {"unsigned int", 4},
      {"qint32", 4},
      {"f32", 4},
      {"complexhalf", 4},
      {"double", 8},
      {"float64", 8},
      {"long", 8},
      {"long int", 8},
      {"long long", 8},
      {"long long int", 8},
      {"unsigned long", 8},
      {"int64", 8},
      {"int64_t", 8},
      {"uint64", 8},
      {"uint64_t", 8},
      {"complexfloat", 8},
      {"f64", 8},
      {"complexdouble", 16},
      {"half", 2},
      {"float16", 2},
      {"__half", 2},
      {"bfloat16", 2},
      {"__nv_bfloat16", 2},
      {"bf16", 2},
      {"f16", 2},
      {"short", 2},
      {"short int", 2},
      {"int16", 2},
      {"uint16", 2},
      {"bool", 1},
      {"byte", 1},
      {"char", 1},
      {"signed char", 1},
      {"unsigned char", 1},
      {"int8", 1},
      {"int8_t", 1},
      {"uint8", 1},
      {"uint8_t", 1},
      {"qint8", 1},
      {"quint8", 1},
      {"float8_e4m3fn", 1},
      {"float8_e5m2", 1},
      {"float8_e4m3fnuz", 1},
      {"f8e4m3", 1},
      {"f8e5m2", 1},
  }};
  for (const auto& [known, bytes] : kSizes) {
    if (name == known) return bytes;
  }
  if (starts_with(name, "float8_")) return 1;
  return -1;
}

KernelCollective collective_from_kernel_name(std::string_view kernel_name) {
  KernelCollective result;
  std::string_view rest;
  if (starts_with(kernel_name, "ncclKernel_")) {
    rest = kernel_name.substr(11);
  } else if (starts_with(kernel_name, "ncclDevKernel_")) {
    rest = kernel_name.substr(14);
  } else {
    return result;
  }
  rest = rest.substr(0, std::min(rest.find('('), rest.size()));
  const std::string_view op = rest.substr(0, std::min(rest.find('_'), rest.size()));
  if (op != "Generic") result.name = to_lower(op);
  // The type is a '_'-separated token ("..._Sum_f32_RING_LL", NCCL ≥ 2.19) or the suffix after
  // the reduction op, which may itself contain '_' ("..._Sum_int8_t", "..._Sum___nv_bfloat16").
  for (std::size_t start = rest.find('_'); start != std::string_view::npos;
       start = rest.find('_', start + 1)) {
    const std::string_view suffix = rest.substr(start + 1);
    std::int64_t bytes = element_bytes(suffix.substr(0, std::min(suffix.find('_'), suffix.size())));
    if (bytes <= 0) bytes = element_bytes(suffix);
    if (bytes > 0) {
      result.element_bytes = bytes;
      break;
    }
  }
  return result;
}

}  // namespace powertrain::trace::detail
