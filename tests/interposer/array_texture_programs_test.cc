// CUDA arrays, textures and surfaces under emulation (issue 18): the texture_2d, surface_write,
// array_3d and driver_array_texture programs (after NVIDIA's simpleTexture, simpleSurfaceWrite,
// simpleTexture3D/simpleLayeredTexture/simpleCubemapTexture and simpleTextureDrv) run under the
// interposer; each checks its own data round trips and refusals, and the tests check the trace
// record by record: every copy (API, direction, bytes), every array allocation (accounted like
// device memory), every misuse, and that nothing was answered by a stub.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "interposer_test_util.h"

namespace powertrain::testing_emu {
namespace {

using nlohmann::json;

using CopyRow = std::tuple<std::string, std::string, std::int64_t>;  // api, kind, bytes
using AllocRow = std::pair<std::string, std::int64_t>;               // api, bytes

class ArrayTexturePrograms : public EmulationTest {
 protected:
  void skip_unless_built(const std::string& name) {
    if (!std::filesystem::exists(program_path(name))) GTEST_SKIP() << name << " not built";
  }
  static std::vector<CopyRow> copies(const Trace& trace) {
    std::vector<CopyRow> rows;
    for (const json& c : trace.of("memcpy"))
      rows.emplace_back(c.at("api"), c.at("kind"), c.at("bytes"));
    return rows;
  }
  static std::vector<AllocRow> allocations(const Trace& trace) {
    std::vector<AllocRow> rows;
    for (const json& m : trace.of("malloc")) {
      EXPECT_TRUE(m.at("ok").get<bool>()) << m.dump();
      rows.emplace_back(m.at("api"), m.at("bytes"));
    }
    return rows;
  }
  static std::vector<std::string> misuses(const Trace& trace) {
    std::vector<std::string> apis;
    for (const json& m : trace.of("misuse")) apis.push_back(m.at("api"));
    return apis;
  }
  static std::string driver_dir() {
    return (std::filesystem::path(kInterposerPath).parent_path() / "driver").string();
  }
};

// The array, texture and surface entry points of both APIs are hand-written (T), not the
// generated stubs (W) that answer "not supported".
TEST_F(ArrayTexturePrograms, EntryPointsAreHandWritten) {
  const ProgramRun run = run_shell("nm -D --defined-only " + shell_quote(kInterposerPath), dir_);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  std::map<std::string, char> symbols;
  std::istringstream lines(run.out);
  std::string address, type, name;
  while (lines >> address >> type >> name) symbols[name.substr(0, name.find('@'))] = type[0];
  for (const char* api : {"cudaMallocArray",
                          "cudaMalloc3DArray",
                          "cudaMallocMipmappedArray",
                          "cudaGetMipmappedArrayLevel",
                          "cudaFreeArray",
                          "cudaFreeMipmappedArray",
                          "cudaArrayGetInfo",
                          "cudaArrayGetPlane",
                          "cudaArrayGetMemoryRequirements",
                          "cudaGetChannelDesc",
                          "cudaCreateChannelDesc",
                          "cudaMemcpy2DToArray",
                          "cudaMemcpy2DToArrayAsync_ptsz",
                          "cudaMemcpy2DFromArray",
                          "cudaMemcpy2DFromArrayAsync",
                          "cudaMemcpyToArray",
                          "cudaMemcpyFromArray",
                          "cudaMemcpyArrayToArray",
                          "cudaMemcpy2DArrayToArray",
                          "cudaMemcpy3D",
                          "cudaMemcpy3D_ptds",
                          "cudaMemcpy3DAsync",
                          "cudaMemcpy3DPeer",
                          "cudaMemset3D",
                          "cudaMemset3DAsync",
                          "cudaMemcpy3DPeerAsync",
                          "cudaCreateTextureObject",
                          "cudaDestroyTextureObject",
                          "cudaGetTextureObjectResourceDesc",
                          "cudaGetTextureObjectTextureDesc",
                          "cudaGetTextureObjectResourceViewDesc",
                          "cudaCreateSurfaceObject",
                          "cudaDestroySurfaceObject",
                          "cudaGetSurfaceObjectResourceDesc",
                          "cuArrayCreate_v2",
                          "cuArray3DCreate_v2",
                          "cuArrayDestroy",
                          "cuArrayGetDescriptor_v2",
                          "cuArray3DGetDescriptor_v2",
                          "cuMipmappedArrayCreate",
                          "cuMipmappedArrayDestroy",
                          "cuMipmappedArrayGetLevel",
                          "cuMemcpyHtoA_v2",
                          "cuMemcpyAtoH_v2",
                          "cuMemcpyAtoD_v2",
                          "cuMemcpyDtoA_v2",
                          "cuMemcpyAtoA_v2",
                          "cuMemcpy2D_v2",
                          "cuMemcpy2DAsync_v2",
                          "cuMemcpy3D_v2",
                          "cuMemcpy3DAsync_v2",
                          "cuTexObjectCreate",
                          "cuTexObjectDestroy",
                          "cuTexObjectGetResourceDesc",
                          "cuSurfObjectCreate",
                          "cuSurfObjectDestroy"}) {
    const auto it = symbols.find(api);
    ASSERT_NE(it, symbols.end()) << api;
    EXPECT_EQ(it->second, 'T') << api << " is only a generated stub";
  }
}

// A 64 x 32 float array: copied in, copied array to array and out (the program compares the
// bytes), a texture object read by the kernel; pitch2D, linear and mipmapped textures; the
// array's 8192 bytes counted by cudaMemGetInfo; four invalid texture descriptions, a double free
// and an absent mipmap level refused with cudaErrorInvalidValue.
TEST_F(ArrayTexturePrograms, Texture2dRoundTripsAndRefusals) {
  skip_unless_built("texture_2d");
  const ProgramRun run = run_program("texture_2d");
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("texture_2d: array 8192 bytes counted 8192, round trip ok"),
            std::string::npos)
      << run.out;
  const Trace trace = only_trace();
  EXPECT_TRUE(trace.of("unsupported").empty()) << trace.of("unsupported").front().dump();
  EXPECT_EQ(copies(trace), (std::vector<CopyRow>{{"cudaMemcpy2DToArray", "HtoD", 8192},
                                                 {"cudaMemcpy", "DtoH", 8192},
                                                 {"cudaMemcpy2DArrayToArray", "DtoD", 8192},
                                                 {"cudaMemcpy2DFromArray", "DtoH", 8192},
                                                 {"cudaMemcpy2DFromArray", "DtoH", 64},
                                                 {"cudaMemcpy2DToArray", "HtoD", 512},
                                                 {"cudaMemcpy2DFromArray", "DtoH", 512}}));
  // The mipmapped array holds its 4 levels in one allocation: (64·32 + 32·16 + 16·8 + 8·4) · 4.
  EXPECT_EQ(allocations(trace), (std::vector<AllocRow>{{"cudaMallocArray", 8192},
                                                       {"cudaMalloc", 8192},
                                                       {"cudaMallocArray", 8192},
                                                       {"cudaMallocPitch", 512 * 32},
                                                       {"cudaMallocArray", 16 * 16 * 4},
                                                       {"cudaMallocMipmappedArray", 10880}}));
  std::vector<std::string> frees;
  for (const json& f : trace.of("free")) frees.push_back(f.at("api"));
  EXPECT_EQ(frees,
            (std::vector<std::string>{"cudaFreeArray", "cudaFreeMipmappedArray", "cudaFreeArray",
                                      "cudaFreeArray", "cudaFree", "cudaFree"}));
  EXPECT_EQ(misuses(trace),
            (std::vector<std::string>{"cudaCreateTextureObject", "cudaCreateTextureObject",
                                      "cudaCreateTextureObject", "cudaCreateTextureObject",
                                      "cudaFreeArray", "cudaGetMipmappedArrayLevel",
                                      "cudaDestroyTextureObject"}));
  const auto kernels = trace.of("kernel");
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(kernels[0].at("grid"), json::array({8, 4, 1}));
  EXPECT_EQ(kernels[0].at("block"), json::array({8, 8, 1}));
}

// A surface-load-store array written by a kernel through a surface object; the deprecated 1D
// copies move rows 2..3 through a second array (asynchronously on the created stream) and back.
TEST_F(ArrayTexturePrograms, SurfaceWriteAndDeprecatedCopies) {
  skip_unless_built("surface_write");
  const ProgramRun run = run_program("surface_write");
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("surface_write: round trip ok"), std::string::npos) << run.out;
  const Trace trace = only_trace();
  EXPECT_TRUE(trace.of("unsupported").empty());
  EXPECT_EQ(copies(trace), (std::vector<CopyRow>{{"cudaMemcpyToArray", "HtoD", 2048},
                                                 {"cudaMemcpyArrayToArray", "DtoD", 256},
                                                 {"cudaMemcpyFromArrayAsync", "DtoH", 256},
                                                 {"cudaMemcpyFromArray", "DtoH", 2048}}));
  const auto memcpys = trace.of("memcpy");
  EXPECT_EQ(memcpys[2].at("stream"), 1);
  EXPECT_TRUE(memcpys[2].at("async").get<bool>());
  EXPECT_EQ(allocations(trace),
            (std::vector<AllocRow>{{"cudaMallocArray", 2048}, {"cudaMallocArray", 256}}));
  EXPECT_EQ(misuses(trace),
            (std::vector<std::string>{"cudaMemcpyFromArray", "cudaCreateSurfaceObject"}));
  const auto kernels = trace.of("kernel");
  ASSERT_EQ(kernels.size(), 1u);
  EXPECT_EQ(kernels[0].at("stream"), 1);
}

