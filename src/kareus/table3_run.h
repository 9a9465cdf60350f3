// `kareus --table3` as one call: the 12 Table 3 workloads × 5 systems and, optionally, Llama 3.3
// 70B for Tables 7–8, with one search cache across them.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "core/result.h"
#include "kareus/paper_tables.h"
#include "kareus/systems.h"
#include "profile/model_profile.h"

namespace powertrain::kareus {

struct Table3Run {
  std::vector<Table3Outcome> outcomes;  // in table3_workloads() order; plans freed
  std::vector<SystemsResult> table7;    // per kTable7Microbatches entry; empty without Tables 7–8
  std::size_t searches_run = 0;         // partition-type searches (cache misses)
  std::size_t searches_reused = 0;      // reused from identical types (cache hits)
};

/// Runs every workload (OOM or not), calling `on_workload` after each with its job; an error it
/// returns stops the run. Workload errors are prefixed with the workload's label.
core::Result<Table3Run> run_table3(
    const SystemsOptions& options, bool with_table7,
    const std::function<core::Status(const Table3Outcome&, const profile::ModelJob&)>& on_workload);

}  // namespace powertrain::kareus
