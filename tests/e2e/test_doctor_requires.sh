# pilot doctor on this machine, and `requires` refusing a run before any work.
source "$(dirname "$0")/lib.sh"
copy_project
P=proj/config/pilot.json
run_pilot 0 doctor --params $P --device cpu
expect_in out "pass           compute on cpu"
expect_in out "pass           model on cpu"
expect_in out "everything asked for passes"
run_pilot 0 doctor --params $P --device cpu --json
expect_in out '"ok": true'
expect_in out '"name": "model on cpu"'
if ! grep -q '"cuda_available": true' out; then
  run_pilot 3 doctor --params $P --device cuda
  expect_in out "could-not-run  compute on cuda"
  expect_in out "not present"
  run_pilot 3 doctor --params $P --device cuda --json
  expect_in out '"status": "could-not-run"'
  expect_in out '"exit_code": 3'
fi
run_pilot 2 doctor --params nope.json
expect_in err "nope.json"

# Unmet requirements: exit 3, every one listed, no run folder.
sed 's/"seed": 1234,/"seed": 1234, "requires": {"backend": "cuda", "min_device_count": 8, "min_libtorch_version": "99.0", "min_free_disk_mb": 1e11},/' \
  $P >proj/config/needs-gpu.json
run_pilot 3 run --params proj/config/needs-gpu.json --runs-dir runs
expect_in err "requirement(s) not met"
expect_in err "backend: cuda required"
expect_in err "min_device_count: 8 required"
expect_in err "min_libtorch_version: 99.0 required"
expect_in err "min_free_disk_mb"
[ ! -e runs ] || [ -z "$(ls -A runs)" ] || fail "a run folder was created"
run_pilot 3 doctor --params proj/config/needs-gpu.json --device cpu
expect_in out "fail           requires"

# Met requirements run, and environment.json records what was received in the same terms.
sed 's/"seed": 1234,/"seed": 1234, "requires": {"backend": "cpu", "min_libtorch_version": "1.13", "min_free_disk_mb": 1},/' \
  $P >proj/config/cpu-ok.json
run_pilot 0 run --params proj/config/cpu-ok.json --runs-dir runs --run-id ok --device cpu
expect_in runs/ok/data/environment.json '"received"'
expect_in runs/ok/data/environment.json '"backend": "cpu"'
expect_in runs/ok/data/environment.json '"libtorch_version"'
expect_in runs/ok/data/report.json '"device_peak_memory_mb": null'
echo PASS
