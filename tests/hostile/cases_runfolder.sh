# Damaged and hostile run folders: `pilot verify`, `pilot resume` and `pilot status` on copies
# of one finished run ("good") and one interrupted run ("part", stopped after 4 items), made
# once per group by catalogue.sh (the originals are guarded: nothing may change them); and
# the same pair of the embedding pilot, config/embed.json ("egood", "epart": stopped after 5
# items, its vectors journaled in data/vectors.sidecar), made on first use.
# verify: damage is a finding (exit 1) naming the file — a symlink, a FIFO or an oversized
# file inside a bag included — never followed, never a crash or a hang; an unusable
# argument is exit 2. resume: anything damaged or changed is refused (exit 2) and leaves the
# folder exactly as it was; nothing outside the folder is ever written.
# Sourced by catalogue.sh; each hc_runfolder__NAME function is one case.

G=runs/good
R=runs/part
# verify is read-only: the folder under test never changes.
verify_good() { guard "$C/$G"; hrun verify "$G" "$@"; }
resume_part() { hrun resume "$R" "$@"; }
# A verify finding: exit 1, stderr matching every pattern.
finding() { want_rc 1; want_err "$@"; }
# A refused resume: exit 2, stderr matching every pattern, the folder untouched.
refused() { want_rc 2; want_err "$@"; guard "$C/$R"; }
# insert_line FILE N TEXT: TEXT becomes line N of FILE (TEXT may be longer than an argv).
insert_line() {
  printf '%s\n' "$3" >"$1.line"
  { head -n $(($2 - 1)) "$1"; cat "$1.line"; tail -n +"$2" "$1"; } >"$1.new"
  rm "$1.line"
  mv "$1.new" "$1"
}
# pyedit FILE 'python statements on d': edits a JSON document in place.
pyedit() {
  python3 - "$1" "$2" <<'EOF'
import json, sys
path, code = sys.argv[1], sys.argv[2]
d = json.load(open(path))
exec(code)
open(path, "w").write(json.dumps(d, indent=2) + "\n")
EOF
}

# --- controls: the forger's re-hash alone leaves a bag that verifies --------------------------
hc_runfolder__verify_control_good() {
  copy_run good || return
  want_rc 0
  verify_good
}
hc_runfolder__verify_control_rehashed() {
  copy_run good || return
  rehash "$G"
  want_rc 0
  verify_good
}

# --- verify: symlinks and non-regular files inside the bag ------------------------------------
hc_runfolder__verify_report_md_symlink() {
  copy_run good || return
  mv "$G/data/report.md" "$C/outside/report.md"
  ln -s "$C/outside/report.md" "$G/data/report.md"
  finding 'report\.md' 'symlink'
  verify_good
}
hc_runfolder__verify_data_dir_symlink() {
  copy_run good || return
  mv "$G/data" "$C/outside/data"
  ln -s "$C/outside/data" "$G/data"
  finding '\bdata\b' 'symlink'
  verify_good
}
hc_runfolder__verify_bagit_symlink() {
  copy_run good || return
  mv "$G/bagit.txt" "$C/outside/bagit.txt"
  ln -s "$C/outside/bagit.txt" "$G/bagit.txt"
  finding 'bagit\.txt' 'symlink'
  verify_good
}
hc_runfolder__verify_bagit_fifo() {
  copy_run good || return
  rm "$G/bagit.txt"
  mkfifo "$G/bagit.txt"
  finding 'bagit\.txt'
  quick
  verify_good
}
hc_runfolder__verify_bagit_dev_zero() {
  copy_run good || return
  ln -sf /dev/zero "$G/bagit.txt"
  finding 'bagit\.txt'
  quick
  bounded
  verify_good
}
hc_runfolder__verify_run_json_dev_zero() {
  copy_run good || return
  ln -sf /dev/zero "$G/data/run.json"
  finding 'run\.json'
  quick
  bounded
  verify_good
}
hc_runfolder__verify_journal_dev_zero_fast() {
  copy_run good || return
  ln -sf /dev/zero "$G/data/journal.jsonl"
  finding 'journal\.jsonl'
  quick
  bounded
  verify_good --fast
}
hc_runfolder__verify_manifest_file_fifo() {
  copy_run good || return
  rm "$G/manifest-sha256.txt"
  mkfifo "$G/manifest-sha256.txt"
  finding 'manifest-sha256\.txt'
  quick
  verify_good
}
hc_runfolder__verify_results_is_directory() {
  copy_run good || return
  rm "$G/data/results.jsonl"
  mkdir "$G/data/results.jsonl"
  finding 'results\.jsonl'
  quick
  verify_good
}
hc_runfolder__verify_passwd_link_rehashed() {
  # A consistent forgery: data/passwd -> /etc/passwd, listed and hashed like any payload file
  # (sha256sum -c passes); the symlink itself is the finding.
  copy_run good || return
  ln -s /etc/passwd "$G/data/passwd"
  rehash "$G"
  finding 'passwd' 'symlink'
  verify_good
  grep -q '^root:' "$OUT" "$ERR" && bad "the linked file's content was echoed"
}
hc_runfolder__verify_secret_link_rehashed() {
  copy_run good || return
  ln -s "$C/outside/secret.txt" "$G/data/notes.txt"
  rehash "$G"
  finding 'notes\.txt' 'symlink'
  verify_good
}
hc_runfolder__verify_empty_dir_in_data() {
  copy_run good || return
  mkdir "$G/data/empty"
  finding 'empty'
  verify_good
}
hc_runfolder__verify_extra_top_file() {
  copy_run good || return
  echo hello >"$G/extra.txt"
  finding 'extra\.txt'
  verify_good
}

hc_runfolder__verify_non_utf8_name_json() {
  # A payload file whose name is not UTF-8 (listed and hashed): a finding, and --json output
  # that is still valid JSON.
  copy_run good || return
  echo hi >"$G/data/"$'\xff'"odd.txt"
  rehash "$G"
  want_rc 0 1
  verify_good --json
  valid_json "$OUT"
}
hc_runfolder__verify_non_utf8_name_human() {
  copy_run good || return
  echo hi >"$G/data/"$'\xfe'"odd.txt"
  finding 'odd\.txt'
  verify_good
}
hc_runfolder__verify_newline_name() {
  # A file name with a newline must not break (or forge) the finding lines: every line after
  # the header reads "  [check] where: what".
  copy_run good || return
  echo hi >"$G/data/"$'two\nlines.txt'
  finding 'lines\.txt'
  verify_good
  local stray
  stray=$(grep -av '^verify: FAILED' "$ERR" | grep -av '^  \[[a-z]*\] ' | head -n 2 | tr '\n' '|')
  [ -z "$stray" ] && return
  bad "stderr lines that are not findings: $stray"
}
hc_runfolder__verify_bag_info_over_cap() {
  # A 70 MB bag-info.txt (tag manifest redone): past the tag-file cap, a finding, bounded.
  copy_run good || return
  { cat "$G/bag-info.txt"; printf 'Padding: '; repeat 70000000 p; echo; } >"$G/bag-info.new"
  mv "$G/bag-info.new" "$G/bag-info.txt"
  (cd "$G" && sha256sum bag-info.txt bagit.txt manifest-sha256.txt >tagmanifest-sha256.txt)
  finding 'bag-info\.txt'
  bounded
  verify_good
}

# --- verify: tag manifests that do not parse or escape -----------------------------------------
hc_runfolder__verify_tagmanifest_blank_line() {
  copy_run good || return
  sed -i '1a\\' "$G/tagmanifest-sha256.txt"
  finding 'tagmanifest-sha256\.txt'
  verify_good
}
hc_runfolder__verify_tagmanifest_crlf() {
  copy_run good || return
  sed -i 's/$/\r/' "$G/tagmanifest-sha256.txt"
  finding 'tagmanifest-sha256\.txt'
  verify_good
}
hc_runfolder__verify_tagmanifest_star_marker() {
  copy_run good || return
  sed -i '1s/  / */' "$G/tagmanifest-sha256.txt"
  finding 'tagmanifest-sha256\.txt'
  verify_good
}
hc_runfolder__verify_manifest_lists_outside_file() {
  # manifest-sha256.txt lists ../../outside/victim.txt with its true hash (tagmanifest redone):
  # a path escaping the bag is a finding, and the file outside is never touched.
  copy_run good || return
  echo "$(sha "$C/outside/victim.txt")  ../../outside/victim.txt" >>"$G/manifest-sha256.txt"
  (cd "$G" && sha256sum bag-info.txt bagit.txt manifest-sha256.txt >tagmanifest-sha256.txt)
  finding 'victim\.txt|\.\./\.\./outside'
  verify_good
}
hc_runfolder__verify_manifest_lists_absolute() {
  copy_run good || return
  echo "$(sha "$C/outside/victim.txt")  $C/outside/victim.txt" >>"$G/manifest-sha256.txt"
  (cd "$G" && sha256sum bag-info.txt bagit.txt manifest-sha256.txt >tagmanifest-sha256.txt)
  finding 'victim\.txt'
  verify_good
}
hc_runfolder__verify_oxum_garbage() {
  copy_run good || return
  sed -i 's/^Payload-Oxum: .*/Payload-Oxum: 999999999999999999999999999999.-1/' "$G/bag-info.txt"
  (cd "$G" && sha256sum bag-info.txt bagit.txt manifest-sha256.txt >tagmanifest-sha256.txt)
  finding 'bag-info\.txt|Oxum'
  verify_good
}

