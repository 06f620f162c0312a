# A model that takes token ids (input_kind "token_ids") runs with its tokenizer.json
# (stage.tokenizer): pilot tokenizes in its prepare workers, pads each batch, and its outputs
# equal the Python pipeline's (Hugging Face tokenizers, then the model on each text alone)
# within 1e-5. A text over max_length is rejected too_many_tokens with its count (truncation
# "reject"), or accepted with truncated: true ("truncate"); results carry `tokens`, report.json
# the token percentiles; run.json records the tokenizer; compare names a tokenizer change; the
# folders verify; and every bad tokenizer setting is refused, naming the key or file, with
# nothing written. Skips without the test venv.
source "$(dirname "$0")/lib.sh"
[ -n "${PILOT_PYTHON:-}" ] || { echo "SKIP: no PILOT_PYTHON (a build without the wheel's venv)"; exit 77; }
TOK=$SRC/tests/tokenizer/data/tiny-bert.json
"$PILOT_PYTHON" "$SRC/tests/e2e/data/make_token_model.py" model.pt 400 2>py.err || { cat py.err; fail "could not script the model"; }

mkdir inputs
printf 'The Program is free software.' >inputs/a.txt
printf 'Caf\xc3\xa9 na\xc3\xafve \xe6\x97\xa5\xe6\x9c\xac [MASK]' >inputs/b.txt
printf 'You may convey verbatim copies of the Program source code as you receive it, in any medium, provided that you conspicuously publish an appropriate copyright notice.' >inputs/c.txt
printf 'GNU' >inputs/d.txt
printf 'This License applies to any program or other work which contains a notice.' >inputs/e.txt
run_pilot 0 manifest inputs --out manifest.json

params() {  # params FILE TRUNCATION MAX_LENGTH [EXTRA]
  cat >"$1" <<EOF2
{
  "manifest": "manifest.json",
  "stage": {"kind": "torchscript-classifier", "model": "$WORK/model.pt",
            "tokenizer": {"file": "$TOK", "sha256": "$(sha256sum "$TOK" | cut -c1-64)",
                          "max_length": $3, "truncation": "$2"${4:-}}},
  "allowed_categories": ["neg", "pos"],
  "device": "cpu",
  "batch_size": 3,
  "prepare_threads": 2
}
EOF2
}

# reject: c.txt (36 tokens) is over 24.
params reject.json reject 24
run_pilot 0 run --params reject.json --runs-dir runs --run-id reject
expect_in out "5 items, 4 accepted, 1 rejected"
expect_in out "verify: ok"
run_pilot 0 verify runs/reject
"$PILOT_PYTHON" "$SRC/tests/e2e/data/make_token_model.py" --reference model.pt "$TOK" 100000 inputs ref-whole.json
python3 - runs/reject ref-whole.json <<'PY'
import json, sys
folder, ref = sys.argv[1], json.load(open(sys.argv[2]))
rec = {json.loads(l)["id"]: json.loads(l) for l in open(f"{folder}/data/results.jsonl")}
c = rec["c.txt"]
assert c["status"] == "rejected" and c["reason"] == "too_many_tokens", c
assert c["detail"] == "%d tokens, more than stage.tokenizer.max_length 24" % ref["c.txt"]["tokens"], c
assert c["tokens"] == ref["c.txt"]["tokens"] and "truncated" not in c, c
worst = 0.0
for name in "abde":
    r, want = rec[name + ".txt"], ref[name + ".txt"]
    assert r["status"] == "accepted" and r["category"] == want["label"], (r, want)
    worst = max(worst, abs(r["confidence"] - want["confidence"]))
    assert r["tokens"] == want["tokens"] and "truncated" not in r, (r, want)
assert worst < 1e-5, worst
print("tokenizer.json: largest |pilot - python| confidence %.3g" % worst)
rep = json.load(open(f"{folder}/data/report.json"))
t = rep["tokens"]
assert t["items"] == 5 and t["truncated"] == 0 and t["max"] == ref["c.txt"]["tokens"], t
assert rep["by_reason"] == {"too_many_tokens": 1}, rep["by_reason"]
plan = json.load(open(f"{folder}/data/run.json"))["plan"]["model_contract"]
tk = plan["tokenizer"]
assert tk["max_length"] == 24 and tk["truncation"] == "reject" and tk["pad_id"] == 0, tk
assert tk["tokenizer"]["model"] == "WordPiece" and tk["tokenizer"]["unicode"]["normalization"] == "9.0", tk
assert plan["input_kind"] == "token_ids", plan
PY
expect_in runs/reject/data/report.md "Tokens per item (5 items)"

