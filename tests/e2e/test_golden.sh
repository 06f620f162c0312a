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
# The committed copies themselves are never touched.
[ "$(tree_sum "$SRC/tests/golden/format1-finished")" = "$(tree_sum golden/format1-finished)" ] || fail "verify changed the bag"
echo "ok"
