# The way users export a Hugging Face transformers model, tested: the lines docs/models.md gives
# ("A Hugging Face transformers model") are taken from the page and run as written, on a tiny
# BERT classifier saved with save_pretrained. They write model.pt (torch.jit.trace with SDPA,
# inside a scripted module that carries the contract) and model.pt2 (torch.export, then
# AOTInductor). Both run through pilot with the model's tokenizer.json in padded batches, and
# every item's category and probability match the production pipeline in Python (transformers'
# fast tokenizer, then the eager model on each text alone) within 1e-4. Skips without the test
# venv.
source "$(dirname "$0")/lib.sh"
[ -n "${PILOT_PYTHON:-}" ] || { echo "SKIP: no PILOT_PYTHON (a build without the wheel's venv)"; exit 77; }
[ "${PILOT_TORCH_FLAVOUR:-}" != debian ] || { echo "SKIP: Debian's libtorch 1.13 cannot load a torch 2.11 export"; exit 77; }
export HF_HUB_OFFLINE=1 PYTHONWARNINGS=ignore TORCHINDUCTOR_CACHE_DIR=$WORK/inductor-cache
TOK=$SRC/tests/tokenizer/data/tiny-bert.json
MAXLEN=64
"$PILOT_PYTHON" "$SRC/tests/e2e/data/make_transformers_model.py" my-model "$TOK" >py.log 2>&1 ||
  { cat py.log; fail "could not make the transformers model"; }

# The export lines, exactly as the page gives them.
sed -n '/<!-- export-transformers:begin -->/,/<!-- export-transformers:end -->/p' "$SRC/docs/models.md" |
  sed -e '1,2d' -e '$d' | sed '$d' >export.py
grep -q '^torch._inductor.aoti_compile_and_package' export.py || { cat export.py; fail "no export lines found in docs/models.md"; }
start=$SECONDS
"$PILOT_PYTHON" export.py >export.log 2>&1 || { cat export.log; fail "the export lines of docs/models.md failed"; }
echo "export: model.pt and model.pt2 in $((SECONDS - start)) s"
[ -s model.pt ] && [ -s model.pt2 ] || fail "the export lines wrote no model.pt or model.pt2"

# 40 texts: license lines of every length, mixed scripts, and paragraphs over 64 tokens.
mkdir inputs
n=0
while IFS= read -r line && [ $n -lt 30 ]; do
  [ -n "${line// /}" ] || continue
  n=$((n + 1)); printf '%s' "$line" >"inputs/$(printf 'line-%02d' $n).txt"
done </usr/share/common-licenses/GPL-3
printf 'Caf\xc3\xa9 na\xc3\xafve \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e [MASK] \xf0\x9f\x98\x80' >inputs/mixed-1.txt
printf '\xd0\x9f\xd1\x80\xd0\xb8\xd0\xb2\xd0\xb5\xd1\x82, \xce\xba\xcf\x8c\xcf\x83\xce\xbc\xce\xb5 \xd8\xb3\xd9\x84\xd8\xa7\xd9\x85' >inputs/mixed-2.txt
printf 'GNU' >inputs/short-1.txt
printf '\t  spaced \n\n out  ' >inputs/short-2.txt
for i in 1 2 3 4 5 6; do
  sed -n "$((i * 40)),$((i * 40 + 12))p" /usr/share/common-licenses/GPL-3 | tr '\n' ' ' >"inputs/para-$i.txt"
done
[ "$(ls inputs | wc -l)" = 40 ] || fail "expected 40 input texts, made $(ls inputs | wc -l)"
run_pilot 0 manifest inputs --out manifest.json
"$PILOT_PYTHON" "$SRC/tests/e2e/data/make_transformers_model.py" --reference my-model "$TOK" $MAXLEN inputs ref.json \
  >>py.log 2>&1 || { cat py.log; fail "the Python pipeline failed"; }

tok_sha=$(sha256sum "$TOK" | cut -c1-64)
params() {  # params FILE KIND MODEL [EXTRA]
  cat >"$1" <<EOF2
{
  "manifest": "manifest.json",
  "stage": {"kind": "$2", "model": "$WORK/$3"${4:-},
            "tokenizer": {"file": "$TOK", "sha256": "$tok_sha", "max_length": $MAXLEN,
                          "truncation": "truncate"}},
  "allowed_categories": ["neg", "neu", "pos"],
  "device": "cpu",
  "batch_size": 4,
  "prepare_threads": 2
}
EOF2
}
params ts.json torchscript-classifier model.pt
params pt2.json aoti-classifier model.pt2 ", \"model_sha256\": \"$(sha256sum model.pt2 | cut -c1-64)\""
for kind in ts pt2; do
  run_pilot 0 run --params $kind.json --runs-dir runs --run-id $kind
  expect_in out "40 items, 40 accepted, 0 rejected"
  run_pilot 0 verify runs/$kind
done

python3 - runs ref.json $MAXLEN <<'PY'
import json, sys
runs, ref, maxlen = sys.argv[1], json.load(open(sys.argv[2])), int(sys.argv[3])
labels = ref["labels"]
truncated = sum(1 for r in ref["items"].values() if r["tokens"] == maxlen)
assert truncated >= 3, f"only {truncated} texts reach max_length: the test lost its long texts"
for kind, name in (("ts", "TorchScript"), ("pt2", ".pt2")):
    rec = {json.loads(l)["id"]: json.loads(l) for l in open(f"{runs}/{kind}/data/results.jsonl")}
    assert sorted(rec) == sorted(ref["items"]), (sorted(rec), sorted(ref["items"]))
    worst = 0.0
    for item, want in ref["items"].items():
        r, probs = rec[item], want["probabilities"]
        best = max(range(len(probs)), key=probs.__getitem__)
        assert r["status"] == "accepted" and r["category"] == labels[best], (kind, item, r, want)
        worst = max(worst, abs(r["confidence"] - probs[best]))
        assert min(r["tokens"], maxlen) == want["tokens"], (kind, item, r, want)
        assert r.get("truncated", False) == (r["tokens"] > maxlen), (kind, item, r)
    assert worst < 1e-4, (kind, worst)
    print("%s: 40 items, largest |pilot - python| probability %.3g" % (name, worst))
PY
echo PASS
