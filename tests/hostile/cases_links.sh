# Links and places: hard links out of a folder pilot writes, symlinked parents of what pilot
# creates, folder arguments given as links, and outputs inside a pilot folder
# (docs/security.md, "Paths you give" and "Files pilot writes").
#   - A file pilot appends to, cuts or rewrites in place (a journal, a lock, a worker's log)
#     is never shared through a hard link: the other name keeps its bytes.
#   - A path given on the command line is resolved once, symlinks included; inside a pilot
#     folder, and in the names pilot derives (RUN_ID.shards), no link is followed.
#   - No command creates anything inside a pilot folder (one shared check).
# Sourced by catalogue.sh; each hc_links__NAME function is one case.

G=runs/good
R=runs/part
# status_of DIR: `pilot status --json DIR` as "state done total".
status_of() {
  aux status "$1" --json
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["state"], d["done"], d["total"])' "$AUX_OUT"
}

# --- hard links: the other name never changes ---------------------------------------------
hc_links__resume_lock_hardlinked_outside() {
  copy_run part || return
  ln "$C/outside/victim.txt" "$C/$R/.lock"
  want_rc 0
  hrun resume "$R"
  [ -f "$C/$R/tagmanifest-sha256.txt" ] || bad "the run did not finish"
}
hc_links__resume_journal_hardlinked_outside() {
  copy_run part || return
  ln "$C/$R/data/journal.jsonl" "$C/outside/journal-link.jsonl"
  want_rc 0
  hrun resume "$R"
  [ "$(grep -c '"type":"result"' "$C/$R/data/journal.jsonl")" = 12 ] || bad "the run's own journal lacks its 12 results"
}
hc_links__resume_journal_hardlinked_torn_tail() {
  # A torn last record is cut (Truncate) before the appends: neither reaches the other name.
  copy_run part || return
  printf '{"type":"result","id":"doc-0' >>"$C/$R/data/journal.jsonl"
  ln "$C/$R/data/journal.jsonl" "$C/outside/journal-link.jsonl"
  want_rc 0
  hrun resume "$R"
}
hc_links__resume_after_cp_al_snapshot() {
  # `cp -al` makes a snapshot of hard links: resuming the run leaves the snapshot as it was.
  copy_run part || return
  cp -al "$C/$R" "$C/runs/snap"
  guard_bytes "$C/runs/snap"
  want_rc 0
  hrun resume "$R"
  [ "$(status_of runs/snap)" = "interrupted 4 12" ] || bad "the snapshot's status changed: $(status_of runs/snap)"
  aux verify "$R"
  [ "$AUX_RC" = 0 ] || bad "the resumed run does not verify (exit $AUX_RC)"
}
hc_links__adapt_resume_journal_hardlinked_outside() {
  copy_run apart || return
  ln "$C/runs/apart/data/journal.jsonl" "$C/outside/adapt-journal.jsonl"
  want_rc 0
  hrun resume runs/apart
}
hc_links__adapt_resume_lock_hardlinked_outside() {
  copy_run apart || return
  ln "$C/outside/victim.txt" "$C/runs/apart/.lock"
  want_rc 0
  hrun resume runs/apart
}
hc_links__sweep_resume_cells_hardlinked_outside() {
  # A sweep stopped (Ctrl-C) after its first cells, its cells journal then linked outside.
  (cd "$C" && exec "$PILOT" sweep --params "$P" --device cpu --groups 2 --batch-sizes 1,2,4,8 --repeats 1 \
    --out runs/sw >/dev/null 2>&1) &
  local pid=$! i
  for i in $(seq 1 600); do
    [ "$( (cat "$C/runs/sw/data/cells.jsonl" 2>/dev/null || true) | wc -l)" -ge 2 ] && break
    sleep 0.05
  done
  kill -INT "$pid" 2>/dev/null
  wait "$pid"
  [ -f "$C/runs/sw/data/cells.jsonl" ] && [ ! -f "$C/runs/sw/tagmanifest-sha256.txt" ] ||
    { bad "could not make an interrupted sweep"; return; }
  ln "$C/runs/sw/data/cells.jsonl" "$C/outside/cells.jsonl"
  want_rc 0
  hrun resume runs/sw
  [ -f "$C/runs/sw/tagmanifest-sha256.txt" ] || bad "the sweep did not finish"
}
hc_links__workers_log_hardlinked_outside() {
  mkdir -p "$C/runs/w.shards"
  printf 'an outside log\n' >"$C/outside/log.txt"
  ln "$C/outside/log.txt" "$C/runs/w.shards/shard-0-of-2.log"
  want_rc 0
  hrun run --params "$P" --runs-dir runs --run-id w --workers 2 --device cpu
}
hc_links__decide_stale_lock_hardlinked_outside() {
  # A finished folder with a stale lock linked to a file outside: decide removes its own name
  # of it, never writes through it.
  copy_run good || return
  ln "$C/outside/victim.txt" "$C/$G/.lock"
  want_rc 0
  hrun decide "$G" --decision go --reason "linked lock"
  [ ! -e "$C/$G/.lock" ] || bad "a lock file was left on the finished folder"
  aux verify "$G"
  [ "$AUX_RC" = 0 ] || bad "the folder does not verify after decide (exit $AUX_RC)"
}

