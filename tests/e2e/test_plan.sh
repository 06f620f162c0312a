#!/usr/bin/env bash
# `pilot plan` through the real binary: from a run folder of the bundled pilot, a merged one
# (--workers 2) and a sweep folder, against price files written here (CPU "cards", since every
# measurement on this machine is a CPU one) and the shipped example (GPU cards): cheapest and
# fastest marked (the fastest within --time-resolution of the quickest), each card's two picks by
# default and every row with --all, the cost per million items, the outputs' bytes and
# copy-off time in the needed hours, a lot priced once, exit 2 on a
# device-class mismatch without
# --assume-scaling, exit 4 when nothing fits, --out's document, bad price files refused
# naming the key, and nothing written on a refusal.
source "$(dirname "$0")/lib.sh"
copy_project
run_pilot 0 run --params proj/config/pilot.json --runs-dir runs --run-id r1 --device cpu
R=$WORK/runs/r1

# A price file of CPU nodes: one node per lot, and a lot of two priced once.
cat >"$WORK/cpu.json" <<'EOF'
{"currency": "EUR", "note": "test prices",
 "cards": [
  {"name": "node-64", "class": "cpu", "memory_gb": 64, "cards_per_lot": 1, "lot_price": {"3": 30, "7": 60, "30": 200}},
  {"name": "node-pair", "class": "cpu", "memory_gb": 64, "cards_per_lot": 2, "lot_price": {"3": 50, "7": 100}}
 ]}
EOF
# field FILE PYTHON-EXPRESSION-ON-d: prints the expression over the JSON document in FILE.
field() { python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }

# 1. The measured path: exit 0, cheapest and fastest marked, every basis stated.
run_pilot 0 plan --from "$R" --corpus-items 1000000 --prices "$WORK/cpu.json"
expect_in "$WORK/out" "basis: run folder $R"
expect_in "$WORK/out" "measured on cpu (cpu): 12 items"
expect_in "$WORK/out" "<- cheapest"
expect_in "$WORK/out" "<- fastest"
expect_in "$WORK/out" "cheapest: "
expect_in "$WORK/out" "fastest: "
expect_in "$WORK/out" "node-pair [cpu]: fit yes"
expect_in "$WORK/out" "the corpus' length mix is unknown"
expect_in "$WORK/out" "per M items"
expect_in "$WORK/out" "per million items"
expect_in "$WORK/out" "picks: cheapest: the lowest cost"
expect_in "$WORK/out" "the quickest's hours + 0.10 h"
expect_not_in "$WORK/out" "EXAMPLE"
# By default each card shows its own cheapest and fastest plan (one row where they are one),
# and the plan's fastest where it is not its card's (the card's quickest is not the plan's);
# --all shows all 50 (node-64: 3 periods x 10 lots, node-pair: 2 x 10).
rows() { grep -cE '^ +[0-9]+d +[0-9]+ +[0-9]+ ' "$WORK/out"; }
[ "$(rows)" -ge 2 ] && [ "$(rows)" -le 5 ] || fail "the default output has $(rows) plan rows, not each card's picks"
expect_in "$WORK/out" "more rows (every period and lot count): --all shows them"
run_pilot 0 plan --from "$R" --corpus-items 1000000 --prices "$WORK/cpu.json" --all
[ "$(rows)" = 50 ] || fail "--all shows $(rows) plan rows, not 50"
expect_not_in "$WORK/out" "more rows"
expect_in "$WORK/out" "<- cheapest"

run_pilot 0 plan --from "$R" --corpus-items 1000000 --prices "$WORK/cpu.json" --json
cp "$WORK/out" "$WORK/plan1.json"
[ "$(field "$WORK/plan1.json" 'd["verdict"]')" = fits ] || fail "verdict is not fits"
# A lot of two cards is priced once: 4 lots of node-pair for 3 days = 8 cards, 200 EUR.
[ "$(field "$WORK/plan1.json" '[(p["cards"], p["cost"]) for p in d["plans"] if p["card"] == "node-pair" and p["period_days"] == 3 and p["lots"] == 4][0]')" = "(8, 200.0)" ] \
  || fail "a lot of two cards is not priced once"
