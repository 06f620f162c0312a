# Evidence and decisions (docs/security.md, "Evidence and fingerprints", "A decision interrupted"): decide killed or interrupted at any moment leaves
# the folder as before, as after, or in a state the next decide or resume finishes or undoes;
# evidence that contradicts itself is refused; a fingerprint noted earlier (--expect) turns a
# re-hashed forgery away; and an input swapped for a link while the run reads it never leads
# outside the inputs' folder.
# Sourced by catalogue.sh; each hc_evidence__NAME function is one case.

G=runs/good
DOCTOR_OK='{"ok": true, "checks": [{"name": "host", "status": "pass", "required": true}]}'

# fingerprint DIR: the sha256 of DIR/tagmanifest-sha256.txt.
fingerprint() { sha256sum "$1/tagmanifest-sha256.txt" | cut -c1-64; }
# entries DIR: how many decisions DIR records.
entries() { if [ -f "$1/decisions.jsonl" ]; then grep -c . "$1/decisions.jsonl"; else echo 0; fi; }

# --- decide killed at every step ---------------------------------------------------------------
# kill_decide_at_every_step HOW: for N = 1, 2, ... a fresh copy of the good run, `pilot decide
# --decision go` killed (SIGKILL) after its Nth change (every folder made, file written,
# renamed or removed, lock taken), until one runs to its end. After each kill: verify passes
# as before (nothing recorded), passes as after (entry 1 recorded in full), or fails naming
# the staging folder or the lock; then HOW (decide or resume) leaves it verifying, with 0 or
# 1 entries, never 2, and a later decide records entry 2 on it.
kill_decide_at_every_step() {
  local how=$1 n rc before states=""
  printf '%s\n' "$DOCTOR_OK" >"$C/doctor.json"
  for n in $(seq 1 40); do
    rm -rf "$C/runs/k"
    cp -a "$BASE/runs/good" "$C/runs/k"
    before=$(fingerprint "$C/runs/k")
    rc=0
    (cd "$C" && PILOT_TEST_KILL_AFTER_WRITE=$n PILOT_TEST_KILL_EVERY_STEP=1 timeout -s KILL 60 "$PILOT" decide runs/k \
      --doctor doctor.json --decision go --reason "kill at $n" >/dev/null 2>&1) || rc=$?
    if [ "$rc" = 0 ]; then
      [ "$n" -gt 5 ] || bad "decide ran to its end in $n steps: the kill hook counted nothing"
      [ "$(entries "$C/runs/k")" = 1 ] || bad "the uninterrupted decide recorded $(entries "$C/runs/k") entries"
      echo "states seen: $states" >&2
      # Both ways out of the third state were met: undone before the commit, finished after.
      case $states in *pending=0*) ;; *) bad "no kill left a staging folder that was undone: $states" ;; esac
      case $states in *pending=1*) ;; *) bad "no kill left a committed staging folder that was finished: $states" ;; esac
      case $states in *lock*) ;; *) bad "no kill left only a stale lock: $states" ;; esac
      return 0
    fi
    [ "$rc" = 137 ] || { bad "decide killed at step $n exited $rc"; return; }
    aux verify runs/k
    if [ "$AUX_RC" = 0 ]; then
      if [ "$(fingerprint "$C/runs/k")" = "$before" ]; then states="$states $n:before"; else states="$states $n:after"; fi
    elif [ -e "$C/runs/k/.decide-pending" ]; then
      grep -q 'decide was interrupted' "$AUX_ERR" "$AUX_OUT" || bad "step $n: verify does not say how to finish it"
      states="$states $n:pending"
    elif [ -e "$C/runs/k/.lock" ]; then
      states="$states $n:lock"
    else
      bad "step $n: the folder fails verify for another reason: $(head -c 300 "$AUX_ERR" | tr '\n' '|')"
      return
    fi
    case $states in
      *" $n:pending" | *" $n:lock")  # the third state: finished or undone by the next command
        if [ "$how" = resume ]; then aux resume runs/k; else aux decide runs/k; fi
        [ "$AUX_RC" = 0 ] || { bad "step $n: $how after the kill exited $AUX_RC: $(head -c 300 "$AUX_ERR" | tr '\n' '|')"; return; }
        ;;
    esac
    aux verify runs/k
    [ "$AUX_RC" = 0 ] || bad "step $n: the folder does not verify after $how: $(head -c 300 "$AUX_ERR" | tr '\n' '|')"
    [ ! -e "$C/runs/k/.decide-pending" ] && [ ! -e "$C/runs/k/.lock" ] || bad "step $n: $how left the staging folder or the lock"
    case $(entries "$C/runs/k") in 0 | 1) ;; *) bad "step $n: $(entries "$C/runs/k") entries after one decision" ;; esac
    states="$states=$(entries "$C/runs/k")"
    aux decide runs/k --decision go --reason "after step $n"
    [ "$AUX_RC" = 0 ] && grep -q "as entry $(($(entries "$C/runs/k")))" "$AUX_OUT" ||
      bad "step $n: a later decide did not record the next entry: $(head -c 300 "$AUX_ERR" | tr '\n' '|')"
  done
  bad "decide did not run to its end within 40 steps"
}
hc_evidence__decide_killed_at_every_step_then_decide() {
  copy_run good || return
  kill_decide_at_every_step decide
  want_rc 0
  hrun decide "$G" --doctor doctor.json --decision go --reason reference
}
hc_evidence__decide_killed_at_every_step_then_resume() {
  copy_run good || return
  kill_decide_at_every_step resume
  want_rc 0
  hrun decide "$G" --doctor doctor.json --decision go --reason reference
}
hc_evidence__decide_killed_on_a_merged_folder_then_resume() {
  # A merged folder never resumes, but `pilot resume` still finishes a decide killed on it.
  copy_run shards || return
  printf '%s\n' "$DOCTOR_OK" >"$C/doctor.json"
  local n
  for n in $(seq 4 30); do
    rm -rf "$C/runs/mk"
    cp -a "$C/runs/mgood" "$C/runs/mk"
    (cd "$C" && PILOT_TEST_KILL_AFTER_WRITE=$n PILOT_TEST_KILL_EVERY_STEP=1 "$PILOT" decide runs/mk --doctor doctor.json \
      --decision go --reason x >/dev/null 2>&1)
    [ -e "$C/runs/mk/.decide-pending/COMMIT.json" ] && break
  done
  [ -e "$C/runs/mk/.decide-pending/COMMIT.json" ] || { bad "no kill left a committed staging folder"; return; }
  want_rc 0; want_err 'interrupted decide was finished'
  hrun resume runs/mk
  [ "$(entries "$C/runs/mk")" = 1 ] || bad "the committed decision is not recorded"
  aux verify runs/mk
  [ "$AUX_RC" = 0 ] || bad "the merged folder does not verify after resume"
}
hc_evidence__decide_staging_folder_is_a_symlink() {
  copy_run good || return
  ln -s "$C/outside" "$C/$G/.decide-pending"
  want_rc 2; want_err '\.decide-pending' 'not a folder'
  hrun decide "$G"
}
hc_evidence__decide_commit_names_a_file_outside() {
  copy_run good || return
  mkdir -p "$C/$G/.decide-pending"
  printf '{"kind":"pilot-decide-commit","entry":1,"fingerprint_before":"%s","files":[{"file":"../../outside/victim.txt","sha256":"%s"},{"file":"tagmanifest-sha256.txt","sha256":"%s"}]}\n' \
    "$(fingerprint "$C/$G")" "$(repeat 64 a)" "$(repeat 64 b)" >"$C/$G/.decide-pending/COMMIT.json"
  want_rc 2; want_err 'not one decide writes' 'COMMIT\.json'
  guard "$C/$G"
  hrun decide "$G"
}

