// `powertrain cluster` (being written).
#include "cli/commands.h"

namespace powertrain::cli {

Action add_cluster_command(CLI::App& app) {
  (void)app;
  return []() { return fail("cluster", "not available yet"); };
}

}  // namespace powertrain::cli
