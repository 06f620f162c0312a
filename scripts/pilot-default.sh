#!/usr/bin/env bash
# Builds pilot (release) and runs the bundled default pilot: config/pilot.json.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/deps.sh
cmake --preset release >/dev/null
cmake --build --preset release
exec build/release/pilot run --params config/pilot.json "$@"
