#!/usr/bin/env bash
# The bundled transformer's whole decision path (config/bert.json: langid-bert, a transformers
# BERT with its own WordPiece tokenizer, over the 12 bundled documents): the run as shipped,
# with its four expected rejections (one of them too many tokens) and its outputs against the
# transformers model in Python within 1e-4; a sweep grouped by tokens; the run again in
# bfloat16 through stage.options.dtype, compared with float32; a plan projected by tokens; and
# decide on all of it. Every folder verifies. Skips on Debian's libtorch 1.13, which cannot
# load a torch 2.11 export.
source "$(dirname "$0")/lib.sh"
[ "${PILOT_TORCH_FLAVOUR:-}" != debian ] || { echo "SKIP: Debian's libtorch 1.13 cannot load a torch 2.11 export"; exit 77; }
BERT=$SRC/data/models/langid-bert
verified() { run_pilot 0 verify "$1"; expect_in "$WORK/out" "verify: ok"; }

# 1. The run as the README gives it.
run_pilot 0 run --params "$SRC/config/bert.json" --runs-dir runs --run-id fp32
expect_in out "12 items, 8 accepted, 4 rejected"
expect_in out "accuracy on labelled items: 8/8 (100.0%); expected rejections met: 4/4"
verified runs/fp32
python3 - runs/fp32 <<'PY'
import json, sys
rec = {json.loads(l)["id"]: json.loads(l) for l in open(sys.argv[1] + "/data/results.jsonl")}
want = {"doc-09": "too_many_tokens", "doc-10": "category_not_allowed", "doc-11": "empty_input",
        "doc-12": "invalid_encoding"}
for i, r in rec.items():
    if i in want:
        assert r["status"] == "rejected" and r["reason"] == want[i], r
    else:
        assert r["status"] == "accepted" and r["category"] == r["expected"] and r["tokens"] <= 128, r
d = rec["doc-09"]
assert d["tokens"] > 128 and d["detail"].endswith("more than stage.tokenizer.max_length 128"), d
tok = json.load(open(sys.argv[1] + "/data/run.json"))["plan"]["model_contract"]["tokenizer"]
assert tok["max_length"] == 128 and tok["truncation"] == "reject" and tok["tokenizer"]["model"] == "WordPiece", tok
PY

# 2. The same texts through the production pipeline: transformers' tokenizer and model, eager.
if [ -z "${PILOT_PYTHON:-}" ]; then
  echo "SKIP (this part): no PILOT_PYTHON, so no comparison with the transformers pipeline"
else
  HF_HUB_OFFLINE=1 PYTHONWARNINGS=ignore "$PILOT_PYTHON" - "$BERT" "$SRC/data/pilot" runs/fp32 <<'PY' || fail "pilot's outputs differ from the transformers pipeline's"
import json, sys, torch
from transformers import AutoModelForSequenceClassification, PreTrainedTokenizerFast
model_dir, data, folder = sys.argv[1:]
tok = PreTrainedTokenizerFast(tokenizer_file=model_dir + "/tokenizer.json", pad_token="[PAD]")
model = AutoModelForSequenceClassification.from_pretrained(model_dir).eval()
worst = 0.0
for line in open(folder + "/data/results.jsonl"):
    r = json.loads(line)
    if r["status"] != "accepted":
        continue
    text = open("%s/doc-%s.txt" % (data, r["id"][4:]), encoding="utf-8").read()
    with torch.inference_mode():
        enc = tok(text, return_tensors="pt")
        p = model(**enc).logits.softmax(-1)[0]
    best = int(p.argmax())
    assert model.config.id2label[best] == r["category"], (r, best)
    assert enc["input_ids"].shape[1] == r["tokens"], (r, enc["input_ids"].shape)
    worst = max(worst, abs(float(p[best]) - r["confidence"]))
assert worst < 1e-4, worst
print("transformers pipeline: 8 items, largest |pilot - python| probability %.3g" % worst)
PY
fi

# Parameter files beside the work: the shipped one with its paths made absolute.
variant() {  # variant OUT DTYPE [MANIFEST]
  python3 - "$SRC/config/bert.json" "$1" "$2" "${3:-}" <<'PY'
import json, os, sys
src, out, dtype, manifest = sys.argv[1:]
p = json.load(open(src))
here = os.path.dirname(src)
p["manifest"] = manifest or os.path.normpath(os.path.join(here, p["manifest"]))
for key in ("model",):
    p["stage"][key] = os.path.normpath(os.path.join(here, p["stage"][key]))
p["stage"]["tokenizer"]["file"] = os.path.normpath(os.path.join(here, p["stage"]["tokenizer"]["file"]))
p["stage"]["options"]["dtype"] = dtype
json.dump(p, open(out, "w"), indent=2)
PY
}
variant fp32.json float32
variant bf16.json bfloat16

