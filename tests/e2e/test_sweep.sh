#!/usr/bin/env bash
# `pilot sweep` end to end on the bundled models: both kinds, a cell killed as the OOM killer
# would (a recorded limit, the other groups go on), interrupt and resume with finished cells
# kept, verify of the sweep folder, `run --batch-plan` against a plain run, and refusals.
source "$(dirname "$0")/lib.sh"
PY=/usr/bin/python3

# A corpus whose three length groups each fill batches of 8.
"$PY" "$SRC/bench/sweep-corpus.py" 90 "$WORK/corpus" >/dev/null
write_params "$WORK/params.json" "$WORK/corpus/manifest.jsonl" 4

# --- the classifier ------------------------------------------------------------------------
run_pilot 0 sweep --params "$WORK/params.json" --batch-sizes 1,2,4,8 --repeats 1 --out "$WORK/sw"
expect_in "$WORK/out" "equivalence: every outcome at every batch size equals batch 1, in order"
expect_in "$WORK/out" "a CPU measurement does not stand for a GPU"
expect_in "$WORK/err" "group 3, batch 8"
for f in sweep.json sweep.csv sweep.md report.html cells.jsonl groups.json run.json params.json manifest.jsonl; do
  [ -f "$WORK/sw/data/$f" ] || fail "sweep folder lacks data/$f"
done
"$PY" - "$WORK/sw" <<'EOF'
import json, sys
d = sys.argv[1]
s = json.load(open(d + "/data/sweep.json"))
assert s["folder_kind"] == "sweep" and s["measure"] == "features", s["measure"]
assert len(s["groups"]) == 3, s["groups"]
assert sum(g["items"] for g in s["groups"]) == 90
# Groups are disjoint and ascending.
for a, b in zip(s["groups"], s["groups"][1:]):
    assert a["max_length"] < b["min_length"], (a, b)
assert len(s["cells"]) == 12, len(s["cells"])
for c in s["cells"]:
    assert c["limit"] is None and c["completed"] > 0 and c["items_per_second"] > 0, c
    assert c["latency_ms"]["p50"] <= c["latency_ms"]["p95"] <= c["latency_ms"]["p99"], c
    assert c["peak_rss_mb"] > 0 and c["cycled"] is False, c
assert s["equivalence"]["findings"] == 0
assert [r["batch_size"] for r in s["recommendation"]] == [8, 8, 8]
assert s["footprint"]["weights_mb"] > 0
assert len(s["headroom"]["cards"]) == 6 and s["headroom"]["cards"][0]["card_gb"] == 24
# A CPU sweep's peak is resident memory: its fit on a card is unknown (format 2), as plan says.
assert s["format_version"] == 2
assert all(g["fits"] is None and g["headroom_mb"] is None for c in s["headroom"]["cards"] for g in c["groups"])
assert "unknown on a GPU" in s["headroom"]["basis"]
md = open(d + "/data/sweep.md").read()
assert "unknown on a GPU |" in md and "GB free" not in md
# Each cell keeps its repeats' seconds, adding up to its wall time; with one repeat the
# fastest size's noise is unmeasured, and the page says so.
for c in s["cells"]:
    assert len(c["repeat_seconds"]) == c["repeats"] == 1 and abs(c["repeat_seconds"][0] - c["wall_seconds"]) < 1e-6, c
for r in s["recommendation"]:
    assert r["fastest_within_noise_of"] is None and r["noise"].startswith("unmeasured: fewer than two repeats"), r
    assert ("group %d: " % r["group"]) + r["noise"] in md, r["noise"]
lines = open(d + "/data/sweep.csv").read().splitlines()
assert lines[0].startswith("group,min_length,max_length,group_items,batch_size") and len(lines) == 13, lines[:2]
html = open(d + "/data/report.html").read()
assert "<svg" in html and "<script" not in html and "http://" not in html.replace("http://www.w3.org/2000/svg", "")
EOF
run_pilot 0 verify "$WORK/sw"
expect_in "$WORK/out" "verify: ok"
expect_in "$WORK/out" "a sweep folder"
run_pilot 0 status "$WORK/sw"
expect_in "$WORK/out" "sweep sw: finished"
expect_in "$WORK/out" "12 cell(s) measured"
run_pilot 2 resume "$WORK/sw"
expect_in "$WORK/err" "already finished"

