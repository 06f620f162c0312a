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
  guard "$C/runs/snap"
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
