# Greedy parity with Hugging Face (docs/generation.md, "Parity"): a tiny GPT-2 and a tiny
# Llama-style model with grouped-query attention (4 heads over 2 key/value heads), random
# weights from transformers, are exported with the shipped scripts/export-generator.py (.pt2
# both, and the GPT-2 as TorchScript too). pilot decodes 24 prompts of 1 to about 40 tokens in
# padded batches of 4; every completion equals generate(do_sample=False) on the prompt alone,
# token for token, except at a near-tie (the reference's top-2 logit margin below 1e-4 in
# fp32), counted and listed. The .pt2 and TorchScript runs of the GPT-2 compare identical.
# Skips without the test venv.
source "$(dirname "$0")/lib.sh"
[ -n "${PILOT_PYTHON:-}" ] || { echo "SKIP: no PILOT_PYTHON (a build without the wheel's venv)"; exit 77; }
case ${PILOT_TORCH_VERSION:-} in 1.*) echo "SKIP: libtorch $PILOT_TORCH_VERSION (Debian's) cannot load a torch 2.11 TorchScript or .pt2"; exit 77 ;; esac
export HF_HUB_OFFLINE=1 PYTHONWARNINGS=ignore TORCHINDUCTOR_CACHE_DIR=${PILOT_INDUCTOR_CACHE:-$WORK/inductor-cache}
GM=$SRC/tests/e2e/data/generation_models.py
"$PILOT_PYTHON" "$GM" make models >make.log 2>&1 || { cat make.log; fail "could not make the models"; }
start=$SECONDS
for m in gpt2 llama; do
  "$PILOT_PYTHON" "$SRC/scripts/export-generator.py" models/$m --pt2 $m.pt2 >>export.log 2>&1 ||
    { cat export.log; fail "export-generator.py --pt2 failed for $m"; }
done
"$PILOT_PYTHON" "$SRC/scripts/export-generator.py" models/gpt2 --torchscript gpt2.pt >>export.log 2>&1 ||
  { cat export.log; fail "export-generator.py --torchscript failed"; }
echo "export: two .pt2 packages and a TorchScript file in $((SECONDS - start)) s"

mkdir inputs
n=0
while IFS= read -r line && [ $n -lt 24 ]; do
  [ -n "${line// /}" ] || continue
  n=$((n + 1))
  # lengths from one word to a long line
  words=$(( (n % 8) * 2 + 1 ))
  printf '%s' "$(echo "$line" | tr -s ' ' | cut -d' ' -f1-$words)" >"inputs/$(printf 'p%02d.txt' $n)"
done < <(sed -n '30,200p' /usr/share/common-licenses/GPL-3)
run_pilot 0 manifest inputs --out manifest.json
TOK=$WORK/models/tokenizer.json
params() {  # params FILE KIND MODEL
  local pin=""
  [ "$2" = aoti-generator ] && pin=", \"model_sha256\": \"$(sha256sum "$3" | cut -c1-64)\""
  cat >"$1" <<EOF2
{
  "manifest": "manifest.json",
  "stage": {"kind": "$2", "model": "$WORK/$3"$pin,
            "tokenizer": {"file": "$TOK", "sha256": "$(sha256sum "$TOK" | cut -c1-64)", "max_length": 80}},
  "generation": {"max_new_tokens": 24},
  "device": "cpu",
  "batch_size": 4
}
EOF2
}
params gpt2-pt2.json aoti-generator gpt2.pt2
params llama-pt2.json aoti-generator llama.pt2
params gpt2-ts.json torchscript-generator gpt2.pt
for run in gpt2-pt2 llama-pt2 gpt2-ts; do
  run_pilot 0 run --params $run.json --runs-dir runs --run-id $run
  expect_in out "24 items, 24 accepted, 0 rejected"
  run_pilot 0 verify runs/$run
  model=${run%%-*}
  "$PILOT_PYTHON" "$GM" compare models/$model "$TOK" manifest.json runs/$run/data/results.jsonl 24 \
    >$run.parity 2>$run.err || { cat $run.err $run.parity; fail "$run differs from generate()"; }
  echo "$run: $(cat $run.parity)"
done
python3 - runs <<'PY'
import json, sys
for run in ("gpt2-pt2", "llama-pt2"):
    recs = [json.loads(l) for l in open(f"{sys.argv[1]}/{run}/data/results.jsonl")]
    assert len({r["tokens"] for r in recs}) >= 8, "the prompts' lengths do not vary enough"
    ends = {r["finish_reason"] for r in recs}
    assert ends == {"eos", "length"}, f"{run}: the completions do not end both ways: {ends}"
PY
run_pilot 0 compare runs/gpt2-pt2 runs/gpt2-ts
