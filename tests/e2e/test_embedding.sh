# The embedding pilot: `pilot run --params config/embed.json` writes data/vectors.npy that
# numpy.load opens directly; rows map to the accepted ids in manifest order; identical texts
# give identical vectors; a kill and resume gives the same bits; verify checks the file.
source "$(dirname "$0")/lib.sh"
# Debian's python3 is the one python3-numpy installs into (another python3 may come first on PATH).
PY=/usr/bin/python3
[ -x "$PY" ] || PY=python3
"$PY" -c 'import numpy' || fail "numpy is missing: run scripts/deps.sh (python3-numpy is a test dependency)"
copy_project
run_pilot 0 run --params proj/config/embed.json --runs-dir runs --run-id embed
expect_in out "12 items, 10 accepted, 2 rejected"
expect_in out "verify: ok"
run_pilot 0 verify runs/embed
expect_in runs/embed/bag-info.txt "Pilot-Folder-Kind: run"
expect_in runs/embed/bag-info.txt "Pilot-Format-Version: 4"
# Run format 4 stores the vectors once: no sidecar in the finished folder, and each accepted
# result carries the sha256 of its row's bytes.
test ! -e runs/embed/data/vectors.sidecar || fail "the finished folder still holds the vectors sidecar"
"$PY" - runs/embed <<'PYEOF' || fail "a row's vector_sha256 is not the sha256 of its bytes"
import hashlib, json, sys
import numpy as np
run = sys.argv[1]
v = np.load(run + "/data/vectors.npy")
for line in open(run + "/data/results.jsonl"):
    r = json.loads(line)
    if r["status"] == "accepted":
        assert r["vector_sha256"] == hashlib.sha256(v[r["row"]].tobytes()).hexdigest(), r["id"]
PYEOF

check_vectors() {  # check_vectors RUN_DIR EXPECTED_ROWS
  "$PY" - "$1" "$2" <<'PYEOF'
import json, sys
import numpy as np
run, rows = sys.argv[1], int(sys.argv[2])
v = np.load(run + "/data/vectors.npy")
assert v.dtype == np.float32 and v.ndim == 2, (v.dtype, v.shape)
assert v.shape[0] == rows, v.shape
dim = json.load(open(run + "/data/run.json"))["plan"]["dim"]
assert v.shape[1] == dim, (v.shape, dim)
accepted = [json.loads(l) for l in open(run + "/data/results.jsonl") if '"accepted"' in l]
assert [r["row"] for r in accepted] == list(range(rows)), "rows are not the accepted ids in manifest order"
assert all(r["dim"] == dim for r in accepted)
assert np.isfinite(v).all()
norms = np.linalg.norm(v, axis=1)
assert np.allclose(norms, 1.0, atol=1e-5), norms  # the bundled model L2-normalises
print("rows", rows, "dim", dim, "ids", ",".join(r["id"] for r in accepted))
PYEOF
}
check_vectors runs/embed 10 >vectors.txt || fail "vectors.npy does not match results.jsonl"
expect_in vectors.txt "ids doc-01,doc-02,doc-03,doc-04,doc-05,doc-06,doc-07,doc-08,doc-09,doc-10"

# Identical texts give identical vectors (and distinct texts distinct ones), batched apart.
mkdir twins
cp proj/data/pilot/doc-02.txt twins/a.txt
cp proj/data/pilot/doc-03.txt twins/b.txt
cp proj/data/pilot/doc-02.txt twins/c.txt
cp proj/data/pilot/doc-02.txt twins/d.txt
"$PILOT" manifest twins --name twins >/dev/null
sed 's/"batch_size": 4/"batch_size": 3/' proj/config/embed.json >proj/config/twins.json
run_pilot 0 run --params proj/config/twins.json --manifest twins/manifest.json --runs-dir runs --run-id twins
"$PY" - runs/twins <<'PYEOF' || fail "identical texts gave different vectors"
import json, sys
import numpy as np
run = sys.argv[1]
v = np.load(run + "/data/vectors.npy")
row = {json.loads(l)["id"]: json.loads(l)["row"] for l in open(run + "/data/results.jsonl")}
a, b, c, d = (v[row[k + ".txt"]] for k in "abcd")
assert a.tobytes() == c.tobytes() == d.tobytes(), "a, c and d hold the same text"
assert a.tobytes() != b.tobytes()
PYEOF

