#!/usr/bin/env bash
# stage.options.dtype, `pilot compare` and `pilot decide` through the real binary on the
# bundled project: a dtype this build cannot run is refused (exit 3, nothing written) or, where
# it runs, compared with float32; one change against several; different manifests refused;
# a proposal for each of the three outcomes; a recorded decision keeps verify green, moves
# the fingerprint, travels with export; a tampered decisions.jsonl is caught.
source "$(dirname "$0")/lib.sh"
copy_project
PROJ=$WORK/proj
P=(--runs-dir "$WORK/runs")
params_with() {  # params_with OUT PYTHON-EXPR-ON-p
  /usr/bin/python3 - "$PROJ/config/pilot.json" "$1" "$2" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1]))
exec(sys.argv[3])
json.dump(p, open(sys.argv[2], "w"), indent=2)
EOF
}

# 1. dtype: bad values are bad input; a dtype the device cannot run is exit 3 before any folder.
params_with "$PROJ/config/bad-dtype.json" 'p["stage"]["options"]["dtype"] = "float8"'
run_pilot 2 run --params "$PROJ/config/bad-dtype.json" "${P[@]}" --run-id x
expect_in "$WORK/err" "'stage.options.dtype' must be one of float32, bfloat16, float16"
params_with "$PROJ/config/bf16.json" 'p["stage"]["options"]["dtype"] = "bfloat16"'
params_with "$PROJ/config/fp32.json" 'p["stage"]["options"]["dtype"] = "float32"'
rc=0
"$PILOT" run --params "$PROJ/config/bf16.json" "${P[@]}" --run-id bf16 >"$WORK/out-bf16" 2>"$WORK/err-bf16" || rc=$?
run_pilot 0 run --params "$PROJ/config/fp32.json" "${P[@]}" --run-id fp32
run_pilot 0 run --params "$PROJ/config/pilot.json" "${P[@]}" --run-id base
case ${PILOT_TORCH_VERSION:?set by CMake (tests/CMakeLists.txt)} in
  1.*) ;;  # Debian's libtorch 1.13 (preset debian) may refuse it, below
  *) [ "$rc" = 0 ] || { cat "$WORK/err-bf16"; fail "bfloat16 exited $rc on libtorch $PILOT_TORCH_VERSION, which runs it"; } ;;
esac
if [ "$rc" = 3 ]; then
  # libtorch 1.13 on a CPU has no bfloat16 embedding_bag: refused, naming the key, nothing written.
  expect_in "$WORK/err-bf16" "the model cannot run in bfloat16 on cpu"
  expect_in "$WORK/err-bf16" "(stage.options.dtype)"
  [ ! -e "$WORK/runs/bf16" ] || fail "a refused dtype left a run folder"
  run_pilot 3 doctor --params "$PROJ/config/bf16.json"
  expect_in "$WORK/out" "model on cpu (bfloat16)"
  echo "bfloat16: refused by this build (exit 3)"
elif [ "$rc" = 0 ]; then
  # Where it runs (PyTorch 2.x): compared with float32, one change only, within 0.05.
  run_pilot 0 doctor --params "$PROJ/config/bf16.json"
  expect_in "$WORK/out" "bfloat16 against float32 on cpu"
  run_pilot 0 compare "$WORK/runs/fp32" "$WORK/runs/bf16" --tolerance 0.05 --out "$WORK/cmp-bf16"
  expect_in "$WORK/out" "what changed: only dtype changed (float32 -> bfloat16)"
  grep -m1 "confidence: max" "$WORK/out"
  rc2=0
  "$PILOT" compare "$WORK/runs/fp32" "$WORK/runs/bf16" --tolerance 0 >"$WORK/out" 2>"$WORK/err" || rc2=$?
  grep -q '"dtype": "bfloat16"' "$WORK/runs/bf16/data/run.json" || fail "run.json does not record the dtype"
  grep -q '"held_dtype": "bfloat16"' "$WORK/runs/bf16/data/run.json" || fail "run.json does not record the dtype held"
  echo "bfloat16: ran; tolerance 0 gives exit $rc2"
else
  cat "$WORK/err-bf16"; fail "a bfloat16 run exited $rc"
fi

