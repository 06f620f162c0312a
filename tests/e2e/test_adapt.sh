#!/usr/bin/env bash
# `pilot adapt` through the real binary on the bundled example (data/adapt, config/adapt.json):
# a short configuration that keeps the suite to seconds. An uninterrupted adaptation is the
# reference; stopped, interrupted and SIGKILLed ones (at several writes, and half-way through
# a checkpoint's temporary file) resume in a new process to the same final parameter bytes
# and the same model file. A tampered checkpoint is caught by verify and refused by resume; a
# changed base model, input, or copy is refused; the rejected training item is accounted
# for; the adapted model runs through `pilot run`, pinned by the sha256 adapt printed.
source "$(dirname "$0")/lib.sh"
copy_project
PROJ=$WORK/proj
R=$WORK/runs
# 40 steps of batch 16, a checkpoint every 10: four checkpoints, the last two kept (plus the best).
/usr/bin/python3 - "$PROJ/config/adapt.json" "$PROJ/config/short.json" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1]))
t = p["train"]
del t["epochs"]
t.update(steps=40, checkpoint_every=10, keep_checkpoints=2)
p["acceptance"] = {"min_gain": 0.01}
json.dump(p, open(sys.argv[2], "w"), indent=2)
EOF
A=(adapt --params "$PROJ/config/short.json" --runs-dir "$R")
digest() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["final_params_digest"])' "$1/data/report.json"; }
model_sha() { sha256sum "$1/data/model/adapted.pt" | cut -d' ' -f1; }

# 1. The reference: finished, verified, accounted for, with its reports and model card.
run_pilot 0 "${A[@]}" --run-id ref
REF=$R/ref
expect_in "$WORK/out" "569 training items (568 used, 1 rejected); 248 evaluation items (248 evaluated)"
expect_in "$WORK/out" "verify: ok"
SHA=$(model_sha "$REF")
DIGEST=$(digest "$REF")
expect_in "$WORK/out" "sha256 $SHA"
expect_in "$REF/data/model/MODEL_CARD.md" "- sha256: \`$SHA\`"
grep -q '"id":"tr-bad-encoding","status":"rejected","reason":"invalid_encoding"' "$REF/data/train.jsonl" ||
  fail "the rejected training item is not accounted for"
[ "$(wc -l <"$REF/data/train.jsonl")" = 569 ] || fail "train.jsonl does not have one line per training id"
[ "$(grep -c '"status":"used"' "$REF/data/train.jsonl")" = 568 ] || fail "used count"
[ "$(wc -l <"$REF/data/eval.jsonl")" = 248 ] || fail "eval.jsonl does not have one line per evaluation id"
# metrics.jsonl: the base evaluation, 40 losses, 4 checkpoint evaluations.
[ "$(grep -c '"loss"' "$REF/data/metrics.jsonl")" = 40 ] || fail "metrics.jsonl lacks a loss per step"
[ "$(grep -c '"eval_accuracy"' "$REF/data/metrics.jsonl")" = 5 ] || fail "metrics.jsonl lacks the evaluations"
expect_in "$REF/data/report.html" "<svg"
expect_in "$REF/data/report.html" "<polyline"
expect_not_in "$REF/data/report.html" "<script"
expect_in "$REF/data/report.md" "$SHA"
ls "$REF/data/checkpoints" >"$WORK/kept"
expect_in "$WORK/kept" "step-00000030.ckpt"
expect_in "$WORK/kept" "step-00000040.ckpt"
expect_not_in "$WORK/kept" "step-00000010.ckpt.tmp"
grep -q '"type":"pruned"' "$REF/data/journal.jsonl" || fail "the journal does not record the pruned checkpoints"
grep -q "Pilot-Folder-Kind: adapt" "$REF/bag-info.txt" || fail "bag-info.txt does not declare the kind"
run_pilot 0 verify "$REF"
expect_in "$WORK/out" "an adaptation folder"
run_pilot 0 status "$REF"
expect_in "$WORK/out" "adapt ref: finished"
# The same seed again: the same bits.
run_pilot 0 "${A[@]}" --run-id again
[ "$(model_sha "$R/again")" = "$SHA" ] || fail "a second uninterrupted adaptation gave another model"

