# Damaged and hostile adaptation folders (`pilot adapt`, kind `adapt`: the layout is in
# include/pilot/adapt_records.h) and adaptation parameter files. The folders are copies of one
# finished adaptation ("agood": 40 steps, checkpoints at 10/20/30/40, 30 and 40 kept), one
# stopped after 15 steps ("apart": exit 130, its checkpoint at step 10) and one killed before
# its journal's header ("aearly"), made once per group by catalogue.sh (the originals are
# guarded: nothing may change them; a resume reads their inputs under the base's proj/).
# verify: damage is a finding (exit 1) naming the file or the id — the bag's manifests
# re-hashed by a careful forger first, so that the adaptation's own checks are what catch it;
# a symlink is a finding, never followed; a folder of an unknown format is exit 2. resume:
# anything damaged, changed or foreign is refused (exit 2) and leaves the folder exactly as
# it was, nothing outside it written or removed. status: exit 0 or 2 on a hostile journal,
# never a crash or a hang. parameters: refused before any folder exists (exit 2), naming the
# key, the file or the id; a secret never echoed; a FIFO or /dev/zero neither hangs nor
# allocates without bound.
# Sourced by catalogue.sh; each hc_adapt__NAME function is one case.

AG=runs/agood
AP=runs/apart
AE=runs/aearly
CK=data/checkpoints
# verify is read-only: the folder under test never changes.
ad_verify() { guard "$C/$AG"; hrun verify "$AG"; }
ad_resume() { hrun resume "$AP"; }
ad_status() { guard "$C/$AP"; hrun status "$AP"; }
# A verify finding: exit 1, stderr matching every pattern.
ad_finding() { want_rc 1; want_err "$@"; }
# A refused resume: exit 2, stderr matching every pattern, the folder untouched.
ad_refused() { want_rc 2; want_err "$@"; guard "$C/$AP"; }
# ad_jedit FILE 'python statements on recs': edits the records of a JSON Lines file (a list of
# dicts, in order); only the lines whose record changed are rewritten (compact, as pilot
# writes them), the others stay byte for byte.
ad_jedit() {
  python3 - "$1" "$2" <<'EOF'
import json, sys
path, code = sys.argv[1], sys.argv[2]
lines = open(path, "rb").read().decode().split("\n")
tail = lines.pop()  # "" after the last newline
recs = [json.loads(l) for l in lines]
orig = {}
for l, r in zip(lines, recs):
    orig.setdefault(json.dumps(r, sort_keys=True), []).append(l)
exec(code)
out = []
for r in recs:
    same = orig.get(json.dumps(r, sort_keys=True))
    out.append(same.pop(0) if same else json.dumps(r, separators=(",", ":")))
open(path, "w").write("".join(l + "\n" for l in out) + tail)
EOF
}
# ad_pyedit FILE 'python statements on d': edits a JSON document in place.
ad_pyedit() {
  python3 - "$1" "$2" <<'EOF'
import json, sys
path, code = sys.argv[1], sys.argv[2]
d = json.load(open(path))
exec(code)
open(path, "w").write(json.dumps(d, indent=2) + "\n")
EOF
}
# ad_pin_train RUN_DIR: the journal header's train_accounting_sha256 set to data/train.jsonl's
# sha256, as a forger who edited the accounting would.
ad_pin_train() {
  local sha
  sha=$(sha "$1/data/train.jsonl")
  ad_jedit "$1/data/journal.jsonl" "recs[0]['train_accounting_sha256'] = '$sha'"
}
# A byte of FILE at OFFSET flipped (X written there).
ad_flip() { printf 'X' | dd of="$1" bs=1 seek="${2:-100}" conv=notrunc 2>/dev/null; }

# --- controls ----------------------------------------------------------------------------------
hc_adapt__verify_control_good() {
  copy_run agood || return
  want_rc 0
  ad_verify
}
hc_adapt__verify_control_rehashed() {
  copy_run agood || return
  ad_pin_train "$AG"
  rehash "$AG"
  want_rc 0
  ad_verify
}

