#!/usr/bin/env bash
# Installs the libtorch pilot builds against: the pinned wheels of requirements-torch.txt
# (PyTorch and the two nvidia wheels its libtorch_cpu loads) into the virtual environment
# build/venv (never system-wide), checked against their sha256 pins; with --cuda, those of
# requirements-cuda.txt too (the CUDA path, preset cuda). Run after scripts/deps.sh, which
# installs python3-venv. A venv installed from the same
# requirements file is kept as it is. Prints the download size.
# Usage: scripts/torch-deps.sh [--cuda] [VENV_DIR]   (default build/venv)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cuda=0
if [ "${1:-}" = --cuda ]; then cuda=1; shift; fi
venv=${1:-$root/build/venv}
req=$root/requirements-torch.txt
req_cuda=$root/requirements-cuda.txt
# The stamp names each requirements file installed, by its sha256.
stamp=$venv/.pilot-requirements.sha256
want_base="$(sha256sum "$req" | cut -d' ' -f1) requirements-torch.txt"
want_cuda="$(sha256sum "$req_cuda" | cut -d' ' -f1) requirements-cuda.txt"
installed() { [ -f "$stamp" ] && grep -qxF "$1" "$stamp"; }
if [ -x "$venv/bin/python" ] && installed "$want_base" && { [ $cuda = 0 ] || installed "$want_cuda"; }; then
  exit 0
fi
# fetch_install FILE: downloads the file's wheels (to report the size), then installs from
# those files alone.
fetch_install() {
  local wheels
  wheels=$(mktemp -d "$(dirname "$venv")/wheels.XXXXXX")
  "$venv/bin/python" -m pip download -q --no-deps --require-hashes --only-binary=:all: -r "$1" -d "$wheels" ||
    { rm -rf "$wheels"; return 1; }
  echo "pilot: torch: downloaded $(( $(du -sb "$wheels" | cut -f1) / 1000000 )) MB of wheels ($(ls "$wheels" | wc -l) files) for $(basename "$1") in $((SECONDS - start)) s" >&2
  "$venv/bin/python" -m pip install -q --no-index --no-deps --require-hashes --only-binary=:all: \
    --find-links "$wheels" -r "$1" || { rm -rf "$wheels"; return 1; }
  rm -rf "$wheels"
}
start=$SECONDS
if [ -x "$venv/bin/python" ] && installed "$want_base"; then
  # The default venv is there: add the CUDA path's wheels to it.
  fetch_install "$req_cuda"
  echo "$want_cuda" >>"$stamp"
  echo "pilot: torch: the CUDA path's wheels added to $venv in $((SECONDS - start)) s" >&2
  exit 0
fi
# Replaces only a virtual environment (or nothing): never a folder that is something else.
if [ -e "$venv" ] && [ ! -f "$venv/pyvenv.cfg" ]; then
  echo "pilot: error: $venv exists and is not a virtual environment (no pyvenv.cfg); not replacing it" >&2
  exit 1
fi
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
/usr/bin/python3 -m venv "$venv"
fetch_install "$req"
echo "$want_base" >"$stamp"
if [ $cuda = 1 ]; then
  fetch_install "$req_cuda"
  echo "$want_cuda" >>"$stamp"
fi
echo "pilot: torch: $(du -sh "$venv" | cut -f1) installed in $venv in $((SECONDS - start)) s" >&2
