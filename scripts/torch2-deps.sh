#!/usr/bin/env bash
# Installs what the torch2 flavour needs and is missing, like scripts/deps.sh does for the
# default: the Debian packages of requirements-rebuild.txt (with python3-venv), then the pinned
# wheels of requirements-torch2.txt into the virtual environment build/torch2/venv (never
# system-wide), checked against their sha256 pins. A venv installed from the same
# requirements file is kept as it is. Prints the download size.
# Usage: scripts/torch2-deps.sh [VENV_DIR]   (default build/torch2/venv)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:-$root/build/torch2/venv}
req=$root/requirements-torch2.txt
"$root/scripts/deps.sh" --torch2
cuda=${PILOT_CUDA_HOME:-/usr/local/cuda}
if [ ! -x "$cuda/bin/nvcc" ]; then
  echo "pilot: error: the torch2 flavour compiles its CUDA code with the CUDA 13 toolkit, and $cuda/bin/nvcc is missing" >&2
  echo "  install the CUDA 13 toolkit there, or point PILOT_CUDA_HOME at it" >&2
  exit 1
fi
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
echo "pilot: torch2: downloaded $((bytes / 1000000)) MB of wheels ($(ls "$wheels" | wc -l) files) in $((SECONDS - start)) s" >&2
"$venv/bin/python" -m pip install -q --no-index --no-deps --require-hashes --only-binary=:all: \
  --find-links "$wheels" -r "$req"
echo "$want" >"$stamp"
echo "pilot: torch2: $(du -sh "$venv" | cut -f1) installed in $venv in $((SECONDS - start)) s" >&2