# The cheapest is the lowest cost among fitting plans; the fastest the cheapest of those
# needing at most the quickest's hours + time_resolution_hours (0.1 by default).
[ "$(field "$WORK/plan1.json" 'd["cheapest"]["cost"] == min(p["cost"] for p in d["plans"] if p["fits"])')" = True ] \
  || fail "cheapest is not the lowest cost"
[ "$(field "$WORK/plan1.json" 'd["time_resolution_hours"]')" = 0.1 ] || fail "the default time resolution is not 0.1 h"
python3 - "$WORK/plan1.json" <<'EOF' || fail "fastest is not the cheapest plan within the resolution of the quickest"
import json, sys
d = json.load(open(sys.argv[1]))
fits = [p for p in d["plans"] if p["fits"]]
quickest = min(p["needed_hours"] for p in fits)
near = [p for p in fits if p["needed_hours"] <= quickest + d["time_resolution_hours"]]
assert d["fastest"]["cost"] == min(p["cost"] for p in near), d["fastest"]
assert d["fastest"]["needed_hours"] <= quickest + d["time_resolution_hours"]
# Each row's cost per million items is its cost over the corpus; by items, none per token.
assert all(abs(p["cost_per_million_items"] - p["cost"] * 1e6 / 1000000) < 1e-9 for p in d["plans"])
assert all(p["cost_per_million_tokens"] is None for p in d["plans"])
EOF
# Compared exactly (--time-resolution 0), the fastest is the row of the fewest hours: 10 lots of two.
run_pilot 0 plan --from "$R" --corpus-items 1000000 --prices "$WORK/cpu.json" --time-resolution 0 --json
[ "$(field "$WORK/out" 'd["fastest"]["needed_hours"] == min(p["needed_hours"] for p in d["plans"] if p["fits"])')" = True ] \
  || fail "with --time-resolution 0, fastest is not the lowest needed hours"
[ "$(field "$WORK/out" 'd["fastest"]["cards"]')" = 20 ] || fail "the exactly fastest plan is not 10 lots of two"
for bad in -1 25 nan; do
  run_pilot 2 plan --from "$R" --corpus-items 10 --prices "$WORK/cpu.json" --time-resolution "$bad" --out "$WORK/bad-res.json"
  expect_in "$WORK/err" "--time-resolution"
  [ ! -e "$WORK/bad-res.json" ] || fail "a refused plan wrote its --out"
done
[ "$(field "$WORK/plan1.json" 'all(abs(p["needed_hours"] - p["compute_hours"] - p["copy_off_hours"] - 8) < 1e-9 for p in d["plans"])')" = True ] \
  || fail "the default allowance is not 8 h"

# Output storage: the run's results and journal as stored, per item, over the corpus, copied
# off at 100 MB/s by default, in every row's needed hours; at 1 MB/s a hundred times longer.
run_pilot 0 plan --from "$R" --corpus-items 1000000 --prices "$WORK/cpu.json"
expect_in "$WORK/out" "outputs: "
expect_in "$WORK/out" "copied off at 100 MB/s"
expect_in "$WORK/out" "needed h = compute + copy-off"
python3 - "$WORK/plan1.json" "$R" <<'EOF' || fail "the output projection is not the run's bytes per item over the corpus"
import json, os, sys
d, run = json.load(open(sys.argv[1])), sys.argv[2]
o = d["output"]
files = [f for f in ("data/results.jsonl", "data/journal.jsonl", "data/vectors.npy", "data/vectors.sidecar") if os.path.exists(os.path.join(run, f))]
assert o["files"] == files, o["files"]
assert o["measured_bytes"] == sum(os.path.getsize(os.path.join(run, f)) for f in files), o
assert o["measured_items"] == 12 and abs(o["bytes_per_item"] - o["measured_bytes"] / 12) < 1e-9
assert abs(o["corpus_bytes"] - o["bytes_per_item"] * 1000000) < 1e-3
assert o["copy_off_mb_per_s"] == 100 and abs(o["copy_off_hours"] - o["corpus_bytes"] / 100e6 / 3600) < 1e-12
assert o["copy_off_hours"] > 0 and all(p["copy_off_hours"] == o["copy_off_hours"] for p in d["plans"])
EOF
run_pilot 0 plan --from "$R" --corpus-items 1000000 --prices "$WORK/cpu.json" --copy-off-mb-per-s 1 --json
[ "$(field "$WORK/out" 'round(d["output"]["copy_off_hours"] / json.load(open("'"$WORK/plan1.json"'"))["output"]["copy_off_hours"], 6)')" = 100.0 ] \
  || fail "copying off at 1 MB/s does not take a hundred times as long as at 100"
