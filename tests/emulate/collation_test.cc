// Collation: ranks and global GPU indices, communicators, collectives matched by (communicator,
// seq), P2P by (communicator, sender, receiver, seq), and the findings on inconsistent input.
#include "emulate/collation.h"

#include <gtest/gtest.h>

#include "emulate/trace_writer.h"
#include "emulate_test_util.h"

namespace powertrain::emulate {
namespace {

using testing::parse_all;

bool has_warning(const Collation& c, std::string_view kind) {
  for (const auto& w : c.warnings) {
    if (w.kind.find(kind) != std::string::npos) return true;
  }
  return false;
}

TEST(Collation, MatchesCollectivesAndTransfersAcrossRanks) {
  std::vector<std::string> texts;
  for (int r = 0; r < 4; ++r) {
    TraceWriter w(r, 4);
    w.comm_init("world", r, 4);
    w.nccl("allreduce", "world", r, 4, 100, "float32");
    w.nccl("allgather", "world", r, 4, 100, "float32");
    if (r % 2 == 0) w.nccl("send", "world", r, 4, 50, "bfloat16", 0, r + 1);
    if (r % 2 == 1) w.nccl("recv", "world", r, 4, 50, "bfloat16", 0, r - 1);
    if (r % 2 == 0) w.nccl("send", "world", r, 4, 50, "bfloat16", 0, r + 1);
    if (r % 2 == 1) w.nccl("recv", "world", r, 4, 50, "bfloat16", 0, r - 1);
    texts.push_back(w.finish());
  }
  const auto traces = parse_all(texts);
  auto c = collate(traces);
  ASSERT_TRUE(c.ok()) << c.error().message;
  ASSERT_EQ(c->communicators.size(), 1u);
  EXPECT_TRUE(c->communicators[0].complete());
  EXPECT_FALSE(c->communicators[0].spans_nodes);
  ASSERT_EQ(c->groups.size(), 2u + 4u);  // 2 collectives, 2 pairs × 2 transfers
  for (const CollectiveGroup& g : c->groups) EXPECT_TRUE(g.complete());
  EXPECT_EQ(c->groups[0].kind, Collective::kAllReduce);
  EXPECT_EQ(c->groups[0].members.size(), 4u);
  EXPECT_EQ(c->groups[2].src, 0);
  EXPECT_EQ(c->groups[2].dst, 1);
  EXPECT_EQ(c->groups[2].sequence, 0);
  EXPECT_EQ(c->groups[3].sequence, 1);
  // The second send of rank 0 and the second recv of rank 1 are one group.
  EXPECT_EQ(c->group_of_record[0][4], c->group_of_record[1][4]);
  EXPECT_NE(c->group_of_record[0][3], c->group_of_record[0][4]);
  EXPECT_TRUE(c->warnings.empty());
}

TEST(Collation, GlobalGpuIndicesAndNodes) {
  std::vector<std::string> texts;
  for (int r = 0; r < 4; ++r) {
    TraceWriter w(r, 4, /*devices=*/2);
    for (int d = 0; d < 2; ++d) w.device(d).comm_init("all", r * 2 + d, 8);
    texts.push_back(w.finish());
  }
  CollationOptions options;
  options.gpus_per_node = 4;
  auto c = collate(parse_all(texts), options);
  ASSERT_TRUE(c.ok()) << c.error().message;
  EXPECT_EQ(c->gpu_count, 8);
  EXPECT_EQ(c->first_gpu[3], 6);
  EXPECT_EQ(c->gpu_of(2, 1), 5);
  EXPECT_EQ(c->node_of(5), 1);
  EXPECT_TRUE(c->communicators[0].spans_nodes);
}

TEST(Collation, CollectiveOnOnlySomeMembersIsACountedWarning) {
  std::vector<std::string> texts;
  for (int r = 0; r < 3; ++r) {
    TraceWriter w(r, 3);
    w.comm_init("c", r, 3);
    w.nccl("allreduce", "c", r, 3, 8, "float32");
    if (r != 2) w.nccl("allreduce", "c", r, 3, 8, "float32");  // rank 2 skipped the second
    texts.push_back(w.finish());
  }
  auto c = collate(parse_all(texts));
  ASSERT_TRUE(c.ok());
  ASSERT_EQ(c->warnings.size(), 1u);
  EXPECT_EQ(c->warnings[0].kind, "collective seen on only some members (modelled without a join)");
  EXPECT_EQ(c->warnings[0].example,
            "trace-0.jsonl:4: allreduce seq 1 on communicator c: 2 of 3 members");
}

TEST(Collation, MismatchedMembersAndUnmatchedSendsAreWarnings) {
  TraceWriter a(0, 2), b(1, 2);
  a.comm_init("c", 0, 2);
  b.comm_init("c", 1, 2);
  a.nccl("allreduce", "c", 0, 2, 8, "float32");
  b.nccl("allreduce", "c", 1, 2, 9, "float32");   // count differs
  a.nccl("send", "c", 0, 2, 8, "float32", 0, 1);  // never received
  auto c = collate(parse_all({a.finish(), b.finish()}));
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(has_warning(*c, "disagree (kind, count or dtype)"));
  EXPECT_TRUE(has_warning(*c, "only some members"));
}

TEST(Collation, CommunicatorWithoutInitAndPeersOutsideTheTracesAreWarnings) {
  TraceWriter a(0, 8);
  a.nccl("allreduce", "x", 0, 8, 8, "float32");
  auto c = collate(parse_all({a.finish()}));
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(has_warning(*c, "without comm_init"));
  EXPECT_TRUE(has_warning(*c, "members outside the loaded traces"));
  EXPECT_FALSE(has_warning(*c, "only some members"));  // its peers are simply not loaded
}

TEST(Collation, InconsistentRanksAndCommunicatorsAreErrors) {
  auto dup = collate(parse_all({TraceWriter(1, 2).finish(), TraceWriter(1, 2).finish()}));
  ASSERT_FALSE(dup.ok());
  EXPECT_EQ(dup.error().message, "traces 'trace-0.jsonl' and 'trace-1.jsonl' are both rank 1");

  TraceWriter a(0, 2), b(1, 2);
  a.comm_init("c", 0, 2);
  b.comm_init("c", 0, 2);
  auto twice = collate(parse_all({a.finish(), b.finish()}));
  ASSERT_FALSE(twice.ok());
  EXPECT_EQ(twice.error().message,
            "trace-1.jsonl:2: communicator c rank 0 initialized twice (also by 'trace-0.jsonl' "
            "device 0)");

  TraceWriter x(0, 2), y(1, 2);
  x.comm_init("c", 0, 2);
  y.comm_init("c", 1, 3);
  auto sizes = collate(parse_all({x.finish(), y.finish()}));
  ASSERT_FALSE(sizes.ok());
  EXPECT_EQ(sizes.error().message,
            "trace-1.jsonl:2: communicator c initialized with size 3 here and 2 elsewhere");

  // Rank 0 drives GPUs 0 and 1; rank 1 with one device would be GPU 1 again.
  auto overlap = collate(parse_all({TraceWriter(0, 2, 2).finish(), TraceWriter(1, 2, 1).finish()}));
  ASSERT_FALSE(overlap.ok());
  EXPECT_EQ(
      overlap.error().message,
      "traces 'trace-0.jsonl' (2 device(s)) and 'trace-1.jsonl' (1 device(s)) map to the same "
      "global GPU index; every process must drive the same number of devices");
}

}  // namespace
}  // namespace powertrain::emulate