# --- the embedding kind, on the bundled pilot -----------------------------------------------
copy_project
run_pilot 0 sweep --params "$WORK/proj/config/embed.json" --device cpu --batch-sizes 1,2,4 --repeats 1 --out "$WORK/swe" --json
"$PY" - "$WORK/out" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
assert j["ok"] and j["exit_code"] == 0, j
s = j["sweep"]
assert s["stage"]["output"] == "embedding" and s["equivalence"]["findings"] == 0, s["stage"]
assert s["excluded"] >= 1  # the bundled pilot's deliberately bad items never reach the stage
# Ten items in three groups: batch 4 exceeds a group's count, so it is cycled and says so.
assert any(c["cycled"] for c in s["cells"]), [c["cycled"] for c in s["cells"]]
EOF
expect_in "$WORK/swe/data/sweep.md" "(cycled)"

# --- a cell killed by a signal is the group's limit; the others go on ----------------------
PILOT_TEST_SWEEP_KILL_CELL=3:4 run_pilot 0 sweep --params "$WORK/params.json" --batch-sizes 1,2,4,8 --repeats 1 \
  --out "$WORK/swk"
expect_in "$WORK/out" "group 3"
expect_in "$WORK/out" "below the limit at batch 4 (killed)"
"$PY" - "$WORK/swk" <<'EOF'
import json, sys
s = json.load(open(sys.argv[1] + "/data/sweep.json"))
cells = {(c["group"], c["batch_size"]): c for c in s["cells"]}
assert cells[(3, 4)]["limit"] == "killed" and "signal 9" in cells[(3, 4)]["error"], cells[(3, 4)]
assert (3, 8) not in cells and {"group": 3, "batch_size": 8} == {k: s["not_run"][0][k] for k in ("group", "batch_size")}
assert (1, 8) in cells and (2, 8) in cells
assert [r["batch_size"] for r in s["recommendation"]] == [8, 8, 2]
EOF
ls -A "$WORK/swk" | grep -q '^\.cell' && fail "a cell's temporary file was left in the sweep folder"
run_pilot 0 verify "$WORK/swk"

# --- interrupted, then resumed with its finished cells kept ---------------------------------
"$PILOT" sweep --params "$WORK/params.json" --batch-sizes 1,2,4,8 --repeats 1 --out "$WORK/swi" \
  >"$WORK/iout" 2>"$WORK/ierr" &
pid=$!
for _ in $(seq 1 600); do
  n=$( (cat "$WORK/swi/data/cells.jsonl" 2>/dev/null || true) | wc -l)
  [ "$n" -ge 2 ] && break
  sleep 0.05
done
kill -INT "$pid"
rc=0
wait "$pid" || rc=$?
[ "$rc" -eq 130 ] || { cat "$WORK/ierr"; fail "an interrupted sweep exited $rc, expected 130"; }
expect_in "$WORK/ierr" "pilot resume"
kept=$(wc -l <"$WORK/swi/data/cells.jsonl")
[ "$kept" -ge 2 ] && [ "$kept" -lt 12 ] || fail "expected some cells kept, got $kept"
first=$(sha256sum <"$WORK/swi/data/cells/g1-b1.json")
run_pilot 0 status "$WORK/swi"
expect_in "$WORK/out" "interrupted"
# A sweep resumes on the device it measured: --device and --stop-after are refused, untouched.
before=$(tree_sum "$WORK/swi")
run_pilot 2 resume "$WORK/swi" --device cpu
expect_in "$WORK/err" "--device and --stop-after do not apply to a sweep folder"
run_pilot 2 resume "$WORK/swi" --stop-after 1
expect_in "$WORK/err" "do not apply to a sweep folder"
[ "$(tree_sum "$WORK/swi")" = "$before" ] || fail "a refused resume changed the sweep folder"
run_pilot 0 resume "$WORK/swi"
[ "$(sha256sum <"$WORK/swi/data/cells/g1-b1.json")" = "$first" ] || fail "resume re-measured a finished cell"
[ "$(wc -l <"$WORK/swi/data/cells.jsonl")" -eq 12 ] || fail "the resumed sweep does not hold 12 cells"
expect_in "$WORK/err" "cell(s) already measured"
run_pilot 0 verify "$WORK/swi"

