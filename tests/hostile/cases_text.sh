# Untrusted text in reports and on the terminal (docs/security.md, "Text from untrusted
# sources"): what a model, a manifest, a folder or a person wrote is escaped for the place it
# lands (a Markdown table cell, HTML, the terminal, CSV). No raw control byte reaches a report
# or the terminal, no tag or link is ever rendered, a table row stays one row.
# Models that fail with such text are built with pilot-test-model ($PILOT_TEST_MODEL).
# Sourced by catalogue.sh; each hc_text__NAME function is one case.

G=runs/good
R=runs/part
# The text a hostile model raises, and the labels it declares.
EVIL_MESSAGE='chr(27) + "[2J" + chr(27) + "]0;owned" + chr(7) + "=HYPERLINK(1) <script>alert(1)</script> | col" + chr(10) + "| forged | row |"'
EVIL_LABEL_PIPE='a|b'
EVIL_LABEL_HTML='<img src=x onerror=alert(1)>'

# evil_model: proj/data/models/evil.pt (fails on any text holding "boom", with EVIL_MESSAGE),
# inputs proj/in/ (one of three holds "boom"), and proj/config/evil.json to run them.
evil_model() {
  [ -x "${PILOT_TEST_MODEL:-}" ] || { bad "PILOT_TEST_MODEL is not set to pilot-test-model"; return 1; }
  "$PILOT_TEST_MODEL" "$C/proj/data/models/evil.pt" "$EVIL_LABEL_PIPE" "$EVIL_LABEL_HTML" <<EOF || { bad "pilot-test-model failed"; return 1; }
def forward(self, texts: List[str]) -> Tensor:
    out = torch.zeros([len(texts), 2])
    for i in range(len(texts)):
        assert "boom" not in texts[i], $EVIL_MESSAGE
        if "html" in texts[i]:
            out[i, 1] = 0.9
        else:
            out[i, 0] = 0.9
    return out
EOF
  mkdir -p "$C/proj/in"
  printf 'hello world\n' >"$C/proj/in/a.txt"
  printf 'boom goes the model\n' >"$C/proj/in/b.txt"
  printf 'an html label please\n' >"$C/proj/in/c.txt"
  "$PILOT" manifest "$C/proj/in" --out "$C/proj/in/manifest.json" >/dev/null || { bad "pilot manifest failed"; return 1; }
  python3 - "$C/proj/config/pilot.json" "$C/proj/config/evil.json" "$EVIL_LABEL_PIPE" "$EVIL_LABEL_HTML" <<'EOF'
import json, sys
p = json.load(open(sys.argv[1]))
p["stage"]["model"] = "../data/models/evil.pt"
p["stage"].pop("model_sha256", None)
p["manifest"] = "../in/manifest.json"
p["allowed_categories"] = [sys.argv[3], sys.argv[4]]
p.pop("acceptance", None)
json.dump(p, open(sys.argv[2], "w"), indent=2)
EOF
}
# no_raw FILE...: no ESC, BEL or other C0 control (but tab and newline) and no C1 control in
# any of the files (reports, stdout, stderr).
no_raw() { _scan_text 0 "$@"; }
# no_markup FILE...: no_raw, and no tag from the hostile text (a page or a Markdown report).
no_markup() { _scan_text 1 "$@"; }
_scan_text() {
  local markup=$1 f
  shift
  for f in "$@"; do
    [ -f "$f" ] || { bad "missing ${f#"$C"/}"; continue; }
    python3 - "$f" "$markup" >"$T/noraw.out" 2>&1 <<'EOF' || bad "${f#"$C"/} holds raw hostile text: $(head -c 300 "$T/noraw.out")"
import re, sys
t = open(sys.argv[1], "rb").read().decode("utf-8", "replace")
bad = re.search(r"[\x00-\x08\x0b-\x1f\x7f\u0080-\u009f]", t)
if not bad and sys.argv[2] == "1":
    bad = re.search(r"<script|<img", t, re.I)
if bad:
    print(repr(t[max(0, bad.start() - 40):bad.end() + 40]))
    sys.exit(1)
EOF
  done
}
# table_rows_whole FILE HEADING CELLS: every row of the table under HEADING has CELLS cells
# (its unescaped '|' count is CELLS + 1).
table_rows_whole() {
  python3 - "$1" "$2" "$3" <<'EOF' || bad "a row of the table under '$2' in ${1#"$C"/} is broken"
import re, sys
lines = open(sys.argv[1], encoding="utf-8").read().split("\n")
start = lines.index(sys.argv[2])
rows = []
for l in lines[start + 1:]:
    if l.startswith("#"): break
    if l.startswith("|"): rows.append(l)
assert len(rows) >= 3, rows
for r in rows:
    pipes = len(re.findall(r"(?<!\\)\|", r))
    if pipes != int(sys.argv[3]) + 1:
        print("broken row:", r[:300]); sys.exit(1)
EOF
}