# truncate: c.txt is accepted, cut to 24 tokens, as tokenizers' enable_truncation(24) cuts it.
params truncate.json truncate 24 ', "pad_to_multiple_of": 8'
run_pilot 0 run --params truncate.json --runs-dir runs --run-id truncate
expect_in out "5 items, 5 accepted, 0 rejected"
run_pilot 0 verify runs/truncate
"$PILOT_PYTHON" "$SRC/tests/e2e/data/make_token_model.py" --reference model.pt "$TOK" 24 inputs ref-24.json
python3 - runs/truncate ref-24.json ref-whole.json <<'PY'
import json, sys
folder, ref, whole = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
rec = {json.loads(l)["id"]: json.loads(l) for l in open(f"{folder}/data/results.jsonl")}
for name, want in ref.items():
    r = rec[name]
    assert r["status"] == "accepted" and r["category"] == want["label"], (r, want)
    assert abs(r["confidence"] - want["confidence"]) < 1e-5, (r, want)
    assert r["tokens"] == whole[name]["tokens"], (r, whole[name])
    assert r.get("truncated", False) == (whole[name]["tokens"] > 24), r
assert json.load(open(f"{folder}/data/report.json"))["tokens"]["truncated"] == 1
PY

# A sweep groups by tokens and pads each batch: every cell gives tokens/s and the padding waste,
# which the folder's renderings show and verify derives again.
run_pilot 0 sweep --params truncate.json --batch-sizes 1,2,4 --groups 2 --repeats 1 --out sweep-tok
expect_in err "tokens/s, padding"
run_pilot 0 verify sweep-tok
python3 - sweep-tok <<'PY'
import json, sys
s = json.load(open(sys.argv[1] + "/data/sweep.json"))
assert s["measure"] == "features", s["measure"]
cells = {(c["group"], c["batch_size"]): c for c in s["cells"]}
for (g, b), c in cells.items():
    assert 0 < c["tokens"] <= c["padded_tokens"], c
    assert abs(c["padding_waste"] - (1 - c["tokens"] / c["padded_tokens"])) < 1e-12, c
    assert c["tokens_per_second"] > 0, c
    if b == 1:  # one text a batch, padded to a multiple of 8 (pad_to_multiple_of)
        assert c["padded_tokens"] % 8 == 0, c
# The same group's texts, whatever the batch size (one that does not cycle them): the same tokens.
for g in {g for g, _ in cells}:
    assert len({c["tokens"] for (gg, _), c in cells.items() if gg == g and not c["cycled"]}) == 1, cells
assert max(c["padding_waste"] for c in cells.values()) > 0, cells
PY
expect_in sweep-tok/data/sweep.md "## Tokens"
expect_in sweep-tok/data/sweep.md "tokens, special tokens included"
expect_in sweep-tok/data/sweep.csv "tokens_per_second,padding_waste_percent"

# plan projects by tokens: the pilot's inputs and the corpus', tokenized with the run's own
# tokenizer, each item counting its tokens up to max_length (as tokenizers counts them); compute
# hours scale by the corpus' mean over the pilot's. decide takes the plan and checks that sum.
mkdir corpus
for i in $(seq 1 40); do
  if [ $((i % 4)) = 0 ]; then printf 'GNU %d' "$i"; else printf 'You may convey verbatim copies of the Program source code as you receive it %d, in any medium.' "$i"; fi >corpus/c$i.txt
