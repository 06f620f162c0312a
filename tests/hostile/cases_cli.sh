# Hostile command lines: empty, escaping, looping, over-long and non-UTF-8 arguments, and
# `pilot manifest` on folders holding odd names, symlinks out and FIFOs. A bad argument is
# exit 2 (usage) with no run folder; nothing crashes; --json output is always valid JSON.
# Sourced by catalogue.sh; each hc_cli__NAME function is one case.

runc() { hrun run --params "$P" "$@"; }
# top_before / top_after: the case folder's top-level names do not change (no run folder
# created beside runs/ by an empty or escaping --runs-dir / --run-id).
top_before() { TOP_BEFORE=$(ls -A "$C"); }
top_after() { [ "$(ls -A "$C")" = "$TOP_BEFORE" ] || bad "new entries in the case folder: $(comm -13 <(echo "$TOP_BEFORE") <(ls -A "$C") | tr '\n' ' ')"; }
# inputs DIR: a folder with two of the bundled documents.
inputs() { mkdir -p "$C/$1"; cp "$D/doc-01.txt" "$D/doc-02.txt" "$C/$1/"; }
# manifest_ids_ok FILE: checks the written manifest's ids (1-128 of [A-Za-z0-9._-], unique).
manifest_ids_ok() {
  local why
  why=$(python3 - "$1" 2>&1 <<'EOF'
import json, re, sys
d = json.load(open(sys.argv[1], encoding="utf-8"))
ids = [i["id"] for i in d["items"]]
bad = [i for i in ids if not re.fullmatch(r"[A-Za-z0-9._-]{1,128}", i)]
if bad:
    sys.exit("invalid ids: %r" % [b[:16] + "...(%d chars)" % len(b) for b in bad])
if len(set(ids)) != len(ids):
    sys.exit("duplicate ids")
EOF
) || bad "written manifest: $(tail -n 1 <<<"$why")"
}

# --- run: empty and escaping arguments --------------------------------------------------------
hc_cli__run_runs_dir_empty() { top_before; refuse '\-\-runs-dir|runs'; runc --runs-dir ''; top_after; }
hc_cli__run_run_id_empty() { refuse '\-\-run-id|run id'; runc --runs-dir runs --run-id ''; }
hc_cli__run_run_id_dotdot() {
  top_before
  refuse 'run.id'
  runc --runs-dir runs --run-id ../x
  top_after
}
hc_cli__run_run_id_dot() { refuse 'run.id'; runc --runs-dir runs --run-id .; }
hc_cli__run_run_id_dotdot_only() { top_before; refuse 'run.id'; runc --runs-dir runs --run-id ..; top_after; }
hc_cli__run_run_id_slash() { refuse 'run.id'; runc --runs-dir runs --run-id a/b; }
hc_cli__run_run_id_absolute() {
  refuse 'run.id'
  runc --runs-dir runs --run-id "$C/outside/newrun"
  [ -e "$C/outside/newrun" ] && bad "a run folder was written into outside/"
}
hc_cli__run_run_id_300_chars() { refuse 'run.id|aaaaaaaaaa'; runc --runs-dir runs --run-id "$(repeat 300 a)"; }
hc_cli__run_run_id_newline() {
  # A newline would forge lines in bag-info.txt ("External-Identifier: <run id>").
  refuse 'run.id'
  runc --runs-dir runs --run-id $'x\nPayload-Oxum: 0.0'
}
hc_cli__run_run_id_symlink_to_outside() {
  # runs/x already exists as a symlink to outside/: a reused id, nothing written through it.
  ln -s "$C/outside" "$C/runs/x"
  want_rc 2
  want_err '\bx\b'
  guard "$C/runs"
  runc --runs-dir runs --run-id x
}
hc_cli__run_stop_after_negative() { refuse 'stop-after'; runc --runs-dir runs --stop-after -1; }
hc_cli__run_stop_after_overflow() { refuse 'stop-after'; runc --runs-dir runs --stop-after 99999999999999999999999; }
hc_cli__run_runs_dir_symlink_loop() {
  ln -s loop "$C/loop"
  refuse 'loop'
  quick
  runc --runs-dir loop
}
hc_cli__run_runs_dir_is_file() {
  echo x >"$C/afile"
  refuse 'afile'
  runc --runs-dir afile
}
hc_cli__run_params_empty() { refuse '\-\-params|parameter'; hrun run --params '' --runs-dir runs; }
hc_cli__run_manifest_empty() { refuse 'manifest'; runc --manifest '' --runs-dir runs; }
hc_cli__run_device_empty() { refuse 'device'; runc --device '' --runs-dir runs; }
hc_cli__run_device_cuda_absent() {
  # No GPU on this machine: the environment lacks it (3), no folder.
  if [ -e /dev/nvidia0 ] || [ -e /dev/kfd ]; then want_rc 0 3 4; else want_rc 3; no_runs; fi
  want_err 'cuda'
  runc --device cuda --runs-dir runs
}
hc_cli__run_unknown_flag() { refuse 'bogus'; runc --bogus --runs-dir runs; }
hc_cli__run_refusal_json() {
  want_rc 2
  no_runs
  hrun run --params proj/config/nope.json --runs-dir runs --json
  valid_json "$OUT"
  grep -q '"exit_code": *2' "$OUT" || bad "--json output lacks exit_code 2"
}

