// Issue 13 item 2 on the console: when the replay cannot reproduce a trace, the first line of
// `powertrain replay` and `powertrain analyze` says NOT FAITHFUL, and the exit status is non-zero
// only with --strict. The unfaithful input is a generated two-rank DDP trace in which every other
// all-reduce of the second rank ends 100 µs before its peer's (tests/support/trace_mutations.h):
// members of one collective end together, so no replay with joins can reproduce it.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "../support/kineto_shapes.h"
#include "../support/trace_mutations.h"
#include "cli_runner.h"

namespace powertrain::testing_cli {
namespace {

namespace fs = std::filesystem;
using test_support::OJson;

class VerdictCli : public CliTest {
 protected:
  // Writes the two ranks of the DDP shape into `dir`; with `damage` every other all-reduce of
  // the second rank ends 100 µs early.
  fs::path write_ddp(const char* name, bool damage) {
    const test_support::GeneratedTraces g =
        test_support::make_shape_traces(test_support::Shape::kTwoRanksDdp, 3);
    const fs::path dir = dir_ / name;
    fs::create_directories(dir);
    for (std::size_t f = 0; f < g.files.size(); ++f) {
      test_support::MutableTrace t = test_support::load_mutable(g.files[f], g.names[f]);
      if (f == 1 && damage) {
        int nccl = 0;
        for (OJson& e : test_support::events_of(t)) {
          // Every other all-reduce ends 100 µs before its peer's: no join can reproduce that,
          // and the offsets disagree, so it is not a clock offset either.
          if (test_support::is_x(e) && test_support::name_of(e).rfind("nccl", 0) == 0 &&
              ++nccl % 2 == 0)
            e["dur"] = e["dur"].get<std::int64_t>() - 100'000;
        }
      }
      std::ofstream(dir / g.names[f], std::ios::binary) << test_support::write_mutable(t);
    }
    return dir;
  }
  static std::string first_line(const std::string& text) { return text.substr(0, text.find('\n')); }
};

TEST_F(VerdictCli, NotFaithfulIsTheFirstLineAndFailsOnlyWithStrict) {
  const fs::path damaged = write_ddp("damaged", true);
  for (const char* command : {"replay", "analyze"}) {
    SCOPED_TRACE(command);
    const CliRun lenient = run({command, damaged.string(), "--out",
                                (dir_ / (std::string(command) + "1")).string(), "--quiet"});
    EXPECT_EQ(lenient.exit_code, 0) << lenient.err;
    EXPECT_EQ(first_line(lenient.out).rfind("verdict: NOT FAITHFUL", 0), 0u) << lenient.out;
    const nlohmann::json doc =
        nlohmann::json::parse(slurp(dir_ / (std::string(command) + "1") / "summary.json"));
    EXPECT_FALSE(doc["faithful"].get<bool>());
    ASSERT_FALSE(doc["reasons"].empty());
    EXPECT_GT(doc["reasons"][0]["explained_s_per_step"].get<double>(), 0.0);

    const CliRun strict =
        run({command, damaged.string(), "--out", (dir_ / (std::string(command) + "2")).string(),
             "--quiet", "--strict"});
    EXPECT_EQ(strict.exit_code, 3) << strict.err;
    EXPECT_EQ(first_line(strict.out).rfind("verdict: NOT FAITHFUL", 0), 0u) << strict.out;
  }
}

TEST_F(VerdictCli, FaithfulTracePassesStrict) {
  const fs::path intact = write_ddp("intact", false);
  for (const char* command : {"replay", "analyze"}) {
    SCOPED_TRACE(command);
    const CliRun strict =
        run({command, intact.string(), "--out", (dir_ / command).string(), "--quiet", "--strict"});
    EXPECT_EQ(strict.exit_code, 0) << strict.err << strict.out;
    EXPECT_EQ(first_line(strict.out).rfind("verdict: FAITHFUL", 0), 0u) << strict.out;
  }
}

}  // namespace
}  // namespace powertrain::testing_cli
