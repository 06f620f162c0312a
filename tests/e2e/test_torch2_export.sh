# A model exported with today's torch runs in the default build: a TorchScript classifier
# calling F.scaled_dot_product_attention, scripted and saved by the pinned wheel's torch 2.11
# with its version in extra/torch_version (the export docs/models.md documents), runs through
# pilot in float32 and in bfloat16, every item accounted for, the folder verifies, and
# run.json records the dtype each held. (The .pt2 kinds: e2e.pt2.) Skips on a build without
# the wheel's Python (PILOT_PYTHON).
source "$(dirname "$0")/lib.sh"
[ -n "${PILOT_PYTHON:-}" ] || { echo "SKIP: no PILOT_PYTHON (a build without the wheel's venv)"; exit 77; }
"$PILOT_PYTHON" "$SRC/tests/e2e/data/make_sdpa_model.py" sdpa.pt 2>py.err || { cat py.err; fail "could not script the SDPA model"; }
python3 - sdpa.pt <<'PY' || fail "the archive is not what the export writes"
import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
assert z.read("sdpa/extra/torch_version").decode().startswith("2."), "extra/torch_version"
assert b"scaled_dot_product_attention" in z.read("sdpa/code/__torch__.py"), "no SDPA call"
PY

mkdir inputs
printf 'short one' >inputs/a.txt
printf 'a text well over twenty characters long' >inputs/b.txt
printf 'tiny' >inputs/c.txt
printf 'another text that is long enough to be long' >inputs/d.txt
run_pilot 0 manifest inputs --out manifest.json
for dtype in float32 bfloat16; do
  cat >params-$dtype.json <<EOF
{
  "manifest": "manifest.json",
  "stage": {"kind": "torchscript-classifier", "model": "$WORK/sdpa.pt", "model_sha256": "$(sha256sum sdpa.pt | cut -c1-64)",
            "options": {"dtype": "$dtype"}},
  "allowed_categories": ["short", "long"],
  "device": "cpu",
  "batch_size": 2
}
EOF
  run_pilot 0 run --params params-$dtype.json --runs-dir runs --run-id $dtype
  expect_in out "4 items, 4 accepted, 0 rejected"
  expect_in out "verify: ok"
  run_pilot 0 verify runs/$dtype
  python3 - runs/$dtype "$dtype" <<'PY'
import json, sys
folder, dtype = sys.argv[1:3]
got = {}
for line in open(f"{folder}/data/results.jsonl"):
    r = json.loads(line)
    got[r["id"]] = r["category"]
want = {"a.txt": "short", "b.txt": "long", "c.txt": "short", "d.txt": "long"}
assert got == want, (got, want)
contract = json.load(open(f"{folder}/data/run.json"))["plan"]["model_contract"]
assert contract["dtype"] == dtype, contract
assert contract["held_dtype"] == dtype, contract
PY
done
echo PASS
