#include "device/kernel_efficiency.h"

#include <algorithm>
#include <cmath>

namespace powertrain::device {

namespace {

double fill(double tiles, int sms) {
  const double waves = std::ceil(tiles / sms);
  return waves > 0.0 ? tiles / (waves * sms) : 1.0;
}

}  // namespace

WaveFill wave_fill(WorkKind kind, const KernelShape& shape, int sms, const KernelSizeParams& params,
                   int grid_sms) {
  WaveFill out;
  const bool tiled = kind == WorkKind::kMatmul || kind == WorkKind::kAttention;
  if (!tiled || !shape.known() || sms < 1 || params.tile <= 0.0) return out;
  const double cols =
      kind == WorkKind::kAttention ? std::ceil(shape.cols) : std::ceil(shape.cols / params.tile);
  out.tiles = std::ceil(shape.rows / params.tile) * cols;
  out.efficiency = fill(out.tiles, sms);
  if (kind != WorkKind::kMatmul || params.min_split_depth <= 0.0) return out;
  const double by_depth = std::floor(shape.depth / params.min_split_depth);
  const int max_split =
      static_cast<int>(std::clamp(by_depth, 1.0, std::max(1.0, double(params.max_split_k))));
  const int planned = grid_sms > 0 ? grid_sms : sms;
  double best = fill(out.tiles, planned);
  for (int s = 2; s <= max_split; ++s) {
    const double e = fill(out.tiles * s, planned);
    if (e > best + 1e-12) {
      best = e;
      out.split_k = s;
    }
  }
  out.efficiency = fill(out.tiles * out.split_k, sms);
  if (out.split_k > 1) out.extra_bytes = 8.0 * out.split_k * shape.rows * shape.cols;
  return out;
}

Work token_fraction(const Work& work, KernelShape& shape, double fraction) {
  Work w = work;
  const double invariant = std::clamp(shape.token_invariant_bytes, 0.0, work.memory_bytes);
  w.flops *= fraction;
  w.link_bytes *= fraction;
  w.memory_bytes = invariant + (work.memory_bytes - invariant) * fraction;
  shape.token_invariant_bytes = invariant;
  if (shape.tokens_in_depth) {
    shape.depth *= fraction;
  } else {
    shape.rows *= fraction;
  }
  return w;
}

}  // namespace powertrain::device
