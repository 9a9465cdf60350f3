#!/usr/bin/env python3
"""Independent HTA-definition quantities of Kineto traces, with pandas, for cross-checking
`powertrain analyze` (tests/analyze/hta_crosscheck_test.cc).

Usage: hta_reference.py TRACE   (a .json, .json.gz, or a .tar/.tar.gz of per-rank traces)
Prints one JSON object: {"ranks": [{"rank", "idle_pct", "compute_pct", "non_compute_pct",
"overlap_pct", "states": {"<mask>": pct}, "gpu_events"}]} for the window from the first GPU event's
start to the last GPU event's end (HTA's default). Exit 2 when pandas is missing.

Definitions (HTA's, with the communication libraries of docs/analyze.md):
  GPU events: ph "X" with cat kernel/gpu_memcpy/gpu_memset (or the 2021 Kernel/Memcpy/Memset).
  memory = memcpy/memset; communication = kernel of NCCL/RCCL/DeepEP/NVSHMEM/Gloo by name;
  computation = the other kernels.
  idle = window - union(all); compute = union(computation); non-compute = the rest.
  overlap = |union(comm) & union(comp)| / |union(comm)|.
  states: time during which exactly the set of types in a bit mask runs / busy time
  (bit 1 computation, 2 communication, 4 memory).
"""
import gzip
import io
import json
import re
import sys
import tarfile

try:
    import pandas as pd
except ImportError:  # pragma: no cover
    sys.exit(2)

GPU_CATS = {"kernel", "gpu_memcpy", "gpu_memset", "Kernel", "Memcpy", "Memset"}
MEMORY_CATS = {"gpu_memcpy", "gpu_memset", "Memcpy", "Memset"}
COMM_RE = re.compile(r"(?:rccl|msccl|deep_ep|nvshmem|^nccl|gloo:)", re.IGNORECASE)


def load_documents(path):
    """Yields (name, document) in the order powertrain reads them."""
    with open(path, "rb") as f:
        raw = f.read()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    if len(raw) > 262 and raw[257:262] == b"ustar":
        with tarfile.open(fileobj=io.BytesIO(raw)) as tar:
            members = sorted(
                (m for m in tar.getmembers()
                 if m.isfile() and (m.name.endswith(".json") or m.name.endswith(".json.gz"))),
                key=lambda m: m.name)
            for m in members:
                data = tar.extractfile(m).read()
                if data[:2] == b"\x1f\x8b":
                    data = gzip.decompress(data)
                yield m.name, json.loads(data)
    else:
        yield path, json.loads(raw)


def merge(df):
    """HTA's merge_kernel_intervals: sorted by start, grouped while starts stay inside."""
    if df.empty:
        return pd.DataFrame({"ts": pd.Series(dtype="float64"), "end": pd.Series(dtype="float64")})
    df = df.sort_values(by="ts").copy()
    df["group"] = (df["ts"] > df["end"].shift().cummax()).cumsum()
    return df.groupby("group", as_index=False).agg({"ts": "min", "end": "max"})[["ts", "end"]]


def length(merged):
    return float((merged["end"] - merged["ts"]).sum())


def analyze(document):
    events = document["traceEvents"] if isinstance(document, dict) else document
    rows = []
    for e in events:
        if not isinstance(e, dict) or e.get("ph") != "X" or e.get("cat") not in GPU_CATS:
            continue
        try:
            ts = float(e["ts"])
        except (KeyError, TypeError, ValueError):
            continue
        try:
            dur = max(0.0, float(e.get("dur", 0)))
        except (TypeError, ValueError):
            dur = 0.0
        rows.append((e.get("name", ""), e["cat"], ts, dur))
    df = pd.DataFrame(rows, columns=["name", "cat", "ts", "dur"])
    df["end"] = df["ts"] + df["dur"]
    df["type"] = "computation"
    df.loc[df["name"].str.contains(COMM_RE), "type"] = "communication"
    df.loc[df["cat"].isin(MEMORY_CATS), "type"] = "memory"
    window = float(df["end"].max() - df["ts"].min()) if len(df) else 0.0
    merged = {t: merge(df[df["type"] == t][["ts", "end"]]) for t in
              ("computation", "communication", "memory")}
    union_all = length(merge(df[["ts", "end"]]))
    compute = length(merged["computation"])
    idle = window - union_all
    non_compute = window - idle - compute
    # Sweep of +bit/-bit at the merged boundaries (HTA's status cumsum).
    bits = {"computation": 1, "communication": 2, "memory": 4}
    edges = pd.concat(
        [pd.DataFrame({"time": m["ts"], "delta": bits[t]}) for t, m in merged.items()] +
        [pd.DataFrame({"time": m["end"], "delta": -bits[t]}) for t, m in merged.items()],
        ignore_index=True).sort_values(by=["time", "delta"], kind="mergesort").reset_index(drop=True)
    edges["running"] = edges["delta"].cumsum()
    edges["next"] = edges["time"].shift(-1)
    edges = edges[edges["running"] > 0].dropna()
    edges["dur"] = edges["next"] - edges["time"]
    states = edges.groupby("running")["dur"].sum()
    busy = float(states.sum())
    overlap = float(states.get(3, 0.0) + states.get(7, 0.0))
    comm = length(merged["communication"])
    pct = (lambda x: 100.0 * x / window) if window > 0 else (lambda x: 0.0)
    return {
        "idle_pct": pct(idle),
        "compute_pct": pct(compute),
        "non_compute_pct": pct(non_compute),
        "overlap_pct": 100.0 * overlap / comm if comm > 0 else 0.0,
        "states": {str(int(k)): (100.0 * float(v) / busy if busy > 0 else 0.0)
                   for k, v in states.items()},
        "gpu_events": int(len(df)),
    }


def main():
    out = []
    for position, (name, document) in enumerate(load_documents(sys.argv[1])):
        rank = position
        if isinstance(document, dict):
            info = document.get("distributedInfo") or {}
            if isinstance(info.get("rank"), int):
                rank = info["rank"]
        result = analyze(document)
        result["rank"] = rank
        result["source"] = name
        out.append(result)
    json.dump({"ranks": out}, sys.stdout)


if __name__ == "__main__":
    main()