done
run_pilot 0 manifest corpus --out corpus.json
cat >prices.json <<'EOF2'
{"currency": "EUR", "cards": [{"name": "node", "class": "cpu", "memory_gb": 64, "cards_per_lot": 1, "lot_price": {"3": 30, "7": 60}}]}
EOF2
run_pilot 0 plan --from runs/reject --corpus-manifest corpus.json --prices prices.json --out plan.json
expect_in out "projected by tokens ($TOK, max_length 24)"
# The corpus' token counts as Hugging Face tokenizers gives them (no model: torch not imported).
HF_HUB_OFFLINE=1 RAYON_NUM_THREADS=1 "$PILOT_PYTHON" - "$TOK" corpus ref-corpus.json <<'PY'
import json, os, sys
from tokenizers import Tokenizer
tok = Tokenizer.from_file(sys.argv[1])
names = sorted(os.listdir(sys.argv[2]))
counts = {n: {"tokens": len(tok.encode(open(os.path.join(sys.argv[2], n), encoding="utf-8").read()).ids)} for n in names}
json.dump(counts, open(sys.argv[3], "w"))
PY
python3 - plan.json ref-whole.json ref-corpus.json <<'PY'
import json, sys
plan, pilot, corpus = (json.load(open(f)) for f in sys.argv[1:4])
p = plan["projection"]
assert p["by"] == "tokens" and p["tokenizer"]["max_length"] == 24, p
pilot_mean = sum(min(v["tokens"], 24) for v in pilot.values()) / len(pilot)
corpus_mean = sum(min(v["tokens"], 24) for v in corpus.values()) / len(corpus)
assert p["pilot"]["mean_tokens"] == pilot_mean and p["corpus"]["mean_tokens"] == corpus_mean, (p, pilot_mean, corpus_mean)
assert p["pilot"]["raw_tokens"] == sum(v["tokens"] for v in pilot.values()), p
assert p["corpus"]["over_max_length"] == sum(v["tokens"] > 24 for v in corpus.values()) > 0, p
factor = corpus_mean / pilot_mean
assert abs(p["factor"] - factor) < 1e-12, (p["factor"], factor)
for row in plan["plans"]:
    want = 40 * factor / (row["items_per_s_per_card"] * row["cards"]) / 3600
    assert abs(row["compute_hours"] - want) <= 1e-9 * want, (row, want)
print("plan by tokens: factor %.4f (corpus %.2f, pilot %.2f tokens an item)" % (factor, corpus_mean, pilot_mean))
PY
run_pilot 0 decide runs/reject --plan plan.json --decision revise-config --reason "plan by tokens"
expect_in runs/reject/decision.md "Projected by tokens"
run_pilot 0 verify runs/reject
# A plan edited to ignore the factor is refused by decide.
python3 - plan.json edited.json <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["projection"]["factor"] = 1.0
json.dump(d, open(sys.argv[2], "w"))
PY
run_pilot 2 decide runs/reject --plan edited.json --decision go --reason x
expect_in err "projection.factor 1"
# A sweep folder plans by tokens too.
run_pilot 0 plan --from sweep-tok --corpus-manifest corpus.json --prices prices.json
expect_in out "projected by tokens"
# An item count cannot be tokenized: by items, saying why.
run_pilot 0 plan --from runs/reject --corpus-items 1000 --prices prices.json
expect_in out "the plan projects by items: the corpus is an item count"
# The tokenizer gone from where the run found it: by items, naming --tokenizer; given back
# with --tokenizer, by tokens; another file (another sha256) is refused, and --out is not
# written (a folder without a tokenizer: e2e.plan).
cp "$TOK" moved.json
sed -e "s|$TOK|$WORK/moved.json|" reject.json >moved-params.json
run_pilot 0 run --params moved-params.json --runs-dir runs --run-id moved
# Another file in its place: its digest is not repeated (a copied folder may name any file).
cp "$SRC/tests/tokenizer/data/tiny-roberta.json" moved.json
run_pilot 0 plan --from runs/moved --corpus-manifest corpus.json --prices prices.json
expect_in out "not the file the run pinned by sha256"
expect_not_in out "$(sha256sum moved.json | cut -c1-64)"
rm moved.json
run_pilot 0 plan --from runs/moved --corpus-manifest corpus.json --prices prices.json
expect_in out "the plan projects by items: the tokenizer the run used could not be loaded"
expect_in out "give --tokenizer FILE"
run_pilot 0 plan --from runs/moved --corpus-manifest corpus.json --prices prices.json --tokenizer "$TOK"
expect_in out "projected by tokens"
# A tokenizer path with a terminal escape in its name is printed escaped.
esc_name=$(printf 'tok\033[2J.json')
cp "$TOK" "$esc_name"
run_pilot 0 plan --from runs/moved --corpus-manifest corpus.json --prices prices.json --tokenizer "$esc_name"
expect_in out "projected by tokens"
! grep -q $'\033' out || fail "plan printed a raw escape from the tokenizer's path"
run_pilot 2 plan --from runs/moved --corpus-manifest corpus.json --prices prices.json \
  --tokenizer "$SRC/tests/tokenizer/data/tiny-roberta.json" --out refused.json