# --- verify: the accounting ----------------------------------------------------------------------
hc_adapt__verify_train_id_missing() {
  copy_run agood || return
  sed -i '/"id":"tr-de-country-AE-name"/d' "$AG/data/train.jsonl"
  ad_pin_train "$AG"
  rehash "$AG"
  ad_finding 'train\.jsonl|tr-de-country-AE-name' '568 lines|manifest order|tr-de-country-AE-name'
  ad_verify
}
hc_adapt__verify_train_id_duplicated() {
  copy_run agood || return
  ad_jedit "$AG/data/train.jsonl" 'recs.insert(2, dict(recs[1]))'
  ad_pin_train "$AG"
  rehash "$AG"
  ad_finding 'train\.jsonl|tr-de-country-A' '570 lines|manifest order'
  ad_verify
}
hc_adapt__verify_train_relabelled() {
  # A used item's label changed (de -> fr): the counts all still agree.
  copy_run agood || return
  ad_jedit "$AG/data/train.jsonl" "[r.update(label='fr') for r in recs if r['id'] == 'tr-de-country-AD-official']"
  ad_pin_train "$AG"
  rehash "$AG"
  ad_finding 'tr-de-country-AD-official' 'label'
  ad_verify
}
hc_adapt__verify_train_unknown_reason() {
  copy_run agood || return
  ad_jedit "$AG/data/train.jsonl" "[r.update(reason='not_a_reason') for r in recs if r['status'] == 'rejected']"
  ad_pin_train "$AG"
  rehash "$AG"
  ad_finding 'train\.jsonl|tr-bad-encoding'
  ad_verify
}
hc_adapt__verify_train_unpinned_edit() {
  # The accounting edited without the journal's pin: the pin catches it.
  copy_run agood || return
  ad_jedit "$AG/data/train.jsonl" "[r.update(label='fr') for r in recs if r['id'] == 'tr-de-country-AD-official']"
  rehash "$AG"
  ad_finding 'train\.jsonl' 'prechecks'
  ad_verify
}
hc_adapt__verify_eval_line_removed() {
  copy_run agood || return
  sed -i '5d' "$AG/data/eval.jsonl"
  rehash "$AG"
  ad_finding 'eval\.jsonl|ev-' '247 lines|manifest order|evaluated'
  ad_verify
}

