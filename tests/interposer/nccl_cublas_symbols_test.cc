// The interposer's NCCL and cuBLAS/cuBLASLt surface: (1) it exports every function the real
// libnccl.so.2, libcublas.so.13 and libcublasLt.so.13 export (so no call falls through to a real
// library, whose static cudart fails without a GPU); (2) bad handles, double destroys, unmatched
// groups and unsupported calls return the libraries' error codes and are reported in the trace —
// never a crash. (2) loads the interposer with dlopen in a forked child, calls the entry points
// directly with invalid arguments (which a valid CUDA program could not do), and reads the
// child's trace.
#include <dlfcn.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdio>
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
#include <vector>

#if defined(POWERTRAIN_HAVE_EMULATION) && defined(POWERTRAIN_INTERPOSER_PATH)
#define PT_EMULATION_TESTS 1
#else
#define PT_EMULATION_TESTS 0
#define POWERTRAIN_INTERPOSER_PATH ""
#endif

namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr const char* kCudaLibDir = "/usr/local/cuda/lib";

/// Names of the functions a shared library exports (`nm -D --defined-only`, versions stripped).
std::set<std::string> exported_functions(const std::string& path) {
  std::set<std::string> names;
  const std::string command = "nm -D --defined-only '" + path + "' 2>/dev/null";
  FILE* pipe = ::popen(command.c_str(), "r");
  if (pipe == nullptr) return names;
  std::array<char, 512> line{};
  while (std::fgets(line.data(), static_cast<int>(line.size()), pipe) != nullptr) {
    std::istringstream fields(line.data());
    std::string address, type, name;
    if (!(fields >> address >> type >> name)) continue;
    if (type != "T" && type != "W" && type != "i") continue;
    names.insert(name.substr(0, name.find('@')));
  }
  ::pclose(pipe);
  return names;
}

TEST(NcclCublasSymbols, ExportsEveryNcclCublasAndCublasLtFunction) {
  if (!PT_EMULATION_TESTS) GTEST_SKIP() << "built without CUDA emulation";
  const std::set<std::string> ours = exported_functions(POWERTRAIN_INTERPOSER_PATH);
  ASSERT_FALSE(ours.empty()) << "cannot read the exports of " << POWERTRAIN_INTERPOSER_PATH;
  for (const char* library : {"libnccl.so.2", "libcublas.so.13", "libcublasLt.so.13"}) {
    const fs::path path = fs::path(kCudaLibDir) / library;
    if (!fs::exists(path)) {
      std::cerr << "skipping " << path << " (not installed)\n";
      continue;
    }
    const std::set<std::string> theirs = exported_functions(path.string());
    ASSERT_FALSE(theirs.empty()) << path;
    std::vector<std::string> missing;
    for (const std::string& name : theirs) {
      if (ours.count(name) == 0) missing.push_back(name);
    }
    EXPECT_TRUE(missing.empty()) << library << ": " << missing.size()
                                 << " functions not exported by the interposer, e.g. "
                                 << missing.front() << "; rerun scripts/gen_interposer_stubs.py";
  }
}

// ---- misuse in a child process ---------------------------------------------------------------

struct UniqueId {
  char internal[128];
};

/// Runs in the forked child: returns the number of failed checks (details on stderr).
int misuse_checks() {
  void* lib = ::dlopen(POWERTRAIN_INTERPOSER_PATH, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "dlopen: %s\n", ::dlerror());
    return 100;
  }
  int failures = 0;
  auto sym = [&](const char* name) {
    void* f = ::dlsym(lib, name);
    if (f == nullptr) {
      std::fprintf(stderr, "missing symbol %s\n", name);
      std::exit(101);
    }
    return f;
  };
  auto check = [&](const char* what, long got, long want) {
    if (got != want) {
      std::fprintf(stderr, "FAIL %s: got %ld, want %ld\n", what, got, want);
      ++failures;
    }
  };
