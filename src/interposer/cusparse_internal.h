// What cuSOLVER's sparse API (cusolver_sp_emu.cc) shares with the cuSPARSE emulation
// (cusparse_emu.cc): the legacy matrix descriptor and the `sparse` record with its sized kernel.
#pragma once

#include <cuda_runtime_api.h>
#include <library_types.h>

#include <cstdint>
#include <string>

namespace powertrain::emu::detail {

/// A legacy cusparseMatDescr_t's settings (cuSPARSE's enum values).
struct LegacyMatDescr {
  int type = 0;  // CUSPARSE_MATRIX_TYPE_GENERAL
  int base = 0;  // CUSPARSE_INDEX_BASE_ZERO
  int fill = 0;  // CUSPARSE_FILL_MODE_LOWER
  int diag = 0;  // CUSPARSE_DIAG_TYPE_NON_UNIT
};
/// The settings of a live descriptor; false for an invalid or destroyed one.
bool legacy_mat_descr(const void* descr, LegacyMatDescr* out);

/// One sparse operation: a `sparse` record (api, format, shape, nnz, dtypes, FLOPs, bytes) and
/// the kernel `<library>_<what>_<format>_<dtype>` that carries the same FLOPs and bytes.
struct SparseOp {
  const char* api = "";
  const char* library = "cusparse";
  const char* what = "";       // spmv, spsv_solve, csrilu02, csrlsvqr, ...
  const char* format = "csr";  // csr, csc, coo, bsr, blocked_ell, vector, dense
  const char* op_a = nullptr;  // N/T/C, or nullptr when the operation has none
  std::int64_t rows = 0, cols = 0, nnz = 0;
  std::int64_t n = 0;  // dense columns (SpMM, SpSM, SDDMM's k): 0 when none
  cudaDataType dtype = CUDA_R_32F, compute = CUDA_R_32F;
  std::int64_t flops = 0, bytes = 0;
};
/// Records `op` on `stream` (entry time `start_ns`); false (reported) for an invalid stream.
bool record_sparse_op(cudaStream_t stream, const SparseOp& op, std::int64_t start_ns);

/// Bytes of one element of `type` (0 for a type cuSPARSE does not take).
int sparse_value_bytes(cudaDataType type);

}  // namespace powertrain::emu::detail
