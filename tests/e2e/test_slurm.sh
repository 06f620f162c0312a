#!/usr/bin/env bash
# A real Slurm, end to end: a single-node cluster (munged, slurmctld, slurmd from Debian's
# packages) started in a temporary folder, the recipe in scripts/slurm/ submitted with N = 4
# over a generated corpus, the merged bag checked; then one shard's task cancelled mid-run,
# that index resubmitted alone (it resumes its folder) and merged again: every id exactly
# once. Every daemon the test started is stopped by pid (tests/e2e/slurm_harness.sh).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/slurm_harness.sh"
for tool in munged mungekey slurmctld slurmd sbatch squeue scancel scontrol sinfo; do
  command -v "$tool" >/dev/null || fail "$tool not found: install the [test] packages (scripts/deps.sh --test)"
done
if [ "$(id -u)" -ne 0 ]; then
  echo "SKIP: the single-node Slurm runs its daemons as root (SlurmUser=root); CI runs as root" >&2
  exit 77
fi
# Outside $WORK (0700): munged wants every folder above its socket open to all.
cluster=$(mktemp -d /tmp/pilot-slurm.XXXXXX)
trap 'slurm_stop "$cluster" >/dev/null 2>&1 || true; rm -rf "$WORK" "$cluster"' EXIT
now() { date +%s.%N; }
since() { python3 -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$1" "$(now)"; }
state_of() { slurm_job_state "$1" | awk '{print $2}' | sort -u | tr '\n' ' ' | sed 's/ $//'; }

t=$(now)
slurm_start "$cluster" || fail "the single-node Slurm did not start"
echo "slurm: cluster up in $(since "$t") s"

make_corpus 400 "$WORK/corpus"
write_params "$WORK/params.json" "$WORK/corpus/manifest.json" 8
export PILOT
n=4

# 1. The recipe as the README gives it: an array of 4 shard tasks, then the merge.
t=$(now)
bash "$SRC/scripts/slurm/submit.sh" $n "$WORK/runs1" "$WORK/merged1" --params "$WORK/params.json" >"$WORK/jobs1"
array=$(sed -n 's/^array //p' "$WORK/jobs1")
merge=$(sed -n 's/^merge //p' "$WORK/jobs1")
[ -n "$array" ] && [ -n "$merge" ] || fail "submit.sh printed no job ids: $(cat "$WORK/jobs1")"
slurm_wait_job "$array" 600 || fail "array $array did not finish: $(slurm_job_state "$array")"
slurm_wait_job "$merge" 600 || fail "merge $merge did not finish: $(slurm_job_state "$merge")"
[ "$(state_of "$array")" = COMPLETED ] || { cat "$WORK"/runs1/slurm-*.out; fail "array tasks: $(slurm_job_state "$array")"; }
[ "$(state_of "$merge")" = COMPLETED ] || { cat "$WORK"/runs1/slurm-merge-*.out; fail "merge: $(slurm_job_state "$merge")"; }
echo "slurm: 4 shards + merge of 400 items in $(since "$t") s"
run_pilot 0 verify "$WORK/merged1"
expect_in "$WORK/out" "400 items"
exactly_once "$WORK/merged1"
for i in 0 1 2 3; do
  run_pilot 0 verify "$WORK/runs1/shard-$i-of-4"
  expect_in "$WORK/runs1/slurm-${array}_$i.out" "shard $i/4, from --shard $i/4"
done
grep -q '"folder_kind": "merged"' "$WORK/merged1/data/run.json" || fail "the merged folder is not of kind merged"

# 2. One task cancelled mid-run: the merge is cancelled with it (afterok can never hold).
# Batches are slowed so that shard 2 is caught with some items done and some not.
t=$(now)
PILOT_TEST_BATCH_DELAY_MS=400 bash "$SRC/scripts/slurm/submit.sh" $n "$WORK/runs2" "$WORK/merged2" \
  --params "$WORK/params.json" >"$WORK/jobs2"
array=$(sed -n 's/^array //p' "$WORK/jobs2")
merge=$(sed -n 's/^merge //p' "$WORK/jobs2")
journal="$WORK/runs2/shard-2-of-4/data/journal.jsonl"
for ((i = 0; i < 600; i++)); do
  [ "$(grep -c '"type":"batch"' "$journal" 2>/dev/null || true)" -ge 2 ] && break
  sleep 0.1
done
[ "$(grep -c '"type":"batch"' "$journal" 2>/dev/null || true)" -ge 2 ] || fail "shard 2 never got going: $(slurm_job_state "$array")"
scancel "${array}_2"
slurm_wait_job "$array" 600 || fail "array $array did not finish"
slurm_wait_job "$merge" 120 || fail "the merge $merge was left waiting: $(slurm_job_state "$merge")"
[ "$(state_of "${array}_2")" = CANCELLED ] || fail "task 2: $(slurm_job_state "${array}_2")"
[ "$(state_of "$merge")" = CANCELLED ] || fail "the merge should be cancelled with its dependency: $(slurm_job_state "$merge")"
[ ! -e "$WORK/merged2" ] || fail "a merge ran without shard 2"
[ ! -e "$WORK/runs2/shard-2-of-4/tagmanifest-sha256.txt" ] || fail "shard 2 finished before it was cancelled; slow it more"
done_before=$(grep -c '"type":"result"' "$journal")
echo "slurm: shard 2 cancelled after $done_before of its items"
# Merging by hand now refuses, naming the unfinished shard and how to finish it.
run_pilot 2 merge "$WORK"/runs2/shard-{0,1,2,3}-of-4 --out "$WORK/merged2"
expect_in "$WORK/err" "shard 2/4 is unfinished"
expect_in "$WORK/err" "pilot resume $WORK/runs2/shard-2-of-4"
[ ! -e "$WORK/merged2" ] || fail "a refused merge left a folder"

# 3. The index resubmitted alone resumes its folder; then the merge.
resub=$(sbatch --parsable --array=2 --output="$WORK/runs2/slurm-%A_%a.out" \
        "$SRC/scripts/slurm/shard.sbatch" $n "$WORK/runs2" --params "$WORK/params.json")
resub=${resub%%;*}
slurm_wait_job "$resub" 600 || fail "the resubmitted task did not finish"
[ "$(state_of "$resub")" = COMPLETED ] || { cat "$WORK"/runs2/slurm-"$resub"_2.out; fail "resubmitted: $(slurm_job_state "$resub")"; }
expect_in "$WORK/runs2/slurm-${resub}_2.out" "shard 2/4 resumes its folder"
[ "$(grep -c '"type":"session"' "$journal")" -ge 2 ] || fail "the resubmitted task did not resume shard 2's folder"
merge=$(sbatch --parsable --dependency="afterok:$resub" --output="$WORK/runs2/slurm-merge-%j.out" \
        "$SRC/scripts/slurm/merge.sbatch" $n "$WORK/runs2" "$WORK/merged2")
merge=${merge%%;*}
slurm_wait_job "$merge" 600 || fail "the merge did not finish"
[ "$(state_of "$merge")" = COMPLETED ] || { cat "$WORK"/runs2/slurm-merge-*.out; fail "merge: $(slurm_job_state "$merge")"; }
echo "slurm: cancel, resubmit and merge in $(since "$t") s"
run_pilot 0 verify "$WORK/merged2"
expect_in "$WORK/out" "400 items"
exactly_once "$WORK/merged2"
# The same outcome item by item as the uninterrupted job.
diff <(outcomes "$WORK/merged1") <(outcomes "$WORK/merged2") || fail "the resumed job's results differ"

t=$(now)
slurm_stop "$cluster" || fail "a daemon outlived slurm_stop"
echo "slurm: cluster stopped in $(since "$t") s"
echo "PASS"