#define PT_FN(type, name) reinterpret_cast<type>(sym(name))
  using Comm = void*;
  auto get_unique_id = PT_FN(int (*)(UniqueId*), "ncclGetUniqueId");
  auto init_rank = PT_FN(int (*)(Comm*, int, UniqueId, int), "ncclCommInitRank");
  auto all_reduce =
      PT_FN(int (*)(const void*, void*, size_t, int, int, Comm, void*), "ncclAllReduce");
  auto p_all_reduce =
      PT_FN(int (*)(const void*, void*, size_t, int, int, Comm, void*), "pncclAllReduce");
  auto send = PT_FN(int (*)(const void*, size_t, int, int, Comm, void*), "ncclSend");
  auto destroy = PT_FN(int (*)(Comm), "ncclCommDestroy");
  auto count = PT_FN(int (*)(Comm, int*), "ncclCommCount");
  auto group_end = PT_FN(int (*)(), "ncclGroupEnd");
  auto mem_free = PT_FN(int (*)(void*), "ncclMemFree");
  auto red_op_destroy = PT_FN(int (*)(int, Comm), "ncclRedOpDestroy");
  auto split = PT_FN(int (*)(Comm, int, int, Comm*, void*), "ncclCommSplit");
  auto error_string = PT_FN(const char* (*)(int), "ncclGetErrorString");
  constexpr int kInvalidArgument = 4, kInvalidUsage = 5, kSystemError = 2, kFloat32 = 7;

  UniqueId id;
  check("ncclGetUniqueId", get_unique_id(&id), 0);
  Comm comm = nullptr;
  check("ncclCommInitRank", init_rank(&comm, 2, id, 0), 0);
  int n = 0;
  check("ncclCommCount", count(comm, &n), 0);
  check("count", n, 2);
  void* buffer = reinterpret_cast<void*>(0x1000);
  check("allreduce on a live comm", all_reduce(buffer, buffer, 16, kFloat32, 0, comm, nullptr), 0);
  check("allreduce with a bad dtype", all_reduce(buffer, buffer, 16, 99, 0, comm, nullptr),
        kInvalidArgument);
  check("send to a peer out of range", send(buffer, 16, kFloat32, 7, comm, nullptr),
        kInvalidArgument);
  check("allreduce on an invalid stream",
        all_reduce(buffer, buffer, 16, kFloat32, 0, comm, reinterpret_cast<void*>(0x9999)),
        kInvalidArgument);
  check("allreduce on a garbage comm",
        all_reduce(buffer, buffer, 16, kFloat32, 0, reinterpret_cast<Comm>(0x1234), nullptr),
        kInvalidArgument);
  check("pnccl alias on a garbage comm",
        p_all_reduce(buffer, buffer, 16, kFloat32, 0, reinterpret_cast<Comm>(0x1234), nullptr),
        kInvalidArgument);
  check("unknown reduction operator", red_op_destroy(42, comm), kInvalidArgument);
  check("ncclMemFree of a foreign pointer", mem_free(buffer), kInvalidArgument);
  check("ncclGroupEnd without ncclGroupStart", group_end(), kInvalidUsage);
  // A split whose other member never arrives times out (POWERTRAIN_EMU_RENDEZVOUS_TIMEOUT_S).
  Comm half = reinterpret_cast<Comm>(0x1);
  check("split without the other rank", split(comm, 0, 0, &half, nullptr), kSystemError);
  check("failed split leaves no communicator", half == nullptr, 1);
  check("destroy", destroy(comm), 0);
  check("double destroy", destroy(comm), kInvalidArgument);
  check("allreduce after destroy", all_reduce(buffer, buffer, 16, kFloat32, 0, comm, nullptr),
        kInvalidArgument);
  check("destroy NULL is a no-op", destroy(nullptr), 0);
  check("ncclGetErrorString", std::strlen(error_string(kInvalidArgument)) > 0, 1);

  using Handle = void*;
  auto create = PT_FN(int (*)(Handle*), "cublasCreate_v2");
  auto blas_destroy = PT_FN(int (*)(Handle), "cublasDestroy_v2");
  auto set_stream = PT_FN(int (*)(Handle, void*), "cublasSetStream_v2");
  auto sgemm = PT_FN(int (*)(Handle, int, int, int, int, int, const float*, const float*, int,
                             const float*, int, const float*, float*, int),
                     "cublasSgemm_v2");
  // A routine the emulator leaves unsupported (an integer GEMM with bias, cuBLAS's legacy
  // extension).
  using Bytes = const unsigned char*;
  auto int8_gemm = PT_FN(int (*)(Handle, int, int, int, int, int, int, Bytes, int, int, Bytes, int,
                                 int, unsigned char*, int, int, int, int),
                         "cublasUint8gemmBias");
  auto status_name = PT_FN(const char* (*)(int), "cublasGetStatusName");
  constexpr int kNotInitialized = 1, kInvalidValue = 7, kNotSupported = 15;
  Handle handle = nullptr;
  const float one = 1.0f;
  const float* f = static_cast<const float*>(buffer);
  float* g = static_cast<float*>(buffer);
  check("cublasCreate", create(&handle), 0);
  check("sgemm", sgemm(handle, 0, 0, 8, 8, 8, &one, f, 8, f, 8, &one, g, 8), 0);
  check("sgemm lda too small", sgemm(handle, 0, 0, 8, 8, 8, &one, f, 4, f, 8, &one, g, 8),
        kInvalidValue);
  check("sgemm bad transa", sgemm(handle, 9, 0, 8, 8, 8, &one, f, 8, f, 8, &one, g, 8),
        kInvalidValue);
  check("sgemm negative m", sgemm(handle, 0, 0, -1, 8, 8, &one, f, 8, f, 8, &one, g, 8),
        kInvalidValue);
  check("set an invalid stream", set_stream(handle, reinterpret_cast<void*>(0x9999)),
        kInvalidValue);
  check("unsupported cublasUint8gemmBias",
        int8_gemm(handle, 0, 0, 0, 8, 8, 8, nullptr, 0, 8, nullptr, 0, 8, nullptr, 0, 8, 1, 0),
        kNotSupported);
  check("cublasDestroy", blas_destroy(handle), 0);
  check("double cublasDestroy", blas_destroy(handle), kNotInitialized);
  check("sgemm after destroy", sgemm(handle, 0, 0, 8, 8, 8, &one, f, 8, f, 8, &one, g, 8),
        kNotInitialized);
  check("sgemm on a garbage handle",
        sgemm(reinterpret_cast<Handle>(0x4242), 0, 0, 8, 8, 8, &one, f, 8, f, 8, &one, g, 8),
        kNotInitialized);
  check("sgemm on NULL", sgemm(nullptr, 0, 0, 8, 8, 8, &one, f, 8, f, 8, &one, g, 8),
        kNotInitialized);
  check("cublasGetStatusName",
        std::strcmp(status_name(kNotSupported), "CUBLAS_STATUS_NOT_SUPPORTED") == 0, 1);

  auto lt_create = PT_FN(int (*)(Handle*), "cublasLtCreate");
  auto lt_destroy = PT_FN(int (*)(Handle), "cublasLtDestroy");
  auto desc_create = PT_FN(int (*)(void**, int, int), "cublasLtMatmulDescCreate");
  auto desc_set = PT_FN(int (*)(void*, int, const void*, size_t), "cublasLtMatmulDescSetAttribute");
  auto desc_get =
      PT_FN(int (*)(void*, int, void*, size_t, size_t*), "cublasLtMatmulDescGetAttribute");
  auto layout_create =
      PT_FN(int (*)(void**, int, uint64_t, uint64_t, int64_t), "cublasLtMatrixLayoutCreate");
  auto matmul =
      PT_FN(int (*)(Handle, void*, const void*, const void*, void*, const void*, void*, const void*,
                    const void*, void*, void*, void*, const void*, void*, size_t, void*),
            "cublasLtMatmul");
  constexpr int kComputeFloat32 = 68, kRealFloat32 = 0, kTransA = 3;
  Handle lt = nullptr;
  void* desc = nullptr;
  void* a = nullptr;
  void* b = nullptr;
  void* c = nullptr;
  check("cublasLtCreate", lt_create(&lt), 0);
  check("desc create", desc_create(&desc, kComputeFloat32, kRealFloat32), 0);
  const int32_t transpose = 1;
  check("set TRANSA", desc_set(desc, kTransA, &transpose, sizeof transpose), 0);
  check("set TRANSA with a wrong size", desc_set(desc, kTransA, &transpose, 8), kInvalidValue);
  int32_t read_back = 0;
  size_t written = 0;
  check("get TRANSA", desc_get(desc, kTransA, &read_back, sizeof read_back, &written), 0);
  check("TRANSA read back", read_back, 1);
  check("layout A", layout_create(&a, kRealFloat32, 32, 64, 32), 0);  // op(A) = A^T: 64 x 32
  check("layout B", layout_create(&b, kRealFloat32, 32, 16, 32), 0);
  check("layout C", layout_create(&c, kRealFloat32, 64, 16, 64), 0);
  check("matmul",
        matmul(lt, desc, &one, buffer, a, buffer, b, &one, buffer, c, buffer, c, nullptr, nullptr,
               0, nullptr),
        0);
  check("matmul with inconsistent shapes",
        matmul(lt, desc, &one, buffer, b, buffer, a, &one, buffer, c, buffer, c, nullptr, nullptr,
               0, nullptr),
        kInvalidValue);
  check("matmul with a garbage layout",
        matmul(lt, desc, &one, buffer, reinterpret_cast<void*>(0x77), buffer, b, &one, buffer, c,
               buffer, c, nullptr, nullptr, 0, nullptr),
        kInvalidValue);
  check("cublasLtDestroy", lt_destroy(lt), 0);
  check("matmul after cublasLtDestroy",
        matmul(lt, desc, &one, buffer, a, buffer, b, &one, buffer, c, buffer, c, nullptr, nullptr,
               0, nullptr),
        kNotInitialized);