for bad in 0 -5 nan 2e6; do
  run_pilot 2 plan --from "$R" --corpus-items 10 --prices "$WORK/cpu.json" --copy-off-mb-per-s "$bad" --out "$WORK/bad-copy.json"
  expect_in "$WORK/err" "--copy-off-mb-per-s"
  [ ! -e "$WORK/bad-copy.json" ] || fail "a refused plan wrote its --out"
done

# 2. --corpus-manifest: the item count and the inputs' bytes, compared with the pilot's.
run_pilot 0 plan --from "$R" --corpus-manifest proj/data/pilot/manifest.json --prices "$WORK/cpu.json" --json
[ "$(field "$WORK/out" 'd["corpus"]["items"], d["corpus"]["length_mix"]["known"], round(d["corpus"]["mean_bytes_vs_pilot"], 6)')" = "(12, True, 1.0)" ] \
  || fail "the corpus manifest's mix is not the pilot's own"
[ "$(field "$WORK/out" 'd["projection"]["by"], d["projection"]["factor"], d["projection"]["why"]')" = "('items', 1.0, None)" ] \
  || fail "a stage without a tokenizer is not projected by items"
# A tokenizer for a stage that takes none is refused, naming the option; nothing is written.
run_pilot 2 plan --from "$R" --corpus-manifest proj/data/pilot/manifest.json --prices "$WORK/cpu.json" \
  --tokenizer "$SRC/tests/tokenizer/data/tiny-bert.json" --out "$WORK/refused.json"
expect_in "$WORK/err" "the folder's stage takes no tokenizer"
[ ! -e "$WORK/refused.json" ] || fail "a refused plan wrote --out"
run_pilot 2 plan --from "$R" --corpus-items 5 --corpus-manifest proj/data/pilot/manifest.json --prices "$WORK/cpu.json"
run_pilot 2 plan --from "$R" --prices "$WORK/cpu.json"
expect_in "$WORK/err" "--corpus-items N or --corpus-manifest F"

# 3. A CPU measurement against GPU cards (the shipped example): refused without
#    --assume-scaling; with it, labelled an assumption, fit unknown, the example warned of.
run_pilot 2 plan --from "$R" --corpus-items 10000000 --prices "$SRC/config/prices.example.json"
expect_in "$WORK/err" "does not project to cards of another class"
expect_in "$WORK/err" "H100-80GB (cuda)"
expect_in "$WORK/err" "--assume-scaling"
run_pilot 0 plan --from "$R" --corpus-items 10000000 --prices "$SRC/config/prices.example.json" --assume-scaling 5
expect_in "$WORK/out" "WARNING: the price file"
expect_in "$WORK/out" "EXAMPLE with MADE-UP prices"
expect_in "$WORK/out" "ASSUMPTION"
expect_in "$WORK/out" "fit unknown"
expect_in "$WORK/out" "(assumed rate)"
[ "$(grep -c "MADE-UP" "$WORK/out")" -ge 2 ] || fail "the example warning is not repeated"
run_pilot 0 plan --from "$R" --corpus-items 10000000 --prices "$SRC/config/prices.example.json" --assume-scaling 5 --json
[ "$(field "$WORK/out" 'd["prices"]["example"], d["basis"]["assume_scaling"], {p["fit"] for p in d["plans"]}, {p["rate_basis"] for p in d["plans"]}')" = "(True, 5.0, {'unknown'}, {'assumed'})" ] \
  || fail "the assumption is not labelled in the document"
