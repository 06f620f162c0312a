#!/usr/bin/env bash
# pilot's generation speed against Hugging Face's generate (docs/generation.md, "Speed against
# Hugging Face"). Not a test: it prints figures. Two models, 200 prompts each, greedy, fp32, on
# the CPU, the same batch and intra-op threads on both sides, end-of-sequence ignored so that
# every prompt gets its max_new_tokens (and once with it honoured, where in-flight batching shows):
#   - the parity test's GPT-2-style model (2 layers, width 64, random weights), 64 new tokens;
#   - the bundled reverse-gpt2 (context 48: 32 new tokens fit beside its prompts, not 64);
#   - a larger GPT-2-style model (4 layers, width 256), 64 new tokens: where the model's own
#     arithmetic outweighs the loop around it, and both sides converge.
# The reference: generate(use_cache=True) under inference_mode, its generate calls timed. pilot,
# static batching and in-flight batching apart: "run", the whole `pilot run` process (loading,
# warm-up, the bag and its verification included); "processing", the run's processing time
# (report.json's throughput: prechecks, tokenizing, decoding, journaling: what the reference's
# timed generate calls compare with); "model", the records' prefill and decode shares. The
# tokens must be identical but where the reference's top-2 margin is below 1e-4 (listed).
#
#   bench/generation-vs-hf.sh [--batch N] [--threads N] [PILOT]     (default build/release/pilot, 8, 2)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
batch=8
threads=2
pilot=""
while [ $# -gt 0 ]; do
  case $1 in
    --batch) batch=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    *) pilot=$1; shift ;;
  esac
done
pilot=$(realpath -m "${pilot:-$root/build/release/pilot}")
py=${PILOT_PYTHON:-$root/build/venv/bin/python}
[ -x "$pilot" ] || { echo "generation-vs-hf: no pilot at $pilot (cmake --preset release && cmake --build --preset release)" >&2; exit 2; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
export HF_HUB_OFFLINE=1 PYTHONWARNINGS=ignore
"$py" "$root/bench/generation-hf.py" setup . >/dev/null 2>&1
"$py" "$root/scripts/export-generator.py" gpt2 --torchscript gpt2.pt >/dev/null 2>&1
"$py" "$root/scripts/export-generator.py" gpt2-256 --torchscript gpt2-256.pt >/dev/null 2>&1
cp "$root/data/models/reverse-gpt2/model.pt" reverse.pt
tokenizer_of() { case $1 in gpt2*) echo "$work/tokenizer.json" ;; reverse) echo "$root/data/models/reverse-gpt2/tokenizer.json" ;; esac; }
model_dir_of() { case $1 in gpt2*) echo "$work/$1" ;; reverse) echo "$root/data/models/reverse-gpt2" ;; esac; }
prompts_of() { case $1 in gpt2*) echo gpt2-prompts ;; reverse) echo reverse-prompts ;; esac; }

pilot_run() {  # pilot_run MODEL MAX_NEW BATCHING [IGNORE_EOS] -> prints "wall_s processing_s model_s tokens ttft50 ttft99 tpot50 tpot99 occupancy"
  local model=$1 max_new=$2 batching=$3 ignore=${4:-true} tok
  tok=$(tokenizer_of "$model")
  local name=$model-$batching-$([ "$ignore" = true ] && echo false || echo true)
  cat >"$name.json" <<EOF2
{"manifest": "$(prompts_of "$model")/manifest.json",
 "stage": {"kind": "torchscript-generator", "model": "$model.pt",
           "tokenizer": {"file": "$tok", "sha256": "$(sha256sum "$tok" | cut -c1-64)", "max_length": 64}},
 "generation": {"max_new_tokens": $max_new, "ignore_eos": $ignore, "batching": "$batching"},
 "device": "cpu", "batch_size": $batch, "threads": $threads}
EOF2
  local t0 t1
  t0=$(date +%s.%N)
  "$pilot" run --params "$name.json" --runs-dir runs --run-id "$name" >"$name.out" 2>&1 ||
    { cat "$name.out" >&2; exit 1; }
  t1=$(date +%s.%N)
  python3 - "runs/$name" "$t0" "$t1" <<'PY'
import json, sys
r = json.load(open(f"{sys.argv[1]}/data/report.json"))
g = r["generation"]
print(float(sys.argv[3]) - float(sys.argv[2]), 200 / r["throughput_items_per_s"], (g["prefill_ms"] + g["decode_ms"]) / 1000, g["completion_tokens"],
      g["ttft_ms"]["p50"], g["ttft_ms"]["p99"], g["tpot_ms"]["p50"], g["tpot_ms"]["p99"], g["slot_occupancy"])
PY
}

echo "generation against Hugging Face generate: 200 prompts, greedy, fp32, CPU, batch $batch, $threads threads"
echo "pilot: $pilot"
printf '%-11s %-29s %9s %9s %11s %8s %15s %15s %6s\n' model side tokens seconds "tokens/s" "x HF" "TTFT p50/p99" "TPOT p50/p99" "occ."
for case in gpt2 reverse reverse-eos gpt2-256; do
  model=${case%-eos}
  eos=false
  [ "$case" = "$model" ] || eos=true
  max_new=64
  [ $model = reverse ] && max_new=32
  "$py" "$root/bench/generation-hf.py" hf "$(model_dir_of $model)" "$(tokenizer_of $model)" "$(prompts_of $model)/manifest.json" \
    $max_new "$batch" "$threads" "hf-$case.json" $([ $eos = true ] && echo --eos) 2>/dev/null
  read -r hf_s hf_n hf_t50 hf_t99 hf_p50 hf_p99 < <(python3 -c "
import json; r = json.load(open('hf-$case.json'))
print(r['seconds'], r['tokens'], r['ttft_ms']['p50'], r['ttft_ms']['p99'], r['tpot_ms']['p50'], r['tpot_ms']['p99'])")
  row() { python3 -c "
import sys; a = sys.argv[1:]
s, n = float(a[2]), int(a[3]); rate = n / s
print(f'{a[0]:<11} {a[1]:<29} {n:>9} {s:>9.2f} {rate:>11.0f} {rate / float(a[4]):>7.2f}x {float(a[5]):>7.2f}/{float(a[6]):<7.2f} {float(a[7]):>7.3f}/{float(a[8]):<7.3f} {a[9]:>6}')
" "$@"; }
  hf_rate=$(python3 -c "print($hf_n / $hf_s)")
  row $case "HF generate" "$hf_s" "$hf_n" "$hf_rate" "$hf_t50" "$hf_t99" "$hf_p50" "$hf_p99" "-"
  for batching in static in-flight; do
    read -r wall processing model_s n t50 t99 p50 p99 occ < <(pilot_run $model $max_new $batching $([ $eos = true ] && echo false || echo true))
    row $case "pilot $batching (run)" "$wall" "$n" "$hf_rate" "$t50" "$t99" "$p50" "$p99" "$(printf '%.2f' "$occ")"
    row $case "pilot $batching (processing)" "$processing" "$n" "$hf_rate" "$t50" "$t99" "$p50" "$p99" "$(printf '%.2f' "$occ")"
    row $case "pilot $batching (model)" "$model_s" "$n" "$hf_rate" "$t50" "$t99" "$p50" "$p99" "$(printf '%.2f' "$occ")"
    echo "  tokens against HF ($case, $batching): $("$py" "$root/bench/generation-hf.py" check "hf-$case.json" "runs/$model-$batching-$eos/data/results.jsonl")"
  done
done
