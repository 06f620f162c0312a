# `pilot doctor` states which libtorch flavour it runs on. On the CUDA path (preset cuda) on a
# machine without a GPU: a CUDA build, 0 devices, and could-not-run for every GPU check, exit 3
# when the GPU is asked for, and its module linked to the CUDA runtime. On the default build
# (the wheel's libtorch_cpu): a CPU build whose module links libtorch_cpu and never
# libtorch_cuda, so that it loads on a machine without the CUDA libraries.
source "$(dirname "$0")/lib.sh"
: "${PILOT_TORCH_FLAVOUR:?set by CMake: cpu, cuda or rocm}"
: "${PILOT_TORCH_VERSION:?set by CMake}"
copy_project
run_pilot 0 doctor --params proj/config/pilot.json --device cpu --json
python3 - "$WORK/out" "$PILOT_TORCH_FLAVOUR" "$PILOT_TORCH_VERSION" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
flavour, version = sys.argv[2], sys.argv[3]
checks = {c["name"]: c for c in doc["checks"]}
lib = checks["libtorch"]
assert lib["data"]["build_flavour"] == flavour, lib
assert lib["data"]["libtorch_version"].startswith(version.rsplit(".", 1)[0]), (lib, version)
assert f"libtorch {lib['data']['libtorch_version']}, {flavour} build" in lib["detail"], lib["detail"]
assert checks["compute on cpu"]["status"] == "pass", checks["compute on cpu"]
assert checks["model on cpu"]["status"] == "pass", checks["model on cpu"]
if lib["data"]["gpu_count"] == 0:
    assert checks["gpus"]["status"] == "could-not-run", checks["gpus"]
    assert f"({flavour} build, 0 device(s))" in checks["gpus"]["detail"], checks["gpus"]
PY
gpus=$(python3 -c 'import json,sys; print(next(c for c in json.load(open(sys.argv[1]))["checks"] if c["name"]=="libtorch")["data"]["gpu_count"])' "$WORK/out")
if [ "$gpus" = 0 ]; then
  # The GPU asked for and absent: every GPU check could not run, and doctor says not ready.
  run_pilot 3 doctor --params proj/config/pilot.json --device cuda
  expect_in out "libtorch $PILOT_TORCH_VERSION"
  expect_in out "$PILOT_TORCH_FLAVOUR build"
  expect_in out "could-not-run  gpus"
  expect_in out "could-not-run  compute on cuda"
  expect_in out "could-not-run  model on cuda"
  expect_in out "0 GPU(s)"
  expect_in out "NOT ready"
fi
# On a CUDA build the GPU-only code is really in the module, linked against the CUDA runtime
# (it is built with --no-undefined, so a reference here was resolved at link time).
if [ "$PILOT_TORCH_FLAVOUR" = cuda ]; then
  module=$(dirname "$PILOT")/libpilot-torch.so
  nm -D "$module" >symbols.txt
  readelf -d "$module" >dynamic.txt
  grep -q " U cudaMemGetInfo@libcudart" symbols.txt || fail "$module does not call the CUDA runtime"
  grep -q "NEEDED.*libc10_cuda.so" dynamic.txt || fail "$module is not linked to libc10_cuda"
elif [ "$PILOT_TORCH_FLAVOUR" = cpu ] && [ "${PILOT_TORCH_VERSION%%.*}" -ge 2 ]; then
  module=$(dirname "$PILOT")/libpilot-torch.so
  readelf -d "$module" >dynamic.txt
  grep -q "NEEDED.*\[libtorch_cpu.so\]" dynamic.txt || { cat dynamic.txt; fail "$module is not linked to libtorch_cpu"; }
  if grep -q "NEEDED.*cuda" dynamic.txt; then cat dynamic.txt; fail "the CPU build's $module needs a CUDA library"; fi
fi
echo PASS