# --- verify: checkpoints, model, card, report, journal, record -------------------------------------
hc_adapt__verify_kept_checkpoint_removed() {
  copy_run agood || return
  rm "$AG/$CK/step-00000030.ckpt"
  rehash "$AG"
  ad_finding 'step-00000030\.ckpt' 'missing'
  ad_verify
}
hc_adapt__verify_checkpoint_flipped() {
  copy_run agood || return
  ad_flip "$AG/$CK/step-00000040.ckpt"
  rehash "$AG"
  ad_finding '\[checkpoints\] data/checkpoints/step-00000040\.ckpt'
  ad_verify
  grep -aq '\[fixity\]' "$ERR" && bad "the re-hashed manifests were not what a forger makes (a fixity finding)"
}
hc_adapt__verify_extra_file_in_checkpoints() {
  copy_run agood || return
  echo hello >"$AG/$CK/notes.txt"
  rehash "$AG"
  ad_finding 'checkpoints/notes\.txt'
  ad_verify
}
hc_adapt__verify_pruned_checkpoint_back() {
  # A checkpoint the journal says was pruned, back in place (a copy of a kept one).
  copy_run agood || return
  cp "$AG/$CK/step-00000030.ckpt" "$AG/$CK/step-00000010.ckpt"
  rehash "$AG"
  ad_finding 'step-00000010\.ckpt' 'pruned'
  ad_verify
}
hc_adapt__verify_model_replaced() {
  copy_run agood || return
  cp "$BASE/proj/data/models/langid/langid.pt" "$AG/data/model/adapted.pt"
  rehash "$AG"
  ad_finding 'adapted\.pt|MODEL_CARD\.md'
  ad_verify
}
hc_adapt__verify_model_card_sha_changed() {
  copy_run agood || return
  sed -i "s/^- sha256: \`[0-9a-f]*\`/- sha256: \`$(repeat 64 0)\`/" "$AG/data/model/MODEL_CARD.md"
  grep -q "^- sha256: \`$(repeat 64 0)\`" "$AG/data/model/MODEL_CARD.md" || bad "could not edit the model card"
  rehash "$AG"
  ad_finding 'MODEL_CARD\.md'
  ad_verify
}
hc_adapt__verify_report_counts_edited() {
  copy_run agood || return
  ad_pyedit "$AG/data/report.json" 'd["train"]["used"] += 1; d["train"]["rejected"] -= 1'
  rehash "$AG"
  ad_finding 'report\.json' 'train\.used'
  ad_verify
}
hc_adapt__verify_report_accuracy_forged() {
  # The adapted accuracy and the gain raised, the counts left alone, the bag re-hashed: the
  # report is built again from the evaluation accounting and compared.
  copy_run agood || return
  ad_pyedit "$AG/data/report.json" 'd["evaluation"]["adapted"]["accuracy"] = 1.0; d["evaluation"]["gain"] = 0.5'
  rehash "$AG"
  ad_finding 'report\.json.*at: evaluation'
  ad_verify
}
hc_adapt__verify_report_verdict_forged() {
  # A threshold lowered so that the verdict reads accepted: the criteria come from the
  # parameters' pinned copy, not from the report.
  copy_run agood || return
  ad_pyedit "$AG/data/report.json" 'd["acceptance"]["criteria"][0]["threshold"] = 0.0; d["acceptance"]["met"] = True; d["verdict"] = "accepted"'
  rehash "$AG"
  ad_finding 'report\.json.*at: acceptance'
  ad_verify
}
hc_adapt__verify_report_html_forged() {
  # report.html, the page a person reads, changed by one byte and re-hashed.
  copy_run agood || return
  sed -i '0,/<td>/s/<td>/<td>9/' "$AG/data/report.html"
  rehash "$AG"
  ad_finding 'report\.html.*differs'
  ad_verify
}
hc_adapt__verify_metrics_loss_forged() {
  # A loss in metrics.jsonl smoothed by hand: the file is the journal's losses, rebuilt.
  copy_run agood || return
  sed -i '2s/"loss":[^}]*/"loss":0.001/' "$AG/data/metrics.jsonl"
  rehash "$AG"
  ad_finding 'metrics\.jsonl.*differs'
  ad_verify
}
hc_adapt__verify_journal_line_corrupted() {
  copy_run agood || return
  sed -i '4s/.*/{"type":"checkpoint","step":/' "$AG/data/journal.jsonl"
  rehash "$AG"
  ad_finding 'journal\.jsonl'
  ad_verify
}
hc_adapt__verify_journal_checkpoint_sha_changed() {
  copy_run agood || return
  ad_jedit "$AG/data/journal.jsonl" "[r.update(sha256='$(repeat 64 a)') for r in recs if r.get('step') == 40]"
  rehash "$AG"
  ad_finding 'step-00000040\.ckpt'
  ad_verify
}
hc_adapt__verify_state_running() {
  copy_run agood || return
  ad_pyedit "$AG/data/run.json" 'd["state"] = "running"'
  rehash "$AG"
  ad_finding 'run\.json' 'not finished'
  ad_verify
}
hc_adapt__verify_format_version_99() {
  # A consistent folder of a later format: not this pilot's to judge (exit 2).
  copy_run agood || return
  ad_pyedit "$AG/data/run.json" 'd["format_version"] = 99'
  sed -i 's/^Pilot-Format-Version: .*/Pilot-Format-Version: 99/' "$AG/bag-info.txt"
  rehash "$AG"
  want_rc 2
  want_err 'adapt format 99'
  ad_verify
}
hc_adapt__verify_format_version_99_run_json_only() {
  # run.json says adapt format 99, bag-info.txt still format 1: the adaptation checks run and
  # the first finding names the disagreement (once a defect: the checks of a run folder ran).
  copy_run agood || return
  ad_pyedit "$AG/data/run.json" 'd["format_version"] = 99'
  rehash "$AG"
  want_rc 1 2
  want_err 'format'
  ad_verify
}