# --- Ctrl-C in each phase of decide ---------------------------------------------------------
# interrupt_decide PHASE: decide --decision go paused as PHASE begins (a test hook), SIGINT
# sent there; its exit code in IRC and stderr in $T/int.err.
interrupt_decide() {
  printf '%s\n' "$DOCTOR_OK" >"$C/doctor.json"
  (cd "$C" && PILOT_TEST_DECIDE_PAUSE=$1 exec "$PILOT" decide "$G" --doctor doctor.json --decision go --reason x \
    >"$T/int.out" 2>"$T/int.err") &
  local pid=$! i
  for i in $(seq 1 200); do grep -q 'paused as' "$T/int.err" 2>/dev/null && break; sleep 0.05; done
  grep -q 'paused as' "$T/int.err" || bad "decide never reached phase $1"
  kill -INT "$pid"
  IRC=0
  wait "$pid" || IRC=$?
}
hc_evidence__decide_ctrl_c_while_reading() {
  copy_run good || return
  guard "$C/$G"
  interrupt_decide reading
  [ "$IRC" = 130 ] || bad "exit $IRC, want 130"
  grep -q 'interrupted while reading: nothing was recorded; the folder is as it was' "$T/int.err" ||
    bad "no message saying what state the folder is in: $(tr '\n' '|' <"$T/int.err")"
  want_rc 0
  hrun verify "$G"
}
hc_evidence__decide_ctrl_c_once_locked() {
  copy_run good || return
  guard "$C/$G"
  interrupt_decide locked
  [ "$IRC" = 130 ] || bad "exit $IRC, want 130"
  grep -q 'nothing was recorded' "$T/int.err" && grep -q 'the folder is as it was' "$T/int.err" ||
    bad "no message saying what state the folder is in: $(tr '\n' '|' <"$T/int.err")"
  want_rc 0
  hrun verify "$G"
}
hc_evidence__decide_ctrl_c_while_writing() {
  copy_run good || return
  interrupt_decide writing
  [ "$IRC" = 0 ] || bad "exit $IRC, want 0 (the decision is finished first)"
  grep -q 'recorded in full first' "$T/int.err" || bad "no message saying the decision was recorded: $(tr '\n' '|' <"$T/int.err")"
  [ "$(entries "$C/$G")" = 1 ] || bad "the decision is not recorded"
  [ ! -e "$C/$G/.lock" ] || bad "a lock was left"
  want_rc 0
  hrun verify "$G"
}