# Stopped after 5 items and resumed: the same bits as the straight run.
run_pilot 130 run --params proj/config/embed.json --runs-dir runs --run-id part --stop-after 5
test -f runs/part/data/vectors.sidecar || fail "the sidecar is missing after the stop"
test ! -e runs/part/data/vectors.npy || fail "vectors.npy exists before the run finished"
run_pilot 0 resume runs/part
cmp runs/part/data/vectors.npy runs/embed/data/vectors.npy || fail "resumed vectors differ from the straight run's"

# vectors_dtype float16: '<f2' rows that numpy.load reads, each the float32 run's value rounded
# to nearest even (numpy's own cast), in half the bytes; two shards merged give the same file.
sed 's/"device": "auto",/"device": "auto", "vectors_dtype": "float16",/' proj/config/embed.json >proj/config/half.json
run_pilot 0 run --params proj/config/half.json --runs-dir runs --run-id half
expect_in out "verify: ok"
"$PY" - runs/half runs/embed <<'PYEOF' || fail "the float16 vectors are not the float32 ones rounded"
import hashlib, json, os, sys
import numpy as np
half, full = sys.argv[1], sys.argv[2]
h = np.load(half + "/data/vectors.npy")
f = np.load(full + "/data/vectors.npy")
assert h.dtype == np.float16 and h.shape == f.shape, (h.dtype, h.shape, f.shape)
assert h.tobytes() == f.astype(np.float16).tobytes(), "not numpy's round to nearest even"
payload = lambda d: os.path.getsize(d + "/data/vectors.npy") - 128
assert payload(half) * 2 == payload(full), (payload(half), payload(full))
for line in open(half + "/data/results.jsonl"):
    r = json.loads(line)
    if r["status"] == "accepted":
        assert r["vector_sha256"] == hashlib.sha256(h[r["row"]].tobytes()).hexdigest(), r["id"]
PYEOF
run_pilot 0 run --params proj/config/half.json --runs-dir runs --run-id half-merged --workers 2
expect_in out "verify: ok"
cmp runs/half/data/vectors.npy runs/half-merged/data/vectors.npy || fail "two float16 shards merged differ from one run"
test ! -e runs/half-merged/data/vectors.sidecar || fail "the merged folder holds a sidecar"
run_pilot 0 compare runs/embed runs/half
expect_in out "vectors_dtype"
sed 's/"device": "auto",/"device": "auto", "vectors_dtype": "float64",/' proj/config/embed.json >proj/config/f64.json
run_pilot 2 run --params proj/config/f64.json --runs-dir runs --run-id f64
expect_in err "vectors_dtype"
expect_in err "must be float32 or float16"
test ! -e runs/f64 || fail "a refused run left a folder"

# verify catches a row changed and the bag consistently re-hashed.
cp -a runs/embed tampered
"$PY" - tampered <<'PYEOF'
import sys
import numpy as np
p = sys.argv[1] + "/data/vectors.npy"
v = np.load(p)
np.save(p, v[:-1])  # one row short
PYEOF
(cd tampered && find data -type f | LC_ALL=C sort | xargs sha256sum >manifest-sha256.txt &&
  sed -i "s/^Payload-Oxum: .*/Payload-Oxum: $(find data -type f -printf '%s\n' | awk '{s+=$1} END {print s}').$(find data -type f | wc -l)/" bag-info.txt &&
  sha256sum bagit.txt bag-info.txt manifest-sha256.txt >tagmanifest-sha256.txt)
run_pilot 1 verify tampered
expect_in err "[vectors] data/vectors.npy: has 9 rows for 10 accepted items"

# An embedding stage refuses allowed_categories: there is nothing to allow.
sed 's/"device": "auto",/"device": "auto", "allowed_categories": ["en"],/' proj/config/embed.json >proj/config/bad.json
run_pilot 2 run --params proj/config/bad.json --runs-dir runs --run-id bad
expect_in err "allowed_categories"
expect_in err "applies only to a stage that classifies"
test ! -e runs/bad || fail "a refused run left a folder"
echo "ok"
