# The bundled generation pilot (config/generate.json: reverse-gpt2 on data/generate's 12
# prompts) through the real binary: 9 completions that match their expected text exactly and 3
# prompts rejected for their stated reasons (prompt_too_long, invalid_encoding,
# too_many_tokens); every completion's record (text, ids, finish reason, TTFT, TPOT, KV bytes);
# the report's generation figures; run.json's settings; verify; a kill and resume that give the
# same completions; stop strings and stop ids; compare naming a change of max_new_tokens; and
# the settings and models refused with the key or file named and nothing written. With the test
# venv, Hugging Face's generate gives the same tokens on every accepted prompt, and models that
# break the contract are refused or their items rejected, never a crash.
source "$(dirname "$0")/lib.sh"
case ${PILOT_TORCH_VERSION:-} in 1.*) echo "SKIP: libtorch $PILOT_TORCH_VERSION (Debian's) cannot load a torch 2.11 TorchScript or .pt2"; exit 77 ;; esac
copy_project
P=proj/config/generate.json

run_pilot 0 run --params $P --runs-dir runs --run-id g
expect_in out "12 items, 9 accepted, 3 rejected"
expect_in out "rejected prompt_too_long        1"
expect_in out "rejected invalid_encoding       1"
expect_in out "rejected too_many_tokens        1"
expect_in out "exact match on labelled prompts: 9/9 (100.0%); expected rejections met: 3/3"
expect_in out "generation: 60 prompt + 60 completion tokens; TTFT p50"
expect_in out "verify: ok"
run_pilot 0 verify runs/g
python3 - runs/g proj/data/generate/manifest.json <<'PY'
import json, sys
folder, manifest = sys.argv[1], json.load(open(sys.argv[2]))
rec = {json.loads(l)["id"]: json.loads(l) for l in open(f"{folder}/data/results.jsonl")}
for item in manifest["items"]:
    r = rec[item["id"]]
    if "expected" in item:
        assert r["status"] == "accepted" and r["completion"] == item["expected"], r
        assert r["finish_reason"] == "eos" and r["completion_ids"][-1] == 256, r
        assert r["completion_tokens"] == len(item["expected"]) + 1 == len(r["completion_ids"]), r
        assert r["tokens"] == len(item["expected"]) + 1, r  # the word and "="
        assert r["ttft_ms"] > 0 and r["tpot_ms"] > 0 and r["prefill_ms"] > 0 and r["decode_ms"] > 0, r
        # 2 x layers 2 x heads 4 x head dim 16 x float32 x the batch's slots x (longest prompt + 16)
        assert r["kv_cache_bytes"] % (2 * 2 * 4 * 16 * 4) == 0 and r["kv_cache_bytes"] > 0, r
    else:
        assert r["status"] == "rejected" and r["reason"] == item["expected_rejection"], r
long = rec["prompt-10"]["detail"]
assert long == "36 prompt tokens plus generation.max_new_tokens 16 exceed the model's context of 48", long
assert rec["prompt-12"]["detail"] == "46 tokens, more than stage.tokenizer.max_length 40", rec["prompt-12"]
rep = json.load(open(f"{folder}/data/report.json"))
g = rep["generation"]
assert rep["output_kind"] == "generation" and g["completions"] == 9, rep
assert g["prompt_tokens"] == 60 and g["completion_tokens"] == 60 and g["finish_reasons"] == {"eos": 9}, g
assert g["exact_match"] == {"labelled": 9, "matched": 9, "rate": 1.0}, g
assert g["ttft_ms"]["p50"] <= g["ttft_ms"]["p90"] <= g["ttft_ms"]["p99"] and g["tpot_samples"] == 9, g
assert g["prefill_tokens_per_s"] > 0 and g["decode_tokens_per_s"] > 0, g
assert g["kv_cache"]["largest_batch_bytes"] == max(r.get("kv_cache_bytes", 0) for r in rec.values()), g
assert g["kv_cache"]["measured_peak"] == "peak_rss_mb", g
run = json.load(open(f"{folder}/data/run.json"))
plan = run["plan"]
assert plan["output"] == "generation" and plan["max_new_tokens"] == 16 and plan["vocab"] == 257, plan
c = plan["model_contract"]
assert c["layers"] == 2 and c["kv_heads"] == 4 and c["head_dim"] == 16 and c["context"] == 48, c
assert c["kv_bytes_per_token"] == 2 * 2 * 4 * 16 * 4 and c["eos_token_ids"] == [256], c
assert c["generation"] == {"max_new_tokens": 16, "decoding": "greedy", "temperature": 0.0, "top_k": 0,
                           "top_p": 1.0, "stop": [], "stop_token_ids": [], "seed": 1234, "batching": "in-flight",
                           "ignore_eos": False}, c
