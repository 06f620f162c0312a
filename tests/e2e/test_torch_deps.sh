# scripts/torch-deps.sh never loses a working venv and never replaces a folder it did not make.
# Offline throughout: a copy of the script beside requirements files that pin two tiny local
# wheels, pip told to use nothing but a local folder.
# - a folder that is not its venv, or a venv without its stamp: refused (exit 1), untouched;
# - a fresh venv (the folder named with a trailing slash): built beside, moved into place, its
#   scripts naming the final folder, the stamp written; --cuda adds the second file's wheels,
#   in either argument order; the same requirements again: kept, nothing fetched;
# - changed requirements: a new venv replaces the old one whole;
# - a download that fails: the old venv as it was, no VENV.new or download folder left behind.
source "$(dirname "$0")/lib.sh"
export PIP_CONFIG_FILE=/dev/null PIP_NO_INDEX=1 PIP_FIND_LINKS=$WORK/wheels PIP_NO_INPUT=1 \
  PIP_DISABLE_PIP_VERSION_CHECK=1
mkdir -p fake/scripts wheels
cp "$SRC/scripts/torch-deps.sh" fake/scripts/
deps=$WORK/fake/scripts/torch-deps.sh

# A wheel of one module and one console script; prints its sha256.
make_wheel() {  # make_wheel NAME
  /usr/bin/python3 - "$WORK/wheels" "$1" <<'PY'
import base64, hashlib, sys, zipfile
out, name = sys.argv[1:3]
files = {
    f"{name}/__init__.py": f"def main():\n    print('{name} runs')\n",
    f"{name}-1.0.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n",
    f"{name}-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    f"{name}-1.0.dist-info/entry_points.txt": f"[console_scripts]\n{name} = {name}:main\n",
}
record = ""
for path, text in files.items():
    digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
    record += f"{path},sha256={digest},{len(text.encode())}\n"
record += f"{name}-1.0.dist-info/RECORD,,\n"
files[f"{name}-1.0.dist-info/RECORD"] = record
whl = f"{out}/{name}-1.0-py3-none-any.whl"
with zipfile.ZipFile(whl, "w") as z:
    for path, text in sorted(files.items()):
        z.writestr(path, text)
print(hashlib.sha256(open(whl, "rb").read()).hexdigest())
PY
}
printf 'pilotfake==1.0 \\\n    --hash=sha256:%s\n' "$(make_wheel pilotfake)" >fake/requirements-torch.txt
printf 'pilotfakecuda==1.0 \\\n    --hash=sha256:%s\n' "$(make_wheel pilotfakecuda)" >fake/requirements-cuda.txt
leftovers() { ls -d "$WORK"/v.new "$WORK"/v.old "$WORK"/wheels.* 2>/dev/null || true; }

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

# A fresh venv, named with a trailing slash (as a shell completes it).
bash "$deps" "$WORK/v/" >o5 2>&1 || { cat o5; fail "a fresh venv was not installed"; }
[ "$(v/bin/python -c 'import pilotfake; print("ok")')" = ok ] || fail "the venv's python lacks the wheel"
[ "$(v/bin/pilotfake)" = "pilotfake runs" ] || fail "the venv's console script does not run after the move"
expect_in v/bin/activate "$WORK/v"
expect_not_in v/bin/activate "$WORK/v.new"
expect_in v/.pilot-requirements.sha256 " requirements-torch.txt"
[ -z "$(leftovers)" ] || fail "left behind: $(leftovers)"
# --cuda after the folder: the second file's wheels added to it.
bash "$deps" "$WORK/v" --cuda >o6 2>&1 || { cat o6; fail "--cuda did not add its wheels"; }
[ "$(v/bin/pilotfakecuda)" = "pilotfakecuda runs" ] || fail "--cuda's wheel is not installed"
expect_in v/.pilot-requirements.sha256 " requirements-cuda.txt"
# The same requirements again, --cuda first: kept, nothing fetched (the wheels are gone).
mv wheels wheels-away && mkdir wheels
before=$(tree_sum v)
bash "$deps" --cuda "$WORK/v" >o7 2>&1 || { cat o7; fail "an installed venv was not kept"; }
[ "$(tree_sum v)" = "$before" ] || fail "the installed venv was changed"
rmdir wheels && mv wheels-away wheels

# Changed requirements: a new venv replaces the old one whole.
echo "# a change" >>fake/requirements-torch.txt
echo marker >v/marker
bash "$deps" "$WORK/v" >o8 2>&1 || { cat o8; fail "changed requirements did not rebuild the venv"; }
[ ! -e v/marker ] || fail "the old venv was not replaced"
[ "$(v/bin/pilotfake)" = "pilotfake runs" ] || fail "the rebuilt venv does not run"
[ -z "$(leftovers)" ] || fail "left behind: $(leftovers)"

# Changed again, and the download fails (the wheel is not there): the old venv stays whole.
echo "# another change" >>fake/requirements-torch.txt
mv wheels wheels-away && mkdir wheels
before=$(tree_sum v)
rc=0; bash "$deps" "$WORK/v" >o9 2>&1 || rc=$?
[ "$rc" != 0 ] || { cat o9; fail "a failed download exited 0"; }
expect_in o9 "No matching distribution found for pilotfake==1.0"
[ "$(tree_sum v)" = "$before" ] || { cat o9; fail "a failed download changed the old venv"; }
[ "$(v/bin/pilotfake)" = "pilotfake runs" ] || fail "the old venv no longer runs"
[ -z "$(leftovers)" ] || fail "left behind: $(leftovers)"
echo PASS
