# The build's choice of libtorch fails clearly, naming what is missing, and never half-way:
# scripts/build-here.sh with a Python that cannot import torch (exit 3), then
# cmake/PilotTorch.cmake refusing a folder that is no PyTorch package, a torch older than the
# C++11-ABI wheels, and a CUDA path whose runtime headers lack crt/ (CUDA 13 ships it in
# nvidia-cuda-crt); build-here.sh's crt/ headers from a carried wheel (a wrong sha256 refused,
# an unpinned one named by its sha256, a hostile one unpacked only inside the build folder, a
# second run using what the first unpacked), a CUDA major it does not know, and --cpu; and
# build-here.sh configuring against the wheel's venv (PILOT_PYTHON).
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

# A CUDA toolkit's layout named instead: its headers with crt/, libcudart in ../lib64.
mkdir -p tk/include/crt tk/lib64
: >tk/include/cuda_runtime_api.h
: >tk/include/crt/host_config.h
: >tk/lib64/libcudart.so.13
configure c5 -DPILOT_TORCH_DIR="$torch_dir" -DPILOT_TORCH_CUDA=ON -DPILOT_CUDA_INCLUDE_DIR="$WORK/tk/include" \
  || { cat c5.log; fail "a toolkit's include and lib64 were not accepted"; }
expect_in c5.log "$WORK/tk/lib64/libcudart.so.13"

# A stand-in Python whose torch is a CUDA 13.0 build beside runtime headers without crt/ (the
# real wheel's libraries, a site folder of its own): build-here.sh must find crt/ elsewhere.
site=$WORK/site
mkdir -p "$site/nvidia/cu13/include" "$site/nvidia/cu13/lib"
ln -s "$torch_dir" "$site/torch"
: >"$site/nvidia/cu13/include/cuda_runtime_api.h"
: >"$site/nvidia/cu13/lib/libcudart.so.13"
cat >fakepy <<EOF
#!/bin/bash
if [ "\${1:-}" = -c ]; then
  case \$2 in
    *importlib.metadata*) echo "\${FAKE_RUNTIME:-13.0.96}" ;;
    *) printf '%s\n' "$torch_dir/share/cmake" "$site/torch" 2.11.0 "\${FAKE_CUDA-13.0}" "\${FAKE_HIP:-}" ;;
  esac
  exit 0
