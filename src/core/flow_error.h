// The error of a flow that also checks what it was asked for (a library entry behind a CLI
// command, e.g. study::plan_frontier): the CLI exits 2 for usage errors and 1 for the others.
#pragma once

#include <string>

namespace powertrain::core {

/// `usage` when the request is wrong (the command line), else the data or the environment.
struct FlowError {
  std::string message;
  bool usage = false;
};

}  // namespace powertrain::core
