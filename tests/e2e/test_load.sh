#!/usr/bin/env bash
# `pilot load` end to end on the bundled models, bounded in count and time: a rate, a
# concurrency, every outcome forced (refused at capacity, rejected, timed out), the SLO met and
# missed (exit 0 and 4), a generator's TTFT/TPOT/ITL, a ladder and a peak search, verify catching
# an edited record, status, an interrupt (exit 130, the folder kept and verifying), a resume
# refused, and bad input refused with nothing written.
source "$(dirname "$0")/lib.sh"
copy_project
P=$WORK/proj/config

# lp SRC DST 'python on d': parameters from a bundled file, edited.
lp() {
  python3 - "$1" "$2" "$3" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
exec(sys.argv[3])
open(sys.argv[2], "w").write(json.dumps(d, indent=2) + "\n")
PYEOF
}
# A generous SLO, so that timing on a shared machine cannot decide the test.
lp "$P/pilot.json" "$P/l.json" 'd["service"]["slo"] = {"percentile": 0.9, "confidence": 0.9, "e2e_ms": 5000}; d["device"] = "cpu"'

# check_folder DIR: verify passes; every request is one line of requests.jsonl and of the CSV;
# each step's outcomes add up to its issued count; every item id is the manifest's.
check_folder() {
  run_pilot 0 verify "$1"
  expect_in "$WORK/out" "verify: ok"
  python3 - "$1" <<'PYEOF'
import csv, json, sys
d = sys.argv[1]
load = json.load(open(d + "/data/load.json"))
man = json.load(open(d + "/data/manifest.json"))
ids = {i["id"] for i in man["items"]}
lines = [json.loads(l) for l in open(d + "/data/requests.jsonl")]
rows = list(csv.DictReader(open(d + "/data/requests.csv")))
assert len(rows) == len(lines), (len(rows), len(lines))
for k, s in enumerate(load["steps"]):
    f = s["figures"]
    mine = [l for l in lines if l["step"] == k]
    assert [l["request"] for l in mine] == list(range(f["issued"])), "request ids run 0..n-1"
    outs = [l["outcome"] for l in mine]
    for o in ("completed", "over_capacity", "rejected", "timed_out", "failed"):
        assert outs.count(o) == f[o], (k, o, outs.count(o), f[o])
    assert sum(f[o] for o in ("completed", "over_capacity", "rejected", "timed_out", "failed")) == f["issued"]
    assert f["e2e_ms"]["p99"]["count"] == f["completed"]
for l in lines:
    assert l["item"] in ids, l["item"]
PYEOF
}

# A rate, constant arrivals, 480 requests (40 turns of the 12 items): the default manifest's 3 rejected items of 12 are
# rejected at every turn of the cycle, the rest complete.
run_pilot 0 load --params "$P/l.json" --rate 400 --requests 480 --arrivals constant --out "$WORK/L1"
expect_in "$WORK/out" "issued 480 = completed 360 + over capacity 0 + rejected 120"
expect_in "$WORK/out" "SLO (p90.0: e2e_ms <= 5000.00, at 90.0% confidence): met"
expect_in "$WORK/out" "cold start: model load"
check_folder "$WORK/L1"
python3 - "$WORK/L1" <<'PYEOF'
import json, sys
d = sys.argv[1]
load = json.load(open(d + "/data/load.json"))
rec = json.load(open(d + "/data/run.json"))
assert rec["folder_kind"] == "load" and rec["state"] == "finished"
assert rec["service"]["max_batch"] == 8 and rec["service"]["slo"]["e2e_ms"] == 5000
s = load["steps"][0]
assert s["mode"] == "rate" and s["rate"] == 400 and s["arrivals"] == "constant"
assert abs(s["figures"]["offered_per_s"] - 400) < 1e-6, s["figures"]["offered_per_s"]
assert load["cold_start"]["first_request_ms"] > 0
lines = [json.loads(l) for l in open(d + "/data/requests.jsonl")]
# Constant arrivals every 2.5 ms from the step's start, whatever the server did.
for l in lines[:50]:
    assert abs(l["arrived_ms"] - 2.5 * (l["request"] + 1)) < 1e-3, l
rejected = {l["item"] for l in lines if l["outcome"] == "rejected"}
assert len(rejected) == 3 and all(l.get("reason") for l in lines if l["outcome"] == "rejected")
assert all(l["batch"] <= 8 for l in lines)
PYEOF
run_pilot 0 status "$WORK/L1"
expect_in "$WORK/out" "load L1: finished"
expect_in "$WORK/out" "1 step(s) measured"
# A load folder does not resume.
run_pilot 2 resume "$WORK/L1"
expect_in "$WORK/err" "does not resume"

