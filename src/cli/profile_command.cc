// `powertrain profile` (being written).
#include "cli/commands.h"

namespace powertrain::cli {

Action add_profile_command(CLI::App& app) {
  (void)app;
  return []() { return fail("profile", "not available yet"); };
}

}  // namespace powertrain::cli
