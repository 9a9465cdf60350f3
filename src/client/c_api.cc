// The C ABI of include/powertrain/client.h over client::Client. Never throws across the boundary.
#include <cstring>
#include <exception>
#include <memory>
#include <string>

#include "client/client.h"
#include "powertrain/client.h"

struct powertrain_client {
  std::unique_ptr<powertrain::client::Client> client;
};

namespace {

thread_local std::string t_last_error;

int fail(int code, const std::string& message) {
  t_last_error = message;
  return code;
}

const char* or_empty(const char* text) { return text != nullptr ? text : ""; }

template <typename F>
int guarded(powertrain_client* client, F&& body) {
  if (client == nullptr) return fail(POWERTRAIN_CLIENT_EINVAL, "client is NULL");
  try {
    return body(*client->client);
  } catch (const std::exception& e) {
    return fail(POWERTRAIN_CLIENT_EINVAL, e.what());
  }
}

int from_status(const powertrain::core::Status& status, int code) {
  return status ? POWERTRAIN_CLIENT_OK : fail(code, status.error().message);
}

}  // namespace

extern "C" {

void powertrain_client_options_init(powertrain_client_options* o) {
  if (o == nullptr) return;
  std::memset(o, 0, sizeof(*o));
  o->struct_size = sizeof(*o);
  o->dp_degree = o->pp_degree = o->tp_degree = o->world_size = 1;
  o->control_clocks = 1;
  o->request_timeout_s = 10.0;
  o->schedule_timeout_s = 3600.0;
}

powertrain_client* powertrain_client_create(const powertrain_client_options* o, char* error,
                                            size_t error_size) {
  auto report = [&](const std::string& message) -> powertrain_client* {
    t_last_error = message;
    if (error != nullptr && error_size > 0) {
      std::strncpy(error, message.c_str(), error_size - 1);
      error[error_size - 1] = '\0';
    }
    return nullptr;
  };
  if (o == nullptr || o->struct_size != sizeof(powertrain_client_options))
    return report("options are NULL or not initialized by powertrain_client_options_init");
  try {
    powertrain::client::ClientOptions options;
    options.server_url = or_empty(o->server_url);
    options.job_id = or_empty(o->job_id);
    options.rank = o->rank;
    options.dp_rank = o->dp_rank;
    options.pp_rank = o->pp_rank;
    options.tp_rank = o->tp_rank;
    options.dp_degree = o->dp_degree;
    options.pp_degree = o->pp_degree;
    options.tp_degree = o->tp_degree;
    options.world_size = o->world_size;
    options.device_id = o->device_id;
    options.job_metadata = or_empty(o->job_metadata);
    options.nvml_library = or_empty(o->nvml_library);
    options.control_clocks = o->control_clocks != 0;
    options.report_every_iterations = o->report_every_iterations;
    options.request_timeout_s = o->request_timeout_s;
    options.schedule_timeout_s = o->schedule_timeout_s;
    options.quiet = o->quiet != 0;
    options.refresh_schedule_every_iterations = o->refresh_schedule_every_iterations;
    options.profile_in_vivo = o->profile_in_vivo != 0;
    options.num_microbatches = o->num_microbatches;
    auto created = powertrain::client::Client::create(options);
    if (!created) return report(created.error().message);
    return new powertrain_client{std::move(*created)};
  } catch (const std::exception& e) {
    return report(e.what());
  }
}

void powertrain_client_destroy(powertrain_client* client) { delete client; }

int powertrain_client_wait_for_schedule(powertrain_client* client, double timeout_s) {
  return guarded(client, [&](powertrain::client::Client& c) {
    return c.wait_for_schedule(timeout_s)
               ? POWERTRAIN_CLIENT_OK
               : fail(POWERTRAIN_CLIENT_ETIMEOUT,
                      "no schedule yet: " + c.status().last_background_error);
  });
}

int powertrain_client_job_id(powertrain_client* client, double timeout_s, char* buffer,
                             size_t size) {
  return guarded(client, [&](powertrain::client::Client& c) {
    const std::string id = c.wait_for_job_id(timeout_s);
    if (id.empty())
      return fail(POWERTRAIN_CLIENT_ETIMEOUT,
                  "job not registered yet: " + c.status().last_background_error);
    if (buffer == nullptr || size <= id.size())
      return fail(POWERTRAIN_CLIENT_EINVAL, "buffer too small for the job id");
    std::memcpy(buffer, id.c_str(), id.size() + 1);
    return POWERTRAIN_CLIENT_OK;
  });
}

int powertrain_client_on_step_begin(powertrain_client* client) {
  return guarded(
      client, [&](auto& c) { return from_status(c.on_step_begin(), POWERTRAIN_CLIENT_ESCHEDULE); });
}
int powertrain_client_on_step_end(powertrain_client* client) {
  return guarded(
      client, [&](auto& c) { return from_status(c.on_step_end(), POWERTRAIN_CLIENT_ESCHEDULE); });
}
int powertrain_client_on_instruction_begin(powertrain_client* client, const char* name) {
  return guarded(client, [&](auto& c) {
    if (name == nullptr) return fail(POWERTRAIN_CLIENT_EINVAL, "instruction name is NULL");
    return from_status(c.on_instruction_begin(name), POWERTRAIN_CLIENT_ESCHEDULE);
  });
}
int powertrain_client_on_instruction_end(powertrain_client* client, const char* name) {
  return guarded(client, [&](auto& c) {
    if (name == nullptr) return fail(POWERTRAIN_CLIENT_EINVAL, "instruction name is NULL");
    return from_status(c.on_instruction_end(name), POWERTRAIN_CLIENT_ESCHEDULE);
  });
}

int powertrain_client_start_profiling(powertrain_client* client, double p_blocking_w,
                                      int microbatches, int iterations_per_clock,
                                      int stop_after_rises, const char* schedule) {
  return guarded(client, [&](auto& c) {
    if (microbatches < 0 || iterations_per_clock < 0 || stop_after_rises < 0)
      return fail(POWERTRAIN_CLIENT_EINVAL,
                  "start_profiling: microbatches, iterations_per_clock and stop_after_rises "
                  "must be >= 0");
    powertrain::client::ProfilingRequest r;
    r.p_blocking_w = p_blocking_w;
    r.microbatches = microbatches;
    r.iterations_per_clock = iterations_per_clock;
    r.stop_after_rises = stop_after_rises;
    r.schedule = or_empty(schedule);
    return from_status(c.start_profiling(r), POWERTRAIN_CLIENT_EINVAL);
  });
}
int powertrain_client_p_blocking_requested(powertrain_client* client) {
  return client != nullptr && client->client->p_blocking_requested() ? 1 : 0;
}
int powertrain_client_on_p_blocking_begin(powertrain_client* client) {
  return guarded(client, [&](auto& c) {
    return from_status(c.on_p_blocking_begin(), POWERTRAIN_CLIENT_EINVAL);
  });
}
int powertrain_client_on_p_blocking_end(powertrain_client* client) {
  return guarded(client, [&](auto& c) {
    return from_status(c.on_p_blocking_end(), POWERTRAIN_CLIENT_EINVAL);
  });
}
const char* powertrain_client_profiling_phase(powertrain_client* client) {
  if (client == nullptr) return "off";
  const std::string phase = client->client->status().profiling_phase;
  for (const char* name : {"waiting", "p_blocking", "sweep", "characterizing", "planned"})
    if (phase == name) return name;
  return "off";
}

int powertrain_client_report_iteration(powertrain_client* client, double time_s, double energy_j) {
  return guarded(client, [&](auto& c) {
    return from_status(c.report_iteration(time_s, energy_j), POWERTRAIN_CLIENT_EINVAL);
  });
}
int powertrain_client_report_straggler(powertrain_client* client, int rank, int pipeline,
                                       double slowdown, double delay_s) {
  return guarded(client, [&](auto& c) {
    return from_status(c.report_straggler({rank, pipeline, slowdown, delay_s}),
                       POWERTRAIN_CLIENT_EINVAL);
  });
}
int powertrain_client_clear_stragglers(powertrain_client* client) {
  return guarded(
      client, [&](auto& c) { return from_status(c.clear_stragglers(), POWERTRAIN_CLIENT_EINVAL); });
}
int powertrain_client_refresh_schedule(powertrain_client* client) {
  return guarded(
      client, [&](auto& c) { return from_status(c.refresh_schedule(), POWERTRAIN_CLIENT_EINVAL); });
}

int powertrain_client_fetch_frontier(powertrain_client* client, double timeout_s, char* buffer,
                                     size_t size, size_t* length) {
  return guarded(client, [&](powertrain::client::Client& c) {
    auto body = c.fetch_frontier(timeout_s);
    if (!body) return fail(POWERTRAIN_CLIENT_ENETWORK, body.error().message);
    if (length != nullptr) *length = body->size();
    if (buffer == nullptr || size <= body->size())
      return fail(POWERTRAIN_CLIENT_EINVAL, "buffer too small for the frontier (see *length)");
    std::memcpy(buffer, body->c_str(), body->size() + 1);
    return POWERTRAIN_CLIENT_OK;
  });
}

int powertrain_client_flush(powertrain_client* client, double timeout_s) {
  return guarded(client, [&](auto& c) {
    return c.flush(timeout_s) ? POWERTRAIN_CLIENT_OK
                              : fail(POWERTRAIN_CLIENT_ETIMEOUT, "flush: work still queued");
  });
}

long long powertrain_client_iterations(powertrain_client* client, double* last_time_s,
                                       double* last_energy_j) {
  if (client == nullptr) return -1;
  const auto iterations = client->client->iterations();
  if (!iterations.empty()) {
    if (last_time_s != nullptr) *last_time_s = iterations.back().time_s;
    if (last_energy_j != nullptr) *last_energy_j = iterations.back().energy_j;
  }
  return static_cast<long long>(iterations.size());
}

const char* powertrain_client_last_error(powertrain_client*) { return t_last_error.c_str(); }

}  // extern "C"
