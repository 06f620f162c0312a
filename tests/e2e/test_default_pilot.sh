# The bundled default pilot: exit 0, every manifest id exactly once, a valid BagIt bag that
# plain sha256sum can check, and --json output.
source "$(dirname "$0")/lib.sh"
copy_project
run_pilot 0 run --params proj/config/pilot.json --runs-dir runs
run=$(run_dir_from_out)
[ -d "$run" ] || fail "no run folder printed"
expect_in out "12 items, 9 accepted, 3 rejected"
expect_in out "verify: ok"

ids_manifest=$(grep -o '"id": "[^"]*"' "$run/data/manifest.json" | cut -d'"' -f4 | sort)
ids_results=$(grep -o '^{"id":"[^"]*"' "$run/data/results.jsonl" | cut -d'"' -f4 | sort)
[ "$(echo "$ids_manifest" | wc -l)" -eq 12 ] || fail "manifest should hold 12 ids"
[ "$ids_manifest" = "$ids_results" ] || fail "results ids differ from manifest ids"
[ -z "$(echo "$ids_results" | uniq -d)" ] || fail "an id appears twice"
expect_in "$run/data/results.jsonl" '"id":"doc-10","status":"rejected","reason":"category_not_allowed"'
expect_in "$run/data/results.jsonl" '"id":"doc-11","status":"rejected","reason":"empty_input"'
expect_in "$run/data/results.jsonl" '"id":"doc-12","status":"rejected","reason":"invalid_encoding"'
expect_in "$run/data/report.json" '"accuracy": 1.0'
expect_in "$run/bagit.txt" "BagIt-Version: 1.0"
expect_in "$run/bag-info.txt" "Payload-Oxum: "
expect_in "$run/bag-info.txt" "External-Identifier: $(basename "$run")"
(cd "$run" && sha256sum --quiet -c manifest-sha256.txt && sha256sum --quiet -c tagmanifest-sha256.txt) \
  || fail "sha256sum -c failed on the bag"
cmp -s "$run/data/manifest.json" proj/data/pilot/manifest.json || fail "manifest copy is not a byte copy"
cmp -s "$run/data/params.json" proj/config/pilot.json || fail "params copy is not a byte copy"

run_pilot 0 run --params proj/config/pilot.json --runs-dir runs --json
expect_in out '"ok": true'
expect_in out '"exit_code": 0'
[ "$(ls runs | wc -l)" -eq 2 ] || fail "each run must get a fresh folder"

run_pilot 0 verify "$run" --json
expect_in out '"ok": true'
expect_in out '"items": 12'
run_pilot 0 verify "$run" --inputs
echo PASS
