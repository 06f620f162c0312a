#!/usr/bin/env bash
# pilot run's processing rate against the bare loop, in alternating pairs, on the release and
# the dev preset (not a test: it prints figures). Issue 27 asks for >= 0.95 on the release
# preset "in paired runs": one pair on this shared machine swings from 0.5 to 2 (the serial
# bare loop's speed varies fourfold from minute to minute), so each pair runs its two
# commands back to back, the order alternating between pairs, and the median ratio is the
# figure to compare.
#   bench/overhead.sh [N] [PAIRS] [WORK_DIR]   (default N=100000, PAIRS=5)
# PILOT_BENCH_PRESETS="release dev" chooses the builds (both by default).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-100000}
pairs=${2:-5}
work=${3:-$(mktemp -d)}
presets=${PILOT_BENCH_PRESETS:-release dev}
cd "$root"
for preset in $presets; do
  cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset" --target pilot pilot-bench >/dev/null
done
mkdir -p "$work"
cd "$work"
first=${presets%% *}
[ -f corpus/manifest.jsonl ] || "$root/build/$first/pilot-bench" gen "$n" corpus >/dev/null
cat >params.json <<EOT
{"manifest": "corpus/manifest.jsonl",
 "stage": {"kind": "torchscript-classifier", "model": "$root/data/models/langid/langid.pt"},
 "allowed_categories": ["en", "fr", "de", "es", "it", "pt", "nl", "ja"],
 "device": "cpu", "batch_size": 64, "threads": 1}
EOT
cat corpus/docs/* >/dev/null 2>&1 || find corpus -type f -exec cat {} + >/dev/null  # a warm page cache for every pair
bare() { "$root/build/$1/pilot-bench" bare params.json corpus/manifest.jsonl | sed -n 's/.*"bare_items_per_s": \([0-9.]*\).*/\1/p'; }
run() {
  rm -rf runs
  "$root/build/$1/pilot" run --params params.json --runs-dir runs --run-id full --quiet >/dev/null
  sed -n 's/.*"throughput_items_per_s": \([0-9.]*\).*/\1/p' runs/full/data/report.json
}
printf 'pilot run (processing) / bare loop, N=%d, batch 64, 1 model thread, %s cores, %d alternating pairs\n' \
  "$n" "$(nproc)" "$pairs"
for preset in $presets; do
  ratios=()
  for ((i = 1; i <= pairs; i++)); do
    if ((i % 2)); then b=$(bare "$preset"); r=$(run "$preset"); else r=$(run "$preset"); b=$(bare "$preset"); fi
    ratio=$(awk "BEGIN { printf \"%.3f\", $r / $b }")
    ratios+=("$ratio")
    printf '  %-8s pair %d: bare %9.1f items/s, run %9.1f items/s, ratio %s\n' "$preset" "$i" "$b" "$r" "$ratio"
  done
  median=$(printf '%s\n' "${ratios[@]}" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
  printf '  %-8s median ratio %s (target >= 0.95 on release)\n' "$preset" "$median"
done
