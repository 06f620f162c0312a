# Folders written by earlier formats (tests/golden): a format-1 bag still verifies, its
# status reads, and an interrupted format-1 folder is refused by resume with a clear message
# and left exactly as it was.
source "$(dirname "$0")/lib.sh"
cp -a "$SRC/tests/golden" golden
run_pilot 0 verify golden/format1-finished
expect_in out "verify: ok"
run_pilot 0 verify golden/format1-finished --json
expect_in out '"ok": true'
run_pilot 0 status golden/format1-finished
expect_in out "finished"
run_pilot 0 status golden/format1-interrupted
expect_in out "interrupted"
expect_in out "4/12"
expect_in out "run format 1 (pilot 0.1): this pilot verifies it but does not resume it"
expect_not_in out "resume with"
before=$(tree_sum golden/format1-interrupted)
run_pilot 2 resume golden/format1-interrupted
expect_in err "run format 1"
expect_in err "does not resume"
[ "$(tree_sum golden/format1-interrupted)" = "$before" ] || fail "resume changed a folder it refused"
test ! -e golden/format1-interrupted/.lock || fail "resume left a lock behind"
# Format 2 (kinds declared), one folder of each kind a run writes: each verifies to the
# fingerprint it had when it was written, reads its status, refuses a resume, and stays as it was.
check_format2() {  # folder, kind, fingerprint, a line of its status
  local d=golden/$1 before
  before=$(tree_sum "$d")
  run_pilot 0 verify "$d" --expect "$3" --json
  expect_in out '"ok": true'
  expect_in out "\"folder_kind\": \"$2\""
  run_pilot 0 status "$d"
  expect_in out "$2 $1: finished"
  expect_in out "$4"
  run_pilot 2 resume "$d"
  [ "$(tree_sum "$d")" = "$before" ] || fail "verify, status or resume changed $d"
  test ! -e "$d/.lock" || fail "resume left a lock behind in $d"
}
check_format2 format2-run run 562ea7debd5bc3a225ee03d1494083a9a20c71630f73554b7f444426477ad4d8 "12/12 items done"
check_format2 format2-merged merged d6d418226febce190dad6358f359366fde5cbe8230c9f8d61a769e8b97e95f4b "12/12 items done"
check_format2 format2-sweep sweep 8dc1ba94b90223379c2d9cb196419c06f2a404d3746acfdc90de2cf4ea4856ef "6 cell(s) measured"
# Format 3 (labels in the results, per-label quality in the report), checked the same way.
check_format2 format3-run run 5b866e28037a569b5f8051fc60d49bd41ead443df2d31174f923c9d4652ed767 "12/12 items done"
check_format2 format3-merged merged 468e7805f9cde42565894332b0fe72bb992ebc2844ade5044e00b9c06566ecf5 "12/12 items done"
grep -q '"expected":"en"}$' golden/format3-run/data/results.jsonl || fail "format3-run's results carry no label"
grep -q '"never_predicted": \[\]' golden/format3-run/data/report.json || fail "format3-run's report has no per-label quality"
# The committed copies themselves are never touched.
for d in format1-finished format2-run format2-merged format2-sweep format3-run format3-merged; do
  [ "$(tree_sum "$SRC/tests/golden/$d")" = "$(tree_sum "golden/$d")" ] || fail "verify changed $d"
done
echo "ok"
