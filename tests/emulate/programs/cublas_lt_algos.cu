// cuBLASLt with algorithms chosen by the caller, as NVIDIA's CUDALibrarySamples LtSgemmCustomFind,
// LtDgemmPresetAlgo and LtMatrixTransform do: the algorithm ids of a type combination, each
// initialized, its capabilities read (tile ids by the size-0 query), configured (tile, split-K
// with a reduction in the compute type) and checked for its workspace; the GEMM run with the
// chosen algorithm; a matrix transform (C = op(A), transposed); an emulation descriptor; the
// heuristics cache capacity.
// Invalid uses are refused with their status. Valid CUDA: the same binary runs on a real GPU.
#include <cublasLt.h>

#include <cstdio>
#include <vector>

#include "emu_check.h"

#define LT_CHECK(call)                                                          \
  do {                                                                          \
    const cublasStatus_t lt_check_status = (call);                              \
    if (lt_check_status != CUBLAS_STATUS_SUCCESS) {                             \
      std::fprintf(stderr, "%s:%d: %s failed: %d\n", __FILE__, __LINE__, #call, \
                   static_cast<int>(lt_check_status));                          \
      std::exit(1);                                                             \
    }                                                                           \
  } while (0)

int main() {
  const int m = 256, n = 64, k = 128;
  cublasLtHandle_t lt;
  LT_CHECK(cublasLtCreate(&lt));
  float *a, *b, *c, *t;
  EMU_CHECK(cudaMalloc(&a, m * k * sizeof(float)));
  EMU_CHECK(cudaMalloc(&b, k * n * sizeof(float)));
  EMU_CHECK(cudaMalloc(&c, m * n * sizeof(float)));
  EMU_CHECK(cudaMalloc(&t, m * n * sizeof(float)));
  cudaStream_t stream;
  EMU_CHECK(cudaStreamCreate(&stream));

  cublasLtMatmulDesc_t desc;
  LT_CHECK(cublasLtMatmulDescCreate(&desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  cublasLtMatrixLayout_t la, lb, lc;
  LT_CHECK(cublasLtMatrixLayoutCreate(&la, CUDA_R_32F, m, k, m));
  LT_CHECK(cublasLtMatrixLayoutCreate(&lb, CUDA_R_32F, k, n, k));
  LT_CHECK(cublasLtMatrixLayoutCreate(&lc, CUDA_R_32F, m, n, m));

  // The algorithms of this type combination.
  int ids[16];
  int id_count = 0;
  LT_CHECK(cublasLtMatmulAlgoGetIds(lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F,
                                    CUDA_R_32F, CUDA_R_32F, 16, ids, &id_count));
  EMU_REQUIRE(id_count > 0);
  cublasLtMatmulAlgo_t chosen = {};
  size_t chosen_workspace = 0;
  for (int i = 0; i < id_count; ++i) {
    cublasLtMatmulAlgo_t algo;
    LT_CHECK(cublasLtMatmulAlgoInit(lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F,
                                    CUDA_R_32F, CUDA_R_32F, ids[i], &algo));
    int id_back = -1;
    size_t written = 0;
    LT_CHECK(cublasLtMatmulAlgoConfigGetAttribute(&algo, CUBLASLT_ALGO_CONFIG_ID, &id_back,
                                                  sizeof id_back, &written));
    EMU_REQUIRE(id_back == ids[i] && written == sizeof id_back);
    // Tile ids: the size-0 query first, then the array.
    size_t tile_bytes = 0;
    LT_CHECK(cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_TILE_IDS, nullptr, 0,
                                               &tile_bytes));
    EMU_REQUIRE(tile_bytes > 0 && tile_bytes % sizeof(int) == 0);
    std::vector<int> tiles(tile_bytes / sizeof(int));
    LT_CHECK(cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_TILE_IDS, tiles.data(),
                                               tile_bytes, &written));
    int split_k_support = 0;
    LT_CHECK(cublasLtMatmulAlgoCapGetAttribute(&algo, CUBLASLT_ALGO_CAP_SPLITK_SUPPORT,
                                               &split_k_support, sizeof split_k_support, &written));
    EMU_REQUIRE(split_k_support == 1);
    const cublasLtMatmulTile_t tile = static_cast<cublasLtMatmulTile_t>(tiles.back());
    const int splits = 4;
    const uint32_t reduction = CUBLASLT_REDUCTION_SCHEME_COMPUTE_TYPE;
    LT_CHECK(cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile,
                                                  sizeof tile));
    LT_CHECK(cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM, &splits,
                                                  sizeof splits));
    LT_CHECK(cublasLtMatmulAlgoConfigSetAttribute(&algo, CUBLASLT_ALGO_CONFIG_REDUCTION_SCHEME,
                                                  &reduction, sizeof reduction));
    cublasLtMatmulHeuristicResult_t result;
    LT_CHECK(cublasLtMatmulAlgoCheck(lt, desc, la, lb, lc, lc, &algo, &result));
    EMU_REQUIRE(result.state == CUBLAS_STATUS_SUCCESS);
    if (i == 0) {
      chosen = algo;
      chosen_workspace = result.workspaceSize;
    }
  }
  // Refused: an id out of range, the read-only id, an algorithm never initialized.
  cublasLtMatmulAlgo_t bad = {};
  EMU_REQUIRE(cublasLtMatmulAlgoInit(lt, CUBLAS_COMPUTE_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F,
                                     CUDA_R_32F, CUDA_R_32F, 1000,
                                     &bad) == CUBLAS_STATUS_INVALID_VALUE);
  const int new_id = 3;
  EMU_REQUIRE(cublasLtMatmulAlgoConfigSetAttribute(&chosen, CUBLASLT_ALGO_CONFIG_ID, &new_id,
                                                   sizeof new_id) == CUBLAS_STATUS_INVALID_VALUE);
  cublasLtMatmulHeuristicResult_t unused;
  EMU_REQUIRE(cublasLtMatmulAlgoCheck(lt, desc, la, lb, lc, lc, &bad, &unused) ==
              CUBLAS_STATUS_INVALID_VALUE);

  // The GEMM with the chosen algorithm and its workspace.
  void* workspace = nullptr;
  if (chosen_workspace > 0) EMU_CHECK(cudaMalloc(&workspace, chosen_workspace));
  const float one = 1.0f, zero = 0.0f;
  LT_CHECK(cublasLtMatmul(lt, desc, &one, a, la, b, lb, &zero, c, lc, c, lc, &chosen, workspace,
                          chosen_workspace, stream));

  // C (m x n) = transpose of a column-major n x m matrix.
  cublasLtMatrixTransformDesc_t transform;
  LT_CHECK(cublasLtMatrixTransformDescCreate(&transform, CUDA_R_32F));
  const cublasOperation_t transpose = CUBLAS_OP_T;
  LT_CHECK(cublasLtMatrixTransformDescSetAttribute(transform, CUBLASLT_MATRIX_TRANSFORM_DESC_TRANSA,
                                                   &transpose, sizeof transpose));
  cublasOperation_t read_back = CUBLAS_OP_N;
  size_t written = 0;
  LT_CHECK(cublasLtMatrixTransformDescGetAttribute(transform, CUBLASLT_MATRIX_TRANSFORM_DESC_TRANSA,
                                                   &read_back, sizeof read_back, &written));
  EMU_REQUIRE(read_back == CUBLAS_OP_T);
  cublasLtMatrixLayout_t lt_src;
  LT_CHECK(cublasLtMatrixLayoutCreate(&lt_src, CUDA_R_32F, n, m, n));
  LT_CHECK(cublasLtMatrixTransform(lt, transform, &one, t, lt_src, &zero, nullptr, nullptr, c, lc,
                                   stream));
  // op(A) of the wrong shape is refused.
  EMU_REQUIRE(cublasLtMatrixTransform(lt, transform, &one, t, lc, &zero, nullptr, nullptr, c, lc,
                                      stream) == CUBLAS_STATUS_INVALID_VALUE);

  // A floating-point emulation descriptor (CUDA 13) round-trips.
  cublasLtEmulationDesc_t emulation;
  LT_CHECK(cublasLtEmulationDescCreate(&emulation));
  const int32_t strategy = 1;
  LT_CHECK(cublasLtEmulationDescSetAttribute(emulation, CUBLASLT_EMULATION_DESC_STRATEGY, &strategy,
                                             sizeof strategy));
  int32_t strategy_back = 0;
  LT_CHECK(cublasLtEmulationDescGetAttribute(emulation, CUBLASLT_EMULATION_DESC_STRATEGY,
                                             &strategy_back, sizeof strategy_back, &written));
  EMU_REQUIRE(strategy_back == strategy);
  LT_CHECK(cublasLtEmulationDescDestroy(emulation));

  size_t capacity = 0;
  LT_CHECK(cublasLtHeuristicsCacheSetCapacity(100));
  LT_CHECK(cublasLtHeuristicsCacheGetCapacity(&capacity));
  EMU_REQUIRE(capacity == 100);

  EMU_CHECK(cudaStreamSynchronize(stream));
  LT_CHECK(cublasLtMatrixTransformDescDestroy(transform));
  LT_CHECK(cublasLtMatrixLayoutDestroy(lt_src));
  LT_CHECK(cublasLtMatrixLayoutDestroy(la));
  LT_CHECK(cublasLtMatrixLayoutDestroy(lb));
  LT_CHECK(cublasLtMatrixLayoutDestroy(lc));
  LT_CHECK(cublasLtMatmulDescDestroy(desc));
  LT_CHECK(cublasLtDestroy(lt));
  std::printf("cublas_lt_algos: %d algorithms, workspace %zu bytes for split-K 4\n", id_count,
              chosen_workspace);
  return 0;
}
