// Error values and a [[nodiscard]] result type for functions that read outside data.
#pragma once

#include <cassert>
#include <string>
#include <utility>
#include <variant>

namespace powertrain::core {

/// A one-line, user-facing description of what is wrong, e.g.
/// "profile.csv:12: field 'time': expected a positive number, got 'abc'".
struct Error {
  std::string message;
};

/// Either a value or an Error. Functions that can fail on outside data return this; bugs are
/// asserts.
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : storage_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : storage_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return std::holds_alternative<T>(storage_); }
  explicit operator bool() const { return ok(); }

  /// Precondition: ok().
  T& value() & {
    assert(ok());
    return std::get<T>(storage_);
  }
  const T& value() const& {
    assert(ok());
    return std::get<T>(storage_);
  }
  T&& value() && {
    assert(ok());
    return std::get<T>(std::move(storage_));
  }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

  /// Precondition: !ok().
  const Error& error() const {
    assert(!ok());
    return std::get<Error>(storage_);
  }

 private:
  std::variant<T, Error> storage_;
};

/// Result for operations with no value.
struct Ok {};
using Status = Result<Ok>;

}  // namespace powertrain::core