run_pilot 2 plan --from "$R" --corpus-items 10 --prices "$SRC/config/prices.example.json" --assume-scaling 0
expect_in "$WORK/err" "--assume-scaling"
run_pilot 2 plan --from "$R" --corpus-items 10 --prices "$SRC/config/prices.example.json" --assume-scaling nan

# 4. Nothing fits: only 3-day lots against a huge corpus, exit 4; --out still records it.
cat >"$WORK/short.json" <<'EOF'
{"currency": "EUR", "cards": [{"name": "node", "class": "cpu", "memory_gb": 64, "cards_per_lot": 1, "lot_price": {"3": 5}}]}
EOF
run_pilot 4 plan --from "$R" --corpus-items 999999999999 --prices "$WORK/short.json" --out "$WORK/none.json"
expect_in "$WORK/out" "no plan fits"
[ "$(field "$WORK/none.json" 'd["verdict"], d["cheapest"], d["fastest"]')" = "('none_fits', None, None)" ] \
  || fail "a plan that fits nothing does not say so"
# The model does not fit one node: no plan for it, "needs model parallelism".
sed 's/"memory_gb": 64/"memory_gb": 0.01/' "$WORK/short.json" >"$WORK/tiny.json"
run_pilot 4 plan --from "$R" --corpus-items 10 --prices "$WORK/tiny.json"
expect_in "$WORK/out" "needs model parallelism; not covered"

# 5. --out: a JSON document with the keys decide reads; never overwritten.
run_pilot 0 plan --from "$R" --corpus-items 1000000 --prices "$WORK/cpu.json" --out "$WORK/plan.json"
expect_in "$WORK/out" "plan written to $WORK/plan.json"
field "$WORK/plan.json" '[d[k] for k in ("kind", "format_version", "basis", "corpus", "projection", "output", "allowance_hours", "time_resolution_hours", "pick_rule", "prices", "plans", "cards", "cheapest", "fastest", "verdict", "warnings")]' >/dev/null \
  || fail "the plan document lacks a key"
[ "$(field "$WORK/plan.json" 'd["kind"], d["format_version"], d["basis"]["folder_kind"], d["basis"]["device_class"], d["prices"]["sha256"]')" = "('pilot-plan', 3, 'run', 'cpu', '$(sha256sum <"$WORK/cpu.json" | cut -c1-64)')" ] \
  || fail "the plan document's header, basis or price file hash is wrong"
before=$(sha256sum "$WORK/plan.json")
run_pilot 2 plan --from "$R" --corpus-items 5 --prices "$WORK/cpu.json" --out "$WORK/plan.json"
expect_in "$WORK/err" "exists"
[ "$(sha256sum "$WORK/plan.json")" = "$before" ] || fail "an existing --out was overwritten"

# 6. Bad price files: refused naming the key, nothing written.
bad_prices() {  # bad_prices SED-EXPRESSION KEY
  sed "$1" "$WORK/cpu.json" >"$WORK/bad.json"
  run_pilot 2 plan --from "$R" --corpus-items 10 --prices "$WORK/bad.json" --out "$WORK/bad-plan.json"
  expect_in "$WORK/err" "$2"
  [ ! -e "$WORK/bad-plan.json" ] || fail "a refused plan wrote its --out"
}
bad_prices 's/"note"/"notes"/' "bad.json: notes"
bad_prices 's/"cards_per_lot": 2/"cards_per_lot": 0/' "cards[1].cards_per_lot"
bad_prices 's/"3": 30/"3": -30/' "cards[0].lot_price.3"
bad_prices 's/"3": 30/"14": 30/' "cards[0].lot_price.14"
bad_prices 's/"class": "cpu"/"class": "tpu"/' "cards[0].class"
bad_prices 's/"memory_gb": 64/"memory_gb": "64"/' "cards[0].memory_gb"
bad_prices 's/"node-pair"/"node-64"/' "cards[1].name"
mkfifo "$WORK/fifo.json"
timeout 20 "$PILOT" plan --from "$R" --corpus-items 10 --prices "$WORK/fifo.json" >"$WORK/out" 2>"$WORK/err" && fail "a FIFO as --prices was read"
expect_in "$WORK/err" "fifo.json"
[ ! -e "$WORK/bad-plan.json" ] || fail "a refused plan wrote its --out"

