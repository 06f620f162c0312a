# `pilot manifest DIR` pins a folder of inputs; the result runs; it never overwrites.
source "$(dirname "$0")/lib.sh"
copy_project
mkdir -p inputs/sub
cp proj/data/pilot/doc-02.txt inputs/a.txt
cp proj/data/pilot/doc-03.txt inputs/sub/b.txt
echo hidden >inputs/.hidden
run_pilot 0 manifest inputs
expect_in out "2 items"
expect_in inputs/manifest.json '"id": "a"'
expect_in inputs/manifest.json '"id": "sub__b"'
expect_in inputs/manifest.json "\"sha256\": \"$(sha256sum inputs/a.txt | cut -d' ' -f1)\""
expect_not_in inputs/manifest.json "hidden"
before=$(sha256sum inputs/manifest.json)
run_pilot 2 manifest inputs
expect_in err "refusing to overwrite"
[ "$before" = "$(sha256sum inputs/manifest.json)" ] || fail "manifest was overwritten"
# No item carries an `expected` label, so min_accuracy cannot be judged: not met (exit 4).
run_pilot 4 run --params proj/config/pilot.json --manifest inputs/manifest.json --runs-dir runs
expect_in out "2 items, 2 accepted, 0 rejected"
expect_in out "min_accuracy not met: nothing to measure it on"
# A manifest above the inputs gets paths relative to itself; one beside them is refused
# (its paths would have to climb out with '..').
run_pilot 0 manifest inputs/sub --out above.json
expect_in above.json '"path": "inputs/sub/b.txt"'
mkdir other
run_pilot 2 manifest inputs/sub --out other/m.json
expect_in err "must sit in the inputs' folder or above it"
run_pilot 0 --help
expect_in out "manifest"
expect_in out "Exit codes"
echo PASS
