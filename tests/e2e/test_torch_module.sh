# libtorch lives in a module (libpilot-torch.so) beside the binary, loaded only by the
# commands that run a model or probe the device. Without it, run and doctor exit 3 naming
# the module, and verify, status and manifest still work; a module from elsewhere (the
# working directory, LD_LIBRARY_PATH) is never picked up.
source "$(dirname "$0")/lib.sh"
copy_project
run_pilot 0 run --params proj/config/pilot.json --runs-dir runs --run-id r1
mkdir bin
cp "$PILOT" bin/pilot
lone=$WORK/bin/pilot
# A decoy module where a careless loader would look: never loaded.
printf 'not a shared object' >libpilot-torch.so
rc=0; LD_LIBRARY_PATH=$WORK "$lone" run --params proj/config/pilot.json --runs-dir runs --run-id r2 >out 2>err || rc=$?
[ "$rc" -eq 3 ] || { cat err; fail "run without the module exited $rc, expected 3"; }
expect_in err "libpilot-torch.so"
expect_in err "$WORK/bin/libpilot-torch.so"
[ ! -e runs/r2 ] || fail "a run folder was created although the stage could not load"
rc=0; "$lone" doctor >out 2>err || rc=$?
[ "$rc" -eq 3 ] || fail "doctor without the module exited $rc, expected 3"
expect_in err "cannot load pilot's libtorch stage module"
# The commands that read folders need no libtorch.
"$lone" verify runs/r1 >out 2>err || { cat out err; fail "verify needs the torch module"; }
"$lone" status runs/r1 >out 2>err || { cat out err; fail "status needs the torch module"; }
"$lone" --version >out
# A module that is not a shared object is refused by name, not loaded.
cp libpilot-torch.so bin/
rc=0; "$lone" doctor >out 2>err || rc=$?
[ "$rc" -eq 3 ] || fail "doctor with a broken module exited $rc, expected 3"
expect_in err "$WORK/bin/libpilot-torch.so"
echo PASS