# --- evidence that contradicts itself, fingerprints -------------------------------------------
hc_evidence__decide_compare_verdict_contradicts_its_differences() {
  copy_run good || return
  aux compare "$G" "$G" --out cmp
  [ "$AUX_RC" = 0 ] || { bad "no comparison to edit"; return; }
  python3 - "$C/cmp/compare.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
d["items"]["differ"] = 3; d["items"]["agree"] = d["items"]["total"] - 3
d["differences"] = [{"id": "doc-01", "what": "category", "a": "en", "b": "fr"}]; d["differences_listed"] = 1
json.dump(d, open(sys.argv[1], "w"))
EOF
  want_rc 2; want_err 'contradicts itself' 'verdict agree' 'compare\.json'
  guard "$C/$G"
  hrun decide "$G" --compare cmp/compare.json --decision go --reason x
}
hc_evidence__decide_plan_negative_cost() {
  copy_run good || return
  printf '%s\n' '{"currency": "EUR", "cards": [{"name": "node", "class": "cpu", "memory_gb": 64, "cards_per_lot": 1, "lot_price": {"3": 30}}]}' >"$C/prices.json"
  aux plan --from "$G" --corpus-items 100 --prices prices.json --out plan.json
  [ -f "$C/plan.json" ] || { bad "no plan to edit"; return; }
  python3 - "$C/plan.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
for row in d["plans"]: row["cost"] = -5
for k in ("cheapest", "fastest"):
    if d[k]: d[k]["cost"] = -5
json.dump(d, open(sys.argv[1], "w"))
EOF
  want_rc 2; want_err 'contradicts itself' 'cost -5' 'plan\.json'
  guard "$C/$G"
  hrun decide "$G" --plan plan.json --decision go --reason x
  grep -q -- '-5.00' "$OUT" && bad "the negative cost was printed as a fact"
}
hc_evidence__decide_doctor_ok_contradicts_its_checks() {
  copy_run good || return
  printf '%s\n' '{"ok": true, "checks": [{"name": "gpu", "status": "fail", "required": true}]}' >"$C/doctor.json"
  want_rc 2; want_err 'contradicts itself' 'doctor\.json'
  guard "$C/$G"
  hrun decide "$G" --doctor doctor.json
}
hc_evidence__decide_expect_wrong_fingerprint() {
  copy_run good || return
  want_rc 1
  guard "$C/$G"
  hrun decide "$G" --expect "$(repeat 64 0)" --decision go --reason x
  grep -q 'fingerprint' "$OUT" || bad "the finding does not name the fingerprint"
}
hc_evidence__decide_expect_sweep_wrong_fingerprint() {
  copy_run good || return
  copy_run sgood || return
  want_rc 2; want_err 'sweep folder fails verification' 'fingerprint'
  guard "$C/$G"
  hrun decide "$G" --sweep runs/sgood --expect-sweep "$(repeat 64 0)"
}
hc_evidence__decide_calibration_is_a_run_relabelled() {
  # A run folder relabelled as a calibration (bag-info.txt and run.json, re-hashed): judged as
  # a calibration, whose record and nested folders it lacks: refused (exit 2), never trusted.
  copy_run good || return
  cp -a "$C/$G" "$C/fakecal"
  sed -i 's/^Pilot-Folder-Kind: run$/Pilot-Folder-Kind: calibration/; s/^Pilot-Format-Version: .*$/Pilot-Format-Version: 1/' "$C/fakecal/bag-info.txt"
  python3 - "$C/fakecal/data/run.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1])); d["folder_kind"] = "calibration"; d["format_version"] = 1
open(sys.argv[1], "w").write(json.dumps(d, indent=2) + "\n")
EOF
  rehash "$C/fakecal"
  want_rc 2; want_err 'fakecal'
  guard "$C/$G"
  hrun decide "$G" --calibration fakecal --decision go --reason x
}
hc_evidence__decide_calibration_is_a_run_through_a_link() {
  # --calibration naming a link to the run folder itself: resolved as the given path is, then
  # refused by its kind (exit 2), the folder untouched.
  copy_run good || return
  ln -s "$C/$G" "$C/linkcal"
  want_rc 2; want_err 'not a calibration folder'
  guard "$C/$G"
  hrun decide "$G" --calibration linkcal --decision go --reason x
}
hc_evidence__decide_expect_right_fingerprints() {
  copy_run good || return
  copy_run sgood || return
  want_rc 0
  hrun decide "$G" --expect "$(fingerprint "$C/$G")" --sweep runs/sgood --expect-sweep "$(fingerprint "$C/runs/sgood")" \
    --decision go --reason "both noted"
}
hc_evidence__plan_forged_rate_rehashed() {
  # 1e12 items/s edited into a copy and re-hashed: verify rebuilds the report from the folder
  # and turns it away; with the fingerprint noted when the run finished, the fingerprint does,
  # before anything else is read.
  copy_run good || return
  local noted
  noted=$(fingerprint "$C/$G")
  python3 - "$C/$G/data/report.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
d["throughput_items_per_s"] = 1e12
json.dump(d, open(sys.argv[1], "w"), indent=2)
EOF
  rehash "$C/$G"
  printf '%s\n' '{"currency": "EUR", "cards": [{"name": "node", "class": "cpu", "memory_gb": 64, "cards_per_lot": 1, "lot_price": {"3": 30}}]}' >"$C/prices.json"
  aux plan --from "$G" --corpus-items 100 --prices prices.json
  [ "$AUX_RC" = 2 ] || bad "plan without --expect took the forged rate (exit $AUX_RC)"
  grep -q 'report\.json: does not match the report rebuilt' "$AUX_ERR" ||
    bad "plan without --expect does not name the report that differs from the one rebuilt"
  want_rc 2; want_err 'fingerprint'
  hrun plan --from "$G" --corpus-items 100 --prices prices.json --expect "$noted"
}

