// The error of a flow that also checks what it was asked for (a library entry behind a CLI
// command, e.g. study::plan_frontier): the CLI exits 2 for usage errors and 1 for the others.
#pragma once

#include <cassert>
#include <string>
#include <utility>

#include "core/result.h"

namespace powertrain::core {

/// `usage` when the request is wrong (the command line), else the data or the environment.
struct FlowError {
  std::string message;
  bool usage = false;
};

/// What a flow's entry returns: its value or a FlowError (a core::Result that also keeps whether
/// the request is at fault). error() returns a reference to the stored FlowError.
template <typename T>
class [[nodiscard]] FlowResult : public Result<T> {
 public:
  FlowResult(T value) : Result<T>(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  FlowResult(FlowError error)                           // NOLINT(google-explicit-constructor)
      : Result<T>(Error{error.message}), error_(std::move(error)) {}

  /// Precondition: !ok().
  const FlowError& error() const {
    assert(!this->ok());
    return error_;
  }

 private:
  FlowError error_;  // the message again, so that Result<T>::error() stays valid too
};

}  // namespace powertrain::core
