// `powertrain calibrate` (being written).
#include "cli/commands.h"

namespace powertrain::cli {

Action add_calibrate_command(CLI::App& app) {
  (void)app;
  return []() { return fail("calibrate", "not available yet"); };
}

}  // namespace powertrain::cli
