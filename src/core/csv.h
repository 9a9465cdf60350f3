// Minimal CSV reading with line numbers, for profiles and frontier files written by other tools.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"

namespace powertrain::core {

/// One data row with the 1-based line number it came from.
struct CsvRow {
  int line = 0;
  std::vector<std::string> fields;
};

/// A parsed CSV document: a header and data rows. Quoted fields ("a,b", "" escapes) are supported.
struct CsvTable {
  std::string source;  // path or label used in error messages
  std::vector<std::string> header;
  std::vector<CsvRow> rows;

  /// Index of a header column (exact, after trimming), or nullopt.
  std::optional<std::size_t> column(std::string_view name) const;
};

/// Hard limits on untrusted CSV input.
inline constexpr std::size_t kMaxCsvBytes = std::size_t{1} << 30;
inline constexpr std::size_t kMaxCsvFields = 4096;

/// Parses CSV text. Errors: empty input, no header, a row with fewer fields than the header,
/// unterminated quote, too many fields. Blank lines are skipped. `source` names the input in
/// errors.
Result<CsvTable> parse_csv(std::string_view text, std::string source);

/// Reads and parses a CSV file. Errors: unreadable file, plus those of parse_csv.
Result<CsvTable> read_csv_file(const std::string& path);

/// Parses a finite double; errors name `source:line`, the field and the offending text.
Result<double> parse_finite_double(std::string_view text, const std::string& source, int line,
                                   std::string_view field);

/// Parses a base-10 integer; same error style.
Result<long long> parse_integer(std::string_view text, const std::string& source, int line,
                                std::string_view field);

/// Reads a whole file into a string, or an error naming the path and the OS reason. Reads at most
/// max_bytes + 1 bytes (pipes and devices included); 0 = core::input_limits().max_text_bytes.
/// Directories, empty files and files over the limit are errors.
Result<std::string> read_text_file(const std::string& path, std::size_t max_bytes = 0);

}  // namespace powertrain::core
