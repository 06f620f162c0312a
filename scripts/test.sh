#!/usr/bin/env bash
# The README's test command (and CI's): builds pilot with warnings as errors and runs every
# test once on that default build (unit, torch, end-to-end, the hostile catalogue); then
# scripts/sanitize.sh builds with clang's AddressSanitizer and UndefinedBehaviorSanitizer
# and runs the unit tests, the `sanitize`-labelled end-to-end subset and the fuzzers.
# Arguments go to the first ctest (e.g. `scripts/test.sh -LE slow`); SKIP_SANITIZE=1 skips
# the sanitizer half while you work.
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
  scripts/sanitize.sh
fi
echo "test: everything: $(((SECONDS - start) / 60)) min $(((SECONDS - start) % 60)) s"
