#!/usr/bin/env bash
# Sets up (scripts/setup.sh) and runs the whole test suite with ctest. The ASan + UBSan build of the
# suite is scripts/sanitize.sh (see docs/robustness.md).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
ctest --test-dir build --output-on-failure -j"$(nproc)"
