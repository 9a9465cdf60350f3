// `powertrain partition` (being written).
#include "cli/commands.h"

namespace powertrain::cli {

Action add_partition_command(CLI::App& app) {
  (void)app;
  return []() { return fail("partition", "not available yet"); };
}

}  // namespace powertrain::cli
