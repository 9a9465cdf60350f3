// `powertrain example-profile`: writes the built-in example profile.
#include <fmt/core.h>

#include "cli/commands.h"
#include "cli/flags.h"
#include "core/atomic_output.h"
#include "profile/example_profile.h"

namespace powertrain::cli {

Action add_example_profile_command(CLI::App& app) {
  auto out = std::make_shared<std::string>();
  auto force = std::make_shared<bool>(false);
  app.add_option("--out", *out, "Output CSV path (default: standard output)");
  add_force_flag(app, *force);
  return [out, force]() {
    const std::string csv = profile::example_profile_csv();
    if (out->empty()) {
      fmt::print("{}", csv);
      return 0;
    }
    if (auto written = core::write_file_atomically(*out, csv, output_policy(*force)); !written) {
      return fail("example-profile", written.error().message);
    }
    fmt::print(stderr, "wrote {}\n", *out);
    return 0;
  };
}

}  // namespace powertrain::cli
