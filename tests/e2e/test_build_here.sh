# The build's choice of libtorch fails clearly, naming what is missing, and never half-way:
# scripts/build-here.sh with a Python that cannot import torch (exit 3), then
# cmake/PilotTorch.cmake refusing a folder that is no PyTorch package, a torch older than the
# C++11-ABI wheels, and a CUDA path whose runtime headers lack crt/ (CUDA 13 ships it in
# nvidia-cuda-crt); and build-here.sh configuring against the wheel's venv (PILOT_PYTHON).
source "$(dirname "$0")/lib.sh"
[ -n "${PILOT_PYTHON:-}" ] || { echo "SKIP: no PILOT_PYTHON (a build without the wheel's venv)"; exit 77; }
torch_dir=$("$PILOT_PYTHON" -c 'import os, torch; print(os.path.dirname(torch.__file__))' 2>/dev/null)
configure() {  # configure NAME CMAKE_ARGS...: a configure-only tree; output in NAME.log, one line
  local name=$1; shift
  local rc=0
  cmake -S "$SRC" -B "$WORK/$name" -G Ninja -DPILOT_BUILD_TESTS=OFF -DPILOT_CCACHE=OFF -DPILOT_TORCH_VENV= "$@" >"$name.raw" 2>&1 || rc=$?
  tr -s ' \n' ' ' <"$name.raw" >"$name.log"  # CMake wraps its messages
  return $rc
}

# A Python without torch: exit 3, nothing configured.
printf '#!/bin/sh\necho "ModuleNotFoundError: No module named torch" >&2\nexit 1\n' >nopython
chmod +x nopython
rc=0
bash "$SRC/scripts/build-here.sh" --python ./nopython --build-dir "$WORK/b0" --configure-only >b0.out 2>b0.err || rc=$?
[ "$rc" = 3 ] || { cat b0.err; fail "build-here.sh without torch exited $rc, expected 3"; }
expect_in b0.err "./nopython cannot import torch"
expect_in b0.err "No module named torch"
[ ! -e "$WORK/b0" ] || fail "build-here.sh configured a tree without torch"

# Not a PyTorch package folder.
mkdir -p notorch/lib
if configure c1 -DPILOT_TORCH_DIR="$WORK/notorch"; then fail "a folder without libtorch was accepted"; fi
expect_in c1.log "$WORK/notorch is not a PyTorch package folder: lib/libc10.so is missing"

# A torch older than 2.6 (pre-C++11 ABI wheels), stated by its headers.
mkdir -p old/lib old/include/torch/headeronly
: >old/lib/libc10.so
: >old/lib/libtorch_cpu.so
printf '#define TORCH_VERSION_MAJOR 2\n#define TORCH_VERSION_MINOR 5\n#define TORCH_VERSION_PATCH 1\n' >old/include/torch/headeronly/version.h
if configure c2 -DPILOT_TORCH_DIR="$WORK/old"; then fail "torch 2.5.1 was accepted"; fi
expect_in c2.log "torch 2.5.1 in $WORK/old: pilot imports wheels of torch 2.6 or later"

# The CUDA path with runtime headers but no crt/: refused by name, although this machine's
# compiler might find a crt/ of its own elsewhere.
mkdir -p cuda/include cuda/lib
: >cuda/include/cuda_runtime_api.h
: >cuda/lib/libcudart.so.13
if configure c3 -DPILOT_TORCH_DIR="$torch_dir" -DPILOT_TORCH_CUDA=ON -DPILOT_CUDA_INCLUDE_DIR="$WORK/cuda/include"; then
  fail "CUDA headers without crt/ were accepted"
fi
expect_in c3.log "crt/host_config.h is in none of $WORK/cuda/include"
expect_in c3.log "nvidia-cuda-crt"

# The wheel's venv: the CPU import by default; build-here.sh takes the CUDA path of a CUDA wheel.
configure c4 -DPILOT_TORCH_DIR="$torch_dir" || { cat c4.log; fail "the wheel's torch did not configure"; }
expect_in c4.log "pilot: libtorch imported from $torch_dir"
expect_in c4.log "(cpu)"
bash "$SRC/scripts/build-here.sh" --python "$PILOT_PYTHON" --build-dir "$WORK/b5" --configure-only -- -DPILOT_BUILD_TESTS=OFF -DPILOT_CCACHE=OFF >b5.out 2>&1 \
  || { cat b5.out; fail "build-here.sh did not configure against the wheel"; }
expect_in b5.out "build-here: torch 2."
expect_in b5.out "libtorch_cuda imported"
expect_in b5.out "pilot: libtorch 2."
expect_in b5.out "(cuda)"
echo PASS
