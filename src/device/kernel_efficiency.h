// Kernel-size terms the roofline of estimate_work leaves out: a GEMM (or fused attention) runs as
// a grid of output tiles in waves over the SMs, so a partial last wave leaves SMs idle, and every
// kernel launch costs a fixed gap. They matter when kernels shrink (Kareus's nanobatches); the
// Kareus model uses them on its sequential and overlapped paths alike. Constants and sources:
// docs/kareus.md ("Kernel-size efficiency").
#pragma once

#include "device/work.h"

namespace powertrain::device {

struct KernelSizeParams {
  /// Output tile edge of a tensor-core GEMM: CUTLASS's default Ampere BF16 threadblock tile is
  /// 128 × 128 (× 32 deep), and flash attention (v2) runs one block per 128 query rows and head.
  double tile = 128.0;
  /// Split-K (cuBLAS/CUTLASS "parallel reduction"): the reduction may be cut into up to
  /// max_split_k slices of at least min_split_depth each to fill the last wave; each slice writes
  /// an fp32 partial output that a reduction reads back.
  int max_split_k = 16;
  double min_split_depth = 256.0;
  /// Gap per kernel launch on a stream, s: a few µs per back-to-back launch without CUDA graphs
  /// (NVIDIA technical blog "Getting Started with CUDA Graphs", 2019); we take 3 µs.
  double launch_overhead_s = 3e-6;
};

/// Shape of a tiled kernel (0 = unknown). GEMM: C[rows × cols] over a reduction of `depth`.
/// Attention: rows = query tokens, cols = heads, depth = keys.
struct KernelShape {
  double rows = 0.0, cols = 0.0, depth = 0.0;
  bool tokens_in_depth = false;  // weight gradients: the tokens are the reduction, not the rows
  /// HBM bytes of the kernel that do not scale with tokens (weights read, fp32 gradient
  /// accumulated): every nanobatch moves them again.
  double token_invariant_bytes = 0.0;
  bool known() const { return rows > 0.0 && cols > 0.0; }
};

/// How a kernel's tiles fill `sms` SMs. kMatmul: tiles = ceil(rows/tile) · ceil(cols/tile), with
/// the split-K (1..max_split_k, slices ≥ min_split_depth deep) that fills the waves best (the
/// smallest among equals); kAttention: ceil(rows/tile) · cols tiles, no split-K. Unknown shapes
/// and other kinds: efficiency 1.
struct WaveFill {
  double tiles = 0.0;       // output tiles (before split-K)
  int split_k = 1;          // reduction slices
  double efficiency = 1.0;  // tiles·split / (ceil(tiles·split / sms) · sms): busy SM fraction
  double extra_bytes =
      0.0;  // split-K partials, fp32, written and read back: 8 · split · rows · cols
};
/// `grid_sms`: the SMs the library sizes the grid for (cuBLAS picks split-K for the whole GPU even
/// when a concurrent kernel holds some SMs); 0 = `sms`. The blocks then run in waves on `sms`.
WaveFill wave_fill(WorkKind kind, const KernelShape& shape, int sms,
                   const KernelSizeParams& params = {}, int grid_sms = 0);

/// A `fraction` of the tokens of a kernel (a nanobatch: 0.5). FLOPs, link bytes and the
/// token-dependent HBM bytes scale; shape.token_invariant_bytes do not; the shape's token
/// dimension (rows, or depth for a weight gradient) scales. Returns the work; scales `shape`.
Work token_fraction(const Work& work, KernelShape& shape, double fraction);

}  // namespace powertrain::device