# 2. Stopped after 15 steps (checkpoint at 10): exit 130, status, then resume to the same bits.
run_pilot 130 "${A[@]}" --run-id stop --stop-after 15
expect_in "$WORK/err" "the last checkpoint is at step 10 of 40"
run_pilot 0 status "$R/stop"
expect_in "$WORK/out" "interrupted"
expect_in "$WORK/out" "last checkpoint at step 10 of 40"
run_pilot 0 resume "$R/stop"
[ "$(model_sha "$R/stop")" = "$SHA" ] || fail "stop + resume gave another model"
[ "$(digest "$R/stop")" = "$DIGEST" ] || fail "stop + resume gave other parameters"
run_pilot 2 resume "$R/stop"
expect_in "$WORK/err" "already finished"

# SIGINT: stops after the current step, exit 130, resumable to the same bits.
PILOT_TEST_STEP_DELAY_MS=30 "$PILOT" "${A[@]}" --run-id sigint >"$WORK/out" 2>"$WORK/err" &
pid=$!
wait_for "$R/sigint/data/journal.jsonl" '"type":"checkpoint"'
kill -INT "$pid"
rc=0
wait "$pid" || rc=$?
[ "$rc" = 130 ] || { cat "$WORK/err"; fail "SIGINT gave exit $rc, not 130"; }
expect_in "$WORK/err" "pilot resume $R/sigint"
run_pilot 0 resume "$R/sigint"
[ "$(model_sha "$R/sigint")" = "$SHA" ] || fail "SIGINT + resume gave another model"

# 3. SIGKILL at several writes (journal appends torn half-way, checkpoint renames not yet
# journaled, pruning half done) and half-way through a checkpoint's temp file.
for n in 9 11 13 15 18; do
  rc=0
  PILOT_TEST_KILL_AFTER_WRITE=$n "$PILOT" "${A[@]}" --run-id kill$n >/dev/null 2>&1 || rc=$?
  [ "$rc" = 137 ] || fail "the kill hook at write $n did not kill (exit $rc)"
  run_pilot 0 resume "$R/kill$n"
  [ "$(model_sha "$R/kill$n")" = "$SHA" ] || fail "kill at write $n + resume gave another model"
  [ "$(digest "$R/kill$n")" = "$DIGEST" ] || fail "kill at write $n + resume gave other parameters"
done
for k in 1 3; do
  rc=0
  PILOT_TEST_KILL_IN_CHECKPOINT=$k "$PILOT" "${A[@]}" --run-id mid$k >/dev/null 2>&1 || rc=$?
  [ "$rc" = 137 ] || fail "the checkpoint kill hook did not kill (exit $rc)"
  tmps=("$R/mid$k/data/checkpoints/step-000000${k}0.ckpt.tmp-"*)
  [ -f "${tmps[0]}" ] || fail "no half-written temp checkpoint"
  [ ! -e "$R/mid$k/data/checkpoints/step-000000${k}0.ckpt" ] || fail "a half-written checkpoint has its final name"
  run_pilot 0 resume "$R/mid$k"
  expect_in "$WORK/err" "removed data/checkpoints/step-000000${k}0.ckpt.tmp-"
  [ "$(model_sha "$R/mid$k")" = "$SHA" ] || fail "kill mid-checkpoint $k + resume gave another model"
done
# Killed before the journal's header: nothing to resume, said plainly.
PILOT_TEST_KILL_AFTER_WRITE=2 "$PILOT" "${A[@]}" --run-id early >/dev/null 2>&1 || true
run_pilot 2 resume "$R/early"
expect_in "$WORK/err" "the adaptation never started"

