// core::parse_csv and the field parsers: quoting, line numbers, blank lines, and every error
// text; report::csv_field's quoting read back by parse_csv (round trip).
#include "core/csv.h"

#include <gtest/gtest.h>

#include "report/csv.h"

namespace powertrain::core {
namespace {

TEST(Csv, HeaderRowsLineNumbersAndQuotes) {
  auto table = parse_csv("a, b ,c\n1,\"x,y\",3\n\n4,\"say \"\"hi\"\"\",6\n", "t.csv");
  ASSERT_TRUE(table) << table.error().message;
  EXPECT_EQ(table->source, "t.csv");
  ASSERT_EQ(table->rows.size(), 2u);
  EXPECT_EQ(table->rows[0].line, 2);
  EXPECT_EQ(table->rows[1].line, 4);  // the blank line 3 is skipped but counted
  EXPECT_EQ(table->rows[0].fields[1], "x,y");
  EXPECT_EQ(table->rows[1].fields[1], "say \"hi\"");
  EXPECT_EQ(table->column("b"), 1u);  // header names are trimmed
  EXPECT_FALSE(table->column("d"));
}

TEST(Csv, Errors) {
  auto error = [](std::string_view text) {
    auto table = parse_csv(text, "t.csv");
    return table ? std::string() : table.error().message;
  };
  EXPECT_EQ(error(""), "t.csv: empty file, expected a CSV header");
  EXPECT_EQ(error("a,b,c\n1,2\n"), "t.csv:2: expected 3 fields as in the header, got 2");
  EXPECT_EQ(error("a,b\n1,\"open\n"), "t.csv:2: unterminated quoted field");
}

TEST(Csv, TruncatedCorruptedAndEmptyInput) {
  auto error = [](std::string_view text) {
    auto table = parse_csv(text, "t.csv");
    return table ? std::string("no error") : table.error().message;
  };
  // A file cut inside a row names the short row; a complete last row needs no newline.
  EXPECT_EQ(error("a,b,c\n1,2,3\n4,5"), "t.csv:3: expected 3 fields as in the header, got 2");
  auto no_newline = parse_csv("a,b\n1,2", "t.csv");
  ASSERT_TRUE(no_newline) << no_newline.error().message;
  ASSERT_EQ(no_newline->rows.size(), 1u);
  EXPECT_EQ(no_newline->rows[0].fields[1], "2");
  // Cut inside a quoted field: the row where the quote opened.
  EXPECT_EQ(error("a,b\n1,2\n3,\"par"), "t.csv:3: unterminated quoted field");
  // Corrupted bytes are one field: the row is short.
  EXPECT_EQ(error(std::string_view("a,b\n\x01\x02\0\x7f\n", 9)),
            "t.csv:2: expected 2 fields as in the header, got 1");
  // Empty: nothing, only blank lines, or only a byte-order mark.
  for (const char* empty : {"", "\n\n  \n", "\xEF\xBB\xBF"}) {
    EXPECT_EQ(error(empty), "t.csv: empty file, expected a CSV header") << empty;
  }
}

TEST(Csv, NumberAndIntegerFieldsNameTheirPlace) {
  EXPECT_EQ(*parse_finite_double("2.5", "t.csv", 7, "time"), 2.5);
  EXPECT_EQ(parse_finite_double("abc", "t.csv", 7, "time").error().message,
            "t.csv:7: field 'time': expected a number, got 'abc'");
  EXPECT_EQ(parse_finite_double("inf", "t.csv", 7, "time").error().message,
            "t.csv:7: field 'time': expected a finite number, got 'inf'");
  EXPECT_EQ(*parse_integer("42", "t.csv", 3, "stage"), 42);
  EXPECT_EQ(parse_integer("4.2", "t.csv", 3, "stage").error().message,
            "t.csv:3: field 'stage': expected an integer, got '4.2'");
}

TEST(Csv, WriterQuotingRoundTrips) {
  const std::vector<std::string> names = {"plain", "a,b", "say \"hi\"", "two\nlines", ""};
  std::string text = "name,n\n";
  for (const std::string& name : names) text += report::csv_field(name) + ",1\n";
  EXPECT_EQ(report::csv_field("plain"), "plain");
  EXPECT_EQ(report::csv_field("a,b"), "\"a,b\"");
  auto table = parse_csv(text, "round.csv");
  ASSERT_TRUE(table) << table.error().message;
  ASSERT_EQ(table->rows.size(), names.size());
  for (std::size_t i = 0; i < names.size(); ++i) EXPECT_EQ(table->rows[i].fields[0], names[i]);
}

}  // namespace
}  // namespace powertrain::core