#undef PT_FN
  return failures;
}

/// Runs `checks` (returning its number of failures) in a forked child that loads the interposer;
/// returns the child's stderr and its trace records. Fails the test when the child crashes.
struct ChildRun {
  fs::path dir;
  int exit_code = -1;
  std::string log;
  std::vector<json> records;
};

ChildRun run_in_child(int (*checks)(), const char* rendezvous_timeout_s) {
  ChildRun run;
  std::string pattern = (fs::path(::testing::TempDir()) / "powertrain-nccl-cublas-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp " << pattern;
    return run;
  }
  run.dir = pattern;
  const fs::path log = run.dir / "child.log";
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out >= 0) ::dup2(out, 2);
    ::setenv("POWERTRAIN_EMU_DIR", run.dir.c_str(), 1);
    ::setenv("POWERTRAIN_EMU_RENDEZVOUS_TIMEOUT_S", rendezvous_timeout_s, 1);
    ::unsetenv("RANK");
    const int failures = checks();
    std::fflush(stderr);
    std::exit(failures);  // a normal exit: the interposer writes its trace
  }
  if (pid < 0) {
    ADD_FAILURE() << "fork failed";
    return run;
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  std::ifstream log_in(log);
  run.log.assign(std::istreambuf_iterator<char>(log_in), std::istreambuf_iterator<char>());
  if (!WIFEXITED(status)) {
    ADD_FAILURE() << "child crashed (signal " << WTERMSIG(status) << ")\n" << run.log;
    return run;
  }
  run.exit_code = WEXITSTATUS(status);
  for (const auto& entry : fs::directory_iterator(run.dir)) {
    if (entry.path().filename().string().rfind("trace-", 0) != 0) continue;
    std::ifstream in(entry.path());
    std::string line;
    while (std::getline(in, line)) {
      json record = json::parse(line, nullptr, false);
      EXPECT_FALSE(record.is_discarded()) << line;
      if (!record.is_discarded()) run.records.push_back(std::move(record));
    }
  }
  return run;
}

