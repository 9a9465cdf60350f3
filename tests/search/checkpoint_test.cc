// Checkpoint/resume of a search: the trial encoding round-trips exactly, the log survives a torn
// last line and refuses another spec, and a search resumed from a partial log gives the same
// result as one that ran through.
#include "search/checkpoint.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "search/batch.h"
#include "search/outputs.h"

namespace powertrain::search {
namespace {

namespace fs = std::filesystem;

// 8 configurations of GPT-3 1.3B on 4 GPUs; milliseconds per trial.
SearchSpec small_spec() {
  SearchSpec spec = default_search_spec();
  spec.source = "test";
  spec.model = "gpt3-1.3b";
  spec.gpu = "h100";
  spec.num_gpus = 4;
  spec.global_batch = 16;
  spec.values[kTp] = {1, 2};
  spec.values[kPp] = {1, 2};
  spec.values[kMicrobatchSize] = {1, 2};
  spec.values[kVirtualStages] = {1};
  spec.values[kRecompute] = {0};
  spec.values[kSequenceParallel] = {0};
  spec.values[kDistributedOptimizer] = {0};
  return spec;
}

class CheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::path(::testing::TempDir()) / "ckpt-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream s;
    s << in.rdbuf();
    return s.str();
  }
  fs::path dir_;
};

TEST(TrialCodec, RoundTripsExactly) {
  TrialResult t;
  t.config.index = {1, 0, 2, 0, 1, 0, 1};
  t.status = TrialStatus::kOk;
  t.reason = "a \"quoted\" reason, with commas";
  t.dp = 3;
  t.num_microbatches = 17;
  t.peak_memory_gib = 0.1 + 0.2;  // not representable in short decimal
  t.t_min_s = 1.0 / 3.0;
  t.energy_at_t_min_j = 123456.789e-3;
  t.t_star_s = 2.0 / 3.0;
  t.energy_at_t_star_j = 1e-300;
  t.baseline_time_s = 5e300;
  t.baseline_energy_j = 7.0;
  t.bound_time_s = 0.1 + 0.7;  // the bound tactic re-tests restored and MPI results with these
  t.bound_energy_j = 2.0 / 7.0;
  t.frontier = {{2.0 / 3.0, 1e-300, 0}, {1.0 / 3.0, 123456.789e-3, 4}};
  t.seconds = 0.0123;
  auto back = decode_trial(encode_trial(t), "x");
  ASSERT_TRUE(back) << back.error().message;
  EXPECT_EQ(encode_trial(*back), encode_trial(t));
  EXPECT_EQ(back->config, t.config);
  EXPECT_EQ(back->reason, t.reason);
  EXPECT_EQ(back->peak_memory_gib, t.peak_memory_gib);  // bit for bit
  EXPECT_EQ(back->t_min_s, t.t_min_s);
  EXPECT_EQ(back->bound_time_s, t.bound_time_s);
  EXPECT_EQ(back->bound_energy_j, t.bound_energy_j);
  ASSERT_EQ(back->frontier.size(), 2u);
  EXPECT_EQ(back->frontier[1].plan_point, 4);
  EXPECT_EQ(back->frontier[0].energy_j, 1e-300);

  auto bad = decode_trial(R"({"config": [0, 0], "status": "ok"})", "log:3");
  ASSERT_FALSE(bad);
  EXPECT_EQ(bad.error().message, "log:3: field 'config' must be an array of 7 value indices");
  auto unknown =
      decode_trial(R"({"config": [0,0,0,0,0,0,0], "status": "great", "reason": ""})", "log:4");
  ASSERT_FALSE(unknown);
  EXPECT_EQ(unknown.error().message, "log:4: field 'status' is unknown");
}

