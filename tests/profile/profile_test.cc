// profile::parse_profile (the Perseus/Zeus profile CSV parser) and validate_profile_for_pipeline:
// values by hand, averaging of repeated rows, and one error per rule with its source:line text.
#include "profile/profile.h"

#include <gtest/gtest.h>

#include <utility>

#include "core/csv.h"

namespace powertrain::profile {
namespace {

using pipeline::InstructionKind;

core::Result<Profile> parse(const std::string& text) {
  auto table = core::parse_csv(text, "p.csv");
  if (!table) return table.error();
  return parse_profile(*table);
}

std::string error_of(const std::string& text) {
  auto profile = parse(text);
  return profile ? "" : profile.error().message;
}

TEST(ProfileCsv, ReadsEntriesSortedWithExtraColumnsAndFreeOrder) {
  auto profile = parse(
      "note,energy,time,frequency,instruction,stage\n"
      "x,10,0.5,1410,backward,1\n"
      "y,4,0.2,1410,forward,1\n"
      "z,3,0.3,900.0,forward,1\n"
      "w,2,0.1,1410,forward,0\n");
  ASSERT_TRUE(profile) << profile.error().message;
  EXPECT_EQ(profile->source, "p.csv");
  EXPECT_EQ(profile->num_stages(), 2);
  ASSERT_EQ(profile->entries.size(), 3u);  // (0, fwd), (1, fwd), (1, bwd)
  const InstructionProfile* f1 = profile->find(1, InstructionKind::kForward);
  ASSERT_NE(f1, nullptr);
  ASSERT_EQ(f1->options.size(), 2u);
  EXPECT_EQ(f1->options[0].frequency_mhz, 1410);  // file order kept
  EXPECT_EQ(f1->options[1].frequency_mhz, 900);
  EXPECT_DOUBLE_EQ(f1->options[1].time_s, 0.3);
  EXPECT_DOUBLE_EQ(f1->options[1].energy_j, 3.0);
  EXPECT_EQ(f1->options[1].line, 4);
  EXPECT_EQ(profile->find(0, InstructionKind::kBackward), nullptr);
}

TEST(ProfileCsv, RepeatedMeasurementsAreAveraged) {
  auto profile = parse(
      "stage,instruction,frequency,time,energy\n"
      "0,forward,1410,0.1,2\n"
      "0,forward,1410,0.3,4\n"
      "0,forward,1410,0.2,9\n");
  ASSERT_TRUE(profile) << profile.error().message;
  const auto& options = profile->find(0, InstructionKind::kForward)->options;
  ASSERT_EQ(options.size(), 1u);
  EXPECT_NEAR(options[0].time_s, 0.2, 1e-15);
  EXPECT_NEAR(options[0].energy_j, 5.0, 1e-12);
  EXPECT_EQ(profile->merged_duplicate_rows, 2);
  EXPECT_EQ(profile->first_duplicate_line, 3);
}

TEST(ProfileCsv, ErrorsNameSourceLineAndField) {
  const std::string header = "stage,instruction,frequency,time,energy\n";
  EXPECT_EQ(error_of("stage,instruction,frequency,time\n0,forward,1,1\n"),
            "p.csv:1: missing column 'energy' (expected stage,instruction,frequency,time,energy)");
  EXPECT_EQ(error_of(header + "4096,forward,1410,0.1,1\n"),
            "p.csv:2: field 'stage': expected 0 to 4095, got 4096");
  EXPECT_EQ(error_of(header + "0,sideways,1410,0.1,1\n"),
            "p.csv:2: field 'instruction': expected forward, backward or recompute, got "
            "'sideways'");
  EXPECT_EQ(error_of(header + "0,forward,1410.5,0.1,1\n"),
            "p.csv:2: field 'frequency': expected an integer MHz, got '1410.5'");
  EXPECT_EQ(error_of(header + "0,forward,100001,0.1,1\n"),
            "p.csv:2: field 'frequency': expected 1 to 100000 MHz, got 100001");
  EXPECT_EQ(error_of(header + "0,forward,1410,0,1\n"),
            "p.csv:2: field 'time': expected seconds in (0, 86400], got 0");
  EXPECT_EQ(error_of(header + "0,forward,1410,0.1,-1\n"),
            "p.csv:2: field 'energy': expected joules in (0, 1e+12], got -1");
  EXPECT_EQ(error_of(header), "p.csv: no measurements (only a header)");
}

TEST(ProfileCsv, TruncatedCorruptedAndEmptyInput) {
  const std::string header = "stage,instruction,frequency,time,energy\n";
  const std::pair<std::string, std::string> cases[] = {
      // Cut inside the last row.
      {header + "0,forward,1410,0.1,1\n0,backward,14",
       "p.csv:3: expected 5 fields as in the header, got 3"},
      // Corrupted numbers name their field.
      {header + "0,forward,1410,0.1x,1\n", "p.csv:2: field 'time': expected a number, got '0.1x'"},
      {header + "0,forward,1410,nan,1\n",
       "p.csv:2: field 'time': expected a finite number, got 'nan'"},
      {header + "x,forward,1410,0.1,1\n", "p.csv:2: field 'stage': expected an integer, got 'x'"},
      {"", "p.csv: empty file, expected a CSV header"},
  };
  for (const auto& [text, message] : cases) EXPECT_EQ(error_of(text), message) << text;
}

TEST(ProfileCsv, PipelineValidationNeedsEveryStageAndTwoClocks) {
  auto profile = parse(
      "stage,instruction,frequency,time,energy\n"
      "0,forward,1410,0.1,2\n0,forward,900,0.2,1.5\n"
      "0,backward,1410,0.2,4\n0,backward,900,0.4,3\n"
      "1,forward,1410,0.1,2\n"
      "1,backward,1410,0.2,4\n1,backward,900,0.4,3\n");
  ASSERT_TRUE(profile) << profile.error().message;
  auto one_stage = validate_profile_for_pipeline(*profile, 1, false);
  ASSERT_FALSE(one_stage);
  EXPECT_NE(one_stage.error().message.find("has stage 1 but the pipeline has only 1 stages"),
            std::string::npos)
      << one_stage.error().message;
  auto two_stages = validate_profile_for_pipeline(*profile, 2, false);
  ASSERT_FALSE(two_stages);
  EXPECT_NE(two_stages.error().message.find("p.csv:6: stage 1 forward: only one clock (1410 MHz)"),
            std::string::npos)
      << two_stages.error().message;
  auto recompute = validate_profile_for_pipeline(*profile, 1, true);
  ASSERT_FALSE(recompute);
}

// Profiles built in code (Kareus's option profiles) can hold an entry with no options at all.
TEST(ProfileCsv, PipelineValidationRefusesAnEntryWithoutOptions) {
  Profile profile;
  profile.source = "built";
  profile.entries.push_back({0, pipeline::InstructionKind::kForward, {}});
  profile.entries.push_back({0, pipeline::InstructionKind::kBackward, {}});
  auto status = validate_profile_for_pipeline(profile, 1, false);
  ASSERT_FALSE(status);
  EXPECT_NE(status.error().message.find("built: stage 0 forward: no options"), std::string::npos)
      << status.error().message;
}

}  // namespace
}  // namespace powertrain::profile