# --- verify: documents that parse but lie, re-hashed consistently --------------------------------
hc_runfolder__verify_run_json_state_int() {
  copy_run good || return
  sed -i -E 's/"state": *"finished"/"state": 1/' "$G/data/run.json"
  grep -q '"state": *1' "$G/data/run.json" || bad "could not edit run.json's state"
  rehash "$G"
  finding 'run\.json'
  verify_good
}
# A setting compare and decide read, of the wrong type: the record is refused naming the key,
# never shown as a changed value nor taken as a default.
hc_runfolder__verify_run_json_setting_wrong_type() {
  copy_run good || return
  pyedit "$G/data/run.json" 'd["plan"]["batch_size"] = "4"'
  rehash "$G"
  finding 'run\.json' "plan\.batch_size"
  verify_good
}
hc_runfolder__compare_run_json_dtype_wrong_type() {
  copy_run good || return
  pyedit "$G/data/run.json" 'd["plan"]["model_contract"]["dtype"] = ["float16"]'
  rehash "$G"
  want_rc 2; want_err 'plan\.model_contract\.dtype' 'run\.json'
  guard "$C/$G"
  hrun compare "$G" "$G"
}
hc_runfolder__verify_run_json_array() {
  copy_run good || return
  echo '[]' >"$G/data/run.json"
  rehash "$G"
  finding 'run\.json'
  verify_good
}
hc_runfolder__verify_run_json_over_16_mib() {
  copy_run good || return
  python3 - "$G/data/run.json" <<'EOF'
import sys
p = sys.argv[1]
t = open(p).read()
i = t.index('"state"')
open(p, "w").write(t[:i] + '"note": "' + "x" * (17 << 20) + '", ' + t[i:])
EOF
  rehash "$G"
  finding 'run\.json'
  bounded
  verify_good
}
hc_runfolder__verify_run_json_nested_100000() {
  copy_run good || return
  python3 - "$G/data/run.json" <<'EOF'
import sys
p = sys.argv[1]
t = open(p).read()
i = t.index('"state"')
open(p, "w").write(t[:i] + '"deep": ' + "[" * 100000 + "]" * 100000 + ', ' + t[i:])
EOF
  rehash "$G"
  finding 'run\.json'
  quick
  verify_good
}
hc_runfolder__verify_run_json_manifest_copy_outside() {
  # run.json pointing its manifest copy at a file outside the bag: never read.
  copy_run good || return
  pyedit "$G/data/run.json" 'd["manifest_copy"] = "../../../outside/secret.txt"'
  rehash "$G"
  want_rc 1
  verify_good
}
hc_runfolder__verify_run_json_manifest_copy_dev_zero() {
  copy_run good || return
  pyedit "$G/data/run.json" 'd["manifest_copy"] = "/dev/zero"'
  rehash "$G"
  want_rc 1
  quick
  bounded
  verify_good
}
hc_runfolder__verify_run_json_plan_int_inputs() {
  copy_run good || return
  pyedit "$G/data/run.json" 'd["plan"] = 5'
  rehash "$G"
  finding 'run\.json|plan'
  verify_good --inputs
}
hc_runfolder__verify_report_json_array() {
  copy_run good || return
  echo '[]' >"$G/data/report.json"
  rehash "$G"
  finding 'report\.json'
  verify_good
}
hc_runfolder__verify_report_counts_strings() {
  copy_run good || return
  pyedit "$G/data/report.json" 'd["counts"] = {k: str(v) for k, v in d["counts"].items()}'
  rehash "$G"
  finding 'report\.json'
  verify_good
}
hc_runfolder__verify_report_accuracy_forged() {
  # More labelled items judged correct and a lower p95 than the results give, the counts left
  # alone, the bag re-hashed: the report rebuilt from the folder differs.
  copy_run good || return
  pyedit "$G/data/report.json" 'd["quality"]["labelled"] = d["quality"]["correct"] = d["counts"]["total"]
d["latency_ms"]["p95"] = 0.5'
  rehash "$G"
  finding 'report\.json' 'rebuilt' 'differing keys: quality, latency_ms'
  verify_good
}
hc_runfolder__verify_report_forged_and_relabelled_format_1() {
  # A forged p95, and the folder relabelled as format 1 (no kind or format in run.json or
  # bag-info.txt), which would spare it the report's rebuild: its version-2 journal says what
  # wrote it.
  copy_run good || return
  pyedit "$G/data/report.json" 'd["latency_ms"]["p95"] = 0.5'
  pyedit "$G/data/run.json" 'del d["folder_kind"]; del d["format_version"]'
  sed -i '/^Pilot-Folder-Kind: /d; /^Pilot-Format-Version: /d' "$G/bag-info.txt"
  rehash "$G"
  finding 'journal\.jsonl' 'declares format 1'
  verify_good
}
hc_runfolder__verify_report_forged_journal_version_1() {
  # The journal's header relabelled version 1 under a format-2 folder, a forged p95, re-hashed.
  copy_run good || return
  sed -i '1s/"version":2/"version":1/' "$G/data/journal.jsonl"
  pyedit "$G/data/report.json" 'd["latency_ms"]["p95"] = 0.001'
  rehash "$G"
  finding 'journal\.jsonl' 'is version 1, but the folder declares format 4'
  verify_good
}
hc_runfolder__verify_report_md_forged() {
  # report.md's verdict line rewritten, report.json intact, the bag re-hashed.
  copy_run good || return
  sed -i 's/^Verdict: .*/Verdict: **acceptance criteria met** (forged)/' "$G/data/report.md"
  rehash "$G"
  finding 'report\.md' 'rendered again'
  verify_good
}
hc_runfolder__verify_results_id_int() {
  copy_run good || return
  echo '{"id":5}' >>"$G/data/results.jsonl"
  rehash "$G"
  finding 'results\.jsonl'
  verify_good
}
hc_runfolder__verify_results_nested_line() {
  copy_run good || return
  { printf '{"id":"doc-01","x":'; nest 100000; echo '}'; } >>"$G/data/results.jsonl"
  rehash "$G"
  finding 'results\.jsonl'
  quick
  verify_good
}
hc_runfolder__verify_result_category_changed() {
  # doc-01 en -> fr in results.jsonl and the report's counts: consistent with each other and
  # re-hashed, but not with the journal the run wrote.
  copy_run good || return
  grep -q '"id":"doc-01","status":"accepted","category":"en"' "$G/data/results.jsonl" || bad "doc-01 not accepted en"
  sed -i 's/"id":"doc-01","status":"accepted","category":"en"/"id":"doc-01","status":"accepted","category":"fr"/' \
    "$G/data/results.jsonl"
  pyedit "$G/data/report.json" 'c = d["by_category"]; c["en"] -= 1; c["fr"] = c.get("fr", 0) + 1
if c["en"] == 0: del c["en"]'
  rehash "$G"
  finding 'doc-01'
  verify_good
}
hc_runfolder__verify_result_expected_label_changed() {
  # A labelled item's `expected` edited in results.jsonl and re-hashed: it must be the manifest's.
  copy_run good || return
  grep -q '"id":"doc-01",.*"expected":"en"}$' "$G/data/results.jsonl" || bad "doc-01 does not carry expected en"
  sed -i '/"id":"doc-01",/s/"expected":"en"}$/"expected":"fr"}/' "$G/data/results.jsonl"
  rehash "$G"
  finding 'doc-01' "its 'expected' label differs from the manifest's"
  verify_good
}
hc_runfolder__verify_result_expected_label_dropped_or_added() {
  # The label removed from a labelled item, and one given to an item the manifest does not label.
  copy_run good || return
  python3 - "$G/data/results.jsonl" "$G/data/manifest.json" >"$C/who" <<'EOF'
import json, sys
res, man = sys.argv[1], sys.argv[2]
unlabelled = [i["id"] for i in json.load(open(man))["items"] if "expected" not in i]
assert unlabelled, "the bundled manifest has an unlabelled item"
out = []
for l in open(res).read().splitlines():
    if l.startswith('{"id":"doc-01",'):
        l = l[: l.rindex(',"expected":')] + "}"
    elif l.startswith('{"id":"%s",' % unlabelled[0]):
        l = l[:-1] + ',"expected":"en"}'
    out.append(l)
open(res, "w").write("\n".join(out) + "\n")
print(unlabelled[0])
EOF
  rehash "$G"
  finding 'doc-01' "has no 'expected' label, though the manifest gives the item one" \
    "$(cat "$C/who")" "carries an 'expected' label the manifest does not give the item"
  verify_good
}
hc_runfolder__verify_result_flipped_to_rejected() {
  copy_run good || return
  python3 - "$G/data/results.jsonl" "$G/data/report.json" <<'EOF'
import json, sys
res, rep = sys.argv[1], sys.argv[2]
lines = open(res).read().splitlines()
out = []
for l in lines:
    if l.startswith('{"id":"doc-01",'):
        l = '{"id":"doc-01","status":"rejected","reason":"low_confidence","detail":"confidence 0.31 below min_confidence 0.5"}'
    out.append(l)
open(res, "w").write("\n".join(out) + "\n")
d = json.load(open(rep))
d["counts"]["accepted"] -= 1
d["counts"]["rejected"] += 1
c = d["by_category"]; c["en"] -= 1
if c["en"] == 0: del c["en"]
r = d["by_reason"]; r["low_confidence"] = r.get("low_confidence", 0) + 1
open(rep, "w").write(json.dumps(d, indent=2) + "\n")
EOF
  rehash "$G"
  finding 'doc-01'
  verify_good
}
hc_runfolder__verify_journal_type_int() {
  copy_run good || return
  echo '{"type":5}' >>"$G/data/journal.jsonl"
  rehash "$G"
  finding 'journal\.jsonl'
  verify_good
}
hc_runfolder__verify_params_copy_secret() {
  # The bag's params.json swapped for one holding a secret (run.json's sha256 updated too):
  # whatever the finding says, it does not quote the secret.
  copy_run good || return
  sed -i "s/\"description\": \"[^\"]*\"/\"description\": \"sk-proj-${MARKER}0123456789abcdef\", \"description\": \"ok\"/" \
    "$G/data/params.json"
  pyedit "$G/data/run.json" "import hashlib; d['params_sha256'] = hashlib.sha256(open('$G/data/params.json','rb').read()).hexdigest()"
  rehash "$G"
  want_rc 1
  want_err 'params\.json'
  verify_good
}
hc_runfolder__verify_expect_wrong() {
  copy_run good || return
  finding 'expect|fingerprint'
  verify_good --expect "$(repeat 64 a)"
}
hc_runfolder__verify_expect_right() {
  copy_run good || return
  want_rc 0
  verify_good --expect "$(sha "$G/tagmanifest-sha256.txt")"
}
hc_runfolder__verify_expect_not_hex() {
  copy_run good || return
  want_rc 2
  want_err 'expect'
  verify_good --expect "not-a-fingerprint"
}

# --- verify: unusable arguments (exit 2) ----------------------------------------------------------
hc_runfolder__verify_symlink_loop() {
  ln -s loop "$C/loop"
  want_rc 2
  want_err 'loop'
  quick
  hrun verify loop
}
hc_runfolder__verify_5000_char_path() {
  want_rc 2
  want_err 'xxxxxxxxxx'
  hrun verify "$(repeat 5000 x)"
}
hc_runfolder__verify_file_not_folder() {
  copy_run good || return
  want_rc 2
  want_err 'bagit\.txt'
  hrun verify "$G/bagit.txt"
}
hc_runfolder__verify_unfinished_folder() {
  # An interrupted run is not a finished bag: findings, not a crash.
  copy_run part || return
  want_rc 1
  guard "$C/$R"
  hrun verify "$R"
}

# --- resume: refusals leave the folder as it was ----------------------------------------------------
hc_runfolder__resume_lock_symlink_to_victim() {
  copy_run part || return
  ln -s "$C/outside/victim.txt" "$R/.lock"
  refused '\.lock'
  quick
  resume_part
}
hc_runfolder__resume_lock_fifo() {
  copy_run part || return
  mkfifo "$R/.lock"
  refused '\.lock'
  quick
  resume_part
}
hc_runfolder__resume_lock_directory() {
  copy_run part || return
  mkdir "$R/.lock"
  refused '\.lock'
  quick
  resume_part
}
hc_runfolder__resume_journal_symlink_outside() {
  copy_run part || return
  cp "$R/data/journal.jsonl" "$C/outside/journal.jsonl"
  ln -sf "$C/outside/journal.jsonl" "$R/data/journal.jsonl"
  refused 'journal\.jsonl'
  resume_part
}
hc_runfolder__resume_journal_dev_zero() {
  copy_run part || return
  ln -sf /dev/zero "$R/data/journal.jsonl"
  refused 'journal\.jsonl'
  quick
  bounded
  resume_part
}
hc_runfolder__resume_data_dir_symlink_outside() {
  copy_run part || return
  mv "$R/data" "$C/outside/partdata"
  ln -s "$C/outside/partdata" "$R/data"
  refused '\bdata\b'
  resume_part
}
hc_runfolder__resume_journal_bad_record_middle() {
  copy_run part || return
  sed -i '3i {"type":"result","id":' "$R/data/journal.jsonl"
  refused 'journal\.jsonl'
  resume_part
}
hc_runfolder__resume_journal_huge_line_middle() {
  copy_run part || return
  local j=$R/data/journal.jsonl
  { head -n 2 "$j"; printf '{"type":"batch","at_unix":1,"note":"'; repeat 20000000 n; echo '"}'; tail -n +3 "$j"; } >"$j.new"
  mv "$j.new" "$j"
  refused 'journal\.jsonl'
  quick
  bounded
  resume_part
}
hc_runfolder__resume_journal_nested_record() {
  # In the middle: a damaged LAST record is tolerated as torn (README), one before it is not.
  copy_run part || return
  insert_line "$R/data/journal.jsonl" 3 "{\"type\":\"batch\",\"x\":$(nest 100000)}"
  refused 'journal\.jsonl'
  quick
  resume_part
}
hc_runfolder__resume_header_model_dev_zero() {
  copy_run part || return
  sed -i -E '1s#"model":"[^"]*"#"model":"/dev/zero"#' "$R/data/journal.jsonl"
  grep -q '"model":"/dev/zero"' "$R/data/journal.jsonl" || bad "could not edit the journal's header"
  refused 'dev/zero|model'
  quick
  bounded
  resume_part
}
hc_runfolder__resume_header_model_fifo() {
  copy_run part || return
  mkfifo "$C/outside/model.pt"
  sed -i -E "1s#\"model\":\"[^\"]*\"#\"model\":\"$C/outside/model.pt\"#" "$R/data/journal.jsonl"
  refused 'model'
  quick
  resume_part
}
hc_runfolder__resume_header_items_huge() {
  copy_run part || return
  sed -i -E '1s#"items":[0-9]+#"items":18446744073709551615#' "$R/data/journal.jsonl"
  refused 'journal\.jsonl|items'
  quick
  bounded
  resume_part
}
hc_runfolder__resume_journal_type_int() {
  copy_run part || return
  echo '{"type":5}' >>"$R/data/journal.jsonl"
  refused 'journal\.jsonl'
  resume_part
}
hc_runfolder__resume_journal_batch_at_unix_string() {
  copy_run part || return
  echo '{"type":"batch","at_unix":"x"}' >>"$R/data/journal.jsonl"
  refused 'journal\.jsonl'
  resume_part
}
hc_runfolder__resume_journal_session_pid_string() {
  copy_run part || return
  echo '{"type":"session","at_unix":[1],"pid":"x","resumed":"yes"}' >>"$R/data/journal.jsonl"
  refused 'journal\.jsonl'
  resume_part
}
hc_runfolder__resume_journal_result_unknown_id() {
  # The journal claims an id the manifest does not have: it does not belong to this run.
  copy_run part || return
  echo '{"type":"result","id":"ghost","status":"accepted","category":"en","confidence":0.9,"model":"sha256:00","latency_ms":1.0}' \
    >>"$R/data/journal.jsonl"
  refused 'ghost'
  resume_part
}
hc_runfolder__resume_journal_result_status_int() {
  copy_run part || return
  echo '{"type":"result","id":"doc-12","status":7}' >>"$R/data/journal.jsonl"
  refused 'journal\.jsonl'
  resume_part
}
hc_runfolder__resume_journal_escaped_duplicate() {
  # A second result for doc-01 spelled "doc\u002d01": still two results for one id.
  copy_run part || return
  grep '"id":"doc-01"' "$R/data/journal.jsonl" | sed 's/"id":"doc-01"/"id":"doc\\u002d01"/' >>"$R/data/journal.jsonl"
  echo '{"type":"batch","at_unix":1796000000.5,"items":1,"peak_rss_mb":170.0}' >>"$R/data/journal.jsonl"
  refused 'journal\.jsonl|doc-01'
  resume_part
}
hc_runfolder__resume_header_model_secret() {
  # The header's model path pointed at a secret file: refused (a different model), the
  # secret never echoed.
  copy_run part || return
  sed -i -E "1s#\"model\":\"[^\"]*\"#\"model\":\"$C/outside/secret.txt\"#" "$R/data/journal.jsonl"
  refused 'model'
  resume_part
}
hc_runfolder__resume_params_changed() {
  copy_run part || return
  sed -i 's/"batch_size": 4/"batch_size": 5/' "$R/data/params.json"
  refused 'params\.json'
  resume_part
}
hc_runfolder__resume_manifest_copy_changed() {
  copy_run part || return
  sed -i '0,/"expected": "en"/s//"expected": "fr"/' "$R/data/manifest.json"
  refused 'manifest\.json'
  resume_part
}
hc_runfolder__resume_finished_run() {
  copy_run good || return
  want_rc 2
  want_err 'finished'
  guard "$C/$G"
  hrun resume "$G"
}
hc_runfolder__resume_finished_run_stale_lock() {
  # A finished run with a stale .lock (no process holds it): never rewritten. Either "already
  # finished" (exit 0, the stale lock removed) or a refusal (exit 2); every other file stays.
  copy_run good || return
  touch "$G/.lock"
  want_rc 0 2
  want_err 'finished'
  guard "$C/$G" .lock
  hrun resume "$G"
}
hc_runfolder__resume_device_tpu() {
  copy_run part || return
  refused 'tpu|device'
  resume_part --device tpu
  [ -e "$R/.lock" ] && bad ".lock left behind"
}
hc_runfolder__resume_stale_temp_symlink() {
  # A stale temp file that is a symlink to a file outside is never written through: either
  # the resume refuses (2, the folder untouched) or it removes the link and finishes a bag
  # that verifies (0/4).
  copy_run part || return
  ln -s "$C/outside/victim.txt" "$R/data/results.jsonl.tmp-99999"
  ln -s "$C/outside/victim.txt" "$R/data/report.json.tmp-$((RANDOM + 100000))"
  want_rc 0 2 4
  fp "$C/$R" >"$T/part.before"
  resume_part
  if [ "$RC" = 2 ]; then
    fp "$C/$R" | cmp -s - "$T/part.before" || bad "the refused resume changed the folder"
  else
    aux verify "$R"
    [ "$AUX_RC" = 0 ] || bad "verify after resume exited $AUX_RC: $(head -c 200 "$AUX_ERR" | tr '\n' '|')"
  fi
}
hc_runfolder__resume_relative_folder_name() {
  # `cd runs && pilot resume part`: a bare relative name (this used to abort with 134).
  copy_run part || return
  want_rc 0 4
  hrun -C "$C/runs" resume part
  aux verify "$R"
  [ "$AUX_RC" = 0 ] || bad "verify after resume exited $AUX_RC: $(head -c 200 "$AUX_ERR" | tr '\n' '|')"
}
hc_runfolder__resume_dot_folder() {
  copy_run part || return
  want_rc 0 4
  hrun -C "$C/$R" resume .
  aux verify "$R"
  [ "$AUX_RC" = 0 ] || bad "verify after resume exited $AUX_RC: $(head -c 200 "$AUX_ERR" | tr '\n' '|')"
}

