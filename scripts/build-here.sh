#!/usr/bin/env bash
# Builds pilot against the PyTorch already installed on this machine: the one command for a
# rented GPU machine (docs/building.md, "On a GPU machine: one command").
#
#   scripts/build-here.sh [--python PY] [--build-dir DIR] [--wheels DIR] [--cpu]
#                         [--configure-only] [-- CMAKE_ARGS...]
#
# The Python (default: python3, or $PILOT_PYTHON) must import torch. Its package folder
# (torch.utils.cmake_prefix_path, two levels up) is imported by cmake/PilotTorch.cmake without
# find_package(Torch): so no nvcc and no CUDA toolkit is needed. A CUDA build of torch links
# libtorch_cuda too (not with --cpu), compiled against the CUDA runtime headers of the nvidia
# wheel pip installed beside it. Those include crt/host_config.h, which neither CUDA 13's
# runtime wheel nor CUDA 12's holds: it is in nvidia-cuda-crt (CUDA 13, 134 kB) or
# nvidia-cuda-nvcc-cu12 (CUDA 12, 40 MB). Where it is missing, the wheel of the runtime's
# major.minor is taken from --wheels DIR (carried along, as scripts/gpu-check.sh --fetch-debs
# downloads it) or from PyPI, checked against requirements-cuda.txt's sha256 where that pins
# the same version (else its sha256 is printed), and its headers are unpacked into the build
# folder; the machine's Python is never changed. -DPILOT_CUDA_INCLUDE_DIR=... after -- names
# the headers instead (a CUDA toolkit's include folder). A ROCm build goes through
# find_package(Torch) (its TorchConfig needs the ROCm installation the machine has). A release
# build, no tests, in build/here unless --build-dir says otherwise; then prints the binary's path.
# Needs cmake, a C++17 compiler and the Debian -dev packages of requirements-rebuild.txt (or
# their headers carried along: scripts/gpu-check.sh --debs).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
py=${PILOT_PYTHON:-python3}
build=$root/build/here
configure_only=0
cpu_only=0
wheels=""
while [ $# -gt 0 ]; do
  case $1 in
    --python) py=$2; shift 2 ;;
    --build-dir) build=$(realpath -m -- "$2"); shift 2 ;;
    --wheels) wheels=$2; shift 2 ;;
    --configure-only) configure_only=1; shift ;;
    --cpu) cpu_only=1; shift ;;
    --) shift; break ;;
    -h|--help) awk 'NR > 1 && !/^#/ { exit } NR > 1' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
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
# CMAKE_ARGS that name the CUDA headers themselves (-DPILOT_CUDA_INCLUDE_DIR=..., with a type,
# or -D and the setting as two words): nothing is fetched.
own_cuda_inc=0
for a in "$@"; do
  case $a in -DPILOT_CUDA_INCLUDE_DIR[=:]* | PILOT_CUDA_INCLUDE_DIR[=:]*) own_cuda_inc=1 ;; esac
done
if [ "$cpu_only" = 1 ]; then
  # libtorch_cpu alone, whatever the torch was built for (a CUDA or a ROCm wheel has it too).
  args+=("-DPILOT_TORCH_DIR=$torch_dir" -DPILOT_TORCH_CUDA=OFF)
  kind="CPU (--cpu), libtorch_cpu imported"
  [ -z "$cuda$hip" ] || kind+=" from a ${hip:+ROCm $hip}${cuda:+CUDA $cuda} build"
elif [ -n "$hip" ]; then
  # The torch folder itself too, so that libc10/libtorch come from this PyTorch even where a
  # system libtorch also exists (TorchConfig's find_library searches system paths first).
  # The wheel import is switched off, in case the build folder was configured with it before.
  args+=("-DCMAKE_PREFIX_PATH=$prefix;$(dirname "$(dirname "$prefix")")" -DPILOT_TORCH_DIR= -DPILOT_TORCH_CUDA=OFF)
  kind="ROCm $hip, through find_package(Torch)"