# --- run: a non-UTF-8 runs folder name ----------------------------------------------------------
hc_cli__run_runs_dir_non_utf8() {
  want_rc 0 2 4
  runc --runs-dir $'runs/\xff'
}
hc_cli__run_runs_dir_non_utf8_json() {
  want_rc 0 2 4
  runc --runs-dir $'runs/\xff' --json --run-id r1
  valid_json "$OUT"
  if in_rc "$RC" 0 4; then
    # The folder it wrote: status and verify on it, with --json, are valid JSON too.
    aux status $'runs/\xff/r1' --json
    [ "$AUX_RC" = 0 ] || bad "status on the folder exited $AUX_RC"
    valid_json "$AUX_OUT"
    aux verify $'runs/\xff/r1' --json
    [ "$AUX_RC" = 0 ] || bad "verify on the folder exited $AUX_RC"
    valid_json "$AUX_OUT"
  fi
}
hc_cli__run_run_id_non_utf8_json() {
  want_rc 0 2 4
  runc --runs-dir runs --run-id $'r\xfe\xff' --json
  valid_json "$OUT"
}

# --- pilot manifest ------------------------------------------------------------------------------
hc_cli__manifest_non_utf8_file_name() {
  # Either refused naming the file (2), or a manifest that is valid UTF-8 JSON and that
  # `pilot run` accepts.
  inputs in
  printf 'Ceci est un document en fran\xc3\xa7ais.\n' >"$C/in/"$'\xff'"name.txt"
  want_rc 0 2
  hrun manifest in
  if [ "$RC" = 2 ]; then
    grep -qaE 'name\.txt|\\xff|\\377|%FF|0xff' "$ERR" || bad "the refusal does not name the file"
  elif [ "$RC" = 0 ]; then
    valid_json "$C/in/manifest.json"
    aux run --params "$P" --manifest in/manifest.json --runs-dir runs
    in_rc "$AUX_RC" 0 4 || bad "run on the written manifest exited $AUX_RC: $(head -c 200 "$AUX_ERR" | tr '\n' '|')"
  fi
}
hc_cli__manifest_long_ids_and_collision() {
  # Ids from long paths are cut to 128 characters, and a collision suffix must not push one
  # past 128: every id stays valid and `pilot run` accepts the manifest.
  local l127 l200
  l127=$(repeat 127 a)
  l200=$(repeat 200 b)
  mkdir -p "$C/in/$(repeat 100 d)/$(repeat 100 e)"
  cp "$D/doc-01.txt" "$C/in/$l127.txt"
  cp "$D/doc-02.txt" "$C/in/$l127.md"
  cp "$D/doc-03.txt" "$C/in/$l127-2.txt"
  cp "$D/doc-04.txt" "$C/in/$l200.txt"
  cp "$D/doc-05.txt" "$C/in/$(repeat 100 d)/$(repeat 100 e)/x.txt"
  cp "$D/doc-06.txt" "$C/in/$(repeat 100 d)/$(repeat 100 e)/x.md"
  want_rc 0
  hrun manifest in
  [ -f "$C/in/manifest.json" ] || { bad "no manifest written"; return; }
  manifest_ids_ok "$C/in/manifest.json"
  aux run --params "$P" --manifest in/manifest.json --runs-dir runs
  in_rc "$AUX_RC" 0 4 || bad "run on the written manifest exited $AUX_RC: $(head -c 300 "$AUX_ERR" | tr '\n' '|')"
}
hc_cli__manifest_symlink_to_secret_not_pinned() {
  inputs in
  ln -s "$C/outside/secret.txt" "$C/in/link.txt"
  ln -s "$C/outside" "$C/in/sub"
  want_rc 0
  hrun manifest in
  [ -f "$C/in/manifest.json" ] || { bad "no manifest written"; return; }
  grep -q 'link\|sub/\|secret' "$C/in/manifest.json" && bad "a symlink out of the folder was pinned"
  grep -q 'doc-01' "$C/in/manifest.json" || bad "doc-01 not pinned"
}
hc_cli__manifest_fifo_inside() {
  inputs in
  mkfifo "$C/in/fifo.txt"
  want_rc 0
  quick
  hrun manifest in
  [ -f "$C/in/manifest.json" ] || { bad "no manifest written"; return; }
  grep -q 'fifo' "$C/in/manifest.json" && bad "the FIFO was pinned"
}
hc_cli__manifest_dev_zero_link_inside() {
  inputs in
  ln -s /dev/zero "$C/in/zero.txt"
  want_rc 0
  quick
  bounded
  hrun manifest in
  grep -q 'zero' "$C/in/manifest.json" 2>/dev/null && bad "the /dev/zero link was pinned"
}
hc_cli__manifest_out_symlink_to_victim() {
  # --force onto a manifest path that is a symlink to a file outside: the victim is never
  # written through (refused, or the link itself replaced).
  inputs in
  ln -s "$C/outside/victim.txt" "$C/in/manifest.json"
  want_rc 0 2
  hrun manifest in --force
}
hc_cli__manifest_out_outside() {
  inputs in
  want_rc 2
  want_err 'outside'
  hrun manifest in --out outside/m.json
}
hc_cli__manifest_newline_in_name() {
  # As with a non-UTF-8 name: refused naming the file (2), or a manifest `pilot run` accepts.
  inputs in
  cp "$D/doc-03.txt" "$C/in/"$'two\nlines.txt'
  want_rc 0 2
  hrun manifest in
  if [ "$RC" = 2 ]; then
    grep -qa 'lines\.txt' "$ERR" || bad "the refusal does not name the file"
  elif [ "$RC" = 0 ]; then
    valid_json "$C/in/manifest.json"
    manifest_ids_ok "$C/in/manifest.json"
    aux run --params "$P" --manifest in/manifest.json --runs-dir runs
    in_rc "$AUX_RC" 0 4 || bad "run on the written manifest exited $AUX_RC: $(head -c 200 "$AUX_ERR" | tr '\n' '|')"
  fi
}
hc_cli__manifest_empty_arg() { want_rc 2; hrun manifest ''; }
hc_cli__manifest_symlink_loop_dir() {
  ln -s loop "$C/loop"
  want_rc 2
  want_err 'loop'
  quick
  hrun manifest loop
}