# The SLO missed: exit 4, the folder still whole.
lp "$P/l.json" "$P/strict.json" 'd["service"]["slo"]["e2e_ms"] = 0.001'
run_pilot 4 load --params "$P/strict.json" --rate 400 --requests 100 --out "$WORK/L2" --json
python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["exit_code"] == 4 and j["load"]["verdict"]["slo_met"] is False' "$WORK/out"
check_folder "$WORK/L2"

# At capacity: a queue of 2 and batches of 1 under 200,000 requests/s (600 arrive in 3 ms) refuse some; a deadline of
# 1 ms with a queue that grows to 200 times some out.
lp "$P/l.json" "$P/small.json" 'd["service"].update(queue_bound=2, max_batch=1, max_wait_ms=0)'
run_pilot 4 load --params "$P/small.json" --rate 200000 --requests 600 --arrivals constant --out "$WORK/L3"
check_folder "$WORK/L3"
python3 -c 'import json,sys; f=json.load(open(sys.argv[1]))["steps"][0]["figures"]; assert f["over_capacity"] > 0, f' "$WORK/L3/data/load.json"
lp "$P/l.json" "$P/grow.json" 'd["service"].update(queue_bound=2, at_capacity="grow", grow_bound=200, max_batch=1, max_wait_ms=0, deadline_ms=1)'
run_pilot 4 load --params "$P/grow.json" --rate 200000 --requests 600 --arrivals constant --out "$WORK/L4"
check_folder "$WORK/L4"
python3 - "$WORK/L4" <<'PYEOF'
import json, sys
f = json.load(open(sys.argv[1] + "/data/load.json"))["steps"][0]["figures"]
assert f["timed_out"] > 0, f
for l in map(json.loads, open(sys.argv[1] + "/data/requests.jsonl")):
    if l["outcome"] == "timed_out":
        assert abs(l["finished_ms"] - l["arrived_ms"] - 1) < 2e-3, l  # at its deadline
PYEOF

# A concurrency: 4 clients, whose requests arrive together and are batched together.
run_pilot 0 load --params "$P/l.json" --concurrency 4 --requests 120 --out "$WORK/L5"
check_folder "$WORK/L5"
python3 - "$WORK/L5" <<'PYEOF'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1] + "/data/requests.jsonl")]
served = [l for l in lines if l["batch"] > 0]
assert max(l["batch"] for l in served) >= 2, "clients' requests share batches"
assert all(l["batch"] <= 4 for l in served), "never more in a batch than clients"
PYEOF

# A generator: TTFT, TPOT and ITL per request, and its output tokens those of `pilot run`.
lp "$P/generate.json" "$P/g.json" 'd["service"]["slo"] = {"percentile": 0.9, "confidence": 0.9, "e2e_ms": 5000, "ttft_ms": 5000, "tpot_ms": 5000}'
run_pilot 0 load --params "$P/g.json" --rate 200 --requests 60 --out "$WORK/G1"
expect_in "$WORK/out" "TTFT p50"
check_folder "$WORK/G1"
run_pilot 0 run --params "$P/g.json" --runs-dir "$WORK/runs" --run-id g
python3 - "$WORK/G1" "$WORK/runs/g" <<'PYEOF'
import json, sys
load = json.load(open(sys.argv[1] + "/data/load.json"))["steps"][0]["figures"]
for key in ("ttft_ms", "tpot_ms", "itl_ms"):
    assert load[key]["p99"]["count"] > 0, key
tokens = {}
for r in map(json.loads, open(sys.argv[2] + "/data/results.jsonl")):
    if r["status"] == "accepted":
        tokens[r["id"]] = len(r["completion_ids"])
n = 0
for l in map(json.loads, open(sys.argv[1] + "/data/requests.jsonl")):
    if l["outcome"] != "completed":
        continue
    n += 1
    assert l["output_tokens"] == tokens[l["item"]], (l, tokens[l["item"]])
    assert len(l["itl_ms"]) == l["output_tokens"] - 1
    assert l["ttft_ms"] >= l["started_ms"] - l["arrived_ms"]
    assert l["ttft_ms"] <= l["finished_ms"] - l["arrived_ms"] + 1e-3
    if l["itl_ms"]:
        assert abs(l["tpot_ms"] - sum(l["itl_ms"]) / len(l["itl_ms"])) < 2e-3
assert n > 0
PYEOF

# A ladder and a peak search, a few short steps each.
run_pilot 0 load --params "$P/l.json" --rate-ladder --duration 0.25 --max-steps 3 --out "$WORK/LAD"
check_folder "$WORK/LAD"
python3 - "$WORK/LAD" <<'PYEOF'
import json, sys
load = json.load(open(sys.argv[1] + "/data/load.json"))
steps = load["steps"]
assert 2 <= len(steps) <= 3 and steps[0]["mode"] == "concurrency" and steps[0]["concurrency"] == 1
r0 = steps[0]["figures"]["achieved_per_s"]
for k, s in enumerate(steps[1:]):
    assert abs(s["rate"] - r0 * 2 ** k) < 1e-6 * s["rate"], (s["rate"], r0)