# --- embedding folders: data/vectors.npy, data/vectors.sidecar, kinds and formats -----------------
E=runs/egood
EP=runs/epart
verify_egood() { guard "$C/$E"; hrun verify "$E"; }
# A refused resume (or status) of the interrupted embedding run: exit 2, the folder untouched.
refused_embed() { want_rc 2; want_err "$@"; guard "$C/$EP"; }
# npy_rewrite FILE DICT [LEN]: the .npy header's dict replaced by DICT, padded with spaces and
# a newline to LEN bytes (default: the length it had), the data after it kept byte for byte.
npy_rewrite() {
  python3 - "$@" <<'PYEOF'
import struct, sys
path, text = sys.argv[1], sys.argv[2].encode()
d = open(path, "rb").read()
assert d[:8] == b"\x93NUMPY\x01\x00", d[:8]
old = struct.unpack("<H", d[8:10])[0]
n = int(sys.argv[3]) if len(sys.argv) > 3 else old
assert len(text) + 1 <= n < 65536 and (10 + n) % 64 == 0, (len(text), n)
open(path, "wb").write(d[:8] + struct.pack("<H", n) + text + b" " * (n - len(text) - 1) + b"\n" + d[10 + old:])
PYEOF
}
# The header dict pilot writes for the bundled embedding pilot (10 accepted, dim 16), and
# npy_dict DESCR FORTRAN SHAPE: the same with those three edited.
NPY_DICT="{'descr': '<f4', 'fortran_order': False, 'shape': (10, 16), }"
npy_dict() { printf "{'descr': '%s', 'fortran_order': %s, 'shape': (%s), }" "$1" "$2" "$3"; }