expect_in err "stage.tokenizer.sha256 pins"
[ ! -e refused.json ] || fail "a refused plan wrote --out"
# A FIFO, a folder or a link to a device as --tokenizer: refused at once (exit 2), naming it.
mkfifo tok.fifo
mkdir tok.dir
ln -s /dev/zero tok.zero
for t in tok.fifo tok.dir tok.zero; do
  rc=0
  timeout -s KILL 20 "$PILOT" plan --from runs/moved --corpus-manifest corpus.json --prices prices.json \
    --tokenizer "$t" --out refused.json >out 2>err || rc=$?
  [ "$rc" = 2 ] || { cat err; fail "--tokenizer $t exited $rc, expected 2"; }
  expect_in err "$t"
  [ ! -e refused.json ] || fail "a refused plan wrote --out"
done

# Killed after two of five batches (writes 8 and 9 are their journal lines), then resumed: the
# folder verifies and every record, tokens and truncated included, equals a straight run's.
sed 's/"batch_size": 3/"batch_size": 1/' truncate.json >one.json
run_pilot 0 run --params one.json --runs-dir runs --run-id straight
rc=0
PILOT_TEST_KILL_AFTER_WRITE=9 "$PILOT" run --params one.json --runs-dir runs --run-id killed --quiet >/dev/null 2>err.txt || rc=$?
[ "$rc" -eq 137 ] || { cat err.txt; fail "the tokenized run was not killed at write 9 (exit $rc)"; }
run_pilot 0 resume runs/killed
run_pilot 0 verify runs/killed
python3 - runs/straight runs/killed <<'PY'
import json, sys
def records(folder):
    out = {}
    for line in open(folder + "/data/results.jsonl"):
        r = json.loads(line)
        out[r["id"]] = {k: r.get(k) for k in ("status", "category", "confidence", "reason", "tokens", "truncated")}
    return out
a, b = records(sys.argv[1]), records(sys.argv[2])
assert len(a) == 5 and a == b, (a, b)
assert json.load(open(sys.argv[2] + "/data/report.json"))["tokens"]["truncated"] == 1
PY

# compare names the settings that changed; another tokenizer file is "tokenizer".
run_pilot 1 compare runs/reject runs/truncate --out cmp1
expect_in cmp1/compare.md "stage.tokenizer.truncation"
cp "$SRC/tests/tokenizer/data/tiny-roberta.json" other.json
sed -e "s|$TOK|$WORK/other.json|" -e "s|$(sha256sum "$TOK" | cut -c1-64)|$(sha256sum other.json | cut -c1-64)|" reject.json >other-params.json
run_pilot 0 run --params other-params.json --runs-dir runs --run-id other
run_pilot 1 compare runs/reject runs/other --out cmp2
expect_in cmp2/compare.md "tokenizer"
python3 - cmp2/compare.json <<'PY'
import json, sys
names = [c["name"] for c in json.load(open(sys.argv[1]))["changes"]]
assert "tokenizer" in names and "stage.tokenizer.file" not in names and "stage.tokenizer.sha256" not in names, names
PY

# A SentencePiece .model (with </s>): libsentencepiece in its own symbol scope beside libtorch.
SPM=$SRC/tests/tokenizer/data/tiny.model
sed -e "s|$TOK|$SPM|" -e "s|$(sha256sum "$TOK" | cut -c1-64)|$(sha256sum "$SPM" | cut -c1-64)|" \
    -e 's|"max_length": 24, "truncation": "reject"|"max_length": 64, "truncation": "reject", "add_eos": true|' reject.json >spm.json
run_pilot 0 run --params spm.json --runs-dir runs --run-id spm
expect_in out "5 items, 5 accepted, 0 rejected"
run_pilot 0 verify runs/spm
"$PILOT_PYTHON" "$SRC/tests/e2e/data/make_token_model.py" --reference model.pt "$SPM" 64 inputs ref-spm.json
python3 - runs/spm ref-spm.json <<'PY'
import json, sys
folder, ref = sys.argv[1], json.load(open(sys.argv[2]))
rec = {json.loads(l)["id"]: json.loads(l) for l in open(f"{folder}/data/results.jsonl")}
worst = 0.0
for name, want in ref.items():
    r = rec[name]
    assert r["category"] == want["label"], (r, want)
    worst = max(worst, abs(r["confidence"] - want["confidence"]))
    assert r["tokens"] == want["tokens"], (r, want)
assert worst < 1e-5, worst
print("sentencepiece: largest |pilot - python| confidence %.3g" % worst)
tk = json.load(open(f"{folder}/data/run.json"))["plan"]["model_contract"]["tokenizer"]
assert tk["format"] == "sentencepiece" and tk["special_tokens_added"] == 1, tk
PY

