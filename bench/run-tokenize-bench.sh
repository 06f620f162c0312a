#!/usr/bin/env bash
# Tokenization throughput on one core, pilot against Hugging Face tokenizers and sentencepiece,
# per family (bench/tokenize-bench.py). Prints figures; asserts only that the ids agree.
#   bench/run-tokenize-bench.sh [WORK_DIR] [--texts N] [--repeat R] [--family F ...]
# PILOT_BENCH_PRESET=dev measures the developer build (same -O2) instead of a release tree.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$(mktemp -d)}
shift || true
preset=${PILOT_BENCH_PRESET:-release}
cd "$root"
[ -x build/venv/bin/python ] || scripts/torch-deps.sh
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" --target pilot-bench >/dev/null
echo "tokenize-bench: the $preset build, commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
build/venv/bin/python bench/tokenize-bench.py "build/$preset/pilot-bench" "$work" "$@"
