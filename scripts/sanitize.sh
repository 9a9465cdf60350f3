#!/usr/bin/env bash
# Builds the whole library and test suite with AddressSanitizer + UndefinedBehaviorSanitizer (every
# finding fatal) into build-sanitize/ and runs it, so an overflow or out-of-bounds access fails a
# test. Not part of CI: on a 2-core machine the build alone takes about an hour even at -O1 (-O2 -g
# under both sanitizers compiles 5-8 times slower than a release build). CI runs the smaller
# powertrain_sanitized_tests of scripts/test.sh instead. Left out here: the CUDA interposer's programs
# (they preload an emulated libcudart into processes that ASan would also have to preload), the
# Python module (an ASan library cannot be loaded into Debian's python3), the benchmarks, and the
# stress tests that take many minutes under the sanitizers (the normal suite runs them).
# Usage: scripts/sanitize.sh [build-dir]   (default: build-sanitize). Run scripts/setup.sh first.
set -euo pipefail
cd "$(dirname "$0")/.."
build_dir="${1:-build-sanitize}"
flags="-O1 -g1 -DNDEBUG -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer"
echo "sanitize: configuring ${build_dir} (ASan + UBSan, every finding fatal)"
cmake -S . -B "$build_dir" -DCMAKE_BUILD_TYPE=None -DPOWERTRAIN_BUILD_BENCH=OFF \
  -DPOWERTRAIN_BUILD_EMULATION=OFF -DPOWERTRAIN_BUILD_PYTHON=OFF -DCMAKE_CXX_FLAGS="$flags" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" \
  -DCMAKE_SHARED_LINKER_FLAGS="-fsanitize=address,undefined" >/dev/null
echo "sanitize: building (about an hour on 2 cores)"
cmake --build "$build_dir" -j"$(nproc)" --target powertrain powertrain_tests >/dev/null
# ASan's own fatal-signal handlers off: memory errors are caught by instrumentation, not by them,
# and the output tests deliberately raise SIGSEGV/SIGBUS/SIGFPE/SIGILL/SIGABRT at a child to check
# that powertrain's handler removes its staging directory.
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:detect_stack_use_after_return=0:handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_sigill=0:handle_abort=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
echo "sanitize: running the suite under the sanitizers"
ctest --test-dir "$build_dir" --output-on-failure -j"$(nproc)" --timeout 1500 \
  -E 'Robustness\.NoisyRealProfiles|doc_examples|python_tests|ServeCrash|Perseus/GoldenFrontier\..*96|Emulat|Interposer|Search/Gpt3OnH100|SearchDeterminism'