// 3D, layered and cubemap arrays: cudaMemcpy3D with element extents on array ends and byte
// extents between pitched pointers, positions into both ends, the async form on a stream, the
// peer form (direction inferred), refused extents and offsets that would wrap around, and a
// cudaMemset3D of the pitched volume.
TEST_F(ArrayTexturePrograms, Array3dLayeredAndCubemapCopies) {
  skip_unless_built("array_3d");
  const ProgramRun run = run_program("array_3d");
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("array_3d: 3D, layered and cubemap round trips ok"), std::string::npos)
      << run.out;
  const Trace trace = only_trace();
  EXPECT_TRUE(trace.of("unsupported").empty());
  // 16·8·4 floats in; 16 × 6 rows × 3 slices (the region at y 2, z 1) across and out; one layer of
  // 16·8 floats in and out; one 8·8 cubemap face.
  EXPECT_EQ(copies(trace), (std::vector<CopyRow>{{"cudaMemcpy3D", "HtoD", 2048},
                                                 {"cudaMemcpy3D", "DtoD", 1152},
                                                 {"cudaMemcpy3D", "DtoH", 1152},
                                                 {"cudaMemcpy3DAsync", "HtoD", 512},
                                                 {"cudaMemcpy3DAsync", "DtoH", 512},
                                                 {"cudaMemcpy3DPeer", "HtoD", 256},
                                                 {"cudaMemcpy", "DtoH", 4}}));
  // cudaMemset3D: 64 bytes x 8 rows x 4 slices of the pitched volume.
  const auto memsets = trace.of("memset");
  ASSERT_EQ(memsets.size(), 1u);
  EXPECT_EQ(memsets[0].at("api"), "cudaMemset3D");
  EXPECT_EQ(memsets[0].at("bytes"), 64 * 8 * 4);
  EXPECT_EQ(allocations(trace), (std::vector<AllocRow>{{"cudaMalloc3DArray", 2048},
                                                       {"cudaMalloc3D", 512 * 8 * 4},
                                                       {"cudaMalloc", 64},
                                                       {"cudaMalloc3DArray", 1536},
                                                       {"cudaMalloc3DArray", 1536}}));
  EXPECT_EQ(misuses(trace), (std::vector<std::string>{"cudaMemcpy3D", "cudaMemcpy2DToArray",
                                                      "cudaMemcpy3D", "cudaMalloc3DArray",
                                                      "cudaMalloc3DArray", "cudaMalloc3DArray"}));
  const auto kernels = trace.of("kernel");
  ASSERT_EQ(kernels.size(), 2u);
  EXPECT_EQ(kernels[0].at("stream"), 0);
  EXPECT_EQ(kernels[1].at("stream"), 1);
}