# 7. Folders: a damaged one is refused with its findings, a non-pilot folder too; a link to a
# run folder is resolved once (docs/security.md, "Paths you give") and plans as the folder.
cp -a "$R" "$WORK/damaged"
printf 'x' >>"$WORK/damaged/data/report.md"
run_pilot 2 plan --from "$WORK/damaged" --corpus-items 10 --prices "$WORK/cpu.json" --out "$WORK/bad-plan.json"
expect_in "$WORK/err" "fails verification"
expect_in "$WORK/err" "report.md"
[ ! -e "$WORK/bad-plan.json" ] || fail "a refused plan wrote its --out"
ln -s "$R" "$WORK/link"
run_pilot 0 plan --from "$WORK/link" --corpus-items 10 --prices "$WORK/cpu.json" --json
[ "$(field "$WORK/out" 'd["basis"]["folder"]')" = "$(cd "$R" && pwd -P)" ] || fail "the plan through a link names another folder"
run_pilot 2 plan --from "$WORK/proj" --corpus-items 10 --prices "$WORK/cpu.json"
run_pilot 2 plan --from "$WORK/nowhere" --corpus-items 10 --prices "$WORK/cpu.json"
expect_in "$WORK/err" "no such folder"

# 8. A merged folder (two CPU workers) and a sweep folder are bases too.
run_pilot 0 run --params proj/config/pilot.json --runs-dir runs --run-id w2 --device cpu --workers 2
run_pilot 0 plan --from "$WORK/runs/w2" --corpus-items 1000000 --prices "$WORK/cpu.json" --json
[ "$(field "$WORK/out" 'd["basis"]["folder_kind"], d["basis"]["device"], d["basis"]["items"]')" = "('merged', 'cpu', 12)" ] \
  || fail "a merged folder's basis is wrong"
python3 - "$WORK/out" "$WORK/runs/w2/data/report.json" <<'EOF' || fail "a merged folder's rate per card is not the shards' sum over the shards"
import json, sys
d, r = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert abs(d["basis"]["items_per_s_per_card"] - r["shards"]["throughput_sum_of_shards_items_per_s"] / r["shards"]["count"]) < 1e-6
# A merged folder's outputs count its shards' journals too.
assert sorted(f for f in d["output"]["files"] if f.startswith("data/shards/")) == \
    ["data/shards/shard-0-of-2/journal.jsonl", "data/shards/shard-1-of-2/journal.jsonl"], d["output"]["files"]
EOF
run_pilot 0 sweep --params proj/config/pilot.json --device cpu --groups 2 --batch-sizes 1,2 --repeats 1 --out "$WORK/sweep"
run_pilot 0 plan --from "$WORK/sweep" --corpus-items 1000000 --prices "$WORK/cpu.json" --json
[ "$(field "$WORK/out" 'd["basis"]["folder_kind"], d["basis"]["memory_basis"], d["verdict"]')" = "('sweep', 'rss', 'fits')" ] \
  || fail "a sweep folder's basis is wrong"
expect_in "$WORK/out" "a sweep, which times the model alone"
expect_in "$WORK/out" "the outputs' size is unknown (a sweep keeps no outputs)"
[ "$(field "$WORK/out" 'd["output"]["measured_bytes"], d["output"]["copy_off_hours"], d["plans"][0]["copy_off_hours"]')" = "(None, 0.0, 0.0)" ] \
  || fail "a sweep's outputs are not unknown, out of the needed hours"
echo "plan: ok"
