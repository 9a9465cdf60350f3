// CSV parsing: small and strict, because profiles come from other tools and people edit them.
#include "core/csv.h"

#include "core/input_limits.h"

#include <fmt/core.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace powertrain::core {
namespace {

std::string_view trim(std::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t' || text.back() == '\r')) {
    text.remove_suffix(1);
  }
  return text;
}

std::string printable(std::string_view text) {
  constexpr std::size_t kMaxShown = 40;
  std::string shown(text.substr(0, kMaxShown));
  for (char& c : shown) {
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f) c = '?';
  }
  if (text.size() > kMaxShown) shown += "...";
  return shown;
}

}  // namespace

std::optional<std::size_t> CsvTable::column(std::string_view name) const {
  for (std::size_t i = 0; i < header.size(); ++i) {
    if (header[i] == name) return i;
  }
  return std::nullopt;
}

Result<CsvTable> parse_csv(std::string_view text, std::string source) {
  CsvTable table;
  table.source = std::move(source);
  if (text.size() > kMaxCsvBytes) {
    return Error{
        fmt::format("{}: file is larger than the {} byte limit", table.source, kMaxCsvBytes)};
  }
  // Skip a UTF-8 byte-order mark written by spreadsheet programs.
  if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);

  std::size_t pos = 0;
  int line = 0;
  while (pos < text.size()) {
    ++line;
    const int row_line = line;
    std::vector<std::string> fields;
    std::string field;
    bool in_quotes = false;
    bool line_done = false;
    bool any_content = false;
    while (pos < text.size() && !line_done) {
      const char c = text[pos++];
      if (in_quotes) {
        if (c == '"') {
          if (pos < text.size() && text[pos] == '"') {
            field.push_back('"');
            ++pos;
          } else {
            in_quotes = false;
          }
        } else {
          if (c == '\n') ++line;
          field.push_back(c);
        }
        continue;
      }
      switch (c) {
        case '"':
          in_quotes = true;
          any_content = true;
          break;
        case ',':
          fields.emplace_back(trim(field));
          field.clear();
          any_content = true;
          if (fields.size() > kMaxCsvFields) {
            return Error{fmt::format("{}:{}: more than {} fields in one row", table.source,
                                     row_line, kMaxCsvFields)};
          }
          break;
        case '\n':
          line_done = true;
          break;
        default:
          if (c != '\r' && c != ' ' && c != '\t') any_content = true;
          field.push_back(c);
      }
    }
    if (in_quotes) {
      return Error{fmt::format("{}:{}: unterminated quoted field", table.source, row_line)};
    }
    fields.emplace_back(trim(field));
    if (!any_content) continue;  // blank line
    if (table.header.empty()) {
      table.header = std::move(fields);
      continue;
    }
    if (fields.size() < table.header.size()) {
      return Error{fmt::format("{}:{}: expected {} fields as in the header, got {}", table.source,
                               row_line, table.header.size(), fields.size())};
    }
    table.rows.push_back(CsvRow{row_line, std::move(fields)});
  }
  if (table.header.empty())
    return Error{fmt::format("{}: empty file, expected a CSV header", table.source)};
  return table;
}

Result<std::string> read_text_file(const std::string& path, std::size_t max_bytes) {
  if (max_bytes == 0) max_bytes = input_limits().max_text_bytes;
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    return Error{fmt::format("{}: is a directory, expected a file", path)};
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Error{fmt::format("{}: cannot open: {}", path, std::strerror(errno))};
  // Chunked, never past the limit: a device such as /dev/zero has no size to check first.
  std::string text;
  char chunk[1 << 16];
  while (in) {
    in.read(chunk, sizeof chunk);
    const auto got = static_cast<std::size_t>(in.gcount());
    if (got == 0) break;
    if (text.size() + got > max_bytes) {
      return Error{fmt::format("{}: file is {}", path, limit_text(max_bytes))};
    }
    text.append(chunk, got);
  }
  if (in.bad()) return Error{fmt::format("{}: read error", path)};
  if (text.empty()) return Error{fmt::format("{}: empty file", path)};
  return text;
}

Result<CsvTable> read_csv_file(const std::string& path) {
  auto text = read_text_file(path);
  if (!text) return text.error();
  return parse_csv(*text, path);
}

Result<double> parse_finite_double(std::string_view text, const std::string& source, int line,
                                   std::string_view field) {
  const std::string_view trimmed = trim(text);
  double value = 0.0;
  const char* begin = trimmed.data();
  const char* end = trimmed.data() + trimmed.size();
  if (!trimmed.empty() && *begin == '+') ++begin;
  auto [ptr, ec] = std::from_chars(begin, end, value);
  if (trimmed.empty() || ec != std::errc() || ptr != end) {
    return Error{fmt::format("{}:{}: field '{}': expected a number, got '{}'", source, line, field,
                             printable(text))};
  }
  if (!std::isfinite(value)) {
    return Error{fmt::format("{}:{}: field '{}': expected a finite number, got '{}'", source, line,
                             field, printable(text))};
  }
  return value;
}

Result<long long> parse_integer(std::string_view text, const std::string& source, int line,
                                std::string_view field) {
  const std::string_view trimmed = trim(text);
  long long value = 0;
  auto [ptr, ec] = std::from_chars(trimmed.data(), trimmed.data() + trimmed.size(), value);
  if (trimmed.empty() || ec != std::errc() || ptr != trimmed.data() + trimmed.size()) {
    return Error{fmt::format("{}:{}: field '{}': expected an integer, got '{}'", source, line,
                             field, printable(text))};
  }
  return value;
}

}  // namespace powertrain::core