// The driver API's arrays are the runtime's: cuMemcpy2D in, cudaMemcpy2DFromArray out; the
// linear driver copies at byte offsets; cuMemcpy3D into and out of a layer; texture and surface
// objects; a runtime launch taking the driver's texture object.
TEST_F(ArrayTexturePrograms, DriverArraysShareTheRuntimeState) {
  skip_unless_built("driver_array_texture");
  const ProgramRun run =
      run_program("driver_array_texture", Mode::kPreload, {{"LD_LIBRARY_PATH", driver_dir()}});
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("driver_array_texture: round trips ok"), std::string::npos) << run.out;
  const Trace trace = only_trace();
  EXPECT_TRUE(trace.of("unsupported").empty());
  EXPECT_EQ(copies(trace), (std::vector<CopyRow>{{"cuMemcpy2D_v2", "HtoD", 2048},
                                                 {"cudaMemcpy2DFromArray", "DtoH", 256},
                                                 {"cuMemcpyAtoA_v2", "DtoD", 2048},
                                                 {"cuMemcpyAtoD_v2", "DtoD", 128},
                                                 {"cuMemcpyDtoA_v2", "DtoD", 128},
                                                 {"cuMemcpyAtoH_v2", "DtoH", 2048},
                                                 {"cuMemcpyHtoA_v2", "HtoD", 128},
                                                 {"cuMemcpyAtoH_v2", "DtoH", 128},
                                                 {"cuMemcpy3D_v2", "HtoD", 2048},
                                                 {"cuMemcpy3D_v2", "DtoH", 2048}}));
  EXPECT_EQ(allocations(trace), (std::vector<AllocRow>{{"cuArrayCreate_v2", 2048},
                                                       {"cuArrayCreate_v2", 2048},
                                                       {"cuMemAlloc_v2", 2048},
                                                       {"cudaMalloc", 128},
                                                       {"cuArray3DCreate_v2", 4096}}));
  EXPECT_EQ(misuses(trace),
            (std::vector<std::string>{"cuSurfObjectCreate", "cuArrayCreate_v2", "cuArrayDestroy"}));
  ASSERT_EQ(trace.of("kernel").size(), 1u);
}

}  // namespace
}  // namespace powertrain::testing_emu
