// trace::list_tar_members on its own: ustar members, directories skipped, GNU long names, and
// one-line errors with the byte offset for truncated and corrupted archives.
#include "trace/tar.h"

#include <gtest/gtest.h>

#include <string>

#include "../support/archive_bytes.h"

namespace powertrain::trace {
namespace {

using test_support::tar_entry;

const std::string kEnd(1024, '\0');  // end-of-archive marker: two zero blocks

std::string error_of(std::string_view archive) {
  auto members = list_tar_members(archive, "t.tar");
  return members ? "no error" : members.error().message;
}

TEST(Tar, ListsRegularFilesWithOffsetsAndSizes) {
  const std::string archive = tar_entry("run/", "", '5') + tar_entry("run/a.json", "{}") +
                              tar_entry("run/b.json", std::string(700, 'x')) + kEnd;
  EXPECT_TRUE(is_tar(archive));
  auto members = list_tar_members(archive, "t.tar");
  ASSERT_TRUE(members) << members.error().message;
  ASSERT_EQ(members->size(), 2u);
  EXPECT_EQ((*members)[0].name, "run/a.json");
  EXPECT_EQ((*members)[0].offset, 2 * 512u);  // after the directory's and its own header
  EXPECT_EQ((*members)[0].size, 2u);
  EXPECT_EQ((*members)[1].name, "run/b.json");
  EXPECT_EQ((*members)[1].offset, 4 * 512u);  // and a.json's data block
  EXPECT_EQ(archive.substr((*members)[1].offset, (*members)[1].size), std::string(700, 'x'));
}

TEST(Tar, GnuLongNamesApplyToTheNextMember) {
  const std::string name(150, 'n');
  const std::string archive = tar_entry("././@LongLink", name + '\0', 'L') +
                              tar_entry("short", "data") + tar_entry("next", "") + kEnd;
  auto members = list_tar_members(archive, "t.tar");
  ASSERT_TRUE(members) << members.error().message;
  ASSERT_EQ(members->size(), 2u);
  EXPECT_EQ((*members)[0].name, name);
  EXPECT_EQ((*members)[1].name, "next");
}

TEST(Tar, EmptyArchiveHasNoMembers) {
  EXPECT_FALSE(is_tar(""));
  EXPECT_FALSE(is_tar(kEnd));
  for (const std::string& empty : {std::string(), kEnd}) {
    auto members = list_tar_members(empty, "t.tar");
    ASSERT_TRUE(members) << members.error().message;
    EXPECT_TRUE(members->empty());
  }
}

TEST(Tar, TruncatedMemberNamesItsOffset) {
  const std::string archive =
      tar_entry("a.json", "{}") + tar_entry("b.json", std::string(2000, 'x'));
  EXPECT_EQ(error_of(archive.substr(0, 1024 + 512 + 100)),
            "t.tar: truncated tar archive: member at byte 1024 needs 2000 bytes, only 100 remain");
}

TEST(Tar, CorruptedHeadersAreErrors) {
  std::string checksum = tar_entry("a.json", "{}") + tar_entry("b.json", "{}");
  checksum[1024] = 'c';  // the second header's name: its checksum no longer matches
  EXPECT_EQ(error_of(checksum),
            "t.tar: tar header at byte 1024: bad checksum (not a tar archive, or corrupt)");
  std::string size = tar_entry("a.json", "{}");
  size[124] = 'z';  // not an octal digit; fix the checksum so only the size is wrong
  size.replace(148, 8, "        ");
  unsigned sum = 0;
  for (std::size_t i = 0; i < 512; ++i) sum += static_cast<unsigned char>(size[i]);
  std::snprintf(&size[148], 8, "%06o", sum);
  size[155] = ' ';
  EXPECT_EQ(error_of(size), "t.tar: tar header at byte 0: bad size field");
  EXPECT_FALSE(is_tar(std::string(512, 'x')));
}

TEST(Tar, MemberCountIsCapped) {
  const std::string archive = tar_entry("a", "") + tar_entry("b", "") + tar_entry("c", "") + kEnd;
  auto members = list_tar_members(archive, "t.tar", 2);
  ASSERT_FALSE(members);
  EXPECT_EQ(members.error().message, "t.tar: more than 2 members in the tar archive");
}

}  // namespace
}  // namespace powertrain::trace
