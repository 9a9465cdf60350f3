// The launcher: the per-rank environment, finding the interposer and the program, running
// processes with prefixed output and exit reports, and refusing statically linked CUDA runtimes.
#include "emulate/launcher.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "emulate/cudart_linkage.h"
#include "emulate_test_util.h"

namespace powertrain::emulate {
namespace {

namespace fs = std::filesystem;
using testing::TempDir;

// Any shared library that is harmless to preload stands in for the interposer here.
std::string harmless_library() {
  for (const char* path :
       {"/lib/x86_64-linux-gnu/libm.so.6", "/usr/lib/x86_64-linux-gnu/libm.so.6",
        "/lib64/libm.so.6", "/usr/lib64/libm.so.6", "/lib/aarch64-linux-gnu/libm.so.6"}) {
    if (fs::exists(path)) return path;
  }
  return {};
}

std::map<std::string, std::string> as_map(const std::vector<std::string>& env) {
  std::map<std::string, std::string> out;
  for (const std::string& e : env) out[e.substr(0, e.find('='))] = e.substr(e.find('=') + 1);
  return out;
}

TEST(Launcher, RankEnvironmentDescribesTheJobAndTheGpu) {
  LaunchOptions o;
  o.nodes = 2;
  o.gpus_per_node = 8;
  o.devices_per_process = 2;
  o.trace_dir = "/tmp/emu-traces";
  o.interposer = "/opt/lib/libpowertrain_cuda.so";
  o.job_id = "job7";
  const auto env = as_map(rank_environment(o, *device::find_gpu("h100"), 5, 8, 31337));
  EXPECT_EQ(env.at("RANK"), "5");
  EXPECT_EQ(env.at("WORLD_SIZE"), "8");
  EXPECT_EQ(env.at("LOCAL_RANK"), "1");
  EXPECT_EQ(env.at("LOCAL_WORLD_SIZE"), "4");
  EXPECT_EQ(env.at("NODE_RANK"), "1");
  EXPECT_EQ(env.at("MASTER_ADDR"), "127.0.0.1");
  EXPECT_EQ(env.at("MASTER_PORT"), "31337");
  EXPECT_EQ(env.at("LD_PRELOAD").rfind("/opt/lib/libpowertrain_cuda.so", 0), 0u);
  EXPECT_EQ(env.at("POWERTRAIN_EMU_DIR"), "/tmp/emu-traces");
  EXPECT_EQ(env.at("POWERTRAIN_EMU_GPU"), "h100-sxm");
  EXPECT_EQ(env.at("POWERTRAIN_EMU_GPU_NAME"), "NVIDIA H100 SXM5 80GB");
  EXPECT_EQ(env.at("POWERTRAIN_EMU_MEMORY_BYTES"), std::to_string(80LL << 30));
  EXPECT_EQ(env.at("POWERTRAIN_EMU_SM_COUNT"), "132");
  EXPECT_EQ(env.at("POWERTRAIN_EMU_CC"), "9.0");
  EXPECT_EQ(env.at("POWERTRAIN_EMU_CLOCK_MHZ"), "1980");
  EXPECT_EQ(env.at("POWERTRAIN_EMU_DEVICES"), "2");
  EXPECT_EQ(env.at("POWERTRAIN_EMU_JOB"), "job7");
  EXPECT_EQ(compute_capability(*device::find_gpu("a100")), "8.0");
  EXPECT_EQ(compute_capability(*device::find_gpu("a40")), "8.6");
}

Layout layout_of(LayoutRequest q) {
  auto layout = resolve_layout(q);
  EXPECT_TRUE(layout.ok()) << layout.error().message;
  return layout.ok() ? *layout : Layout{};
}

TEST(Launcher, LayoutDefaultsToOneProcessSeeingAllGpus) {
  Layout l = layout_of({});
  EXPECT_EQ(l.processes, 1);
  EXPECT_EQ(l.devices_per_process, 1);
  EXPECT_EQ(l.gpus(), 1);
  EXPECT_EQ(l.explanation.rfind("1 process x 1 device = 1 GPU(s) on 1 node(s) x 1 (the default", 0),
            0u)
      << l.explanation;
  l = layout_of({.gpus = 8});
  EXPECT_EQ(l.processes, 1);
  EXPECT_EQ(l.devices_per_process, 8);
  EXPECT_EQ(l.gpus_per_node, 8);
  l = layout_of({.gpus = 16});  // nodes of at most 8
  EXPECT_EQ(l.processes, 1);
  EXPECT_EQ(l.devices_per_process, 16);
  EXPECT_EQ(l.nodes, 2);
  l = layout_of({.ranks = 8});  // one GPU per rank
  EXPECT_EQ(l.processes, 8);
  EXPECT_EQ(l.devices_per_process, 1);
  EXPECT_EQ(l.gpus(), 8);
  EXPECT_NE(l.explanation.find("(--ranks)"), std::string::npos);
  l = layout_of({.gpus = 16, .ranks = 16});
  EXPECT_EQ(l.nodes, 2);
  EXPECT_EQ(l.gpus_per_node, 8);
  l = layout_of({.ranks = 4, .nodes = 2, .gpus_per_node = 8});  // 4 processes x 4 devices
  EXPECT_EQ(l.devices_per_process, 4);
  l = layout_of({.nodes = 2, .gpus_per_node = 8});  // one process per node
  EXPECT_EQ(l.processes, 2);
  EXPECT_EQ(l.devices_per_process, 8);
  // The older spelling: 8 GPUs per node, 8 devices per process.
  l = layout_of({.gpus_per_node = 8, .devices_per_process = 8});
  EXPECT_EQ(l.processes, 1);
  l = layout_of({.gpus_per_node = 8, .devices_per_process = 2});
  EXPECT_EQ(l.processes, 4);

  const auto error = [](LayoutRequest q) {
    auto l = resolve_layout(q);
    return l.ok() ? std::string("ok") : l.error().message;
  };
  EXPECT_EQ(error({.gpus = 6, .ranks = 4}),
            "--ranks 4: the job's 6 GPU(s) do not divide among them");
  EXPECT_EQ(error({.gpus = 12}),
            "12 GPU(s) do not fill nodes of 8 GPU(s); give --gpus-per-node (and --nodes)");
  EXPECT_EQ(error({.gpus = 16, .nodes = 4, .gpus_per_node = 8}),
            "--nodes 4 x --gpus-per-node 8 is not --gpus 16");
  EXPECT_EQ(error({.gpus = 12, .ranks = 2, .gpus_per_node = 4}),
            "--devices-per-process 6 does not divide --gpus-per-node 4");
  EXPECT_EQ(error({.gpus = 8, .ranks = 2, .devices_per_process = 2}),
            "--devices-per-process 2 contradicts 8 GPU(s) over --ranks 2 (4 each)");
}

TEST(Launcher, AProcessMayDriveWholeNodes) {
  LaunchOptions o;
  o.nodes = 2;
  o.gpus_per_node = 8;
  o.devices_per_process = 16;
  o.trace_dir = "/tmp/emu-traces";
  o.interposer = "/opt/lib/libpowertrain_cuda.so";
  const auto env = as_map(rank_environment(o, *device::find_gpu("h100"), 0, 1, 1));
  EXPECT_EQ(env.at("LOCAL_WORLD_SIZE"), "1");
  EXPECT_EQ(env.at("NODE_RANK"), "0");
  EXPECT_EQ(env.at("POWERTRAIN_EMU_DEVICES"), "16");
}

TEST(Launcher, FindsTheInterposerNextToTheBinary) {
  TempDir dir;
  ::unsetenv("POWERTRAIN_INTERPOSER");
  auto missing = find_interposer("", dir.path());
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.error().message.find("--interposer PATH"), std::string::npos);
  EXPECT_NE(missing.error().message.find("src/interposer/libpowertrain_cuda.so"),
            std::string::npos);
  fs::create_directories(dir.path() / "src" / "interposer");
  dir.write("src/interposer/libpowertrain_cuda.so", "x");
  auto found = find_interposer("", dir.path());
  ASSERT_TRUE(found.ok()) << found.error().message;
  EXPECT_EQ(fs::path(*found).filename(), "libpowertrain_cuda.so");
  dir.write("libpowertrain_cuda.so", "x");  // the same directory wins
  EXPECT_EQ(fs::path(*find_interposer("", dir.path())).parent_path(), fs::canonical(dir.path()));
  auto explicit_missing = find_interposer("/nonexistent/lib.so", dir.path());
  ASSERT_FALSE(explicit_missing.ok());
  EXPECT_EQ(explicit_missing.error().message, "--interposer /nonexistent/lib.so: no such file");
  ::setenv("POWERTRAIN_INTERPOSER", "/nonexistent/env.so", 1);
  EXPECT_FALSE(find_interposer("", dir.path()).ok());
  ::unsetenv("POWERTRAIN_INTERPOSER");
}

TEST(Launcher, ResolvesProgramsLikeExecvp) {
  auto sh = resolve_program("sh");
  ASSERT_TRUE(sh.ok()) << sh.error().message;
  EXPECT_EQ(fs::path(*sh).filename(), "sh");
  auto none = resolve_program("no-such-program-powertrain");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.error().message, "no-such-program-powertrain: command not found in PATH");
  EXPECT_FALSE(resolve_program("/nonexistent/prog").ok());
  EXPECT_GT(free_port(), 0);
}

