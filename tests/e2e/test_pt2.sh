# .pt2 (torch.export + AOTInductor) packages. On libtorch >= 2.6 (the default build, the wheel) pilot
# gives the same outcomes on the exported package as on the TorchScript file: the same status
# and category or reason on every item, confidences and vectors within 1e-5. The sha256 pin
# is mandatory and checked (on a private copy) before anything is unpacked; the private copy
# is removed. On libtorch 1.13 the kinds refuse with exit 3, naming the libtorch found.
source "$(dirname "$0")/lib.sh"
: "${PILOT_TORCH_VERSION:?set by CMake}"
copy_project
mkdir -p "$WORK/tmp"
export TMPDIR=$WORK/tmp
tolerance=1e-5

# pt2_params OUT KIND MODEL [PIN]: the bundled pilot's parameters on another model.
pt2_params() {
  local base=proj/config/pilot.json
  [[ $2 == *embedding ]] && base=proj/config/embed.json
  python3 - "$base" "$1" "$2" "$3" "${4-}" <<'PY'
import json, os, sys
base, out, kind, model, pin = sys.argv[1:6]
p = json.load(open(base))
p["manifest"] = os.path.join(os.path.abspath(os.path.dirname(base)), p["manifest"])
p["stage"]["kind"] = kind
p["stage"]["model"] = os.path.abspath(model)
if pin:
    p["stage"]["model_sha256"] = pin
else:
    p["stage"].pop("model_sha256", None)
json.dump(p, open(out, "w"), indent=1)
PY
}
pin() { sha256sum "$1" | cut -d' ' -f1; }
no_private_copy_left() { [ -z "$(ls -A "$WORK/tmp")" ] || { ls -la "$WORK/tmp"; fail "a private copy was left in TMPDIR"; }; }

# Both flavours: a .pt2 kind without its pin is refused before anything is read.
printf 'not a package' >fake.pt2
pt2_params nopin.json aoti-classifier fake.pt2
run_pilot 2 run --params nopin.json --runs-dir runs --device cpu
expect_in err "stage.model_sha256' is required for the aoti-classifier kind"
[ ! -e runs ] || fail "a run folder was created"

if [ "${PILOT_TORCH_VERSION%%.*}" -lt 2 ]; then
  pt2_params fake.json aoti-classifier fake.pt2 "$(pin fake.pt2)"
  run_pilot 3 run --params fake.json --runs-dir runs --device cpu
  expect_in err "the aoti-classifier kind needs libtorch >= 2.6 (AOTInductor); found libtorch $PILOT_TORCH_VERSION"
  no_private_copy_left
  echo PASS
  exit 0
fi

: "${PILOT_PT2_DIR:?set by CMake: the packages scripts/export-pt2.py wrote (test e2e.pt2_export)}"
for f in langid.pt2 langid-embed.pt2; do [ -f "$PILOT_PT2_DIR/$f" ] || fail "missing $PILOT_PT2_DIR/$f"; done
cp "$PILOT_PT2_DIR/langid.pt2" "$PILOT_PT2_DIR/langid-embed.pt2" .

# The classifier: TorchScript and .pt2 over the bundled manifest.
run_pilot 0 run --params proj/config/pilot.json --runs-dir runs --run-id ts --device cpu
pt2_params pt2.json aoti-classifier langid.pt2 "$(pin langid.pt2)"
run_pilot 0 run --params pt2.json --runs-dir runs --run-id pt2 --device cpu
no_private_copy_left
run_pilot 0 verify runs/pt2
python3 - runs/ts/data/results.jsonl runs/pt2/data/results.jsonl "$tolerance" <<'PY'
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
tol = float(sys.argv[3])
assert len(a) == len(b) == 12, (len(a), len(b))
worst = 0.0
for x, y in zip(a, b):
    for key in ("id", "status", "category", "reason"):
        assert x.get(key) == y.get(key), (key, x, y)
    if "confidence" in x:
        worst = max(worst, abs(x["confidence"] - y["confidence"]))
assert worst <= tol, worst
print(f"classifier: 12/12 items agree, max |confidence difference| {worst:.2e}")
PY

# The embedding kind: the same vectors within the tolerance.
run_pilot 0 run --params proj/config/embed.json --runs-dir runs --run-id ts-embed --device cpu
pt2_params pt2-embed.json aoti-embedding langid-embed.pt2 "$(pin langid-embed.pt2)"
run_pilot 0 run --params pt2-embed.json --runs-dir runs --run-id pt2-embed --device cpu
no_private_copy_left
# Debian's python3 is the one python3-numpy installs into (another python3 may come first on PATH).
/usr/bin/python3 - runs/ts-embed/data runs/pt2-embed/data "$tolerance" <<'PY'
import json, sys
import numpy
a, b, tol = sys.argv[1], sys.argv[2], float(sys.argv[3])
ra = [json.loads(l) for l in open(a + "/results.jsonl")]
rb = [json.loads(l) for l in open(b + "/results.jsonl")]
assert [(r["id"], r["status"], r.get("row"), r.get("reason")) for r in ra] == \
       [(r["id"], r["status"], r.get("row"), r.get("reason")) for r in rb]