TEST_F(CheckpointTest, TornLastLineIsCutAndOtherSpecsAreRefused) {
  const SearchSpec spec = small_spec();
  const std::string path = (dir_ / "c.jsonl").string();
  TrialResult a = check_config(spec, Config{});
  a.status = TrialStatus::kOom;
  a.reason = "test";
  {
    auto c = Checkpoint::open(path, spec);
    ASSERT_TRUE(c) << c.error().message;
    EXPECT_EQ((*c)->restored(), 0u);
    ASSERT_TRUE((*c)->append(a));
  }
  // A search killed in the middle of a write.
  std::ofstream(path, std::ios::app) << R"({"config": [1, 0, 0)";
  {
    auto c = Checkpoint::open(path, spec);
    ASSERT_TRUE(c) << c.error().message;
    EXPECT_EQ((*c)->restored(), 1u);
    ASSERT_EQ((*c)->warnings().size(), 1u);
    EXPECT_EQ((*c)->warnings()[0].rfind(path + ":3: ignoring a truncated last line (19 bytes", 0),
              0u)
        << (*c)->warnings()[0];
    const TrialResult* found = (*c)->find(Config{});
    ASSERT_NE(found, nullptr);
    EXPECT_EQ(found->status, TrialStatus::kOom);
    EXPECT_EQ((*c)->find(Config{{1, 0, 0, 0, 0, 0, 0}}), nullptr);
  }
  const std::string text = slurp(path);
  EXPECT_EQ(std::count(text.begin(), text.end(), '\n'), 2);
  EXPECT_EQ(text.back(), '\n');  // the torn line is gone, so appends start on a fresh line

  SearchSpec other = spec;
  other.global_batch = 32;
  auto refused = Checkpoint::open(path, other);
  ASSERT_FALSE(refused);
  EXPECT_NE(refused.error().message.find(path + ":1: field 'spec' differs"), std::string::npos)
      << refused.error().message;
  // Algorithm and seed do not change a trial's result: the log is accepted.
  other = spec;
  other.algorithm = Algorithm::kRandom;
  other.seed = 99;
  EXPECT_TRUE(Checkpoint::open(path, other));

  // A search killed while writing the header starts afresh; a file that is not a checkpoint
  // is left alone.
  const std::string header = slurp(path).substr(0, slurp(path).find('\n') + 1);
  std::ofstream(dir_ / "torn.jsonl") << header.substr(0, 20);
  auto torn = Checkpoint::open((dir_ / "torn.jsonl").string(), spec);
  ASSERT_TRUE(torn) << torn.error().message;
  EXPECT_EQ(slurp(dir_ / "torn.jsonl"), header);
  std::ofstream(dir_ / "notes.txt") << "my notes, no newline";
  auto notes = Checkpoint::open((dir_ / "notes.txt").string(), spec);
  ASSERT_FALSE(notes);
  EXPECT_NE(notes.error().message.find("notes.txt:1: not a powertrain search checkpoint"),
            std::string::npos)
      << notes.error().message;
  EXPECT_EQ(slurp(dir_ / "notes.txt"), "my notes, no newline");
  // Whole lines that are not a checkpoint's header: not JSON, other JSON (a summary.json, say),
  // a CSV. None is reported as a spec mismatch, and none is touched.
  for (const char* text : {"not json\n", "{\"setup\": \"x\", \"spec\": 1}\n",
                           "{\n  \"best\": 3\n}\n", "time_s,energy_j\n1,2\n"}) {
    std::ofstream(dir_ / "other.jsonl") << text;
    auto other_file = Checkpoint::open((dir_ / "other.jsonl").string(), spec);
    ASSERT_FALSE(other_file) << text;
    EXPECT_EQ(other_file.error().message.rfind(
                  (dir_ / "other.jsonl").string() + ":1: not a powertrain search checkpoint", 0),
              0u)
        << other_file.error().message;
    EXPECT_EQ(slurp(dir_ / "other.jsonl"), text);
  }
}

// A torn line that later got a newline (a copied log, say) is tolerated as the last line only.
TEST_F(CheckpointTest, GarbledLastLineIsIgnoredWithAWarning) {
  const SearchSpec spec = small_spec();
  const std::string path = (dir_ / "c.jsonl").string();
  TrialResult a = check_config(spec, Config{});
  a.status = TrialStatus::kOom;
  a.reason = "test";
  {
    auto c = Checkpoint::open(path, spec);
    ASSERT_TRUE(c) << c.error().message;
    ASSERT_TRUE((*c)->append(a));
  }
  const std::string whole = slurp(path);
  std::ofstream(path, std::ios::app) << "{\"config\": [1, 0\n";
  {
    auto c = Checkpoint::open(path, spec);
    ASSERT_TRUE(c) << c.error().message;
    EXPECT_EQ((*c)->restored(), 1u);
    ASSERT_EQ((*c)->warnings().size(), 1u);
    EXPECT_EQ((*c)->warnings()[0],
              path +
                  ":3: ignoring a truncated last line (not JSON); it is cut off and that "
                  "trial runs again");
  }
  EXPECT_EQ(slurp(path), whole);
  // In the middle it is an error that names the line.
  std::ofstream(path, std::ios::app) << "{\"config\": [1, 0\n" << encode_trial(a) << "\n";
  auto refused = Checkpoint::open(path, spec);
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.error().message, path + ":3: not a JSON object");
}