hc_runfolder__verify_embed_control_good() {
  copy_run egood || return
  grep -q '"output": "embedding"' "$E/data/run.json" || bad "egood is not an embedding run"
  head -c 128 "$E/data/vectors.npy" | grep -qaF "$NPY_DICT" || bad "vectors.npy's header is not $NPY_DICT"
  want_rc 0
  verify_egood
}
hc_runfolder__verify_embed_control_rehashed() {
  # The forger's tools alone (the header rewritten as it was, the bag re-hashed) verify.
  copy_run egood || return
  npy_rewrite "$E/data/vectors.npy" "$(npy_dict '<f4' False '10, 16')"
  rehash "$E"
  want_rc 0
  verify_egood
}
hc_runfolder__verify_embed_npy_passwd_symlink() {
  # data/vectors.npy -> /etc/passwd, listed and hashed like any payload file: the link is the
  # finding, never followed; nothing of the linked file is echoed.
  copy_run egood || return
  ln -sf /etc/passwd "$E/data/vectors.npy"
  rehash "$E"
  finding 'data/vectors\.npy' 'symlink'
  quick
  verify_egood
  grep -aq '^root:\|root:x:0' "$OUT" "$ERR" && bad "the linked file's content was echoed"
}
hc_runfolder__verify_embed_npy_secret_symlink() {
  copy_run egood || return
  ln -sf "$C/outside/secret.txt" "$E/data/vectors.npy"
  rehash "$E"
  finding 'data/vectors\.npy' 'symlink'
  verify_egood
}
hc_runfolder__verify_embed_npy_fifo() {
  copy_run egood || return
  rm "$E/data/vectors.npy"
  mkfifo "$E/data/vectors.npy"
  finding 'data/vectors\.npy'
  quick
  verify_egood
}
hc_runfolder__verify_embed_npy_dev_zero() {
  copy_run egood || return
  ln -sf /dev/zero "$E/data/vectors.npy"
  finding 'data/vectors\.npy'
  quick
  bounded
  verify_egood
}
hc_runfolder__verify_embed_npy_huge_shape() {
  # A header claiming 9999999999 rows, re-hashed: a finding on the vectors, no allocation of
  # what the shape claims, no read past the file.
  copy_run egood || return
  npy_rewrite "$E/data/vectors.npy" "$(npy_dict '<f4' False '9999999999, 16')"
  rehash "$E"
  finding '\[vectors\] data/vectors\.npy'
  quick
  bounded
  verify_egood
}
hc_runfolder__verify_embed_npy_shape_overflow() {
  # rows * cols * 4 wraps around 64 bits: still a finding, never a wrapped size that matches.
  copy_run egood || return
  npy_rewrite "$E/data/vectors.npy" "$(npy_dict '<f4' False '999999999999999999, 999999999999999999')"
  rehash "$E"
  finding '\[vectors\] data/vectors\.npy'
  quick
  bounded
  verify_egood
}
hc_runfolder__verify_embed_npy_zero_columns() {
  copy_run egood || return
  npy_rewrite "$E/data/vectors.npy" "$(npy_dict '<f4' False '10, 0')"
  rehash "$E"
  finding '\[vectors\] data/vectors\.npy'
  quick
  verify_egood
}
hc_runfolder__verify_embed_npy_f8() {
  copy_run egood || return
  npy_rewrite "$E/data/vectors.npy" "$(npy_dict '<f8' False '10, 16')"
  rehash "$E"
  finding 'data/vectors\.npy' "'<f8'"
  verify_egood
}
hc_runfolder__verify_embed_npy_big_endian() {
  copy_run egood || return
  npy_rewrite "$E/data/vectors.npy" "$(npy_dict '>f4' False '10, 16')"
  rehash "$E"
  finding 'data/vectors\.npy' "'>f4'"
  verify_egood
}
hc_runfolder__verify_embed_npy_fortran_order() {
  copy_run egood || return
  npy_rewrite "$E/data/vectors.npy" "$(npy_dict '<f4' True '10, 16')"
  rehash "$E"
  finding 'data/vectors\.npy' 'fortran'
  verify_egood
}
hc_runfolder__verify_embed_npy_3d_shape() {
  copy_run egood || return
  npy_rewrite "$E/data/vectors.npy" "$(npy_dict '<f4' False '10, 4, 4')"
  rehash "$E"
  finding 'data/vectors\.npy'
  verify_egood
}
hc_runfolder__verify_embed_npy_header_long_padding() {
  # The same dict padded with spaces to the format's largest header (65526 bytes; pilot and
  # numpy pad only to the next 64): a header the .npy format allows. A finding or a pass,
  # never a crash (matching it must not recurse once per byte).
  copy_run egood || return
  npy_rewrite "$E/data/vectors.npy" "$NPY_DICT" 65526
  rehash "$E"
  want_rc 0 1
  quick
  bounded
  verify_egood
}
hc_runfolder__verify_embed_npy_descr_long() {
  # A 65000-character dtype: refused as a dtype, never a crash.
  copy_run egood || return
  npy_rewrite "$E/data/vectors.npy" "$(npy_dict "<f4$(repeat 65000 x)" False '10, 16')" 65526
  rehash "$E"
  finding 'data/vectors\.npy'
  quick
  bounded
  verify_egood
}
hc_runfolder__verify_embed_npy_nan_value() {
  # A value of row 3 replaced by a NaN, re-hashed: the vectors finding names the row.
  copy_run egood || return
  printf '\000\000\300\177' | dd of="$E/data/vectors.npy" bs=1 seek=$((128 + 16 * 4 * 3 + 8)) conv=notrunc status=none
  rehash "$E"
  finding 'data/vectors\.npy' 'row 3'
  verify_egood
}
hc_runfolder__verify_embed_npy_rows_swapped() {
  # Rows 0 and 1 (doc-01's and doc-02's vectors) exchanged, the bag re-hashed: every header,
  # count and value is still plausible, but the bag's own journal and sidecar hold each id's
  # vector, and they disagree (as a changed category is caught against the journal).
  copy_run egood || return
  python3 - "$E/data/vectors.npy" <<'PYEOF'
import sys
p = sys.argv[1]
d = bytearray(open(p, "rb").read())
assert d[128:192] != d[192:256]
d[128:192], d[192:256] = d[192:256], d[128:192]
open(p, "wb").write(d)
PYEOF
  rehash "$E"
  finding 'vectors\.npy|doc-0[12]'
  verify_egood
}
# Run format 4: the rows' digests, and no second copy of the vectors.
hc_runfolder__verify_embed_vector_sha256_edited_everywhere() {
  # doc-01's digest replaced by another in results.jsonl and in the journal alike, re-hashed:
  # the two agree, but row 0 does not hash to it.
  copy_run egood || return
  local d
  d=$(grep -o '"vector_sha256":"[0-9a-f]*"' "$E/data/results.jsonl" | head -1 | cut -d'"' -f4)
  [ ${#d} = 64 ] || bad "egood's results carry no vector_sha256"
  sed -i "s/$d/$(printf '%064d' 0)/" "$E/data/results.jsonl" "$E/data/journal.jsonl"
  rehash "$E"
  finding 'data/vectors\.npy' "row 0 is not the vector item 'doc-01''s vector_sha256"
  verify_egood
}
hc_runfolder__verify_embed_vector_sha256_stripped() {
  # Every digest removed from results.jsonl and the journal, re-hashed: run format 4 requires
  # them.
  copy_run egood || return
  sed -i 's/,"vector_sha256":"[0-9a-f]*"//' "$E/data/results.jsonl" "$E/data/journal.jsonl"
  rehash "$E"
  finding 'doc-01' 'without the vector_sha256 that run format 4 requires'
  verify_egood
}
hc_runfolder__verify_embed_vector_sha256_not_hex() {
  # A digest of 64 characters that are not lower-case hex: the record is refused as such.
  copy_run egood || return
  sed -i '0,/"vector_sha256":"[0-9a-f]*"/s//"vector_sha256":"'"$(repeat 64 Z)"'"/' "$E/data/results.jsonl"
  rehash "$E"
  finding 'results\.jsonl' 'vector_sha256'
  verify_egood
}
hc_runfolder__verify_embed_sidecar_planted() {
  # A second copy of the vectors planted (and listed): format 4 stores them once.
  copy_run egood || return
  printf 'PILOTVEC\001\000\000\000\020\000\000\000' >"$E/data/vectors.sidecar"
  rehash "$E"
  finding 'data/vectors\.sidecar' 'keeps its vectors once'
  verify_egood
}
hc_runfolder__verify_embed_npy_read_as_float16() {
  # The float32 rows relabelled '<f2' with twice the rows, re-hashed: the dtype is not the
  # parameters' (float32), whatever the shape says.
  copy_run egood || return
  npy_rewrite "$E/data/vectors.npy" "$(npy_dict '<f2' False '20, 16')"
  rehash "$E"
  finding 'data/vectors\.npy' "stores float16 \('<f2'\); the parameters' vectors_dtype is float32"
  verify_egood
}
hc_runfolder__resume_embed_sidecar_gone_before_every_item() {
  # The sidecar of an interrupted run removed and a .npy planted: only a run whose every item
  # is journaled may finish from the .npy; this one is refused, untouched.
  copy_run epart || return
  rm "$EP/data/vectors.sidecar"
  cp "$(dirname "$EP")/egood/data/vectors.npy" "$EP/data/vectors.npy" 2>/dev/null ||
    printf '\223NUMPY\001\000' >"$EP/data/vectors.npy"
  refused_embed 'vectors the journal recorded are lost'
  hrun resume "$EP"
}
hc_runfolder__verify_embed_run_json_dim_zero() {
  copy_run egood || return
  pyedit "$E/data/run.json" 'd["plan"]["dim"] = 0'
  rehash "$E"
  finding 'data/run\.json'
  verify_egood
}
hc_runfolder__verify_embed_run_json_dim_string() {
  copy_run egood || return
  pyedit "$E/data/run.json" 'd["plan"]["dim"] = "16"'
  rehash "$E"
  finding 'data/run\.json'
  verify_egood
}
hc_runfolder__verify_embed_run_json_dim_huge() {
  copy_run egood || return
  pyedit "$E/data/run.json" 'd["plan"]["dim"] = 18446744073709551615'
  rehash "$E"
  finding 'data/run\.json'
  bounded
  verify_egood
}
hc_runfolder__verify_embed_bag_info_kind_sweep() {
  # bag-info.txt claims kind sweep, run.json says run (tag manifest redone): they disagree.
  copy_run egood || return
  sed -i 's/^Pilot-Folder-Kind: run$/Pilot-Folder-Kind: sweep/' "$E/bag-info.txt"
  grep -q '^Pilot-Folder-Kind: sweep$' "$E/bag-info.txt" || bad "could not edit bag-info.txt"
  rehash "$E"
  finding 'bag-info\.txt'
  verify_egood
}
hc_runfolder__verify_embed_kind_archive_both() {
  # Both files agree on a kind this pilot does not know: not a damaged folder but one it
  # cannot judge (exit 2), naming the kind.
  copy_run egood || return
  sed -i 's/^Pilot-Folder-Kind: run$/Pilot-Folder-Kind: archive/' "$E/bag-info.txt"
  pyedit "$E/data/run.json" 'd["folder_kind"] = "archive"'
  rehash "$E"
  want_rc 2
  want_err "kind 'archive'"
  verify_egood
}
hc_runfolder__verify_embed_relabelled_sweep() {
  # A run folder relabelled as a sweep (both files, rehashed): judged as a sweep, whose
  # record it does not have: findings (exit 1), never a crash.
  copy_run egood || return
  sed -i 's/^Pilot-Folder-Kind: run$/Pilot-Folder-Kind: sweep/; s/^Pilot-Format-Version: .*$/Pilot-Format-Version: 1/' "$E/bag-info.txt"
  pyedit "$E/data/run.json" 'd["folder_kind"] = "sweep"; d["format_version"] = 1'
  rehash "$E"
  finding 'data/run\.json'
  verify_egood
}
hc_runfolder__verify_embed_format_99_both() {
  copy_run egood || return
  sed -i 's/^Pilot-Format-Version: .*$/Pilot-Format-Version: 99/' "$E/bag-info.txt"
  grep -q '^Pilot-Format-Version: 99$' "$E/bag-info.txt" || bad "could not edit bag-info.txt"
  pyedit "$E/data/run.json" 'd["format_version"] = 99'
  rehash "$E"
  want_rc 2
  want_err 'run format 99'
  verify_egood
}
hc_runfolder__resume_embed_kind_archive() {
  copy_run epart || return
  pyedit "$EP/data/run.json" 'd["folder_kind"] = "archive"'
  refused_embed "kind 'archive'"
  hrun resume "$EP"
}
hc_runfolder__resume_embed_relabelled_sweep() {
  # An interrupted run relabelled as a sweep: resumed as a sweep, whose record it lacks.
  copy_run epart || return
  pyedit "$EP/data/run.json" 'd["folder_kind"] = "sweep"; d["format_version"] = 1'
  refused_embed "'(stage|request)' is missing"
  hrun resume "$EP"
}
hc_runfolder__status_embed_format_99() {
  copy_run epart || return
  pyedit "$EP/data/run.json" 'd["format_version"] = 99'
  refused_embed 'run format 99'
  hrun status "$EP"
}
hc_runfolder__status_embed_part() {
  copy_run epart || return
  want_rc 0
  guard "$C/$EP"
  hrun status "$EP" --json
  valid_json "$OUT"
}

# --- resume of the interrupted embedding run: the sidecar and what the journal says of it ---------
hc_runfolder__resume_embed_control() {
  # Resumed as it is: finishes, verifies, and its vectors are the straight run's, bit for bit.
  copy_run epart || return
  want_rc 0
  hrun resume "$EP"
  aux verify "$EP"
  [ "$AUX_RC" = 0 ] || bad "verify after resume exited $AUX_RC: $(head -c 300 "$AUX_ERR" | tr '\n' '|')"
  cmp -s "$EP/data/vectors.npy" "$BASE/runs/egood/data/vectors.npy" ||
    bad "the resumed vectors.npy differs from the straight run's"
}
hc_runfolder__resume_embed_sidecar_symlink() {
  # data/vectors.sidecar -> its copy outside: refused, nothing truncated or appended through it
  # (outside/ is compared byte for byte).
  copy_run epart || return
  mv "$EP/data/vectors.sidecar" "$C/outside/vectors.sidecar"
  ln -s "$C/outside/vectors.sidecar" "$EP/data/vectors.sidecar"
  refused_embed 'vectors\.sidecar'
  quick
  hrun resume "$EP"
}
hc_runfolder__resume_embed_sidecar_symlink_long() {
  # The same through a link whose own size (its target's length, what lstat reports) is
  # larger than what the journal refers to: a size check alone cannot be what refuses it.
  copy_run epart || return
  local far
  far=$C/outside/$(repeat 200 d)/$(repeat 200 e)/$(repeat 200 f)/$(repeat 200 g)
  mkdir -p "$far"
  mv "$EP/data/vectors.sidecar" "$far/vectors.sidecar"
  ln -s "$far/vectors.sidecar" "$EP/data/vectors.sidecar"
  [ "$(stat -c %s "$EP/data/vectors.sidecar")" -gt "$(stat -L -c %s "$EP/data/vectors.sidecar")" ] ||
    bad "the link is not longer than the sidecar"
  refused_embed 'vectors\.sidecar'
  quick
  hrun resume "$EP"
}
hc_runfolder__resume_embed_sidecar_fifo() {
  copy_run epart || return
  rm "$EP/data/vectors.sidecar"
  mkfifo "$EP/data/vectors.sidecar"
  refused_embed 'vectors\.sidecar'
  quick
  hrun resume "$EP"
}
hc_runfolder__resume_embed_sidecar_missing() {
  copy_run epart || return
  rm "$EP/data/vectors.sidecar"
  refused_embed 'vectors\.sidecar' 'the journal refers to'
  hrun resume "$EP"
}
hc_runfolder__resume_embed_sidecar_truncated() {
  # Cut 10 bytes short of the end of the last vector the journal points at: vectors lost.
  copy_run epart || return
  local size
  size=$(stat -c %s "$EP/data/vectors.sidecar")
  truncate -s $((size - 10)) "$EP/data/vectors.sidecar"
  refused_embed 'vectors\.sidecar' 'the journal refers to'
  hrun resume "$EP"
}
hc_runfolder__resume_embed_sidecar_wrong_dim() {
  # The sidecar's header declares dim 17; the run's stage has 16.
  copy_run epart || return
  printf '\021\000\000\000' | dd of="$EP/data/vectors.sidecar" bs=1 seek=12 conv=notrunc status=none
  refused_embed 'vectors\.sidecar' 'dim'
  hrun resume "$EP"
}
hc_runfolder__resume_embed_sidecar_bad_magic() {
  copy_run epart || return
  printf 'NOTAVEC!' | dd of="$EP/data/vectors.sidecar" bs=1 seek=0 conv=notrunc status=none
  refused_embed 'vectors\.sidecar'
  hrun resume "$EP"
}
hc_runfolder__resume_embed_sidecar_garbage_appended() {
  # Bytes after the last journaled vector (as a batch whose journal record never made it
  # leaves): cut back, the resume finishes, the bag verifies, the vectors are the straight
  # run's.
  copy_run epart || return
  head -c 5000 /dev/urandom >>"$EP/data/vectors.sidecar"
  want_rc 0
  hrun resume "$EP"
  aux verify "$EP"
  [ "$AUX_RC" = 0 ] || bad "verify after resume exited $AUX_RC: $(head -c 300 "$AUX_ERR" | tr '\n' '|')"
  cmp -s "$EP/data/vectors.npy" "$BASE/runs/egood/data/vectors.npy" ||
    bad "the resumed vectors.npy differs from the straight run's"
}
hc_runfolder__resume_embed_vector_at_past_end() {
  # The last result's vector_at moved past the sidecar's end: it refers to vectors that are
  # not there.
  copy_run epart || return
  local j=$EP/data/journal.jsonl n
  n=$(grep -n '"vector_at":' "$j" | tail -n 1 | cut -d: -f1)
  sed -i -E "${n}s/\"vector_at\":[0-9]+/\"vector_at\":999999/" "$j"
  grep -q '"vector_at":999999' "$j" || bad "could not edit the journal"
  refused_embed 'vectors\.sidecar'
  hrun resume "$EP"
}
hc_runfolder__resume_embed_vector_at_huge() {
  copy_run epart || return
  local j=$EP/data/journal.jsonl
  sed -i -E '0,/"vector_at":[0-9]+/s//"vector_at":18446744073709551615/' "$j"
  grep -q '"vector_at":18446744073709551615' "$j" || bad "could not edit the journal"
  refused_embed 'journal\.jsonl'
  quick
  bounded
  hrun resume "$EP"
}
hc_runfolder__resume_embed_vector_at_swapped() {
  # Two results' vector_at exchanged (both still inside the sidecar): each now points at the
  # other's vector, whose entry names the other id. A damaged folder: refused before any work,
  # and never a bag holding vectors under the wrong ids that verifies.
  copy_run epart || return
  python3 - "$EP/data/journal.jsonl" <<'PYEOF'
import re, sys
p = sys.argv[1]
lines = open(p).read().split("\n")
idx = [i for i, l in enumerate(lines) if '"vector_at":' in l][:2]
assert len(idx) == 2, idx
at = [re.search(r'"vector_at":(\d+)', lines[i]).group(1) for i in idx]
for i, a in zip(idx, reversed(at)):
    lines[i] = re.sub(r'"vector_at":\d+', '"vector_at":' + a, lines[i])
open(p, "w").write("\n".join(lines))
PYEOF
  refused_embed 'vectors\.sidecar|journal'
  quick
  hrun resume "$EP"
  if [ -f "$EP/tagmanifest-sha256.txt" ]; then
    aux verify "$EP"
    [ "$AUX_RC" = 0 ] && bad "a bag with swapped vectors verifies"
  fi
}
hc_runfolder__resume_embed_journal_batch_failure_v1() {
  # A batch_failure record under a version-1 header: a type version 1 does not define.
  copy_run epart || return
  local j=$EP/data/journal.jsonl
  sed -i '1s/"version":2,/"version":1,/' "$j"
  grep -q '^{"type":"header","version":1,' "$j" || bad "could not edit the journal's header"
  echo '{"type":"batch_failure","batch_size":4,"out_of_memory":true,"error":"x"}' >>"$j"
  echo '{"type":"batch","at_unix":1796000000.5,"items":0,"peak_rss_mb":170.0}' >>"$j"
  refused_embed 'journal\.jsonl'
  hrun resume "$EP"
}
hc_runfolder__resume_embed_journal_version_3() {
  copy_run epart || return
  sed -i '1s/"version":2,/"version":3,/' "$EP/data/journal.jsonl"
  grep -q '^{"type":"header","version":3,' "$EP/data/journal.jsonl" || bad "could not edit the journal's header"
  refused_embed 'journal\.jsonl' 'version'
  hrun resume "$EP"
}

# --- status ---------------------------------------------------------------------------------------
hc_runfolder__status_relative_from_runs() {
  copy_run part || return
  want_rc 0
  guard "$C/$R"
  hrun -C "$C/runs" status part
}
hc_runfolder__status_json_valid() {
  copy_run part || return
  want_rc 0
  guard "$C/$R"
  hrun status "$R" --json
  valid_json "$OUT"
}
hc_runfolder__status_finished() {
  copy_run good || return
  want_rc 0
  guard "$C/$G"
  hrun status "$G"
}
hc_runfolder__status_journal_type_int() {
  copy_run part || return
  echo '{"type":5}' >>"$R/data/journal.jsonl"
  refused 'journal\.jsonl'
  hrun status "$R"
}
hc_runfolder__status_journal_nested_middle() {
  copy_run part || return
  insert_line "$R/data/journal.jsonl" 3 "{\"type\":\"batch\",\"x\":$(nest 100000)}"
  refused 'journal\.jsonl'
  quick
  hrun status "$R"
}
hc_runfolder__status_lock_symlink() {
  copy_run part || return
  ln -s "$C/outside/victim.txt" "$R/.lock"
  want_rc 0 2
  guard "$C/$R"
  quick
  hrun status "$R"
}

# --- sweep folders (a copy of the base sweep "sgood") ------------------------------------------
S=runs/sgood
verify_sgood() { guard "$C/$S"; hrun verify "$S"; }
# resumable_sweep: the copy made to look interrupted (state running, no bag manifests).
resumable_sweep() {
  pyedit "$S/data/run.json" 'd["state"] = "running"'
  rm -f "$S/manifest-sha256.txt" "$S/tagmanifest-sha256.txt" "$S/bag-info.txt"
}
hc_runfolder__verify_sweep_control_good() { copy_run sgood || return; want_rc 0; verify_sgood; }
hc_runfolder__verify_sweep_cells_journal_fifo() {
  # A FIFO as the cell journal: a finding, never opened (it would hang).
  copy_run sgood || return
  rm "$S/data/cells.jsonl" && mkfifo "$S/data/cells.jsonl"
  finding 'cells\.jsonl'
  verify_sgood
}
hc_runfolder__verify_sweep_cell_symlink_secret() {
  # A cell file replaced by a link to a secret, the bag re-hashed: a finding; never read.
  copy_run sgood || return
  rm "$S/data/cells/g1-b1.json" && ln -s "$C/outside/secret.txt" "$S/data/cells/g1-b1.json"
  rehash "$S"
  finding 'g1-b1'
  verify_sgood
}
hc_runfolder__verify_sweep_groups_deep() {
  copy_run sgood || return
  python3 -c 'print("[" * 200000)' >"$S/data/groups.json"
  rehash "$S"
  finding 'groups\.json'
  verify_sgood
}
hc_runfolder__verify_sweep_journal_names_outside() {
  # A journal line naming a file outside the cells folder: refused as not pilot's, never read.
  copy_run sgood || return
  python3 - "$S/data/cells.jsonl" <<'EOF'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
lines[0]["file"] = "../../outside/secret.txt"
open(sys.argv[1], "w").write("".join(json.dumps(l) + "\n" for l in lines))
EOF
  rehash "$S"
  finding 'cells\.jsonl'
  verify_sgood
}
hc_runfolder__verify_sweep_recommendation_raised() {
  # sweep.json's recommendation raised and the bag re-hashed: verify derives it again.
  copy_run sgood || return
  pyedit "$S/data/sweep.json" 'd["recommendation"][0]["batch_size"] = 4096'
  rehash "$S"
  finding "recommended size differs"
  verify_sgood
}
hc_runfolder__verify_sweep_report_html_forged() {
  # report.html's throughput changed by hand and the bag re-hashed: verify renders it again
  # from sweep.json's sources and compares the bytes.
  copy_run sgood || return
  python3 - "$S/data/report.html" <<'EOF'
import re, sys
t = open(sys.argv[1]).read()
t2 = re.sub(r"<td>(\d+)\.(\d)", lambda m: "<td>" + str(int(m.group(1)) * 2 + 1) + "." + m.group(2), t, count=1)
assert t2 != t
open(sys.argv[1], "w").write(t2)
EOF
  rehash "$S"
  finding 'report\.html.*differs from the rendering'
  verify_sgood
}
hc_runfolder__verify_sweep_csv_forged() {
  # sweep.csv, the file a spreadsheet opens, with its first row changed and re-hashed.
  copy_run sgood || return
  python3 - "$S/data/sweep.csv" <<'EOF'
import sys
lines = open(sys.argv[1]).read().split("\n")
lines[1] = lines[1] + "9"
open(sys.argv[1], "w").write("\n".join(lines))
EOF
  rehash "$S"
  finding 'sweep\.csv.*differs from the rendering'
  verify_sgood
}
hc_runfolder__verify_sweep_headroom_forged() {
  # sweep.json's headroom table says every card fits, a key no finer check reads: the whole
  # document is built again from the record, groups and cells.
  copy_run sgood || return
  pyedit "$S/data/sweep.json" 'for c in d["headroom"]["cards"]: c["usable_mb"] = 10**9'
  rehash "$S"
  finding 'sweep\.json.*at: headroom'
  verify_sgood
}
hc_runfolder__verify_sweep_footprint_float_count() {
  # A footprint count as a huge float in run.json (repeated into sweep.json and the tables):
  # refused as not a count, never converted to an integer.
  copy_run sgood || return
  pyedit "$S/data/run.json" 'd["footprint"]["parameters"] = 1e300'
  rehash "$S"
  finding "footprint\.parameters' is not a count"
  verify_sgood
}
hc_runfolder__verify_sweep_stage_device_forged() {
  # The stage's device (what the figures were measured on) rewritten in run.json, sweep.json
  # and the three tables alike: a device longer than any pilot writes is refused.
  copy_run sgood || return
  pyedit "$S/data/run.json" 'd["stage"]["device"] = "cuda:0 " * 4000'
  rehash "$S"
  finding "stage\.device' is missing, longer than 64 bytes"
  verify_sgood
}
hc_runfolder__run_batch_plan_raised_sweep() {
  # The same forged sweep as a batch plan: refused (exit 2), no run folder.
  copy_run sgood || return
  pyedit "$S/data/sweep.json" 'd["recommendation"][0]["batch_size"] = 4096'
  rehash "$S"
  want_rc 2
  want_err 'does not verify'
  no_runs newruns
  hrun run --params "$P" --runs-dir newruns --batch-plan "$S"
}
hc_runfolder__resume_sweep_cells_dir_symlink() {
  # An interrupted sweep whose data/cells is a link to outside/: refused, nothing written there.
  copy_run sgood || return
  resumable_sweep
  rm -r "$S/data/cells" && ln -s "$C/outside" "$S/data/cells"
  want_rc 2
  want_err 'data/cells'
  guard "$C/outside"
  hrun resume "$S"
}
hc_runfolder__resume_sweep_torn_journal() {
  # A torn last journal line (a kill while appending) is cut off; the sweep finishes and verifies.
  copy_run sgood || return
  resumable_sweep
  printf '{"group":1,"batch' >>"$S/data/cells.jsonl"
  want_rc 0
  hrun resume "$S"
}

# --- shards, merged folders and export (copy_run shards: runs/shard-0-of-2, shard-1-of-2,
# the interrupted shard-0-of-3 and the merged mgood) ---------------------------------------
S0=runs/shard-0-of-2
S1=runs/shard-1-of-2
MG=runs/mgood
merge_shards() { guard "$C/$S0"; guard "$C/$S1"; hrun merge "$S0" "$S1" "$@"; }
verify_mgood() { guard "$C/$MG"; hrun verify "$MG"; }
hc_runfolder__merge_shards_control_good() { copy_run shards || return; want_rc 0; merge_shards --out runs/m2; }
hc_runfolder__merge_shard_result_dropped_rehashed() {
  # A result line removed from a shard and the bag re-hashed: the shard fails verification
  # (exit 1, naming it); nothing is written.
  copy_run shards || return
  sed -i '2d' "$S1/data/results.jsonl"
  rehash "$S1"
  want_rc 1
  merge_shards --out runs/m2
  grep -q "shard-1-of-2" "$OUT" || bad "the failing shard is not named"
  [ ! -e "$C/runs/m2" ] && [ ! -e "$C/runs/m2.partial" ] || bad "a refused merge left a folder"
}
hc_runfolder__merge_shard_relabelled_index() {
  # Shard 1 relabelled as shard 0 (both files, re-hashed): shard 0 twice, refused naming both.
  copy_run shards || return
  pyedit "$S1/data/run.json" 'd["shard"]["index"] = 0'
  rehash "$S1"
  want_rc 2
  want_err 'shard 0/2 given twice'
  merge_shards --out runs/m2
}
hc_runfolder__merge_shard_count_huge() {
  copy_run shards || return
  pyedit "$S1/data/run.json" 'd["shard"]["count"] = 4096'
  rehash "$S1"
  want_rc 2
  want_err 'different splits'
  merge_shards --out runs/m2
}
hc_runfolder__merge_shard_count_over_cap() {
  copy_run shards || return
  pyedit "$S1/data/run.json" 'd["shard"]["count"] = 4097; d["shard"]["index"] = 4096'
  rehash "$S1"
  want_rc 2
  want_err "'shard'"
  merge_shards --out runs/m2
}
hc_runfolder__merge_shard_results_symlink_secret() {
  # A shard's results replaced by a link to a secret, re-hashed: a verification finding, the
  # secret never read into any output.
  copy_run shards || return
  rm "$S1/data/results.jsonl" && ln -s "$C/outside/secret.txt" "$S1/data/results.jsonl"
  rehash "$S1"
  want_rc 1
  merge_shards --out runs/m2
}
hc_runfolder__merge_unfinished_shard() {
  copy_run shards || return
  guard "$C/runs/shard-0-of-3"
  want_rc 2
  want_err 'unfinished' 'pilot resume .*shard-0-of-3'
  hrun merge runs/shard-0-of-3 "$S1" --out runs/m2
}
hc_runfolder__merge_out_symlink_outside() {
  # --out is a link to a folder outside: it exists, refused; nothing written through it.
  copy_run shards || return
  ln -s "$C/outside" "$C/runs/m2"
  want_rc 2
  want_err 'already exists'
  merge_shards --out runs/m2
}
hc_runfolder__merge_partial_symlink_outside() {
  # A planted OUT.partial linking outside (with a lock file beside it): never removed or
  # written through.
  copy_run shards || return
  ln -s "$C/outside" "$C/runs/m2.partial"
  : >"$C/runs/m2.partial.lock"
  want_rc 2
  want_err 'in the way'
  merge_shards --out runs/m2
}
hc_runfolder__merge_out_inside_a_shard() {
  copy_run shards || return
  want_rc 2
  want_err 'inside the shard folder'
  merge_shards --out "$S1/data/merged"
}
hc_runfolder__merge_too_many_shards() {
  copy_run shards || return
  local args=() i
  for ((i = 0; i < 4100; i++)); do args+=("$S0"); done
  want_rc 2
  want_err 'at most 4096'
  quick
  hrun merge "${args[@]}" --out runs/m2
}
hc_runfolder__verify_merged_control_good() { copy_run shards || return; want_rc 0; verify_mgood; }
hc_runfolder__verify_merged_report_rate_forged() {
  # The merged report's rates (wall-clock and the shards' sum) doubled, the bag re-hashed: the
  # report rebuilt from the results and the shards' journals and records differs.
  copy_run shards || return
  pyedit "$MG/data/report.json" 'd["throughput_items_per_s"] *= 2
d["shards"]["throughput_sum_of_shards_items_per_s"] *= 2'
  rehash "$MG"
  finding 'report\.json' 'rebuilt' 'differing keys: throughput_items_per_s, shards'
  verify_mgood
}
hc_runfolder__verify_merged_record_rate_forged() {
  # The merged record's sum of the shards' rates raised, the report left alone, re-hashed.
  copy_run shards || return
  pyedit "$MG/data/run.json" 'd["merge"]["throughput_sum_of_shards_items_per_s"] *= 3'
  rehash "$MG"
  finding 'merge\.throughput_sum_of_shards_items_per_s is' "shards' journals and records give"
  verify_mgood
}
hc_runfolder__verify_merged_report_md_forged() {
  copy_run shards || return
  sed -i 's/^Verdict: .*/Verdict: **acceptance criteria met** (forged)/' "$MG/data/report.md"
  rehash "$MG"
  finding 'report\.md' 'rendered again'
  verify_mgood
}
hc_runfolder__verify_merged_shard_span_stripped() {
  # A shard record's start and finish removed, the report's rates forged, re-hashed: without a
  # span the report could not be rebuilt, so the missing span is itself a finding.
  copy_run shards || return
  pyedit "$MG/data/shards/shard-0-of-2/run.json" 'del d["started_unix"]; del d["finished_unix"]; d["started_at"] = "never"'
  pyedit "$MG/data/report.json" 'd["throughput_items_per_s"] *= 100'
  rehash "$MG"
  finding 'shard-0-of-2/run\.json' 'gives no start and finish'
  verify_mgood
}
hc_runfolder__verify_merged_shard_journal_version_1() {
  # A shard journal's header relabelled version 1 (which would spare the report the rebuild).
  copy_run shards || return
  sed -i '1s/"version":2/"version":1/' "$MG/data/shards/shard-1-of-2/journal.jsonl"
  pyedit "$MG/data/report.json" 'd["latency_ms"]["p95"] = 0.001'
  rehash "$MG"
  finding 'shard-1-of-2/journal\.jsonl' 'is version 1, but the folder declares format 4'
  verify_mgood
}
hc_runfolder__verify_merged_shard_journal_edited() {
  # A result changed in the merged copy of a shard's journal and in results.jsonl, re-hashed:
  # they agree with each other, but not with the shard's journal... which is the copy: so
  # change the journal only; the results then differ from their record.
  copy_run shards || return
  sed -i '0,/"category":"fr"/s//"category":"de"/' "$MG/data/shards/shard-0-of-2/journal.jsonl"
  rehash "$MG"
  finding 'differs from its record'
  verify_mgood
}
hc_runfolder__verify_merged_shard_folder_outside() {
  # merge.shards[0].folder pointed at ../../etc and the bag re-hashed: the record names only
  # its own shard folders, so a tool that follows it is never sent outside.
  copy_run shards || return
  pyedit "$MG/data/run.json" 'd["merge"]["shards"][0]["folder"] = "../../etc"'
  rehash "$MG"
  finding 'merge\.shards\[0\]\.folder' 'not data/shards/shard-0-of-2'
  verify_mgood
}
hc_runfolder__verify_merged_shard_counts_forged() {
  # A shard's listed counts no longer add up, or name another item count than its record.
  copy_run shards || return
  pyedit "$MG/data/run.json" 'd["merge"]["shards"][1]["accepted"] += 1; d["merge"]["shards"][1]["items"] += 1'
  rehash "$MG"
  finding 'merge\.shards\[1\] differs from data/shards/shard-1-of-2/run\.json'
  verify_mgood
}
hc_runfolder__verify_merged_shard_accepted_shifted() {
  # One shard's listed accepted count raised and its rejected lowered, the sum kept: compared
  # with the accepted results of that shard's ids.
  copy_run shards || return
  pyedit "$MG/data/run.json" 'd["merge"]["shards"][0]["accepted"] += 1; d["merge"]["shards"][0]["rejected"] -= 1'
  rehash "$MG"
  finding 'merge\.shards\[0\]\.accepted is'
  verify_mgood
}
hc_runfolder__verify_merged_result_dropped() {
  copy_run shards || return
  sed -i '3d' "$MG/data/results.jsonl"
  rehash "$MG"
  finding 'manifest id has no result'
  verify_mgood
}
hc_runfolder__verify_merged_shard_count_huge() {
  # merge.shard_count raised to the cap: findings for the shards it lacks, bounded, no crash.
  copy_run shards || return
  pyedit "$MG/data/run.json" 'd["merge"]["shard_count"] = 4096'
  rehash "$MG"
  finding 'shards'
  quick
  verify_mgood
}
hc_runfolder__verify_merged_shard_record_deep() {
  copy_run shards || return
  python3 -c 'print("[" * 200000)' >"$MG/data/shards/shard-0-of-2/run.json"
  rehash "$MG"
  finding 'shard-0-of-2/run\.json'
  verify_mgood
}
hc_runfolder__verify_merged_shard_journal_fifo() {
  copy_run shards || return
  rm "$MG/data/shards/shard-1-of-2/journal.jsonl" && mkfifo "$MG/data/shards/shard-1-of-2/journal.jsonl"
  finding 'journal\.jsonl'
  quick
  verify_mgood
}
hc_runfolder__verify_shard_foreign_result() {
  # A result of shard 1's moved into shard 0 (journal and results, re-hashed): it belongs to
  # the other shard.
  copy_run shards || return
  local line
  line=$(head -n 1 "$S1/data/results.jsonl")
  printf '%s\n' "$line" >>"$S0/data/results.jsonl"
  printf '{"type":"result",%s\n' "${line#\{}" >>"$S0/data/journal.jsonl"
  rehash "$S0"
  finding 'belongs to shard 1'
  guard "$C/$S0"
  hrun verify "$S0"
}
hc_runfolder__resume_shard_foreign_journal_id() {
  # An interrupted shard whose journal holds a result of another shard: refused, untouched.
  copy_run shards || return
  local sp=runs/shard-0-of-3 id
  id=$(python3 - "$C/proj/data/pilot/manifest.json" <<'PYEOF'
import hashlib, json, sys
for item in json.load(open(sys.argv[1]))["items"]:
    if int(hashlib.sha256(item["id"].encode()).hexdigest()[:16], 16) % 3 != 0:
        print(item["id"]); break
PYEOF
)
  printf '{"type":"result","id":"%s","status":"rejected","reason":"empty_input","detail":"x"}\n' "$id" >>"$sp/data/journal.jsonl"
  want_rc 2
  want_err "not of shard 0/3"
  guard "$C/$sp"
  hrun resume "$sp"
}
hc_runfolder__export_symlink_inside() {
  copy_run shards || return
  ln -s "$C/outside/secret.txt" "$MG/data/link.txt"
  want_rc 2
  want_err 'symlink' 'link\.txt'
  guard "$C/$MG"
  hrun export "$MG" exported
  [ ! -e "$C/exported" ] && [ ! -e "$C/exported.partial" ] || bad "a refused export left a folder"
}
hc_runfolder__export_fifo_inside() {
  copy_run shards || return
  mkfifo "$MG/data/pipe"
  want_rc 2
  want_err 'not a regular file'
  quick
  guard "$C/$MG"
  hrun export "$MG" exported
}
hc_runfolder__export_dest_symlink_outside() {
  copy_run shards || return
  ln -s "$C/outside" "$C/exported"
  want_rc 2
  want_err 'already exists'
  hrun export "$MG" exported
}
hc_runfolder__export_into_itself() {
  copy_run shards || return
  want_rc 2
  want_err 'inside the folder it would copy'
  guard "$C/$MG"
  hrun export "$MG" "$MG/data/copy"
}
hc_runfolder__export_unfinished() {
  copy_run shards || return
  want_rc 2
  want_err 'unfinished'
  hrun export runs/shard-0-of-3 exported
}
hc_runfolder__export_rehashed_copy_differs() {
  # A source whose accounting was broken and the bag re-hashed: export checks the source
  # before it copies (structure, completeness, accounting) and refuses it, nothing written;
  # `verify --expect` on the old print catches the re-hash itself.
  copy_run shards || return
  sed -i '3d' "$MG/data/results.jsonl"
  rehash "$MG"
  want_rc 2
  want_err 'fails verification' 'nothing was copied' 'has no result'
  guard "$C/$MG"
  hrun export "$MG" exported
  [ ! -e "$C/exported" ] && [ ! -e "$C/exported.partial" ] && [ ! -e "$C/exported.partial.lock" ] ||
    bad "something was written for a source that fails verification"
}
hc_runfolder__export_partial_holds_the_source() {
  # Exporting a folder left at X.partial to X: the leftover partial folder is the source, and
  # is never removed.
  copy_run shards || return
  cp -a "$MG" "$C/runs/x.partial"
  : >"$C/runs/x.partial.lock"
  want_rc 2
  want_err 'which this command reads'
  guard "$C/runs/x.partial"
  hrun export runs/x.partial runs/x
}
hc_runfolder__merge_partial_holds_the_shards() {
  copy_run shards || return
  mkdir -p "$C/runs/m.partial"
  cp -a "$C/$S0" "$C/$S1" "$C/runs/m.partial/"
  : >"$C/runs/m.partial.lock"
  want_rc 2
  want_err 'which this command reads'
  guard "$C/runs/m.partial"
  hrun merge runs/m.partial/shard-0-of-2 runs/m.partial/shard-1-of-2 --out runs/m
}
hc_runfolder__export_dest_trailing_slash() {
  # DEST/ is DEST: the copy lands there, with no hidden partial folder inside it.
  copy_run shards || return
  want_rc 0
  hrun export "$MG" exported/
  [ -f "$C/exported/tagmanifest-sha256.txt" ] || bad "no copy at exported"
  [ ! -e "$C/exported/.partial" ] && [ ! -e "$C/exported.partial" ] || bad "a partial folder was left"
}
hc_runfolder__export_dest_dotdot() { copy_run shards || return; want_rc 2; want_err 'does not name a new folder'; hrun export "$MG" runs/..; }
hc_runfolder__export_dest_root() { copy_run shards || return; want_rc 2; want_err 'does not name a new folder'; hrun export "$MG" /; }
hc_runfolder__verify_shard_journal_header_other_shard() {
  # The journal's header made to say shard 1 of 2 in shard 0's folder (re-hashed): resume and
  # status trust the header, so verify compares it with run.json.
  copy_run shards || return
  python3 - "$S0/data/journal.jsonl" <<'PYEOF'
import json, sys
lines = open(sys.argv[1]).read().splitlines(True)
h = json.loads(lines[0]); h["shard"]["index"] = 1
lines[0] = json.dumps(h, separators=(",", ":")) + "\n"
open(sys.argv[1], "w").write("".join(lines))
PYEOF
  rehash "$S0"
  finding 'its header is of shard 1/2'
  guard "$C/$S0"
  hrun verify "$S0"
}
hc_runfolder__run_shard_folder_is_a_symlink() {
  # runs/shard-0-of-3 linking to another folder: never resumed through the link.
  copy_run shards || return
  mkdir -p "$C/elsewhere"
  cp -a "$C/runs/shard-0-of-3" "$C/elsewhere/real"
  rm -rf "$C/runs/shard-0-of-3"
  ln -s "$C/elsewhere/real" "$C/runs/shard-0-of-3"
  guard "$C/elsewhere"
  want_rc 2
  want_err 'symlink'
  hrun run --params "$P" --runs-dir runs --shard 0/3
}
hc_runfolder__resume_through_a_symlink() {
  # A path given on the command line is resolved once (docs/security.md, "Paths you give"):
  # `resume link` finishes the folder the link names, as `cd -P link` would reach it; nothing
  # beside it changes.
  copy_run shards || return
  ln -s "$C/runs/shard-0-of-3" "$C/link"
  guard "$C/runs/shard-0-of-2"
  guard "$C/runs/mgood"
  want_rc 0
  hrun resume link
  [ -f "$C/runs/shard-0-of-3/tagmanifest-sha256.txt" ] || bad "the folder the link names was not finished"
  [ -L "$C/link" ] || bad "the link itself was replaced"
}
hc_runfolder__status_merged_report_deep() {
  # `pilot status` of a merged folder reads its report (it has no journal): a 200,000-deep
  # report is refused (exit 2) naming it, never a crash.
  copy_run shards || return
  python3 -c 'print("[" * 200000)' >"$MG/data/report.json"
  want_rc 2
  want_err 'report\.json'
  guard "$C/$MG"
  hrun status "$MG"
}
hc_runfolder__status_merged_report_fifo() {
  copy_run shards || return
  rm "$MG/data/report.json" && mkfifo "$MG/data/report.json"
  want_rc 2
  want_err 'report\.json'
  quick
  guard "$C/$MG"
  hrun status "$MG"
}
hc_runfolder__status_merged_counts_wrong_types() {
  # The merged folder's counts come from its report alone: counts of the wrong type are refused
  # naming the key (the typed report reader), never shown as 0 of 0.
  copy_run shards || return
  pyedit "$MG/data/report.json" 'd["counts"] = {"total": "12", "accepted": -1, "rejected": 1e300}'
  want_rc 2
  want_err "counts\.total' is missing or not a whole number" 'report\.json key counts\.total'
  guard "$C/$MG"
  hrun status "$MG"
}
hc_runfolder__status_merged_counts_do_not_add_up() {
  copy_run shards || return
  pyedit "$MG/data/report.json" 'd["counts"]["accepted"] += 5'
  want_rc 2
  want_err "'counts': accepted .* != total" 'report\.json key counts'
  guard "$C/$MG"
  hrun status "$MG"
}
hc_runfolder__status_merged_report_link() {
  # The report is read inside the folder only: a link in its place is refused, never followed.
  copy_run shards || return
  cp "$MG/data/report.json" "$C/elsewhere.json"
  rm "$MG/data/report.json" && ln -s "$C/elsewhere.json" "$MG/data/report.json"
  want_rc 2
  want_err 'report\.json' 'never follows one inside a pilot folder'
  guard "$C/$MG"
  hrun status "$MG"
}

# --- pilot plan (issue 12) -------------------------------------------------------------

# cpu_prices FILE: a valid price file of one CPU "card" (the base runs are CPU runs).
cpu_prices() {
  printf '%s\n' '{"currency": "EUR", "cards": [{"name": "node", "class": "cpu", "memory_gb": 64, "cards_per_lot": 1, "lot_price": {"3": 30, "7": 60}}]}' >"$1"
}
# plan_good ARGS...: plan from the copied good run (runs/ guarded: plan writes nothing there).
plan_good() { guard "$C/runs"; hrun plan --from "$G" --corpus-items 1000 "$@"; }
# plan_refused PATTERN...: exit 2, stderr matching every pattern.
plan_refused() { want_rc 2; want_err "$@"; }

# --- controls --------------------------------------------------------------------------------
hc_runfolder__plan_control_good() {
  copy_run good || return
  cpu_prices "$C/prices.json"
  want_rc 0
  plan_good --prices prices.json
}
hc_runfolder__plan_control_sweep() {
  copy_run sgood || return
  cpu_prices "$C/prices.json"
  want_rc 0
  guard "$C/runs"
  hrun plan --from runs/sgood --corpus-items 1000 --prices prices.json
}
hc_runfolder__plan_control_merged() {
  copy_run shards || return
  cpu_prices "$C/prices.json"
  want_rc 0
  guard "$C/runs"
  hrun plan --from runs/mgood --corpus-items 1000 --prices prices.json
}

# --- the price file --------------------------------------------------------------------------
hc_runfolder__plan_prices_huge() {
  copy_run good || return
  { printf '{"currency": "EUR", "note": "'; repeat $((3 * 1024 * 1024)) a; printf '", "cards": []}'; } >"$C/prices.json"
  plan_refused 'prices\.json' 'cap|larger'
  quick
  bounded
  plan_good --prices prices.json
}
hc_runfolder__plan_prices_deep() {
  copy_run good || return
  nest 200000 >"$C/prices.json"
  plan_refused 'prices\.json'
  quick
  bounded
  plan_good --prices prices.json
}
hc_runfolder__plan_prices_nan() {
  copy_run good || return
  cpu_prices "$C/prices.json"
  sed -i 's/"3": 30/"3": NaN/' "$C/prices.json"
  plan_refused 'prices\.json'
  plan_good --prices prices.json
}
hc_runfolder__plan_prices_negative() {
  copy_run good || return
  cpu_prices "$C/prices.json"
  sed -i 's/"3": 30/"3": -30/' "$C/prices.json"
  plan_refused 'lot_price\.3'
  plan_good --prices prices.json
}
hc_runfolder__plan_prices_zero() {
  copy_run good || return
  cpu_prices "$C/prices.json"
  sed -i 's/"7": 60/"7": 0/' "$C/prices.json"
  plan_refused 'lot_price\.7'
  plan_good --prices prices.json
}
hc_runfolder__plan_prices_infinite() {
  copy_run good || return
  cpu_prices "$C/prices.json"
  sed -i 's/"3": 30/"3": 1e999/' "$C/prices.json"
  plan_refused 'prices\.json'
  plan_good --prices prices.json
}
hc_runfolder__plan_prices_absurd_lot() {
  copy_run good || return
  cpu_prices "$C/prices.json"
  sed -i 's/"cards_per_lot": 1/"cards_per_lot": 1000000000000/' "$C/prices.json"
  plan_refused 'cards_per_lot'
  plan_good --prices prices.json
}
hc_runfolder__plan_prices_memory_string() {
  copy_run good || return
  cpu_prices "$C/prices.json"
  sed -i 's/"memory_gb": 64/"memory_gb": "64"/' "$C/prices.json"
  plan_refused 'memory_gb'
  plan_good --prices prices.json
}
hc_runfolder__plan_prices_unknown_key() {
  copy_run good || return
  cpu_prices "$C/prices.json"
  sed -i 's/"currency"/"discount": 0.5, "currency"/' "$C/prices.json"
  plan_refused 'discount'
  plan_good --prices prices.json
}
hc_runfolder__plan_prices_secret_key_not_echoed() {
  # An unknown key that looks like a credential (a token) is masked in the message; its value is never shown.
  copy_run good || return
  cpu_prices "$C/prices.json"
  sed -i 's/"currency"/"ghp_'"$MARKER"'0123456789abcdefghijklmn": "sk-proj-'"$MARKER"'0123456789abcdef", "currency"/' "$C/prices.json"
  plan_refused 'prices\.json'
  plan_good --prices prices.json
}
hc_runfolder__plan_prices_too_many_cards() {
  copy_run good || return
  python3 -c '
import json, sys
cards = [{"name": "c%d" % i, "class": "cpu", "memory_gb": 1, "cards_per_lot": 1, "lot_price": {"3": 1}} for i in range(300)]
json.dump({"currency": "EUR", "cards": cards}, open(sys.argv[1], "w"))' "$C/prices.json"
  plan_refused 'cards'
  plan_good --prices prices.json
}
hc_runfolder__plan_prices_fifo() {
  copy_run good || return
  mkfifo "$C/prices.json"
  plan_refused 'prices\.json'
  quick
  plan_good --prices prices.json
}
hc_runfolder__plan_prices_dev_zero() {
  copy_run good || return
  plan_refused '/dev/zero'
  quick
  bounded
  plan_good --prices /dev/zero
}
hc_runfolder__plan_prices_folder() {
  copy_run good || return
  mkdir "$C/prices.json"
  plan_refused 'prices\.json'
  plan_good --prices prices.json
}
hc_runfolder__plan_prices_symlink_to_secret() {
  # Read (a price file is an input, like a manifest) but not JSON: refused, the secret never echoed.
  copy_run good || return
  ln -s "$C/outside/secret.txt" "$C/prices.json"
  plan_refused 'prices\.json'
  plan_good --prices prices.json
}

# --- the folder ------------------------------------------------------------------------------
hc_runfolder__plan_from_symlink() {
  # --from given as a link is resolved once, as every folder argument is: the same plan as
  # from the folder itself, nothing written anywhere.
  copy_run good || return
  cpu_prices "$C/prices.json"
  ln -s "$C/$G" "$C/link"
  want_rc 0 4
  guard "$C/runs"
  hrun plan --from link --corpus-items 10 --prices prices.json
  grep -q "$(basename "$G")" "$OUT" || bad "the plan does not name the folder the link leads to"
}
hc_runfolder__plan_from_interrupted() {
  copy_run part || return
  cpu_prices "$C/prices.json"
  want_rc 2
  guard "$C/runs"
  hrun plan --from "$R" --corpus-items 10 --prices prices.json
}
hc_runfolder__plan_report_throughput_string() {
  copy_run good || return
  cpu_prices "$C/prices.json"
  pyedit "$G/data/report.json" 'd["throughput_items_per_s"] = "fast"'
  rehash "$G"
  plan_refused 'report\.json'
  plan_good --prices prices.json
}
hc_runfolder__plan_report_counts_list() {
  copy_run good || return
  cpu_prices "$C/prices.json"
  pyedit "$G/data/report.json" 'd["counts"] = [12, 9, 3]'
  rehash "$G"
  plan_refused 'report\.json'
  plan_good --prices prices.json
}
hc_runfolder__plan_report_throughput_huge() {
  # A forged rate of 1e308 items/s: no overflow, no crash; whatever the verdict, the exit is documented.
  copy_run good || return
  cpu_prices "$C/prices.json"
  pyedit "$G/data/report.json" 'd["throughput_items_per_s"] = 1e308'
  rehash "$G"
  want_rc 0 2
  plan_good --prices prices.json
}
hc_runfolder__plan_report_deep() {
  copy_run good || return
  cpu_prices "$C/prices.json"
  nest 100000 >"$G/data/report.json"
  rehash "$G"
  plan_refused 'report\.json'
  quick
  bounded
  plan_good --prices prices.json
}
hc_runfolder__plan_run_json_device_number() {
  copy_run good || return
  cpu_prices "$C/prices.json"
  pyedit "$G/data/run.json" 'd["plan"]["device"] = 7'
  rehash "$G"
  plan_refused 'run\.json'
  plan_good --prices prices.json
}
hc_runfolder__plan_sweep_recommendation_wrong_types() {
  copy_run sgood || return
  cpu_prices "$C/prices.json"
  pyedit runs/sgood/data/sweep.json 'd["recommendation"][0]["batch_size"] = "2"'
  rehash runs/sgood
  plan_refused 'sweep\.json'
  guard "$C/runs"
  hrun plan --from runs/sgood --corpus-items 10 --prices prices.json
}
hc_runfolder__plan_merged_shard_run_json_symlink() {
  copy_run shards || return
  cpu_prices "$C/prices.json"
  cp runs/mgood/data/shards/shard-0-of-2/run.json "$C/outside/run.json"
  rm runs/mgood/data/shards/shard-0-of-2/run.json
  ln -s "$C/outside/run.json" runs/mgood/data/shards/shard-0-of-2/run.json
  plan_refused 'run\.json'
  guard "$C/runs"
  hrun plan --from runs/mgood --corpus-items 10 --prices prices.json
}

# --- the corpus and the output ---------------------------------------------------------------
hc_runfolder__plan_corpus_manifest_fifo() {
  copy_run good || return
  cpu_prices "$C/prices.json"
  mkfifo "$C/corpus.json"
  plan_refused 'corpus\.json'
  quick
  guard "$C/runs"
  hrun plan --from "$G" --corpus-manifest corpus.json --prices prices.json
}
hc_runfolder__plan_corpus_items_nineteen_digits() {
  copy_run good || return
  cpu_prices "$C/prices.json"
  plan_refused 'corpus-items'
  guard "$C/runs"
  hrun plan --from "$G" --corpus-items 9999999999999999999 --prices prices.json
}
hc_runfolder__plan_corpus_items_huge_fits_nothing() {
  copy_run good || return
  cpu_prices "$C/prices.json"
  want_rc 4
  guard "$C/runs"
  hrun plan --from "$G" --corpus-items 999999999999999999 --prices prices.json
}
hc_runfolder__plan_allowance_negative() {
  copy_run good || return
  cpu_prices "$C/prices.json"
  plan_refused 'allowance'
  plan_good --prices prices.json --allowance-hours -1
}
hc_runfolder__plan_headroom_nan() {
  copy_run good || return
  cpu_prices "$C/prices.json"
  plan_refused 'headroom'
  plan_good --prices prices.json --headroom nan
}
hc_runfolder__plan_out_symlink_to_outside() {
  copy_run good || return
  cpu_prices "$C/prices.json"
  ln -s "$C/outside/victim.txt" "$C/plan.json"
  plan_refused 'plan\.json'
  plan_good --prices prices.json --out plan.json
}
hc_runfolder__plan_out_existing_folder() {
  copy_run good || return
  cpu_prices "$C/prices.json"
  mkdir "$C/plan.json"
  plan_refused 'plan\.json'
  guard "$C/plan.json"
  plan_good --prices prices.json --out plan.json
}
hc_runfolder__plan_out_in_missing_folder() {
  copy_run good || return
  cpu_prices "$C/prices.json"
  want_rc 2 5
  want_err 'plan\.json'
  plan_good --prices prices.json --out nowhere/plan.json
  [ -e "$C/nowhere" ] && bad "a folder was created for --out"
}
hc_runfolder__plan_json_error_is_json() {
  copy_run good || return
  cpu_prices "$C/prices.json"
  sed -i 's/"3": 30/"3": -1/' "$C/prices.json"
  plan_refused 'lot_price'
  plan_good --prices prices.json --json
  valid_json "$OUT"
}

# --- pilot compare and pilot decide (issue 12) ------------------------------------------------
# compare reads two verified folders and writes only its --out folder; decide reads a verified
# folder and its evidence and writes only its tag files. Hostile evidence and folders are
# exit 2 (or 1 for a folder that fails verification) naming the thing at fault, never a crash.
hc_runfolder__compare_control_good() {
  copy_run good || return
  want_rc 0
  guard "$C/$G"
  hrun compare "$G" "$G" --tolerance 0
}
hc_runfolder__compare_run_with_sweep() {
  copy_run good || return
  copy_run sgood || return
  want_rc 2; want_err "a sweep folder, not a run"
  hrun compare "$G" runs/sgood
}
hc_runfolder__compare_unfinished() {
  copy_run good || return
  copy_run part || return
  want_rc 2; want_err "not a run folder|unfinished|did not finish"
  guard "$C/$R"
  hrun compare "$G" "$R"
}
hc_runfolder__compare_symlinked_folder() {
  # RUN_B given as a link to RUN_A: resolved once, the same folder compared with itself.
  copy_run good || return
  ln -s good "$C/runs/link"
  want_rc 0
  guard "$C/runs"
  hrun compare "$G" runs/link
}
hc_runfolder__compare_results_rehashed_other_order() {
  copy_run good || return
  # Lines swapped and the bag re-hashed: verify catches the order, compare compares nothing.
  { sed -n 2p "$C/$G/data/results.jsonl"; sed -n 1p "$C/$G/data/results.jsonl"; sed -n '3,$p' "$C/$G/data/results.jsonl"; } >"$C/x" && mv "$C/x" "$C/$G/data/results.jsonl"
  rehash "$C/$G"
  mkdir -p "$C/runs2" && cp -r "$C/$G" "$C/runs2/good"
  want_rc 1
  hrun compare runs2/good "$G"
}
hc_runfolder__compare_out_is_a_symlink() {
  # --out given as a link to a folder: resolved once, the files land in the folder it names
  # (a receiving folder, like --runs-dir); the link itself is never replaced.
  copy_run good || return
  mkdir -p "$C/elsewhere" && ln -s elsewhere "$C/out"
  want_rc 0
  guard "$C/runs"
  hrun compare "$G" "$G" --out out
  [ -f "$C/elsewhere/compare.json" ] && [ -f "$C/elsewhere/compare.md" ] || bad "compare.json/md not in the folder --out names"
  [ -L "$C/out" ] || bad "the link itself was replaced"
}
hc_runfolder__compare_out_link_into_a_bag() {
  # --out a link whose target is inside a run folder: resolved first, then refused.
  copy_run good || return
  ln -s "$C/$G/data" "$C/out"
  want_rc 2; want_err "inside the pilot folder" "--out"
  guard "$C/$G"
  hrun compare "$G" "$G" --out out
}
hc_runfolder__compare_huge_params_copy_type() {
  copy_run good || return
  # report.json with wrong-typed members, re-hashed: verify finds it against the report it
  # rebuilds, and compare ends with a documented exit, never a crash.
  pyedit "$C/$G/data/report.json" 'd["throughput_items_per_s"] = "fast"; d["latency_ms"] = [1, 2]'
  rehash "$C/$G"
  want_rc 0 1
  hrun compare "$G" "$G"
}
decide_good() { hrun decide "$G" "$@"; }
hc_runfolder__decide_control_proposal() {
  copy_run good || return
  want_rc 0;   guard "$C/$G"
  decide_good
}
hc_runfolder__decide_evidence_fifo() {
  copy_run good || return
  mkfifo "$C/doctor.json"
  want_rc 2; want_err "doctor.json"
  guard "$C/$G"
  decide_good --doctor doctor.json --decision go --reason x
}
hc_runfolder__decide_evidence_huge() {
  copy_run good || return
  head -c $((17 << 20)) /dev/zero | tr '\0' ' ' >"$C/doctor.json"
  want_rc 2; want_err "doctor.json"
  guard "$C/$G"
  decide_good --doctor doctor.json --decision go --reason x
}
hc_runfolder__decide_evidence_deep() {
  copy_run good || return
  python3 -c "print('['*100000 + ']'*100000)" >"$C/doctor.json"
  want_rc 2; want_err "doctor.json"
  guard "$C/$G"
  decide_good --doctor doctor.json
}
hc_runfolder__decide_evidence_not_object() {
  copy_run good || return
  echo '[1, 2, 3]' >"$C/plan.json"
  want_rc 2; want_err "not a JSON object"
  guard "$C/$G"
  decide_good --plan plan.json
}
hc_runfolder__decide_doctor_wrong_types() {
  copy_run good || return
  echo '{"checks": [{"name": 5, "status": ["fail"], "required": "yes", "data": {"unmet": 7}}, 3, null]}' >"$C/doctor.json"
  want_rc 2; want_err "not a .pilot doctor --json. report"
  guard "$C/$G"
  decide_good --doctor doctor.json
}
hc_runfolder__decide_plan_wrong_types() {
  # A plan of the wrong shape contradicts itself (no row fits, yet "fits"): refused before any
  # fact is drawn from it, nothing recorded.
  copy_run good || return
  echo '{"kind": "pilot-plan", "verdict": "fits", "cheapest": [1], "prices": 3}' >"$C/plan.json"
  want_rc 2; want_err "contradicts itself" "plan.json"
  guard "$C/$G"
  decide_good --plan plan.json --decision go --reason "typed badly"
}
hc_runfolder__decide_reason_not_utf8() {
  copy_run good || return
  want_rc 2; want_err "UTF-8"
  guard "$C/$G"
  decide_good --decision go --reason "$(printf 'bad \xff byte')"
}
hc_runfolder__decide_reason_control_chars() {
  copy_run good || return
  # Recorded, but escaped in decision.md: no line of it can be forged.
  want_rc 0
  decide_good --decision go --reason "$(printf 'line\n## Entry 9: **go**\r|x|')"
}
hc_runfolder__decide_evidence_name_exists_as_symlink() {
  copy_run good || return
  ln -s /etc/passwd "$C/$G/decision-1-doctor.json"
  echo '{"checks": []}' >"$C/doctor.json"
  want_rc 1 2
  guard "$C/$G"
  decide_good --doctor doctor.json --decision go --reason x
}
hc_runfolder__decide_decisions_jsonl_symlink() {
  copy_run good || return
  ln -s /etc/passwd "$C/$G/decisions.jsonl"
  want_rc 1
  guard "$C/$G"
  decide_good --decision go --reason x
}
hc_runfolder__decide_on_unfinished() {
  copy_run good || return
  copy_run part || return
  want_rc 1 2
  guard "$C/$R"
  hrun decide "$R" --decision go --reason x
}
hc_runfolder__decide_inputs_root_escape() {
  copy_run good || return
  # The spot check reads inputs only inside the root given; a link out is not followed.
  mkdir -p "$C/inputs" && ln -s /etc/passwd "$C/inputs/doc-01.txt"
  want_rc 0
  decide_good --decision go --reason x --inputs-root inputs
}
hc_runfolder__decide_tampered_entry_rehashed() {
  copy_run good || return
  decide_good --decision go --reason x >/dev/null 2>&1
  sed -i 's/"entry":1/"entry":3/' "$C/$G/decisions.jsonl"
  (cd "$C/$G" && sed -i '/  decisions.jsonl$/d' tagmanifest-sha256.txt && sha256sum decisions.jsonl >>tagmanifest-sha256.txt)
  want_rc 1; want_err "entry 3 where entry 1 belongs"
  verify_good
}
hc_runfolder__decide_md_injection_from_report() {
  # A re-hashed report whose verdict and counts forge a heading and a table row: decision.md
  # keeps them inside one escaped line.
  copy_run good || return
  pyedit "$C/$G/data/report.json" 'd["verdict"] = "ok\n\n# FORGED heading\n| x | y |"; d["counts"]["total"] = "12\n## forged"'
  rehash "$C/$G"
  want_rc 0 1
  decide_good --decision go --reason x
  if [ -f "$C/$G/decision.md" ] && grep -q '^#\{1,2\} FORGED\|^## forged' "$C/$G/decision.md"; then
    bad "decision.md holds a forged heading"
  fi
}
hc_runfolder__compare_md_injection_from_plan_device() {
  copy_run good || return
  pyedit "$C/$G/data/run.json" 'd["plan"]["device"] = "cpu\n\n# FORGED\u001b[31m"'
  rehash "$C/$G"
  want_rc 0 1 2
  hrun compare "$G" "$G" --out cmp
  if [ -f "$C/cmp/compare.md" ] && grep -q '^# FORGED' "$C/cmp/compare.md"; then bad "compare.md holds a forged heading"; fi
  if grep -q $'\x1b' "$C/cmp/compare.md" 2>/dev/null; then bad "compare.md holds an escape byte"; fi
}
hc_runfolder__decide_doctor_not_a_report() {
  copy_run good || return
  echo '{}' >"$C/doctor.json"
  want_rc 2; want_err "not a .pilot doctor --json. report"
  guard "$C/$G"
  decide_good --doctor doctor.json
}
hc_runfolder__compare_out_inside_bag() {
  copy_run good || return
  want_rc 2; want_err "inside the pilot folder"
  guard "$C/$G"
  hrun compare "$G" "$G" --out "$G/data"
}

# --- the generation pilot: completions held to the run's settings ------------------------------
GG=runs/ggood
GP=runs/gpart
verify_ggood() { guard "$C/$GG"; hrun verify "$GG"; }
# gen_edit 'python on r (a record of prompt-01), in results.jsonl and the journal alike'
gen_edit() {
  python3 - "$GG/data/results.jsonl" "$GG/data/journal.jsonl" "$1" <<'PYEOF'
import json, sys
for path in sys.argv[1:3]:
    out = []
    for line in open(path):
        r = json.loads(line)
        if r.get("id") == "prompt-01" and r.get("status") == "accepted":
            exec(sys.argv[3])
            line = json.dumps(r, separators=(",", ":")) + "\n"
        out.append(line)
    open(path, "w").write("".join(out))
PYEOF
}
hc_runfolder__verify_gen_control_rehashed() {
  # The forger's tools alone (the records rewritten as they were, the bag re-hashed) verify.
  copy_run ggood || return
  grep -q '"output": "generation"' "$GG/data/run.json" || bad "ggood is not a generation run"
  gen_edit 'pass'
  rehash "$GG"
  want_rc 0
  verify_ggood
}
hc_runfolder__verify_gen_more_tokens_than_max_new_tokens() {
  copy_run ggood || return
  gen_edit 'r["completion_ids"] = [97] * 20 + [256]; r["completion_tokens"] = 21'
  rehash "$GG"
  finding 'prompt-01' '21 completion tokens, more than generation.max_new_tokens 16'
  verify_ggood
}
hc_runfolder__verify_gen_id_outside_vocab() {
  copy_run ggood || return
  gen_edit 'r["completion_ids"][0] = 300'
  rehash "$GG"
  finding 'prompt-01' "outside the model's vocabulary of 257"
  verify_ggood
}
hc_runfolder__verify_gen_length_before_max_new_tokens() {
  copy_run ggood || return
  gen_edit 'r["finish_reason"] = "length"'
  rehash "$GG"
  finding 'prompt-01' 'finish_reason length after 6 tokens, not max_new_tokens 16'
  verify_ggood
}
hc_runfolder__verify_gen_count_not_the_ids() {
  copy_run ggood || return
  gen_edit 'r["completion_tokens"] = 99'
  rehash "$GG"
  finding 'prompt-01' 'completion_tokens'
  verify_ggood
}
hc_runfolder__verify_gen_completion_too_large() {
  # A completion of 300 KiB (beyond what a record may hold), in results.jsonl alone.
  copy_run ggood || return
  python3 - "$GG/data/results.jsonl" <<'PYEOF'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
r = json.loads(lines[0])
r["completion"] = "x" * (300 << 10)
lines[0] = json.dumps(r, separators=(",", ":"))
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
PYEOF
  rehash "$GG"
  finding 'results\.jsonl'
  quick
  verify_ggood
}
hc_runfolder__verify_gen_near_tie_steps_not_rising() {
  copy_run ggood || return
  gen_edit 'r["near_tie_steps"] = [3, 1]'
  rehash "$GG"
  finding 'prompt-01' 'near_tie_steps'
  verify_ggood
}
hc_runfolder__verify_gen_near_tie_step_past_the_completion() {
  copy_run ggood || return
  gen_edit 'r["near_tie_steps"] = [99]'
  rehash "$GG"
  finding 'prompt-01' 'near_tie_steps'
  verify_ggood
}
hc_runfolder__verify_gen_slot_steps_negative() {
  copy_run ggood || return
  gen_edit 'r["slot_steps"] = -1.5'
  rehash "$GG"
  finding 'prompt-01' 'slot_steps'
  verify_ggood
}
hc_runfolder__verify_gen_ignore_eos_not_a_boolean() {
  copy_run ggood || return
  pyedit "$GG/data/run.json" 'd["plan"]["model_contract"]["generation"]["ignore_eos"] = "yes"'
  rehash "$GG"
  finding 'run\.json' 'ignore_eos'
  verify_ggood
}
hc_runfolder__verify_gen_plan_without_max_new_tokens() {
  copy_run ggood || return
  pyedit "$GG/data/run.json" 'del d["plan"]["max_new_tokens"]'
  rehash "$GG"
  finding 'run\.json' 'plan.max_new_tokens'
  verify_ggood
}
hc_runfolder__verify_gen_plan_max_new_tokens_huge() {
  copy_run ggood || return
  pyedit "$GG/data/run.json" 'd["plan"]["max_new_tokens"] = 10**19'
  rehash "$GG"
  finding 'run\.json' 'plan.max_new_tokens'
  verify_ggood
}
hc_runfolder__resume_gen_journal_completion_malformed() {
  # A journaled completion whose count is not its ids: resume refuses, the folder untouched.
  copy_run gpart || return
  python3 - "$GP/data/journal.jsonl" <<'PYEOF'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
for i, line in enumerate(lines):
    r = json.loads(line)
    if r.get("status") == "accepted":
        r["completion_tokens"] += 5
        lines[i] = json.dumps(r, separators=(",", ":"))
        break
else:
    raise SystemExit("no accepted record journaled")
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
PYEOF
  want_rc 2
  want_err 'journal' 'completion_tokens'
  guard "$C/$GP"
  hrun resume "$GP"
}
hc_runfolder__verify_gen_eos_before_the_end() {
  # An end-of-sequence id (256) in the middle of a completion: decoding would have stopped there.
  copy_run ggood || return
  gen_edit 'r["completion_ids"] = r["completion_ids"][:2] + [256] + r["completion_ids"][2:]; r["completion_tokens"] += 1; r["slot_steps"] += 1'
  rehash "$GG"
  finding 'prompt-01' 'completion token 2 \(256\) ends a sequence'
  verify_ggood
}
hc_runfolder__verify_gen_eos_finish_without_eos() {
  copy_run ggood || return
  gen_edit 'r["completion_ids"][-1] = 97'
  rehash "$GG"
  finding 'prompt-01' 'finish_reason eos but the last token \(97\) is not an end-of-sequence id'
  verify_ggood
}
hc_runfolder__resume_gen_journal_completion_escaped_key() {
  # The key spelled with a \u escape (valid JSON, not the form pilot writes) and its count made
  # wrong: the journal's fast path must not skip it; resume refuses, the folder untouched.
  copy_run gpart || return
  python3 - "$GP/data/journal.jsonl" <<'PYEOF'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
for i, line in enumerate(lines):
    if '"status":"accepted"' in line and '"completion":' in line:
        r = json.loads(line)
        r["completion_tokens"] += 5
        lines[i] = json.dumps(r, separators=(",", ":")).replace('"completion":', '"\\u0063ompletion":', 1)
        break
else:
    raise SystemExit("no accepted record journaled")
open(sys.argv[1], "w").write("\n".join(lines) + "\n")
PYEOF
  grep -q 'u0063ompletion' "$GP/data/journal.jsonl" || bad "the escaped key was not written"
  want_rc 2
  want_err 'journal' 'completion_tokens'
  guard "$C/$GP"
  hrun resume "$GP"
}

# --- a load folder (pilot load), edited and re-hashed as a forger would -------------------------
LG=runs/lgood
verify_lgood() { guard "$C/$LG"; hrun verify "$LG"; }
# load_edit 'python on lines (the request records, parsed) and load (load.json)'
load_edit() {
  python3 - "$LG/data/requests.jsonl" "$LG/data/load.json" "$1" <<'PYEOF'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
load = json.load(open(sys.argv[2]))
exec(sys.argv[3])
open(sys.argv[1], "w").write("".join(json.dumps(l, separators=(",", ":")) + "\n" for l in lines))
open(sys.argv[2], "w").write(json.dumps(load, indent=2) + "\n")
PYEOF
}
hc_runfolder__verify_load_control() {
  copy_run lgood || return
  want_rc 0
  verify_lgood
}
hc_runfolder__verify_load_outcome_changed() {
  copy_run lgood || return
  load_edit 'lines[0]["outcome"] = "over_capacity"'
  rehash "$LG"
  finding 'load\.json' 'step 0' 'figures differ'
  verify_lgood
}
hc_runfolder__verify_load_request_dropped() {
  copy_run lgood || return
  load_edit 'del lines[5]'
  rehash "$LG"
  finding 'requests\.jsonl:6' 'request 6 of step 0 where request 5 was due'
  verify_lgood
}
hc_runfolder__verify_load_request_twice() {
  copy_run lgood || return
  load_edit 'lines.insert(3, lines[2])'
  rehash "$LG"
  finding 'requests\.jsonl:4' 'where request 3 was due'
  verify_lgood
}
hc_runfolder__verify_load_step_not_in_load_json() {
  copy_run lgood || return
  load_edit 'lines[0]["step"] = 9'
  rehash "$LG"
  finding 'requests\.jsonl:1' 'names step 9'
  verify_lgood
}
hc_runfolder__verify_load_verdict_flipped() {
  copy_run lgood || return
  load_edit 'load["verdict"]["slo_met"] = not load["verdict"]["slo_met"]'
  rehash "$LG"
  finding 'load\.json' 'verdict'
  verify_lgood
}
hc_runfolder__verify_load_figures_edited() {
  copy_run lgood || return
  load_edit 'load["steps"][0]["figures"]["e2e_ms"]["p99"]["ms"] = 0.001'
  rehash "$LG"
  finding 'load\.json' 'figures differ'
  verify_lgood
}
hc_runfolder__verify_load_service_edited() {
  copy_run lgood || return
  pyedit "$LG/data/run.json" 'd["service"]["slo"]["e2e_ms"] = 12345'
  rehash "$LG"
  finding 'load\.json' 'service differs'
  verify_lgood
}
hc_runfolder__verify_load_itl_not_numbers() {
  copy_run lgood || return
  load_edit 'r = next(l for l in lines if l["outcome"] == "completed"); r.update(ttft_ms=1, tpot_ms=1, itl_ms=["soon"])'
  rehash "$LG"
  finding 'requests\.jsonl' 'itl_ms'
  verify_lgood
}
hc_runfolder__verify_load_huge_number() {
  copy_run lgood || return
  sed -i '1s/"arrived_ms":[0-9.]*/"arrived_ms":1e999/' "$LG/data/requests.jsonl"
  rehash "$LG"
  finding 'requests\.jsonl:1'
  quick
  verify_lgood
}
hc_runfolder__verify_load_requests_a_link_to_a_secret() {
  copy_run lgood || return
  rm "$LG/data/requests.jsonl"
  ln -s "$C/outside/secret.txt" "$LG/data/requests.jsonl"
  rehash "$LG"
  finding 'requests\.jsonl'
  verify_lgood
}
hc_runfolder__verify_load_requests_endless() {
  copy_run lgood || return
  rm "$LG/data/requests.jsonl"
  mkfifo "$LG/data/requests.jsonl"
  finding 'requests\.jsonl'
  quick
  verify_lgood
}
hc_runfolder__resume_load_refused() {
  copy_run lgood || return
  want_rc 2
  want_err 'does not resume'
  guard "$C/$LG"
  hrun resume "$LG"
}
hc_runfolder__status_load() {
  copy_run lgood || return
  want_rc 0
  want_err
  guard "$C/$LG"
  hrun status "$LG"
}
hc_runfolder__verify_load_rate_and_peak_forged() {
  # The headline moved with its step: the step is no longer the one the request asked for.
  copy_run lgood || return
  load_edit 'load["steps"][0]["rate"] = 1e6'
  rehash "$LG"
  finding 'load\.json' 'not the one step the request asked for'
  verify_lgood
}
hc_runfolder__verify_load_search_not_a_string() {
  copy_run lgood || return
  load_edit 'load["search"] = 5'
  rehash "$LG"
  finding 'load\.json' 'search differs'
  verify_lgood
}
hc_runfolder__verify_load_generates_not_a_boolean() {
  copy_run lgood || return
  pyedit "$LG/data/run.json" 'd["stage"]["generates"] = "yes"'
  rehash "$LG"
  finding 'run\.json' 'generates'
  verify_lgood
}
hc_runfolder__verify_load_step_without_figures() {
  copy_run lgood || return
  load_edit 'del load["steps"][0]["figures"]'
  rehash "$LG"
  finding 'load\.json' 'step 0' 'figures'
  verify_lgood
}
hc_runfolder__verify_load_line_past_a_mebibyte() {
  copy_run lgood || return
  python3 -c 'import sys; open(sys.argv[1], "a").write("{\"itl_ms\":[" + ",".join(["0"] * 600000) + "]}\n")' \
    "$LG/data/requests.jsonl"
  rehash "$LG"
  finding 'requests\.jsonl' 'longer than 1 MiB'
  quick
  verify_lgood
}
hc_runfolder__status_load_record_not_an_object() {
  copy_run lgood || return
  printf '[1, 2]\n' >"$LG/data/run.json"
  want_rc 2
  want_err 'run\.json'
  guard "$C/$LG"
  hrun status "$LG"
}
# A service over HTTP's record (request.load.target), damaged in both files and re-hashed.
target_edit() {
  python3 - "$LG/data/run.json" "$LG/data/load.json" "$1" <<'PYEOF'
import json, sys
rec, load = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
t = {"url": "http://127.0.0.1:8000", "api": "chat", "endpoint": "/v1/chat/completions", "model": "m",
     "stream": True, "max_tokens": 16, "max_in_flight": 256, "api_key_env": None}
exec(sys.argv[3])
rec["request"]["load"]["target"] = t
load["request"]["target"] = t
json.dump(rec, open(sys.argv[1], "w"), indent=2)
json.dump(load, open(sys.argv[2], "w"), indent=2)
PYEOF
}
hc_runfolder__verify_load_target_url_not_a_string() {
  copy_run lgood || return
  target_edit 't["url"] = 5'
  rehash "$LG"
  finding 'run\.json' 'target has no url'
  verify_lgood
}
hc_runfolder__verify_load_target_in_flight_huge() {
  copy_run lgood || return
  target_edit 't["max_in_flight"] = 10**30'
  rehash "$LG"
  finding 'run\.json' 'max_in_flight'
  verify_lgood
}
hc_runfolder__verify_load_target_unknown_api() {
  copy_run lgood || return
  target_edit 't = [t]'
  rehash "$LG"
  finding 'run\.json' 'target is not an object'
  verify_lgood
}
hc_runfolder__verify_load_resent_zero() {
  copy_run lgood || return
  load_edit 'lines[0]["resent"] = 0'
  rehash "$LG"
  finding 'requests\.jsonl:1' "resent"
  verify_lgood
}
hc_runfolder__verify_load_resent_huge() {
  copy_run lgood || return
  load_edit 'lines[0]["resent"] = 10**20'
  rehash "$LG"
  finding 'requests\.jsonl:1' "resent"
  verify_lgood
}
# plan --from a load folder: its memory (a measurement, not recomputed) is typed by verify, and
# absurd values that pass are an answer or a refusal, never a crash or an overflow; its stage
# (the record's, printed) has its control bytes escaped.
hc_runfolder__verify_load_memory_not_numbers() {
  copy_run lgood || return
  load_edit 'load["memory"] = {"peak_rss_mb": "lots", "peak_device_mb": 1e308}'
  rehash "$LG"
  finding 'load\.json' 'memory'
  verify_lgood
}
hc_runfolder__verify_load_interrupted_not_a_boolean() {
  copy_run lgood || return
  load_edit 'load["interrupted"] = "no"'
  rehash "$LG"
  finding 'load\.json' 'interrupted'
  verify_lgood
}
hc_runfolder__verify_load_stage_not_the_record_s() {
  copy_run lgood || return
  load_edit 'load["stage"]["device"] = "cuda:0"'
  rehash "$LG"
  finding 'load\.json' 'stage differs'
  verify_lgood
}
hc_runfolder__plan_load_memory_absurd_device_escapes() {
  # A load that met a generous SLO (so that plan prints its basis), then its stage's device given
  # control bytes in both files and its memory an absurd value that types right, re-hashed.
  copy_run lgood || return  # the base's project
  python3 - "$BASE/proj/config/pilot.json" "$C/met.json" <<'PYEOF'
import json, os, sys
d = json.load(open(sys.argv[1])); base = os.path.dirname(sys.argv[1])
d["manifest"] = os.path.join(base, d["manifest"]); d["stage"]["model"] = os.path.join(base, d["stage"]["model"])
d["service"]["slo"] = {"percentile": 0.5, "confidence": 0.5, "e2e_ms": 600000}
json.dump(d, open(sys.argv[2], "w"))
PYEOF
  aux load --params met.json --rate 400 --requests 48 --out runs/lmet
  [ "$AUX_RC" = 0 ] || { bad "the generous load exited $AUX_RC: $(head -c 300 "$AUX_ERR" | tr '\n' '|')"; return; }
  LG=runs/lmet load_edit 'load["memory"] = {"peak_rss_mb": 1e-300, "peak_device_mb": 1e300}; load["stage"]["device"] = "cpu\u001b]0;pwned\u0007"'
  pyedit runs/lmet/data/run.json 'd["stage"]["device"] = "cpu\u001b]0;pwned\u0007"'
  rehash runs/lmet
  printf '%s\n' '{"currency": "EUR", "cards": [{"name": "node", "class": "cpu", "memory_gb": 64, "cards_per_lot": 1, "lot_price": {"3": 30}}]}' >"$C/prices.json"
  want_rc 0 4
  guard "$C/runs/lmet"
  hrun plan --from runs/lmet --rate 1e9 --prices prices.json --assume-scaling 0.001
  grep -aqF "measured on cpu" "$OUT" || bad "plan did not print the measured device: $(head -c 300 "$OUT" | tr '\n' '|')"
  if grep -aq $'\e' "$OUT" "$ERR"; then bad "a raw escape byte reached the terminal"; fi
}
hc_runfolder__plan_load_without_rate() {
  copy_run lgood || return
  printf '%s\n' '{"currency": "EUR", "cards": [{"name": "node", "class": "cpu", "memory_gb": 64, "cards_per_lot": 1, "lot_price": {"3": 30}}]}' >"$C/prices.json"
  want_rc 2
  want_err 'give --rate'
  guard "$C/$LG"
  hrun plan --from "$LG" --corpus-items 10 --prices prices.json
}
hc_runfolder__plan_load_peak_forged() {
  copy_run lgood || return
  load_edit 'load["steps"][0]["figures"]["slo_met"] = True; load["verdict"]["slo_met"] = True'
  rehash "$LG"
  printf '%s\n' '{"currency": "EUR", "cards": [{"name": "node", "class": "cpu", "memory_gb": 64, "cards_per_lot": 1, "lot_price": {"3": 30}}]}' >"$C/prices.json"
  want_rc 2
  want_err 'fails verification'
  guard "$C/$LG"
  hrun plan --from "$LG" --rate 10 --prices prices.json --out plan.json
}
hc_runfolder__plan_load_measured_on_unknown_card() {
  copy_run lgood || return
  printf '%s\n' '{"currency": "EUR", "cards": [{"name": "node", "class": "cpu", "memory_gb": 64, "cards_per_lot": 1, "lot_price": {"3": 30}}]}' >"$C/prices.json"
  want_rc 2
  want_err 'no card of the price file'
  guard "$C/$LG"
  hrun plan --from "$LG" --rate 10 --prices prices.json --measured-on $'\e]0;pwned\a'
}
