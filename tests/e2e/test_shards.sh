#!/usr/bin/env bash
# Shards, merge, workers and export through the real binary on the bundled project and a
# generated corpus: every id in exactly one shard, a resubmitted shard resumes (or, finished,
# is verified), scheduler variables are read only with --shard auto, merge refuses what it
# must and judges acceptance over the whole manifest, export copies every kind and survives
# a kill mid-copy.
source "$(dirname "$0")/lib.sh"
make_corpus 120 "$WORK/corpus"
write_params "$WORK/params.json" "$WORK/corpus/manifest.json" 4
P=(--params "$WORK/params.json" --runs-dir "$WORK/runs")

# 1. Three shards; together every manifest id exactly once.
for i in 0 1 2; do
  run_pilot 0 run --shard "$i/3" "${P[@]}"
  expect_in "$WORK/err" "shard $i/3, from --shard $i/3"
  expect_in "$WORK/out" "run folder: $WORK/runs/shard-$i-of-3"
  grep -q '"folder_kind": "shard"' "$WORK/runs/shard-$i-of-3/data/run.json" || fail "shard $i is not of kind shard"
done
cat "$WORK"/runs/shard-*-of-3/data/results.jsonl | grep -o '^{"id":"[^"]*"' | cut -d'"' -f4 | sort >"$WORK/ids"
grep -o '"id": "[^"]*"' "$WORK/corpus/manifest.json" | cut -d'"' -f4 | sort | diff - "$WORK/ids" \
  || fail "the shards do not cover the manifest exactly once"
run_pilot 0 status "$WORK/runs/shard-1-of-3"
expect_in "$WORK/out" "shard shard-1-of-3: finished"

# 2. A resubmitted finished shard verifies its folder and exits 0; changed parameters are refused.
before=$(tree_sum "$WORK/runs/shard-1-of-3")
run_pilot 0 run --shard 1/3 "${P[@]}"
expect_in "$WORK/err" "already finished"
expect_in "$WORK/out" "verify: ok"
[ "$(tree_sum "$WORK/runs/shard-1-of-3")" = "$before" ] || fail "a resubmitted finished shard changed its folder"
sed 's/"batch_size": 4/"batch_size": 5/' "$WORK/params.json" >"$WORK/params5.json"
run_pilot 2 run --shard 1/3 --params "$WORK/params5.json" --runs-dir "$WORK/runs"
expect_in "$WORK/err" "exists for another parameters"
run_pilot 2 run --shard 2/4 --run-id shard-1-of-3 "${P[@]}"
expect_in "$WORK/err" "holds shard 1/3, not shard 2/4"
[ "$(tree_sum "$WORK/runs/shard-1-of-3")" = "$before" ] || fail "a refused shard changed the folder"

# 3. An interrupted shard: `pilot run --shard` again resumes it.
run_pilot 130 run --shard 0/2 "${P[@]}" --stop-after 8
run_pilot 0 run --shard 0/2 "${P[@]}"
expect_in "$WORK/err" "shard 0/2 resumes its folder"
[ "$(grep -c '"type":"session"' "$WORK/runs/shard-0-of-2/data/journal.jsonl")" = 2 ] || fail "not resumed"
run_pilot 0 run --shard 1/2 "${P[@]}"

# 4. Scheduler variables: only with auto; each scheduler's; refusals name the cause.
SLURM_ARRAY_TASK_ID=1 run_pilot 0 run "${P[@]}" --run-id plain
grep -q '"folder_kind": "run"' "$WORK/runs/plain/data/run.json" || fail "a plain run inside a job was sharded"
[ "$(wc -l <"$WORK/runs/plain/data/results.jsonl")" = 120 ] || fail "a plain run inside a job lost items"
SLURM_ARRAY_TASK_ID=2 run_pilot 0 run --shard auto/3 --params "$WORK/params.json" --runs-dir "$WORK/auto"
expect_in "$WORK/err" "from Slurm job array (SLURM_ARRAY_TASK_ID=2)"
cmp "$WORK/auto/shard-2-of-3/data/results.jsonl" "$WORK/runs/shard-2-of-3/data/results.jsonl" >/dev/null \
  || outcomes "$WORK/auto/shard-2-of-3" | diff - <(outcomes "$WORK/runs/shard-2-of-3") || fail "auto/3 as task 2 is not shard 2/3"