# --- verify: symlinks inside the folder (a finding; what they point at is never trusted) --------
# Each points at an intact copy outside the folder: following it would verify clean.
hc_adapt__verify_checkpoints_dir_symlink() {
  copy_run agood || return
  mv "$AG/$CK" "$C/outside/checkpoints"
  ln -s "$C/outside/checkpoints" "$AG/$CK"
  rehash "$AG"
  ad_finding 'checkpoints' 'symlink|not a (regular|folder|directory)'
  ad_verify
}
hc_adapt__verify_checkpoint_symlink() {
  copy_run agood || return
  mv "$AG/$CK/step-00000040.ckpt" "$C/outside/step-00000040.ckpt"
  ln -s "$C/outside/step-00000040.ckpt" "$AG/$CK/step-00000040.ckpt"
  rehash "$AG"
  ad_finding 'step-00000040\.ckpt' 'symlink|not a regular'
  ad_verify
}
hc_adapt__verify_model_symlink() {
  copy_run agood || return
  mv "$AG/data/model/adapted.pt" "$C/outside/adapted.pt"
  ln -s "$C/outside/adapted.pt" "$AG/data/model/adapted.pt"
  rehash "$AG"
  ad_finding 'adapted\.pt' 'symlink'
  ad_verify
}
hc_adapt__verify_journal_symlink() {
  copy_run agood || return
  mv "$AG/data/journal.jsonl" "$C/outside/journal.jsonl"
  ln -s "$C/outside/journal.jsonl" "$AG/data/journal.jsonl"
  rehash "$AG"
  ad_finding 'journal\.jsonl' 'symlink'
  ad_verify
}
hc_adapt__verify_journal_symlink_secret() {
  copy_run agood || return
  ln -sf "$C/outside/secret.txt" "$AG/data/journal.jsonl"
  rehash "$AG"
  ad_finding 'journal\.jsonl' 'symlink'
  ad_verify
}
hc_adapt__verify_journal_dev_zero() {
  copy_run agood || return
  ln -sf /dev/zero "$AG/data/journal.jsonl"
  ad_finding 'journal\.jsonl'
  quick
  bounded
  ad_verify
}

