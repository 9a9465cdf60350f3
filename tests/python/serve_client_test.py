#!/usr/bin/env python3
"""Compatibility test of `powertrain serve`, written from the documented routes only
(docs/serve.md and the Zeus PFO protocol): a 3D-parallel job (dp 2 x pp 4 x tp 2), 16 ranks,
per-rank schedules equal to `powertrain frontier`'s plans, results, 422s naming the field, and a
1.2x straggler switching every rank to the T_opt = min(T*, T') point and back.

Usage: serve_client_test.py --url http://127.0.0.1:PORT --powertrain PATH --workdir DIR
Standard library only (urllib); loopback only; every loop is bounded.
"""
import argparse
import csv
import json
import os
import subprocess
import sys
import time
import urllib.error
import urllib.request

DP, PP, TP = 2, 4, 2
MICROBATCHES = 8
P_BLOCKING_W = 120.0


def call(url, method, path, body=None, content_type="application/json"):
    data = None
    headers = {}
    if body is not None:
        data = body.encode() if isinstance(body, str) else json.dumps(body).encode()
        headers["Content-Type"] = content_type
    request = urllib.request.Request(url + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read() or b"null")
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def expect(condition, message):
    if not condition:
        print("FAIL:", message)
        sys.exit(1)


def expect_field(status, body, field):
    expect(status == 422, f"expected 422 for bad '{field}', got {status}: {body}")
    fields = [entry["loc"][-1] for entry in body["detail"]]
    expect(field in fields, f"422 body does not name '{field}': {body}")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True)
    parser.add_argument("--powertrain", required=True)
    parser.add_argument("--workdir", required=True)
    args = parser.parse_args()
    url = args.url.rstrip("/")
    assert url.startswith("http://127.0.0.1:"), "loopback only"

    # The offline reference: `powertrain frontier` on the same profile, every plan emitted.
    profile_path = os.path.join(args.workdir, "profile.csv")
    subprocess.run([args.powertrain, "example-profile", "--out", profile_path], check=True,
                   stdout=subprocess.DEVNULL)
    out_dir = os.path.join(args.workdir, "frontier")
    subprocess.run([args.powertrain, "frontier", "--profile", profile_path, "--pp", str(PP),
                    "--microbatches", str(MICROBATCHES), "--p-blocking-w", str(P_BLOCKING_W),
                    "--emit-plans", "all", "--quiet", "--out", out_dir], check=True,
                   stdout=subprocess.DEVNULL)
    with open(os.path.join(out_dir, "frontier.csv")) as f:
        times = [float(row["time"]) for row in csv.DictReader(f)]

    def reference_plan(point):
        with open(os.path.join(out_dir, f"plan_{point:05d}.json")) as f:
            plan = json.load(f)
        return [[[entry["instruction"], entry["frequency_mhz"]] for entry in gpu]
                for gpu in plan["gpus"]]

    status, info = call(url, "GET", "/info")
    expect(status == 200 and "scheduler" in info, f"/info: {status} {info}")

    # Malformed bodies: 422 naming the field.
    job = {"job_id": "", "pp_degree": PP, "dp_degree": DP, "tp_degree": TP, "world_size": 15}
    expect_field(*call(url, "POST", "/register_job", job), "world_size")
    expect_field(*call(url, "POST", "/register_job", dict(job, world_size=16, dp_degree="2")),
                 "dp_degree")

    status, job_id = call(url, "POST", "/register_job",
                          dict(job, world_size=16, job_metadata="compat"))
    expect(status == 200 and isinstance(job_id, str), f"register_job: {status} {job_id}")
    parts = job_id.split("+")
    expect(parts[1:4] == ["dp2", "pp4", "tp2"] and parts[-1] == "compat"
           and len(parts[0]) == 19, f"job id format: {job_id}")

    frequencies = list(range(1410, 749, -30))  # highest first, as the Zeus client sends them
    ranks = []
    for dp in range(DP):
        for pp in range(PP):
            for tp in range(TP):
                rank = dp * PP * TP + pp * TP + tp
                ranks.append((rank, pp))
                body = {"rank": rank, "dp_rank": dp, "pp_rank": pp, "tp_rank": tp,
                        "available_frequencies": frequencies}
                status, reply = call(url, "POST", f"/register_rank/{job_id}", body)
                expect(status == 200 and reply is None, f"register_rank {rank}: {status}")
    bad = {"rank": 0, "dp_rank": 0, "tp_rank": 0, "available_frequencies": frequencies}
    expect_field(*call(url, "POST", f"/register_rank/{job_id}", bad), "pp_rank")
    status, _ = call(url, "GET", "/schedule/no-such-job?rank=0")
    expect(status == 404, f"unknown job: {status}")

    # The profile, as CSV text; characterization runs in the background.
    with open(profile_path) as f:
        profile_csv = f.read()
    status, reply = call(url, "POST",
                         f"/profile/{job_id}?microbatches={MICROBATCHES}"
                         f"&p_blocking_w={P_BLOCKING_W}", profile_csv, "text/csv")
    expect(status == 202, f"profile: {status} {reply}")
    frontier = None
    for _ in range(600):  # bounded: 60 s
        status, frontier = call(url, "GET", f"/frontier/{job_id}")
        if frontier["status"] in ("ready", "failed"):
            break
        time.sleep(0.1)
    expect(frontier["status"] == "ready", f"frontier not ready: {frontier.get('status')}")
    expect(len(frontier["points"]) == len(times), "point count differs from powertrain frontier")
    for served, reference in zip(frontier["points"], times):
        expect(abs(served["planned_time_s"] - reference) < 1e-9, "frontier times differ")

    def check_schedules(point, what):
        plan = reference_plan(point)
        for rank, pp in ranks:
            status, schedule = call(url, "GET", f"/schedule/{job_id}?rank={rank}")
            expect(status == 200, f"schedule {rank}: {status}")
            expect(schedule["rank"] == rank, "schedule names another rank")
            expect(schedule["frequencies"] == plan[pp],
                   f"{what}: rank {rank} schedule differs from plan_{point:05d}.json")

    t_min_point = len(times) - 1
    check_schedules(t_min_point, "T_min")

    for rank, _ in ranks:
        result = {"rank": rank, "iter_time": [1.2, 1.19], "iter_energy": [830.0, 829.0]}
        status, reply = call(url, "POST", f"/result/{job_id}", result)
        expect(status == 200 and reply is None, f"result {rank}: {status} {reply}")
    expect_field(*call(url, "POST", f"/result/{job_id}",
                       {"rank": 0, "iter_time": "slow", "iter_energy": []}), "iter_time")

    # A 1.2x straggler in pipeline 1: T' = 1.2 T_min, T_opt = min(T*, T').
    status, reply = call(url, "POST", f"/straggler/{job_id}", {"pipeline": 1, "slowdown": 1.2})
    expect(status == 200, f"straggler: {status} {reply}")
    target = min(times[0], 1.2 * times[-1])
    expected = next(i for i, t in enumerate(times) if t <= target * (1 + 1e-12))
    expect(expected != t_min_point, "a 1.2x straggler should move the plan off T_min")
    check_schedules(expected, "straggler")
    status, frontier = call(url, "GET", f"/frontier/{job_id}")
    prediction = frontier.get("prediction", {})
    expect(prediction.get("point") == expected, f"prediction point: {prediction}")
    expect(prediction.get("saving_vs_t_min_plan_j", 0) > 0, f"no predicted saving: {prediction}")

    status, _ = call(url, "DELETE", f"/straggler/{job_id}")
    expect(status == 200, f"clear straggler: {status}")
    check_schedules(t_min_point, "after clearing")
    print(f"ok: 16 ranks served powertrain frontier's plans (T_min point {t_min_point}, "
          f"straggler point {expected}); predicted saving "
          f"{prediction['saving_vs_t_min_plan_j']:.1f} J per pipeline-iteration (modelled)")


if __name__ == "__main__":
    main()
