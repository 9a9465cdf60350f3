"""powertrain.PipelineFrequencyOptimizer: Zeus's callbacks, clocks on a native thread, results."""
import ctypes
import json
import re
import threading
import time

import pytest

import powertrain
from conftest import SCHEDULE


def fake_log(path):
    lib = ctypes.CDLL(path)  # the same handle the client dlopened
    lib.powertrain_fake_nvml_log.restype = ctypes.c_size_t
    size = lib.powertrain_fake_nvml_log(None, 0)
    buffer = ctypes.create_string_buffer(size + 1)
    lib.powertrain_fake_nvml_log(buffer, size + 1)
    return buffer.value.decode()


def run_iteration(opt, seconds=0.01):
    opt.on_step_begin()
    for name, _ in SCHEDULE:
        opt.on_instruction_begin(name)
        time.sleep(seconds)
        opt.on_instruction_end(name)
    opt.on_step_end()


def test_zeus_drop_in_sets_planned_clocks_on_another_thread(plan_server, fake_nvml):
    opt = powertrain.PipelineFrequencyOptimizer(
        rank=0, dp_rank=0, pp_rank=0, tp_rank=0, device_id=0, dp_degree=1, pp_degree=2,
        tp_degree=1, world_size=2, server_url=plan_server.url, job_metadata="py",
        nvml_library=fake_nvml, report_every_iterations=2, wait_for_schedule_s=10.0)
    assert opt.job_id == "2024-01-01-00-00-00+dp1+pp2+tp1+py"
    for _ in range(2):
        run_iteration(opt)
    client = opt.client
    assert client.flush(10.0)
    assert client.applied_clocks_mhz == [mhz for _, mhz in SCHEDULE] * 2
    assert client.clock_thread_id not in (0, threading.get_native_id())
    set_lines = re.findall(r"nvmlDeviceSetGpuLockedClocks (\d+) \d+ thread=(\d+)", fake_log(fake_nvml))
    assert {int(tid) for _, tid in set_lines[-8:]} == {client.clock_thread_id}
    status = client.status
    assert status["energy_source"] == "energy counter"
    assert status["results_posted"] == 1, status["last_background_error"]
    job = json.loads(plan_server.to("/register_job")[0][2])
    assert job["job_metadata"] == "py" and job["world_size"] == 2
    result = json.loads(plan_server.to("/result/")[0][2])
    assert len(result["iter_time"]) == len(result["iter_energy"]) == 2
    for t, e in zip(result["iter_time"], result["iter_energy"]):
        # Fake NVML power at the locked clocks: 227.8 W (1005 MHz) to 400 W (1410 MHz).
        assert 0.04 < t < 1.0
        assert 227.8 * (t - 0.02) < e < 400.0 * (t + 0.02)


def test_schedule_errors_raise_like_zeus(plan_server, fake_nvml):
    opt = powertrain.PipelineFrequencyOptimizer(
        0, 0, 0, 0, 0, 1, 1, 1, 1, plan_server.url, nvml_library=fake_nvml,
        wait_for_schedule_s=10.0)
    opt.on_step_begin()
    with pytest.raises(RuntimeError, match="instruction 0 of the iteration is 'forward'"):
        opt.on_instruction_begin("backward")


def test_other_ranks_need_the_job_id():
    with pytest.raises(RuntimeError, match="job_id="):
        powertrain.PipelineFrequencyOptimizer(1, 0, 1, 0, 0, 1, 2, 1, 2, "http://127.0.0.1:1")


def test_missing_nvml_one_message_and_straggler_frontier(plan_server):
    client = powertrain.Client(server_url=plan_server.url, nvml_library="/nonexistent/libnvml.so",
                               available_frequencies_mhz=[1005, 1410], quiet=True)
    assert client.status["nvml_message"] == (
        "NVML not found (/nonexistent/libnvml.so): clock control disabled")
    assert client.wait_for_schedule(10.0)
    client.report_straggler(rank=0, delay_s=0.1)
    assert client.fetch_frontier(10.0) == {"points": [{"time": 1.0, "energy": 2.0}]}
    assert client.flush(10.0)
    assert json.loads(plan_server.to("/straggler/")[0][2]) == {"rank": 0, "delay_s": 0.1}
    rank = json.loads(plan_server.to("/register_rank/")[0][2])
    assert rank["available_frequencies"] == [1410, 1005]


def test_offline_schedule_without_server(fake_nvml):
    client = powertrain.Client(nvml_library=fake_nvml)
    plan = powertrain.frontier()["plan_t_min"][0]
    client.set_schedule(plan)
    client.on_step_begin()
    for name, _ in plan:
        client.on_instruction_begin(name)
        client.on_instruction_end(name)
    client.on_step_end()
    assert client.flush(10.0)
    expected = [plan[0][1]] + [b for a, b in zip([m for _, m in plan], [m for _, m in plan[1:]])
                               if a != b]
    assert client.applied_clocks_mhz == expected
    assert len(client.iterations) == 1 and client.iterations[0][1] >= 0.0
