// The error of a flow that also checks what it was asked for (a library entry behind a CLI
// command, e.g. study::plan_frontier): the CLI exits 2 for usage errors and 1 for the others.
#pragma once

#include <string>

#include "core/result.h"

namespace powertrain::core {

/// `usage` when the request is wrong (the command line), else the data or the environment.
struct FlowError {
  std::string message;
  bool usage = false;
};

/// What a flow's entry returns: its value or a FlowError (a core::Result whose error also keeps
/// whether the request is at fault); error() returns a reference to the stored FlowError.
template <typename T>
using FlowResult = Result<T, FlowError>;

}  // namespace powertrain::core
