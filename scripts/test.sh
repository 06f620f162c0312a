#!/usr/bin/env bash
# Builds pilot with warnings as errors and runs every test (unit and end-to-end) with ctest.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/deps.sh
cmake --preset dev
cmake --build --preset dev
ctest --preset dev "$@"
