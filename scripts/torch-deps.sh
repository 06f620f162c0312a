#!/usr/bin/env bash
# Installs the libtorch pilot builds against: the pinned wheels of requirements-torch.txt
# (PyTorch and the two nvidia wheels its libtorch_cpu loads) into the virtual environment
# build/venv (never system-wide), checked against their sha256 pins; with --cuda, those of
# requirements-cuda.txt too (the CUDA path, preset cuda). Run after scripts/deps.sh, which
# installs python3-venv. A venv installed from the same requirements files is kept as it is;
# --cuda on one installed from requirements-torch.txt alone adds its wheels in place. Otherwise
# a new venv is built beside it (VENV_DIR.new) and renamed into place only once every wheel is
# installed, so a failed download leaves the old one working; only a venv this script made (its
# stamp) is ever replaced. Prints the download size.
# Usage: scripts/torch-deps.sh [--cuda] [VENV_DIR]   (default build/venv; in either order)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cuda=0
venv=""
for a in "$@"; do
  case $a in
    --cuda) cuda=1 ;;
    -*) echo "torch-deps: unknown option $a (usage: scripts/torch-deps.sh [--cuda] [VENV_DIR])" >&2; exit 2 ;;
    *) [ -z "$venv" ] || { echo "torch-deps: one VENV_DIR only" >&2; exit 2; }; venv=$a ;;
  esac
done
# Absolute and without a trailing slash, so that VENV.new and VENV.old lie beside it, never in it.
venv=$(realpath -m -- "${venv:-$root/build/venv}")
[ "$venv" != / ] || { echo "torch-deps: not a venv folder: /" >&2; exit 2; }
req=$root/requirements-torch.txt
req_cuda=$root/requirements-cuda.txt
# The stamp names each requirements file installed, by its sha256.
stamp_name=.pilot-requirements.sha256
stamp=$venv/$stamp_name
want_base="$(sha256sum "$req" | cut -d' ' -f1) requirements-torch.txt"
want_cuda="$(sha256sum "$req_cuda" | cut -d' ' -f1) requirements-cuda.txt"
installed() { [ -f "$stamp" ] && grep -qxF "$1" "$stamp"; }
if [ -x "$venv/bin/python" ] && installed "$want_base" && { [ $cuda = 0 ] || installed "$want_cuda"; }; then
  exit 0
fi
# Temporary folders (downloads, a venv being built) go when the script ends, however it ends.
temps=()
trap 'rm -rf "${temps[@]}"' EXIT
# fetch_install PYTHON FILE: downloads the file's wheels (to report the size), then installs
# from those files alone.
fetch_install() {
  local wheels
  wheels=$(mktemp -d "$(dirname "$venv")/wheels.XXXXXX")
  temps+=("$wheels")
  "$1" -m pip download -q --no-deps --require-hashes --only-binary=:all: -r "$2" -d "$wheels"
  echo "pilot: torch: downloaded $(( $(du -sb "$wheels" | cut -f1) / 1000000 )) MB of wheels ($(ls "$wheels" | wc -l) files) for $(basename "$2") in $((SECONDS - start)) s" >&2
  "$1" -m pip install -q --no-index --no-deps --require-hashes --only-binary=:all: \
    --find-links "$wheels" -r "$2"
  rm -rf "$wheels"
}
start=$SECONDS
if [ -x "$venv/bin/python" ] && installed "$want_base"; then
  # The default venv is there: add the CUDA path's wheels to it (a stale line for an earlier
  # requirements-cuda.txt is dropped first).
  fetch_install "$venv/bin/python" "$req_cuda"
  { grep -v ' requirements-cuda\.txt$' "$stamp" || true; echo "$want_cuda"; } >"$stamp.tmp"
  mv "$stamp.tmp" "$stamp"
  echo "pilot: torch: the CUDA path's wheels added to $venv in $((SECONDS - start)) s" >&2
  exit 0
fi
# Replaces only a virtual environment this script made (its stamp is there), or nothing:
# never a folder that is something else.
if [ -e "$venv" ] && { [ ! -f "$venv/pyvenv.cfg" ] || [ ! -f "$stamp" ]; }; then
  echo "pilot: error: $venv exists and is not a virtual environment made by scripts/torch-deps.sh" \
       "(no pyvenv.cfg or $stamp_name); not replacing it: remove it or name another VENV_DIR" >&2
  exit 1
fi
mkdir -p "$(dirname "$venv")"
new=$venv.new
old=$venv.old
# Left by an interrupted run, these two are this script's own; anything else of that name is not.
for d in "$new" "$old"; do
  if [ -e "$d" ] && [ ! -f "$d/pyvenv.cfg" ]; then
    echo "pilot: error: $d exists and is not a virtual environment; not replacing it" >&2
    exit 1
  fi
  rm -rf "$d"
done
temps+=("$new")
/usr/bin/python3 -m venv "$new"
fetch_install "$new/bin/python" "$req"
echo "$want_base" >"$new/$stamp_name"
if [ $cuda = 1 ]; then
  fetch_install "$new/bin/python" "$req_cuda"
  echo "$want_cuda" >>"$new/$stamp_name"
fi
# Two renames, then the old one goes: at no point is there no working venv but for the instant
# between the renames.
[ ! -e "$venv" ] || mv "$venv" "$old"
mv "$new" "$venv"
temps=("$old")
# A venv's scripts (activate, pip, torchrun) name the folder they were made in: now $venv.
/usr/bin/python3 - "$new" "$venv" <<'PY'
import os, sys
new, final = (p.encode() for p in sys.argv[1:3])
folder = sys.argv[2]
for name in ["pyvenv.cfg"] + [os.path.join("bin", n) for n in os.listdir(os.path.join(folder, "bin"))]:
    path = os.path.join(folder, name)
    if os.path.islink(path) or not os.path.isfile(path):
        continue
    with open(path, "rb") as f:
        data = f.read()
    if new in data:
        with open(path, "wb") as f:
            f.write(data.replace(new, final))
PY
echo "pilot: torch: $(du -sh "$venv" | cut -f1) installed in $venv in $((SECONDS - start)) s" >&2
