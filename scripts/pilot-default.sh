#!/usr/bin/env bash
# Builds pilot (release, against the pinned PyTorch wheel in build/venv) and runs the bundled
# default pilot: config/pilot.json.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
scripts/deps.sh
scripts/torch-deps.sh
cmake --preset release >/dev/null
cmake --build --preset release
exec build/release/pilot run --params config/pilot.json "$@"
