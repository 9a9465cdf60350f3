// Beast with C++20 coroutines: one io_context per client, run on the requesting thread.
#include "client/http.h"

#include <fmt/core.h>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <exception>
#include <mutex>

namespace powertrain::client {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;

core::Result<Url> parse_url(const std::string& text) {
  const std::string scheme = "http://";
  auto bad = [&](const std::string& why) {
    return core::Error{
        fmt::format("server URL '{}': expected http://host[:port][/prefix] ({})", text, why)};
  };
  if (text.rfind(scheme, 0) != 0) return bad("only http:// is supported");
  std::string rest = text.substr(scheme.size());
  Url url;
  const std::size_t slash = rest.find('/');
  std::string authority = rest.substr(0, slash);
  if (slash != std::string::npos) {
    url.prefix = rest.substr(slash);
    while (!url.prefix.empty() && url.prefix.back() == '/') url.prefix.pop_back();
  }
  const std::size_t colon = authority.rfind(':');
  if (colon != std::string::npos) {
    url.port = authority.substr(colon + 1);
    authority = authority.substr(0, colon);
    if (url.port.empty() || url.port.size() > 5 ||
        url.port.find_first_not_of("0123456789") != std::string::npos ||
        std::stoi(url.port) > 65535)
      return bad("bad port");
  }
  if (authority.empty()) return bad("no host");
  url.host = authority;
  return url;
}

struct HttpClient::Impl {
  asio::io_context ioc;
  std::atomic<bool> cancelled{false};
};

HttpClient::HttpClient(Url url) : url_(std::move(url)), impl_(std::make_unique<Impl>()) {}
HttpClient::~HttpClient() = default;

void HttpClient::cancel() {
  impl_->cancelled = true;
  impl_->ioc.stop();
}

namespace {

asio::awaitable<void> exchange(const Url& url, http::verb verb, std::string target,
                               const std::string& body, std::chrono::milliseconds timeout,
                               HttpResponse& out) {
  auto executor = co_await asio::this_coro::executor;
  asio::ip::tcp::resolver resolver(executor);
  beast::tcp_stream stream(executor);
  const auto endpoints = co_await resolver.async_resolve(url.host, url.port, asio::use_awaitable);
  stream.expires_after(timeout);
  co_await stream.async_connect(endpoints, asio::use_awaitable);
  http::request<http::string_body> request{verb, target, 11};
  request.set(http::field::host, url.host);
  request.set(http::field::user_agent, "powertrain-client");
  request.set(http::field::accept, "application/json");
  if (!body.empty()) {
    request.set(http::field::content_type, "application/json");
    request.body() = body;
  }
  request.prepare_payload();
  stream.expires_after(timeout);
  co_await http::async_write(stream, request, asio::use_awaitable);
  beast::flat_buffer buffer;
  http::response_parser<http::string_body> parser;
  parser.body_limit(64u << 20);  // a frontier of many points stays well below this
  stream.expires_after(timeout);
  co_await http::async_read(stream, buffer, parser, asio::use_awaitable);
  out.status = static_cast<int>(parser.get().result_int());
  out.body = std::move(parser.get().body());
  beast::error_code ignored;
  stream.socket().shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
}

}  // namespace

core::Result<HttpResponse> HttpClient::request(const std::string& method, const std::string& target,
                                               const std::string& body, double timeout_s) {
  const std::string what =
      fmt::format("{} http://{}:{}{}{}", method, url_.host, url_.port, url_.prefix, target);
  if (impl_->cancelled) return core::Error{what + ": cancelled"};
  const http::verb verb = http::string_to_verb(method);
  if (verb == http::verb::unknown) return core::Error{what + ": unknown HTTP method"};
  HttpResponse response;
  std::exception_ptr failure;
  bool done = false;
  const auto timeout =
      std::chrono::milliseconds(static_cast<long long>(std::max(0.001, timeout_s) * 1000.0));
  impl_->ioc.restart();
  // Checked after restart(): a cancel() from now on stops run() below.
  if (impl_->cancelled) return core::Error{what + ": cancelled"};
  asio::co_spawn(impl_->ioc, exchange(url_, verb, url_.prefix + target, body, timeout, response),
                 [&](std::exception_ptr e) {
                   failure = e;
                   done = true;
                 });
  impl_->ioc.run();
  if (!done) {
    // Stopped by cancel(): the suspended exchange is destroyed with the io_context.
    return core::Error{what + ": cancelled"};
  }
  if (failure) {
    try {
      std::rethrow_exception(failure);
    } catch (const boost::system::system_error& e) {
      const bool timed_out = e.code() == beast::error::timeout;
      return core::Error{fmt::format(
          "{}: {}", what,
          timed_out ? fmt::format("no answer in {} s", timeout_s) : e.code().message())};
    } catch (const std::exception& e) {
      return core::Error{fmt::format("{}: {}", what, e.what())};
    }
  }
  return response;
}

}  // namespace powertrain::client
