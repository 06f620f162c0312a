#!/usr/bin/env bash
# The README's sweep example: a generated corpus (bench/sweep-corpus.py, 1200 documents of 1
# to 64 sentences), swept with the bundled langid model at batch sizes 1-64 on this build,
# with a 5 ms latency budget (per-batch p95), then report.html rendered headless by chromium to docs/sweep-example.png.
# Usage: bench/sweep-example.sh [PRESET]   (default dev; needs python3 and chromium)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
preset=${1:-dev}
pilot="$root/build/$preset/pilot"
[ -x "$pilot" ] || { echo "build first: cmake --build --preset $preset" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
python3 "$root/bench/sweep-corpus.py" 1200 "$work/corpus" >/dev/null
cat >"$work/params.json" <<EOT
{"manifest": "$work/corpus/manifest.jsonl",
 "stage": {"kind": "torchscript-classifier", "model": "$root/data/models/langid/langid.pt",
           "options": {"min_confidence": 0.5}},
 "allowed_categories": ["en", "fr", "de", "es", "it", "pt", "nl", "ja"],
 "device": "cpu", "batch_size": 8, "threads": 1}
EOT
"$pilot" sweep --params "$work/params.json" --batch-sizes 1,2,4,8,16,32,64 --latency-budget-ms 5 --out "$work/example" -q
sed -n '/^## Cells/,/^## Equivalence/p' "$work/example/data/sweep.md" | sed '$d'
sed -n '/^## Recommendation/,/^## Headroom/p' "$work/example/data/sweep.md" | sed '$d'
sandbox=()
[ "$(id -u)" -eq 0 ] && sandbox=(--no-sandbox)
HOME="$work" chromium --headless=new "${sandbox[@]}" --disable-gpu --hide-scrollbars --window-size=1260,480 \
  --screenshot="$root/docs/sweep-example.png" "file://$work/example/data/report.html" 2>/dev/null
echo "wrote docs/sweep-example.png"
