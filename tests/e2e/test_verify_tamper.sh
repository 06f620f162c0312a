# Each kind of damage to a copy fails verify with exit 1 and names what is wrong.
source "$(dirname "$0")/lib.sh"
copy_project
run_pilot 0 run --params proj/config/pilot.json --runs-dir runs --run-id base
fresh() { rm -rf case; cp -a runs/base case; }

# One changed byte.
fresh
printf 'X' | dd of=case/data/report.md bs=1 seek=5 conv=notrunc status=none
run_pilot 1 verify case
expect_in err "[fixity] data/report.md"

# A deleted file.
fresh
rm case/data/environment.json
run_pilot 1 verify case
expect_in err "[completeness] data/environment.json: listed in manifest-sha256.txt but missing"

# An added file.
fresh
echo extra >case/data/notes.txt
run_pilot 1 verify case
expect_in err "[completeness] data/notes.txt"
expect_in err "unexpected file"

# A missing result line, with the bag consistently re-hashed (fixity holds again): the
# accounting rules must catch it.
fresh
grep -v '"id":"doc-04"' case/data/results.jsonl >case/data/results.tmp
mv case/data/results.tmp case/data/results.jsonl
(
  cd case
  find data -type f | LC_ALL=C sort | xargs sha256sum >manifest-sha256.txt
  octets=$(find data -type f -printf '%s\n' | awk '{s+=$1} END {print s}')
  files=$(find data -type f | wc -l)
  sed -i "s/^Payload-Oxum: .*/Payload-Oxum: $octets.$files/" bag-info.txt
  sha256sum bag-info.txt bagit.txt manifest-sha256.txt >tagmanifest-sha256.txt
  sha256sum --quiet -c manifest-sha256.txt
)
run_pilot 1 verify case --json
expect_in out '"ok": false'
expect_in out '"where": "doc-04"'
expect_in out "manifest id has no result"
echo PASS
