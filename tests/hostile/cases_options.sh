# Empty option values and the messages a user meets (docs/security.md, "Option values"). An option or argument
# given an empty value ('', an unset $VAR in a script) is refused with exit 2 naming it, on
# every command, by one validator: never read as "use the default", never a check skipped.
# Sourced by catalogue.sh; each hc_options__NAME function is one case.

G=runs/good
R=runs/part

# --- every option of every command ----------------------------------------------------------
hc_options__every_option_of_every_command_refuses_empty() {
  # Each command's --help lists its options; every one that takes a value is given '' alone
  # (and each positional in turn): exit 2, "pilot: error: NAME: is empty", nothing created.
  python3 - "$PILOT" "$C" >"$T/empty.log" 2>&1 <<'EOF' || bad "$(head -c 600 "$T/empty.log" | tr '\n' '|')"
import re, subprocess, sys
pilot, case = sys.argv[1], sys.argv[2]
top = subprocess.run([pilot, "--help"], capture_output=True, text=True).stdout
commands = re.findall(r"^  ([a-z]+) {2,}", top.split("Subcommands:")[1], re.M)
assert len(commands) >= 13, commands
failures, tried = [], 0
for cmd in commands:
    text = subprocess.run([pilot, cmd, "--help"], capture_output=True, text=True).stdout
    positionals, options = [], []
    section = None
    for line in text.splitlines():
        if line.startswith("Positionals:"): section = "pos"; continue
        if line.startswith("Options:"): section = "opt"; continue
        m = re.match(r"^  (\S+)(?: (\S+))?", line)
        if not m or not section: continue
        name, kind = m.group(1), m.group(2) or ""
        if not re.match(r"[A-Z]", kind): continue          # a flag, or a wrapped description
        if section == "pos": positionals.append(name)
        else: options.append(name.split(",")[-1])
    calls = [([o, ""], o) for o in options] + [(["x"] * i + [""], p) for i, p in enumerate(positionals)]
    for args, name in calls:
        tried += 1
        r = subprocess.run([pilot, cmd] + args, capture_output=True, text=True, cwd=case, timeout=20)
        want = "pilot: error: " + name + ": is empty"
        if r.returncode != 2 or want not in r.stderr:
            failures.append(f"{cmd} {args}: exit {r.returncode}: {r.stderr.strip()[:160]}")
print(f"{tried} options and arguments given ''")
if tried < 60: failures.append(f"only {tried} options found in --help")
if failures:
    print("\n".join(failures)); sys.exit(1)
EOF
  refuse '--expect: is empty'
  hrun verify runs --expect ''
}

# --- the cases the review met, on real folders ------------------------------------------------
hc_options__verify_expect_empty_on_a_rehashed_forgery() {
  # A merged bag edited and re-hashed consistently passes every check but the fingerprint: an
  # unset $FP must not skip that one.
  copy_run shards || return
  sed -i 's/"accepted"/"rejected"/' "$C/runs/mgood/data/results.jsonl"
  rehash "$C/runs/mgood"
  want_rc 2; want_err '--expect: is empty'
  guard "$C/runs/mgood"
  hrun verify runs/mgood --expect ''
}
hc_options__verify_inputs_root_empty_with_a_changed_input() {
  copy_run good || return
  printf 'changed\n' >"$C/proj/data/pilot/doc-01.txt"
  want_rc 2; want_err '--inputs-root: is empty'
  hrun verify "$G" --inputs-root ''
}
hc_options__decide_evidence_options_empty() {
  copy_run good || return
  local opt
  for opt in --doctor --compare --plan --sweep --calibration --inputs-root --expect --expect-sweep \
    --expect-calibration; do
    aux decide "$G" "$opt" '' --decision go --reason x
    [ "$AUX_RC" = 2 ] && grep -q -- "$opt: is empty" "$AUX_ERR" || bad "decide $opt '': exit $AUX_RC, $(head -c 200 "$AUX_ERR")"
  done
  want_rc 2; want_err '--doctor: is empty'
  guard "$C/$G"
  hrun decide "$G" --doctor '' --decision go --reason x
  [ ! -e "$C/$G/decisions.jsonl" ] || bad "a decision was recorded"
}
hc_options__compare_out_empty() {
  copy_run good || return
  want_rc 2; want_err '--out: is empty'
  guard "$C/runs"
  hrun compare "$G" "$G" --out ''
}
hc_options__plan_out_empty() {
  copy_run good || return
  printf '%s\n' '{"currency": "EUR", "cards": [{"name": "node", "class": "cpu", "memory_gb": 64, "cards_per_lot": 1, "lot_price": {"3": 30}}]}' >"$C/prices.json"
  want_rc 2; want_err '--out: is empty'
  guard "$C/runs"
  hrun plan --from "$G" --corpus-items 10 --prices prices.json --out ''
}
hc_options__resume_device_empty() {
  copy_run part || return
  want_rc 2; want_err '--device: is empty'
  guard "$C/$R"
  hrun resume "$R" --device ''
}

