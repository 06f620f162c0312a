#!/usr/bin/env bash
# The README's test command (and CI's): builds pilot with warnings as errors and runs every
# test once on that default build (unit, torch, end-to-end, the hostile catalogue); then the
# core library and its unit tests without libtorch (preset core); then
# scripts/sanitize.sh builds with clang's AddressSanitizer and UndefinedBehaviorSanitizer
# and runs the unit tests, the `sanitize`-labelled end-to-end subset and the fuzzers.
# Between them, the torch2 flavour (scripts/torch2-deps.sh, preset torch2) builds against
# PyTorch 2.11's libtorch and runs the `flavour`-labelled subset.
# Arguments go to the first ctest (e.g. `scripts/test.sh -LE slow`); SKIP_SANITIZE=1 skips
# the core-only build, the torch2 flavour and the sanitizer half while you work;
# SKIP_TORCH2=1 skips the torch2 flavour alone.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
start=$SECONDS
scripts/deps.sh --test
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
fi
if [ "${SKIP_TORCH2:-0}" != 1 ] && [ "${SKIP_SANITIZE:-0}" != 1 ]; then
  # The second flavour: PyTorch 2.11's own libtorch (a CUDA 13 build) from the pinned wheel,
  # compiled with the machine's CUDA toolkit and warnings as errors, so that the CUDA code is
  # compiled and linked; then the `flavour` subset of the tests (the stage, doctor, the
  # default pilot, the model formats with the .pt2 export). No GPU is needed: the gpu-labelled
  # test skips where there is none.
  scripts/torch2-deps.sh
  cmake --preset torch2
  cmake --build --preset torch2 --target pilot pilot_torch_tests pilot-train-langid pilot-derive-embedding
  ctest --preset torch2 -L "flavour|torch"
  echo "test: torch2 flavour: $(((SECONDS - start) / 60)) min $(((SECONDS - start) % 60)) s"
fi
if [ "${SKIP_SANITIZE:-0}" != 1 ]; then
  scripts/sanitize.sh
fi
echo "test: everything: $(((SECONDS - start) / 60)) min $(((SECONDS - start) % 60)) s"