JOB_COMPLETION_INDEX=0 run_pilot 0 run --shard auto/3 --params "$WORK/params.json" --runs-dir "$WORK/k8s"
expect_in "$WORK/err" "from Kubernetes Indexed Job (JOB_COMPLETION_INDEX=0)"
RANK=1 WORLD_SIZE=2 LOCAL_RANK=1 run_pilot 0 run --shard auto --params "$WORK/params.json" --runs-dir "$WORK/torchrun"
expect_in "$WORK/err" "from torchrun (RANK=1, WORLD_SIZE=2)"
grep -q '"device_used": "cpu"' "$WORK/torchrun/shard-1-of-2/data/environment.json" || fail "LOCAL_RANK moved a cpu run"
SLURM_ARRAY_TASK_ID=1 run_pilot 2 run --shard auto --params "$WORK/params.json" --runs-dir "$WORK/bad"
expect_in "$WORK/err" "needs N under a Slurm job array"
SLURM_ARRAY_TASK_ID=1 JOB_COMPLETION_INDEX=1 run_pilot 2 run --shard auto/3 --params "$WORK/params.json" --runs-dir "$WORK/bad"
expect_in "$WORK/err" "ambiguous"
run_pilot 2 run --shard 3/3 --params "$WORK/params.json" --runs-dir "$WORK/bad"
expect_in "$WORK/err" "shard 3 of 3 does not exist"
run_pilot 2 run --shard "" --params "$WORK/params.json" --runs-dir "$WORK/bad"
[ ! -e "$WORK/bad" ] || fail "a refused shard created a folder"

# 5. Merge: refusals name the shard; a merged bag verifies, a tampered one does not.
S=("$WORK"/runs/shard-{0,1,2}-of-3)
run_pilot 2 merge "${S[0]}" "${S[1]}" --out "$WORK/m"
expect_in "$WORK/err" "1 of 3 shards missing: 2"
run_pilot 2 merge "${S[@]}" "${S[1]}" --out "$WORK/m"
expect_in "$WORK/err" "shard 1/3 given twice"
run_pilot 2 merge "${S[@]}" "$WORK/runs/plain" --out "$WORK/m"
expect_in "$WORK/err" "a folder of kind 'run', not a shard ($WORK/runs/plain)"
run_pilot 2 merge "${S[0]}" "${S[1]}" "$WORK/runs/shard-1-of-2" --out "$WORK/m"
expect_in "$WORK/err" "shards of different splits"
cp -r "$WORK/runs" "$WORK/copy"
printf 'x' >>"$WORK/copy/shard-2-of-3/data/report.md"
run_pilot 1 merge "$WORK"/copy/shard-{0,1,2}-of-3 --out "$WORK/m"
expect_in "$WORK/out" "shard $WORK/copy/shard-2-of-3:"
expect_in "$WORK/out" "nothing was written"
[ ! -e "$WORK/m" ] && [ ! -e "$WORK/m.partial" ] || fail "a refused merge left a folder"
run_pilot 0 merge "${S[2]}" "${S[0]}" "${S[1]}" --out "$WORK/merged"
expect_in "$WORK/out" "merged 3 shards: 120 items"
expect_in "$WORK/out" "verify: ok (every manifest id accounted for exactly once over all 3 shards)"
expect_in "$WORK/out" "items/s summed over the shards"
exactly_once "$WORK/merged"
diff <(outcomes "$WORK/merged") <(outcomes "$WORK/runs/plain") || fail "merged results differ from one unsharded run"
fingerprint=$(sed -n 's/^fingerprint: \([0-9a-f]*\).*/\1/p' "$WORK/out")
run_pilot 0 verify "$WORK/merged" --expect "$fingerprint"
run_pilot 0 status "$WORK/merged"
expect_in "$WORK/out" "merged merged: finished"
for i in 0 1 2; do
  for f in run.json journal.jsonl environment.json; do
    [ -f "$WORK/merged/data/shards/shard-$i-of-3/$f" ] || fail "the merged bag lacks shard $i's $f"
  done