TEST(Launcher, RunsOneProcessPerRankWithPrefixedOutputAndExitReports) {
  const std::string preload = harmless_library();
  if (preload.empty()) GTEST_SKIP() << "no libm to stand in for the interposer";
  TempDir dir;
  LaunchOptions o;
  o.nodes = 2;
  o.gpus_per_node = 2;
  o.trace_dir = dir.path() / "traces";
  o.interposer = preload;
  o.command = {"sh", "-c",
               "echo \"$RANK/$WORLD_SIZE local $LOCAL_RANK dev $POWERTRAIN_EMU_DEVICES port "
               "$MASTER_PORT\"; echo oops >&2; printf partial; "
               "if [ $RANK = 1 ]; then exit 3; fi; if [ $RANK = 2 ]; then kill -9 $$; fi"};
  std::mutex mutex;
  std::vector<std::tuple<int, bool, std::string>> lines;
  o.on_line = [&](int rank, bool err, std::string_view line) {
    std::lock_guard<std::mutex> lock(mutex);
    lines.emplace_back(rank, err, std::string(line));
  };
  auto result = launch(o);
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(result->world_size, 4);
  ASSERT_EQ(result->processes.size(), 4u);
  EXPECT_TRUE(result->processes[0].ok());
  EXPECT_EQ(result->processes[1].exit_code, 3);
  EXPECT_EQ(result->processes[1].describe(), "exit code 3");
  EXPECT_EQ(result->processes[2].signal, SIGKILL);
  EXPECT_NE(result->processes[2].describe().find("killed by signal 9"), std::string::npos);
  EXPECT_FALSE(result->all_ok());
  EXPECT_TRUE(fs::is_directory(o.trace_dir));
  for (int r = 0; r < 4; ++r) {
    const std::string expected = std::to_string(r) + "/4 local " + std::to_string(r % 2) +
                                 " dev 1 port " + std::to_string(result->master_port);
    EXPECT_NE(std::find(lines.begin(), lines.end(), std::make_tuple(r, false, expected)),
              lines.end())
        << expected;
    EXPECT_NE(std::find(lines.begin(), lines.end(), std::make_tuple(r, true, std::string("oops"))),
              lines.end());
  }
  // A last line without its newline is still forwarded.
  EXPECT_NE(
      std::find(lines.begin(), lines.end(), std::make_tuple(0, false, std::string("partial"))),
      lines.end());
}

