#!/usr/bin/env bash
# Scale benchmark of pilot (issue: runs of 100k+ items). Prints figures; asserts nothing.
#   bench/run-bench.sh [N] [WORK_DIR]     (default N=100000)
# 1. items/s of `pilot run` on N synthetic documents vs a bare loop doing the same reading,
#    featurisation and model calls with no journal, bag, prechecks or report (target >= 0.95);
# 2. time to resume a run stopped at 99% vs the full run (target <= 5%), and of `pilot verify
#    --fast` on the full run's folder (target <= 0.3 s at 100k);
# 3. peak RSS of the run at N, and of validating a manifest of 1,000,000 items;
# 4. full fixity of a 1 GiB payload against sha256sum;
# 5. pilot's whole-command time against the Python peer, bench/peer.py (target >= 8x at 100k).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-100000}
work=${2:-$(mktemp -d)}
cd "$root"
# PILOT_BENCH_PRESET=dev reuses the developer build (same -O2) instead of a release tree.
preset=${PILOT_BENCH_PRESET:-release}
cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" --target pilot pilot-bench >/dev/null
pilot=$root/build/$preset/pilot
bench=$root/build/$preset/pilot-bench
mkdir -p "$work"
cd "$work"
rss() { sed -n 's/.*"peak_rss_mb": \([0-9.]*\).*/\1/p' "$1" | head -1; }
now() { date +%s.%N; }
calc() { awk "BEGIN { print $1 }"; }

[ -f corpus/manifest.jsonl ] || "$bench" gen "$n" corpus >/dev/null
cat >params.json <<EOT
{"manifest": "corpus/manifest.jsonl",
 "stage": {"kind": "torchscript-classifier", "model": "$root/data/models/langid/langid.pt"},
 "allowed_categories": ["en", "fr", "de", "es", "it", "pt", "nl", "ja"],
 "device": "cpu", "batch_size": 64, "threads": 1}
EOT
sync
rm -rf runs

# 1. Throughput: the bare loop first (warms the page cache for both), then pilot.
"$bench" bare params.json corpus/manifest.jsonl >bare.json
t0=$(now)
"$pilot" run --params params.json --runs-dir runs --run-id full --quiet >/dev/null
t1=$(now)
full_s=$(calc "$t1 - $t0")
bare_ips=$(sed -n 's/.*"bare_items_per_s": \([0-9.]*\).*/\1/p' bare.json)
run_ips=$(sed -n 's/.*"throughput_items_per_s": \([0-9.]*\).*/\1/p' runs/full/data/report.json)
wall_ips=$(calc "$n / $full_s")

# 2. Resume of a run stopped at 99%.
stop=$((n * 99 / 100))
"$pilot" run --params params.json --runs-dir runs --run-id part --stop-after "$stop" --quiet >/dev/null 2>&1 || true
t0=$(now)
"$pilot" resume runs/part --quiet >/dev/null
t1=$(now)
resume_s=$(calc "$t1 - $t0")

# Verify without fixity: the accounting alone.
t0=$(now)
"$pilot" verify runs/full --fast >/dev/null
t1=$(now)
verify_s=$(calc "$t1 - $t0")

