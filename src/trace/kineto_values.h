// Token-level helpers of the Kineto reader: exact decimal µs → ns conversion, tolerant integer
// parsing, JSON string unescaping, dtype sizes and NCCL kernel names. Pure functions, no simdjson.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace powertrain::trace::detail {

/// Removes the whitespace simdjson's raw tokens carry after the value.
// Inline, like string_contents: called for several fields of every event.
inline std::string_view trim_token(std::string_view token) {
  while (!token.empty() && (token.back() == ' ' || token.back() == '\n' || token.back() == '\r' ||
                            token.back() == '\t')) {
    token.remove_suffix(1);
  }
  return token;
}

/// When `token` (trimmed) is a JSON string, stores its raw, still escaped contents and returns
/// true.
inline bool string_contents(std::string_view token, std::string_view* contents) {
  token = trim_token(token);
  if (token.size() < 2 || token.front() != '"' || token.back() != '"') return false;
  *contents = token.substr(1, token.size() - 2);
  return true;
}

/// Parses a decimal count of microseconds — a JSON integer or float, or a string holding one —
/// into integer nanoseconds, rounded to the nearest (half away from zero). Exact for plain decimal
/// text (no binary floating point involved); exponent forms go through double. False when the
/// token is not a number or the result does not fit in int64. O(token length).
bool parse_us_as_ns_slow(std::string_view token, std::int64_t* ns);
// Inline: called for every ts and dur, nearly always on the plain decimal text the fast path takes.
inline bool parse_us_as_ns(std::string_view token, std::int64_t* ns) {
  // Fast path: up to 16 integer digits and up to 3 decimals (epoch µs, relative µs with ns).
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  const char* p = token.data();
  const char* const end = p + token.size();
  const bool negative = p < end && *p == '-';
  if (negative) ++p;
  const char* const first = p;
  std::int64_t integer = 0;
  while (p < end && digit(*p) && p - first < 16) integer = integer * 10 + (*p++ - '0');
  if (p > first && integer <= 9'223'372'036'854'774) {  // × 1000 + 999 still fits in int64
    std::int64_t fraction = 0;
    int digits = 0;
    if (p < end && *p == '.') {
      ++p;
      while (p < end && digit(*p) && digits < 3) {
        fraction = fraction * 10 + (*p++ - '0');
        ++digits;
      }
    }
    if (p == end || *p == ' ' || *p == '\n' || *p == '\r' || *p == '\t') {
      if (digits > 0 || p[-1] != '.') {
        for (; digits < 3; ++digits) fraction *= 10;
        const std::int64_t value = integer * 1000 + fraction;
        *ns = negative ? -value : value;
        return true;
      }
    }
  }
  return parse_us_as_ns_slow(token, ns);  // strings, exponents, more digits, rounding
}

/// Parses an integer id — a JSON integer, a float (rounded to the nearest) or a string holding
/// one. False when not a number or out of int64 range. O(token length).
bool parse_integer_slow(std::string_view token, std::int64_t* value);
// Inline: called for every pid, tid, id and correlation.
inline bool parse_integer(std::string_view token, std::int64_t* value) {
  // Fast path: a plain integer of up to 18 digits (ids, pids) needs no overflow checks.
  const char* p = token.data();
  const char* const end = p + token.size();
  const bool negative = p < end && *p == '-';
  if (negative) ++p;
  const char* const first = p;
  std::int64_t result = 0;
  while (p < end && *p >= '0' && *p <= '9' && p - first < 18) result = result * 10 + (*p++ - '0');
  if (p > first && (p == end || *p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) {
    *value = negative ? -result : result;
    return true;
  }
  return parse_integer_slow(token, value);
}

/// Decodes JSON escapes (\" \\ \/ \b \f \n \r \t \uXXXX with surrogate pairs) into UTF-8.
/// False on an invalid escape. O(length).
bool json_unescape(std::string_view raw, std::string* out);

/// Bytes per element for a dtype name as PyTorch ("Float", "BFloat16", "c10::Half", "long int")
/// or NCCL kernel names ("float", "__nv_bfloat16", "int8_t") write it; -1 when unknown.
std::int64_t element_bytes(std::string_view dtype);

/// What an NCCL kernel name says: "ncclKernel_AllReduce_RING_LL_Sum_float(...)" → {"allreduce",
/// 4}; "ncclDevKernel_AllGather_RING_LL(...)" → {"allgather", -1}; "ncclDevKernel_Generic" →
/// {"", -1} (RCCL: the type is only in the args).
struct KernelCollective {
  std::string name;  // lower case, "" when unknown
  std::int64_t element_bytes = -1;
};
KernelCollective collective_from_kernel_name(std::string_view kernel_name);

/// ASCII lower case.
std::string to_lower(std::string_view text);

}  // namespace powertrain::trace::detail