assert c["decoder"] == "ByteLevel", c
print("bundled generation pilot: 9/9 exact, 3 rejections as expected")
PY
grep -q "## Generation" runs/g/data/report.md || fail "report.md has no Generation section"
grep -q "Exact match: 9 of 9 labelled prompts" runs/g/data/report.md || fail "report.md gives no exact-match rate"

# A kill after 5 items, then resume: the same completions, token for token.
run_pilot 130 run --params $P --runs-dir runs --run-id k --stop-after 5
run_pilot 0 resume runs/k
run_pilot 0 verify runs/k
python3 - runs/g runs/k <<'PY'
import json, sys
a, b = ({json.loads(l)["id"]: json.loads(l) for l in open(f"{d}/data/results.jsonl")} for d in sys.argv[1:])
for i in a:
    assert a[i].get("completion_ids") == b[i].get("completion_ids") and a[i]["status"] == b[i]["status"], i
PY

# Other settings: max_new_tokens 4 cuts the longer words (finish length); a stop string and a
# stop id end a completion before them; compare names the changed settings.
edit() {  # edit OUT 'python on d'
  python3 - "$P" "$1" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
exec(sys.argv[3])
json.dump(d, open(sys.argv[2], "w"), indent=2)
PY
}
# prompt-10 (36 tokens) fits the context with 4 new tokens: its expected rejection goes.
python3 - proj/data/generate/manifest.json proj/data/generate/manifest-short.json <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
del m["items"][9]["expected_rejection"]
json.dump(m, open(sys.argv[2], "w"), indent=2)
PY
edit proj/config/short.json 'd["generation"]["max_new_tokens"] = 4; d["acceptance"] = {}; d["manifest"] = "../data/generate/manifest-short.json"'
run_pilot 0 run --params proj/config/short.json --runs-dir runs --run-id short
run_pilot 0 verify runs/short
python3 - runs/short <<'PY'
import json, sys
rec = {json.loads(l)["id"]: json.loads(l) for l in open(f"{sys.argv[1]}/data/results.jsonl")}
assert rec["prompt-01"]["completion"] == "toli" and rec["prompt-01"]["finish_reason"] == "length", rec["prompt-01"]
assert rec["prompt-03"]["completion"] == "upg" and rec["prompt-03"]["finish_reason"] == "eos", rec["prompt-03"]
assert rec["prompt-10"]["status"] == "accepted", "36 + 4 tokens fit the context of 48"
PY
run_pilot 0 compare runs/g runs/k
edit proj/config/stop.json 'd["generation"]["stop"] = ["l", "zz"]; d["generation"]["stop_token_ids"] = [105]; d["acceptance"] = {}'
run_pilot 0 run --params proj/config/stop.json --runs-dir runs --run-id stop
run_pilot 0 verify runs/stop
python3 - runs/stop <<'PY'
import json, sys
rec = {json.loads(l)["id"]: json.loads(l) for l in open(f"{sys.argv[1]}/data/results.jsonl")}
p = rec["prompt-01"]  # tolip: the stop string "l" after "to"
assert p["completion"] == "to" and p["finish_reason"] == "stop" and p["completion_tokens"] == 3, p
b = rec["prompt-09"]  # jihgfedcba: the stop id 105 ("i") after "j"
assert b["completion"] == "j" and b["finish_reason"] == "stop" and b["completion_ids"] == [106, 105], b
PY
run_pilot 1 compare runs/g runs/stop
expect_in out "generation.stop"
expect_in out "generation.stop_token_ids"
expect_in out "completion"

