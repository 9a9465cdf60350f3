// The plan service without the network, for the service and profiling tests.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "serve/service.h"

namespace powertrain::serve::test {

/// A service on `db` (":memory:" by default) with background work off, so tests are
/// deterministic.
inline std::unique_ptr<Service> make_service(const std::string& db = ":memory:") {
  auto store = Store::open(db);
  EXPECT_TRUE(store) << store.error().message;
  ServiceOptions options;
  options.background = false;
  auto service = Service::create(std::move(*store), options);
  EXPECT_TRUE(service) << service.error().message;
  return std::move(*service);
}

/// One request with a JSON body (none when null).
inline Response call(Service& s, const std::string& method, const std::string& target,
                     const nlohmann::json& body = nullptr) {
  return s.handle({method, target, body.is_null() ? "" : body.dump(), "application/json"});
}

}  // namespace powertrain::serve::test