hc_text__run_model_error_and_labels_in_report_md() {
  evil_model || return
  want_rc 0 4
  hrun run --params proj/config/evil.json --runs-dir runs --run-id evil
  local run="$C/runs/evil"
  no_markup "$run/data/report.md"
  no_raw "$OUT" "$ERR"
  grep -q 'stage_error' "$run/data/results.jsonl" || bad "the failing item was not rejected stage_error"
  grep -qF '\u001b[2J' "$run/data/results.jsonl" || bad "results.jsonl lost the model's text (JSON escapes it)"
  table_rows_whole "$run/data/report.md" "## Items" 4
  table_rows_whole "$run/data/report.md" "## Batch failures" 3
  grep -qF '| a\|b | 1 |' "$run/data/report.md" || bad "the label a|b is not one escaped cell"
  grep -qF '&lt;img src=x onerror=alert(1)&gt;' "$run/data/report.md" || bad "the HTML label is not shown as text"
}
hc_text__sweep_model_error_in_sweep_md_csv_html() {
  evil_model || return
  want_rc 0 1
  hrun sweep --params proj/config/evil.json --device cpu --groups 1 --batch-sizes 1,2 --repeats 1 --out runs/sw
  local d="$C/runs/sw/data"
  no_markup "$d/sweep.md" "$d/report.html"
  no_raw "$d/sweep.csv" "$OUT" "$ERR"
  python3 - "$d/sweep.csv" <<'EOF' || bad "sweep.csv is not one record per line, or a field starts a formula"
import csv, sys
rows = list(csv.reader(open(sys.argv[1], newline="", encoding="utf-8")))
header = rows[0]
assert len(rows) >= 2
for r in rows[1:]:
    assert len(r) == len(header), r
    for field in (r[header.index("error")], r[header.index("limit")]):
        assert not field[:1] in ("=", "+", "-", "@"), field[:40]
assert any("\\x1b[2J" in r[header.index("error")] for r in rows[1:]), "the error text was lost"
EOF
}
hc_text__resumed_journal_batch_failure_in_report_md() {
  # A batch failure journaled in an interrupted folder (a copy that came back) holds markup
  # and escape sequences: the resumed run's report shows them as text.
  copy_run part || return
  printf '%s\n' '{"type":"batch_failure","batch_size":2,"out_of_memory":false,"error":"\u001b[31m<script>alert(1)</script>|x|y\n| forged | row |"}' \
    >>"$C/$R/data/journal.jsonl"
  want_rc 0
  hrun resume "$R"
  no_markup "$C/$R/data/report.md"
  no_raw "$OUT" "$ERR"
  table_rows_whole "$C/$R/data/report.md" "## Batch failures" 3
  grep -qF '&lt;script&gt;' "$C/$R/data/report.md" || bad "the batch failure's text is not in report.md as text"
}
hc_text__decide_reason_and_doctor_detail_markup() {
  copy_run good || return
  printf '%s\n' '{"ok": false, "checks": [{"name": "requires", "status": "fail", "required": true, "detail": "<img src=x onerror=alert(1)> \u001b[2J | cell"}]}' \
    >"$C/doctor.json"
  want_rc 0
  hrun decide "$G" --doctor doctor.json --decision fix-env --reason '<img src=x onerror=alert(1)> | [link](javascript:alert(1))' \
    --reason "$(printf 'two\nlines\033[2J')"
  no_markup "$C/$G/decision.md"
  no_raw "$OUT" "$ERR"
  grep -qF '&lt;img src=x onerror=alert(1)&gt; \| \[link\](javascript:alert(1))' "$C/$G/decision.md" ||
    bad "the reason is not escaped for Markdown in decision.md"
  aux verify "$G"
  [ "$AUX_RC" = 0 ] || bad "the folder does not verify after decide"
}
hc_text__decide_proposal_on_the_terminal() {
  copy_run good || return
  printf '%s\n' '{"ok": false, "checks": [{"name": "x\u001b]0;owned\u0007", "status": "fail", "required": true, "detail": "\u009b31m red"}]}' \
    >"$C/doctor.json"
  want_rc 0
  guard "$C/$G"
  hrun decide "$G" --doctor doctor.json
  no_raw "$OUT" "$ERR"
}
hc_text__manifest_expected_with_escape_sequence() {
  python3 - "$C/$M" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
m["items"][0]["expected"] = "\u001b[2Jen"
json.dump(m, open(sys.argv[1], "w"))
EOF
  refuse "'expected' holds a control or layout character" 'doc-01'
  hrun run --params "$P" --runs-dir runs
  no_raw "$ERR"
}
hc_text__manifest_expected_too_long() {
  python3 - "$C/$M" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
m["items"][0]["expected"] = "x" * 300
json.dump(m, open(sys.argv[1], "w"))
EOF
  refuse "'expected' is 300 bytes" 'doc-01'
  hrun run --params "$P" --runs-dir runs
}
hc_text__verify_finding_names_with_escapes() {
  # A file named with an ESC sequence inside a bag: the finding shows it escaped.
  copy_run good || return
  : >"$C/$G/data/$(printf 'x\033[2Jy')"
  want_rc 1
  guard "$C/$G"
  hrun verify "$G"
  no_raw "$OUT" "$ERR"
  grep -qF 'x\x1b[2Jy' "$ERR" || bad "the name is not shown escaped"
}
