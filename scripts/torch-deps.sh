#!/usr/bin/env bash
# Installs the libtorch pilot builds against: the pinned wheels of requirements-torch.txt
# (PyTorch and the two nvidia wheels its libtorch_cpu loads) into the virtual environment
# build/venv (never system-wide), checked against their sha256 pins; with --cuda, those of
# requirements-cuda.txt too (the CUDA path, preset cuda). Run after scripts/deps.sh, which
# installs python3-venv. A venv installed from the same requirements files is kept as it is;
# a new one is built beside it (VENV_DIR.new) and moved into place only once every wheel is
# installed, so a failed download leaves the old one working. Prints the download size.
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
venv=${venv:-$root/build/venv}
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
rm -rf "$new"
temps+=("$new")
# Built at its final path's name (.new), then moved: a venv's scripts name their own path, so
# pip is always run as `python -m pip`, and python finds its venv from its own location.
/usr/bin/python3 -m venv "$new"
fetch_install "$new/bin/python" "$req"
echo "$want_base" >"$new/$stamp_name"
if [ $cuda = 1 ]; then
  fetch_install "$new/bin/python" "$req_cuda"
  echo "$want_cuda" >>"$new/$stamp_name"
fi
rm -rf "$venv"
mv "$new" "$venv"
echo "pilot: torch: $(du -sh "$venv" | cut -f1) installed in $venv in $((SECONDS - start)) s" >&2
