#pragma once
// A real plan server (in-memory store) in the test's process on a loopback port, for client tests.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <thread>

#include "serve/server.h"
#include "serve/service.h"
#include "serve/store.h"

namespace powertrain::testing_support {

class InProcessServer {
 public:
  // A failure to start is a test failure; started() says whether the server runs.
  explicit InProcessServer(serve::ServiceOptions service_options = {}) {
    auto store = serve::Store::open(":memory:");
    if (!store) {
      ADD_FAILURE() << store.error().message;
      return;
    }
    auto service = serve::Service::create(std::move(*store), service_options);
    if (!service) {
      ADD_FAILURE() << service.error().message;
      return;
    }
    service_ = std::move(*service);
    serve::ServerOptions server_options;
    server_options.access_log = false;
    auto server = serve::Server::start(*service_, server_options);
    if (!server) {
      ADD_FAILURE() << server.error().message;
      return;
    }
    server_ = std::move(*server);
    thread_ = std::thread([this] { server_->run(); });
    url_ = "http://127.0.0.1:" + std::to_string(server_->port());
  }
  InProcessServer(const InProcessServer&) = delete;
  InProcessServer& operator=(const InProcessServer&) = delete;
  ~InProcessServer() { stop(); }

  bool started() const { return server_ != nullptr; }
  const std::string& url() const { return url_; }

  void stop() {
    if (!server_) return;
    server_->stop();
    thread_.join();
    server_.reset();
  }

 private:
  std::unique_ptr<serve::Service> service_;
  std::unique_ptr<serve::Server> server_;
  std::thread thread_;
  std::string url_;
};

}  // namespace powertrain::testing_support