# --- messages ---------------------------------------------------------------------------------
hc_options__resume_merged_folder_says_so() {
  copy_run shards || return
  want_rc 2; want_err 'merged folder is finished once it exists and never resumes' 'resume its shards'
  guard "$C/runs/mgood"
  hrun resume runs/mgood
}
hc_options__decide_lock_holder_without_pid() {
  # Another process holds the lock but has not written its pid yet: named as such, not "pid 0".
  copy_run good || return
  command -v flock >/dev/null || { bad "flock(1) is needed"; return; }
  (flock "$C/$G/.lock" sleep 8) &
  local holder=$! i
  for i in $(seq 1 100); do [ -e "$C/$G/.lock" ] && break; sleep 0.05; done
  sleep 0.2
  want_rc 2; want_err 'has not written its pid yet'
  hrun decide "$G" --decision go --reason x
  grep -q 'pid 0' "$ERR" && bad "the holder is named pid 0"
  kill "$holder" 2>/dev/null
  wait "$holder" 2>/dev/null
  rm -f "$C/$G/.lock"
}
hc_options__compare_tolerance_inf_is_a_short_message() {
  copy_run good || return
  want_rc 2; want_err '--tolerance' 'finite number from 0 to 1e6'
  hrun compare "$G" "$G" --tolerance inf
  [ "$(wc -c <"$ERR")" -lt 300 ] || bad "a message of $(wc -c <"$ERR") bytes"
}
hc_options__shard_auto_scheduler_variable_not_utf8() {
  # A scheduler variable that is not UTF-8 is shown with its bytes escaped, not as "a key of N bytes".
  want_rc 2; want_err 'SLURM_ARRAY_TASK_ID' '\\xff\\xfe'
  no_runs
  SLURM_ARRAY_TASK_ID=$'\xff\xfe' hrun run --params "$P" --runs-dir runs --shard auto/2
  grep -q 'a key of' "$ERR" && bad "the value is hidden as a key"
}
hc_options__workers_runs_dir_too_long() {
  want_rc 2; want_err '--runs-dir' 'at most 3800'
  local long="" i
  for i in $(seq 1 40); do long="$long/$(repeat 100 d)"; done
  hrun run --params "$P" --runs-dir "runs$long" --run-id w --workers 2 --device cpu
  [ -z "$(ls -A "$C/runs")" ] || bad "something was created under runs/"
}
hc_options__workers_runs_dir_name_too_long() {
  want_rc 2; want_err '--runs-dir' '300 bytes'
  hrun run --params "$P" --runs-dir "runs/$(repeat 300 n)" --run-id w --workers 2 --device cpu
  [ -z "$(ls -A "$C/runs")" ] || bad "something was created under runs/"
}
hc_options__run_outside_the_checkout_says_how() {
  # From a folder without config/pilot.json: the message says how to point pilot at one's own
  # parameters and runs folder.
  mkdir -p "$C/elsewhere"
  want_rc 2; want_err 'config/pilot.json' '--params' '--runs-dir'
  hrun -C "$C/elsewhere" run
  [ -z "$(ls -A "$C/elsewhere")" ] || bad "something was created in the working folder"
}
hc_options__workers_foreign_shard_hint() {
  # A shard folder of another job in RUN_ID.shards: running again cannot help, and the hint
  # says what to change instead.
  copy_run shards || return
  mkdir -p "$C/runs/w.shards"
  cp -a "$C/runs/shard-0-of-3" "$C/runs/w.shards/shard-0-of-2"
  guard "$C/runs/w.shards/shard-0-of-2"
  want_rc 2; want_err 'refused its input' 'another --run-id'
  hrun run --params "$P" --runs-dir runs --run-id w --workers 2 --device cpu
  grep -q 'run the same command again' "$ERR" && bad "the hint still says to run the same command again"
}
hc_options__workers_log_fifo_is_one_line() {
  mkdir -p "$C/runs/w.shards"
  mkfifo "$C/runs/w.shards/shard-1-of-2.log"
  want_rc 2; want_err 'shard-1-of-2\.log' 'no worker was started'
  quick
  hrun run --params "$P" --runs-dir runs --run-id w --workers 2 --device cpu
  [ "$(grep -c . "$ERR")" = 1 ] || bad "stderr holds $(grep -c . "$ERR") lines: $(tr '\n' '|' <"$ERR")"
  [ -z "$(find "$C/runs/w.shards" -mindepth 1 -type d)" ] || bad "a shard folder was created"
}
hc_options__verify_inputs_says_how_many() {
  copy_run good || return
  want_rc 0
  guard "$C/$G"
  hrun verify "$G" --inputs
  grep -q 'inputs: 12 of 12 re-hashed under' "$OUT" || bad "verify --inputs does not say what it re-hashed: $(tr '\n' '|' <"$OUT")"
  aux verify "$G" --inputs --json
  python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); i=d["inputs"]; assert i["rehashed"] == 12 and i["items"] == 12, i' \
    "$AUX_OUT" || bad "--json lacks inputs.rehashed"
}