# --- an input swapped for a link while it is read ---------------------------------------------
hc_evidence__inputs_swapped_for_links_while_read() {
  # 1,500 inputs pinned to the bytes of a file OUTSIDE the inputs' folder; inside, each is a
  # file of other bytes that a background loop keeps swapping (atomically, by rename) for a
  # link to the outside file. Reading outside would be the only way to match a pin: no item
  # may be accepted, whichever moment each was read.
  local n=1500
  mkdir -p "$C/race-in"
  printf 'This is a plain English sentence that the model reads as English.\n' >"$C/outside/pinned.txt"
  python3 - "$C/race-in" "$C/outside/pinned.txt" "$n" <<'EOF'
import hashlib, json, os, sys
root, outside, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
sha = hashlib.sha256(open(outside, "rb").read()).hexdigest()
items = []
for k in range(n):
    open(os.path.join(root, f"doc-{k}.txt"), "w").write(f"inside text {k}\n")
    items.append({"id": f"doc-{k}", "path": f"doc-{k}.txt", "sha256": sha, "expected": "en"})
json.dump({"name": "race", "items": items}, open(os.path.join(root, "manifest.json"), "w"))
EOF
  python3 - "$C/$P" "$C/race.json" "$C/race-in/manifest.json" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1]))
p["manifest"] = sys.argv[3]
p["stage"]["model"] = __import__("os").path.join(__import__("os").path.dirname(sys.argv[1]), p["stage"]["model"])
p.pop("acceptance", None)
json.dump(p, open(sys.argv[2], "w"), indent=2)
EOF
  python3 - "$C/race-in" "$C/outside/pinned.txt" "$n" "$C/race.stop" <<'EOF' &
