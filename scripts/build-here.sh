#!/usr/bin/env bash
# Builds pilot against the PyTorch already installed on this machine: the one command for a
# rented GPU machine (docs/building.md, "On a GPU machine: one command").
#
#   scripts/build-here.sh [--python PY] [--build-dir DIR] [--wheels DIR] [--configure-only]
#                         [-- CMAKE_ARGS...]
#
# The Python (default: python3, or $PILOT_PYTHON) must import torch. Its package folder
# (torch.utils.cmake_prefix_path, two levels up) is imported by cmake/PilotTorch.cmake without
# find_package(Torch): so no nvcc and no CUDA toolkit is needed. A CUDA build of torch links
# libtorch_cuda too, compiled against the CUDA runtime headers of the nvidia-cuda-runtime
# wheel that pip installed beside it. Those include crt/host_config.h, which CUDA 13 ships in
# the nvidia-cuda-crt wheel (134 kB), not a dependency of torch: where it is missing, the
# wheel of the runtime's version is taken from --wheels DIR (carried along, as
# scripts/gpu-check.sh --fetch-debs downloads it) or downloaded from PyPI, and unpacked into
# the build folder; the machine's Python is never changed. A ROCm build goes through
# find_package(Torch) (its
# TorchConfig needs the ROCm installation the machine has). A release build, no tests, in
# build/here unless --build-dir says otherwise; then prints the binary's path.
# Needs cmake, a C++17 compiler and the Debian -dev packages of requirements-rebuild.txt (or
# their headers carried along: scripts/gpu-check.sh --debs).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
py=${PILOT_PYTHON:-python3}
build=$root/build/here
configure_only=0
wheels=""
while [ $# -gt 0 ]; do
  case $1 in
    --python) py=$2; shift 2 ;;
    --build-dir) build=$2; shift 2 ;;
    --wheels) wheels=$2; shift 2 ;;
    --configure-only) configure_only=1; shift ;;
    --) shift; break ;;
    -h|--help) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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
  site=$(dirname "$torch_dir")
  inc=$site/nvidia/cu13/include
  if [ -f "$inc/cuda_runtime_api.h" ] && [ ! -f "$inc/crt/host_config.h" ]; then
    # crt/ from the nvidia-cuda-crt wheel of the runtime's major.minor, into the build folder.
    runtime=$("$py" -c 'import importlib.metadata as m; print(m.version("nvidia-cuda-runtime"))' 2>/dev/null || true)
    series=$(echo "$runtime" | cut -d. -f1-2)
    [ -n "$series" ] || series=$cuda
    crt=$build/cuda-crt
    mkdir -p "$crt"
    whl=""
    if [ -n "$wheels" ]; then
      whl=$(ls "$wheels"/nvidia_cuda_crt-"$series".*.whl 2>/dev/null | sort | tail -1 || true)
    fi
    if [ -z "$whl" ]; then
      echo "build-here: fetching nvidia-cuda-crt==$series.* from PyPI (crt/ headers for the CUDA $series runtime headers)" >&2
      "$py" -m pip download -q --no-deps --only-binary=:all: "nvidia-cuda-crt==$series.*" -d "$crt" >&2 ||
        { echo "build-here: error: no nvidia-cuda-crt $series wheel: carry it (--wheels DIR; scripts/gpu-check.sh --fetch-debs DIR downloads it)," \
               "or pass -- -DPILOT_CUDA_INCLUDE_DIR='$inc;<a CUDA $series toolkit>/include'" >&2; exit 3; }
      whl=$(ls "$crt"/nvidia_cuda_crt-*.whl | tail -1)
    fi
    "$py" - "$whl" "$crt" <<'PY'
import sys, zipfile
# Only the headers, by name, inside the target: a wheel is a zip, and nothing else of it runs.
whl, out = sys.argv[1:3]
with zipfile.ZipFile(whl) as z:
    for name in z.namelist():
        parts = name.split("/")
        if name.startswith("nvidia/") and name.endswith((".h", ".hpp")) and ".." not in parts:
            z.extract(name, out)
PY
    args+=("-DPILOT_CUDA_INCLUDE_DIR=$inc;$crt/nvidia/cu13/include")
    echo "build-here: crt/ headers from $(basename "$whl")" >&2
  fi
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