# --- resume: refusals leave the folder as it was ---------------------------------------------------
hc_adapt__resume_checkpoint_flipped() {
  copy_run apart || return
  ad_flip "$AP/$CK/step-00000010.ckpt"
  ad_refused 'step-00000010\.ckpt' 'sha256'
  ad_resume
}
hc_adapt__resume_checkpoint_truncated() {
  copy_run apart || return
  truncate -s 1000 "$AP/$CK/step-00000010.ckpt"
  ad_refused 'step-00000010\.ckpt'
  ad_resume
}
hc_adapt__resume_checkpoint_symlink() {
  # An intact copy outside, linked in its place: following it would resume.
  copy_run apart || return
  mv "$AP/$CK/step-00000010.ckpt" "$C/outside/step-00000010.ckpt"
  ln -s "$C/outside/step-00000010.ckpt" "$AP/$CK/step-00000010.ckpt"
  ad_refused 'step-00000010\.ckpt' 'regular|symlink'
  ad_resume
}
hc_adapt__resume_checkpoints_dir_symlink() {
  # The checkpoints folder a link to one outside, holding a stray temp checkpoint that a
  # resume would remove from its own folder: nothing there may be removed or written.
  copy_run apart || return
  mv "$AP/$CK" "$C/outside/checkpoints"
  echo partial >"$C/outside/checkpoints/step-00000020.ckpt.tmp-123"
  ln -s "$C/outside/checkpoints" "$AP/$CK"
  ad_refused 'checkpoints' 'symlink|not a folder'
  ad_resume
}
hc_adapt__resume_data_dir_symlink() {
  copy_run apart || return
  mv "$AP/data" "$C/outside/data"
  ln -s "$C/outside/data" "$AP/data"
  ad_refused '\bdata\b' 'symlink|not a folder'
  ad_resume
}
hc_adapt__resume_header_total_steps_huge() {
  copy_run apart || return
  ad_jedit "$AP/data/journal.jsonl" "recs[0]['total_steps'] = 10**15"
  ad_refused 'journal\.jsonl' 'total_steps'
  quick
  ad_resume
}
hc_adapt__resume_header_steps_per_epoch_zero() {
  copy_run apart || return
  ad_jedit "$AP/data/journal.jsonl" "recs[0]['steps_per_epoch'] = 0"
  ad_refused 'journal\.jsonl' 'steps_per_epoch'
  quick
  ad_resume
}
hc_adapt__resume_header_threads_zero() {
  copy_run apart || return
  ad_jedit "$AP/data/journal.jsonl" "recs[0]['threads'] = 0"
  ad_refused 'journal\.jsonl' 'threads'
  quick
  ad_resume
}
hc_adapt__resume_checkpoint_bytes_huge() {
  # The record claims 10^15 bytes for a 12 MB checkpoint: neither read nor allocated; the
  # record does not describe the file, so the folder cannot be trusted to resume.
  copy_run apart || return
  ad_jedit "$AP/data/journal.jsonl" "[r.update(bytes=10**15) for r in recs if r['type'] == 'checkpoint']"
  ad_refused 'step-00000010\.ckpt|journal\.jsonl' 'size|bytes'
  quick
  bounded
  ad_resume
}
hc_adapt__resume_checkpoint_bytes_wrong() {
  # A record whose 'bytes' (10^14, under the parser's cap) is not the checkpoint's size: refused
  # like any record that does not describe its file (once a defect: resume checked the sha256 only).
  copy_run apart || return
  ad_jedit "$AP/data/journal.jsonl" "[r.update(bytes=10**14) for r in recs if r['type'] == 'checkpoint']"
  ad_refused 'step-00000010\.ckpt' 'size|bytes'
  bounded
  ad_resume
}
hc_adapt__resume_header_base_model_dev_zero() {
  # The journal's (unpinned) header names the base model to hash: /dev/zero must not be read.
  copy_run apart || return
  ad_jedit "$AP/data/journal.jsonl" "recs[0]['base_model_path'] = '/dev/zero'"
  ad_refused '/dev/zero'
  quick
  bounded
  ad_resume
}
hc_adapt__resume_header_base_model_fifo() {
  copy_run apart || return
  mkfifo "$C/outside/model.fifo"
  ad_jedit "$AP/data/journal.jsonl" "recs[0]['base_model_path'] = '$C/outside/model.fifo'"
  ad_refused 'model\.fifo'
  quick
  ad_resume
}
hc_adapt__resume_params_copy_edited() {
  copy_run apart || return
  sed -i 's/"seed": 7/"seed": 8/' "$AP/data/params.json"
  ad_refused 'params\.json'
  ad_resume
}
hc_adapt__resume_manifest_copy_edited() {
  copy_run apart || return
  sed -i '0,/"expected": "de"/s//"expected": "fr"/' "$AP/data/train-manifest.json"
  ad_refused 'train-manifest\.json'
  ad_resume
}
hc_adapt__resume_foreign_file_in_checkpoints() {
  copy_run apart || return
  echo 'not pilot'"'"'s' >"$AP/$CK/notes.txt"
  ad_refused 'notes\.txt'
  ad_resume
}
hc_adapt__resume_foreign_symlink_in_checkpoints() {
  copy_run apart || return
  ln -s "$C/outside/victim.txt" "$AP/$CK/step-00000020.ckpt.tmp-1"
  ad_refused 'step-00000020\.ckpt\.tmp-1'
  ad_resume
}
hc_adapt__resume_torn_journal_then_refused() {
  # A torn last record and a tampered checkpoint: the refusal must not have dropped the torn
  # record first (a refused resume leaves the folder exactly as it was).
  # A torn last record and a refusal: the journal is left as it was (once a defect: the torn
  # record was cut off before the checks that refused).
  copy_run apart || return
  printf '{"type":"checkpoint","step":20,' >>"$AP/data/journal.jsonl"
  ad_flip "$AP/$CK/step-00000010.ckpt"
  ad_refused 'step-00000010\.ckpt'
  ad_resume
}
hc_adapt__resume_finished() {
  copy_run agood || return
  want_rc 2
  want_err 'already finished'
  guard "$C/$AG"
  hrun resume "$AG"
}
hc_adapt__resume_never_started() {
  # Killed by a signal: its .lock is stale, and may be taken over; every other file stays.
  copy_run aearly || return
  want_rc 2
  want_err 'never started'
  guard "$C/$AE" .lock
  hrun resume "$AE"
}

