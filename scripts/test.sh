#!/usr/bin/env bash
# Sets up (scripts/setup.sh), runs the whole test suite with ctest, then the suite again built with
# AddressSanitizer + UndefinedBehaviorSanitizer (scripts/sanitize.sh), so an overflow or an
# out-of-bounds access fails CI.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build
ctest --test-dir build --output-on-failure -j"$(nproc)"
scripts/sanitize.sh build-sanitize
