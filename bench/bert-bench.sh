#!/usr/bin/env bash
# pilot's transformer path against the Python pipeline a user would write (tokenizers, then
# transformers under inference_mode), on N texts on the CPU, for the bundled langid-bert and a
# 4-layer, hidden-256 BERT (bench/bert-bench.py). Prints figures; fails only if the outputs
# disagree (a category, or a probability by 1e-4 or more).
#   bench/bert-bench.sh [WORK_DIR] [--texts N] [--pairs P] [--batch-size B] [--threads T]
# PILOT_BENCH_PRESET=dev measures the developer build instead of the release tree.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then
  work=$1
  shift
fi
preset=${PILOT_BENCH_PRESET:-release}
cd "$root"
[ -x build/venv/bin/python ] || scripts/torch-deps.sh
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" --target pilot pilot-bench >/dev/null
echo "bert-bench: the $preset build, commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
build/venv/bin/python bench/bert-bench.py "build/$preset/pilot" "build/$preset/pilot-bench" "$work" "$@"