PYEOF
run_pilot 0 load --params "$P/l.json" --find-peak --rate 200 --duration 0.5 --max-steps 3 --out "$WORK/PK"
expect_in "$WORK/out" "the highest rate that met it:"
check_folder "$WORK/PK"
python3 - "$WORK/PK" <<'PYEOF'
import json, sys
load = json.load(open(sys.argv[1] + "/data/load.json"))
met = [s["rate"] for s in load["steps"] if s["mode"] == "rate" and s["figures"]["slo_met"]]
assert load["steps"][1]["rate"] == 200, "the search starts at --rate"
assert load["verdict"]["peak_rate"] == max(met), (load["verdict"], met)
PYEOF

# verify recomputes every figure from the records: an outcome changed (the bag re-hashed as a
# forger would) is caught.
cp -a "$WORK/L1" "$WORK/L1x"
python3 - "$WORK/L1x" <<'PYEOF'
import hashlib, json, os, sys
d = sys.argv[1]
p = d + "/data/requests.jsonl"
lines = open(p).read().splitlines()
r = json.loads(lines[0]); r["outcome"] = "timed_out"; lines[0] = json.dumps(r, separators=(",", ":"))
open(p, "w").write("\n".join(lines) + "\n")
def sha(f): return hashlib.sha256(open(f, "rb").read()).hexdigest()
m = [l.split("  ", 1) for l in open(d + "/manifest-sha256.txt").read().splitlines()]
open(d + "/manifest-sha256.txt", "w").write("".join(f"{sha(d + '/' + f)}  {f}\n" for _, f in m))
t = [l.split("  ", 1) for l in open(d + "/tagmanifest-sha256.txt").read().splitlines()]
open(d + "/tagmanifest-sha256.txt", "w").write("".join(f"{sha(d + '/' + f)}  {f}\n" for _, f in t))
PYEOF
run_pilot 1 verify "$WORK/L1x"
expect_in "$WORK/err" "[load] data/load.json: step 0: its figures differ"

# Interrupted: SIGINT ends issuing, the queue is served, the folder is written and verifies (exit 130).
"$PILOT" load --params "$P/l.json" --rate 200 --duration 60 --out "$WORK/INT" >"$WORK/int.out" 2>"$WORK/int.err" &
pid=$!
wait_for "$WORK/INT/data/run.json" "running"
sleep 0.5
kill -INT "$pid"
rc=0
wait "$pid" || rc=$?
[ "$rc" -eq 130 ] || { cat "$WORK/int.out" "$WORK/int.err"; fail "an interrupted load exited $rc, not 130"; }
check_folder "$WORK/INT"
python3 -c 'import json,sys; l=json.load(open(sys.argv[1])); assert l["interrupted"] and l["steps"][0]["interrupted"]' "$WORK/INT/data/load.json"
run_pilot 0 status "$WORK/INT"
expect_in "$WORK/out" "load INT: interrupted"

# Bad input: refused (exit 2) naming the thing at fault, nothing written.
mkdir -p "$WORK/empty-runs"
before=$(tree_sum "$WORK/empty-runs")
bad() {  # bad 'expected text' ARGS...
  local want=$1; shift
  run_pilot 2 load --runs-dir "$WORK/empty-runs" "$@"
  expect_in "$WORK/err" "$want"
  [ "$(tree_sum "$WORK/empty-runs")" = "$before" ] || fail "a refused load wrote into the runs folder"
  [ -z "$(ls -A "$WORK/empty-runs")" ] || fail "a refused load created a folder"
}
bad "exactly one of --rate" --params "$P/l.json" --requests 5
bad "exactly one of --rate" --params "$P/l.json" --rate 5 --concurrency 2 --requests 5
bad "give --duration or --requests" --params "$P/l.json" --rate 5
bad "--arrivals" --params "$P/l.json" --rate 5 --requests 5 --arrivals gamma:0
bad "--arrivals" --params "$P/l.json" --rate 5 --requests 5 --arrivals weibull
bad "exceeds the queue's room" --params "$P/l.json" --concurrency 65 --requests 5
lp "$P/l.json" "$P/nosvc.json" 'del d["service"]'
bad "no \`service\`" --params "$P/nosvc.json" --rate 5 --requests 5
lp "$P/l.json" "$P/badsvc.json" 'd["service"]["max_batch"] = 0'
bad "service.max_batch" --params "$P/badsvc.json" --rate 5 --requests 5
lp "$P/l.json" "$P/ttft.json" 'd["service"]["slo"]["ttft_ms"] = 5'
bad "service.slo.ttft_ms" --params "$P/ttft.json" --rate 5 --requests 5
run_pilot 2 load --params "$P/l.json" --rate 5 --requests 5 --out "$WORK/L1"
expect_in "$WORK/err" "never reuses a folder"
echo "load: ok"