# --- symlinked parents: resolved once, used for everything ------------------------------------
hc_links__export_dest_parent_symlink() {
  copy_run good || return
  mkdir -p "$C/elsewhere" && ln -s elsewhere "$C/link"
  want_rc 0
  hrun export "$G" link/copy
  [ -f "$C/elsewhere/copy/tagmanifest-sha256.txt" ] || bad "the copy is not in the folder the link names"
  [ -z "$(find "$C" -name '*.partial*' -print -quit)" ] || bad "a partial folder or its lock was left"
  [ -L "$C/link" ] || bad "the link itself was replaced"
}
hc_links__merge_out_parent_symlink() {
  copy_run shards || return
  mkdir -p "$C/elsewhere" && ln -s elsewhere "$C/link"
  want_rc 0
  hrun merge runs/shard-0-of-2 runs/shard-1-of-2 --out link/m
  [ -f "$C/elsewhere/m/tagmanifest-sha256.txt" ] || bad "the merged folder is not in the folder the link names"
  [ -z "$(find "$C" -name '*.partial*' -print -quit)" ] || bad "a partial folder or its lock was left"
}
hc_links__workers_shards_dir_symlink_outside() {
  # RUN_ID.shards is a name pilot derives: a link there is refused, nothing written where it
  # points, no run folder made.
  ln -s "$C/outside" "$C/runs/w.shards"
  want_rc 2
  want_err 'w\.shards' 'symlink'
  hrun run --params "$P" --runs-dir runs --run-id w --workers 2 --device cpu
  [ ! -e "$C/runs/w" ] || bad "a run folder was created"
}
hc_links__plan_out_parent_symlink() {
  copy_run good || return
  cpu_prices_file "$C/prices.json"
  mkdir -p "$C/elsewhere" && ln -s elsewhere "$C/link"
  want_rc 0 4
  hrun plan --from "$G" --corpus-items 100 --prices prices.json --out link/plan.json
  [ -f "$C/elsewhere/plan.json" ] || bad "plan.json is not in the folder the link names"
}
hc_links__runs_dir_symlink_to_a_folder() {
  mkdir -p "$C/elsewhere" && ln -s elsewhere "$C/linked-runs"
  want_rc 0
  hrun run --params "$P" --runs-dir linked-runs --run-id r
  [ -f "$C/elsewhere/r/tagmanifest-sha256.txt" ] || bad "the run folder is not in the folder the link names"
}

# --- folder arguments given as links: resolved the same way on every command ----------------
hc_links__export_source_given_as_symlink() {
  copy_run good || return
  ln -s good "$C/runs/link"
  want_rc 0
  guard "$C/$G"
  hrun export runs/link copy
  [ -f "$C/copy/tagmanifest-sha256.txt" ] || bad "no copy"
}
hc_links__merge_shard_given_as_symlink() {
  copy_run shards || return
  ln -s shard-1-of-2 "$C/runs/s1-link"
  want_rc 0
  hrun merge runs/shard-0-of-2 runs/s1-link --out runs/m2
}
hc_links__verify_status_through_a_symlink() {
  copy_run good || return
  ln -s good "$C/runs/link"
  aux status runs/link
  [ "$AUX_RC" = 0 ] || bad "status through a link: exit $AUX_RC"
  want_rc 0
  guard "$C/$G"
  hrun verify runs/link
}
hc_links__folder_argument_symlink_loop() {
  ln -s loop "$C/loop"
  want_rc 2
  want_err 'loop'
  quick
  hrun verify loop
}