# --- status on a hostile journal: a sane answer or exit 2, never a crash or a hang ----------------
hc_adapt__status_journal_garbage() {
  copy_run apart || return
  printf 'garbage\n' >"$AP/data/journal.jsonl"
  want_rc 0 2
  quick
  ad_status
}
hc_adapt__status_journal_dev_zero() {
  copy_run apart || return
  ln -sf /dev/zero "$AP/data/journal.jsonl"
  want_rc 0 2
  quick
  bounded
  ad_status
}
hc_adapt__status_journal_fifo() {
  copy_run apart || return
  rm "$AP/data/journal.jsonl"
  mkfifo "$AP/data/journal.jsonl"
  want_rc 0 2
  quick
  ad_status
}
hc_adapt__status_journal_symlink_secret() {
  copy_run apart || return
  ln -sf "$C/outside/secret.txt" "$AP/data/journal.jsonl"
  want_rc 0 2
  quick
  ad_status
}
hc_adapt__status_header_zero_steps() {
  copy_run apart || return
  ad_jedit "$AP/data/journal.jsonl" "recs[0].update(total_steps=0, steps_per_epoch=0)"
  want_rc 0 2
  quick
  ad_status
}
hc_adapt__status_checkpoint_step_huge() {
  copy_run apart || return
  ad_jedit "$AP/data/journal.jsonl" "[r.update(step=2**64 - 1) for r in recs if r['type'] == 'checkpoint']"
  want_rc 0 2
  quick
  ad_status
}

# --- adaptation parameter files: refused before any folder ---------------------------------------
AF=proj/config/a.json
# ad_params 'python statements on d': a.json from the bundled config/adapt.json, cut to 40
# steps, edited by the statements.
ad_params() {
  python3 - "$C/proj/config/adapt.json" "$C/$AF" "${1:-}" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
del d["train"]["epochs"]
d["train"].update(steps=40, checkpoint_every=10)
exec(sys.argv[3])
json.dump(d, open(sys.argv[2], "w"), indent=2)
EOF
}
ad_adapt() { hrun adapt --params "$AF" --runs-dir runs --run-id x; }

