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
# Format 3's embedding runs kept the vectors twice (the sidecar beside the .npy): they still
# verify, against the sidecar, a run and a merged folder alike.
check_format2 format3-embedding run c4e5f1cc56a9f383c97b08b8a873c496016b7405e4ac33e72a990db3d73e0f40 "12/12 items done"
check_format2 format3-embedding-merged merged 3fda7d1354e92b2d64ff9ddddec13220eee37fa56bd537436bcf9f08247a1219 "12/12 items done"
# An embedding run interrupted by a format-3 pilot (8 of 12 journaled, no digests) is resumed
# by this one into format 4: the same bits as format 3's straight run, each row digested, the
# sidecar gone. (Its recorded paths are the checkout it was written in: pointed at this one.)
cp -a golden/format3-embedding-interrupted resumed3
old_root=$(sed -n 's/.*"model":"\([^"]*\)\/data\/models\/langid-embed\/langid-embed.pt".*/\1/p' resumed3/data/journal.jsonl | head -1)
[ -n "$old_root" ] || fail "no model path in the interrupted folder's journal header"
sed -i "1s#$old_root/#$SRC/#g" resumed3/data/journal.jsonl
sed -i "s#$old_root/#$SRC/#g" resumed3/data/run.json
run_pilot 0 resume resumed3
expect_in out "verify: ok"
expect_in resumed3/bag-info.txt "Pilot-Format-Version: 4"
cmp resumed3/data/vectors.npy golden/format3-embedding/data/vectors.npy ||
  fail "the resumed format-3 run's vectors differ from format 3's straight run"
test ! -e resumed3/data/vectors.sidecar || fail "the resumed run kept its sidecar"
[ "$(grep -c '"vector_sha256"' resumed3/data/results.jsonl)" = 10 ] || fail "not every accepted row was digested"
# The committed copies themselves are never touched.
for d in format1-finished format2-run format2-merged format2-sweep format3-run format3-merged \
  format3-embedding format3-embedding-merged format3-embedding-interrupted; do
  [ "$(tree_sum "$SRC/tests/golden/$d")" = "$(tree_sum "golden/$d")" ] || fail "verify changed $d"
done
echo "ok"
