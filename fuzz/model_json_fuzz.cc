// libFuzzer target for custom model JSON: parsing, validation and, for small accepted models, the
// per-op work and partitioning built from it must never crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "workload/job.h"
#include "workload/model_zoo.h"
#include "workload/partition.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace powertrain::workload;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  auto model = parse_model_json(text, "fuzz.json");
  if (!model) return 0;
  // Keep the work small enough for the fuzzer's time budget.
  if (model->num_layers > 64 || model->hidden_size > 8192 || model->vocab_size > 300000) return 0;
  ParallelConfig config = make_parallel_config(*model);
  config.seq_len = std::min(config.seq_len, 512);
  config.pp = 2;
  if (!validate_job(*model, config)) return 0;
  const auto units = layer_units(*model, config);
  auto partition = uniform_partition(static_cast<int>(units.size()), config.pp);
  if (!partition) return 0;
  (void)build_stage_work(*model, config, units, *partition, 1);
  (void)min_imbalance_partition(unit_forward_flops(units), config.pp);
  return 0;
}