done
run_pilot 2 merge "${S[@]}" --out "$WORK/merged"
expect_in "$WORK/err" "already exists"
cp -r "$WORK/merged" "$WORK/tampered"
python3 - "$WORK/tampered" <<'PYEOF'
import hashlib, os, sys
d = sys.argv[1]
p = os.path.join(d, "data/results.jsonl")
lines = open(p).read().splitlines(True)
lines.pop(5)  # an id drops out of the merged results, re-hashed so fixity holds
open(p, "w").write("".join(lines))
def sha(f):
    return hashlib.sha256(open(os.path.join(d, f), "rb").read()).hexdigest()
m = [l.split("  ", 1) for l in open(os.path.join(d, "manifest-sha256.txt")).read().splitlines()]
open(os.path.join(d, "manifest-sha256.txt"), "w").write("".join(f"{sha(f)}  {f}\n" for _, f in m))
size = sum(os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(os.path.join(d, "data")) for f in fs)
count = sum(len(fs) for _, _, fs in os.walk(os.path.join(d, "data")))
info = open(os.path.join(d, "bag-info.txt")).read().splitlines()
info = [f"Payload-Oxum: {size}.{count}" if l.startswith("Payload-Oxum:") else l for l in info]
open(os.path.join(d, "bag-info.txt"), "w").write("\n".join(info) + "\n")
t = [l.split("  ", 1) for l in open(os.path.join(d, "tagmanifest-sha256.txt")).read().splitlines()]
open(os.path.join(d, "tagmanifest-sha256.txt"), "w").write("".join(f"{sha(f)}  {f}\n" for _, f in t))
PYEOF
run_pilot 1 verify "$WORK/tampered"
expect_in "$WORK/err" "manifest id has no result"

# 6. Acceptance is judged over the whole manifest at merge (exit 4), never by a shard.
python3 - "$WORK/params.json" "$WORK/strict.json" <<'PYEOF'
import json, sys
p = json.load(open(sys.argv[1])); p["acceptance"] = {"min_accepted_fraction": 0.999}
json.dump(p, open(sys.argv[2], "w"))
PYEOF
for i in 0 1; do run_pilot 0 run --shard "$i/2" --params "$WORK/strict.json" --runs-dir "$WORK/strict"; done
run_pilot 4 merge "$WORK"/strict/shard-{0,1}-of-2 --out "$WORK/strict-merged"
expect_in "$WORK/out" "acceptance: min_accepted_fraction not met"
run_pilot 0 verify "$WORK/strict-merged"

# 7. --workers: the same shards on one host, then merged into the run folder.
run_pilot 0 run --workers 2 --device cpu "${P[@]}" --run-id w2
expect_in "$WORK/out" "merged 2 shards: 120 items"
[ -d "$WORK/runs/w2.shards/shard-1-of-2" ] || fail "--workers left no shard folders"
diff <(outcomes "$WORK/runs/w2") <(outcomes "$WORK/runs/plain") || fail "--workers results differ"
run_pilot 2 run --workers 2 "${P[@]}" --run-id w2
expect_in "$WORK/err" "already exists"
run_pilot 2 run --workers 2 --shard 0/2 "${P[@]}" --run-id w3
expect_in "$WORK/err" "exclude each other"
# The merge inside --workers is killed at a write (the kill hook is the supervisor's; the
# workers do not inherit it): no run folder, the shards intact and finished; the same command
# again merges them without running them again.
for n in 1 5; do
  rc=0
  PILOT_TEST_KILL_AFTER_WRITE=$n "$PILOT" run --workers 2 --device cpu "${P[@]}" --run-id "wk$n" \
    >"$WORK/out" 2>"$WORK/err" || rc=$?
  [ "$rc" = 137 ] || { cat "$WORK/err"; fail "the kill hook did not stop the merge inside --workers at write $n (exit $rc)"; }
  [ ! -e "$WORK/runs/wk$n" ] || fail "a merge killed at write $n left a run folder"
  before=$(cat "$WORK/runs/wk$n.shards"/shard-{0,1}-of-2/tagmanifest-sha256.txt | sha256sum)
  run_pilot 0 run --workers 2 --device cpu "${P[@]}" --run-id "wk$n"
  expect_in "$WORK/out" "merged 2 shards: 120 items"
  [ "$(cat "$WORK/runs/wk$n.shards"/shard-{0,1}-of-2/tagmanifest-sha256.txt | sha256sum)" = "$before" ] ||
    fail "the shards were written again after the merge was killed at write $n"
  [ ! -e "$WORK/runs/wk$n.partial" ] || fail "the partial merged folder of write $n was left"
  run_pilot 0 verify "$WORK/runs/wk$n"
