#!/usr/bin/env bash
# Installs the libtorch pilot builds against: the pinned wheels of requirements-torch.txt
# (PyTorch and the two nvidia wheels its libtorch_cpu loads) into the virtual environment
# build/venv (never system-wide), checked against their sha256 pins. Run after
# scripts/deps.sh, which installs python3-venv. A venv installed from the same
# requirements file is kept as it is. Prints the download size.
# Usage: scripts/torch-deps.sh [VENV_DIR]   (default build/venv)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:-$root/build/venv}
req=$root/requirements-torch.txt
stamp=$venv/.pilot-requirements.sha256
want=$(sha256sum "$req" | cut -d' ' -f1)
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$venv/bin/python" ]; then
  exit 0
fi
start=$SECONDS
# Replaces only a virtual environment (or nothing): never a folder that is something else.
if [ -e "$venv" ] && [ ! -f "$venv/pyvenv.cfg" ]; then
  echo "pilot: error: $venv exists and is not a virtual environment (no pyvenv.cfg); not replacing it" >&2
  exit 1
fi
rm -rf "$venv"
mkdir -p "$(dirname "$venv")"
/usr/bin/python3 -m venv "$venv"
wheels=$(mktemp -d "$(dirname "$venv")/wheels.XXXXXX")
trap 'rm -rf "$wheels"' EXIT
# Download first (to report the size), then install from those files alone.
"$venv/bin/python" -m pip download -q --no-deps --require-hashes --only-binary=:all: -r "$req" -d "$wheels"
bytes=$(du -sb "$wheels" | cut -f1)
echo "pilot: torch: downloaded $((bytes / 1000000)) MB of wheels ($(ls "$wheels" | wc -l) files) in $((SECONDS - start)) s" >&2
"$venv/bin/python" -m pip install -q --no-index --no-deps --require-hashes --only-binary=:all: \
  --find-links "$wheels" -r "$req"
echo "$want" >"$stamp"
echo "pilot: torch: $(du -sh "$venv" | cut -f1) installed in $venv in $((SECONDS - start)) s" >&2
