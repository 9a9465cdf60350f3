"""powertrain.frontier and powertrain.replay against the CLI on the same inputs."""
import csv
import glob
import json
import os
import subprocess

import numpy as np
import pytest

import powertrain
from conftest import CLI, DATA_DIR


def cli(*args):
    if not os.path.exists(CLI):
        pytest.skip("CLI not built: " + CLI)
    return subprocess.run([CLI, *args], capture_output=True, text=True, check=True)


def test_builtin_frontier_matches_cli(tmp_path):
    run = powertrain.frontier()
    cli("frontier", "--out", str(tmp_path / "f"), "--quiet")
    with open(tmp_path / "f" / "frontier.csv") as f:
        rows = list(csv.DictReader(f))
    assert len(run["time_s"]) == len(rows) == run["summary"]["points"]
    for key, column in [("time_s", "time"), ("energy_j", "energy"),
                        ("realized_time_s", "realized_time"),
                        ("realized_energy_j", "realized_energy")]:
        assert isinstance(run[key], np.ndarray)
        np.testing.assert_allclose(run[key], [float(r[column]) for r in rows], rtol=1e-12)
    summary = json.loads((tmp_path / "f" / "summary.json").read_text())
    assert run["summary"]["basis"] == "built-in example"
    # Slowest first, one point per tau (planned energy includes blocking power x time, so it is
    # not monotone near T*).
    np.testing.assert_allclose(np.diff(run["time_s"]), -run["summary"]["unit_time_s"], rtol=1e-6)
    assert run["summary"]["t_min_s"] == pytest.approx(run["time_s"][-1])
    assert len(run["summary"]["stragglers"]) == 6
    assert json.dumps(summary)  # the CLI wrote a summary for the same run
    # The T_min plan: one (instruction, MHz) list per GPU, 8 forwards + 8 backwards each.
    assert len(run["plan_t_min"]) == 4
    assert all(len(gpu) == 16 for gpu in run["plan_t_min"])
    assert {name for name, _ in run["plan_t_min"][0]} == {"forward", "backward"}


def test_model_frontier_is_modelled():
    run = powertrain.frontier(model="gpt3-1.3b", gpu="a100-sxm", pp=2, microbatches=4)
    s = run["summary"]
    assert s["basis"] == "modelled"
    assert s["stages"] == 2
    assert "gpt3-1.3b" in s["job"]
    assert s["t_min_s"] < s["t_star_s"]
    assert s["planned_energy_at_t_star_j"] < s["planned_energy_at_t_min_j"]
    assert run["realized_time_s"][-1] <= s["baseline_all_max_clock_time_s"] + 1e-9


def test_profile_errors_are_value_errors(tmp_path):
    bad = tmp_path / "bad.csv"
    bad.write_text("stage,instruction,frequency,time,energy\n0,forward,1410,abc,1\n")
    with pytest.raises(ValueError, match="bad.csv:2"):
        powertrain.frontier(str(bad), p_blocking_w=80.0)
    with pytest.raises(ValueError, match="p_blocking_w"):
        powertrain.frontier(str(bad))
    with pytest.raises(ValueError, match="schedule: unknown 'zigzag'"):
        powertrain.frontier(schedule="zigzag")


def test_measured_profile_matches_cli(tmp_path):
    profiles = sorted(glob.glob(os.path.join(DATA_DIR, "perseus", "*.csv")))
    profiles = [p for p in profiles if "+" in os.path.basename(p)]
    if not profiles:
        pytest.skip("no Perseus profiles under " + DATA_DIR)
    profile = profiles[0]
    run = powertrain.frontier(profile, pp=8, microbatches=4, p_blocking_w=83.64, unit_time_s=0.01)
    cli("frontier", "--profile", profile, "--pp", "8", "--microbatches", "4", "--p-blocking-w",
        "83.64", "--unit-time-s", "0.01", "--out", str(tmp_path / "f"), "--quiet")
    with open(tmp_path / "f" / "frontier.csv") as f:
        rows = list(csv.DictReader(f))
    np.testing.assert_allclose(run["energy_j"], [float(r["energy"]) for r in rows], rtol=1e-12)


def test_replay_matches_cli(tmp_path):
    trace = os.path.join(DATA_DIR, "traces", "hta", "simple_add.json.gz")
    if not os.path.exists(trace):
        pytest.skip("trace data absent: " + trace)
    summary = powertrain.replay([trace])
    cli("replay", trace, "--out", str(tmp_path / "r"), "--quiet")
    doc = json.loads((tmp_path / "r" / "summary.json").read_text())
    assert summary["faithful"] is doc["faithful"]
    assert summary["measured_step_s"] == pytest.approx(doc["job"]["input_step_s"], rel=1e-12)
    assert summary["replayed_step_s"] == pytest.approx(doc["job"]["replay_step_s"], rel=1e-12)
    assert summary["energy_modelled"]["total_j"] == pytest.approx(
        doc["energy_modelled"]["total_j"], rel=1e-12)
    assert len(summary["ranks"]) == len(doc["ranks"]) == 1
    with pytest.raises(ValueError):
        powertrain.replay([str(tmp_path / "missing.json")])
