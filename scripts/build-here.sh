#!/usr/bin/env bash
# Builds pilot against the PyTorch already installed on this machine: the one command for a
# rented GPU machine (docs/building.md, "On a GPU machine: one command").
#
#   scripts/build-here.sh [--python PY] [--build-dir DIR] [--configure-only] [-- CMAKE_ARGS...]
#
# The Python (default: python3, or $PILOT_PYTHON) must import torch. Its package folder
# (torch.utils.cmake_prefix_path, two levels up) is imported by cmake/PilotTorch.cmake without
# find_package(Torch): so no nvcc and no CUDA toolkit is needed. A CUDA build of torch links
# libtorch_cuda too, compiled against the CUDA runtime headers of the nvidia-cuda-runtime
# wheel that pip installed beside it. A ROCm build goes through find_package(Torch) (its
# TorchConfig needs the ROCm installation the machine has). A release build, no tests, in
# build/here unless --build-dir says otherwise; then prints the binary's path.
# Needs cmake, a C++17 compiler and the Debian -dev packages of requirements-rebuild.txt (or
# their headers carried along: scripts/gpu-check.sh --debs).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
py=${PILOT_PYTHON:-python3}
build=$root/build/here
configure_only=0
while [ $# -gt 0 ]; do
  case $1 in
    --python) py=$2; shift 2 ;;
    --build-dir) build=$2; shift 2 ;;
    --configure-only) configure_only=1; shift ;;
    --) shift; break ;;
    -h|--help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build-here: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

# One line of facts, read from the Python's torch: prefix, package folder, version, cuda, hip.
err=$(mktemp)
trap 'rm -f "$err"' EXIT
if ! facts=$("$py" -c 'import os, torch
print(torch.utils.cmake_prefix_path)
print(os.path.dirname(torch.__file__))
print(torch.__version__)
print(torch.version.cuda or "")
print(getattr(torch.version, "hip", None) or "")' 2>"$err"); then
  echo "build-here: error: $py cannot import torch:" >&2
  tail -3 "$err" >&2
  exit 3
fi
mapfile -t fact <<<"$facts"
prefix=${fact[0]:-} torch_dir=${fact[1]:-} version=${fact[2]:-} cuda=${fact[3]:-} hip=${fact[4]:-}
args=()
if [ -n "$hip" ]; then
  # The torch folder itself too, so that libc10/libtorch come from this PyTorch even where a
  # system libtorch also exists (TorchConfig's find_library searches system paths first).
  args+=("-DCMAKE_PREFIX_PATH=$prefix;$(dirname "$(dirname "$prefix")")")
  kind="ROCm $hip, through find_package(Torch)"
elif [ -n "$cuda" ] && [ -f "$torch_dir/lib/libtorch_cuda.so" ]; then
  args+=("-DPILOT_TORCH_DIR=$torch_dir" -DPILOT_TORCH_CUDA=ON)
  kind="CUDA $cuda, libtorch_cuda imported"
else
  args+=("-DPILOT_TORCH_DIR=$torch_dir" -DPILOT_TORCH_CUDA=OFF)
  kind="CPU, libtorch_cpu imported"
fi
echo "build-here: torch $version ($kind) from $torch_dir" >&2
gen=()
command -v ninja >/dev/null && gen=(-G Ninja)
cmake -S "$root" -B "$build" "${gen[@]}" -DCMAKE_BUILD_TYPE=Release -DPILOT_BUILD_TESTS=OFF \
  -DPILOT_TORCH_VENV= "${args[@]}" "$@"
[ "$configure_only" = 1 ] && exit 0
cmake --build "$build" --target pilot -j "$(nproc)"
echo "build-here: built $build/pilot" >&2
