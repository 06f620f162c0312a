# A run folder copied to another place verifies there without the inputs, the config or
# the model being present.
source "$(dirname "$0")/lib.sh"
copy_project
run_pilot 0 run --params proj/config/pilot.json --runs-dir runs --run-id original
mkdir -p elsewhere
cp -a runs/original elsewhere/copy
rm -rf proj runs
run_pilot 0 verify elsewhere/copy
expect_in out "verify: ok"
expect_in out "12 items, 9 accepted + 3 rejected"
run_pilot 1 verify elsewhere/copy --inputs
expect_in err "inputs folder not found"
echo PASS
