#!/usr/bin/env bash
# Checks pilot on a GPU machine that has PyTorch (with its CUDA libtorch) but no package
# registry and perhaps no nvcc. Builds pilot against that PyTorch's own libtorch with
# scripts/build-here.sh, the documented command (the pinned wheel cannot travel there; the
# script records that torch's version beside the pin),
# then runs `pilot calibrate` (doctor, the bundled pilot and a sweep: the first rented hour,
# docs/first-hour.md) and `pilot verify` of its folder on the device, exports the
# bundled model to a .pt2 package for the device and runs the pilot on it (PyTorch >= 2.6),
# then `pilot adapt` (and a stopped adaptation resumed), then `pilot sweep` and a run with its batch plan, then `run --workers` (one shard per device)
# and an export of the merged bag (the generation pilot and, on a GPU, the KV benchmark after
# the verify of the calibration), writing every output and log under OUT_DIR
# (summary.txt first).
#
#   scripts/gpu-check.sh OUT_DIR [--device cuda|rocm|cpu] [--debs DIR] [--prebuilt BUILD_DIR]
#                        [--prebuilt-pt2 FILE]
#   scripts/gpu-check.sh --fetch-debs DIR      (on a Debian 12 machine: the .debs to carry)
#
# --prebuilt BUILD_DIR configures as usual (the configure step is still checked) but uses the
# pilot already built in BUILD_DIR instead of building again: what the test suite's run of the
# CPU path does, to save a second build of pilot on a 2-core machine. --prebuilt-pt2 FILE
# likewise takes the bundled model's .pt2 package for the device from FILE instead of
# exporting it (the test suite passes the CPU one e2e.pt2_export wrote; about 25 s).
#
# Header-only and small dependencies missing on the GPU machine come from .deb files carried
# along (--debs DIR, default third_party/debs; with the nvidia-cuda-crt wheel build-here.sh
# takes from there): they are unpacked under OUT_DIR/prefix, and
# pilot is built with header-only logging so that nothing from them is needed at run time.
# The Python is python3, or $PILOT_PYTHON: the test suite runs the script's CPU path with the
# pinned wheel's venv (build/venv/bin/python).
set -uo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
debs_pkgs=(libcli11-dev nlohmann-json3-dev libspdlog-dev libspdlog1.10 libfmt-dev libfmt9 libssl-dev libssl3
           libicu-dev libicu72 libsentencepiece-dev libsentencepiece0)

if [ "${1:-}" = "--fetch-debs" ]; then
  [ -n "${2:-}" ] || { echo "usage: gpu-check.sh --fetch-debs DIR" >&2; exit 2; }
  # Absolute before the cd, so that apt-get and pip write into the same folder.
  dir=$(mkdir -p "$2" && cd "$2" && pwd) || exit $?
  cd "$dir" && apt-get download "${debs_pkgs[@]}" || exit $?
  # The crt/ headers the CUDA 13 runtime headers include (scripts/build-here.sh), pinned. A
  # CUDA 12 torch needs nvidia-cuda-nvcc-cu12 of its series instead: put that wheel in DIR too
  # (pip download --no-deps --only-binary=:all: nvidia-cuda-nvcc-cu12==12.N.* -d DIR).
  pip_py=$root/build/venv/bin/python
  [ -x "$pip_py" ] || pip_py=python3
  "$pip_py" -m pip download -q --no-deps --only-binary=:all: --require-hashes \
    -r <(awk '/^nvidia-cuda-crt==/ { on = 1 } on { print; if ($0 !~ /\\$/) exit }' "$root/requirements-cuda.txt") -d "$dir" || exit $?
  ls -1 "$dir" && ls "$dir"/nvidia_cuda_crt-*.whl >/dev/null || exit 1
  exit 0
fi

out=${1:?usage: gpu-check.sh OUT_DIR [--device cuda|rocm|cpu] [--debs DIR] [--prebuilt BUILD_DIR]}
shift
device=cuda
debs=$root/third_party/debs
prebuilt=""
prebuilt_pt2=""
while [ $# -gt 0 ]; do
  case $1 in
    --device) device=$2; shift 2 ;;
    --debs) debs=$2; shift 2 ;;
    --prebuilt) prebuilt=$(cd "$2" && pwd); shift 2 ;;
    --prebuilt-pt2) prebuilt_pt2=$(cd "$(dirname "$2")" && pwd)/$(basename "$2"); shift 2 ;;
    *) echo "gpu-check: unknown option $1" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