// A search stopped after some trials and restarted with the same log plans only the rest, and
// the final result is the same as a search that ran through.
TEST_F(CheckpointTest, ResumedSearchSkipsFinishedTrialsAndMatches) {
  SearchSpec spec = small_spec();
  const SearchResult through = run_search(spec);
  ASSERT_GT(through.planned, 2);

  const std::string path = (dir_ / "c.jsonl").string();
  {
    // The first run stops after 2 planned trials (as if killed).
    auto c = Checkpoint::open(path, spec);
    ASSERT_TRUE(c);
    BatchEvaluator evaluator(spec, MpiWorld{}, 1, EmulationRunner{}, c->get());
    SearchOptions options;
    int planned = 0;
    options.evaluate_batch = [&](const SearchSpec& s, std::vector<TrialResult>& batch,
                                const BoundFilter& skip) {
      std::vector<TrialResult> first;
      for (TrialResult& t : batch) {
        if (planned++ >= 2) break;
        first.push_back(t);
      }
      evaluator(s, first, skip);
      for (std::size_t i = 0; i < first.size(); ++i) batch[i] = first[i];
    };
    run_search(spec, options);
    EXPECT_EQ(evaluator.stats().evaluated, 2);
  }
  auto c = Checkpoint::open(path, spec);
  ASSERT_TRUE(c);
  EXPECT_EQ((*c)->restored(), 2u);
  BatchEvaluator evaluator(spec, MpiWorld{}, 2, EmulationRunner{}, c->get());
  SearchOptions options;
  options.evaluate_batch = [&](const SearchSpec& s, std::vector<TrialResult>& batch,
                                const BoundFilter& skip) {
    evaluator(s, batch, skip);
  };
  const SearchResult resumed = run_search(spec, options);
  EXPECT_EQ(evaluator.stats().restored, 2);
  // Bound-pruned trials go through the evaluator too (pruned there before solving).
  EXPECT_EQ(evaluator.stats().evaluated, through.planned + through.pruned_bound - 2);
  // Same decisions and values (eval_s differs: a measured wall time).
  auto strip = [](std::string csv) {
    std::string out;
    std::istringstream in(csv);
    for (std::string line; std::getline(in, line);) {
      // Drop eval_s, column 19 of 21 (the columns before the quoted reason hold no commas).
      std::size_t begin = 0;
      for (int i = 0; i < 19; ++i) begin = line.find(',', begin) + 1;
      out += line.substr(0, begin) + line.substr(line.find(',', begin) + 1) + "\n";
    }
    return out;
  };
  EXPECT_EQ(strip(trials_csv(spec, resumed)), strip(trials_csv(spec, through)));
  EXPECT_EQ(frontier_csv(spec, resumed), frontier_csv(spec, through));
  // A third run finds everything in the log.
  auto again = Checkpoint::open(path, spec);
  ASSERT_TRUE(again);
  BatchEvaluator third(spec, MpiWorld{}, 1, EmulationRunner{}, again->get());
  options.evaluate_batch = [&](const SearchSpec& s, std::vector<TrialResult>& batch,
                                const BoundFilter& skip) {
    third(s, batch, skip);
  };
  const SearchResult replayed = run_search(spec, options);
  // Only bound-pruned trials are decided again (their verdict depends on the frontier before them).
  EXPECT_EQ(third.stats().evaluated, through.pruned_bound);
  EXPECT_EQ(trials_csv(spec, replayed), trials_csv(spec, resumed));  // eval_s restored too
}

}  // namespace
}  // namespace powertrain::search