# 3. A sweep: its groups are cut by tokens; every cell agrees with batch 1.
run_pilot 0 sweep --params fp32.json --out sweep --groups 3 --batch-sizes 1,4 --repeats 1
expect_in out "every outcome at every batch size equals batch 1"
verified sweep
python3 - sweep/data runs/fp32 "$SRC/data/pilot" <<'PY'
import glob, json, os, sys
sweep, run, data = sys.argv[1:]
groups = json.load(open(sweep + "/groups.json"))
tokens = {json.loads(l)["id"]: json.loads(l).get("tokens") for l in open(run + "/data/results.jsonl")}
# Grouped by tokens: each group's bounds are its items' token counts (doc-09's 748 among them),
# the groups do not overlap, and a cut by bytes would have grouped these texts otherwise.
assert groups["measure"] == "features", groups["measure"]
got, last = [], -1
for g in groups["groups"]:
    counts = [tokens[i] for i in g["ids"]]
    assert (g["min_length"], g["max_length"]) == (min(counts), max(counts)), (g, counts)
    assert g["min_length"] > last, groups
    last = g["max_length"]
    got.append(sorted(g["ids"]))
assert groups["groups"][-1]["max_length"] == tokens["doc-09"], groups
ids = [i for g in groups["groups"] for i in g["ids"]]
size = {i: os.path.getsize(f"{data}/doc-{i[4:]}.txt") for i in ids}
by_bytes = sorted(ids, key=lambda i: (size[i], i))
cut, at = [], 0
for g in got:
    cut.append(sorted(by_bytes[at : at + len(g)]))
    at += len(g)
assert cut != got, ("the bytes would have made the same groups: the test cannot tell", got)
cells = [json.load(open(f)) for f in sorted(glob.glob(sweep + "/cells/*.json"))]
assert len(cells) == 6 and all(c["limit"] is None and c["tokens"] > 0 for c in cells), cells
PY

# 4. float32 against bfloat16 through stage.options.dtype: one change, the same categories.
run_pilot 0 run --params fp32.json --runs-dir runs --run-id f32
run_pilot 0 run --params bf16.json --runs-dir runs --run-id b16
verified runs/b16
python3 - runs/b16/data/run.json <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))["plan"]["model_contract"]
assert c["dtype"] == "bfloat16" and c["held_dtype"] == "bfloat16", c  # the weights really converted
PY
run_pilot 0 compare runs/f32 runs/b16 --tolerance 0.05 --out cmp
expect_in out "only dtype changed (float32 -> bfloat16)"
expect_in out "items: 12 of 12 agree"
python3 - cmp/compare.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
worst = d["items"]["max_confidence_difference"]
assert 0 < worst < 0.05, worst  # bfloat16 moved the probabilities, within the tolerance
print("float32 against bfloat16: largest probability change %.3g" % worst)
PY

# 5. A plan for a corpus of longer texts than the pilot's, none over max_length: projected by
# tokens, with the factor its token counts give.
mkdir corpus
for i in $(seq 1 30); do
  cat "$SRC/data/pilot/doc-04.txt" "$SRC/data/pilot/doc-05.txt" >"corpus/$i-a.txt"
  cat "$SRC/data/pilot/doc-01.txt" "$SRC/data/pilot/doc-08.txt" >"corpus/$i-b.txt"
done
run_pilot 0 manifest corpus --out corpus.json
cat >prices.json <<'EOT'
{"currency": "EUR", "cards": [
  {"name": "cpu-node", "class": "cpu", "memory_gb": 64, "cards_per_lot": 1, "lot_price": {"3": 30, "7": 60, "30": 200}}]}
EOT
run_pilot 0 plan --from runs/f32 --corpus-manifest corpus.json --prices prices.json --out plan.json
python3 - plan.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
p = d["projection"]
assert p["by"] == "tokens", p
assert p["tokenizer"]["max_length"] == 128 and p["tokenizer"]["truncation"] == "reject", p["tokenizer"]
c = p["corpus"]
assert c["items"] == c["sampled"] == 60 and c["over_max_length"] == 0 and c["unread"] == 0, c
assert abs(p["factor"] - c["mean_tokens"] / p["pilot"]["mean_tokens"]) < 1e-9, p
print("plan: corpus %.1f tokens a text, pilot %.1f: factor %.3f" % (c["mean_tokens"], p["pilot"]["mean_tokens"], p["factor"]))
PY
if [ -n "${PILOT_PYTHON:-}" ]; then  # the corpus' mean, counted by Hugging Face tokenizers
  "$PILOT_PYTHON" - "$BERT/tokenizer.json" corpus plan.json <<'PY'
import glob, json, sys
from tokenizers import Tokenizer
tok = Tokenizer.from_file(sys.argv[1])
counts = [len(tok.encode(open(f, encoding="utf-8").read()).ids) for f in sorted(glob.glob(sys.argv[2] + "/*.txt"))]
assert max(counts) <= 128, max(counts)
mean = json.load(open(sys.argv[3]))["projection"]["corpus"]["mean_tokens"]
assert abs(mean - sum(counts) / len(counts)) < 1e-9, (mean, sum(counts) / len(counts))
PY
fi

# 6. Decide on the fp32 run with every piece of evidence.
run_pilot 0 doctor --params fp32.json --json
cp out doctor.json
run_pilot 0 decide runs/f32 --doctor doctor.json --compare cmp/compare.json --sweep sweep --plan plan.json
proposal=$(sed -n 's/^proposal: //p' out)
[ -n "$proposal" ] || fail "no proposal"
run_pilot 0 decide runs/f32 --decision "$proposal" --reason "the bundled transformer held" \
  --doctor doctor.json --compare cmp/compare.json --sweep sweep --plan plan.json
expect_in runs/f32/decision.md "Projected by tokens"
verified runs/f32
echo "bert pilot: ok (proposal $proposal)"
echo PASS