# 2. compare: float32 said explicitly is the default, so nothing changed (a repeat).
run_pilot 0 compare "$WORK/runs/base" "$WORK/runs/fp32" --tolerance 0
expect_in "$WORK/out" "what changed: nothing changed"
expect_in "$WORK/out" "items: 12 of 12 agree"
# One change: the batch size. Agreement is exact, so --tolerance 0 passes; the file is written.
params_with "$PROJ/config/b1.json" 'p["batch_size"] = 1'
run_pilot 0 run --params "$PROJ/config/b1.json" "${P[@]}" --run-id b1
run_pilot 0 compare "$WORK/runs/base" "$WORK/runs/b1" --tolerance 0 --out "$WORK/cmp"
expect_in "$WORK/out" "only batch_size changed (4 -> 1)"
expect_not_in "$WORK/out" "warning:"
/usr/bin/python3 -c "
import json; d = json.load(open('$WORK/cmp/compare.json'))
assert d['kind'] == 'pilot-compare' and d['within_tolerance'] and d['one_change'], d
assert d['items'] == {**d['items'], 'total': 12, 'agree': 12, 'differ': 0}, d['items']
assert d['performance']['throughput_items_per_s']['b_over_a'] > 0
" || fail "compare.json does not say what the run did"
expect_in "$WORK/cmp/compare.md" "| batch_size | 4 | 1 | run.json plan |"
# --out never overwrites.
run_pilot 2 compare "$WORK/runs/base" "$WORK/runs/b1" --out "$WORK/cmp"
expect_in "$WORK/err" "a comparison is never overwritten"
# Several changes, and items that differ: min_confidence 0.999 rejects low-confidence items.
params_with "$PROJ/config/strict.json" 'p["batch_size"] = 2; p["stage"]["options"]["min_confidence"] = 0.9999999'
run_pilot 4 run --params "$PROJ/config/strict.json" "${P[@]}" --run-id strict
run_pilot 1 compare "$WORK/runs/base" "$WORK/runs/strict" --out "$WORK/cmp-strict"
expect_in "$WORK/out" "several things changed: batch_size, stage.options.min_confidence"
expect_in "$WORK/out" "warning: several things changed at once"
expect_in "$WORK/out" "differing items"
expect_in "$WORK/out" "status accepted"
expect_in "$WORK/out" "-> rejected low_confidence"
# Different manifests: refused, naming both sha256s.
mkdir -p "$WORK/other" && cp "$PROJ"/data/pilot/doc-0[1-5].txt "$WORK/other/"
"$PILOT" manifest "$WORK/other" --name other >/dev/null
params_with "$PROJ/config/other.json" "p['manifest'] = '$WORK/other/manifest.json'; p['acceptance'] = {}"
run_pilot 0 run --params "$PROJ/config/other.json" "${P[@]}" --run-id other
run_pilot 2 compare "$WORK/runs/base" "$WORK/runs/other"
expect_in "$WORK/err" "the two runs used different manifests"
expect_in "$WORK/err" "$(sha256sum "$WORK/runs/other/data/manifest.json" | cut -c1-64)"
# Not run folders.
run_pilot 0 sweep --params "$PROJ/config/pilot.json" --out "$WORK/sweep" --batch-sizes 1,2,4 --repeats 1
run_pilot 2 compare "$WORK/runs/base" "$WORK/sweep"
expect_in "$WORK/err" "a sweep folder, not a run"
# A damaged folder: exit 1 with its finding, nothing compared.
cp -r "$WORK/runs/b1" "$WORK/b1-damaged"
sed -i 's/"accepted"/"rejected"/' "$WORK/b1-damaged/data/results.jsonl"
run_pilot 1 compare "$WORK/runs/base" "$WORK/b1-damaged"
expect_in "$WORK/out" "nothing was compared"

# 3. decide: proposals. go from the clean run with clean evidence; nothing written.
run_pilot 0 doctor --params "$PROJ/config/pilot.json" --json
cp "$WORK/out" "$WORK/doctor.json"
before=$(tree_sum "$WORK/runs/base")
run_pilot 0 decide "$WORK/runs/base" --doctor "$WORK/doctor.json" --compare "$WORK/cmp/compare.json" --sweep "$WORK/sweep"
expect_in "$WORK/out" "proposal: go"
expect_in "$WORK/out" "nothing written"
[ "$(tree_sum "$WORK/runs/base")" = "$before" ] || fail "a proposal wrote into the folder"
# measure-first: a plan for GPU cards from this CPU run (an assumed rate, an unknown fit, a
# doctor on the CPU), naming each; a plan for CPU nodes from this very run, with a doctor on
# the CPU, stays go. A sweep of another manifest is measure-first too.
printf '%s' '{"currency": "EUR", "cards": [{"name": "node", "class": "cpu", "memory_gb": 64, "cards_per_lot": 1, "lot_price": {"3": 30}}]}' >"$WORK/cpu-prices.json"
run_pilot 0 plan --from "$WORK/runs/base" --corpus-items 100000 --prices "$WORK/cpu-prices.json" --out "$WORK/plan-cpu.json"
run_pilot 0 decide "$WORK/runs/base" --doctor "$WORK/doctor.json" --plan "$WORK/plan-cpu.json"
expect_in "$WORK/out" "proposal: go"
run_pilot 0 plan --from "$WORK/runs/base" --corpus-items 100000 --prices "$SRC/config/prices.example.json" \
  --assume-scaling 20 --out "$WORK/plan-gpu.json"
