#!/usr/bin/env bash
# The README's test command (and CI's): builds pilot with warnings as errors and runs every
# test once on that default build (unit, torch, end-to-end, the hostile catalogue); then the
# core library and its unit tests without libtorch (preset core); then
# scripts/sanitize.sh builds with clang's AddressSanitizer and UndefinedBehaviorSanitizer
# and runs the unit tests, the `sanitize`-labelled end-to-end subset and the fuzzers.
# Arguments go to the first ctest (e.g. `scripts/test.sh -LE slow`); SKIP_SANITIZE=1 skips
# the core-only build and the sanitizer half while you work.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
start=$SECONDS
scripts/deps.sh
cmake --preset dev
cmake --build --preset dev
ctest --preset dev "$@"
echo "test: default build and its tests: $(((SECONDS - start) / 60)) min $(((SECONDS - start) % 60)) s"
if [ "${SKIP_SANITIZE:-0}" != 1 ]; then
  # The core never needs libtorch: it builds and passes its unit tests without it.
  cmake --preset core
  cmake --build --preset core
  ctest --test-dir build/core -L 'unit|lint' --output-on-failure -j2
  echo "test: core without libtorch: $(((SECONDS - start) / 60)) min $(((SECONDS - start) % 60)) s"
  scripts/sanitize.sh
fi
echo "test: everything: $(((SECONDS - start) / 60)) min $(((SECONDS - start) % 60)) s"