# 4. A tampered checkpoint: resume refuses it and changes nothing; verify names it.
run_pilot 130 "${A[@]}" --run-id tamper --stop-after 25
printf 'X' | dd of="$R/tamper/data/checkpoints/step-00000020.ckpt" bs=1 seek=100 conv=notrunc 2>/dev/null
before=$(tree_sum "$R/tamper")
run_pilot 2 resume "$R/tamper"
expect_in "$WORK/err" "does not match the sha256 the journal records for it"
expect_in "$WORK/err" "step-00000020.ckpt"
[ "$(tree_sum "$R/tamper")" = "$before" ] || fail "a refused resume changed the folder"
# A TorchScript archive (which would run the code it carries when loaded) in place of a
# checkpoint, its journal record rewritten to pin it: refused by its first line, nothing run.
run_pilot 130 "${A[@]}" --run-id archive --stop-after 15
cp "$PROJ/data/models/langid/langid.pt" "$R/archive/data/checkpoints/step-00000010.ckpt"
/usr/bin/python3 - "$R/archive" <<'EOF'
import hashlib, json, os, sys
d = sys.argv[1]
ck = open(os.path.join(d, "data/checkpoints/step-00000010.ckpt"), "rb").read()
out = []
for l in open(os.path.join(d, "data/journal.jsonl")).read().splitlines():
    r = json.loads(l)
    if r.get("type") == "checkpoint" and r["step"] == 10:
        r["sha256"], r["bytes"] = hashlib.sha256(ck).hexdigest(), len(ck)
    out.append(json.dumps(r, separators=(",", ":")))
open(os.path.join(d, "data/journal.jsonl"), "w").write("\n".join(out) + "\n")
EOF
run_pilot 2 resume "$R/archive"
expect_in "$WORK/err" "not a checkpoint this pilot writes"
# In a finished folder, even with the bag's manifests re-hashed to match, verify finds it.
cp -r "$REF" "$WORK/copy"
printf 'X' | dd of="$WORK/copy/data/checkpoints/step-00000040.ckpt" bs=1 seek=100 conv=notrunc 2>/dev/null
/usr/bin/python3 - "$WORK/copy" <<'EOF'
import hashlib, os, sys
d = sys.argv[1]
def sha(p): return hashlib.sha256(open(os.path.join(d, p), "rb").read()).hexdigest()
lines = [l.split("  ", 1) for l in open(os.path.join(d, "manifest-sha256.txt")).read().splitlines()]
open(os.path.join(d, "manifest-sha256.txt"), "w").write("".join(f"{sha(p)}  {p}\n" for _, p in lines))
tags = [l.split("  ", 1) for l in open(os.path.join(d, "tagmanifest-sha256.txt")).read().splitlines()]
open(os.path.join(d, "tagmanifest-sha256.txt"), "w").write("".join(f"{sha(p)}  {p}\n" for _, p in tags))
EOF
run_pilot 1 verify "$WORK/copy"
expect_in "$WORK/err" "[checkpoints] data/checkpoints/step-00000040.ckpt"
expect_not_in "$WORK/err" "[fixity]"
# The model swapped for another file, re-hashed: the model card catches it.
rm -rf "$WORK/copy" && cp -r "$REF" "$WORK/copy"
cp "$PROJ/data/models/langid/langid.pt" "$WORK/copy/data/model/adapted.pt"
/usr/bin/python3 - "$WORK/copy" <<'EOF'
import hashlib, os, sys
d = sys.argv[1]
def sha(p): return hashlib.sha256(open(os.path.join(d, p), "rb").read()).hexdigest()
for m in ("manifest-sha256.txt", "tagmanifest-sha256.txt"):
    lines = [l.split("  ", 1) for l in open(os.path.join(d, m)).read().splitlines()]
    open(os.path.join(d, m), "w").write("".join(f"{sha(p)}  {p}\n" for _, p in lines))
EOF
sed -i 's/^Payload-Oxum: .*/Payload-Oxum: 0.0/' "$WORK/copy/bag-info.txt"
run_pilot 1 verify "$WORK/copy"
expect_in "$WORK/err" "[model] data/model/MODEL_CARD.md"