run_pilot 0 decide "$WORK/runs/base" --doctor "$WORK/doctor.json" --plan "$WORK/plan-gpu.json"
expect_in "$WORK/out" "proposal: measure-first"
expect_in "$WORK/out" "is assumed: cpu items/s x 20"
expect_in "$WORK/out" "whether the model fits one L40S-48GB is unknown"
expect_in "$WORK/out" "the doctor ran on cpu, not on the plan's card class cuda"
[ "$(tree_sum "$WORK/runs/base")" = "$before" ] || fail "a proposal wrote into the folder"
run_pilot 0 sweep --params "$PROJ/config/other.json" --out "$WORK/sweep-other" --batch-sizes 1,2 --repeats 1
run_pilot 0 decide "$WORK/runs/base" --sweep "$WORK/sweep-other"
expect_in "$WORK/out" "proposal: measure-first"
expect_in "$WORK/out" "the sweep measured another manifest ($(sha256sum "$WORK/runs/other/data/manifest.json" | cut -c1-64))"
# fix-env: a doctor report with a failed required check (from a dtype this build cannot run,
# or unmet requires).
params_with "$PROJ/config/needs-gpu.json" 'p["requires"] = {"backend": "cuda"}'
rc=0; "$PILOT" doctor --params "$PROJ/config/needs-gpu.json" --json >"$WORK/doctor-bad.json" 2>/dev/null || rc=$?
[ "$rc" = 3 ] || fail "doctor with requires backend cuda exited $rc on a machine without one"
run_pilot 0 decide "$WORK/runs/base" --doctor "$WORK/doctor-bad.json" --json
/usr/bin/python3 -c "
import json; d = json.load(open('$WORK/out'))
assert d['proposal'] == 'fix-env' and not d['recorded'], d
assert any(f['points_to'] == 'fix-env' and 'requires' in f['fact'] and f['from'] == '$WORK/doctor-bad.json' for f in d['facts']), d['facts']
" || fail "unmet requires do not propose fix-env"
# revise-config: acceptance unmet and unexpected rejections (the strict run), a comparison
# beyond tolerance.
run_pilot 0 decide "$WORK/runs/strict"
expect_in "$WORK/out" "proposal: revise-config"
expect_in "$WORK/out" "the acceptance criteria are not met: min_accuracy"
expect_in "$WORK/out" "rejected that the manifest does not expect to be"
run_pilot 0 decide "$WORK/runs/base" --compare "$WORK/cmp-strict/compare.json"
expect_in "$WORK/out" "proposal: revise-config"
expect_in "$WORK/out" "the comparison differs beyond tolerance"
# A sweep limit below the planned batch: a memory cap every batch size reaches.
run_pilot 0 sweep --params "$PROJ/config/pilot.json" --out "$WORK/sweep-capped" --batch-sizes 1,2,4 --repeats 1 --max-memory-mb 1
run_pilot 0 decide "$WORK/runs/base" --sweep "$WORK/sweep-capped"
expect_in "$WORK/out" "proposal: revise-config"
expect_in "$WORK/out" "at or below the run's batch size 4"
# Bad evidence is refused before anything: a comparison of another manifest, a file that is
# not one, a missing file; --reason without --decision; --decision without --reason.
run_pilot 0 compare "$WORK/runs/other" "$WORK/runs/other" --out "$WORK/cmp-other"
run_pilot 2 decide "$WORK/runs/base" --compare "$WORK/cmp-other/compare.json" --decision go --reason x
expect_in "$WORK/err" "the comparison is over another manifest"
run_pilot 2 decide "$WORK/runs/base" --plan "$WORK/doctor.json" --decision go --reason x
expect_in "$WORK/err" "not a plan written by"
run_pilot 2 decide "$WORK/runs/base" --doctor "$WORK/nope.json"
run_pilot 2 decide "$WORK/runs/base" --reason "why"
expect_in "$WORK/err" "--reason is recorded with a decision"
run_pilot 2 decide "$WORK/runs/base" --decision go
expect_in "$WORK/err" "a recorded decision needs its reasons"
run_pilot 2 decide "$WORK/sweep"
expect_in "$WORK/err" "a sweep folder"
[ "$(tree_sum "$WORK/runs/base")" = "$before" ] || fail "a refused decide wrote into the folder"

