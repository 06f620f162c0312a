#!/usr/bin/env bash
# The worked example of docs/first-hour.md, end to end on this CPU: `pilot calibrate` (doctor,
# pilot, sweep in one calibration folder) with the CPU standing in for the card, the folder
# exported off the "machine" with its fingerprint, `plan --from` it against the stand-in price
# row (rate and memory measured, no --assume-scaling), and `decide` on a copy of its pilot:
# go, beside a plan from an assumed rate, which decide will not call go; decide with the
# calibration folder itself as evidence, checked against its fingerprint. Then what must be
# refused: an --out that exists or lies in a pilot folder, a doctor that fails (nothing
# assembled; the report and logs kept), a nested folder or the record edited and re-hashed, a
# nested folder swapped for a link, and a wrong --expect. Where the deliverable is a service: a
# load test on the "card" (its fingerprint noted), `plan --from` it with --rate (replicas, cost per
# million requests), `decide --load --expect-load` (go on an SLO met, revise-config on one missed
# at every rate), and a load folder edited and re-hashed refused by both.
source "$(dirname "$0")/lib.sh"
copy_project
cd "$WORK/proj"
field() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }
# rehash DIR: the bag's manifests and Payload-Oxum written again over what it holds now (a
# forger's step, which only a check beyond fixity catches).
rehash() {
  python3 - "$1" <<'EOF'
import hashlib, os, sys
d = sys.argv[1]
sha = lambda p: hashlib.sha256(open(os.path.join(d, p), "rb").read()).hexdigest()
files = sorted(os.path.relpath(os.path.join(b, f), d) for b, _, fs in os.walk(os.path.join(d, "data")) for f in fs)
open(os.path.join(d, "manifest-sha256.txt"), "w").write("".join(f"{sha(p)}  {p}\n" for p in files))
size = sum(os.path.getsize(os.path.join(d, p)) for p in files)
info = [l for l in open(os.path.join(d, "bag-info.txt")).read().splitlines() if not l.startswith("Payload-Oxum:")]
open(os.path.join(d, "bag-info.txt"), "w").write("\n".join(info + [f"Payload-Oxum: {size}.{len(files)}"]) + "\n")
tags = ["bagit.txt", "bag-info.txt", "manifest-sha256.txt"]
open(os.path.join(d, "tagmanifest-sha256.txt"), "w").write("".join(f"{sha(p)}  {p}\n" for p in tags))
EOF
}