# --- outputs inside a pilot folder: refused by one shared check -------------------------------
inside_refused() { want_rc 2; want_err 'inside the pilot folder|is the pilot folder' "$1"; guard "$C/$G"; }
hc_links__run_runs_dir_inside_a_bag() {
  copy_run good || return
  inside_refused '--runs-dir'
  hrun run --params "$P" --runs-dir "$G/data"
}
hc_links__run_runs_dir_is_a_bag() {
  copy_run good || return
  inside_refused '--runs-dir'
  hrun run --params "$P" --runs-dir "$G"
}
hc_links__run_runs_dir_link_into_a_bag() {
  copy_run good || return
  ln -s "$G/data" "$C/sneaky"
  inside_refused '--runs-dir'
  hrun run --params "$P" --runs-dir sneaky
}
hc_links__merge_out_inside_a_bag() {
  copy_run shards || return
  copy_run good || return
  inside_refused '--out'
  hrun merge runs/shard-0-of-2 runs/shard-1-of-2 --out "$G/data/m"
}
hc_links__export_dest_inside_another_bag() {
  copy_run shards || return
  copy_run good || return
  inside_refused 'DEST'
  hrun export runs/mgood "$G/data/copy"
}
hc_links__sweep_out_inside_a_bag() {
  copy_run good || return
  inside_refused '--out'
  hrun sweep --params "$P" --device cpu --groups 1 --batch-sizes 1 --repeats 1 --out "$G/data/sw"
}
hc_links__adapt_runs_dir_inside_a_bag() {
  copy_run good || return
  inside_refused '--runs-dir'
  hrun adapt --params proj/config/adapt.json --runs-dir "$G/data"
}
hc_links__manifest_out_inside_a_bag() {
  copy_run good || return
  inside_refused '--out'
  hrun manifest proj/data/pilot --out "$G/data/m.json"
}
hc_links__plan_out_inside_a_bag() {
  copy_run good || return
  cpu_prices_file "$C/prices.json"
  inside_refused '--out'
  hrun plan --from "$G" --corpus-items 100 --prices prices.json --out "$G/data/plan.json"
}
hc_links__run_runs_dir_inside_an_unfinished_run() {
  # A folder still being written (its lock, its journal) is a pilot folder too.
  copy_run part || return
  want_rc 2; want_err 'inside the pilot folder' '--runs-dir'
  guard "$C/$R"
  hrun run --params "$P" --runs-dir "$R/data/x"
}

# --- doctor checks what run will use -----------------------------------------------------------
hc_links__doctor_runs_dir_symlink_loop() {
  ln -s loop "$C/loop"
  want_rc 3
  quick
  hrun doctor --params "$P" --device cpu --runs-dir loop
  grep -q 'disk .*would refuse' "$OUT" || bad "doctor does not fail the disk check: $(grep disk "$OUT")"
  grep -q 'writable' "$OUT" && ! grep -q 'NOT writable\|would refuse' "$OUT" && bad "doctor calls a loop writable"
}
hc_links__doctor_runs_dir_inside_a_bag() {
  copy_run good || return
  want_rc 3
  guard "$C/$G"
  hrun doctor --params "$P" --device cpu --runs-dir "$G/data"
  grep -q 'would refuse.*inside the pilot folder' "$OUT" || bad "doctor does not say run would refuse it"
}

cpu_prices_file() {
  printf '%s\n' '{"currency": "EUR", "cards": [{"name": "node", "class": "cpu", "memory_gb": 64, "cards_per_lot": 1, "lot_price": {"3": 30, "7": 60}}]}' >"$1"
}

