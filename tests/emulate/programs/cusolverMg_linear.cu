// cuSOLVERMg as NVIDIA's CUDALibrarySamples call it (MgGetrf, MgPotrf, MgSyevd): a handle with
// every visible device selected, a 1 x G device grid, matrix descriptors, the matrices laid out
// 1-D block-cyclic by column tiles over the devices (tile t on device t mod G), workspaces sized
// by the _bufferSize calls, then LU (getrf + getrs), Cholesky (potrf + potrs + potri) and the
// symmetric eigensolver (syevd) on the 611 x 611 1-D Laplacian. Then two deliberate errors: a
// device the run lacks and (IA, JA) = (2, 1), which cuSOLVERMg does not support. Written for the
// emulator's tests; valid CUDA: the same binary runs on real GPUs.
// nvcc-flags: -Xcompiler -Wno-deprecated-declarations
#include <cusolverMg.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "emu_check.h"
#include "library_check.h"

namespace {

constexpr int kN = 611;
constexpr int kTileA = 256;  // columns per tile of A
constexpr int kTileB = 100;  // columns per tile of B

// Local arrays of a rows x cols matrix in tiles of `tile` columns over `devices`.
template <typename T>
std::vector<T*> create_matrix(const std::vector<int>& devices, int rows, int cols, int tile) {
  const int count = static_cast<int>(devices.size());
  std::vector<T*> arrays(devices.size(), nullptr);
  const int tiles = (cols + tile - 1) / tile;
  for (int g = 0; g < count; ++g) {
    const int local_tiles = tiles / count + (g < tiles % count ? 1 : 0);
    EMU_CHECK(cudaSetDevice(devices[g]));
    EMU_CHECK(cudaMalloc(&arrays[g], sizeof(T) * rows * tile * std::max(local_tiles, 1)));
  }
  return arrays;
}

// Copies the host matrix (column-major, leading dimension rows) into its tiles.
template <typename T>
void scatter(const std::vector<int>& devices, const std::vector<T>& host, int rows, int cols,
             int tile, const std::vector<T*>& arrays) {
  const int count = static_cast<int>(devices.size());
  for (int t = 0; t * tile < cols; ++t) {
    const int width = std::min(tile, cols - t * tile);
    EMU_CHECK(cudaMemcpy(arrays[t % count] + static_cast<size_t>(t / count) * tile * rows,
                         host.data() + static_cast<size_t>(t) * tile * rows,
                         sizeof(T) * rows * width, cudaMemcpyHostToDevice));
  }
}

void free_all(const std::vector<int>& devices, std::vector<void*> arrays) {
  for (size_t g = 0; g < arrays.size(); ++g) {
    EMU_CHECK(cudaSetDevice(devices[g]));
    EMU_CHECK(cudaFree(arrays[g]));
  }
}

template <typename T>
std::vector<void*> as_void(const std::vector<T*>& arrays) {
  return std::vector<void*>(arrays.begin(), arrays.end());
}

}  // namespace