# 4. Record: evidence copied with its sha256, tag files, verify green, new fingerprint.
old_fp=$(sha256sum "$WORK/runs/base/tagmanifest-sha256.txt" | cut -c1-64)
payload=$(tree_sum "$WORK/runs/base/data")
run_pilot 0 decide "$WORK/runs/base" --decision go --reason "every check passed" --reason "one change at a time held" \
  --doctor "$WORK/doctor.json" --compare "$WORK/cmp/compare.json" --sweep "$WORK/sweep"
expect_in "$WORK/out" "recorded decision go as entry 1"
new_fp=$(sha256sum "$WORK/runs/base/tagmanifest-sha256.txt" | cut -c1-64)
expect_in "$WORK/out" "fingerprint: $new_fp (was $old_fp)"
[ "$(tree_sum "$WORK/runs/base/data")" = "$payload" ] || fail "decide changed the payload"
for f in decisions.jsonl decision.md decision-1-doctor.json decision-1-compare.json decision-1-sweep.json; do
  grep -q "  $f\$" "$WORK/runs/base/tagmanifest-sha256.txt" || fail "$f is not in the tag manifest"
done
cmp "$WORK/doctor.json" "$WORK/runs/base/decision-1-doctor.json" || fail "the doctor evidence is not a byte copy"
cmp "$WORK/sweep/data/sweep.json" "$WORK/runs/base/decision-1-sweep.json" || fail "the sweep evidence is not a byte copy"
grep -q "\"sha256\":\"$(sha256sum "$WORK/doctor.json" | cut -c1-64)\"" "$WORK/runs/base/decisions.jsonl" \
  || fail "the entry does not record the evidence's sha256"
[ ! -e "$WORK/runs/base/.lock" ] || fail "decide left its lock file"
run_pilot 0 verify "$WORK/runs/base" --expect "$new_fp"
# decision.md: reasons, accepted, still to fix, the spot check (every rejected item, the binary one by size).
md=$WORK/runs/base/decision.md
expect_in "$md" "## Entry 1: **go**"
expect_in "$md" "- every check passed"
expect_in "$md" "### What still needs fixing"
expect_in "$md" "| doc-12 | rejected: invalid_encoding | (binary, "
expect_in "$md" "| doc-11 | rejected: empty_input | (empty or only whitespace"
expect_in "$md" "| doc-10 | rejected: category_not_allowed |"
# A second decision is a new entry; the first line is kept byte for byte.
first=$(head -n 1 "$WORK/runs/base/decisions.jsonl")
run_pilot 0 decide "$WORK/runs/base" --decision revise-config --reason "prices changed" --no-excerpts
expect_in "$WORK/out" "entry 2"
expect_in "$WORK/out" "(it overrides the proposal)"
[ "$(head -n 1 "$WORK/runs/base/decisions.jsonl")" = "$first" ] || fail "the first entry was rewritten"
[ "$(wc -l <"$WORK/runs/base/decisions.jsonl")" = 2 ] || fail "decisions.jsonl does not hold two entries"
expect_in "$md" "Turned off (--no-excerpts)"
expect_in "$md" "- entry 1: **go**"
expect_not_in "$md" "| doc-12 |"
run_pilot 0 verify "$WORK/runs/base"
# 5. Export carries the decision files; the copy verifies with them, same fingerprint.
fp2=$(sha256sum "$WORK/runs/base/tagmanifest-sha256.txt" | cut -c1-64)
run_pilot 0 export "$WORK/runs/base" "$WORK/exported"
cmp "$WORK/runs/base/decisions.jsonl" "$WORK/exported/decisions.jsonl" || fail "export did not carry decisions.jsonl"
run_pilot 0 verify "$WORK/exported" --expect "$fp2"
# 6. Tampering: an entry edited is a fixity finding; re-hashed into the tag manifest, the
# entry numbering or the evidence's sha256 still catches it; evidence removed is caught.
cp -r "$WORK/exported" "$WORK/t1"
sed -i '1s/"decision":"go"/"decision":"fix-env"/' "$WORK/t1/decisions.jsonl"
run_pilot 1 verify "$WORK/t1"
expect_in "$WORK/err" "[fixity] decisions.jsonl"
cp -r "$WORK/exported" "$WORK/t2"
sed -n 2p "$WORK/exported/decisions.jsonl" >"$WORK/t2/decisions.jsonl"  # entry 1 dropped
(cd "$WORK/t2" && sed -i "/  decisions.jsonl\$/d" tagmanifest-sha256.txt && sha256sum decisions.jsonl >>tagmanifest-sha256.txt)
run_pilot 1 verify "$WORK/t2"
expect_in "$WORK/err" "entry 2 where entry 1 belongs"
expect_in "$WORK/err" "a decision-* file that no entry of decisions.jsonl names"
cp -r "$WORK/exported" "$WORK/t3"
echo '{}' >"$WORK/t3/decision-1-doctor.json"
(cd "$WORK/t3" && sed -i "/  decision-1-doctor.json\$/d" tagmanifest-sha256.txt && sha256sum decision-1-doctor.json >>tagmanifest-sha256.txt)
run_pilot 1 verify "$WORK/t3"
expect_in "$WORK/err" "evidence of entry 1 has sha256"
# decide refuses to record on a folder that fails verification (exit 1), writing nothing.
before=$(tree_sum "$WORK/t1")
run_pilot 1 decide "$WORK/t1" --decision go --reason x
[ "$(tree_sum "$WORK/t1")" = "$before" ] || fail "decide wrote into a folder that fails verification"
echo "compare/decide: ok"