TEST(Launcher, DevicesPerProcessAndTimeouts) {
  const std::string preload = harmless_library();
  if (preload.empty()) GTEST_SKIP() << "no libm to stand in for the interposer";
  TempDir dir;
  LaunchOptions o;
  o.gpus_per_node = 8;
  o.devices_per_process = 4;
  o.trace_dir = dir.path();
  o.interposer = preload;
  o.command = {"sh", "-c", "echo $WORLD_SIZE $POWERTRAIN_EMU_DEVICES"};
  std::vector<std::string> lines;
  std::mutex mutex;
  o.on_line = [&](int, bool, std::string_view line) {
    std::lock_guard<std::mutex> lock(mutex);
    lines.emplace_back(line);
  };
  auto result = launch(o);
  ASSERT_TRUE(result.ok()) << result.error().message;
  EXPECT_EQ(result->world_size, 2);
  EXPECT_EQ(result->gpus, 8);
  EXPECT_EQ(lines, std::vector<std::string>({"2 4", "2 4"}));

  o.devices_per_process = 3;
  auto bad = launch(o);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().message, "--devices-per-process 3 does not divide --gpus-per-node 8");

  o.devices_per_process = 8;
  o.command = {"sh", "-c", "sleep 30"};
  o.timeout_s = 0.3;
  auto slow = launch(o);
  ASSERT_TRUE(slow.ok());
  ASSERT_EQ(slow->processes.size(), 1u);
  EXPECT_EQ(slow->processes[0].signal, SIGTERM);
  EXPECT_TRUE(slow->processes[0].timed_out);
  EXPECT_LT(slow->wall_s, 10.0);

  o.command = {};
  EXPECT_FALSE(launch(o).ok());
  o.command = {"no-such-program-powertrain"};
  EXPECT_FALSE(launch(o).ok());
}