# 5. Refusals on changed inputs.
run_pilot 130 "${A[@]}" --run-id changed --stop-after 12
victims=("$PROJ"/data/adapt/train/*.txt)
victim=${victims[0]}
cp "$victim" "$WORK/keep.txt"
printf 'changed' >"$victim"
run_pilot 2 resume "$R/changed"
expect_in "$WORK/err" "the inputs' prechecks differ from when the adaptation began"
cp "$WORK/keep.txt" "$victim"
cp "$PROJ/data/models/langid/langid.pt" "$WORK/model.keep"
printf 'x' >>"$PROJ/data/models/langid/langid.pt"
run_pilot 2 resume "$R/changed"
expect_in "$WORK/err" "the base model changed since the adaptation began"
cp "$WORK/model.keep" "$PROJ/data/models/langid/langid.pt"
cp "$R/changed/data/params.json" "$WORK/params.keep"
sed -i 's/"seed": 7/"seed": 8/' "$R/changed/data/params.json"
run_pilot 2 resume "$R/changed"
expect_in "$WORK/err" "data/params.json"
cp "$WORK/params.keep" "$R/changed/data/params.json"
run_pilot 0 resume "$R/changed"
[ "$(model_sha "$R/changed")" = "$SHA" ] || fail "restored inputs + resume gave another model"
# Bad parameters and inputs before any folder: exit 2, naming the key or the id.
sed 's/"optimiser"/"optimizer"/' "$PROJ/config/short.json" >"$PROJ/config/typo.json"
run_pilot 2 adapt --params "$PROJ/config/typo.json" --runs-dir "$R" --run-id typo
expect_in "$WORK/err" "optimizer"
sed 's/7b16f402/0b16f402/' "$PROJ/config/short.json" >"$PROJ/config/pin.json"
run_pilot 2 adapt --params "$PROJ/config/pin.json" --runs-dir "$R" --run-id pin
expect_in "$WORK/err" "not the pinned"
[ ! -e "$R/typo" ] && [ ! -e "$R/pin" ] || fail "a refused adaptation left a folder"
# A dtype: exit 3 before any folder where this build cannot run it (Debian's libtorch 1.13 has
# no bfloat16 embedding_bag on a CPU), or an adaptation that finishes where it can.
sed 's/"float32"/"bfloat16"/' "$PROJ/config/short.json" >"$PROJ/config/bf16.json"
rc=0
"$PILOT" adapt --params "$PROJ/config/bf16.json" --runs-dir "$R" --run-id bf16 >"$WORK/out" 2>"$WORK/err" || rc=$?
case ${PILOT_TORCH_VERSION:?set by CMake (tests/CMakeLists.txt)} in
  1.*) ;;  # only Debian's libtorch 1.13 (preset debian) may refuse it
  *) [ "$rc" != 3 ] || { cat "$WORK/err"; fail "bfloat16 was refused on libtorch $PILOT_TORCH_VERSION, which runs it"; } ;;
esac
if [ "$rc" = 3 ]; then
  expect_in "$WORK/err" "cannot run this model in bfloat16"
  expect_in "$WORK/err" "(train.dtype)"
  [ ! -e "$R/bf16" ] || fail "a refused dtype left a folder"
else
  [ "$rc" = 0 ] || [ "$rc" = 4 ] || { cat "$WORK/err"; fail "a bfloat16 adaptation exited $rc"; }
  run_pilot 0 verify "$R/bf16"
fi

# 6. Closing the loop: the adapted model in `pilot run`, pinned by the sha256 adapt printed;
# its accuracy on the evaluation manifest is the one adapt reported.
/usr/bin/python3 - "$PROJ/config/pilot.json" "$PROJ/config/adapted.json" "$REF" "$SHA" "$PROJ/data/adapt/eval.json" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1]))
p["manifest"] = sys.argv[5]
p["stage"]["model"] = sys.argv[3] + "/data/model/adapted.pt"
p["stage"]["model_sha256"] = sys.argv[4]
p["stage"]["options"] = {"min_confidence": 0.0}
p["allowed_categories"] = ["en", "fr", "de", "es", "it", "pt", "nl", "ja", "ru", "pl", "sv", "cs", "tr", "fi", "hu", "el"]
p["acceptance"] = {}
json.dump(p, open(sys.argv[2], "w"), indent=2)
EOF
run_pilot 0 run --params "$PROJ/config/adapted.json" --runs-dir "$R" --run-id with-adapted
acc=$(/usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["evaluation"]["adapted"]["correct"])' "$REF/data/report.json")
expect_in "$WORK/out" "accuracy on labelled items: $acc/248"
echo "adapt: reference $SHA; a stop, a SIGINT, kills at 5 writes and 2 mid-checkpoint kills all resume to the same bits"
