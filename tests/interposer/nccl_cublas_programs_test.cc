// End-to-end tests of the interposer's NCCL and cuBLAS/cuBLASLt emulation: the CUDA test
// programs in tests/emulate/programs (built with nvcc -cudart shared) run with no GPU, the
// interposer in LD_PRELOAD, one process per rank (RANK/WORLD_SIZE/LOCAL_RANK) or one process
// driving 8 devices (POWERTRAIN_EMU_DEVICES), and their JSON Lines traces must contain exactly
// the expected communicators, collectives, point-to-point pairs and GEMMs.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#if defined(POWERTRAIN_HAVE_EMULATION) && defined(POWERTRAIN_INTERPOSER_PATH) && \
    defined(POWERTRAIN_EMU_PROGRAM_DIR)
#define PT_EMULATION_TESTS 1
#else
#define PT_EMULATION_TESTS 0
#endif

extern char** environ;

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using Records = std::vector<json>;

struct Launch {
  std::string program;  // file name in POWERTRAIN_EMU_PROGRAM_DIR
  std::vector<std::string> args;
  int processes = 1;
  bool rank_env = true;  // RANK/WORLD_SIZE/LOCAL_RANK
  std::map<std::string, std::string> env;
};

Launch launch(std::string program, int processes = 1) {
  Launch l;
  l.program = std::move(program);
  l.processes = processes;
  return l;
}