# --- status, verify, resume, doctor: unusable arguments ----------------------------------------
hc_cli__status_journal_dev_zero() {
  mkdir -p "$C/f/data"
  ln -s /dev/zero "$C/f/data/journal.jsonl"
  want_rc 2
  want_err 'journal\.jsonl'
  quick
  bounded
  hrun status f
}
hc_cli__status_journal_fifo() {
  mkdir -p "$C/f/data"
  mkfifo "$C/f/data/journal.jsonl"
  want_rc 2
  want_err 'journal\.jsonl'
  quick
  hrun status f
}
hc_cli__status_missing() { want_rc 2; want_err 'nope'; hrun status nope; }
hc_cli__status_empty_arg() { want_rc 2; hrun status ''; }
hc_cli__verify_empty_arg() { want_rc 2; hrun verify ''; }
hc_cli__resume_empty_arg() { want_rc 2; hrun resume ''; }
hc_cli__resume_missing() { want_rc 2; want_err 'nope'; hrun resume nope; }
hc_cli__resume_refusal_json() {
  want_rc 2
  hrun resume nope --json
  valid_json "$OUT"
  grep -q '"exit_code": *2' "$OUT" || bad "--json output lacks exit_code 2"
}
hc_cli__verify_refusal_json() {
  want_rc 2
  hrun verify nope --json
  valid_json "$OUT"
}
hc_cli__resume_not_a_run_folder() {
  # An ordinary folder is not a run: refused, and nothing (no .lock) is left in it.
  mkdir "$C/plain"
  want_rc 2
  want_err 'plain'
  guard "$C/plain"
  hrun resume plain
}
hc_cli__doctor_runs_dir_empty() { want_rc 2; want_err 'runs'; hrun doctor --params "$P" --runs-dir ''; }
hc_cli__doctor_params_dev_zero() {
  ln -s /dev/zero proj/config/zero.json
  want_rc 2
  want_err 'zero\.json'
  quick
  bounded
  hrun doctor --params proj/config/zero.json --runs-dir runs
}
hc_cli__doctor_device_tpu() { want_rc 2; want_err 'tpu|device'; hrun doctor --params "$P" --device tpu --runs-dir runs; }

