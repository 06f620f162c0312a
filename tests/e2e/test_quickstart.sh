# The README's quickstart, as written: its shell block is taken from the README (the first
# ```sh block after "## Quickstart") and run with bash -euo pipefail in a scratch folder that
# looks like the checkout the README speaks of (build/release holding this pilot, data/ the
# bundled data). A quickstart that no longer runs, or whose outcome changed, fails here.
source "$(dirname "$0")/lib.sh"

block=$(awk '/^## Quickstart/ { in_section = 1; next }
             in_section && /^## / { exit }
             in_section && /^```sh$/ { in_block = 1; next }
             in_block && /^```$/ { exit }
             in_block { print }' "$SRC/README.md")
[ -n "$block" ] || fail "README.md has no \`\`\`sh block under '## Quickstart'"

mkdir -p checkout/build
ln -s "$(cd "$(dirname "$PILOT")" && pwd)" checkout/build/release
ln -s "$SRC/data" checkout/data
[ -x checkout/build/release/pilot ] || fail "no pilot in $(dirname "$PILOT")"
printf '%s\n' "$block" >quickstart.sh
(cd checkout && bash -euo pipefail ../quickstart.sh) >"$WORK/out" 2>"$WORK/err" || {
  echo "--- the block"; cat quickstart.sh; echo "--- stdout"; cat "$WORK/out"; echo "--- stderr"; cat "$WORK/err"
  fail "the README's quickstart does not run as written"
}

# What the README says it does.
run=checkout/my-pilot/runs/first
expect_in out "4 items, 2 accepted, 2 rejected"
expect_in out "verify: ok"
expect_in "$run/data/results.jsonl" '"reason":"category_not_allowed"'
expect_in "$run/data/results.jsonl" '"reason":"invalid_encoding"'
[ "$(grep -c '"status":"accepted"' "$run/data/results.jsonl")" = 2 ] || fail "the English and French files are not both accepted"
grep -q '"status":"rejected".*"reason":"category_not_allowed"' out || fail "the rejections were not listed"
echo "quickstart: ok"
