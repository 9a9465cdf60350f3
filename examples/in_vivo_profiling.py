#!/usr/bin/env python3
"""In-vivo profiling driven by the training loop (Perseus §5; docs/client.md).

Starts `powertrain serve` on a free loopback port and runs a simulated 2-stage 1F1B job in two
threads, one rank per stage, each with its own fake-NVML GPU (build/libnvidia-ml-fake.so: power
50 W + 350 W (f/1410)^2 at the locked clock, 75 W while blocked; every instruction is a
compute-bound kernel whose time scales as 1/f). The training loop only calls Zeus's callbacks
through powertrain.PipelineFrequencyOptimizer: rank 0 starts profiling and measures P_blocking
when asked, both ranks run the clocks the server sweeps and post per-instruction time and energy,
the server builds the profile and the frontier, and both ranks then follow the planned schedule.

    PYTHONPATH=build/python /usr/bin/python3 examples/in_vivo_profiling.py \\
        --powertrain build/powertrain --fake-nvml build/libnvidia-ml-fake.so

On a GPU machine the same loop runs with real NVML (drop the fake, give a p_blocking_probe that
blocks the GPU on a P2P receive, and replace run_kernel by the real forward/backward passes).
"""
import argparse
import ctypes
import json
import os
import subprocess
import tempfile
import threading
import time
import urllib.request

import powertrain

FORWARD_S, BACKWARD_S = 0.003, 0.006  # kernel seconds at 1410 MHz