fi
[ "\${1:-}" = -m ] && { echo "no network here" >&2; exit 1; }
exec python3 "\$@"
EOF
chmod +x fakepy
crt_wheel() {  # crt_wheel FILE [EXTRA_NAME]: a wheel-shaped zip with crt/host_config.h
  python3 - "$@" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w") as z:
    z.writestr("nvidia/cu13/include/crt/host_config.h", "/* crt */\n")
    z.writestr("nvidia/cu13/include/crt/host_defines.h", "/* crt */\n")
    for extra in sys.argv[2:]:
        z.writestr(extra, "/* not a header pilot unpacks */\n")
PY
}
here() {  # here NAME ARGS...: build-here.sh --configure-only with the stand-in; output in NAME.out
  local name=$1 opts=(); shift
  while [ $# -gt 0 ] && [ "$1" != -- ]; do opts+=("$1"); shift; done
  [ $# = 0 ] || shift
  bash "$SRC/scripts/build-here.sh" --python ./fakepy --build-dir "$name" --configure-only "${opts[@]}" \
    -- -DPILOT_BUILD_TESTS=OFF -DPILOT_CCACHE=OFF "$@" >"$name.raw" 2>&1
  local rc=$?
  tr -s ' \n' ' ' <"$name.raw" >"$name.out"
  return $rc
}
# The pinned version with other bytes: refused, naming both sha256s.
mkdir w1 && crt_wheel w1/nvidia_cuda_crt-13.0.88-py3-none-manylinux_2_27_x86_64.whl
rc=0; here b6 --wheels "$WORK/w1" || rc=$?
[ "$rc" = 3 ] || { cat b6.out; fail "a crt wheel with the wrong sha256 exited $rc, expected 3"; }
expect_in b6.out "but requirements-cuda.txt pins nvidia-cuda-crt 13.0.88 to 2c8043c7c9e02492716426e9919fc78d2c5b3b2a7a768a88e952676b08aa55a4"
[ ! -e b6/cuda-crt/nvidia ] || fail "the refused wheel was unpacked"
# An unpinned version of the series, with entries that try to leave the include folder:
# its sha256 is printed, only the headers under nvidia/cu13/include are unpacked.
mkdir w2 && crt_wheel w2/nvidia_cuda_crt-13.0.48-py3-none-manylinux_2_27_x86_64.whl \
  "nvidia/cu13/include/../../../../escaped.h" "../outside.h" "nvidia/cu13/bin/tool.h"
here b7 --wheels "$WORK/w2" || { cat b7.out; fail "an unpinned crt wheel of the series was not used"; }
expect_in b7.out "nvidia_cuda_crt-13.0.48-py3-none-manylinux_2_27_x86_64.whl is not pinned by requirements-cuda.txt; its sha256 is $(sha256sum w2/*.whl | cut -d' ' -f1)"
expect_in b7.out "crt/ in $WORK/b7/cuda-crt/nvidia/cu13/include"
expect_in b7.out "(cuda)"
[ -f b7/cuda-crt/nvidia/cu13/include/crt/host_config.h ] || fail "crt/ was not unpacked"
[ -z "$(find "$WORK" -name escaped.h -o -name outside.h -o -name tool.h)" ] || fail "a wheel entry outside the include folder was unpacked"
# A carried folder is not trusted: a FIFO named like the wheel (never opened: it would block),
# a file that is no zip, and a header of more than 16 MiB each stop with exit 3 and a message.
mkdir w3 && mkfifo w3/nvidia_cuda_crt-13.0.47-py3-none-manylinux_2_27_x86_64.whl
rc=0; timeout 60 bash "$SRC/scripts/build-here.sh" --python ./fakepy --build-dir b13 --configure-only --wheels "$WORK/w3" \
  -- -DPILOT_BUILD_TESTS=OFF -DPILOT_CCACHE=OFF >b13.out 2>&1 || rc=$?
[ "$rc" = 3 ] || { cat b13.out; fail "a FIFO in the carried folder exited $rc, expected 3"; }
expect_in b13.out "nvidia_cuda_crt-13.0.47-py3-none-manylinux_2_27_x86_64.whl is not a regular file"
mkdir w4 && echo "not a zip" >w4/nvidia_cuda_crt-13.0.47-py3-none-manylinux_2_27_x86_64.whl
rc=0; here b14 --wheels "$WORK/w4" || rc=$?
[ "$rc" = 3 ] || { cat b14.out; fail "a damaged wheel exited $rc, expected 3"; }
expect_in b14.out "is not a readable wheel"
expect_not_in b14.out "Traceback"
mkdir w5 && python3 - w5/nvidia_cuda_crt-13.0.47-py3-none-manylinux_2_27_x86_64.whl <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w", zipfile.ZIP_DEFLATED) as z:
    z.writestr("nvidia/cu13/include/crt/host_config.h", b"\0" * (17 << 20))
PY
rc=0; here b15 --wheels "$WORK/w5" || rc=$?
[ "$rc" = 3 ] || { cat b15.out; fail "a 17 MiB header exited $rc, expected 3"; }
expect_in b15.out "claims 17825792 bytes, more than a header"
[ ! -e b15/cuda-crt/nvidia ] || fail "the oversized header was unpacked"
# Run again without the wheel: what the first run unpacked is used, nothing fetched.
here b7 || { cat b7.out; fail "a second run did not use the unpacked crt/"; }
expect_in b7.out "crt/ headers unpacked earlier from nvidia_cuda_crt-13.0.48"
expect_in b7.out "crt/ in $WORK/b7/cuda-crt/nvidia/cu13/include"
expect_not_in b7.out "fetching"
# The runtime upgraded to 13.1: crt/ of 13.0 is not its pair, so it is fetched again (and with
# no network and no 13.1 pin, the build stops).
rc=0; FAKE_RUNTIME=13.1.80 here b7 || rc=$?
[ "$rc" = 3 ] || { cat b7.out; fail "crt/ of 13.0 was reused for the 13.1 runtime (exit $rc)"; }
expect_in b7.out "no nvidia-cuda-crt 13.1 wheel: carry it"
[ ! -e b7/cuda-crt/nvidia ] || fail "crt/ of 13.0 was kept beside the 13.1 runtime"
# The headers named by the caller (-D and the setting as two words, with a type): nothing
# fetched (the stand-in has no network).
here b8 -- -D PILOT_CUDA_INCLUDE_DIR:STRING="$site/nvidia/cu13/include;$WORK/tk/include" \
  || { cat b8.out; fail "PILOT_CUDA_INCLUDE_DIR after -- was not taken as it is"; }
expect_not_in b8.out "fetching"
expect_in b8.out "crt/ in $WORK/tk/include"
# Nothing carried and no network: exit 3, naming the ways out.
rc=0; here b9 || rc=$?
[ "$rc" = 3 ] || { cat b9.out; fail "no crt wheel and no network exited $rc, expected 3"; }
expect_in b9.out "downloading nvidia-cuda-crt==13.0.88 with requirements-cuda.txt's sha256 failed"
expect_in b9.out "carry the wheel (--wheels DIR)"
# A CUDA major whose wheel layout is unknown: exit 3, never a guess.
rc=0; FAKE_CUDA=11.8 here b10 || rc=$?
[ "$rc" = 3 ] || { cat b10.out; fail "CUDA 11.8 exited $rc, expected 3"; }
expect_in b10.out "built for CUDA 11.8, whose wheels' header layout pilot does not know"
# --cpu: libtorch_cpu alone, no CUDA headers wanted, from a CUDA or a ROCm torch.
here b11 --cpu || { cat b11.out; fail "--cpu did not configure"; }
expect_in b11.out "CPU (--cpu), libtorch_cpu imported from a CUDA 13.0 build"
expect_in b11.out "(cpu)"
FAKE_CUDA= FAKE_HIP=6.4 here b11 --cpu || { cat b11.out; fail "--cpu from a ROCm torch did not configure"; }
expect_in b11.out "CPU (--cpu), libtorch_cpu imported from a ROCm 6.4 build"
# A relative --build-dir: the crt/ folder handed to CMake is absolute (CMake runs elsewhere).
mkdir rel && here rel/b12 --wheels "$WORK/w2" || { cat rel/b12.out; fail "a relative --build-dir did not configure"; }
grep -qF "PILOT_CUDA_INCLUDE_DIR:STRING=$site/nvidia/cu13/include;$WORK/rel/b12/cuda-crt/nvidia/cu13/include" rel/b12/CMakeCache.txt \
  || { grep PILOT_CUDA_INCLUDE_DIR rel/b12/CMakeCache.txt; fail "the crt/ folder of a relative --build-dir is not absolute"; }

# The wheel's venv: the CPU import by default; build-here.sh takes the CUDA path of a CUDA wheel.
configure c4 -DPILOT_TORCH_DIR="$torch_dir" || { cat c4.log; fail "the wheel's torch did not configure"; }
expect_in c4.log "pilot: libtorch imported from $torch_dir"
expect_in c4.log "(cpu)"
if [ ! -f "$(dirname "$torch_dir")/nvidia/cu13/include/crt/host_config.h" ]; then
  # build-here.sh would fetch crt/ from PyPI: the test command's venv has it (torch-deps.sh --cuda).
  echo "note: the venv lacks nvidia-cuda-crt (scripts/torch-deps.sh --cuda): its CUDA configure not run"
else
  bash "$SRC/scripts/build-here.sh" --python "$PILOT_PYTHON" --build-dir "$WORK/b5" --configure-only -- -DPILOT_BUILD_TESTS=OFF -DPILOT_CCACHE=OFF >b5.out 2>&1 \
    || { cat b5.out; fail "build-here.sh did not configure against the wheel"; }
  expect_in b5.out "build-here: torch 2."
  expect_in b5.out "libtorch_cuda imported"
  expect_in b5.out "pilot: libtorch 2."
  expect_in b5.out "(cuda)"
  expect_not_in b5.out "fetching"
fi
echo PASS
