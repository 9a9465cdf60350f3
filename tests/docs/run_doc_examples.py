#!/usr/bin/env python3
"""Runs every `build/powertrain ...` command in the fenced sh blocks of README.md and docs/*.md.

A documented example must never fail: each command runs in a scratch directory laid out like the
project root (build/ and ../shared/ linked in), in document order so that later examples may use
what earlier ones wrote, with the placeholders below replaced by real inputs. Examples that need the
shared data are skipped (with a message) when it is absent. Prints one line per example and closes
with "N passed, N failed, N skipped"; exits non-zero when any failed.
"""
import argparse
import glob
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

# Placeholder -> replacement, as whole words. Paths are relative to the scratch project root.
A100_PROFILE = "../shared/data/perseus/gpt3-175b+a100_sxm_bf16.csv"
PLACEHOLDERS = {
    "P.csv": A100_PROFILE,
    "measured.csv": A100_PROFILE,
    "DIR": "out/doc-frontier",
    "trace.json.gz": "../shared/data/traces/tracelens/b200_eager_rank0.json.gz",
    "./train": "build/emu_programs/nccl_multiproc",
    "./one_process_8_gpus": "build/emu_programs/nccl_multidev",
    "./allreduce_all": "build/emu_programs/nccl_multidev",
    "./vectorAdd": "build/emu_programs/streams_events",
    "./my_cuda_program": "build/emu_programs/streams_events",
}
# Program arguments the stand-in programs do not take.
DROPPED_ARGS = ["--steps 5"]


def commands_of(path):
    """(line number, command) for each powertrain command in the file's ```sh blocks."""
    text = open(path, encoding="utf-8").read()
    found = []
    for block in re.finditer(r"```(?:sh|bash)\n(.*?)```", text, re.S):
        first_line = text.count("\n", 0, block.start()) + 2
        lines = block.group(1).split("\n")
        i = 0
        while i < len(lines):
            line_no = first_line + i
            line = lines[i]
            while line.rstrip().endswith("\\") and i + 1 < len(lines):
                i += 1
                line = line.rstrip()[:-1] + " " + lines[i].strip()
            i += 1
            line = line.split("  #")[0].split("\t#")[0].strip()
            line = re.sub(r"^scripts/setup\.sh\s*&&\s*", "", line)
            if line.startswith("build/powertrain ") or line.startswith("PYTHONPATH="):
                found.append((line_no, line))
    return found


def substitute(command):
    words = shlex.split(command)
    out = []
    for word in words:
        out.append(PLACEHOLDERS.get(word, word))
    text = " ".join(shlex.quote(w) for w in out)
    for dropped in DROPPED_ARGS:
        text = text.replace(" " + dropped, "")
    return text


def output_of(runnable):
    """The --out path of a command, or None."""
    words = shlex.split(runnable)
    for i, word in enumerate(words[:-1]):
        if word == "--out":
            return words[i + 1].rstrip("/")
    return None


def needs_any(runnable, paths):
    """The first of `paths` that the command reads (a word equal to it or inside it), or None."""
    for word in shlex.split(runnable):
        for path in paths:
            if word == path or word.startswith(path + "/"):
                return path
    return None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--source-dir", required=True)
    parser.add_argument("--build-dir", required=True)
    parser.add_argument("--timeout-s", type=float, default=600.0)
    parser.add_argument("files", nargs="*")
    args = parser.parse_args()
    source = os.path.abspath(args.source_dir)
    shared = os.path.abspath(os.path.join(source, "..", "shared"))
    files = args.files or [os.path.join(source, "README.md")] + sorted(
        glob.glob(os.path.join(source, "docs", "*.md")))
    passed = failed = skipped = 0
    missing_outputs = {}  # --out of a skipped example -> where it was
    with tempfile.TemporaryDirectory(prefix="powertrain-doc-examples-") as scratch:
        root = os.path.join(scratch, "project")
        os.makedirs(root)
        os.symlink(os.path.abspath(args.build_dir), os.path.join(root, "build"))
        if os.path.isdir(shared):
            os.symlink(shared, os.path.join(scratch, "shared"))
        os.symlink(os.path.join(source, "examples"), os.path.join(root, "examples"))
        for path in files:
            name = os.path.relpath(path, source)
            for line_no, command in commands_of(path):
                where = f"{name}:{line_no}"
                runnable = substitute(command)
                reason = None
                if "../shared/" in runnable and not os.path.isdir(shared):
                    reason = f"needs ../shared/data (absent): {command}"
                elif "emu_programs" in runnable and not os.path.isdir(
                        os.path.join(args.build_dir, "emu_programs")):
                    reason = "the emulation test programs were not built (no nvcc)"
                elif (needed := needs_any(runnable, missing_outputs)) is not None:
                    reason = (f"reads {needed}, the output of the skipped example "
                              f"{missing_outputs[needed]}: {command}")
                if reason is not None:
                    print(f"SKIP {where}: {reason}")
                    skipped += 1
                    if (out := output_of(runnable)) is not None:
                        missing_outputs[out] = where
                    continue
                started = time.monotonic()
                try:
                    result = subprocess.run(["bash", "-c", runnable], cwd=root,
                                            stdin=subprocess.DEVNULL, capture_output=True,
                                            text=True, timeout=args.timeout_s)
                    code = result.returncode
                    detail = (result.stderr.strip().splitlines() or [""])[-1]
                except subprocess.TimeoutExpired:
                    code, detail = -1, f"timed out after {args.timeout_s:.0f} s"
                seconds = time.monotonic() - started
                if code == 0:
                    print(f"PASS {where} ({seconds:.1f} s): {command}")
                    passed += 1
                else:
                    print(f"FAIL {where} (exit {code}): {command}\n     ran: {runnable}\n     "
                          f"{detail}")
                    failed += 1
    print(f"{passed} passed, {failed} failed, {skipped} skipped")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