void remove_unless_failed(const ChildRun& run) {
  std::error_code ec;
  if (::testing::Test::HasFailure()) {
    std::cerr << "keeping " << run.dir << "\n";
  } else if (!run.dir.empty()) {
    fs::remove_all(run.dir, ec);
  }
}

TEST(NcclCublasMisuse, BadHandlesAndUnsupportedCallsAreReportedNotCrashed) {
  if (!PT_EMULATION_TESTS) GTEST_SKIP() << "built without CUDA emulation";
  const ChildRun run = run_in_child(misuse_checks, "0.2");
  ASSERT_EQ(run.exit_code, 0) << run.log;
  EXPECT_NE(run.log.find("cublasUint8gemmBias"), std::string::npos)
      << "the unsupported call is named on stderr:\n"
      << run.log;

  std::multiset<std::string> misuse, unsupported;
  std::size_t gemms = 0;
  for (const json& record : run.records) {
    const std::string op = record.value("op", "");
    if (op == "misuse") misuse.insert(record.value("api", ""));
    if (op == "unsupported") unsupported.insert(record.value("api", ""));
    if (op == "gemm") ++gemms;
  }
  EXPECT_EQ(gemms, 2u) << "the valid sgemm and the valid cublasLtMatmul";
  EXPECT_EQ(unsupported, (std::multiset<std::string>{"cublasUint8gemmBias"}));
  const std::map<std::string, std::size_t> expected_misuse = {
      // bad dtype, stream, 2 garbage comms (one via pncclAllReduce), destroyed
      {"ncclAllReduce", 5},      {"ncclSend", 1},         {"ncclRedOpDestroy", 1},
      {"ncclMemFree", 1},        {"ncclGroupEnd", 1},     {"ncclCommSplit", 1},
      {"ncclCommDestroy", 1},    {"cublasSgemm_v2", 6},  // lda, transa, m, destroyed, garbage, NULL
      {"cublasSetStream_v2", 1}, {"cublasDestroy_v2", 1}, {"cublasLtMatmulDescSetAttribute", 1},
      {"cublasLtMatmul", 3},  // shapes, garbage layout, destroyed handle
  };
  for (const auto& [api, count] : expected_misuse) {
    EXPECT_EQ(misuse.count(api), count) << api;
  }
  EXPECT_EQ(misuse.size(), 23u);
  remove_unless_failed(run);
}

