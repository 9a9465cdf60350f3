"""In-vivo profiling through the Python bindings against the real `powertrain serve` (a
subprocess) and the fake NVML: examples/in_vivo_profiling.py, smaller (3 clocks, 1 microbatch,
1 iteration per clock). The optimizer's Zeus callbacks drive the whole loop."""
import importlib.util
import os

import pytest

from conftest import CLI, SOURCE_DIR

CLOCKS = (1410, 810, 210)


def fake_power_w(mhz):
    return 50.0 + 350.0 * (mhz / 1410.0) ** 2


def load_example():
    path = os.path.join(SOURCE_DIR, "examples", "in_vivo_profiling.py")
    spec = importlib.util.spec_from_file_location("in_vivo_profiling", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_python_client_drives_the_sweep_and_follows_the_plan(fake_nvml):
    if not os.path.exists(CLI):
        pytest.skip("powertrain CLI not built: " + CLI)
    example = load_example()
    result = example.run(CLI, fake_nvml, clocks=CLOCKS, microbatches=1, iterations_per_clock=1)
    profiling, frontier = result["profiling"], result["frontier"]
    assert profiling["phase"] == "done"
    # P_blocking: rank 0's probe window on the blocked fake GPU (75 W).
    assert profiling["p_blocking_w"] == pytest.approx(75.0, rel=0.15)
    ratios, power_errors = [], []
    for stage in profiling["stages"]:
        for name, series in stage["instructions"].items():
            kernel_s = example.FORWARD_S if name == "forward" else example.BACKWARD_S
            points = series["points"]
            assert [p["frequency_mhz"] for p in points] == list(CLOCKS), (stage["stage"], name)
            for i, p in enumerate(points):
                # Time scales as 1/f; the step's first kernel may start before the clock thread
                # locked the new clock (then it runs at the previous, higher, swept clock), and
                # sleeping overshoots by up to several ms on a loaded machine.
                expected_s = kernel_s * 1410.0 / p["frequency_mhz"]
                previous_s = kernel_s * 1410.0 / CLOCKS[max(0, i - 1)]
                assert p["time_s"] >= 0.97 * previous_s, p
                ratios.append(p["time_s"] / expected_s)
                # Energy / time: the fake's P(f); the window opens and closes when the clock
                # thread reaches the markers, late by a fraction of a ms (more under load: in CI
                # on 2026-11-27 one 3.1 ms window at 1410 MHz read 0.60 off). A point is only
                # checked for gross errors; the mean below is the accuracy bound.
                power_error = abs(p["energy_j"] / p["time_s"] / fake_power_w(p["frequency_mhz"]) - 1)
                assert power_error < 0.8, p
                power_errors.append(power_error)
            assert points[-1]["time_s"] > points[0]["time_s"]
    assert sum(ratios) / len(ratios) < 2.0, ratios
    assert sum(power_errors) / len(power_errors) < 0.1, power_errors
    assert frontier["status"] == "ready"
    assert len(frontier["points"]) >= 2 and frontier["t_min_s"] < frontier["t_star_s"]
    for rank, run in enumerate(result["ranks"]):
        status = run["status"]
        assert status["profiling_phase"] == "planned"
        assert status["network_errors"] == 0, status["last_background_error"]
        assert status["profiling_results_posted"] >= len(CLOCKS) + (1 if rank == 0 else 0)
        # The plan it followed is the one the server serves, and the sweep ran highest first.
        assert "profiling" not in run["served"]
        assert [tuple(p) for p in run["plan"]] == [tuple(p) for p in run["served"]["frequencies"]]
        assert run["applied_clocks_mhz"][:len(CLOCKS)] == list(CLOCKS)
        assert run["clock_thread_id"] != 0
