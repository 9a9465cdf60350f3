// The emulation trial backend: the "emulation" spec, template expansion and dedup keys, and a
// tiny search whose trials run the project's 4-stage 1F1B program under `powertrain emulate` and
// plan it with `plan --emulated`.
#include "search/emulation_trial.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "search/batch.h"
#include "search/search.h"

namespace powertrain::search {
namespace {

namespace fs = std::filesystem;

TEST(EmulationSpec, ParsesAndNamesTheField) {
  auto spec = parse_search_spec(
      R"({"emulation": {"command": "prog {work_dir} {microbatches} --tp {tp}", "ranks": "{pp}",
          "gpu": "a100", "max_host_gap_us": 5, "timeout_s": 30}})",
      "s.json");
  ASSERT_TRUE(spec) << spec.error().message;
  EXPECT_TRUE(spec->emulation.enabled());
  EXPECT_EQ(spec->emulation.gpu, "a100");
  EXPECT_EQ(spec->emulation.max_host_gap_us, 5.0);
  auto error = [](const char* text) {
    auto s = parse_search_spec(text, "s.json");
    EXPECT_FALSE(s);
    return s ? std::string() : s.error().message;
  };
  EXPECT_EQ(error(R"({"emulation": {"command": "prog --x {tpp}"}})"),
            "s.json: field 'emulation.command' has an unknown placeholder {tpp} (known: tp, pp, "
            "dp, mb, microbatches, v, rc, sp, dopt, gpus, work_dir)");
  EXPECT_EQ(error(R"({"emulation": {"command": "prog {pp"}})"),
            "s.json: field 'emulation.command' has a '{' without '}'");
  EXPECT_EQ(error(R"({"emulation": {"ranks": "{pp}"}})"),
            "s.json: field 'emulation.command' is required");
  EXPECT_EQ(error(R"({"emulation": {"command": "p", "timeout_s": 0}})"),
            "s.json: field 'emulation.timeout_s' must be a number > 0");
  EXPECT_EQ(spec->emulation.host_time, "model");  // the default: repeatable numbers
  EXPECT_EQ(error(R"({"emulation": {"command": "p", "host_time": "wall"}})"),
            "s.json: field 'emulation.host_time' must be \"model\" or \"measured\"");
  EXPECT_EQ(error(R"({"emulation": {"command": "p", "modelled_host_gap_us": -1}})"),
            "s.json: field 'emulation.modelled_host_gap_us' must be a number >= 0");
  EXPECT_NE(error(R"({"emulation": {"command": "p", "colour": 1}})")
                .find("'emulation.colour' is unknown"),
            std::string::npos);
}

TEST(EmulationSpec, ExpandsTemplatesAndKeys) {
  SearchSpec spec = default_search_spec();
  spec.num_gpus = 16;
  spec.global_batch = 64;
  spec.emulation.command = "prog --tp {tp} --pp {pp} --mb {mb} --m {microbatches} {work_dir}";
  Config c;
  c.index[kTp] = 1;              // 2
  c.index[kPp] = 2;              // 4
  c.index[kMicrobatchSize] = 3;  // 6 — 64 % (6 × 2) != 0, but expansion does not check
  c.index[kRecompute] = 1;
  TrialResult fits;
  fits.config = c;
  fits.dp = 2;
  fits.num_microbatches = 5;
  EXPECT_EQ(expand_template(spec.emulation.command, spec, fits, "/w"),
            "prog --tp 2 --pp 4 --mb 6 --m 5 /w");
  EXPECT_EQ(expand_template("{rc}{sp}{dopt} {v} {dp} {gpus}", spec, fits, ""), "100 1 2 16");
  // Recomputation is not in the command: the same emulation.
  TrialResult other = fits;
  other.config.index[kRecompute] = 0;
  EXPECT_EQ(emulation_key(spec, fits), emulation_key(spec, other));
  other.config.index[kPp] = 1;
  EXPECT_NE(emulation_key(spec, fits), emulation_key(spec, other));
}