// ---- library properties ------------------------------------------------------------------

/// cublasGetProperty and cublasLtGetProperty answer the same version (cuBLAS 13 here) and report
/// a NULL value or an unknown property type as misuse. Returns the number of failed checks.
int property_checks() {
  void* lib = ::dlopen(POWERTRAIN_INTERPOSER_PATH, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return 100;
  int failures = 0;
  for (const char* name : {"cublasGetProperty", "cublasLtGetProperty"}) {
    auto get = reinterpret_cast<int (*)(int, int*)>(::dlsym(lib, name));
    if (get == nullptr) return 101;
    int major = -1, minor = -1, patch = -1;
    failures += get(0, &major) != 0 || get(1, &minor) != 0 || get(2, &patch) != 0;
    failures += major != 13 || minor < 0 || patch < 0;
    failures += get(0, nullptr) != 7;  // CUBLAS_STATUS_INVALID_VALUE
    failures += get(9, &major) != 7;
  }
  return failures;
}

TEST(NcclCublasMisuse, LibraryPropertiesAnswerTheVersion) {
  if (!PT_EMULATION_TESTS) GTEST_SKIP() << "built without CUDA emulation";
  const ChildRun run = run_in_child(property_checks, "0.2");
  ASSERT_EQ(run.exit_code, 0) << run.log;
  std::multiset<std::string> misuse;
  for (const json& record : run.records)
    if (record.value("op", "") == "misuse") misuse.insert(record.value("api", ""));
  EXPECT_EQ(misuse, (std::multiset<std::string>{"cublasGetProperty", "cublasGetProperty",
                                                "cublasLtGetProperty", "cublasLtGetProperty"}));
  remove_unless_failed(run);
}

// ---- threads: one rank per thread, splits meet in memory ----------------------------------

/// 4 threads, one rank each, with one unique id: ncclCommInitRank, then ncclCommSplit (colour
/// rank % 2, key -rank) with no group — each call blocks until the other members, on other
/// threads, arrive — and an allreduce on the half. Runs in the child; returns the number of
/// failed checks.
int thread_split_checks() {
  void* lib = ::dlopen(POWERTRAIN_INTERPOSER_PATH, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return 100;
  using Comm = void*;
  auto get_unique_id = reinterpret_cast<int (*)(UniqueId*)>(::dlsym(lib, "ncclGetUniqueId"));
  auto init_rank =
      reinterpret_cast<int (*)(Comm*, int, UniqueId, int)>(::dlsym(lib, "ncclCommInitRank"));
  auto split =
      reinterpret_cast<int (*)(Comm, int, int, Comm*, void*)>(::dlsym(lib, "ncclCommSplit"));
  auto user_rank = reinterpret_cast<int (*)(Comm, int*)>(::dlsym(lib, "ncclCommUserRank"));
  auto all_reduce = reinterpret_cast<int (*)(const void*, void*, size_t, int, int, Comm, void*)>(
      ::dlsym(lib, "ncclAllReduce"));
  auto destroy = reinterpret_cast<int (*)(Comm)>(::dlsym(lib, "ncclCommDestroy"));
  if (!get_unique_id || !init_rank || !split || !user_rank || !all_reduce || !destroy) return 101;
  constexpr int kRanks = 4;
  UniqueId id;
  if (get_unique_id(&id) != 0) return 102;
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r) {
    threads.emplace_back([&, r] {
      Comm comm = nullptr;
      Comm half = nullptr;
      int half_rank = -1;
      void* buffer = reinterpret_cast<void*>(0x1000);
      if (init_rank(&comm, kRanks, id, r) != 0 || split(comm, r % 2, -r, &half, nullptr) != 0 ||
          user_rank(half, &half_rank) != 0 ||
          all_reduce(buffer, buffer, 64, 7, 0, half, nullptr) != 0 || destroy(half) != 0 ||
          destroy(comm) != 0) {
        std::fprintf(stderr, "rank %d: an NCCL call failed\n", r);
        ++failures;
      }
      // keys -rank: the higher parent rank comes first in each colour
      if (half_rank != (r < 2 ? 1 : 0)) {
        std::fprintf(stderr, "rank %d: half rank %d\n", r, half_rank);
        ++failures;
      }
    });
  }
  for (std::thread& t : threads) t.join();
  return failures.load();
}

TEST(NcclCublasThreads, SplitAcrossThreadsOfOneProcessMeetsInMemory) {
  if (!PT_EMULATION_TESTS) GTEST_SKIP() << "built without CUDA emulation";
  const ChildRun run = run_in_child(thread_split_checks, "30");
  ASSERT_EQ(run.exit_code, 0) << run.log;
  std::map<int, json> splits;  // parent rank (the key is -rank) → record
  std::set<int> threads;
  std::set<std::string> parents;
  for (const json& record : run.records) {
    const std::string op = record.value("op", "");
    EXPECT_TRUE(op != "misuse" && op != "unsupported") << record.dump();
    if (op == "comm_init" && record.at("api") == "ncclCommSplit") {
      splits[-record.at("key").get<int>()] = record;
      threads.insert(record.at("tid").get<int>());
      parents.insert(record.at("parent").get<std::string>());
    }
  }
  ASSERT_EQ(splits.size(), 4u);
  EXPECT_EQ(threads.size(), 4u) << "one rank per host thread";
  EXPECT_EQ(parents.size(), 1u);
  for (const auto& [rank, record] : splits) {
    EXPECT_EQ(record.at("color"), rank % 2);
    EXPECT_EQ(record.at("size"), 2);
    EXPECT_EQ(record.at("rank"), rank < 2 ? 1 : 0);
  }
  EXPECT_EQ(splits[0].at("comm"), splits[2].at("comm"));
  EXPECT_EQ(splits[1].at("comm"), splits[3].at("comm"));
  EXPECT_NE(splits[0].at("comm"), splits[1].at("comm"));
  remove_unless_failed(run);
}

}  // namespace
