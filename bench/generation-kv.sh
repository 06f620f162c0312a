#!/usr/bin/env bash
# The KV cache, predicted against measured (docs/generation.md, "Memory"). Not a test: it prints
# figures. A Llama-style model with random weights (4 layers, 8 key/value heads of 64, context
# 16384: 16 KiB of float32 keys and values a position), its logits all 0 so that greedy decoding
# ends every sequence after one token (stop_token_ids [0]) while pilot allocates each batch's
# cache for the whole max_new_tokens, runs at three points of context x batch after a baseline
# (max_new_tokens 1). Predicted: 2 x layers x KV heads x head dim x context x batch x 4 bytes.
# Measured: on a CPU the run's peak RSS less the baseline's; on a GPU (--device cuda) the device
# peak less the baseline's. Both include what the step allocates beside the cache: it
# concatenates one layer's cached keys and values with the new ones (1/layers of the cache).
#
# --dtype bfloat16 exports the model (and so its KV cache) in bfloat16: 8 KiB a position.
#
#   bench/generation-kv.sh [--device cpu|cuda] [--dtype float32|bfloat16] [PILOT]   (default build/release/pilot)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
device=cpu
dtype=float32
pilot=""
while [ $# -gt 0 ]; do
  case $1 in
    --device) device=$2; shift 2 ;;
    --dtype) dtype=$2; shift 2 ;;
    *) pilot=$1; shift ;;
  esac
done
pilot=$(realpath -m "${pilot:-$root/build/release/pilot}")
py=${PILOT_PYTHON:-$root/build/venv/bin/python}
[ -x "$pilot" ] || { echo "generation-kv: no pilot at $pilot (cmake --preset release && cmake --build --preset release)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export HF_HUB_OFFLINE=1 PYTHONWARNINGS=ignore
"$py" "$root/tests/e2e/data/generation_models.py" kvmodel models >/dev/null 2>&1
"$py" "$root/scripts/export-generator.py" models/kv --torchscript kv.pt --dtype "$dtype" >/dev/null 2>&1
mkdir inputs
for i in $(seq -w 1 16); do printf 'Prompt number %s of the benchmark' "$i" >inputs/p$i.txt; done
"$pilot" manifest inputs --out manifest.json >/dev/null
tok_sha=$(sha256sum models/tokenizer.json | cut -c1-64)
run() {  # run NAME MAX_NEW BATCH -> prints "peak_rss device_peak longest_prompt"
  cat >"$1.json" <<EOF2
{"manifest": "manifest.json",
 "stage": {"kind": "torchscript-generator", "model": "kv.pt",
           "tokenizer": {"file": "models/tokenizer.json", "sha256": "$tok_sha", "max_length": 64}},
 "generation": {"max_new_tokens": $2, "stop_token_ids": [0]},
 "device": "$device", "batch_size": $3, "threads": 2}
EOF2
  "$pilot" run --params "$1.json" --runs-dir runs --run-id "$1" >"$1.out" 2>&1 || { cat "$1.out" >&2; exit 1; }
  python3 - "runs/$1" <<'PY'
import json, sys
rep = json.load(open(f"{sys.argv[1]}/data/report.json"))
recs = [json.loads(l) for l in open(f"{sys.argv[1]}/data/results.jsonl")]
assert all(r["status"] == "accepted" and r["completion_tokens"] == 1 for r in recs), recs[0]
print(rep["peak_rss_mb"], rep["device_peak_memory_mb"] or 0, rep["generation"]["kv_cache"]["largest_batch_bytes"])
PY
}
read -r base_rss base_dev base_kv < <(run base 1 1)
printf '%-28s %14s %14s %8s\n' "context x batch" "predicted MiB" "measured MiB" "ratio"
for point in "1024 4" "4096 8" "8192 16"; do
  set -- $point
  read -r rss dev kv < <(run "c$1-b$2" $(($1 - 10)) "$2")
  if [ "$device" = cpu ]; then measured=$(python3 -c "print($rss - $base_rss)"); else measured=$(python3 -c "print($dev - $base_dev)"); fi
  python3 - "$1" "$2" "$kv" "$measured" "$dtype" <<'PY'
import sys
c, b, kv, measured = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4])
# The records' figure is the formula's at the batch's context: its longest prompt + max_new_tokens.
per_position = 2 * 4 * 8 * 64 * (4 if sys.argv[5] == "float32" else 2)
assert kv % (per_position * b) == 0, kv
c = kv // (per_position * b)
mib = kv / 2**20
print(f"{c:>6} positions x {b:>2} slots     {mib:14.1f} {measured / 1.048576:14.1f} {measured / 1.048576 / mib:8.3f}")
PY
done
echo "(measured: $( [ "$device" = cpu ] && echo "peak RSS" || echo "device peak") less the baseline run's, $(basename "$pilot") on $device, $dtype; MiB)"