# --- run --batch-plan gives a plain run's outcomes ------------------------------------------
run_pilot 0 run --params "$WORK/params.json" --runs-dir "$WORK/runs" --run-id plain -q
run_pilot 0 run --params "$WORK/params.json" --runs-dir "$WORK/runs" --run-id planned --batch-plan "$WORK/sw" -q
"$PY" - "$WORK/runs" <<'EOF'
import hashlib, json, sys
runs = sys.argv[1]
load = lambda r: [json.loads(l) for l in open(f"{runs}/{r}/data/results.jsonl")]
a, b = load("plain"), load("planned")
assert [x["id"] for x in a] == [x["id"] for x in b]
for x, y in zip(a, b):
    assert x["status"] == y["status"] and x.get("category") == y.get("category") and x.get("reason") == y.get("reason"), (x, y)
    assert abs(x.get("confidence", 0) - y.get("confidence", 0)) <= 1e-5, (x, y)
rec = json.load(open(f"{runs}/planned/data/run.json"))["plan"]["batch_plan"]
copy = open(f"{runs}/planned/data/batch-plan.json", "rb").read()
assert rec["sha256"] == hashlib.sha256(copy).hexdigest(), rec
assert [g["batch_size"] for g in rec["groups"]] == [8, 8, 8]
assert json.load(open(f"{runs}/plain/data/run.json"))["plan"]["batch_plan"] is None
EOF
run_pilot 0 verify "$WORK/runs/planned"
# The same plan named in the parameters (`batch_plan`, relative to the parameter file).
"$PY" - "$WORK/params.json" "$WORK/params-plan.json" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
d["batch_plan"] = "sw"
json.dump(d, open(sys.argv[2], "w"))
EOF
run_pilot 0 run --params "$WORK/params-plan.json" --runs-dir "$WORK/runs" --run-id from-params -q
cmp "$WORK/runs/planned/data/batch-plan.json" "$WORK/runs/from-params/data/batch-plan.json" \
  || fail "the plan named in the parameters differs from --batch-plan's"

# --- refusals -------------------------------------------------------------------------------
run_pilot 2 run --params "$WORK/params.json" --runs-dir "$WORK/runs" --batch-plan "$WORK/runs/plain" -q
expect_in "$WORK/err" "not a sweep folder"
cp -r "$WORK/sw" "$WORK/swt"
sed -i 's/"batch_size": 8/"batch_size": 4096/' "$WORK/swt/data/sweep.json"
run_pilot 2 run --params "$WORK/params.json" --runs-dir "$WORK/runs" --batch-plan "$WORK/swt" -q
expect_in "$WORK/err" "does not verify"
run_pilot 2 run --params "$WORK/proj/config/embed.json" --runs-dir "$WORK/runs" --batch-plan "$WORK/sw" -q
expect_in "$WORK/err" "measured on model sha256"
before=$(tree_sum "$WORK/sw")
run_pilot 2 sweep --params "$WORK/params.json" --out "$WORK/sw"
[ "$(tree_sum "$WORK/sw")" = "$before" ] || fail "a refused sweep changed an existing folder"
run_pilot 2 sweep --params "$WORK/params.json" --batch-sizes 2,4 --out "$WORK/swx"
expect_in "$WORK/err" "must start at 1"
[ ! -e "$WORK/swx" ] || fail "a refused sweep created its folder"
run_pilot 2 sweep --params "$WORK/params.json" --groups 0 --out "$WORK/swx"
[ ! -e "$WORK/swx" ] || fail "a refused sweep created its folder"
echo "sweep: ok"