# --- from the review of the first fixes -----------------------------------------------------
hc_options__assignment_with_an_empty_value() {
  # `--out=` would take the next word (even --json) as its value: refused as every empty value.
  copy_run good || return
  local args
  for args in "compare runs/good runs/good --out= --json" "run --runs-dir= -q --run-id q1" \
              "run --run-id= --json --runs-dir rr" "verify --expect= runs/good"; do
    # shellcheck disable=SC2086
    aux $args
    [ "$AUX_RC" = 2 ] && grep -q 'is empty' "$AUX_ERR" || bad "'pilot $args': exit $AUX_RC, $(head -c 200 "$AUX_ERR")"
  done
  [ ! -e "$C/--json" ] && [ ! -e "$C/-q" ] && [ ! -e "$C/rr" ] || bad "a folder named after an option was created"
  want_rc 2; want_err '--out: is empty'
  hrun plan --from "$G" --corpus-items 10 --prices prices.json --out= --json
}
hc_options__error_messages_are_escaped() {
  python3 - "$C/$P" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
p["stage"]["options"]["x\u001b[31m\u009b2J"] = 1
json.dump(p, open(sys.argv[1], "w"))
PY
  refuse 'unknown stage option'
  hrun run --params "$P" --runs-dir runs
  python3 -c 'import re,sys; t=open(sys.argv[1],"rb").read().decode("utf-8","replace"); sys.exit(1 if re.search(r"[\x00-\x08\x0b-\x1f\x7f\u0080-\u009f]", t) else 0)' "$ERR" ||
    bad "a raw control byte reached the terminal"
}
hc_options__status_of_a_path_with_an_escape() {
  want_rc 2; want_err 'x\\x1b\[2J'
  hrun status "$(printf 'x\033[2J')"
  python3 -c 'import sys; sys.exit(1 if b"\x1b" in open(sys.argv[1],"rb").read() else 0)' "$ERR" || bad "a raw ESC reached the terminal"
}
hc_options__json_number_too_large_names_where() {
  python3 - "$C/$P" <<'PY'
import sys
t = open(sys.argv[1]).read().replace('"batch_size": 4', '"batch_size": 1e400')
open(sys.argv[1], "w").write(t)
PY
  grep -q '1e400' "$C/$P" || { bad "could not plant 1e400"; return; }
  refuse 'too large to hold' 'batch_size'
  hrun run --params "$P" --runs-dir runs
}

# --- from the second review -------------------------------------------------------------------
hc_options__value_option_followed_by_an_option() {
  # `--out --json`: the value was forgotten; CLI11 would take --json as the folder's name.
  copy_run good || return
  want_rc 2; want_err '--out' 'needs a value' '--json'
  hrun compare "$G" "$G" --out --json
  [ ! -e "$C/--json" ] || bad "a folder named --json was made"
}
hc_options__runs_dir_followed_by_an_option() {
  refuse '--runs-dir' 'needs a value' '--quiet'
  hrun run --params "$P" --runs-dir --quiet
  [ ! -e "$C/--quiet" ] || bad "a folder named --quiet was made"
}
hc_options__a_value_that_looks_like_a_number_is_kept() {
  # A negative number is a value, not an option: refused by the option's own check.
  want_rc 2; want_err 'latency-budget-ms'
  hrun sweep --params "$P" --device cpu --latency-budget-ms -5 --out runs/s
}
hc_options__value_followed_by_another_commands_option() {
  # `--params` is no option of compare, but it is pilot's: still a forgotten value.
  copy_run good || return
  want_rc 2; want_err '--out' 'needs a value' '--params'
  hrun compare "$G" "$G" --out --params
  [ ! -e "$C/--params" ] || bad "a folder named --params was made"
}