va, vb = numpy.load(a + "/vectors.npy"), numpy.load(b + "/vectors.npy")
assert va.shape == vb.shape and va.shape[0] > 0, (va.shape, vb.shape)
worst = float(numpy.abs(va - vb).max())
assert worst <= tol, worst
print(f"embedding: {va.shape[0]} vectors agree, max |difference| {worst:.2e}")
PY

# A wrong pin: refused before anything is unpacked, naming both hashes; nothing left behind.
pt2_params badpin.json aoti-classifier langid.pt2 "$(pin fake.pt2)"
run_pilot 2 run --params badpin.json --runs-dir runs2 --device cpu
expect_in err "$(pin langid.pt2)"
no_private_copy_left

# A package that is not a zip (pinned as it is): a clear refusal, not a crash.
pt2_params notzip.json aoti-classifier fake.pt2 "$(pin fake.pt2)"
run_pilot 2 run --params notzip.json --runs-dir runs2 --device cpu
expect_in err "is not a readable ZIP archive"
expect_in err "fake.pt2"
no_private_copy_left

# A TorchScript file given as a package: the same.
cp proj/data/models/langid/langid.pt ts-as.pt2
pt2_params tsas.json aoti-classifier ts-as.pt2 "$(pin ts-as.pt2)"
run_pilot 2 run --params tsas.json --runs-dir runs2 --device cpu
expect_in err "ts-as.pt2"
no_private_copy_left

# Hostile packages, each pinned as it is: refused (exit 2) before libtorch's loader unpacks
# anything, naming the package; nothing written outside.
escape=/tmp/pilot-pt2-escape-$$
python3 - langid.pt2 <<PY
import shutil, zipfile
shutil.copy("langid.pt2", "slip.pt2")
with zipfile.ZipFile("slip.pt2", "a") as z:  # an entry that would unpack to $escape
    prefix = z.namelist()[0].split("/")[0]
    z.writestr(prefix + "/data/aotinductor/model/" + "../" * 12 + "${escape#/}", "escaped")
with zipfile.ZipFile("langid.pt2") as src, zipfile.ZipFile("source.pt2", "w") as dst:
    for info in src.infolist():  # without its compiled library: only C++ source to compile
        if not info.filename.endswith(".so"):
            dst.writestr(info.filename, src.read(info.filename))
PY
pt2_params slip.json aoti-classifier slip.pt2 "$(pin slip.pt2)"
run_pilot 2 run --params slip.json --runs-dir runs2 --device cpu
expect_in err "could unpack outside its folder"
expect_in err "slip.pt2"
[ ! -e "$escape" ] || { rm -f "$escape"; fail "an entry of the package was written outside"; }
pt2_params source.json aoti-classifier source.pt2 "$(pin source.pt2)"
run_pilot 2 run --params source.json --runs-dir runs2 --device cpu
expect_in err "pilot does not compile packages"
no_private_copy_left
[ ! -e runs2 ] || [ -z "$(ls -A runs2)" ] || fail "a run folder was created for a refused package"

# A TMPDIR where other users may rename entries (world-writable, not sticky): the checked
# copy could be swapped there, so the package is not copied there at all (exit 3).
mkdir -p "$WORK/opentmp" && chmod 0777 "$WORK/opentmp"
TMPDIR=$WORK/opentmp run_pilot 3 run --params pt2.json --runs-dir runs3 --device cpu
expect_in err "lacks the sticky bit"
[ -z "$(ls -A "$WORK/opentmp")" ] || fail "something was written under the refused TMPDIR"
chmod 1777 "$WORK/opentmp"  # sticky, like /tmp: fine
TMPDIR=$WORK/opentmp run_pilot 0 run --params pt2.json --runs-dir runs3 --run-id sticky --device cpu
[ -z "$(ls -A "$WORK/opentmp")" ] || fail "a private copy was left in the sticky TMPDIR"

# The package's contract is its metadata: a classifier package run as an embedding is refused.
pt2_params wrongkind.json aoti-embedding langid.pt2 "$(pin langid.pt2)"
run_pilot 2 run --params wrongkind.json --runs-dir runs2 --device cpu
expect_in err "pilot.dim"
no_private_copy_left
echo PASS