int main() {
  int count = 0;
  EMU_CHECK(cudaGetDeviceCount(&count));
  std::vector<int> devices(count);
  for (int g = 0; g < count; ++g) devices[g] = g;
  cusolverMgHandle_t handle = nullptr;
  LIBRARY_CHECK(cusolverMgCreate(&handle));
  LIBRARY_CHECK(cusolverMgDeviceSelect(handle, count, devices.data()));
  for (int g = 0; g < count; ++g) {
    for (int h = 0; h < count; ++h) {
      if (g == h) continue;
      EMU_CHECK(cudaSetDevice(g));
      EMU_CHECK(cudaDeviceEnablePeerAccess(h, 0));
    }
  }
  EMU_CHECK(cudaSetDevice(0));

  // The 1-D Laplacian (symmetric positive definite) and b = ones.
  std::vector<double> a(static_cast<size_t>(kN) * kN, 0.0), b(kN, 1.0);
  for (int j = 0; j < kN; ++j) {
    a[static_cast<size_t>(j) * kN + j] = 2.0;
    if (j > 0) a[static_cast<size_t>(j) * kN + j - 1] = -1.0;
    if (j + 1 < kN) a[static_cast<size_t>(j) * kN + j + 1] = -1.0;
  }

  cudaLibMgGrid_t grid_a = nullptr, grid_b = nullptr;
  LIBRARY_CHECK(cusolverMgCreateDeviceGrid(&grid_a, 1, count, devices.data(),
                                           CUDALIBMG_GRID_MAPPING_COL_MAJOR));
  LIBRARY_CHECK(cusolverMgCreateDeviceGrid(&grid_b, 1, count, devices.data(),
                                           CUDALIBMG_GRID_MAPPING_COL_MAJOR));
  cudaLibMgMatrixDesc_t desc_a = nullptr, desc_b = nullptr;
  LIBRARY_CHECK(cusolverMgCreateMatrixDesc(&desc_a, kN, kN, kN, kTileA, CUDA_R_64F, grid_a));
  LIBRARY_CHECK(cusolverMgCreateMatrixDesc(&desc_b, kN, 1, kN, kTileB, CUDA_R_64F, grid_b));

  auto d_a = create_matrix<double>(devices, kN, kN, kTileA);
  auto d_b = create_matrix<double>(devices, kN, 1, kTileB);
  auto d_ipiv = create_matrix<int>(devices, 1, kN, kTileA);
  auto v_a = as_void(d_a), v_b = as_void(d_b);

  // LU: getrf + getrs.
  scatter(devices, a, kN, kN, kTileA, d_a);
  scatter(devices, b, kN, 1, kTileB, d_b);
  int64_t lwork_getrf = 0, lwork_getrs = 0;
  LIBRARY_CHECK(cusolverMgGetrf_bufferSize(handle, kN, kN, v_a.data(), 1, 1, desc_a, d_ipiv.data(),
                                           CUDA_R_64F, &lwork_getrf));
  LIBRARY_CHECK(cusolverMgGetrs_bufferSize(handle, CUBLAS_OP_N, kN, 1, v_a.data(), 1, 1, desc_a,
                                           d_ipiv.data(), v_b.data(), 1, 1, desc_b, CUDA_R_64F,
                                           &lwork_getrs));
  const int64_t lwork = std::max(lwork_getrf, lwork_getrs);
  std::vector<double*> work(count, nullptr);
  for (int g = 0; g < count; ++g) {
    EMU_CHECK(cudaSetDevice(g));
    EMU_CHECK(cudaMalloc(&work[g], sizeof(double) * lwork));
  }
  auto v_work = as_void(work);
  int info = -1;
  LIBRARY_CHECK(cusolverMgGetrf(handle, kN, kN, v_a.data(), 1, 1, desc_a, d_ipiv.data(), CUDA_R_64F,
                                v_work.data(), lwork, &info));
  EMU_REQUIRE(info == 0);
  LIBRARY_CHECK(cusolverMgGetrs(handle, CUBLAS_OP_N, kN, 1, v_a.data(), 1, 1, desc_a, d_ipiv.data(),
                                v_b.data(), 1, 1, desc_b, CUDA_R_64F, v_work.data(), lwork, &info));
  EMU_REQUIRE(info == 0);
  // Pivots of the first tile (on device 0): the identity here.
  std::vector<int> pivots(kTileA);
  EMU_CHECK(cudaMemcpy(pivots.data(), d_ipiv[0], sizeof(int) * kTileA, cudaMemcpyDeviceToHost));
  std::printf("cusolverMg_linear: %d device(s), lwork getrf %lld getrs %lld, ipiv[0..2] %d %d %d\n",
              count, static_cast<long long>(lwork_getrf), static_cast<long long>(lwork_getrs),
              pivots[0], pivots[1], pivots[2]);

  // Cholesky: potrf + potrs + potri (each with its own workspace query).
  scatter(devices, a, kN, kN, kTileA, d_a);
  int64_t lwork_potrf = 0, lwork_potrs = 0, lwork_potri = 0;
  LIBRARY_CHECK(cusolverMgPotrf_bufferSize(handle, CUBLAS_FILL_MODE_LOWER, kN, v_a.data(), 1, 1,
                                           desc_a, CUDA_R_64F, &lwork_potrf));
  LIBRARY_CHECK(cusolverMgPotrs_bufferSize(handle, CUBLAS_FILL_MODE_LOWER, kN, 1, v_a.data(), 1, 1,
                                           desc_a, v_b.data(), 1, 1, desc_b, CUDA_R_64F,
                                           &lwork_potrs));
  LIBRARY_CHECK(cusolverMgPotri_bufferSize(handle, CUBLAS_FILL_MODE_LOWER, kN, v_a.data(), 1, 1,
                                           desc_a, CUDA_R_64F, &lwork_potri));
  const int64_t lwork_chol = std::max(lwork_potrf, std::max(lwork_potrs, lwork_potri));
  EMU_REQUIRE(lwork_chol <= lwork * 2);
  std::vector<double*> work_chol(count, nullptr);
  for (int g = 0; g < count; ++g) {
    EMU_CHECK(cudaSetDevice(g));
    EMU_CHECK(cudaMalloc(&work_chol[g], sizeof(double) * lwork_chol));
  }
  auto v_work_chol = as_void(work_chol);
  LIBRARY_CHECK(cusolverMgPotrf(handle, CUBLAS_FILL_MODE_LOWER, kN, v_a.data(), 1, 1, desc_a,
                                CUDA_R_64F, v_work_chol.data(), lwork_chol, &info));
  LIBRARY_CHECK(cusolverMgPotrs(handle, CUBLAS_FILL_MODE_LOWER, kN, 1, v_a.data(), 1, 1, desc_a,
                                v_b.data(), 1, 1, desc_b, CUDA_R_64F, v_work_chol.data(),
                                lwork_chol, &info));
  LIBRARY_CHECK(cusolverMgPotri(handle, CUBLAS_FILL_MODE_LOWER, kN, v_a.data(), 1, 1, desc_a,
                                CUDA_R_64F, v_work_chol.data(), lwork_chol, &info));
  EMU_REQUIRE(info == 0);

  // Eigenvalues and vectors: syevd (W on the host).
  scatter(devices, a, kN, kN, kTileA, d_a);
  std::vector<double> w(kN, 0.0);
  int64_t lwork_syevd = 0;
  LIBRARY_CHECK(cusolverMgSyevd_bufferSize(handle, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER,
                                           kN, v_a.data(), 1, 1, desc_a, w.data(), CUDA_R_64F,
                                           CUDA_R_64F, &lwork_syevd));
  std::vector<double*> work_syevd(count, nullptr);
  for (int g = 0; g < count; ++g) {
    EMU_CHECK(cudaSetDevice(g));
    EMU_CHECK(cudaMalloc(&work_syevd[g], sizeof(double) * lwork_syevd));
  }
  auto v_work_syevd = as_void(work_syevd);
  LIBRARY_CHECK(cusolverMgSyevd(handle, CUSOLVER_EIG_MODE_VECTOR, CUBLAS_FILL_MODE_LOWER, kN,
                                v_a.data(), 1, 1, desc_a, w.data(), CUDA_R_64F, CUDA_R_64F,
                                v_work_syevd.data(), lwork_syevd, &info));
  EMU_REQUIRE(info == 0);
  std::printf("cusolverMg_linear: lwork potrf %lld potrs %lld potri %lld syevd %lld\n",
              static_cast<long long>(lwork_potrf), static_cast<long long>(lwork_potrs),
              static_cast<long long>(lwork_potri), static_cast<long long>(lwork_syevd));

  // Deliberate errors: a device the run lacks; (IA, JA) = (2, 1).
  int missing = count;
  const cusolverStatus_t bad_device = cusolverMgDeviceSelect(handle, 1, &missing);
  const cusolverStatus_t bad_offset =
      cusolverMgGetrf(handle, kN - 1, kN - 1, v_a.data(), 2, 1, desc_a, d_ipiv.data(), CUDA_R_64F,
                      v_work.data(), lwork, &info);
  std::printf("cusolverMg_linear: device %d -> %d, IA 2 -> %d\n", missing,
              static_cast<int>(bad_device), static_cast<int>(bad_offset));

  free_all(devices, v_work);
  free_all(devices, v_work_chol);
  free_all(devices, v_work_syevd);
  free_all(devices, v_a);
  free_all(devices, v_b);
  free_all(devices, as_void(d_ipiv));
  LIBRARY_CHECK(cusolverMgDestroyMatrixDesc(desc_a));
  LIBRARY_CHECK(cusolverMgDestroyMatrixDesc(desc_b));
  LIBRARY_CHECK(cusolverMgDestroyGrid(grid_a));
  LIBRARY_CHECK(cusolverMgDestroyGrid(grid_b));
  LIBRARY_CHECK(cusolverMgDestroy(handle));
  std::printf("cusolverMg_linear: done\n");
  return 0;
}