# Refused settings: named, exit 2, nothing written.
for bad in 'del d["generation"]' 'd["generation"]["max_new_tokens"] = 48' 'd["generation"]["top_p"] = 0' 'd["generation"]["batching"] = "continuous"' \
  'd["generation"]["stop_token_ids"] = [257]' 'd["stage"]["options"] = {"dtype": "bfloat16"}' \
  'd["allowed_categories"] = ["en"]' 'd["stage"]["tokenizer"]["truncation"] = "truncate"'; do
  edit proj/config/bad.json "$bad"
  run_pilot 2 run --params proj/config/bad.json --runs-dir runs --run-id bad
  [ ! -e runs/bad ] || fail "a refused run left runs/bad ($bad)"
  grep -q "generation\|stage.options\|allowed_categories\|stage.tokenizer.truncation" "$WORK/err" ||
    { cat "$WORK/err"; fail "no key named ($bad)"; }
done
edit proj/config/bad.json 'd["stage"]["tokenizer"]["file"] = "'"$SRC"'/tests/tokenizer/data/tiny-roberta.json"; d["stage"]["tokenizer"]["sha256"] = "'"$(sha256sum "$SRC/tests/tokenizer/data/tiny-roberta.json" | cut -c1-64)"'"'
run_pilot 2 run --params proj/config/bad.json --runs-dir runs --run-id bad
expect_in err "the tokenizer cannot decode completions: the tokenizer has no decoder"
edit proj/config/bad.json 'd["generation"] = {"max_new_tokens": 4}; d["stage"] = {"kind": "torchscript-classifier", "model": "../data/models/langid/langid.pt"}; d["manifest"] = "../data/pilot/manifest.json"; d["allowed_categories"] = ["en"]'
run_pilot 2 run --params proj/config/bad.json --runs-dir runs --run-id bad
expect_in err "'generation' applies only to a stage that generates"
[ ! -e runs/bad ] || fail "a refused run left runs/bad"

[ -n "${PILOT_PYTHON:-}" ] || { echo "no PILOT_PYTHON: the Hugging Face parity and the contract's refusals are skipped"; exit 0; }
export HF_HUB_OFFLINE=1 PYTHONWARNINGS=ignore
"$PILOT_PYTHON" "$SRC/tests/e2e/data/generation_models.py" compare "$SRC/data/models/reverse-gpt2" \
  "$SRC/data/models/reverse-gpt2/tokenizer.json" proj/data/generate/manifest.json runs/g/data/results.jsonl 16 \
  --labelled >parity.out 2>parity.err || { cat parity.err; fail "the bundled generator differs from generate()"; }
cat parity.out
grep -q "9 completions, 60 reference tokens, 9 identical, 0 near-ties" parity.out || fail "$(cat parity.out)"

# Models that break the contract: refused when loaded (exit 2, named), or their items rejected.
"$PILOT_PYTHON" "$SRC/tests/e2e/data/generation_models.py" broken "$SRC/data/models/reverse-gpt2" broken \
  >broken.out 2>&1 || { cat broken.out; fail "could not make the broken models"; }
for m in broken/*.pt; do
  name=$(basename "$m" .pt)
  edit proj/config/broken.json 'd["stage"]["model"] = "'"$WORK/$m"'"; del d["stage"]["model_sha256"]; d["acceptance"] = {}'
  want=$(cat "broken/$name.want")
  rc=0
  (cd "$WORK" && timeout 120 "$PILOT" run --params proj/config/broken.json --runs-dir runs --run-id "$name" \
    >"$name.out" 2>"$name.err") || rc=$?
  case $want in
    refused:*)
      [ $rc = 2 ] || { cat "$name.err"; fail "$name: exit $rc, expected 2"; }
      grep -qF "${want#refused:}" "$name.err" || { cat "$name.err"; fail "$name: not refused with '${want#refused:}'"; }
      [ ! -e "runs/$name" ] || fail "$name: a refused run left its folder" ;;
    rejected:*)
      [ $rc = 4 ] || [ $rc = 0 ] || { cat "$name.err"; fail "$name: exit $rc"; }
      grep -qF "${want#rejected:}" "runs/$name/data/results.jsonl" ||
        { head -3 "runs/$name/data/results.jsonl"; fail "$name: items not rejected with '${want#rejected:}'"; }
      run_pilot 0 verify "runs/$name" ;;
  esac
  echo "$name: ${want%%:*} as expected"
done