std::string slurp(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

Records with_op(const Records& records, const std::string& op) {
  Records out;
  for (const json& r : records) {
    if (r.value("op", "") == op) out.push_back(r);
  }
  return out;
}

class NcclCublasProgramTest : public ::testing::Test {
 protected:
  void SetUp() override {
#if !PT_EMULATION_TESTS
    GTEST_SKIP() << "built without CUDA emulation (POWERTRAIN_HAVE_EMULATION: needs nvcc and the "
                    "CUDA/NCCL/cuBLAS libraries under /usr/local/cuda at configure time)";
#endif
    std::string pattern = (fs::path(::testing::TempDir()) / "powertrain-emu-XXXXXX").string();
    ASSERT_NE(::mkdtemp(pattern.data()), nullptr) << pattern;
    dir_ = pattern;
  }

  void TearDown() override {
    if (dir_.empty()) return;
    if (HasFailure()) {
      std::cerr << "keeping " << dir_ << " (traces and logs of the failed test)\n";
      return;
    }
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }

  /// Starts the processes, waits for all of them (killing them after `timeout`), and returns
  /// their exit codes (-signal when killed by one). stdout/stderr go to dir_/log-<i>.txt.
  std::vector<int> run(const Launch& what,
                       std::chrono::seconds timeout = std::chrono::seconds(180)) {
#if PT_EMULATION_TESTS
    const std::string path = (fs::path(POWERTRAIN_EMU_PROGRAM_DIR) / what.program).string();
    EXPECT_TRUE(fs::exists(path)) << path;
    std::vector<pid_t> pids;
    for (int i = 0; i < what.processes; ++i) {
      std::map<std::string, std::string> env;
      for (char** e = environ; *e != nullptr; ++e) {
        const std::string entry = *e;
        const auto eq = entry.find('=');
        if (eq != std::string::npos) env[entry.substr(0, eq)] = entry.substr(eq + 1);
      }
      env["LD_PRELOAD"] = POWERTRAIN_INTERPOSER_PATH;
      env["POWERTRAIN_EMU_DIR"] = dir_.string();
      env["POWERTRAIN_EMU_JOB"] =
          std::string(::testing::UnitTest::GetInstance()->current_test_info()->name());
      if (what.rank_env) {
        env["RANK"] = std::to_string(i);
        env["WORLD_SIZE"] = std::to_string(what.processes);
        env["LOCAL_RANK"] = std::to_string(i);
      }
      for (const auto& [key, value] : what.env) env[key] = value;
      std::vector<std::string> env_strings;
      for (const auto& [key, value] : env) env_strings.push_back(key + "=" + value);
      std::vector<char*> envp;
      for (std::string& s : env_strings) envp.push_back(s.data());
      envp.push_back(nullptr);
      std::vector<std::string> arg_strings{path};
      arg_strings.insert(arg_strings.end(), what.args.begin(), what.args.end());
      std::vector<char*> argv;
      for (std::string& s : arg_strings) argv.push_back(s.data());
      argv.push_back(nullptr);
      const std::string log = (dir_ / ("log-" + std::to_string(i) + ".txt")).string();

      const pid_t pid = ::fork();
      if (pid == 0) {
        const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        const int in = ::open("/dev/null", O_RDONLY);
        if (out >= 0) {
          ::dup2(out, 1);
          ::dup2(out, 2);
        }
        if (in >= 0) ::dup2(in, 0);
        ::execve(path.c_str(), argv.data(), envp.data());
        ::_exit(127);
      }
      EXPECT_GT(pid, 0);
      pids.push_back(pid);
    }
    std::vector<int> codes(pids.size(), -1000);
    std::vector<bool> done(pids.size(), pids.empty());
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    while (std::count(done.begin(), done.end(), false) > 0) {
      for (std::size_t i = 0; i < pids.size(); ++i) {
        if (done[i] || pids[i] <= 0) {
          done[i] = true;
          continue;
        }
        int status = 0;
        if (::waitpid(pids[i], &status, WNOHANG) == pids[i]) {
          done[i] = true;
          codes[i] = WIFEXITED(status) ? WEXITSTATUS(status) : -WTERMSIG(status);
        }
      }
      if (std::chrono::steady_clock::now() > deadline) {
        for (std::size_t i = 0; i < pids.size(); ++i) {
          if (done[i]) continue;
          ::kill(pids[i], SIGKILL);  // a process this test started
          int status = 0;
          ::waitpid(pids[i], &status, 0);
          ADD_FAILURE() << what.program << " process " << i << " timed out\n" << log(i);
          done[i] = true;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    return codes;
#else
    (void)what;
    (void)timeout;
    return {};
#endif
  }

  std::string log(int process) const {
    return slurp(dir_ / ("log-" + std::to_string(process) + ".txt"));
  }

  /// Runs and expects every process to exit with 0 (printing its log otherwise).
  void run_ok(const Launch& what) {
    const std::vector<int> codes = run(what);
    for (std::size_t i = 0; i < codes.size(); ++i) {
      EXPECT_EQ(codes[i], 0) << what.program << " process " << i << ":\n" << log(i);
    }
  }

  /// Trace records per process, keyed by the `rank` of the trace's process line (-1 for a
  /// process without RANK); the process line itself is dropped.
  std::map<int, Records> traces() {
    std::map<int, Records> by_rank;
    for (const auto& entry : fs::directory_iterator(dir_)) {
      const std::string name = entry.path().filename().string();
      if (name.rfind("trace-", 0) != 0 || entry.path().extension() != ".jsonl") continue;
      std::ifstream in(entry.path());
      std::string line;
      Records records;
      int rank = -2;
      while (std::getline(in, line)) {
        if (line.empty()) continue;
        json record = json::parse(line, nullptr, false);
        EXPECT_FALSE(record.is_discarded()) << name << ": " << line;
        if (record.is_discarded()) continue;
        if (record.value("op", "") == "process") {
          rank = record.value("rank", -1);
          continue;
        }
        records.push_back(std::move(record));
      }
      EXPECT_NE(rank, -2) << name << " has no process line";
      EXPECT_EQ(by_rank.count(rank), 0u) << "two traces for rank " << rank;
      by_rank[rank] = std::move(records);
    }
    return by_rank;
  }

  /// No API was reported unsupported and nothing was reported as misuse.
  static void expect_clean(const Records& records, const std::string& who) {
    for (const json& r : records) {
      const std::string op = r.value("op", "");
      EXPECT_TRUE(op != "unsupported" && op != "misuse") << who << ": " << r.dump();
    }
  }

  fs::path dir_;
};

// ---- cuBLAS / cuBLASLt ------------------------------------------------------------------------

TEST_F(NcclCublasProgramTest, CublasGemmsAreRecordedWithShapesDtypesAndFlops) {
  Launch program = launch("cublas_gemms");
  program.rank_env = false;
  run_ok(program);
  const auto by_rank = traces();
  ASSERT_EQ(by_rank.size(), 1u);
  const Records& records = by_rank.begin()->second;
  expect_clean(records, "cublas_gemms");
  const Records gemms = with_op(records, "gemm");
  ASSERT_EQ(gemms.size(), 5u);

  struct Expected {
    const char* api;
    std::int64_t m, n, k, batch;
    const char *transa, *transb, *dtype_ab, *dtype_c, *compute;
  };
  const Expected expected[] = {
      {"cublasSgemm_v2", 512, 256, 128, 1, "N", "N", "float32", "float32", "float32"},
      {"cublasGemmEx", 1024, 512, 256, 1, "T", "N", "bfloat16", "bfloat16", "float32"},
      {"cublasSgemmStridedBatched", 128, 64, 32, 12, "N", "T", "float32", "float32", "float32"},
      {"cublasSgemm_v2", 256, 256, 256, 1, "N", "N", "float32", "float32", "float32_fast_tf32"},
      {"cublasLtMatmul", 768, 384, 512, 2, "T", "N", "bfloat16", "bfloat16", "float32"},
  };
  const std::int64_t stream = gemms[0].at("stream").get<std::int64_t>();
  EXPECT_GE(stream, 1) << "the GEMMs run on the program's created stream, not a default stream";
  std::set<std::int64_t> correlations;
  for (std::size_t i = 0; i < gemms.size(); ++i) {
    const json& g = gemms[i];
    const Expected& e = expected[i];
    SCOPED_TRACE(g.dump());
    EXPECT_EQ(g.at("api"), e.api);
    EXPECT_EQ(g.at("m"), e.m);
    EXPECT_EQ(g.at("n"), e.n);
    EXPECT_EQ(g.at("k"), e.k);
    EXPECT_EQ(g.at("batch"), e.batch);
    EXPECT_EQ(g.at("transa"), e.transa);
    EXPECT_EQ(g.at("transb"), e.transb);
    EXPECT_EQ(g.at("dtype_a"), e.dtype_ab);
    EXPECT_EQ(g.at("dtype_b"), e.dtype_ab);
    EXPECT_EQ(g.at("dtype_c"), e.dtype_c);
    EXPECT_EQ(g.at("compute"), e.compute);
    EXPECT_EQ(g.at("flops"), 2 * e.m * e.n * e.k * e.batch);
    EXPECT_EQ(g.at("stream"), stream);
    EXPECT_EQ(g.at("dev"), 0);
    EXPECT_TRUE(correlations.insert(g.at("corr").get<std::int64_t>()).second);
  }
  EXPECT_EQ(gemms[4].at("dtype_d"), "bfloat16");
  EXPECT_EQ(gemms[4].at("scale"), "float32");
  EXPECT_EQ(gemms[4].at("epilogue"), "bias");
  EXPECT_FALSE(gemms[0].contains("epilogue"));
}

// ---- NCCL across processes -------------------------------------------------------------------

TEST_F(NcclCublasProgramTest, NcclEightProcessesRecordMatchingCollectivesAndSplitGroups) {
  constexpr int kWorld = 8;
  constexpr std::int64_t n = 1 << 18;
  run_ok(launch("nccl_multiproc", kWorld));
  const auto by_rank = traces();
  ASSERT_EQ(by_rank.size(), static_cast<std::size_t>(kWorld));

  struct Coll {
    const char* coll;
    std::int64_t count;
    const char* dtype;
    std::int64_t bytes, send_bytes, recv_bytes;
    const char* op;  // nullptr: none
    int root;        // -1: none
  };
  const Coll world_colls[] = {
      {"allreduce", n, "float32", 4 * n, 4 * n, 4 * n, "sum", -1},
      {"allreduce", 2 * n, "bfloat16", 4 * n, 4 * n, 4 * n, "sum", -1},
      {"allgather", n, "float32", 4 * n, 4 * n, 4 * n * kWorld, nullptr, -1},
      {"reducescatter", n, "float32", 4 * n, 4 * n * kWorld, 4 * n, "sum", -1},
      {"broadcast", n, "float32", 4 * n, -1, 4 * n, nullptr, 0},
      {"reduce", n, "float32", 4 * n, 4 * n, -1, "sum", 0},
  };
  std::set<std::string> world_ids;
  std::map<int, std::set<std::string>> half_ids;  // colour → ids seen
  std::set<std::string> half_members[2];
  for (const auto& [rank, records] : by_rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    ASSERT_GE(rank, 0);
    expect_clean(records, "rank " + std::to_string(rank));
    const Records inits = with_op(records, "comm_init");
    ASSERT_EQ(inits.size(), 2u);
    EXPECT_EQ(inits[0].at("api"), "ncclCommInitRank");
    EXPECT_EQ(inits[0].at("rank"), rank);
    EXPECT_EQ(inits[0].at("size"), kWorld);
    const std::string world_id = inits[0].at("comm");
    world_ids.insert(world_id);
    EXPECT_EQ(inits[1].at("api"), "ncclCommSplit");
    EXPECT_EQ(inits[1].at("parent"), world_id);
    EXPECT_EQ(inits[1].at("size"), kWorld / 2);
    // colour rank % 2, key WORLD_SIZE - rank: the members sort in reverse rank order
    EXPECT_EQ(inits[1].at("rank"), kWorld / 2 - 1 - rank / 2);
    const std::string half_id = inits[1].at("comm");
    EXPECT_NE(half_id, world_id);
    half_ids[rank % 2].insert(half_id);

    const Records colls = with_op(records, "nccl");
    ASSERT_EQ(colls.size(), 7u);
    const std::int64_t stream = colls[0].at("stream").get<std::int64_t>();
    EXPECT_GE(stream, 1) << "collectives run on the program's created stream";
    std::int64_t last_corr = 0;
    for (std::size_t i = 0; i < colls.size(); ++i) {
      const json& c = colls[i];
      SCOPED_TRACE(c.dump());
      EXPECT_EQ(c.at("stream"), stream);
      EXPECT_EQ(c.at("dev"), 0);
      EXPECT_EQ(c.at("group"), 0);
      EXPECT_GT(c.at("corr").get<std::int64_t>(), last_corr);
      last_corr = c.at("corr").get<std::int64_t>();
      if (i == 6) break;
      const Coll& e = world_colls[i];
      EXPECT_EQ(c.at("coll"), e.coll);
      EXPECT_EQ(c.at("comm"), world_id);
      EXPECT_EQ(c.at("comm_rank"), rank);
      EXPECT_EQ(c.at("comm_size"), kWorld);
      EXPECT_EQ(c.at("seq"), static_cast<std::int64_t>(i));
      EXPECT_EQ(c.at("count"), e.count);
      EXPECT_EQ(c.at("dtype"), e.dtype);
      EXPECT_EQ(c.at("bytes"), e.bytes);
      const bool is_root = rank == 0;
      EXPECT_EQ(c.at("send_bytes"), e.send_bytes >= 0 ? e.send_bytes : (is_root ? 4 * n : 0));
      EXPECT_EQ(c.at("recv_bytes"), e.recv_bytes >= 0 ? e.recv_bytes : (is_root ? 4 * n : 0));
      if (e.op != nullptr) {
        EXPECT_EQ(c.at("redop"), e.op);
      } else {
        EXPECT_FALSE(c.contains("redop"));
      }
      if (e.root >= 0) {
        EXPECT_EQ(c.at("root"), e.root);
      } else {
        EXPECT_FALSE(c.contains("root"));
      }
      EXPECT_FALSE(c.contains("peer"));
    }
    const json& half = colls[6];
    EXPECT_EQ(half.at("coll"), "allreduce");
    EXPECT_EQ(half.at("comm"), half_id);
    EXPECT_EQ(half.at("comm_rank"), kWorld / 2 - 1 - rank / 2);
    EXPECT_EQ(half.at("comm_size"), kWorld / 2);
    EXPECT_EQ(half.at("seq"), 0) << "a split communicator has its own sequence";
    EXPECT_EQ(half.at("count"), n / 4);
    EXPECT_EQ(half.at("redop"), "max");
    half_members[rank % 2].insert(std::to_string(half.at("comm_rank").get<int>()));
  }
  EXPECT_EQ(world_ids.size(), 1u) << "all ranks joined one communicator";
  ASSERT_EQ(half_ids[0].size(), 1u);
  ASSERT_EQ(half_ids[1].size(), 1u);
  EXPECT_NE(*half_ids[0].begin(), *half_ids[1].begin());
  for (const auto& members : half_members) {
    EXPECT_EQ(members, (std::set<std::string>{"0", "1", "2", "3"}));
  }
}

// ---- NCCL, one process driving 8 devices ------------------------------------------------------

TEST_F(NcclCublasProgramTest, NcclOneProcessEightDevicesGroupsAndInMemorySplit) {
  constexpr int kDevices = 8;
  constexpr std::int64_t n = 1 << 16;
  Launch multidev = launch("nccl_multidev");
  multidev.rank_env = false;
  multidev.env["POWERTRAIN_EMU_DEVICES"] = std::to_string(kDevices);
  run_ok(multidev);
  const auto by_rank = traces();
  ASSERT_EQ(by_rank.size(), 1u);
  const Records& records = by_rank.begin()->second;
  expect_clean(records, "nccl_multidev");
  // The split resolved in memory: no rendezvous files.
  EXPECT_FALSE(fs::exists(dir_ / "nccl-split"));

  const Records inits = with_op(records, "comm_init");
  ASSERT_EQ(inits.size(), 2u * kDevices);
  const std::string all_id = inits[0].at("comm");
  std::map<int, std::string> half_id;  // parity → id
  for (int i = 0; i < kDevices; ++i) {
    const json& init = inits[i];
    EXPECT_EQ(init.at("api"), "ncclCommInitAll");
    EXPECT_EQ(init.at("comm"), all_id);
    EXPECT_EQ(init.at("rank"), i);
    EXPECT_EQ(init.at("size"), kDevices);
    EXPECT_EQ(init.at("dev"), i);
    const json& split = inits[kDevices + i];
    EXPECT_EQ(split.at("api"), "ncclCommSplit");
    EXPECT_EQ(split.at("parent"), all_id);
    EXPECT_EQ(split.at("dev"), i);
    EXPECT_EQ(split.at("rank"), i / 2);
    EXPECT_EQ(split.at("size"), kDevices / 2);
    const auto [it, inserted] = half_id.emplace(i % 2, split.at("comm").get<std::string>());
    EXPECT_EQ(it->second, split.at("comm")) << "same colour, same communicator";
  }
  ASSERT_EQ(half_id.size(), 2u);
  EXPECT_NE(half_id[0], half_id[1]);

  const Records colls = with_op(records, "nccl");
  ASSERT_EQ(colls.size(), 3u * kDevices);
  std::map<int, std::int64_t> stream_of_device;
  std::int64_t groups[3] = {0, 0, 0};
  for (int phase = 0; phase < 3; ++phase) {
    for (int i = 0; i < kDevices; ++i) {
      const json& c = colls[phase * kDevices + i];
      SCOPED_TRACE(c.dump());
      EXPECT_EQ(c.at("dev"), i);
      const auto [it, inserted] = stream_of_device.emplace(i, c.at("stream").get<std::int64_t>());
      EXPECT_EQ(c.at("stream"), it->second) << "one stream per device";
      const std::int64_t group = c.at("group").get<std::int64_t>();
      EXPECT_NE(group, 0) << "issued inside ncclGroupStart/End";
      if (i == 0) groups[phase] = group;
      EXPECT_EQ(group, groups[phase]) << "one (outermost) group per phase";
      if (phase < 2) {
        EXPECT_EQ(c.at("coll"), phase == 0 ? "allreduce" : "allgather");
        EXPECT_EQ(c.at("comm"), all_id);
        EXPECT_EQ(c.at("comm_rank"), i);
        EXPECT_EQ(c.at("comm_size"), kDevices);
        EXPECT_EQ(c.at("seq"), phase);
        EXPECT_EQ(c.at("count"), n);
        EXPECT_EQ(c.at("dtype"), "float32");
        EXPECT_EQ(c.at("recv_bytes"), phase == 0 ? 4 * n : 4 * n * kDevices);
      } else {
        EXPECT_EQ(c.at("coll"), "allreduce");
        EXPECT_EQ(c.at("comm"), half_id[i % 2]);
        EXPECT_EQ(c.at("comm_rank"), i / 2);
        EXPECT_EQ(c.at("comm_size"), kDevices / 2);
        EXPECT_EQ(c.at("seq"), 0);
        EXPECT_EQ(c.at("count"), n / 2);
        EXPECT_EQ(c.at("dtype"), "float16");
        EXPECT_EQ(c.at("bytes"), n);
      }
    }
  }
  EXPECT_LT(groups[0], groups[1]);
  EXPECT_LT(groups[1], groups[2]);
  std::set<std::int64_t> distinct;
  for (const auto& [device, stream] : stream_of_device) distinct.insert(stream);
  EXPECT_EQ(distinct.size(), static_cast<std::size_t>(kDevices));

  // ncclMemAlloc is device memory, recorded and accounted like cudaMalloc.
  const Records mallocs = with_op(records, "malloc");
  ASSERT_FALSE(mallocs.empty());
  EXPECT_EQ(mallocs.back().at("api"), "ncclMemAlloc");
  EXPECT_EQ(mallocs.back().at("kind"), "device");
  EXPECT_EQ(mallocs.back().at("bytes"), std::int64_t{64} << 20);
  EXPECT_EQ(mallocs.back().at("used"), std::int64_t{64} << 20);
  EXPECT_EQ(with_op(records, "free").back().at("api"), "ncclMemFree");
}

// ---- NCCL pipeline: 4 ranks, 1F1B, send/recv --------------------------------------------------

/// The per-stage event order of Megatron's non-interleaved 1F1B schedule (what
/// nccl_pipeline.cu issues): "F"/"B" kernels, "S<peer>"/"R<peer>" point-to-point calls, with
/// "(" and ")" around grouped calls.
std::vector<std::string> one_f_one_b(int stage, int stages, int microbatches) {
  std::vector<std::string> events;
  const bool first = stage == 0;
  const bool last = stage == stages - 1;
  const std::string prev = std::to_string(stage - 1);
  const std::string next = std::to_string(stage + 1);
  auto recv_forward = [&] {
    if (!first) events.push_back("R" + prev);
  };
  auto send_forward = [&] {
    if (!last) events.push_back("S" + next);
  };
  auto recv_backward = [&] {
    if (!last) events.push_back("R" + next);
  };
  auto send_backward = [&] {
    if (!first) events.push_back("S" + prev);
  };
  const int warmup = std::min(stages - stage - 1, microbatches);
  const int remaining = microbatches - warmup;
  for (int i = 0; i < warmup; ++i) {
    recv_forward();
    events.push_back("F");
    send_forward();
  }
  if (remaining > 0) recv_forward();
  for (int i = 0; i < remaining; ++i) {
    events.push_back("F");
    events.push_back("(");
    send_forward();
    recv_backward();
    events.push_back(")");
    events.push_back("B");
    if (i == remaining - 1) {
      send_backward();
    } else {
      events.push_back("(");
      send_backward();
      recv_forward();
      events.push_back(")");
    }
  }
  for (int i = 0; i < warmup; ++i) {
    recv_backward();
    events.push_back("B");
    send_backward();
  }
  // Groups that end up empty or with a single call leave no trace of their grouping.
  std::vector<std::string> compact;
  for (std::size_t i = 0; i < events.size(); ++i) {
    if (events[i] == "(" && i + 1 < events.size() && events[i + 1] == ")") {
      ++i;
      continue;
    }
    if (events[i] == "(" && i + 2 < events.size() && events[i + 2] == ")") {
      compact.push_back(events[i + 1]);
      i += 2;
      continue;
    }
    compact.push_back(events[i]);
  }
  return compact;
}

TEST_F(NcclCublasProgramTest, NcclPipelineOneFOneBSendRecvPairsMatchAcrossFourRanks) {
  constexpr int kStages = 4;
  constexpr int kMicrobatches = 8;
  constexpr std::int64_t kHidden = 1 << 16;
  Launch pipeline = launch("nccl_pipeline", kStages);
  pipeline.args = {dir_.string(), std::to_string(kMicrobatches)};
  run_ok(pipeline);
  const auto by_rank = traces();
  ASSERT_EQ(by_rank.size(), static_cast<std::size_t>(kStages));

  // (sender, receiver, seq) → bytes, from both sides.
  std::map<std::tuple<int, int, std::int64_t>, std::int64_t> sends, recvs;
  std::string comm_id;
  for (const auto& [stage, records] : by_rank) {
    SCOPED_TRACE("stage " + std::to_string(stage));
    expect_clean(records, "stage " + std::to_string(stage));
    const Records inits = with_op(records, "comm_init");
    ASSERT_EQ(inits.size(), 1u);
    if (comm_id.empty()) comm_id = inits[0].at("comm");
    EXPECT_EQ(inits[0].at("comm"), comm_id);

    // The observed order of kernels and point-to-point calls, grouped calls in parentheses.
    std::vector<std::string> events;
    std::int64_t open_group = 0;
    std::map<std::pair<int, std::string>, std::int64_t> next_seq;  // (peer, kind) → seq
    for (const json& r : records) {
      const std::string op = r.value("op", "");
      if (op == "kernel") {
        if (open_group != 0) events.push_back(")");
        open_group = 0;
        const std::string name = r.value("name", "");
        if (name.find("fwd_stage") != std::string::npos) {
          events.push_back("F");
        } else if (name.find("bwd_stage") != std::string::npos) {
          events.push_back("B");
        } else {
          ADD_FAILURE() << "unexpected kernel " << r.dump();
        }
      } else if (op == "nccl") {
        const std::string coll = r.at("coll");
        ASSERT_TRUE(coll == "send" || coll == "recv") << r.dump();
        const std::int64_t group = r.at("group").get<std::int64_t>();
        if (group != open_group) {
          if (open_group != 0) events.push_back(")");
          if (group != 0) events.push_back("(");
          open_group = group;
        }
        const int peer = r.at("peer").get<int>();
        events.push_back((coll == "send" ? "S" : "R") + std::to_string(peer));
        EXPECT_EQ(r.at("count"), kHidden);
        EXPECT_EQ(r.at("dtype"), "float32");
        EXPECT_EQ(r.at("comm"), comm_id);
        EXPECT_EQ(r.at("comm_rank"), stage);
        EXPECT_EQ(r.at("comm_size"), kStages);
        const std::int64_t seq = r.at("seq").get<std::int64_t>();
        const auto seq_key = std::make_pair(peer, coll);
        EXPECT_EQ(seq, next_seq[seq_key]++) << "per-(peer, direction) sequence";
        const auto key =
            coll == "send" ? std::make_tuple(stage, peer, seq) : std::make_tuple(peer, stage, seq);
        auto& side = coll == "send" ? sends : recvs;
        EXPECT_TRUE(side.emplace(key, r.at("bytes").get<std::int64_t>()).second);
      }
    }
    if (open_group != 0) events.push_back(")");
    // Singleton groups are indistinguishable from ungrouped calls: compare in the compact form.
    std::vector<std::string> compact;
    for (std::size_t i = 0; i < events.size(); ++i) {
      if (events[i] == "(" && i + 2 < events.size() && events[i + 2] == ")") {
        compact.push_back(events[i + 1]);
        i += 2;
        continue;
      }
      compact.push_back(events[i]);
    }
    const auto expected = one_f_one_b(stage, kStages, kMicrobatches);
    auto join = [](const std::vector<std::string>& v) {
      std::string s;
      for (const auto& e : v) s += e + " ";
      return s;
    };
    EXPECT_EQ(join(compact), join(expected));
    const int forwards = static_cast<int>(std::count(compact.begin(), compact.end(), "F"));
    const int backwards = static_cast<int>(std::count(compact.begin(), compact.end(), "B"));
    EXPECT_EQ(forwards, kMicrobatches);
    EXPECT_EQ(backwards, kMicrobatches);
  }
  // Every send has exactly one matching receive (same pair, same sequence, same size).
  EXPECT_EQ(sends.size(), static_cast<std::size_t>(2 * (kStages - 1) * kMicrobatches));
  EXPECT_EQ(sends, recvs);
}

}  // namespace