# --- usage ----------------------------------------------------------------------------------------
hc_cli__unknown_subcommand() { want_rc 2; want_err 'frobnicate'; hrun frobnicate; }
hc_cli__no_subcommand() { want_rc 2; hrun; }
hc_cli__help() { want_rc 0; hrun --help; }
hc_cli__version() { want_rc 0; hrun --version; }
hc_cli__help_run() { want_rc 0; hrun run --help; }
hc_cli__help_verify() { want_rc 0; hrun verify --help; }
hc_cli__help_resume() { want_rc 0; hrun resume --help; }
hc_cli__help_status() { want_rc 0; hrun status --help; }
hc_cli__help_doctor() { want_rc 0; hrun doctor --help; }
hc_cli__help_manifest() { want_rc 0; hrun manifest --help; }

# --- sweep: options, the output folder, the internal cell command, batch plans ----------------
sweepc() { hrun sweep --params "$P" "$@"; }
hc_cli__sweep_batch_sizes_garbage() { top_before; refuse 'batch-sizes'; sweepc --batch-sizes '1,2,x' --out s; top_after; }
hc_cli__sweep_batch_sizes_huge() { top_before; refuse 'batch-sizes'; sweepc --batch-sizes "1,$(repeat 40 9)" --out s; top_after; }
hc_cli__sweep_batch_sizes_unordered() { refuse 'increase'; sweepc --batch-sizes 1,8,4 --out s; }
hc_cli__sweep_groups_huge() { refuse 'groups'; sweepc --groups 1000 --out s; }
hc_cli__sweep_repeats_negative() { refuse 'repeats'; sweepc --repeats -1 --out s; }
hc_cli__sweep_latency_nan() { refuse 'latency'; sweepc --latency-budget-ms nan --out s; }
hc_cli__sweep_memory_negative() { refuse 'max-memory'; sweepc --max-memory-mb -5 --out s; }
hc_cli__sweep_out_empty() { top_before; refuse '\-\-out'; sweepc --out ''; top_after; }
hc_cli__sweep_out_symlink_to_outside() {
  # --out names a symlink to outside/: a sweep never reuses a folder, nothing written through it.
  ln -s "$C/outside" "$C/s"
  want_rc 2
  want_err 'never reuses'
  guard "$C/outside"
  sweepc --out s
}
hc_cli__sweep_cell_not_a_sweep() {
  # The internal cell command on a folder that is no sweep: refused, nothing written.
  want_rc 2
  want_err 'not a sweep being run'
  guard "$C/outside"
  hrun sweep-cell "$C/outside" --group 1 --batch-size 1 --out .cell-g1-b1.json
}
hc_cli__sweep_cell_group_zero() { refuse 'group'; hrun sweep-cell "$C/outside" --group 0 --batch-size 1 --out x; }
hc_cli__run_batch_plan_empty() { top_before; refuse 'batch-plan'; runc --runs-dir runs --batch-plan ''; top_after; }
hc_cli__run_batch_plan_dev_zero() { top_before; refuse 'dev/zero'; runc --runs-dir runs --batch-plan /dev/zero; top_after; }
hc_cli__run_batch_plan_not_a_sweep() { top_before; refuse 'batch-plan'; runc --runs-dir runs --batch-plan "$C/outside"; top_after; }