import os, random, sys, time
root, outside, n, stop = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
random.seed(7)
deadline = time.time() + 50
while not os.path.exists(stop) and time.time() < deadline:
    k = random.randrange(n)
    path = os.path.join(root, f"doc-{k}.txt")
    tmp = path + ".swap"
    try:
        if os.path.islink(path):
            open(tmp, "w").write(f"inside text {k}\n")
        else:
            os.symlink(outside, tmp)
        os.replace(tmp, path)
    except OSError:
        pass
EOF
  local swapper=$!
  want_rc 0 4
  bounded
  hrun run --params race.json --runs-dir runs --run-id race
  : >"$C/race.stop"
  wait "$swapper"
  local accepted
  accepted=$(grep -c '"status":"accepted"' "$C/runs/race/data/results.jsonl" 2>/dev/null || true)
  [ "$accepted" = 0 ] || bad "$accepted item(s) were read from outside the inputs' folder"
  grep -q '"reason":"path_outside_root"' "$C/runs/race/data/results.jsonl" ||
    bad "no item met a link while read (the swapper did not race the run)"
}

# --- from the review of the first fixes -----------------------------------------------------
# committed_pending: a copy of the good run (runs/k) killed after decide committed.
committed_pending() {
  printf '%s\n' "$DOCTOR_OK" >"$C/doctor.json"
  local n
  for n in $(seq 4 30); do
    rm -rf "$C/runs/k"
    cp -a "$BASE/runs/good" "$C/runs/k"
    (cd "$C" && PILOT_TEST_KILL_AFTER_WRITE=$n PILOT_TEST_KILL_EVERY_STEP=1 "$PILOT" decide runs/k --doctor doctor.json \
      --decision go --reason x >/dev/null 2>&1)
    [ -e "$C/runs/k/.decide-pending/COMMIT.json" ] && [ -e "$C/runs/k/.decide-pending/decision.md" ] &&
      [ -e "$C/runs/k/.decide-pending/decisions.jsonl" ] && return 0
  done
  bad "no kill left a committed staging folder with every file staged"
  return 1
}
hc_evidence__decide_damaged_staged_file_moves_nothing() {
  copy_run good || return
  committed_pending || return
  echo x >>"$C/runs/k/.decide-pending/decision.md"
  guard "$C/runs/k"
  want_rc 2; want_err 'does not hold what its commit record says' 'decision\.md'
  hrun decide runs/k
}
hc_evidence__decide_commit_is_a_symlink() {
  copy_run good || return
  committed_pending || return
  mv "$C/runs/k/.decide-pending/COMMIT.json" "$C/outside/C.json"
  ln -s "$C/outside/C.json" "$C/runs/k/.decide-pending/COMMIT.json"
  guard "$C/runs/k"
  want_rc 2; want_err 'COMMIT\.json' 'symlink'
  hrun resume runs/k
}
hc_evidence__decide_plan_fit_no_yet_fits() {
  copy_run good || return
  printf '%s\n' '{"currency": "EUR", "cards": [{"name": "node", "class": "cpu", "memory_gb": 64, "cards_per_lot": 1, "lot_price": {"3": 30}}]}' >"$C/prices.json"
  aux plan --from "$G" --corpus-items 100 --prices prices.json --out plan.json
  python3 - "$C/plan.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
for row in d["plans"]: row["fit"] = "no"
json.dump(d, open(sys.argv[1], "w"))
PY
  want_rc 2; want_err 'contradicts itself' 'fit'
  guard "$C/$G"
  hrun decide "$G" --plan plan.json --decision go --reason x
}
hc_evidence__decide_plan_of_another_folder_is_noted() {
  copy_run good || return
  copy_run egood || return
  printf '%s\n' '{"currency": "EUR", "cards": [{"name": "node", "class": "cpu", "memory_gb": 64, "cards_per_lot": 1, "lot_price": {"3": 30}}]}' >"$C/prices.json"
  aux plan --from runs/egood --corpus-items 100 --prices prices.json --out plan.json
  want_rc 0
  guard "$C/$G"
  hrun decide "$G" --plan plan.json
  grep -q 'measured on another folder' "$OUT" || bad "no note that the plan speaks of another folder"
}