# The same .model with XLM-R's ids (stage.tokenizer.ids "fairseq", <s> and </s>): run.json
# records it and the pad id is <pad>'s, 1.
sed -e 's|"add_eos": true|"add_bos": true, "add_eos": true, "ids": "fairseq"|' spm.json >xlmr.json
run_pilot 0 run --params xlmr.json --runs-dir runs --run-id xlmr
expect_in out "5 items, 5 accepted, 0 rejected"
python3 - runs/xlmr <<'PY'
import json, sys
tk = json.load(open(sys.argv[1] + "/data/run.json"))["plan"]["model_contract"]["tokenizer"]
assert tk["ids"] == "fairseq" and tk["pad_id"] == 1 and tk["special_tokens_added"] == 2, tk
assert tk["tokenizer"]["ids"] == "fairseq", tk
PY

# Refusals: each names what is at fault, and no run folder is made.
before=$(ls runs | wc -l)
# fairseq ids for a tokenizer.json, and for a .model without XLM-R's layout (T5's: <pad> 0,
# </s> 1, <unk> 2).
params bad-ids.json reject 24 ', "ids": 5'
run_pilot 2 run --params bad-ids.json --runs-dir runs
expect_in err "stage.tokenizer.ids"
params fairseq-json.json reject 24 ', "ids": "fairseq"'
run_pilot 2 run --params fairseq-json.json --runs-dir runs
expect_in err "stage.tokenizer.ids"
expect_in err "applies to a SentencePiece model only"
"$PILOT_PYTHON" - <<'PY'
import sentencepiece as spm
spm.SentencePieceTrainer.train(input="/usr/share/common-licenses/GPL-3", model_prefix="t5like", vocab_size=200,
                               pad_id=0, eos_id=1, unk_id=2, bos_id=-1, num_threads=1, minloglevel=2)
PY
sed -e "s|$SPM|$WORK/t5like.model|" -e "s|$(sha256sum "$SPM" | cut -c1-64)|$(sha256sum t5like.model | cut -c1-64)|" xlmr.json >t5like.json
run_pilot 2 run --params t5like.json --runs-dir runs
expect_in err "stage.tokenizer.ids 'fairseq' needs XLM-R's layout (<unk> 0, <s> 1, </s> 2); this model has <unk> 2, <s> -1, </s> 1"
expect_in err "t5like.model"
sed 's/"sha256": "[0-9a-f]*"/"sha256": "'"$(printf '0%.0s' {1..64})"'"/' reject.json >bad-pin.json
run_pilot 2 run --params bad-pin.json --runs-dir runs
expect_in err "but stage.tokenizer.sha256 pins"
expect_in err "tiny-bert.json"
params no-max.json reject 24
sed -i 's/"max_length": 24, //' no-max.json
run_pilot 2 run --params no-max.json --runs-dir runs
expect_in err "stage.tokenizer.max_length"
params bad-trunc.json cut 24
run_pilot 2 run --params bad-trunc.json --runs-dir runs
expect_in err "stage.tokenizer.truncation"
params bad-pad.json reject 24 ', "pad_token": "<nope>"'
run_pilot 2 run --params bad-pad.json --runs-dir runs
expect_in err "stage.tokenizer.pad_token"
params bad-key.json reject 24 ', "padding": "max_length"'
run_pilot 2 run --params bad-key.json --runs-dir runs
expect_in err "stage.tokenizer"
params tiny-max.json reject 2
run_pilot 2 run --params tiny-max.json --runs-dir runs
expect_in err "leaves no room beside the 2 special tokens"
printf '{"model": {"type": "WordLevel", "vocab": {}}}' >unigram.json
sed -e "s|$TOK|$WORK/unigram.json|" -e "s|$(sha256sum "$TOK" | cut -c1-64)|$(sha256sum unigram.json | cut -c1-64)|" reject.json >unigram-params.json
run_pilot 2 run --params unigram-params.json --runs-dir runs
expect_in err "the model 'WordLevel' is not implemented by pilot"
expect_in err "unigram.json key model.type"
# A tokenizer for a model that does not take token ids, and none for one that does.
python3 - reject.json <<'PY'
import json, sys
p = json.load(open(sys.argv[1])); del p["stage"]["tokenizer"]
json.dump(p, open("no-tok.json", "w"))
PY
run_pilot 2 run --params no-tok.json --runs-dir runs
expect_in err "the model takes token_ids, and the parameters give no stage.tokenizer"
[ "$(ls runs | wc -l)" -eq "$before" ] || fail "a refused run left a folder"
echo PASS
