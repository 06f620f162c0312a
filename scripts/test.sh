#!/usr/bin/env bash
# The README's test command (and CI's, .ci/run): every test of the project, in five parts
# (docs/testing.md, "What the test command runs"):
#   deps      the Debian packages of requirements-rebuild.txt that are missing, [test] and
#             [debian] ones too, and the pinned PyTorch wheels in build/venv (--cuda: all)
#   default   the dev preset (the wheel's libtorch_cpu) built with warnings as errors, then
#             every ctest test once
#   core      the core library and its unit tests built without libtorch (preset core)
#   cuda      the CUDA path (preset cuda): the wheel's libtorch_cuda too, no nvcc; its subset
#   sanitize  scripts/sanitize.sh: ASan + UBSan build against Debian's libtorch 1.13, unit
#             tests, the sanitize suites, fuzzers
# Each part's minutes are printed as it ends, and all of them at the end. The compiler cache
# (build/ccache) lets core and cuda reuse what the default build compiled.
# Arguments go to the first ctest (e.g. `scripts/test.sh -LE slow`); SKIP_SANITIZE=1 skips
# core, cuda and sanitize while you work; SKIP_CUDA=1 skips cuda alone.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

start=$SECONDS
part_name=""
part_start=$SECONDS
done_parts=()
minutes() { printf '%d min %02d s' $(($1 / 60)) $(($1 % 60)); }
# part NAME: ends the part running (printing its minutes), then begins NAME ("" ends the last).
part() {
  if [ -n "$part_name" ]; then
    local took=$((SECONDS - part_start))
    done_parts+=("$(printf '%-9s %s' "$part_name" "$(minutes "$took")")")
    echo "test: part $part_name: $(minutes "$took") (total $(minutes $((SECONDS - start))))"
  fi
  part_name=$1
  part_start=$SECONDS
  [ -z "$part_name" ] || echo "test: part $part_name begins"
}
summary() {
  local rc=$?
  [ -z "$part_name" ] || part ""
  echo "test: minutes by part:"
  printf '  %s\n' "${done_parts[@]}"
  echo "test: total $(minutes $((SECONDS - start)))$([ "$rc" = 0 ] || echo ", FAILED (exit $rc)")"
}
trap summary EXIT

part deps
scripts/deps.sh --test --debian
scripts/torch-deps.sh --cuda

part default
cmake --preset dev
cmake --build --preset dev
ctest --preset dev "$@"

if [ "${SKIP_SANITIZE:-0}" != 1 ]; then
  # The core never needs libtorch: it builds and passes its unit tests without it.
  part core
  cmake --preset core
  cmake --build --preset core
  ctest --test-dir build/core -L 'unit|lint' --output-on-failure -j2
fi
if [ "${SKIP_CUDA:-0}" != 1 ] && [ "${SKIP_SANITIZE:-0}" != 1 ]; then
  # The CUDA path: the same wheel with libtorch_cuda and libc10_cuda linked too, compiled
  # against the nvidia-cuda-runtime wheel's headers (no nvcc, as on a GPU machine's runtime
  # image: scripts/build-here.sh), with warnings as errors; then the `flavour` subset of the
  # tests (the stage, doctor, the default pilot, the model formats). No GPU is needed: the
  # gpu-labelled test skips where there is none.
  part cuda
  cmake --preset cuda
  cmake --build --preset cuda --target pilot pilot_torch_tests
  # The .pt2 packages are the wheel's Python's output, whichever pilot build loads them: where
  # the default part exported them (e2e.pt2_export) after the models, the script and the
  # pinned wheels last changed, the CUDA build's e2e.pt2 loads those rather than exporting
  # again (about 35 s).
  reuse=()
  fresh=1
  for f in langid langid-embed; do
    [ -s "build/dev/pt2/$f.pt2" ] && [ "build/dev/pt2/$f.pt2" -nt "data/models/$f/$f.pt" ] &&
      [ "build/dev/pt2/$f.pt2" -nt scripts/export-pt2.py ] && [ "build/dev/pt2/$f.pt2" -nt requirements-torch.txt ] ||
      fresh=0
  done
  if [ "$fresh" = 1 ]; then
    mkdir -p build/cuda/pt2
    cp build/dev/pt2/langid.pt2 build/dev/pt2/langid-embed.pt2 build/cuda/pt2/
    reuse=(-E '^e2e\.pt2_export$' -FA '^pt2$')
  fi
  ctest --preset cuda -L "flavour|torch" "${reuse[@]}"
fi
if [ "${SKIP_SANITIZE:-0}" != 1 ]; then
  part sanitize
  scripts/sanitize.sh
fi