#ifdef POWERTRAIN_HAVE_EMULATION
class EmulationSearchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    program_ = fs::path(POWERTRAIN_EMU_PROGRAM_DIR) / "nccl_pipeline_search";
    if (!fs::exists(program_)) GTEST_SKIP() << "emulation test program not built: " << program_;
    std::string pattern = (fs::path(::testing::TempDir()) / "emusearch-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) fs::remove_all(dir_, ec);
  }
  fs::path program_, dir_;
};

// pp 2 / 4 × microbatch 1 / 2 × distributed optimizer off / on on 4 GPUs, running the search's
// test program (tests/emulate/programs/nccl_pipeline_search.cu): 6 valid configurations (dopt
// needs dp > 1), 4 distinct commands (dopt is not in the command), so 4 emulations.
TEST_F(EmulationSearchTest, TinySearchEmulatesEachDistinctCommandOnce) {
  SearchSpec spec = default_search_spec();
  spec.source = "test";
  spec.model = "gpt3-1.3b";  // structural and memory checks only
  spec.gpu = "h100";
  spec.num_gpus = 4;
  spec.global_batch = 8;
  spec.values[kTp] = {1};
  spec.values[kPp] = {2, 4};
  spec.values[kMicrobatchSize] = {1, 2};
  spec.values[kVirtualStages] = {1};
  spec.values[kRecompute] = {0};
  spec.values[kSequenceParallel] = {0};
  spec.values[kDistributedOptimizer] = {0, 1};
  spec.emulation.command = program_.string() + " {work_dir} {microbatches} {mb}";
  EmulationRunner runner;
  runner.powertrain = POWERTRAIN_CLI_PATH;
  runner.interposer = POWERTRAIN_INTERPOSER_PATH;
  runner.work_root = dir_.string();
  BatchEvaluator evaluator(spec, MpiWorld{}, 2, runner, nullptr);
  SearchOptions options;
  options.evaluate_batch = [&](const SearchSpec& s, std::vector<TrialResult>& batch,
                               const BoundFilter& skip) { evaluator(s, batch, skip); };
  const SearchResult result = run_search(spec, options);
  EXPECT_EQ(result.planned, 6) << result.trials.size();
  EXPECT_EQ(evaluator.stats().evaluated, 4);
  EXPECT_EQ(evaluator.stats().deduplicated, 2);
  for (const TrialResult& t : result.trials) {
    if (t.status != TrialStatus::kOk) continue;
    const ConfigValues c = values_of(spec, t.config);
    SCOPED_TRACE(config_label(spec, t.config));
    // Each microbatch sequence is a ~0.14 ms GEMM-named forward kernel and twice that backward
    // on an H100 (8192 flop per thread): the 1F1B critical path (M + S − 1)(F + B) is a lower
    // bound of the predicted step, which adds start-up, transfers and host time.
    const double dag_s = (t.num_microbatches + c.pp - 1) * c.microbatch_size * 3 * 0.14e-3;
    EXPECT_GT(t.t_min_s, 0.9 * dag_s);
    EXPECT_LT(t.t_min_s, 0.1);
    EXPECT_EQ(t.baseline_time_s, t.t_min_s);  // the emulated step, at the top clock
    ASSERT_GE(t.frontier.size(), 10u);        // GEMM time follows the clock: a real frontier
    for (std::size_t i = 1; i < t.frontier.size(); ++i) {
      EXPECT_LT(t.frontier[i].time_s, t.frontier[i - 1].time_s);
      EXPECT_GT(t.frontier[i].energy_j, t.frontier[i - 1].energy_j);
    }
    // The plan's fastest point realizes the emulated step within 1 % (plan --emulated), and its
    // least-energy point saves energy against all max clock.
    EXPECT_NEAR(t.frontier.back().time_s, t.t_min_s, 0.01 * t.t_min_s);
    EXPECT_LT(t.energy_at_t_star_j, t.baseline_energy_j);
    EXPECT_GT(t.t_star_s, t.t_min_s);
  }
  // Deduplicated trials carry their leader's numbers with their own configuration.
  for (std::size_t i = 0; i < result.trials.size(); ++i) {
    const TrialResult& t = result.trials[i];
    if (t.reason != "same emulation as an earlier trial") continue;
    ASSERT_GT(i, 0u);
    const TrialResult& leader = result.trials[i - 1];  // dopt is the last knob
    EXPECT_EQ(values_of(spec, t.config).distributed_optimizer, true);
    EXPECT_EQ(t.t_min_s, leader.t_min_s);
    EXPECT_EQ(t.frontier.size(), leader.frontier.size());
    EXPECT_EQ(t.seconds, 0.0);
  }
  // Nothing left behind.
  EXPECT_EQ(std::distance(fs::directory_iterator(dir_), fs::directory_iterator()), 0);
  ASSERT_FALSE(result.frontier.empty());
  // The fastest configuration has 2 stages: with 4 GPUs, pp 4 has half the data parallelism, so
  // each pipeline runs twice the microbatches.
  const TrialResult& fastest =
      result.trials[static_cast<std::size_t>(result.frontier.front().trial)];
  EXPECT_EQ(values_of(spec, fastest.config).pp, 2);
}