done
# A merge whose shards cannot all be open at once is refused up front (exit 3), naming the limit.
rc=0
(ulimit -n 100; "$PILOT" merge $(for i in $(seq 40); do printf '%s ' "${S[0]}"; done) --out "$WORK/m" >"$WORK/out" 2>"$WORK/err") || rc=$?
[ "$rc" = 3 ] || { cat "$WORK/err"; fail "merge over the open-file limit exited $rc, not 3"; }
expect_in "$WORK/err" "ulimit -n"

# 8. Export: each kind copied and verified; never into an existing folder; a kill mid-copy
# leaves no DEST and a retry finishes.
for src in "$WORK/runs/plain" "${S[0]}" "$WORK/merged"; do
  run_pilot 0 export "$src" "$WORK/exported/$(basename "$src")"
  expect_in "$WORK/out" "verified the copy in full at $WORK/exported/$(basename "$src")"
  expect_in "$WORK/out" "fingerprint: $(sha256sum "$src/tagmanifest-sha256.txt" | cut -c1-64) (the source's and the copy's)"
  run_pilot 0 verify "$WORK/exported/$(basename "$src")"
done
run_pilot 2 export "$WORK/merged" "$WORK/exported/merged"
expect_in "$WORK/err" "already exists"
run_pilot 2 export "$WORK/corpus" "$WORK/exported/corpus"
expect_in "$WORK/err" "not a pilot folder"
rc=0
PILOT_TEST_KILL_AFTER_WRITE=6 "$PILOT" export "$WORK/merged" "$WORK/killed" >/dev/null 2>&1 || rc=$?
[ "$rc" = 137 ] || fail "the kill hook did not fire (exit $rc)"
[ ! -e "$WORK/killed" ] || fail "a killed export left a folder at DEST"
[ -d "$WORK/killed.partial" ] || fail "a killed export left no partial folder"
run_pilot 1 verify "$WORK/killed.partial"
expect_in "$WORK/err" "missing"
run_pilot 0 export "$WORK/merged" "$WORK/killed"
[ ! -e "$WORK/killed.partial" ] && [ ! -e "$WORK/killed.partial.lock" ] || fail "the retry left the partial folder"
run_pilot 0 verify "$WORK/killed" --expect "$fingerprint"
# 9. Embeddings: the shards' vectors concatenated and renumbered in manifest order, row for
# row the vectors of one unsharded run.
PY=/usr/bin/python3
"$PY" -c 'import numpy' || fail "numpy is missing: run scripts/deps.sh (python3-numpy is a test dependency)"
E=(--params "$SRC/config/embed.json" --runs-dir "$WORK/embed" --device cpu)
run_pilot 0 run "${E[@]}" --run-id whole
for i in 0 1 2; do run_pilot 0 run --shard "$i/3" "${E[@]}"; done
run_pilot 0 merge "$WORK"/embed/shard-{0,1,2}-of-3 --out "$WORK/embed/merged"
run_pilot 0 verify "$WORK/embed/merged"
"$PY" - "$WORK/embed/whole" "$WORK/embed/merged" <<'PYEOF2'
import json, sys
import numpy as np
whole, merged = sys.argv[1], sys.argv[2]
a, b = np.load(whole + "/data/vectors.npy"), np.load(merged + "/data/vectors.npy")
assert a.shape == b.shape, (a.shape, b.shape)
assert (a == b).all(), "merged vectors differ from the unsharded run's"
rows = [json.loads(l) for l in open(merged + "/data/results.jsonl")]
accepted = [r for r in rows if r["status"] == "accepted"]
assert [r["row"] for r in accepted] == list(range(len(accepted))), "rows not renumbered in manifest order"
print(f"{len(accepted)} vectors of dim {b.shape[1]} agree")
PYEOF2

# 10. Export of a sweep folder (the fourth kind).
run_pilot 0 sweep --params "$WORK/params.json" --device cpu --groups 1 --batch-sizes 1,2 --repeats 1 --out "$WORK/sweep"
run_pilot 0 export "$WORK/sweep" "$WORK/exported/sweep"
expect_in "$WORK/out" "copied sweep folder"
expect_in "$WORK/out" "a sweep folder: record, groups and every cell against its sha256"
run_pilot 0 verify "$WORK/exported/sweep"
echo PASS