# --- from the second review -------------------------------------------------------------------
hc_evidence__decide_recovery_destination_is_a_folder() {
  # A committed decision whose destination is a folder (or a link) in the run folder: refused
  # before the first move, so the decision is never half placed.
  copy_run good || return
  committed_pending || return
  rm -f "$C/runs/k/decision.md"
  mkdir "$C/runs/k/decision.md"
  guard "$C/runs/k"
  want_rc 2; want_err 'in the way of the staged decision' 'decision\.md'
  hrun decide runs/k
}
hc_evidence__decide_recovery_destination_is_a_symlink() {
  copy_run good || return
  committed_pending || return
  rm -f "$C/runs/k/decisions.jsonl"
  ln -s "$C/outside/victim.txt" "$C/runs/k/decisions.jsonl"
  guard "$C/runs/k"
  want_rc 2; want_err 'in the way of the staged decision' 'decisions\.jsonl'
  hrun resume runs/k
}
hc_evidence__decide_pending_holds_a_deep_tree() {
  # A staging folder holding a folder 300 deep (no decide leaves one): refused up front with
  # a bounded message, nothing removed, never a failure at every later decide.
  copy_run good || return
  local d="$C/$G/.decide-pending" i
  mkdir -p "$d"
  (cd "$d" && for i in $(seq 1 300); do mkdir d && cd d || exit 1; done)
  guard "$C/$G"
  want_rc 2; want_err 'decide never stages' "'d'" 'remove it by hand'
  hrun decide "$G"
  [ "$(wc -c <"$ERR")" -lt 2000 ] || bad "the message is $(wc -c <"$ERR") bytes"
}
hc_evidence__decide_pending_holds_a_stranger_file() {
  copy_run good || return
  mkdir -p "$C/$G/.decide-pending"
  echo notes >"$C/$G/.decide-pending/notes.txt"
  guard "$C/$G"
  want_rc 2; want_err 'decide never stages' 'notes\.txt'
  hrun resume "$G"
}
hc_evidence__decide_pending_with_a_temp_file_is_undone() {
  # What an interrupted decide really leaves (a staged file and a temp file, no commit) is
  # undone, and the folder verifies.
  copy_run good || return
  mkdir -p "$C/$G/.decide-pending"
  echo partial >"$C/$G/.decide-pending/decision.md"
  echo partial >"$C/$G/.decide-pending/decisions.jsonl.tmp-4242"
  want_rc 0
  hrun decide "$G"
  grep -q 'interrupted decide was undone' "$ERR" || bad "no note that it was undone: $(tr '\n' '|' <"$ERR")"
  [ ! -e "$C/$G/.decide-pending" ] || bad "the staging folder is still there"
  aux verify "$G"
  [ "$AUX_RC" = 0 ] || bad "the folder does not verify"
}
# plan_edited PYTHON: a plan of the good run, edited by the Python lines (d is the document).
plan_edited() {
  printf '%s\n' '{"currency": "EUR", "cards": [{"name": "node", "class": "cpu", "memory_gb": 64, "cards_per_lot": 1, "lot_price": {"3": 30, "7": 60}}]}' >"$C/prices.json"
  aux plan --from "$G" --corpus-items 100000 --prices prices.json --out plan.json
  [ -f "$C/plan.json" ] || { bad "no plan to edit"; return 1; }
  python3 - "$C/plan.json" "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
exec(sys.argv[2])
json.dump(d, open(sys.argv[1], "w"))
PY
}
hc_evidence__decide_plan_cheapest_edited_apart_from_its_row() {
  copy_run good || return
  plan_edited 'd["cheapest"]["needed_hours"] = 0.5; d["cheapest"]["items_per_s_per_card"] = 1e9' || return
  want_rc 2; want_err 'contradicts itself' 'cheapest is not one of the rows'
  guard "$C/$G"
  hrun decide "$G" --plan plan.json --decision go --reason x
}
hc_evidence__decide_plan_needed_hours_below_compute() {
  copy_run good || return
  plan_edited '
for r in d["plans"]:
    r["needed_hours"] = r["compute_hours"] / 10
for k in ("cheapest", "fastest"):
    if d[k]: d[k]["needed_hours"] = d[k]["compute_hours"] / 10' || return
  want_rc 2; want_err 'contradicts itself' 'not its compute_hours'
  guard "$C/$G"
  hrun decide "$G" --plan plan.json --decision go --reason x
}
hc_evidence__decide_plan_period_suffices_contradicts_hours() {
  copy_run good || return
  plan_edited '
for r in d["plans"]:
    r["period_suffices"] = not r["period_suffices"]' || return
  want_rc 2; want_err 'contradicts itself' 'period_suffices'
  guard "$C/$G"
  hrun decide "$G" --plan plan.json --decision go --reason x
}

