# Helpers for the end-to-end tests: each test_*.sh drives the real pilot binary ($PILOT)
# on real folders inside a scratch directory that is removed at exit.
set -euo pipefail
: "${PILOT:?set PILOT to the pilot binary}"
: "${PILOT_SOURCE_DIR:?set PILOT_SOURCE_DIR to the source tree}"
SRC=$PILOT_SOURCE_DIR
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

fail() { echo "FAIL: $*" >&2; exit 1; }

# run_pilot EXPECTED_EXIT ARGS...: runs pilot, keeps stdout/stderr in $WORK/out, $WORK/err.
run_pilot() {
  local want=$1; shift
  local rc=0
  "$PILOT" "$@" >"$WORK/out" 2>"$WORK/err" || rc=$?
  if [ "$rc" -ne "$want" ]; then
    echo "--- stdout"; cat "$WORK/out"; echo "--- stderr"; cat "$WORK/err"
    fail "pilot $* exited $rc, expected $want"
  fi
}

expect_in() {  # expect_in FILE TEXT
  grep -qF -- "$2" "$1" || { echo "--- $1"; cat "$1"; fail "expected '$2' in $1"; }
}
expect_not_in() {
  if grep -qF -- "$2" "$1"; then echo "--- $1"; cat "$1"; fail "did not expect '$2' in $1"; fi
}

# A private copy of the bundled project (config + data + model) that tests may edit.
copy_project() {
  mkdir -p "$WORK/proj"
  cp -r "$SRC/config" "$SRC/data" "$WORK/proj/"
}

# Fingerprint of a folder tree (names and contents), to show it was not modified.
tree_sum() { (cd "$1" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum); }

# The run folder a successful run printed ("run folder: ..." on stdout).
run_dir_from_out() { sed -n 's/^run folder: //p' "$WORK/out"; }

# make_corpus N DIR: N small documents in rotating languages (every 50th empty, so some
# are rejected), pinned by `pilot manifest`.
make_corpus() {
  local n=$1 dir=$2 i k
  mkdir -p "$dir"
  local texts=()
  for k in 01 02 03 04 05 06 07 08 10; do texts+=("$(head -n 1 "$SRC/data/pilot/doc-$k.txt")"); done
  for ((i = 1; i <= n; i++)); do
    if ((i % 50 == 0)); then : >"$dir/d$i.txt"; else printf '%s %d\n' "${texts[i % 9]}" "$i" >"$dir/d$i.txt"; fi
  done
  "$PILOT" manifest "$dir" --name corpus >/dev/null
}

# write_params FILE MANIFEST BATCH: parameters for the bundled model without acceptance
# criteria (a synthetic corpus has no labels).
write_params() {
  cat >"$1" <<EOT
{
  "manifest": "$(cd "$(dirname "$2")" && pwd)/$(basename "$2")",
  "stage": {"kind": "torchscript-classifier", "model": "$SRC/data/models/langid/langid.pt",
            "options": {"min_confidence": 0.5}},
  "allowed_categories": ["en", "fr", "de", "es", "it", "pt", "nl", "ja"],
  "device": "cpu", "batch_size": $3, "threads": 1
}
EOT
}

# outcomes RUN_DIR: "id status category-or-reason" per result line, latency stripped.
outcomes() {
  sed -E 's/^\{"id":"([^"]*)","status":"([^"]*)","(category|reason)":"([^"]*)".*/\1 \2 \4/' "$1/data/results.jsonl"
}

# exactly_once RUN_DIR: every manifest id appears once in results.jsonl, none else.
exactly_once() {
  local m r
  m=$(grep -o '"id": "[^"]*"' "$1"/data/manifest.json | cut -d'"' -f4 | sort)
  r=$(grep -o '^{"id":"[^"]*"' "$1/data/results.jsonl" | cut -d'"' -f4 | sort)
  [ "$m" = "$r" ] || fail "ids in results differ from the manifest ($1)"
  [ -z "$(uniq -d <<<"$r")" ] || fail "an id appears twice ($1)"
}

# wait_for FILE PATTERN: up to 20 s for PATTERN to appear in FILE.
wait_for() {
  local i
  for ((i = 0; i < 200; i++)); do
    grep -q -- "$2" "$1" 2>/dev/null && return 0
    sleep 0.1
  done
  fail "timed out waiting for '$2' in $1"
}