def start_server(cli, db):
    """`powertrain serve` on 127.0.0.1:0; returns (process, url) once it prints its address."""
    proc = subprocess.Popen([cli, "serve", "--listen", "127.0.0.1:0", "--db", db,
                             "--no-access-log"], stdout=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    marker = "listening on "
    if marker not in line:
        proc.kill()
        raise RuntimeError("powertrain serve did not start: " + line)
    return proc, line.split(marker)[1].split()[0]


def get(url, path):
    with urllib.request.urlopen(url + path, timeout=30) as response:
        return json.loads(response.read())


def run(cli, fake_nvml, clocks=(1410, 1210, 1010, 810, 610, 410, 210), microbatches=2,
        iterations_per_clock=2, timeout_s=120.0):
    """Runs the loop; returns what the server measured and planned and what each rank ran."""
    old_count = os.environ.get("POWERTRAIN_FAKE_NVML_DEVICE_COUNT")
    os.environ["POWERTRAIN_FAKE_NVML_DEVICE_COUNT"] = "2"  # one fake GPU per rank
    fake = ctypes.CDLL(fake_nvml)  # the same library the clients dlopen: its test hooks
    fake.powertrain_fake_nvml_run_kernel.argtypes = [ctypes.c_uint, ctypes.c_double]
    fake.powertrain_fake_nvml_run_kernel.restype = ctypes.c_double
    fake.powertrain_fake_nvml_set_blocked.argtypes = [ctypes.c_uint, ctypes.c_int]
    workdir = tempfile.TemporaryDirectory(prefix="powertrain-in-vivo-")
    server, url = start_server(cli, os.path.join(workdir.name, "plans.db"))
    try:
        def p_blocking_probe():
            # Stand-in for a P2P receive whose peer sleeps: the fake GPU draws its blocked power.
            fake.powertrain_fake_nvml_set_blocked(0, 1)
            time.sleep(0.1)
            fake.powertrain_fake_nvml_set_blocked(0, 0)

        common = dict(dp_rank=0, tp_rank=0, dp_degree=1, pp_degree=2, tp_degree=1, world_size=2,
                      server_url=url, nvml_library=fake_nvml,
                      available_frequencies_mhz=list(clocks), job_poll_period_s=0.05)
        rank0 = powertrain.PipelineFrequencyOptimizer(
            rank=0, pp_rank=0, device_id=0, p_blocking_probe=p_blocking_probe,
            start_profiling=dict(microbatches=microbatches,
                                 iterations_per_clock=iterations_per_clock), **common)
        job_id = rank0.client.wait_for_job_id(30.0)  # torch.distributed broadcasts it in a job
        rank1 = powertrain.PipelineFrequencyOptimizer(
            rank=1, pp_rank=1, device_id=1, job_id=job_id, profile_in_vivo=True, **common)
        ranks = [rank0, rank1]
        for opt in ranks:
            if not opt.client.wait_for_schedule(60.0):
                raise RuntimeError(opt.client.status["last_background_error"])

        runs = [dict(steps=0, error=None) for _ in ranks]

        def step(opt, device, run_):
            opt.on_step_begin()
            for name, _ in opt.client.schedule:  # the schedule in effect for this step
                opt.on_instruction_begin(name)
                fake.powertrain_fake_nvml_run_kernel(device, FORWARD_S if name == "forward"
                                                     else BACKWARD_S)
                opt.on_instruction_end(name)
            opt.on_step_end()
            run_["steps"] += 1

        def train(opt, device, run_):
            try:
                deadline = time.monotonic() + timeout_s
                while opt.profiling_phase != "planned":
                    if time.monotonic() > deadline:
                        raise RuntimeError("profiling did not finish: " + opt.profiling_phase)
                    step(opt, device, run_)
                step(opt, device, run_)  # the plan takes effect at this step's begin
                run_["plan"] = opt.client.schedule
                step(opt, device, run_)
                opt.client.flush(30.0)
            except Exception as error:  # reported by the caller
                run_["error"] = repr(error)

        threads = [threading.Thread(target=train, args=(opt, i, runs[i]))
                   for i, opt in enumerate(ranks)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for i, run_ in enumerate(runs):
            if run_["error"]:
                raise RuntimeError("rank %d: %s" % (i, run_["error"]))
            run_["status"] = ranks[i].client.status
            run_["applied_clocks_mhz"] = ranks[i].client.applied_clocks_mhz
            run_["clock_thread_id"] = ranks[i].client.clock_thread_id
            run_["served"] = get(url, "/schedule/%s?rank=%d" % (
                urllib.request.quote(job_id, safe=""), i))
        quoted = urllib.request.quote(job_id, safe="")
        return dict(job_id=job_id, profiling=get(url, "/profiling/" + quoted),
                    frontier=get(url, "/frontier/" + quoted), ranks=runs)
    finally:
        server.terminate()
        server.wait(timeout=30)
        workdir.cleanup()
        if old_count is None:
            os.environ.pop("POWERTRAIN_FAKE_NVML_DEVICE_COUNT", None)
        else:
            os.environ["POWERTRAIN_FAKE_NVML_DEVICE_COUNT"] = old_count


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--powertrain", default="build/powertrain")
    parser.add_argument("--fake-nvml", default="build/libnvidia-ml-fake.so")
    args = parser.parse_args()
    result = run(os.path.abspath(args.powertrain), os.path.abspath(args.fake_nvml))
    profiling, frontier = result["profiling"], result["frontier"]
    print("P_blocking %.1f W (measured on the blocked fake GPU; its model: 75 W)"
          % profiling["p_blocking_w"])
    for stage in profiling["stages"]:
        for name, series in stage["instructions"].items():
            points = ", ".join("%d MHz %.2f ms %.3f J" % (p["frequency_mhz"], 1e3 * p["time_s"],
                                                         p["energy_j"])
                               for p in series["points"][::3])
            print("stage %d %-8s measured (every 3rd clock): %s" % (stage["stage"], name, points))
    print("frontier %s: %d points, T_min %.4f s .. T* %.4f s (planned from the measured profile)"
          % (frontier["status"], len(frontier["points"]), frontier["t_min_s"],
             frontier["t_star_s"]))
    for i, run_ in enumerate(result["ranks"]):
        st = run_["status"]
        print("rank %d: %d steps, %d profiling results accepted, %d stale; follows %s"
              % (i, run_["steps"], st["profiling_results_posted"], st["stale_results"],
                 [tuple(p) for p in run_["plan"]]))


if __name__ == "__main__":
    main()