# --- from the third review ----------------------------------------------------------------------
hc_evidence__decide_takes_a_genuine_plan_with_ties() {
  # A genuine plan whose rows tie within plan's rounding (corpus of one item: every row needs
  # the allowance and a few nanoseconds): decide breaks the tie as plan did, and accepts it.
  copy_run good || return
  cp "$C/proj/config/prices.example.json" "$C/prices.json"
  aux plan --from "$G" --prices prices.json --corpus-items 1 --assume-scaling 1 --out plan.json
  [ -f "$C/plan.json" ] || { bad "no plan: $(tr '\n' '|' <"$AUX_ERR")"; return; }
  want_rc 0
  hrun decide "$G" --plan plan.json
}

# --- from the fourth review: evidence edited so that every field agrees but the figures lie ----
# Python lines for plan_edited: each row's needed hours, period and fit, then the verdict and the
# picks, derived again from the rows' compute hours as plan derives them (the fastest: the
# cheapest of the rows within time_resolution_hours of the quickest).
REPICK='for r in d["plans"]:
    r["needed_hours"] = r["compute_hours"] + r["copy_off_hours"] + d["allowance_hours"]
    r["period_suffices"] = r["needed_hours"] <= r["period_days"] * 24; r["fits"] = r["period_suffices"] and r["fit"] != "no"
fit = [r for r in d["plans"] if r["fits"]]
d["cheapest"] = min(fit, key=lambda r: (r["cost"], r["needed_hours"])) if fit else None
quickest = min((r["needed_hours"] for r in fit), default=0)
near = [r for r in fit if r["needed_hours"] <= quickest + d["time_resolution_hours"]]
d["fastest"] = min(near, key=lambda r: (r["cost"], r["cards"], r["period_days"], r["needed_hours"])) if fit else None
d["verdict"] = "fits" if fit else "none_fits"'

