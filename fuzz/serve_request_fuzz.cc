// libFuzzer target for the plan server's request handling: raw bytes → Beast's HTTP parser (with
// the server's limits) → routing, JSON validation and the job state machine. Must never crash,
// and every answer must be a known status with a JSON body.
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string_view>

#include "serve/service.h"
#include "serve/store.h"

namespace http = boost::beast::http;

namespace {

powertrain::serve::Service& service() {
  // One service across inputs, so sequences of requests (register, then rank, ...) get explored.
  static auto* s = [] {
    auto store = powertrain::serve::Store::open(":memory:");
    if (!store) std::abort();
    powertrain::serve::ServiceOptions options;
    options.background = false;  // solve inside the request: bugs surface in this process
    auto created = powertrain::serve::Service::create(std::move(*store), options);
    if (!created) std::abort();
    return created->release();
  }();
  return *s;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size > 8192) return 0;  // keeps profile solves small
  http::request_parser<http::string_body> parser;
  parser.body_limit(8192);
  parser.eager(true);
  boost::beast::error_code ec;
  parser.put(boost::asio::buffer(data, size), ec);
  if (!ec && !parser.is_done()) parser.put_eof(ec);
  powertrain::serve::Request request;
  if (!ec && parser.is_done()) {
    auto& req = parser.get();
    request.method = std::string(req.method_string());
    request.target = std::string(req.target());
    request.body = req.body();
    auto ct = req.find(http::field::content_type);
    if (ct != req.end()) request.content_type = std::string(ct->value());
  } else {
    // Not HTTP: use the bytes as a body to the routes that parse one.
    static const char* kTargets[] = {"/register_job", "/info", "/schedule/x?rank=0"};
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    request.method = size % 2 == 0 ? "POST" : "GET";
    request.target = kTargets[size % 3];
    request.body = std::string(text);
  }
  const powertrain::serve::Response r = service().handle(request);
  if (r.status < 200 || r.status > 599) std::abort();
  if (nlohmann::json::parse(r.body, nullptr, false).is_discarded()) std::abort();
  return 0;
}
