# SIGINT and SIGTERM stop a run with exit 130 and a resumable folder; a second SIGINT stops
# at once; status reports correct counts mid-run and afterwards; a second writer is
# refused with the holder's pid; resume refuses changed parameters or model; progress
# shows on a terminal only.
source "$(dirname "$0")/lib.sh"
make_corpus 3000 corpus
write_params p.json corpus/manifest.json 1

start_run() {  # start_run ID [DELAY_MS]: a background run (3000 batches of 1 item, >= 6 s) that has journaled a batch
  PILOT_TEST_BATCH_DELAY_MS=${2:-2} "$PILOT" run --params p.json --runs-dir runs --run-id "$1" >"$1.out" 2>"$1.err" &
  pid=$!
  wait_for "runs/$1/data/journal.jsonl" '"type":"batch"'
}

# Status mid-run, and a second writer refused.
start_run live
run_pilot 0 status runs/live --json
expect_in out '"state": "running"'
expect_in out "\"writer_pid\": $pid"
done_n=$(sed -n 's/.*"done": \([0-9]*\).*/\1/p' out)
acc=$(sed -n 's/.*"accepted": \([0-9]*\).*/\1/p' out)
rej=$(sed -n 's/.*"rejected": \([0-9]*\).*/\1/p' out)
[ "$done_n" -ge 1 ] && [ "$done_n" -le 3000 ] || fail "status done=$done_n"
[ $((acc + rej)) -eq "$done_n" ] || fail "accepted + rejected != done in status"
expect_in out '"total": 3000'
run_pilot 2 resume runs/live
expect_in err "being written by process $pid"

# SIGTERM: stop after the batch, exit 130, say how to resume.
kill -TERM $pid
rc=0; wait $pid || rc=$?
[ "$rc" -eq 130 ] || { cat live.err; fail "SIGTERM: exit $rc, expected 130"; }
expect_in live.err "pilot resume"
run_pilot 0 status runs/live
expect_in out "interrupted"
n_journal=$(grep -c '"type":"result"' runs/live/data/journal.jsonl)
expect_in out "$n_journal/3000 items done"
[ ! -e runs/live/.lock ] || fail "a clean stop leaves no lock"

# Resume refuses changed parameters, then a changed model, naming them; nothing changes.
before=$(tree_sum runs/live)
cp runs/live/data/params.json params.bak
sed -i 's/"batch_size": 1/"batch_size": 2/' runs/live/data/params.json
run_pilot 2 resume runs/live
expect_in err "the parameter file changed since the run started"
expect_in err "data/params.json"
cp params.bak runs/live/data/params.json
[ "$before" = "$(tree_sum runs/live)" ] || fail "a refused resume modified the folder"

# Resume finishes it.
run_pilot 0 resume runs/live --quiet
expect_in out "3000 items"
run_pilot 0 verify runs/live
exactly_once runs/live
run_pilot 0 status runs/live
expect_in out "finished"
run_pilot 2 resume runs/live
expect_in err "already finished"

# SIGINT once: exit 130; twice: at once, still resumable.
start_run int1
kill -INT $pid
rc=0; wait $pid || rc=$?
[ "$rc" -eq 130 ] || fail "SIGINT: exit $rc, expected 130"
start_run int2 400   # it lingers 400 ms after each batch: time for a second Ctrl-C
kill -INT $pid
wait_for int2.err "stopping after the current batch"
kill -INT $pid
rc=0; wait $pid || rc=$?
[ "$rc" -eq 130 ] || fail "double SIGINT: exit $rc, expected 130"
expect_in int2.err "stopping now"
for r in int1 int2; do
  run_pilot 0 resume runs/$r --quiet
  run_pilot 0 verify runs/$r
  exactly_once runs/$r
done

# Progress: a live line on a terminal, nothing of the sort otherwise.
write_params small.json "$SRC/data/pilot/manifest.json" 4
run_pilot 0 run --params small.json --runs-dir runs --run-id notty
expect_not_in err "items/s, ETA"
if command -v script >/dev/null; then
  script -qec "$PILOT run --params small.json --runs-dir runs --run-id tty" /dev/null >tty.txt
  expect_in tty.txt "12/12 items"
  expect_in tty.txt "items/s, ETA"
  script -qec "$PILOT run --params small.json --runs-dir runs --run-id ttyq --quiet" /dev/null >ttyq.txt
  expect_not_in ttyq.txt "items/s, ETA"
fi
echo PASS