hc_evidence__decide_plan_hours_cut_with_every_field_rederived() {
  # Every row's compute hours divided by 10,000, and needed hours, periods, fits and picks
  # re-derived from them: the hours no longer follow from the corpus at the row's rate.
  copy_run good || return
  plan_edited '
for r in d["plans"]:
    r["compute_hours"] /= 10000
'"$REPICK" || return
  want_rc 2; want_err 'contradicts itself' 'compute_hours' 'corpus\.items'
  guard "$C/$G"
  hrun decide "$G" --plan plan.json --decision go --reason x
}
hc_evidence__decide_plan_rate_raised_with_every_field_rederived() {
  # The basis rate raised 10,000-fold and every row made to follow from it exactly: the plan
  # agrees with itself, but not with the folder it names as its basis.
  copy_run good || return
  plan_edited '
b = d["basis"]; b["items_per_s_per_card"] *= 10000
for r in d["plans"]:
    r["items_per_s_per_card"] = b["items_per_s_per_card"]
    r["compute_hours"] = d["corpus"]["items"] / (r["items_per_s_per_card"] * r["cards"]) / 3600.0
'"$REPICK" || return
  want_rc 2; want_err 'contradicts itself' 'its basis is this folder' 'items/s per card'
  guard "$C/$G"
  hrun decide "$G" --plan plan.json --decision go --reason x
}
hc_evidence__decide_plan_outputs_shrunk_with_every_field_rederived() {
  # The measured outputs cut 1,000-fold (a plan that copies nothing off) and every figure made
  # to follow from them: the plan agrees with itself, but not with the folder it names.
  copy_run good || return
  plan_edited '
o = d["output"]; o["measured_bytes"] //= 1000
o["bytes_per_item"] = o["measured_bytes"] / o["measured_items"]
o["corpus_bytes"] = o["bytes_per_item"] * d["corpus"]["items"]
o["copy_off_hours"] = o["corpus_bytes"] / (o["copy_off_mb_per_s"] * 1e6) / 3600
for r in d["plans"]:
    r["copy_off_hours"] = o["copy_off_hours"]
'"$REPICK" || return
  want_rc 2; want_err 'contradicts itself' 'its basis is this folder' 'bytes of outputs'
  guard "$C/$G"
  hrun decide "$G" --plan plan.json --decision go --reason x
}
# compare_edited PYTHON: the good run compared with itself, edited by the Python lines (d).
compare_edited() {
  aux compare "$G" "$G" --out cmp
  [ "$AUX_RC" = 0 ] || { bad "no comparison to edit"; return 1; }
  python3 - "$C/cmp/compare.json" "$1" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
exec(sys.argv[2])
json.dump(d, open(sys.argv[1], "w"))
PY
}
hc_evidence__decide_compare_quality_contradicts_its_items() {
  copy_run good || return
  compare_edited '
d["quality"].update(accuracy_b=0.25, accuracy_delta=0.5, expected_rejections_met_b=500, accepted_b=700, labelled=-1)
d["performance"]["throughput_items_per_s"].update(b=9999.0, b_over_a=50.0)' || return
  want_rc 2; want_err 'contradicts itself' 'accuracy_delta' 'compare\.json'
  guard "$C/$G"
  hrun decide "$G" --compare cmp/compare.json --decision go --reason x
}
hc_evidence__decide_compare_of_this_folder_counts_other_items() {
  # Consistent in itself (3 of 3 items agree, 3 accepted on each side), but both of its runs
  # are this folder, which holds 12 results.
  copy_run good || return
  compare_edited '
d["items"].update(total=3, agree=3, same_status=3, same_category_or_reason=3, both_accepted=3, agreement=1.0)
d["items"].pop("differences_by_kind", None)
d["quality"].update(accepted_a=3, accepted_b=3, labelled=3, expected_rejections_met_a=0, expected_rejections_met_b=0)' || return
  want_rc 2; want_err 'contradicts itself' 'this folder' '12 results'
  guard "$C/$G"
  hrun decide "$G" --compare cmp/compare.json --decision go --reason x
}
