#!/usr/bin/env bash
# The merge benchmark: `pilot merge` of N items over K shards (default 1,000,000 over 100),
# its time and peak RSS, then `pilot verify` of the merged bag, printed as figures.
#
#   bench/merge-bench.sh [N] [K]        (from the repository root; builds pilot-bench)
#
# The shard folders are written by the engine itself (pilot-bench shards: ExecuteRun per
# shard with a stage that answers at once), so that only the merge is measured. Merging
# streams the shards side by side: memory grows with the shards and the ids, not the
# records. Scratch in build/bench-merge-N-K (about 8 GB at 1M items over 100 shards: each
# shard holds the whole manifest's copy; removed at the end unless KEEP=1, which also reuses
# the shards of an earlier KEEP=1 run).
set -euo pipefail
cd "$(dirname "$0")/.."
n=${1:-1000000}
k=${2:-100}
cmake --build --preset dev --target pilot pilot-bench >/dev/null
pilot=$PWD/build/dev/pilot
bench=$PWD/build/dev/pilot-bench
scratch=$PWD/build/bench-merge-$n-$k
[ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$scratch"' EXIT
rm -rf "$scratch/merged"
now() { date +%s.%N; }
calc() { python3 -c "print(f'{$1:.2f}')"; }
measure() {  # measure LABEL CMD...: wall seconds and peak RSS (MB) of CMD, into $secs, $rss
  local t0 t1 out label=$1
  shift
  t0=$(now)
  out=$(python3 -c '
import resource, subprocess, sys
rc = subprocess.call(sys.argv[1:], stdout=subprocess.DEVNULL)
print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, rc)' "$@")
  t1=$(now)
  secs=$(calc "$t1 - $t0")
  rss=$(calc "${out% *}")
  [ "${out#* }" = 0 ] || { echo "merge-bench: $label exited ${out#* }" >&2; exit 1; }
}
# KEEP=1 keeps the shards for the next run (writing them is most of the time).
if [ ! -f "$scratch/shards.json" ]; then
  rm -rf "$scratch"
  mkdir -p "$scratch"
  echo "merge-bench: writing $k shards of $n items in all ..." >&2
  "$bench" shards "$n" "$k" "$scratch" >"$scratch/shards.json.new"
  mv "$scratch/shards.json.new" "$scratch/shards.json"
fi
shards=()
for ((i = 0; i < k; i++)); do shards+=("$scratch/runs/shard-$i-of-$k"); done
measure "pilot merge" "$pilot" merge "${shards[@]}" --out "$scratch/merged" --quiet
merge_s=$secs merge_rss=$rss
measure "pilot verify" "$pilot" verify "$scratch/merged" --quiet
verify_s=$secs verify_rss=$rss
payload=$(du -sm "$scratch/merged/data" | cut -f1)
lines=$(wc -l <"$scratch/merged/data/results.jsonl")
[ "$lines" = "$n" ] || { echo "merge-bench: $lines results for $n items" >&2; exit 1; }
printf '\npilot merge benchmark, %d items over %d shards, %s cores\n' "$n" "$k" "$(nproc)"
printf '  writing the shards (engine, instant stage):   %s s\n' "$(sed -n 's/.*"seconds": \([0-9.]*\).*/\1/p' "$scratch/shards.json")"
printf '  pilot merge (verifies each shard in full, then streams them): %8.2f s   peak RSS %7.1f MB\n' "$merge_s" "$merge_rss"
printf '  pilot verify of the merged bag (%d MB payload):                %8.2f s   peak RSS %7.1f MB\n' "$payload" "$verify_s" "$verify_rss"
printf '  per item: merge %.2f us, verify %.2f us\n' "$(calc "1000000 * $merge_s / $n")" "$(calc "1000000 * $verify_s / $n")"
