#!/usr/bin/env bash
# Builds the test suite with AddressSanitizer + UndefinedBehaviorSanitizer (every finding fatal) into
# build-sanitize/ and runs it, so an overflow or out-of-bounds access fails a test. The CUDA
# interposer's programs are left out (they preload an emulated libcudart into processes that ASan
# would also have to preload) and so are the benchmarks; the long-running stress tests are skipped.
# Usage: scripts/sanitize.sh [build-dir]   (default: build-sanitize). Run scripts/setup.sh first.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${1:-build-sanitize}"
flags="-fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DPOWERTRAIN_BUILD_BENCH=OFF \
  -DPOWERTRAIN_BUILD_EMULATION=OFF -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
cmake --build "$build_dir" -j"$(nproc)" --target powertrain powertrain_tests
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# Stress tests that take minutes under the sanitizers are covered by the normal suite.
ctest --test-dir "$build_dir" --output-on-failure -j"$(nproc)" --timeout 1500 \
  -E 'Robustness\.NoisyRealProfiles|doc_examples|ServeCrash|Perseus/GoldenFrontier\..*96|Emulat|Interposer'