# 4. Full fixity of a 1 GiB payload: the full run's bag with eight 128 MiB files added to its
# payload (listed, Payload-Oxum and tag manifest updated, so that it is a valid bag), hashed
# by `pilot verify` (every core) and by `sha256sum -c` on the same files. The page cache is
# warmed first, so that both read from memory.
rm -rf fixity && cp -r runs/full fixity
for i in 0 1 2 3 4 5 6 7; do head -c $((128 << 20)) /dev/urandom >"fixity/data/extra-$i.bin"; done
(cd fixity && sha256sum data/extra-*.bin >>manifest-sha256.txt)
octets=$(find fixity/data -type f -printf '%s\n' | awk '{ s += $1 } END { print s }')
files=$(find fixity/data -type f | wc -l)
sed -i "s/^Payload-Oxum: .*/Payload-Oxum: $octets.$files/" fixity/bag-info.txt
(cd fixity && sha256sum bagit.txt bag-info.txt manifest-sha256.txt >tagmanifest-sha256.txt)
cat fixity/data/* >/dev/null
t0=$(now); (cd fixity && sha256sum -c --quiet manifest-sha256.txt); t1=$(now)
sha256sum_s=$(calc "$t1 - $t0")
t0=$(now); "$pilot" verify fixity >/dev/null; t1=$(now)
fixity_s=$(calc "$t1 - $t0")
fixity_mb=$(calc "$octets / 1048576")

# 5. The Python peer (bench/peer.py, with torch 2.x from the pinned wheel's venv, or
# PILOT_PEER_PYTHON): the harness a user would write instead, on the same items, batch size
# and thread count. Its labels are compared with pilot's item by item.
peer_py=${PILOT_PEER_PYTHON:-$root/build/venv/bin/python}
peer_s=""
if [ -x "$peer_py" ]; then
  sync
  t0=$(now)
  "$peer_py" "$root/bench/peer.py" "$root/data/models/langid/langid.pt" corpus/manifest.jsonl peer.jsonl \
    --batch-size 64 --threads 1 >peer.json 2>peer.err
  t1=$(now)
  peer_s=$(calc "$t1 - $t0")
  peer_agree=$(python3 - runs/full/data/results.jsonl peer.jsonl <<'PY'
import json, sys
pilot = {}
for line in open(sys.argv[1]):
    r = json.loads(line)
    pilot[r["id"]] = (r["status"], r.get("category"))
same = differ = 0
for line in open(sys.argv[2]):
    r = json.loads(line)
    if pilot.get(r["id"]) == (r["status"], r.get("category")):
        same += 1
    else:
        differ += 1
print(f"{same} items agree, {differ} differ, {len(pilot) - same - differ} missing")
PY
)
fi

# 3. Validation of a manifest of 1,000,000 items.
[ -f big.jsonl ] || "$bench" manifest 1000000 big.jsonl
"$bench" validate big.jsonl >validate.json

printf '\npilot scale benchmark, N=%d items, batch 64, 1 thread, %s\n' "$n" "$(nproc) cores"
printf '  bare loop (read + featurise + model):        %10.1f items/s\n' "$bare_ips"
printf '  pilot run (processing, from report.json):     %10.1f items/s   ratio %.3f (target >= 0.95)\n' \
  "$run_ips" "$(calc "$run_ips / $bare_ips")"
printf '  pilot run (whole command: load, run, bag, verify): %7.1f items/s   %.1f s\n' "$wall_ips" "$full_s"
printf '  resume at 99%% (%d of %d done):              %10.2f s        %.2f%% of the full run (target <= 5%%)\n' \
  "$stop" "$n" "$resume_s" "$(calc "100 * $resume_s / $full_s")"
printf '  pilot verify --fast of the %d-item folder:   %10.2f s        %.1f us per item (target <= 0.3 s at 100k)\n' \
  "$n" "$verify_s" "$(calc "1000000 * $verify_s / $n")"
printf '  full fixity, %.0f MiB payload: pilot verify %.2f s, sha256sum -c %.2f s: %.2fx (target >= 2x)\n' \
  "$fixity_mb" "$fixity_s" "$sha256sum_s" "$(calc "$sha256sum_s / $fixity_s")"
printf '  peak RSS, run of %d items:                  %10.1f MB\n' "$n" "$(rss runs/full/data/report.json)"
printf '  peak RSS, validating 1,000,000 items:         %10.1f MB (%s s)\n' "$(rss validate.json)" \
  "$(sed -n 's/.*"seconds": \([0-9.]*\).*/\1/p' validate.json)"
if [ -n "$peer_s" ]; then
  printf '  Python peer (bench/peer.py, torch %s):  %10.1f s        pilot whole command %.1fx faster (target >= 8x); labels: %s\n' \
    "$("$peer_py" -c 'import torch; print(torch.__version__)' 2>/dev/null)" "$peer_s" "$(calc "$peer_s / $full_s")" "$peer_agree"
else
  echo "  Python peer: skipped (no $peer_py: run scripts/torch-deps.sh, or set PILOT_PEER_PYTHON)"
fi
"$pilot" verify runs/full --fast >/dev/null && "$pilot" verify runs/part --fast >/dev/null && echo "  both runs verify"