out=$(cd "$out" && pwd)
summary=$out/summary.txt
: >"$summary"
note() { echo "$*" | tee -a "$summary"; }
failed=0
step() {  # step NAME COMMAND...: runs, logs to OUT/NAME.log, records the exit code
  local name=$1; shift
  local t0=$(date +%s.%N) rc=0
  "$@" >"$out/$name.log" 2>&1 || rc=$?
  note "$(printf '%-22s exit %-3s %6.1f s' "$name" "$rc" "$(awk "BEGIN{print $(date +%s.%N) - $t0}")")"
  return $rc
}

note "pilot gpu-check on $(hostname) at $(date -u +%FT%TZ); device $device; source $(git -C "$root" describe --always --dirty 2>/dev/null || echo unknown)"
{ command -v nvidia-smi >/dev/null && nvidia-smi; command -v rocm-smi >/dev/null && rocm-smi; } >"$out/smi.txt" 2>&1
nproc >"$out/nproc.txt"; uname -a >"$out/uname.txt"

# libtorch: the importable PyTorch's (scripts/build-here.sh stops without one).
py=${PILOT_PYTHON:-python3}
export PILOT_PYTHON=$py
have_torch=0
if "$py" -c 'import torch;print("torch", torch.__version__, "cuda", torch.version.cuda, "hip", torch.version.hip, "cxx11abi", torch._C._GLIBCXX_USE_CXX11_ABI, "gpus", torch.cuda.device_count())' >"$out/torch.txt" 2>"$out/torch-import.log"; then
  have_torch=1
  note "libtorch: $(cat "$out/torch.txt")"
  # The machine's torch beside the one CI builds against (requirements-torch.txt).
  here=$("$py" -c 'import torch;print(torch.__version__.split("+")[0])' 2>/dev/null)
  pinned=$(sed -n 's/^torch==\([^ ]*\).*/\1/p' "$root/requirements-torch.txt")
  note "torch here $here; CI pins $pinned: $([ "$here" = "$pinned" ] && echo "the same version" || echo "DIFFERENT: CI compiled other headers than this build uses")"
else
  note "libtorch: $py cannot import torch ($(tail -1 "$out/torch-import.log"))"
fi

