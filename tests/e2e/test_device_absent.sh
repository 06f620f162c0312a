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
# doctor asked for one GPU by index requires a GPU as it does for any GPU (a required check).
run_pilot 3 doctor --device cuda:0 --runs-dir doctor-probe --json
python3 - "$WORK/out" <<'PY' || fail "doctor --device cuda:0 did not require the gpus check"
import json, sys
checks = {c["name"]: c for c in json.load(open(sys.argv[1]))["checks"]}
assert checks["gpus"]["required"] is True and checks["gpus"]["status"] != "pass", checks["gpus"]
PY
echo PASS