// Builds a tiny program against the CUDA runtime (needs /usr/local/cuda; no GPU) both ways.
TEST(Launcher, RefusesProgramsWithTheStaticCudaRuntime) {
  const fs::path cuda = "/usr/local/cuda";
  if (!fs::exists(cuda / "lib64" / "libcudart_static.a") || !fs::exists(cuda / "include")) {
    GTEST_SKIP() << "no CUDA toolkit in /usr/local/cuda";
  }
  TempDir dir;
  dir.write("p.cc",
            "#include <cuda_runtime_api.h>\nint main(){int n=0;return cudaGetDeviceCount(&n);}\n");
  const std::string base = "g++ -I" + (cuda / "include").string() + " " +
                           (dir.path() / "p.cc").string() + " -L" + (cuda / "lib64").string();
  ASSERT_EQ(std::system((base + " -lcudart_static -ldl -lpthread -lrt -o " +
                         (dir.path() / "p_static").string() + " 2>/dev/null")
                            .c_str()),
            0);
  ASSERT_EQ(
      std::system(
          (base + " -lcudart -o " + (dir.path() / "p_shared").string() + " 2>/dev/null").c_str()),
      0);
  ASSERT_EQ(std::system(("strip -o " + (dir.path() / "p_stripped").string() + " " +
                         (dir.path() / "p_static").string())
                            .c_str()),
            0);
  auto shared = inspect_cudart((dir.path() / "p_shared").string());
  ASSERT_TRUE(shared.ok());
  EXPECT_EQ(shared->linkage, CudartLinkage::kShared);
  EXPECT_EQ(shared->evidence.rfind("DT_NEEDED libcudart.so", 0), 0u);
  auto linked = inspect_cudart((dir.path() / "p_static").string());
  ASSERT_TRUE(linked.ok());
  EXPECT_EQ(linked->linkage, CudartLinkage::kStatic);
  auto stripped = inspect_cudart((dir.path() / "p_stripped").string());
  ASSERT_TRUE(stripped.ok());
  EXPECT_EQ(stripped->linkage, CudartLinkage::kStatic);
  auto sh = inspect_cudart(*resolve_program("sh"));
  ASSERT_TRUE(sh.ok());
  EXPECT_EQ(sh->linkage, CudartLinkage::kNone);
  const fs::path script = dir.write("s.sh", "#!/bin/sh\n");
  EXPECT_EQ(inspect_cudart(script.string())->linkage, CudartLinkage::kNotElf);

  LaunchOptions o;
  o.gpus_per_node = 1;
  o.trace_dir = dir.path() / "t";
  o.interposer = (dir.path() / "p.cc").string();
  o.command = {(dir.path() / "p_static").string()};
  auto refused = launch(o);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("built with -cudart static"), std::string::npos);
  EXPECT_NE(refused.error().message.find("rebuild with -cudart shared"), std::string::npos);
}

}  // namespace
}  // namespace powertrain::emulate