hc_adapt__params_deeply_nested() {
  ad_params 'd["description"] = "@NEST@"'
  { sed -n '1,/"@NEST@"/p' "$AF" | sed 's/"@NEST@",$//'; nest 100000; echo ,; sed '1,/"@NEST@"/d' "$AF"; } >"$AF.new"
  mv "$AF.new" "$AF"
  refuse 'a\.json'
  quick
  bounded
  ad_adapt
}
hc_adapt__params_unknown_key() {
  ad_params 'd["train"]["optimizer"] = d["train"].pop("optimiser")'
  refuse 'a\.json' 'optimizer'
  ad_adapt
}
hc_adapt__params_unknown_top_key() {
  ad_params 'd["output_dir"] = "/tmp"'
  refuse 'a\.json' 'output_dir'
  ad_adapt
}
hc_adapt__params_credential_value() {
  ad_params "d['description'] = 'aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRf${MARKER}Y'"
  refuse 'a\.json' 'description' 'credential'
  ad_adapt
}
hc_adapt__params_credential_key() {
  ad_params "d['train']['api_key'] = 'sk-proj-${MARKER}0123456789abcdefABCDEF'"
  refuse 'a\.json' 'api_key|credential'
  ad_adapt
}
hc_adapt__params_epochs_and_steps() {
  ad_params 'd["train"]["epochs"] = 2'
  refuse 'a\.json' 'epochs' 'steps'
  ad_adapt
}
hc_adapt__params_neither_epochs_nor_steps() {
  ad_params 'del d["train"]["steps"]'
  refuse 'a\.json' 'epochs|steps'
  ad_adapt
}
hc_adapt__params_threads_zero() {
  ad_params 'd["train"]["threads"] = 0'
  refuse 'a\.json' 'threads'
  ad_adapt
}
hc_adapt__params_batch_size_huge() {
  ad_params 'd["train"]["batch_size"] = 10**12'
  refuse 'a\.json' 'batch_size'
  quick
  bounded
  ad_adapt
}
hc_adapt__params_steps_huge() {
  ad_params 'd["train"]["steps"] = 10**15'
  refuse 'a\.json' 'steps'
  quick
  ad_adapt
}
hc_adapt__params_train_manifest_fifo() {
  mkfifo proj/data/adapt/fifo.json
  ad_params 'd["train_manifest"] = "../data/adapt/fifo.json"'
  refuse 'fifo\.json'
  quick
  ad_adapt
}
hc_adapt__params_eval_manifest_dev_zero() {
  ad_params 'd["eval_manifest"] = "/dev/zero"'
  refuse '/dev/zero'
  quick
  bounded
  ad_adapt
}
hc_adapt__params_base_model_fifo() {
  mkfifo proj/data/models/model.fifo
  ad_params 'd["base_model"]["path"] = "../data/models/model.fifo"'
  refuse 'model\.fifo'
  quick
  ad_adapt
}
hc_adapt__params_base_model_dev_zero() {
  ad_params 'd["base_model"]["path"] = "/dev/zero"'
  refuse '/dev/zero'
  quick
  bounded
  ad_adapt
}
hc_adapt__params_file_dev_zero() {
  refuse '/dev/zero'
  quick
  bounded
  hrun adapt --params /dev/zero --runs-dir runs --run-id x
}
hc_adapt__params_train_item_without_expected() {
  python3 - proj/data/adapt/train.json <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
[i.pop("expected") for i in d["items"] if i["id"] == "tr-de-country-AE-name"]
json.dump(d, open(sys.argv[1], "w"), indent=2)
EOF
  ad_params
  refuse 'tr-de-country-AE-name' 'expected'
  ad_adapt
}
hc_adapt__params_same_id_train_and_eval() {
  # An evaluation item (its path valid from the training manifest's folder too) in both.
  python3 - proj/data/adapt/train.json proj/data/adapt/eval.json <<'EOF'
import json, sys
t, e = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
t["items"].append(e["items"][0])
json.dump(t, open(sys.argv[1], "w"), indent=2)
print(e["items"][0]["id"])
EOF
  ad_params
  refuse 'ev-de-country-AZ-name'
  ad_adapt
}