# Carried .debs: unpack into OUT/prefix.
cmake_extra=()
if ls "$debs"/*.deb >/dev/null 2>&1; then
  mkdir -p "$out/prefix"
  for d in "$debs"/*.deb; do
    if command -v dpkg-deb >/dev/null; then dpkg-deb -x "$d" "$out/prefix"
    else (cd "$out/prefix" && ar p "$d" data.tar.xz | tar xJ 2>/dev/null || ar p "$d" data.tar.zst | tar --zstd -x); fi
  done
  # Through the environment, so that a ROCm torch's own prefix (build-here.sh) is kept.
  export CMAKE_PREFIX_PATH="$out/prefix/usr${CMAKE_PREFIX_PATH:+:$CMAKE_PREFIX_PATH}"
  cmake_extra+=(-DPILOT_HEADER_ONLY_LOGGING=ON)
  # The machine's own OpenSSL when it has the headers; the carried one only otherwise.
  [ -f /usr/include/openssl/evp.h ] || cmake_extra+=("-DOPENSSL_ROOT_DIR=$out/prefix/usr")
  # The tokenizers' shared libraries (ICU 72, libsentencepiece) are needed at run time too:
  # only they, linked into one folder, so that no carried library shadows the machine's own.
  mkdir -p "$out/prefix/run-libs"
  for lib in "$out"/prefix/usr/lib/*/libicu{uc,data}.so.72* "$out"/prefix/usr/lib/*/libsentencepiece.so.0*; do
    [ -e "$lib" ] && ln -sf "$lib" "$out/prefix/run-libs/"
  done
  export LD_LIBRARY_PATH="$out/prefix/run-libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  note "unpacked $(ls "$debs"/*.deb | wc -l) carried .deb files into $out/prefix"
fi

build=$out/build
here_opts=(--configure-only --build-dir "$build" --wheels "$debs")
[ "$device" = cpu ] && here_opts+=(--cpu)  # the CPU path needs no CUDA headers
step configure "$root/scripts/build-here.sh" "${here_opts[@]}" -- "${cmake_extra[@]}" || failed=1
grep -E "build-here: torch|pilot: libtorch" "$out/configure.log" | tee -a "$summary"
if [ -n "$prebuilt" ]; then
  note "build: skipped; using the pilot built in $prebuilt"
  pilot=$prebuilt/pilot
else
  step build cmake --build "$build" --target pilot pilot-bench -j "$(nproc)" || failed=1
  pilot=$build/pilot
fi
if [ ! -x "$pilot" ]; then
  note "gpu-check: the build failed; see $out/configure.log and $out/build.log"
  exit 1
fi

cd "$root"
# The first rented hour, as users run it (docs/first-hour.md): `pilot calibrate` runs the
# doctor, the bundled pilot and a sweep on the device into one calibration folder, which
# verify checks whole (the nested folders too). Its doctor report and logs are copied beside
# the others.
mkdir -p "$out/runs"
cal=$out/runs/calibration-$device
cal_sizes=1,4,16,64
[ "$device" = cpu ] && cal_sizes=1,2,4
step calibrate "$pilot" calibrate --device "$device" --out "$cal" --batch-sizes "$cal_sizes" || failed=1
grep -E "^(doctor|pilot|sweep) +exit|measured on|fingerprint" "$out/calibrate.log" | tee -a "$summary"
cp "$cal/data/doctor.json" "$out/doctor.json" 2>/dev/null || cp "$cal.calibrating/data/doctor.json" "$out/doctor.json" 2>/dev/null
for log in doctor pilot sweep; do
  cp "$cal/data/logs/$log.log" "$out/cal-$log.log" 2>/dev/null || cp "$cal.calibrating/data/logs/$log.log" "$out/cal-$log.log" 2>/dev/null
done
"$py" - "$out/doctor.json" <<'PY' | tee "$out/doctor.log" | tee -a "$summary"
import json, sys
try:
    d = json.load(open(sys.argv[1]))
except Exception as e:
    sys.exit(f"no doctor report: {e}")
for c in d.get("checks", []):
    print(f"  {c.get('status')} {c.get('name')}: {c.get('detail', '')}")
PY
cp "$out/cal-pilot.log" "$out/pilot.log" 2>/dev/null
grep -E "^run |latency|verify:|acceptance" "$out/pilot.log" | tee -a "$summary"
step verify "$pilot" verify "$cal" || failed=1
tail -1 "$out/verify.log" | tee -a "$summary"
# The generation pilot (config/generate.json: the bundled generator's TorchScript step) on the
# device, then the KV cache predicted against the device's measured peak at three points of
# context x batch (bench/generation-kv.sh; on a GPU only: on a CPU it allocates 2.5 GB of RSS).
if step generate "$pilot" run --params "$root/config/generate.json" --device "$device" --runs-dir "$out/runs" \
     --run-id "generate-$device"; then
  grep -E "^run |^generation:|^exact match|^verify:" "$out/generate.log" | tee -a "$summary"
else
  failed=1
fi
if [ "$device" != cpu ]; then
  if step generation-kv env PILOT_PYTHON="$py" "$root/bench/generation-kv.sh" --device "$device" "$pilot"; then
    tail -5 "$out/generation-kv.log" | tee -a "$summary"
  else
    failed=1
  fi
  # The same in bfloat16 (the dtype a card serves in): half the bytes a position.
  if step generation-kv-bf16 env PILOT_PYTHON="$py" "$root/bench/generation-kv.sh" --device "$device" \
       --dtype bfloat16 "$pilot"; then
    tail -5 "$out/generation-kv-bf16.log" | tee -a "$summary"
  else
    failed=1
  fi
  # Seeded sampling on the device: in-flight at batch 4 against static at batch 3, compared
  # (identical completions but at listed near-ties); then a generator sweep, whose table of
  # sequences per card by context is known on a GPU.
  python3 - "$root/config/generate.json" "$out" <<'PY'
import json, os, sys
p = json.load(open(sys.argv[1]))
base = os.path.dirname(os.path.abspath(sys.argv[1]))
for key in ("manifest",):
    p[key] = os.path.join(base, p[key])
p["stage"]["model"] = os.path.join(base, p["stage"]["model"])
p["stage"]["tokenizer"]["file"] = os.path.join(base, p["stage"]["tokenizer"]["file"])
p["acceptance"] = {}
p["generation"].update(temperature=0.8, top_k=20, top_p=0.95, seed=5)
json.dump(p, open(os.path.join(sys.argv[2], "sampled.json"), "w"), indent=1)
p["generation"]["batching"] = "static"
p["batch_size"] = 3
json.dump(p, open(os.path.join(sys.argv[2], "sampled-static.json"), "w"), indent=1)
PY
  if step sampled "$pilot" run --params "$out/sampled.json" --device "$device" --runs-dir "$out/runs" \
       --run-id "sampled-$device" &&
     step sampled-static "$pilot" run --params "$out/sampled-static.json" --device "$device" --runs-dir "$out/runs" \
       --run-id "sampled-static-$device"; then
    step sampled-compare "$pilot" compare "$out/runs/sampled-$device" "$out/runs/sampled-static-$device" --json
    python3 - "$out/sampled-compare.log" <<'PY' | tee -a "$summary"
import json, sys
text = open(sys.argv[1]).read()
items = json.loads(text[text.index("{"):])["items"]
print(f"sampled, in-flight batch 4 against static batch 3: {items['identical_completions']} identical completions, "
      f"{items['near_tie_divergences']} near-tie divergences, {items['differences_by_kind']}")
PY
  else
    failed=1
  fi
  if step generation-sweep "$pilot" sweep --params "$root/config/generate.json" --device "$device" --groups 2 \
       --batch-sizes 1,4,16,64 --repeats 2 --out "$out/runs/generation-sweep-$device"; then
    sed -n '/^## Sequences that fit/,$p' "$out/runs/generation-sweep-$device/data/sweep.md" | tee -a "$summary"
  else
    failed=1
  fi
fi
pilot_dir=$cal/data/pilot

# The adaptation pilot on the device, then one stopped after 100 steps and resumed: on a GPU
# the two need not be bitwise identical (non-deterministic kernels); their accuracies are noted.
step adapt "$pilot" adapt --device "$device" --runs-dir "$out/runs" --run-id adapt-$device || failed=1
grep -E "^adapt |evaluation accuracy|^training:|^checkpoints:|^verify:" "$out/adapt.log" | tee -a "$summary"
step adapt-stop "$pilot" adapt --device "$device" --runs-dir "$out/runs" --run-id adapt-stop-$device --stop-after 100
step adapt-resume "$pilot" resume "$out/runs/adapt-stop-$device" || failed=1
grep -E "evaluation accuracy" "$out/adapt-resume.log" | sed 's/^/resumed: /' | tee -a "$summary"
a=$(sha256sum "$out/runs/adapt-$device/data/model/adapted.pt" 2>/dev/null | cut -c1-64)
b=$(sha256sum "$out/runs/adapt-stop-$device/data/model/adapted.pt" 2>/dev/null | cut -c1-64)
note "adapt: uninterrupted and stopped+resumed models are $([ -n "$a" ] && [ "$a" = "$b" ] && echo "bitwise identical" || echo "NOT bitwise identical ($a vs $b)")"

# The .pt2 path: the bundled model exported on this machine for this device (a package is
# tied to its device and torch version, so none travels), then the bundled pilot on it,
# whose outcomes must equal the TorchScript run's above.
if [ "$have_torch" = 1 ] && "$py" -c 'import torch, sys; v = tuple(int(x) for x in torch.__version__.split("+")[0].split(".")[:2]); sys.exit(v < (2, 6))' 2>/dev/null; then
  pt2_device=$([ "$device" = cpu ] && echo cpu || echo cuda)
  if [ -n "$prebuilt_pt2" ]; then
    export_pt2=(cp "$prebuilt_pt2" "$out/langid-$pt2_device.pt2")
  else
    export_pt2=(env TORCHINDUCTOR_CACHE_DIR="$out/inductor-cache" "$py" "$root/scripts/export-pt2.py"
      "$root/data/models/langid/langid.pt" "$out/langid-$pt2_device.pt2" --device "$pt2_device")
  fi
  if step export-pt2 "${export_pt2[@]}"; then
    python3 - "$root/config/pilot.json" "$out/pt2.json" "$out/langid-$pt2_device.pt2" <<'PY'
import hashlib, json, os, sys
base, out, package = sys.argv[1:4]
p = json.load(open(base))
p["manifest"] = os.path.join(os.path.dirname(os.path.abspath(base)), p["manifest"])
p["stage"].update(kind="aoti-classifier", model=package,
                  model_sha256=hashlib.sha256(open(package, "rb").read()).hexdigest())
json.dump(p, open(out, "w"), indent=1)
PY
    if step pilot-pt2 "$pilot" run --params "$out/pt2.json" --device "$device" --runs-dir "$out/runs" --run-id pt2-$device; then
      python3 - "$pilot_dir/data/results.jsonl" "$out/runs/pt2-$device/data/results.jsonl" <<'PY' | tee -a "$summary" || failed=1
import json, sys
a = [json.loads(l) for l in open(sys.argv[1])]
b = [json.loads(l) for l in open(sys.argv[2])]
same = sum(all(x.get(k) == y.get(k) for k in ("id", "status", "category", "reason")) for x, y in zip(a, b))
worst = max([abs(x["confidence"] - y["confidence"]) for x, y in zip(a, b) if "confidence" in x and "confidence" in y] or [0])
print(f".pt2 vs TorchScript on {sys.argv[2].split('/')[-3]}: {same}/{len(a)} items agree, max |confidence difference| {worst:.2e}")
sys.exit(0 if same == len(a) == len(b) and worst <= 1e-3 else 1)
PY
    else
      failed=1
    fi
  else
    failed=1
  fi
else
  note "the .pt2 path: skipped (no PyTorch >= 2.6 here)"
fi

# pilot's own sweep on 3,000 generated documents of 1-64 sentences (bench/sweep-corpus.py),
# then a run with its batch plan; sweep.md and report.html are copied beside the logs.
python3 "$root/bench/sweep-corpus.py" 3000 "$out/corpus" >/dev/null
cat >"$out/sweep.json" <<EOT
{"manifest": "$out/corpus/manifest.jsonl",
 "stage": {"kind": "torchscript-classifier", "model": "$root/data/models/langid/langid.pt"},
 "allowed_categories": ["en", "fr", "de", "es", "it", "pt", "nl", "ja"], "device": "$device", "batch_size": 64}
EOT
sizes=1,4,16,64,256,1024
[ "$device" = cpu ] && sizes=1,4,16  # the CPU path only shows that the steps work
if step sweep "$pilot" sweep --params "$out/sweep.json" --batch-sizes "$sizes" --out "$out/runs/sweep-$device"; then
  cp "$out/runs/sweep-$device/data/sweep.md" "$out/runs/sweep-$device/data/report.html" "$out/" 2>/dev/null || true
  sed -n '/^## Recommendation/,/^## Headroom/p' "$out/sweep.md" | tee -a "$summary"
  step sweep-plan "$pilot" run --params "$out/sweep.json" --batch-plan "$out/runs/sweep-$device" --runs-dir "$out/runs" \
    --run-id "planned-$device" --quiet || failed=1
else
  failed=1
fi
# Shards on this host: --workers over the corpus (one device each: cuda:0, cuda:1, ... or
# cpu), merged into one bag; then the merged bag exported and verified.
workers=2
if [ "$device" != cpu ]; then
  gpus=$(nvidia-smi -L 2>/dev/null | wc -l || echo 1)
  [ "$gpus" -ge 1 ] 2>/dev/null && workers=$gpus
fi
if step workers "$pilot" run --params "$out/sweep.json" --workers "$workers" --device "$device" --runs-dir "$out/runs" \
     --run-id "workers-$device"; then
  sed -n '/^throughput:/p' "$out/workers.log" | tee -a "$summary"
  step export "$pilot" export "$out/runs/workers-$device" "$out/exported-$device" || failed=1
else
  failed=1
fi
note "gpu-check: $([ $failed -eq 0 ] && echo "all steps passed" || echo "SOME STEPS FAILED") — logs in $out"
exit $failed
