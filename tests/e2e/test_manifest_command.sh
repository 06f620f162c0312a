# `pilot manifest DIR` pins a folder of inputs; the result runs; it never overwrites.
source "$(dirname "$0")/lib.sh"
copy_project
mkdir -p inputs/sub
cp proj/data/pilot/doc-02.txt inputs/a.txt
cp proj/data/pilot/doc-03.txt inputs/sub/b.txt
echo hidden >inputs/.hidden
run_pilot 0 manifest inputs
expect_in out "2 items"
expect_in inputs/manifest.json '"id": "a.txt"'
expect_in inputs/manifest.json '"id": "sub__b.txt"'
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
# An earlier manifest and a run folder are pilot's output, never inputs: left out, each named.
run_dir=$(ls -d runs/*/ | head -n 1)
[ -f "$run_dir/bag-info.txt" ] || fail "no run folder in runs/"
cp -r "$run_dir" inputs/old-run
run_pilot 0 manifest inputs --out inputs/second.json
expect_in err "old-run: a folder pilot wrote"
expect_in err "manifest.json: a manifest, never an input"
expect_in out "2 items"
expect_not_in inputs/second.json "old-run"
expect_not_in inputs/second.json '"path": "manifest.json"'
# A folder pilot wrote is not a folder of inputs.
run_pilot 2 manifest inputs/old-run --out -
expect_in err "a folder pilot wrote"
run_pilot 2 manifest inputs/old-run
expect_in err "lies inside the pilot folder"
run_pilot 2 manifest inputs/old-run/data --out -
expect_in err "this folder is inside a folder pilot wrote"
# Two files that would share an id are refused, both named; nothing is written.
cp inputs/a.txt "inputs/sub__b.txt"
run_pilot 2 manifest inputs --out inputs/third.json
expect_in err "two files would have the id 'sub__b.txt': 'sub/b.txt' and 'sub__b.txt'"
[ ! -e inputs/third.json ] || fail "a refused manifest was written"
run_pilot 0 --help
expect_in out "manifest"
expect_in out "Exit codes"
echo PASS
