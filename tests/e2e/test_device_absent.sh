# Asking for a backend this machine lacks exits 3 and says what was found; no run folder.
source "$(dirname "$0")/lib.sh"
copy_project
if "$PILOT" run --params proj/config/pilot.json --device cuda --runs-dir probe --json 2>/dev/null | grep -q '"exit_code": 0'; then
  echo "SKIP: this machine has a CUDA device"; exit 0
fi
rm -rf probe
run_pilot 3 run --params proj/config/pilot.json --device cuda --runs-dir runs
expect_in err "device 'cuda' was asked for but is not present"
expect_in err "GPU(s)"
[ ! -e runs ] || [ -z "$(ls -A runs)" ] || fail "a run folder was created"
run_pilot 3 run --params proj/config/pilot.json --device rocm --runs-dir runs
echo PASS
