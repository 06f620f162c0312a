# scripts/gpu-check.sh as far as a machine without a GPU allows: its CPU path configures a
# build in OUT_DIR (the pilot under test stands in for its build: --prebuilt), runs doctor,
# an adaptation and a stopped one resumed (bitwise identical on the CPU), the bundled pilot, verify, a sweep, a batch-plan run, two
# --workers and an export on cpu,
# and leaves every log and a summary.
source "$(dirname "$0")/lib.sh"
# The script builds against an importable torch: the pinned wheel's venv.
[ -n "${PILOT_PYTHON:-}" ] || { echo "SKIP: no PILOT_PYTHON (a build without the wheel's venv)"; exit 77; }
# The .pt2 package e2e.pt2_export wrote (the same export the script would run) where there is one.
pt2=()
[ -s "${PILOT_PT2_DIR:-}/langid.pt2" ] && pt2=(--prebuilt-pt2 "$PILOT_PT2_DIR/langid.pt2")
bash "$SRC/scripts/gpu-check.sh" "$WORK/gc" --device cpu --debs "$WORK/no-debs" --prebuilt "$(dirname "$PILOT")" "${pt2[@]}" >gc.txt 2>&1 \
  || { cat gc.txt; fail "gpu-check.sh failed on its CPU path"; }
expect_in gc/summary.txt "all steps passed"
expect_in gc/summary.txt "libtorch_cpu imported"  # the CPU path: build-here.sh --cpu
expect_in gc/summary.txt "pass compute on cpu"
expect_in gc/summary.txt "pass model on cpu"
expect_in gc/summary.txt "verify: ok"
expect_in gc/summary.txt "## Recommendation"
[ -f gc/report.html ] || fail "gpu-check did not keep the sweep's report.html"
expect_in gc/summary.txt "items/s summed over the shards"
expect_in gc/export.log "verified the copy in full"
expect_in gc/summary.txt "evaluation accuracy: base 51.21% -> adapted"
expect_in gc/summary.txt "adapt: uninterrupted and stopped+resumed models are bitwise identical"
for f in configure.log doctor.log adapt.log doctor.json pilot.log verify.log smi.txt; do
  [ -f "gc/$f" ] || fail "gpu-check.sh left no $f"
done
expect_in gc/doctor.json '"ok": true'
echo PASS