# 1. The first hour, on the "card" (this CPU).
run_pilot 0 calibrate --device cpu --out "$WORK/cal" --batch-sizes 1,2,4 --repeats 2
expect_in "$WORK/out" "calibration folder: $WORK/cal"
expect_in "$WORK/err" "calibrate: doctor exited 0"
fp=$(sed -n 's/^fingerprint: //p' "$WORK/out")
[ ${#fp} = 64 ] || fail "no fingerprint printed"
[ ! -e "$WORK/cal.calibrating" ] || fail "the staging folder was left behind"
for f in data/run.json data/doctor.json data/pilot/data/results.jsonl data/sweep/data/sweep.json data/logs/pilot.log data/logs/sweep.log data/logs/doctor.log; do
  [ -f "$WORK/cal/$f" ] || fail "the calibration folder lacks $f"
done
cpu=$(field "$WORK/cal/data/doctor.json" '[c for c in d["checks"] if c["name"] == "host"][0]["data"]["cpu_model"]')
[ "$(field "$WORK/cal/data/run.json" 'd["folder_kind"], d["device"], d["device_class"], d["device_name"], d["doctor"]["ok"]')" = "('calibration', 'cpu', 'cpu', '$cpu', True)" ] \
  || fail "the calibration's record does not name the device its doctor gives"
[ "$(field "$WORK/cal/data/run.json" 'd["pilot"]["fingerprint"]')" = "$(sha256sum <"$WORK/cal/data/pilot/tagmanifest-sha256.txt" | cut -c1-64)" ] \
  || fail "the pilot's fingerprint is not the one recorded"
run_pilot 0 verify "$WORK/cal" --expect "$fp"
expect_in "$WORK/out" "the pilot and sweep folders inside it, each verified in full"
run_pilot 0 status "$WORK/cal"
expect_in "$WORK/out" "calibration cal: finished"
expect_in "$WORK/out" "12/12 items done"

# 2. Off the machine, with its fingerprint.
run_pilot 0 export "$WORK/cal" "$WORK/copied"
expect_in "$WORK/out" "fingerprint: $fp"
run_pilot 0 verify "$WORK/copied" --expect "$fp"

# 3. The plan from the calibration: the card's own rate and memory, no assumption.
run_pilot 0 plan --from "$WORK/copied" --expect "$fp" --corpus-items 5000000 --prices config/prices.stand-in.json \
  --out "$WORK/plan-measured.json"
expect_in "$WORK/out" "basis: calibration folder $WORK/copied"
expect_in "$WORK/out" "the device, as its doctor names it: $cpu"
expect_in "$WORK/out" "measured on this card ($cpu)"
expect_in "$WORK/out" "cpu-stand-in [cpu] (STAND-IN): fit yes"
expect_in "$WORK/out" "is a STAND-IN row"
expect_not_in "$WORK/out" "ASSUMPTION"
python3 - "$WORK/plan-measured.json" "$WORK/copied" <<'EOF' || fail "the plan from the calibration is not its pilot's measurement"
import json, sys
d = json.load(open(sys.argv[1]))
b = d["basis"]
pilot = json.load(open(sys.argv[2] + "/data/pilot/data/report.json"))
assert b["folder_kind"] == "calibration" and b["assume_scaling"] is None, b
assert abs(b["items_per_s_per_card"] - pilot["throughput_items_per_s"]) < 1e-9 * b["items_per_s_per_card"], b
assert {p["rate_basis"] for p in d["plans"]} == {"measured"} and {p["fit"] for p in d["plans"]} == {"yes"}
assert d["cards"][0]["measured_card"] is True and d["cards"][0]["stand_in"] is True
assert d["output"]["measured_bytes"] > 0 and d["output"]["copy_off_hours"] > 0
EOF
# The same corpus from an assumed rate (the CPU pilot x 20 on GPU cards), for comparison.
run_pilot 0 plan --from "$WORK/copied/data/pilot" --corpus-items 5000000 --prices config/prices.example.json \
  --assume-scaling 20 --out "$WORK/plan-assumed.json"
expect_in "$WORK/out" "ASSUMPTION"

# 4. The decision, recorded in a copy of the calibration's pilot (the calibration stays as measured).
run_pilot 0 export "$WORK/copied/data/pilot" "$WORK/pilot"
run_pilot 0 doctor --json
cp "$WORK/out" "$WORK/doctor.json"
run_pilot 0 decide "$WORK/pilot" --doctor "$WORK/doctor.json" --plan "$WORK/plan-assumed.json"
expect_in "$WORK/out" "proposal: measure-first"
run_pilot 0 decide "$WORK/pilot" --doctor "$WORK/doctor.json" --plan "$WORK/plan-measured.json" \
  --decision go --reason "measured on the card: rate, memory and outputs"
expect_in "$WORK/out" "proposal: go"
expect_in "$WORK/out" "the plan was measured by the calibration whose pilot this folder is"
expect_in "$WORK/out" "is a stand-in row of the price file"
run_pilot 0 verify "$WORK/pilot"
run_pilot 0 verify "$WORK/copied" --expect "$fp"  # the calibration is untouched
# The calibration folder itself as evidence, checked against its fingerprint: its record and
# its doctor report (no --doctor) are copied beside the decision.
run_pilot 0 export "$WORK/copied/data/pilot" "$WORK/pilot2"
run_pilot 0 decide "$WORK/pilot2" --calibration "$WORK/copied" --expect-calibration "$fp" \
  --plan "$WORK/plan-measured.json" --decision go --reason "the calibration, checked against its fingerprint"
expect_in "$WORK/out" "proposal: go"
expect_in "$WORK/out" "this folder is the pilot of the calibration (fingerprint $fp), measured on $cpu (cpu), class cpu"
expect_not_in "$WORK/out" "measure on one"
for f in decision-1-calibration.json decision-1-doctor.json decision-1-plan.json; do
  [ -f "$WORK/pilot2/$f" ] || fail "decide did not keep $f"
done
cmp "$WORK/pilot2/decision-1-calibration.json" "$WORK/copied/data/run.json" || fail "the calibration's record was not kept as it is"
cmp "$WORK/pilot2/decision-1-doctor.json" "$WORK/copied/data/doctor.json" || fail "the calibration's doctor report was not kept as it is"
run_pilot 0 verify "$WORK/pilot2"
# Another fingerprint, no calibration to check, a folder of another kind, a pilot of another
# manifest: refused (exit 2, nothing written) or measure-first.
before=$(tree_sum "$WORK/pilot")
run_pilot 2 decide "$WORK/pilot" --calibration "$WORK/copied" --expect-calibration "$(printf '0%.0s' $(seq 64))" \
  --decision go --reason x
expect_in "$WORK/err" "the calibration folder fails verification"
expect_in "$WORK/err" "fingerprint"
run_pilot 2 decide "$WORK/pilot" --expect-calibration "$fp"
expect_in "$WORK/err" "--expect-calibration checks the --calibration folder"
run_pilot 2 decide "$WORK/pilot" --calibration "$WORK/copied/data/pilot"
expect_in "$WORK/err" "not a calibration folder"
before_cal=$(tree_sum "$WORK/copied")
run_pilot 2 decide "$WORK/copied/data/pilot" --calibration "$WORK/copied" --decision go --reason x
expect_in "$WORK/err" "lies inside the --calibration folder"
[ "$(tree_sum "$WORK/copied")" = "$before_cal" ] || fail "a refused decide changed the calibration"
[ "$(tree_sum "$WORK/pilot")" = "$before" ] || fail "a refused decide changed the folder"
run_pilot 0 run --params config/embed.json --runs-dir "$WORK/runs" --run-id other --device cpu
run_pilot 0 plan --from "$WORK/runs/other" --corpus-items 10 --prices config/prices.stand-in.json --out "$WORK/plan-other.json"
run_pilot 0 decide "$WORK/runs/other" --calibration "$WORK/copied" --plan "$WORK/plan-other.json"
expect_in "$WORK/out" "proposal: measure-first"
expect_in "$WORK/out" "the calibration measured another manifest"
expect_in "$WORK/out" "the plan was projected from another folder"
# A plan from the calibration's pilot folder alone is the calibration's own (no such warning);
# its assumed rate is measure-first all the same.
run_pilot 0 decide "$WORK/pilot" --calibration "$WORK/copied" --plan "$WORK/plan-assumed.json"
expect_in "$WORK/out" "proposal: measure-first"
expect_not_in "$WORK/out" "projected from another folder"

# 5. Refused, nothing written: an --out that exists, one inside a pilot folder.
before=$(tree_sum "$WORK/cal")
run_pilot 2 calibrate --device cpu --out "$WORK/cal"
expect_in "$WORK/err" "a calibration folder is never reused"
run_pilot 2 calibrate --device cpu --out "$WORK/cal/data/again"
expect_in "$WORK/err" "--out"
[ "$(tree_sum "$WORK/cal")" = "$before" ] || fail "a refused calibrate changed the folder"
# A doctor that fails (a GPU asked of this CPU build): exit 3, nothing at OUT, the report and
# logs kept in OUT.calibrating; a second try with that OUT is refused until it is removed.
run_pilot 3 calibrate --device cuda --out "$WORK/nogpu"
[ ! -e "$WORK/nogpu" ] || fail "a failed doctor assembled a folder"
expect_in "$WORK/out" "stopped at the doctor step"
[ "$(field "$WORK/nogpu.calibrating/data/doctor.json" 'd["ok"]')" = False ] || fail "the failed doctor's report was not kept"
run_pilot 2 calibrate --device cpu --out "$WORK/nogpu"
expect_in "$WORK/err" "a calibration stopped here earlier"

# 6. Edited and re-hashed: a nested pilot's result, the record's device name; a nested folder
# swapped for a link. Each is a finding; plan refuses the folder.
cp -a "$WORK/cal" "$WORK/t1"
sed -i 's/"status":"accepted"/"status":"rejected"/' "$WORK/t1/data/pilot/data/results.jsonl"
rehash "$WORK/t1/data/pilot"
rehash "$WORK/t1"
run_pilot 1 verify "$WORK/t1"
expect_in "$WORK/err" "[calibration] data/pilot"
expect_in "$WORK/err" "data/run.json records $(field "$WORK/cal/data/run.json" 'd["pilot"]["fingerprint"]')"
run_pilot 2 plan --from "$WORK/t1" --corpus-items 10 --prices config/prices.stand-in.json --out "$WORK/refused.json"
expect_in "$WORK/err" "fails verification"
[ ! -e "$WORK/refused.json" ] || fail "a refused plan wrote its --out"
cp -a "$WORK/cal" "$WORK/t2"
python3 - "$WORK/t2/data/run.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1])); d["device_name"] = "NVIDIA H100 80GB HBM3"; json.dump(d, open(sys.argv[1], "w"), indent=1)
EOF
rehash "$WORK/t2"
run_pilot 1 verify "$WORK/t2"
expect_in "$WORK/err" "device_name is not the name data/doctor.json gives"
cp -a "$WORK/cal" "$WORK/t3"
rm -rf "$WORK/t3/data/sweep" && ln -s "$WORK/cal/data/sweep" "$WORK/t3/data/sweep"
run_pilot 1 verify "$WORK/t3"
expect_in "$WORK/err" "data/sweep: is not a folder of the calibration (missing, or a link)"
run_pilot 2 plan --from "$WORK/copied" --expect "$(printf 'a%.0s' $(seq 64))" --corpus-items 10 --prices config/prices.stand-in.json
expect_in "$WORK/err" "fingerprint"

# 7. Where the deliverable is a service: a load test on the card, then a plan for a rate and the
# decision with the load as evidence. A generous SLO, so that this shared machine cannot decide it.
python3 - config/pilot.json config/service.json <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
d["service"]["slo"] = {"percentile": 0.9, "confidence": 0.9, "e2e_ms": 5000}
d["device"] = "cpu"
json.dump(d, open(sys.argv[2], "w"), indent=1)
EOF
run_pilot 0 load --params config/service.json --find-peak --duration 0.5 --max-steps 4 --out "$WORK/load"
load_fp=$(sed -n 's/^fingerprint: //p' "$WORK/out")
peak=$(field "$WORK/load/data/load.json" 'd["verdict"]["peak_rate"]')
run_pilot 0 plan --from "$WORK/load" --expect "$load_fp" --rate 100000 --prices config/prices.stand-in.json \
  --out "$WORK/service-plan.json"
expect_in "$WORK/out" "measured on cpu"
expect_in "$WORK/out" "<- cheapest per request"
python3 - "$WORK/service-plan.json" "$peak" <<'EOF'
import json, math, sys
d, peak = json.load(open(sys.argv[1])), float(sys.argv[2])
assert d["kind"] == "pilot-service-plan" and d["basis"]["rate_per_replica"] == peak
c = d["cheapest"]
assert c["card"] == "cpu-stand-in" and not c["assumed"] and c["fit_known"], c
assert c["replicas"] == math.ceil(100000 / peak), (c, peak)
assert c["cards"] == math.ceil(c["replicas"] / c["replicas_per_card"])
assert abs(c["cost_per_million_requests"] - c["cost"] / (100000 * c["period_days"] * 86400) * 1e6) < 1e-9
EOF
run_pilot 0 decide "$WORK/pilot" --load "$WORK/load" --expect-load "$load_fp"
expect_in "$WORK/out" "[go] the stage met its SLO"
# Missed at every rate: revise-config.
python3 - config/service.json config/strict.json <<'EOF'
import json, sys
d = json.load(open(sys.argv[1])); d["service"]["slo"]["e2e_ms"] = 0.001; json.dump(d, open(sys.argv[2], "w"))
EOF
run_pilot 4 load --params config/strict.json --rate 200 --requests 50 --out "$WORK/load-missed"
run_pilot 0 decide "$WORK/pilot" --load "$WORK/load-missed"
expect_in "$WORK/out" "proposal: revise-config"
expect_in "$WORK/out" "missed its SLO"
run_pilot 4 plan --from "$WORK/load-missed" --rate 10 --prices config/prices.stand-in.json
expect_in "$WORK/out" "no rate met the SLO"
# Refused: a load folder without --rate; one edited and re-hashed; a wrong --expect-load.
run_pilot 2 plan --from "$WORK/load" --corpus-items 10 --prices config/prices.stand-in.json
expect_in "$WORK/err" "give --rate"
cp -a "$WORK/load" "$WORK/t4"
python3 - "$WORK/t4/data/load.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1])); d["verdict"]["peak_rate"] = 1e9; json.dump(d, open(sys.argv[1], "w"), indent=1)
EOF
rehash "$WORK/t4"
run_pilot 2 plan --from "$WORK/t4" --rate 10 --prices config/prices.stand-in.json
expect_in "$WORK/err" "fails verification"
before=$(tree_sum "$WORK/pilot")
run_pilot 2 decide "$WORK/pilot" --load "$WORK/t4" --decision go --reason x
expect_in "$WORK/err" "the load folder fails verification"
run_pilot 2 decide "$WORK/pilot" --load "$WORK/load" --expect-load "$(printf 'b%.0s' $(seq 64))" --decision go --reason x
[ "$(tree_sum "$WORK/pilot")" = "$before" ] || fail "a refused decide changed the folder"
run_pilot 0 decide "$WORK/pilot" --load "$WORK/load" --expect-load "$load_fp" --decision go --reason "the service meets its SLO"
expect_in "$WORK/out" "-load.json"
cmp "$WORK/load/data/load.json" "$(ls "$WORK/pilot"/decision-*-load.json | tail -1)" || fail "the load evidence was not kept as it was"
run_pilot 0 verify "$WORK/pilot"
echo "first hour: ok"
