# scripts/torch-deps.sh never loses a working venv and never replaces a folder it did not make:
# a folder that is not its venv is refused (exit 1, untouched); a venv already installed from
# the same requirements is kept without a download, whichever order --cuda and the folder come
# in; and a download that fails (no package index reachable) leaves the old venv as it was,
# with no half-built venv or wheel folder behind.
source "$(dirname "$0")/lib.sh"
deps=$SRC/scripts/torch-deps.sh
sha() { echo "$(sha256sum "$SRC/$1" | cut -d' ' -f1) $1"; }

# Options: an unknown one and a second folder are usage errors (exit 2).
rc=0; bash "$deps" --cpu >o1 2>&1 || rc=$?
[ "$rc" = 2 ] || { cat o1; fail "an unknown option exited $rc, expected 2"; }
expect_in o1 "unknown option --cpu"
rc=0; bash "$deps" a b >o2 2>&1 || rc=$?
[ "$rc" = 2 ] || { cat o2; fail "two folders exited $rc, expected 2"; }

# A folder that is not a venv, and a venv this script did not make (no stamp): refused, kept.
mkdir mine && echo keep >mine/notes.txt
rc=0; bash "$deps" "$WORK/mine" >o3 2>&1 || rc=$?
[ "$rc" = 1 ] || { cat o3; fail "a folder that is no venv exited $rc, expected 1"; }
expect_in o3 "$WORK/mine exists and is not a virtual environment made by scripts/torch-deps.sh"
[ "$(cat mine/notes.txt)" = keep ] || fail "the folder was changed"
mkdir other && : >other/pyvenv.cfg && echo keep >other/notes.txt
rc=0; bash "$deps" --cuda "$WORK/other" >o4 2>&1 || rc=$?
[ "$rc" = 1 ] || { cat o4; fail "a venv without the stamp exited $rc, expected 1"; }
[ "$(cat other/notes.txt)" = keep ] || fail "the foreign venv was changed"

# Installed from the same requirements: kept, nothing fetched (no index is reachable below).
export PIP_INDEX_URL=http://127.0.0.1:9/simple PIP_RETRIES=0 PIP_TIMEOUT=2 PIP_NO_INPUT=1
mkdir -p done/bin && : >done/pyvenv.cfg
printf '#!/bin/sh\nexit 0\n' >done/bin/python && chmod +x done/bin/python
{ sha requirements-torch.txt; sha requirements-cuda.txt; } >done/.pilot-requirements.sha256
before=$(tree_sum done)
bash "$deps" "$WORK/done" --cuda >o5 2>&1 || { cat o5; fail "an installed venv was not kept"; }
bash "$deps" --cuda "$WORK/done" >>o5 2>&1 || { cat o5; fail "an installed venv was not kept (--cuda first)"; }
[ "$(tree_sum done)" = "$before" ] || fail "the installed venv was changed"

# From an earlier requirements-torch.txt: rebuilt beside it; the download fails, the old venv
# stays whole and nothing is left behind.
mkdir -p stale/bin && : >stale/pyvenv.cfg && echo keep >stale/notes.txt
echo "0000 requirements-torch.txt" >stale/.pilot-requirements.sha256
before=$(tree_sum stale)
rc=0; bash "$deps" "$WORK/stale" >o6 2>&1 || rc=$?
[ "$rc" != 0 ] || { cat o6; fail "a failed download exited 0"; }
[ "$(tree_sum stale)" = "$before" ] || { cat o6; fail "a failed download changed the old venv"; }
[ ! -e stale.new ] || fail "the half-built venv stale.new was left behind"
leftover=$(ls -d wheels.* 2>/dev/null || true)
[ -z "$leftover" ] || fail "a download folder was left behind: $leftover"
echo PASS
