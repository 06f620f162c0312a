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
