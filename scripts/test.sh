#!/usr/bin/env bash
# Sets up (scripts/setup.sh) with powertrain_sanitized_tests turned on and runs the whole suite with
# ctest: every test once, and the in-process tests of the readers and algorithms of outside data
# again (names "sanitized:...") with that library code under AddressSanitizer +
# UndefinedBehaviorSanitizer, so an overflow or an out-of-bounds access fails CI.
# scripts/sanitize.sh runs the whole suite instrumented instead (hours on 2 cores; not in CI).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh build -DPOWERTRAIN_SANITIZED_TESTS=ON
ctest --test-dir build --output-on-failure -j"$(nproc)"
