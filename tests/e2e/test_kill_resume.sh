# SIGKILL at many points of a run of 3000 small items, including the journal's header and
# during the final bag writing; resume each, and check that the folder verifies, every id
# appears exactly once, and the results equal those of a straight-through run.
source "$(dirname "$0")/lib.sh"
make_corpus 3000 corpus
write_params p.json corpus/manifest.json 16

run_pilot 0 run --params p.json --runs-dir runs --run-id ref --quiet
outcomes runs/ref >ref.txt
batches=$(grep -c '"type":"batch"' runs/ref/data/journal.jsonl)
# Writes of a fresh run: manifest copy, params copy, header, session, bagit.txt,
# environment.json, run.json; one per batch; results, report.json, report.md, run.json,
# manifest-sha256.txt, bag-info.txt, tagmanifest-sha256.txt.
total=$((batches + 14))

points=(1 2 3 4 5 6 7)
for ((k = 1; k <= 10; k++)); do points+=($((7 + k * batches / 11))); done
for ((k = total - 6; k <= total; k++)); do points+=("$k"); done
echo "kill points (${#points[@]} of $total writes): ${points[*]}"

resumed=0
for k in "${points[@]}"; do
  rc=0
  PILOT_TEST_KILL_AFTER_WRITE=$k "$PILOT" run --params p.json --runs-dir runs --run-id "k$k" --quiet \
    >/dev/null 2>err.txt || rc=$?
  [ "$rc" -eq 137 ] || { cat err.txt; fail "kill point $k: exit $rc, expected 137 (SIGKILL)"; }
  [ ! -f "runs/k$k/tagmanifest-sha256.txt" ] || [ -f "runs/k$k/.lock" ] || fail "kill point $k: looks finished"
  if [ "$k" -le 3 ]; then
    # Killed after the manifest's copy (1), the parameters' copy (2) or inside the journal's
    # header (3): no item was processed; resume says so.
    run_pilot 2 resume "runs/k$k"
    expect_in err "never started"
    continue
  fi
  run_pilot 0 resume "runs/k$k" --quiet
  run_pilot 0 verify "runs/k$k"
  exactly_once "runs/k$k"
  outcomes "runs/k$k" | cmp -s - ref.txt || fail "kill point $k: results differ from a straight run"
  resumed=$((resumed + 1))
done

# A write count past the end never fires: the count above is right.
PILOT_TEST_KILL_AFTER_WRITE=$((total + 1)) "$PILOT" run --params p.json --runs-dir runs --run-id past --quiet \
  >/dev/null || fail "a kill point past the last write fired"

# Kills at arbitrary instants (not at write boundaries), by the clock. --foreground: timeout
# kills pilot alone and waits until it is gone (without it, timeout kills its own process group,
# itself included, and returns while pilot may still be exiting and holding the lock).
for delay in 0.4 0.8 1.2; do
  rc=0
  timeout --foreground -s KILL "$delay" "$PILOT" run --params p.json --runs-dir runs --run-id "t$delay" --quiet \
    >/dev/null 2>&1 || rc=$?
  [ -f "runs/t$delay/data/journal.jsonl" ] || continue  # killed before the folder had a journal
  if [ -f "runs/t$delay/tagmanifest-sha256.txt" ] && [ ! -f "runs/t$delay/.lock" ]; then
    run_pilot 0 verify "runs/t$delay"  # the run finished before the kill
  else
    run_pilot 0 resume "runs/t$delay" --quiet
  fi
  exactly_once "runs/t$delay"
  outcomes "runs/t$delay" | cmp -s - ref.txt || fail "timed kill $delay: results differ"
  resumed=$((resumed + 1))
done
echo "resumed and verified after $resumed kills"
echo PASS