# --- from the review of the first fixes -----------------------------------------------------
hc_links__decide_folder_swapped_while_locked() {
  # The runs folder is renamed and a link to a copy put in its place while decide holds the
  # lock: every write lands in the folder decide resolved, locked and verified; the copy is
  # never written.
  copy_run good || return
  printf '%s\n' '{"ok": true, "checks": [{"name": "host", "status": "pass", "required": true}]}' >"$C/doctor.json"
  (cd "$C" && PILOT_TEST_DECIDE_PAUSE=locked exec "$PILOT" decide runs/good --doctor doctor.json --decision go \
    --reason swapped >"$T/d.out" 2>"$T/d.err") &
  local pid=$! i
  for i in $(seq 1 200); do grep -q 'paused as' "$T/d.err" 2>/dev/null && break; sleep 0.05; done
  mv "$C/runs" "$C/runs.old"
  cp -a "$C/runs.old" "$C/decoy"
  ln -s decoy "$C/runs"
  guard "$C/decoy"
  local rc=0
  wait "$pid" || rc=$?
  [ "$rc" = 0 ] || bad "decide exited $rc: $(tr '\n' '|' <"$T/d.err")"
  [ -f "$C/runs.old/good/decisions.jsonl" ] || bad "the decision is not in the folder decide locked"
  [ ! -e "$C/runs.old/good/.lock" ] || bad "a lock was left in the folder decide locked"
  want_rc 0
  hrun verify runs.old/good
}
hc_links__run_folder_swapped_while_running() {
  # The runs folder renamed and replaced by a link to another place while a run writes: the
  # run finishes in the folder it made, nothing is written where the link points.
  mkdir -p "$C/elsewhere"
  (cd "$C" && PILOT_TEST_BATCH_DELAY_MS=300 exec "$PILOT" run --params "$P" --runs-dir runs --run-id r \
    >"$T/r.out" 2>"$T/r.err") &
  local pid=$! i
  for i in $(seq 1 200); do [ -s "$C/runs/r/data/journal.jsonl" ] && break; sleep 0.05; done
  mv "$C/runs" "$C/runs.old"
  ln -s elsewhere "$C/runs"
  guard "$C/elsewhere"
  local rc=0
  wait "$pid" || rc=$?
  [ "$rc" = 0 ] || bad "the run exited $rc: $(tr '\n' '|' <"$T/r.err")"
  want_rc 0
  hrun verify runs.old/r
}
hc_links__inputs_folder_swapped_while_running() {
  # The inputs' folder renamed and replaced by a link to a decoy with the same names while a
  # run reads it: every item is read from the folder pinned when the run began.
  mkdir -p "$C/decoy"
  local f
  for f in "$C/$D"/*; do [ -f "$f" ] && printf 'decoy text\n' >"$C/decoy/$(basename "$f")"; done
  (cd "$C" && PILOT_TEST_BATCH_DELAY_MS=300 exec "$PILOT" run --params "$P" --runs-dir runs --run-id r \
    >"$T/r.out" 2>"$T/r.err") &
  local pid=$! i
  for i in $(seq 1 200); do [ -s "$C/runs/r/data/journal.jsonl" ] && break; sleep 0.05; done
  mv "$C/$D" "$C/$D.old"
  ln -s "$C/decoy" "$C/$D"
  local rc=0
  wait "$pid" || rc=$?
  rm "$C/$D" && mv "$C/$D.old" "$C/$D"  # the project back as it was, for the guard
  [ "$rc" = 0 ] || bad "the run exited $rc: $(tr '\n' '|' <"$T/r.err")"
  grep -q '"reason":"input_changed"' "$C/runs/r/data/results.jsonl" && bad "an item was read from the decoy"
  want_rc 0
  hrun verify runs/r
}
hc_links__workers_shards_dir_is_a_bag() {
  copy_run good || return
  cp -a "$C/$G" "$C/runs/w.shards"
  guard "$C/runs/w.shards"
  want_rc 2; want_err 'is the pilot folder' 'w\.shards'
  hrun run --params "$P" --runs-dir runs --run-id w --workers 2 --device cpu
}
hc_links__doctor_runs_dir_under_a_file() {
  : >"$C/afile"
  want_rc 3
  quick
  hrun doctor --params "$P" --device cpu --runs-dir afile/sub
  grep -q 'would refuse.*not a folder' "$OUT" || bad "doctor does not say run would refuse it: $(grep disk "$OUT")"
}
hc_links__doctor_runs_dir_under_a_dangling_link() {
  ln -s nowhere "$C/dangling"
  want_rc 3
  quick
  hrun doctor --params "$P" --device cpu --runs-dir dangling/sub
  grep -q 'would refuse.*symlink to nothing' "$OUT" || bad "doctor does not say run would refuse it: $(grep disk "$OUT")"
}
hc_links__run_runs_dir_under_a_dangling_link() {
  ln -s nowhere "$C/dangling"
  refuse '--runs-dir' 'symlink to nothing'
  hrun run --params "$P" --runs-dir dangling/sub
}
hc_links__sweep_out_not_a_run_id() {
  want_rc 2; want_err 'not a valid run id' '--out'
  hrun sweep --params "$P" --device cpu --groups 1 --batch-sizes 1 --repeats 1 --out 'runs/s b'
  [ -z "$(ls -A "$C/runs")" ] || bad "a folder was created: $(ls -A "$C/runs")"
}
hc_links__adapt_resume_stale_lock_then_interrupted() {
  copy_run apart || return
  echo 999999 >"$C/runs/apart/.lock"
  want_rc 130
  hrun resume runs/apart --stop-after 5
  [ ! -e "$C/runs/apart/.lock" ] || bad "the lock was left after a clean stop"
}
hc_links__export_damaged_source_copies_nothing() {
  copy_run good || return
  printf 'x' >>"$C/$G/data/report.md"
  rm "$C/$G/data/params.json"
  want_rc 2; want_err 'fails verification' 'nothing was copied'
  guard "$C/$G"
  hrun export "$G" copy
  [ ! -e "$C/copy" ] && [ ! -e "$C/copy.partial" ] && [ ! -e "$C/copy.partial.lock" ] || bad "something was copied"
}

# --- from the second review -------------------------------------------------------------------
hc_links__workers_runs_swapped_while_working() {
  # --runs-dir renamed and replaced by a link while the workers run: the shards and the merged
  # folder land in the folder resolved when the command began; nothing where the link points.
  mkdir -p "$C/elsewhere/w.shards"
  (cd "$C" && PILOT_TEST_BATCH_DELAY_MS=300 exec "$PILOT" run --params "$P" --runs-dir runs --run-id w --workers 2 \
    --device cpu >"$T/r.out" 2>"$T/r.err") &
  local pid=$! i
  for i in $(seq 1 300); do
    [ -s "$C/runs/w.shards/shard-0-of-2/data/journal.jsonl" ] && [ -s "$C/runs/w.shards/shard-1-of-2/data/journal.jsonl" ] && break
    sleep 0.05
  done
  mv "$C/runs" "$C/runs.old"
  ln -s elsewhere "$C/runs"
  kill -0 "$pid" 2>/dev/null || bad "the workers finished before the swap (no race)"
  guard "$C/elsewhere"
  local rc=0
  wait "$pid" || rc=$?
  [ "$rc" = 0 ] || bad "the run exited $rc: $(tr '\n' '|' <"$T/r.err")"
  [ -d "$C/runs.old/w/data" ] || bad "the merged folder is not beside the shards"
  want_rc 0
  hrun verify runs.old/w
}
hc_links__sweep_folder_swapped_while_cells_run() {
  # The runs folder renamed and replaced by a link to a decoy while a sweep's cells run: every
  # cell (its process, its stderr, its figures) stays in the sweep folder made; the decoy,
  # which holds a folder of the same name, is never written.
  mkdir -p "$C/decoy/s"
  (cd "$C" && exec "$PILOT" sweep --params "$P" --device cpu --groups 1 --batch-sizes 1,2,4,8 --repeats 1 \
    --out runs/s >"$T/s.out" 2>"$T/s.err") &
  local pid=$! i
  for i in $(seq 1 600); do [ -s "$C/runs/s/data/cells.jsonl" ] && break; sleep 0.05; done
  mv "$C/runs" "$C/runs.old"
  ln -s decoy "$C/runs"
  kill -0 "$pid" 2>/dev/null || bad "the sweep finished before the swap (no race)"
  guard "$C/decoy"
  local rc=0
  wait "$pid" || rc=$?
  [ "$rc" = 0 ] || bad "the sweep exited $rc: $(tr '\n' '|' <"$T/s.err")"
  [ "$(grep -c . "$C/runs.old/s/data/cells.jsonl")" -ge 2 ] || bad "the cells after the swap are not in the sweep folder"
  want_rc 0
  hrun verify runs.old/s
}
hc_links__given_run_folder_data_links_out() {
  # A run folder whose data/ is a link out of it: status never reads through it.
  copy_run good || return
  mv "$C/$G/data" "$C/outside/data"
  ln -s "$C/outside/data" "$C/$G/data"
  guard "$C/$G"
  want_rc 2; want_err 'leads outside|symlink' 'data'
  hrun status "$G"
}
hc_links__export_dest_dotdot_resolved_by_the_file_system() {
  # DEST "link/../copy" is the folder above where the link points (cd -P), as every path
  # given is resolved: never the folder that holds the link.
  copy_run good || return
  mkdir -p "$C/far/inner"
  ln -s far/inner "$C/link"
  want_rc 0
  hrun export "$G" link/../copy
  [ -d "$C/far/copy" ] || bad "the copy is not in far/ (where link/.. is)"
  [ ! -e "$C/copy" ] || bad "the copy went beside the link"
}
hc_links__merge_stale_partial_too_deep() {
  # A stale DEST.partial (with its lock file) nested 300 deep: refused, bounded message.
  copy_run good || return
  local i
  : >"$C/out.partial.lock"
  mkdir -p "$C/out.partial"
  (cd "$C/out.partial" && for i in $(seq 1 300); do mkdir d && cd d || exit 1; done)
  want_rc 2; want_err 'nested more than 256' 'out\.partial' 'remove it by hand'
  hrun export "$G" out
  [ "$(wc -c <"$ERR")" -lt 2000 ] || bad "the message is $(wc -c <"$ERR") bytes"
}

# --- from the third review ----------------------------------------------------------------------
hc_links__workers_shards_folder_swapped_for_decoy_shards() {
  # RUN_ID.shards renamed and replaced by a link to another job's finished shards while the
  # workers run: the merge reads the shards the workers wrote, never the decoy's.
  (cd "$C" && exec "$PILOT" run --params "$P" --runs-dir decoyruns --run-id w --workers 2 --device cpu \
    >/dev/null 2>&1) || { bad "no decoy shards"; return; }
  (cd "$C" && PILOT_TEST_BATCH_DELAY_MS=300 exec "$PILOT" run --params "$P" --runs-dir runs --run-id w --workers 2 \
    --device cpu >"$T/r.out" 2>"$T/r.err") &
  local pid=$! i
  for i in $(seq 1 300); do [ -s "$C/runs/w.shards/shard-0-of-2/data/journal.jsonl" ] && break; sleep 0.05; done
  mv "$C/runs/w.shards" "$C/runs/w.shards.real"
  ln -s ../decoyruns/w.shards "$C/runs/w.shards"
  kill -0 "$pid" 2>/dev/null || bad "the workers finished before the swap (no race)"
  guard "$C/decoyruns"
  local rc=0
  wait "$pid" || rc=$?
  [ "$rc" = 0 ] || bad "the run exited $rc: $(tr '\n' '|' <"$T/r.err")"
  local k want got
  for k in 0 1; do
    want=$(sha256sum "$C/runs/w.shards.real/shard-$k-of-2/tagmanifest-sha256.txt" | cut -c1-64)
    grep -q "$want" "$C/runs/w/data/run.json" || bad "shard $k of the merge is not the one its worker wrote"
  done
  want_rc 0
  hrun verify runs/w
}
hc_links__handed_down_folder_removed() {
  # A folder handed down as /proc/self/fd/N that was removed before pilot began: refused, and
  # nothing made under the name the kernel gives it ("NAME (deleted)").
  mkdir "$C/gone"
  exec 7<"$C/gone"
  rmdir "$C/gone"
  want_rc 2; want_err 'has been removed' '/proc/self/fd/7'
  hrun run --params "$P" --runs-dir /proc/self/fd/7 --run-id g --device cpu
  exec 7<&-
  [ -z "$(ls -A "$C" | grep -F deleted)" ] || bad "a folder was made: $(ls -A "$C" | grep -F deleted)"
}
hc_links__own_process_paths_are_refused() {
  # /proc/self/... names pilot's own descriptors (its pins), not a folder of the person's.
  mkdir -p "$C/inputs" && echo hello >"$C/inputs/a.txt"
  want_rc 2; want_err 'handed when it started' '/proc/self/fd/3'
  guard "$C/inputs"
  hrun manifest inputs --out /proc/self/fd/3/m.json
  copy_run good || return
  aux export "$G" /proc/self/cwd/copy
  [ "$AUX_RC" = 2 ] && grep -q 'own process' "$AUX_ERR" || bad "export into /proc/self/cwd: exit $AUX_RC: $(tr '\n' '|' <"$AUX_ERR")"
}
hc_links__sweep_cell_on_a_finished_sweep() {
  # The internal cell command handed a finished sweep by hand: refused, the bag untouched.
  copy_run sgood || return
  exec 6<"$C/runs/sgood"
  want_rc 2; want_err 'not a sweep being run'
  guard "$C/runs/sgood"
  hrun sweep-cell /proc/self/fd/6 --group 1 --batch-size 1 --out .cell-g1-b1.json
  exec 6<&-
}
hc_links__sweep_cell_out_is_its_own_file() {
  copy_run sgood || return
  want_rc 2; want_err '--out' '\.cell-g1-b1\.json'
  guard "$C/runs/sgood"
  hrun sweep-cell runs/sgood --group 1 --batch-size 1 --out bagit.txt
}
