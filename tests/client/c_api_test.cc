// libpowertrain_client.so loaded as a training process would (dlopen), driven through its C ABI.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>

#include "powertrain/client.h"
#include "stub_server.h"

namespace {

using powertrain::testing_client::StubRequest;
using powertrain::testing_client::StubResponse;
using powertrain::testing_client::StubServer;

struct Api {
  void* dl = nullptr;
  decltype(&powertrain_client_options_init) options_init;
  decltype(&powertrain_client_create) create;
  decltype(&powertrain_client_destroy) destroy;
  decltype(&powertrain_client_wait_for_schedule) wait_for_schedule;
  decltype(&powertrain_client_job_id) job_id;
  decltype(&powertrain_client_on_step_begin) step_begin;
  decltype(&powertrain_client_on_step_end) step_end;
  decltype(&powertrain_client_on_instruction_begin) instruction_begin;
  decltype(&powertrain_client_on_instruction_end) instruction_end;
  decltype(&powertrain_client_flush) flush;
  decltype(&powertrain_client_iterations) iterations;
  decltype(&powertrain_client_last_error) last_error;
};

template <typename F>
void bind(void* dl, F& fn, const char* name) {
  fn = reinterpret_cast<F>(::dlsym(dl, name));
  ASSERT_NE(fn, nullptr) << name;
}

TEST(ClientCApi, SharedLibraryRunsAnIterationWithTheFakeNvml) {
  Api api;
  api.dl = ::dlopen(POWERTRAIN_CLIENT_LIBRARY_PATH, RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(api.dl, nullptr) << ::dlerror();
  bind(api.dl, api.options_init, "powertrain_client_options_init");
  bind(api.dl, api.create, "powertrain_client_create");
  bind(api.dl, api.destroy, "powertrain_client_destroy");
  bind(api.dl, api.wait_for_schedule, "powertrain_client_wait_for_schedule");
  bind(api.dl, api.job_id, "powertrain_client_job_id");
  bind(api.dl, api.step_begin, "powertrain_client_on_step_begin");
  bind(api.dl, api.step_end, "powertrain_client_on_step_end");
  bind(api.dl, api.instruction_begin, "powertrain_client_on_instruction_begin");
  bind(api.dl, api.instruction_end, "powertrain_client_on_instruction_end");
  bind(api.dl, api.flush, "powertrain_client_flush");
  bind(api.dl, api.iterations, "powertrain_client_iterations");
  bind(api.dl, api.last_error, "powertrain_client_last_error");
  // Only the C ABI is exported: the embedded C++ library stays private.
  EXPECT_EQ(
      ::dlsym(
          api.dl,
          "_ZN10powertrain4nvml4Nvml4loadERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"),
      nullptr);

  StubServer server([](const StubRequest& r) -> StubResponse {
    if (r.target == "/register_job") return {200, "\"job-c\""};
    if (r.target.rfind("/schedule/job-c?rank=0", 0) == 0)
      return {200, R"({"rank":0,"frequencies":[["forward",900],["backward",1410]]})"};
    return {200, "null"};
  });
  powertrain_client_options options;
  api.options_init(&options);
  const std::string url = server.url();
  options.server_url = url.c_str();
  options.nvml_library = POWERTRAIN_FAKE_NVML_PATH;
  char error[256] = "";
  options.world_size = 3;  // 1 x 1 x 1 != 3
  EXPECT_EQ(api.create(&options, error, sizeof(error)), nullptr);
  EXPECT_STREQ(error, "client options: pp 1 x dp 1 x tp 1 != world_size 3");
  options.world_size = 1;
  powertrain_client* client = api.create(&options, error, sizeof(error));
  ASSERT_NE(client, nullptr) << error;
  ASSERT_EQ(api.wait_for_schedule(client, 10.0), POWERTRAIN_CLIENT_OK) << api.last_error(client);
  char id[64];
  ASSERT_EQ(api.job_id(client, 1.0, id, sizeof(id)), POWERTRAIN_CLIENT_OK);
  EXPECT_STREQ(id, "job-c");
  EXPECT_EQ(api.step_begin(client), POWERTRAIN_CLIENT_OK);
  EXPECT_EQ(api.instruction_begin(client, "forward"), POWERTRAIN_CLIENT_OK);
  EXPECT_EQ(api.instruction_end(client, "forward"), POWERTRAIN_CLIENT_OK);
  EXPECT_EQ(api.instruction_begin(client, "forward"), POWERTRAIN_CLIENT_ESCHEDULE);
  EXPECT_STREQ(api.last_error(client),
               "schedule: instruction 1 of the iteration is 'backward' (1410 MHz), but 'forward' "
               "began");
  EXPECT_EQ(api.instruction_begin(client, "backward"), POWERTRAIN_CLIENT_OK);
  EXPECT_EQ(api.instruction_end(client, "backward"), POWERTRAIN_CLIENT_OK);
  EXPECT_EQ(api.step_end(client), POWERTRAIN_CLIENT_OK);
  EXPECT_EQ(api.flush(client, 10.0), POWERTRAIN_CLIENT_OK);
  double time_s = 0.0, energy_j = 0.0;
  EXPECT_EQ(api.iterations(client, &time_s, &energy_j), 1);
  EXPECT_GT(time_s, 0.0);
  EXPECT_GE(energy_j, 0.0);
  api.destroy(client);
  api.destroy(nullptr);
  ::dlclose(api.dl);
}

}  // namespace
