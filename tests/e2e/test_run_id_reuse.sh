# A reused run id is refused (exit 2) and the existing folder is left exactly as it was.
source "$(dirname "$0")/lib.sh"
copy_project
run_pilot 0 run --params proj/config/pilot.json --runs-dir runs --run-id pilot-1
before=$(tree_sum runs/pilot-1)
run_pilot 2 run --params proj/config/pilot.json --runs-dir runs --run-id pilot-1
expect_in err "run folder already exists"
expect_in err "runs/pilot-1"
[ "$before" = "$(tree_sum runs/pilot-1)" ] || fail "the existing run folder was modified"
run_pilot 0 verify runs/pilot-1
run_pilot 2 run --params proj/config/pilot.json --runs-dir runs --run-id ../escape
[ ! -e escape ] || fail "an invalid run id created a folder"
echo PASS