// With the host time modelled (the default), an emulated trial does not depend on this machine's
// load: two emulations of one configuration give the same numbers bit for bit, so MPI and threaded
// searches write the same files. (With "measured", the program's host gaps vary from run to run.)
TEST_F(EmulationSearchTest, ModelledHostTimeRepeatsExactly) {
  SearchSpec spec = default_search_spec();
  spec.source = "test";
  spec.model = "gpt3-1.3b";
  spec.gpu = "h100";
  spec.num_gpus = 4;
  spec.global_batch = 8;
  spec.values[kTp] = {1};
  spec.values[kPp] = {2};
  spec.values[kMicrobatchSize] = {1};
  spec.values[kVirtualStages] = {1};
  spec.values[kRecompute] = {0};
  spec.values[kSequenceParallel] = {0};
  spec.values[kDistributedOptimizer] = {0};
  spec.emulation.command = program_.string() + " {work_dir} {microbatches} {mb}";
  auto once = [&]() {
    EmulationRunner runner;
    runner.powertrain = POWERTRAIN_CLI_PATH;
    runner.interposer = POWERTRAIN_INTERPOSER_PATH;
    runner.work_root = dir_.string();
    BatchEvaluator evaluator(spec, MpiWorld{}, 1, runner, nullptr);  // its own dedup table
    SearchOptions options;
    options.evaluate_batch = [&](const SearchSpec& s, std::vector<TrialResult>& batch,
                                 const BoundFilter& skip) { evaluator(s, batch, skip); };
    return run_search(spec, options);
  };
  const SearchResult a = once();
  const SearchResult b = once();
  ASSERT_EQ(a.planned, 1);
  ASSERT_EQ(b.planned, 1);
  const TrialResult& x = a.trials.front();
  const TrialResult& y = b.trials.front();
  EXPECT_EQ(x.t_min_s, y.t_min_s);
  EXPECT_EQ(x.baseline_energy_j, y.baseline_energy_j);
  ASSERT_EQ(x.frontier.size(), y.frontier.size());
  for (std::size_t i = 0; i < x.frontier.size(); ++i) {
    EXPECT_EQ(x.frontier[i].time_s, y.frontier[i].time_s);
    EXPECT_EQ(x.frontier[i].energy_j, y.frontier[i].energy_j);
  }
}

TEST_F(EmulationSearchTest, FailedProgramIsAnInvalidTrialWithTheReason) {
  SearchSpec spec = default_search_spec();
  spec.num_gpus = 4;
  spec.global_batch = 8;
  spec.emulation.command = (dir_ / "no-such-program").string();
  EmulationRunner runner;
  runner.powertrain = POWERTRAIN_CLI_PATH;
  runner.interposer = POWERTRAIN_INTERPOSER_PATH;
  runner.work_root = dir_.string();
  Config c;
  c.index[kPp] = 1;  // pp 2
  TrialResult fits = check_config(spec, c);
  ASSERT_EQ(fits.status, TrialStatus::kOk) << fits.reason;
  const TrialResult r = runner.evaluate(spec, fits);
  EXPECT_EQ(r.status, TrialStatus::kInvalid);
  EXPECT_NE(r.reason.find("emulate exited"), std::string::npos) << r.reason;
  EXPECT_NE(r.reason.find("no-such-program"), std::string::npos) << r.reason;
}
#endif

}  // namespace
}  // namespace powertrain::search
