#!/usr/bin/python3
"""Reference exponential fit of a Perseus profile with scipy, for cross-checking powertrain.

Follows the reference solver (lowtime) per (stage, instruction): options quantized with
floor(time / tau); Pareto filter on (measured time, measured energy), one option per quantized
time (the fastest); rerun with noise factor 0.95 when 3 or fewer remain; effective energy = energy - P_blocking x
quantized time; a*exp(b*t)+c by scipy.optimize.curve_fit (method 'lm', maxfev 50000) from every
start of the reference grid; starts that fail or give an infinite covariance are skipped; the
lowest mean squared error wins.

Usage: reference_fit.py PROFILE.csv UNIT_TIME_S P_BLOCKING_W
Prints CSV: stage,instruction,units,effective_energy,a,b,c,mse (units and energies ';'-joined);
a row with empty a,b,c when no start fits. Exit 2 when scipy is missing.
"""

import csv
import itertools
import math
import sys
import warnings

try:
    import numpy as np
    from scipy.optimize import curve_fit
except ImportError as e:  # the gtest skips on exit code 2
    print(f"scipy/numpy not available: {e}", file=sys.stderr)
    sys.exit(2)


def quantize(time_s, unit_time_s):
    # Same relative slack as the C++ side so that 0.3 / 0.1 counts as 3.
    ratio = time_s / unit_time_s
    return int(math.floor(ratio + ratio * 1e-9))


def pareto(options, noise_factor):
    """options: list of (units, frequency, energy, time). Returns kept options, fastest first.

    lowtime's CandidateExecutionOptions: Pareto on measured time and energy, then one option per
    quantized time, the fastest (ties: the higher clock)."""
    kept = [
        o for o in options
        if not any(p[3] < o[3] and p[2] < o[2] * noise_factor for p in options)
    ]
    best = {}
    for o in kept:
        b = best.get(o[0])
        if b is None or o[3] < b[3] or (o[3] == b[3] and o[1] > b[1]):
            best[o[0]] = o
    return [best[u] for u in sorted(best)]


def fit(units, costs, unit_time_s):
    fn = lambda t, a, b, c: a * np.exp(b * t) + c
    x = np.array(units, dtype=float)
    y = np.array(costs, dtype=float)
    best = None
    b_scale = unit_time_s / 0.001
    for a0, b0, c0 in itertools.product(
        [1e1, 1e2, 1e3], [-s * b_scale for s in [0.01, 0.02, 0.03, 0.04, 0.05, 0.1]],
        [1e1, 1e2, 1e3]):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                params, pcov = curve_fit(fn, x, y, p0=[a0, b0, c0], maxfev=50000)
            except (RuntimeError, ValueError, FloatingPointError):
                continue
        if np.inf in pcov:
            continue
        mse = float(np.mean(np.square(y - fn(x, *params))))
        if not math.isfinite(mse):
            continue
        if best is None or mse < best[3]:
            best = (float(params[0]), float(params[1]), float(params[2]), mse)
    return best


def main():
    if len(sys.argv) != 4:
        print(__doc__, file=sys.stderr)
        return 1
    path, unit_time_s, p_blocking_w = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
    groups = {}
    with open(path, newline="") as f:
        for row in csv.DictReader(f):
            key = (int(row["stage"]), row["instruction"])
            t = float(row["time"])
            groups.setdefault(key, []).append(
                (quantize(t, unit_time_s), int(float(row["frequency"])), float(row["energy"]), t))
    out = csv.writer(sys.stdout, lineterminator="\n")
    out.writerow(["stage", "instruction", "units", "effective_energy", "a", "b", "c", "mse"])
    order = {"forward": 0, "backward": 1, "recompute": 2}
    for (stage, inst) in sorted(groups, key=lambda k: (k[0], order.get(k[1], 9))):
        options = pareto(groups[(stage, inst)], 1.0)
        if len(options) <= 3:
            options = pareto(groups[(stage, inst)], 0.95)
        units = [o[0] for o in options]
        costs = [o[2] - p_blocking_w * o[0] * unit_time_s for o in options]
        result = fit(units, costs, unit_time_s) if len(options) >= 3 else None
        params = [repr(v) for v in result] if result else ["", "", "", ""]
        out.writerow([stage, inst, ";".join(map(str, units)), ";".join(repr(c) for c in costs)]
                     + params)
    return 0


if __name__ == "__main__":
    sys.exit(main())