elif [ -n "$cuda" ] && [ -f "$torch_dir/lib/libtorch_cuda.so" ]; then
  args+=("-DPILOT_TORCH_DIR=$torch_dir" -DPILOT_TORCH_CUDA=ON)
  kind="CUDA $cuda, libtorch_cuda imported"
  site=$(dirname "$torch_dir")
  major=${cuda%%.*}
  # Where each CUDA major's wheels put the runtime headers, and which wheel holds crt/.
  case $major in
    13) inc=$site/nvidia/cu13/include runtime_dist=nvidia-cuda-runtime crt_dist=nvidia-cuda-crt
        crt_file=nvidia_cuda_crt crt_inc=nvidia/cu13/include ;;
    12) inc=$site/nvidia/cuda_runtime/include runtime_dist=nvidia-cuda-runtime-cu12 crt_dist=nvidia-cuda-nvcc-cu12
        crt_file=nvidia_cuda_nvcc_cu12 crt_inc=nvidia/cuda_nvcc/include ;;
    *) inc="" ;;
  esac
  crt=$build/cuda-crt
  if [ "$own_cuda_inc" = 1 ]; then
    :
  elif [ -z "$inc" ]; then
    echo "build-here: error: torch $version is built for CUDA $cuda, whose wheels' header layout pilot does not know:" \
         "pass -- -DPILOT_CUDA_INCLUDE_DIR='<a CUDA $cuda toolkit>/include'" >&2
    exit 3
  elif [ -f "$inc/cuda_runtime_api.h" ] && [ -f "$inc/crt/host_config.h" ]; then
    args+=(-DPILOT_CUDA_INCLUDE_DIR=)  # the wheels beside torch have it all (PilotTorch.cmake finds them)
  elif [ -f "$inc/cuda_runtime_api.h" ]; then
    runtime=$("$py" -c "import importlib.metadata as m; print(m.version('$runtime_dist'))" 2>/dev/null || true)
    series=$(echo "${runtime:-$cuda}" | cut -d. -f1-2)
    # What an earlier run unpacked is used again only for the same series (crt/ of 13.0 with
    # the runtime headers of 13.1 would not be a pair).
    from=$crt/unpacked-from.txt
    if [ -f "$crt/$crt_inc/crt/host_config.h" ] && [ "$(cut -d' ' -f1 "$from" 2>/dev/null)" = "$series" ]; then
      echo "build-here: crt/ headers unpacked earlier from $(cut -d' ' -f2 "$from")" >&2
    else
      rm -rf "$crt"
      mkdir -p "$crt"
      # The pin of this wheel in requirements-cuda.txt: its version and every sha256 it lists
      # (one per platform), where it pins this series.
      pin=$(awk -v d="$crt_dist==$series." 'index($0, d) == 1 { on = 1 } on { print; if ($0 !~ /\\$/) exit }' "$root/requirements-cuda.txt")
      pin_version=$(echo "$pin" | sed -n '1s/^[^=]*==\([^ ]*\).*/\1/p')
      pin_shas=$(echo "$pin" | grep -o 'sha256:[0-9a-f]*' | cut -d: -f2 || true)
      whl=""
      if [ -n "$wheels" ]; then
        whl=$(ls "$wheels"/"$crt_file"-"$series".*.whl 2>/dev/null | sort -V | tail -1 || true)
      fi
      if [ -z "$whl" ]; then
        echo "build-here: fetching $crt_dist==$series.* from PyPI (crt/ headers for the CUDA $series runtime headers)" >&2
        download=$crt/download
        mkdir -p "$download"
        if [ -n "$pin" ]; then
          "$py" -m pip download -q --no-deps --only-binary=:all: --require-hashes -r <(echo "$pin") -d "$download" >&2 ||
            { echo "build-here: error: downloading $crt_dist==$pin_version with requirements-cuda.txt's sha256 failed (above):" \
                   "carry the wheel (--wheels DIR), or pass -- -DPILOT_CUDA_INCLUDE_DIR='$inc;<a CUDA $series toolkit>/include'" >&2; exit 3; }
        else
          "$py" -m pip download -q --no-deps --only-binary=:all: "$crt_dist==$series.*" -d "$download" >&2 ||
            { echo "build-here: error: no $crt_dist $series wheel: carry it (--wheels DIR; scripts/gpu-check.sh --fetch-debs DIR downloads CUDA 13.0's)," \
                   "or pass -- -DPILOT_CUDA_INCLUDE_DIR='$inc;<a CUDA $series toolkit>/include'" >&2; exit 3; }
        fi
        whl=$(ls "$download"/"$crt_file"-*.whl | sort -V | tail -1)
      fi
      # A carried folder is not trusted: only a regular file (never a FIFO, which would block
      # the hash) is read.
      [ -f "$whl" ] || { echo "build-here: error: $whl is not a regular file" >&2; exit 3; }
      got_sha=$(sha256sum "$whl" | cut -d' ' -f1)
      if [ -n "$pin_version" ] && [ "$(basename "$whl" | cut -d- -f2)" = "$pin_version" ]; then
        echo "$pin_shas" | grep -qxF "$got_sha" ||
          { echo "build-here: error: $whl has sha256 $got_sha, but requirements-cuda.txt pins $crt_dist $pin_version to" \
                 "$(echo $pin_shas | sed 's/ / or /g')" >&2; exit 3; }
        echo "build-here: $(basename "$whl") matches requirements-cuda.txt's sha256" >&2
      else
        echo "build-here: $(basename "$whl") is not pinned by requirements-cuda.txt; its sha256 is $got_sha" >&2
      fi
      "$py" - "$whl" "$crt" "$crt_inc" <<'PY' || exit 3
import sys, zipfile
# Only the headers under the include folder, by name, inside the target: a wheel is a zip,
# and nothing else of it is unpacked or run.
# A damaged wheel or a header claiming more than 16 MiB stops with exit 3, never a traceback.
whl, out, inc = sys.argv[1:4]
try:
    with zipfile.ZipFile(whl) as z:
        for info in z.infolist():
            name = info.filename
            parts = name.split("/")
            if name.startswith(inc + "/") and name.endswith((".h", ".hpp")) and ".." not in parts:
                if info.file_size > 16 << 20:
                    sys.exit(f"build-here: error: {whl}: {name} claims {info.file_size} bytes, more than a header")
                z.extract(info, out)
except (zipfile.BadZipFile, OSError, EOFError, ValueError) as e:
    sys.exit(f"build-here: error: {whl} is not a readable wheel: {e}")
PY
      rm -rf "$crt/download"
      [ -f "$crt/$crt_inc/crt/host_config.h" ] ||
        { echo "build-here: error: $(basename "$whl") holds no $crt_inc/crt/host_config.h" >&2; exit 3; }
      echo "$series $(basename "$whl") $got_sha" >"$from"
      echo "build-here: crt/ headers from $(basename "$whl")" >&2
    fi
    args+=("-DPILOT_CUDA_INCLUDE_DIR=$inc;$crt/$crt_inc")
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
