# GPU-positive (label gpu): the bundled pilot on the GPU gives the outcomes it gives on the
# CPU (same status and category, confidences within 1e-3, doctor's model tolerance). Skipped
# (exit 77, reported as skipped) where libtorch sees no GPU.
source "$(dirname "$0")/lib.sh"
copy_project
"$PILOT" doctor --device cpu --json >doctor.json || true
gpus=$(python3 -c 'import json,sys; print(next(c for c in json.load(open(sys.argv[1]))["checks"] if c["name"]=="libtorch")["data"]["gpu_count"])' doctor.json)
if [ "$gpus" = 0 ]; then
  echo "SKIP: libtorch sees no GPU here"
  exit 77
fi
run_pilot 0 doctor --params proj/config/pilot.json --device cuda
run_pilot 0 run --params proj/config/pilot.json --runs-dir runs --run-id cpu --device cpu
run_pilot 0 run --params proj/config/pilot.json --runs-dir runs --run-id gpu --device cuda
python3 - runs/cpu/data/results.jsonl runs/gpu/data/results.jsonl <<'PY'
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
assert len(a) == len(b)
for x, y in zip(a, b):
    for key in ("id", "status", "category", "reason"):
        assert x.get(key) == y.get(key), (key, x, y)
    if "confidence" in x:
        assert abs(x["confidence"] - y["confidence"]) <= 1e-3, (x, y)
PY
echo PASS