# --- --shard, --workers, merge and export arguments --------------------------------------
hc_cli__run_shard_index_too_big() { no_runs; refuse 'does not exist'; runc --runs-dir runs --shard 3/3; }
hc_cli__run_shard_count_over_cap() { no_runs; refuse 'not a count'; runc --runs-dir runs --shard 1/4097; }
hc_cli__run_shard_negative() { no_runs; refuse 'not a count'; runc --runs-dir runs --shard -1/3; }
hc_cli__run_shard_garbage() { no_runs; refuse 'not a count'; runc --runs-dir runs --shard '../../x'; }
hc_cli__run_shard_huge_text() {
  no_runs
  refuse 'not a count'
  quick
  runc --runs-dir runs --shard "1/$(repeat 100000 9)"
}
hc_cli__run_shard_auto_no_scheduler() { no_runs; refuse 'no scheduler'; runc --runs-dir runs --shard auto/4; }
hc_cli__run_shard_auto_env_injection() {
  no_runs
  refuse 'SLURM_ARRAY_TASK_ID'
  SLURM_ARRAY_TASK_ID='1;touch pwned' runc --runs-dir runs --shard auto/4
  [ ! -e "$C/pwned" ] || bad "an environment value was executed"
}
hc_cli__run_shard_auto_env_huge() {
  no_runs
  refuse 'JOB_COMPLETION_INDEX'
  quick
  JOB_COMPLETION_INDEX=$(repeat 100000 7) runc --runs-dir runs --shard auto/4
  [ "$(wc -c <"$ERR")" -lt 4000 ] || bad "the huge value was echoed"
}
hc_cli__run_shard_torchrun_mismatch() {
  no_runs
  refuse 'disagrees'
  RANK=1 WORLD_SIZE=8 runc --runs-dir runs --shard auto/4
}
hc_cli__run_shard_run_id_of_a_run() {
  # --run-id naming an existing plain run: not the same shard's folder, refused; untouched.
  copy_run good || return
  guard "$C/runs/good"
  want_rc 2
  want_err 'not shard 0/2'
  runc --runs-dir runs --shard 0/2 --run-id good
}
hc_cli__run_workers_zero() { no_runs; refuse 'workers'; runc --runs-dir runs --workers 0; }
hc_cli__run_workers_too_many() { no_runs; refuse 'workers must be'; runc --runs-dir runs --workers 65; }
hc_cli__run_device_index_garbage() { no_runs; refuse 'device'; runc --runs-dir runs --device 'cuda:x'; }
hc_cli__run_device_index_cpu() { no_runs; refuse 'device'; runc --runs-dir runs --device 'cpu:0'; }
hc_cli__run_device_index_absent() { no_runs; want_rc 3; want_err 'cuda:7'; runc --runs-dir runs --device 'cuda:7'; }
hc_cli__merge_no_shards() { want_rc 2; want_err 'SHARD_DIR|required'; hrun merge --out m; }
hc_cli__merge_out_empty() { want_rc 2; want_err '\-\-out'; hrun merge runs --out ''; }
hc_cli__merge_not_a_folder() { want_rc 2; want_err 'not a folder'; hrun merge "$C/outside/secret.txt" --out m; }
hc_cli__merge_bad_out_name() { want_rc 2; want_err 'not a valid run id'; hrun merge runs --out 'runs/bad name'; }
hc_cli__export_missing_source() { want_rc 2; want_err 'no such folder'; hrun export nowhere copy; }
hc_cli__export_secret_file_as_source() {
  want_rc 2
  want_err 'not a folder'
  hrun export "$C/outside/secret.txt" copy
}
hc_cli__export_device_as_source() { want_rc 2; want_err 'not a folder'; quick; hrun export /dev/zero copy; }
hc_cli__run_shard_local_rank_huge() { no_runs; refuse 'LOCAL_RANK'; RANK=0 WORLD_SIZE=2 LOCAL_RANK=1000 runc --runs-dir runs --shard auto --device cpu; }
hc_cli__run_workers_log_fifo() {
  # A FIFO where a worker's log goes: refused at once (never opened for writing, no hang).
  mkdir -p "$C/runs/w1.shards"
  mkfifo "$C/runs/w1.shards/shard-0-of-1.log"
  want_rc 2
  want_err 'log'
  quick
  runc --runs-dir runs --workers 1 --device cpu --run-id w1
}