# 7. From the review: a doctor file that is not a doctor report is refused; an --out inside a
# pilot folder is refused; a deep plan row is recorded typed (verify green); a decide whose
# write fails (a file-size limit) takes back what it wrote, exit 5, and the same decide then
# succeeds.
echo '{}' >"$WORK/empty.json"
run_pilot 2 decide "$WORK/runs/b1" --doctor "$WORK/empty.json"
expect_in "$WORK/err" "not a \`pilot doctor --json\` report"
run_pilot 2 compare "$WORK/runs/base" "$WORK/runs/b1" --out "$WORK/runs/b1/data"
expect_in "$WORK/err" "inside the pilot folder"
run_pilot 0 verify "$WORK/runs/b1"
run_pilot 0 plan --from "$WORK/runs/b1" --corpus-items 1000 --prices "$SRC/config/prices.example.json" --assume-scaling 10 \
  --out "$WORK/plan.json"
/usr/bin/python3 - "$WORK/plan.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
x = "deep"
for _ in range(30):
    x = [x]
# The row and the cheapest choice alike, and the fastest where it is that row (the plan still
# agrees with itself).
same = lambda a, b: all(a[k] == b[k] for k in ("card", "period_days", "lots", "cost"))
if same(d["fastest"], d["cheapest"]):
    d["fastest"]["fit"] = x
for row in d["plans"]:
    if same(row, d["cheapest"]):
        row["fit"] = x
d["cheapest"]["fit"] = x
json.dump(d, open(sys.argv[1], "w"))
PY
run_pilot 0 decide "$WORK/runs/b1" --plan "$WORK/plan.json" --decision revise-config --reason "deep plan row"
run_pilot 0 verify "$WORK/runs/b1"
before=$(tree_sum "$WORK/runs/b1")
rc=0
(trap "" XFSZ; ulimit -f 3; "$PILOT" decide "$WORK/runs/b1" --doctor "$WORK/doctor.json" --decision go --reason "big") \
  >"$WORK/out" 2>"$WORK/err" || rc=$?
[ "$rc" = 5 ] || { cat "$WORK/err"; fail "a decide whose write failed exited $rc, expected 5"; }
expect_in "$WORK/err" "nothing was recorded"
expect_in "$WORK/err" ".decide-pending/decision.md"  # after decision-2-doctor.json and decisions.jsonl were staged: taken back
[ "$(tree_sum "$WORK/runs/b1")" = "$before" ] || fail "a failed decide left the folder changed"
run_pilot 0 verify "$WORK/runs/b1"
run_pilot 0 decide "$WORK/runs/b1" --doctor "$WORK/doctor.json" --decision go --reason "retried"
expect_in "$WORK/out" "entry 2"
run_pilot 0 verify "$WORK/runs/b1"
echo "review cases: ok"
