# A generator's sweep through the real binary on the bundled generator: cells of prompt length x
# batch with completion tokens/s, TTFT, TPOT, the KV cache and slot occupancy; completions equal
# to batch 1's; the sequences that fit per card "unknown on a GPU" from a CPU; a TPOT and a TTFT
# budget stopping escalation at their limits; verify catching an edited cell; bad budgets
# refused naming the option, nothing created.
source "$(dirname "$0")/lib.sh"
case ${PILOT_TORCH_VERSION:-} in 1.*) echo "SKIP: libtorch $PILOT_TORCH_VERSION (Debian's) cannot load a torch 2.11 TorchScript or .pt2"; exit 77 ;; esac
copy_project
P=proj/config/generate.json
run_pilot 0 sweep --params $P --groups 2 --batch-sizes 1,2,4 --repeats 1 --out runs/s
expect_in out "equivalence: every outcome at every batch size equals batch 1"
run_pilot 0 verify runs/s
python3 - runs/s <<'PY'
import json, sys
s = json.load(open(f"{sys.argv[1]}/data/sweep.json"))
assert s["stage"]["kv_bytes_per_token"] == 2 * 2 * 4 * 16 * 4 and s["stage"]["context"] == 48, s["stage"]
assert s["stage"]["batching"] == "in-flight" and s["stage"]["max_new_tokens"] == 16, s["stage"]
assert len(s["cells"]) == 6, [(c["group"], c["batch_size"]) for c in s["cells"]]
for c in s["cells"]:
    g = c["generation"]
    assert g["completion_tokens"] > 0 and g["prompt_tokens"] > 0, c
    assert abs(g["completion_tokens_per_second"] - g["completion_tokens"] / c["wall_seconds"]) < 1e-6 * max(1, g["completion_tokens_per_second"]), c
    assert 0 < g["ttft_ms"]["p50"] <= g["ttft_ms"]["p99"] and 0 < g["tpot_ms"]["p50"] <= g["tpot_ms"]["p99"], g
    assert g["kv_cache_bytes"] % 1024 == 0 and 0 < g["slot_occupancy"] <= 1, g
    assert c["equivalence_findings"] == 0, c
    if c["batch_size"] == 1:
        assert g["slot_occupancy"] == 1, g
cell = json.load(open(f"{sys.argv[1]}/data/cells/g1-b4.json"))
assert all(o["ok"] and o["completion_ids"] for o in cell["outcomes"]), cell["outcomes"][0]
h = s["generator_headroom"]
assert h["basis"].startswith("unknown on a GPU") and h["kv_factor"] == 1.5 and h["overhead_mb"] > 0, h
assert [r["context"] for r in h["contexts"]] == [48], h
row = h["contexts"][0]
assert abs(row["kv_mb_per_sequence"] - 1.5 * 1024 * 48 / 2 ** 20) < 1e-12, row
assert [c["card_gb"] for c in row["cards"]] == [24, 32, 48, 80, 141, 192] and all(c["sequences"] is None for c in row["cards"]), row
print("generator sweep: 6 cells, completions equal to batch 1, headroom unknown on a GPU")
PY
for section in "## Generation" "completion tokens/s" "## Sequences that fit per card, by context" "unknown on a GPU"; do
  expect_in runs/s/data/sweep.md "$section"
done

# Budgets: a TPOT budget no cell meets stops each group at batch 1; a TTFT budget likewise.
run_pilot 0 sweep --params $P --groups 2 --batch-sizes 1,2,4 --repeats 1 --max-tpot-ms 0.000001 --out runs/tpot
expect_in err "LIMIT tpot_budget"
run_pilot 0 sweep --params $P --groups 1 --batch-sizes 1,2 --repeats 1 --max-ttft-ms 0.000001 --out runs/ttft
expect_in err "LIMIT ttft_budget"
python3 - runs/tpot runs/ttft <<'PY'
import json, sys
for folder, limit in zip(sys.argv[1:], ("tpot_budget", "ttft_budget")):
    s = json.load(open(f"{folder}/data/sweep.json"))
    assert [(c["batch_size"], c["limit"]) for c in s["cells"]] == [(1, limit)] * len(s["recommendation"]), s["cells"]
    assert all("escalation stopped" in n["reason"] for n in s["not_run"]), s["not_run"]
    assert s["settings"]["max_" + limit.split("_")[0] + "_ms"] == 1e-6, s["settings"]
PY
run_pilot 0 verify runs/tpot

# An edited cell (its completion rate, re-hashed in the journal or not) fails verify.
python3 - runs/s/data/cells/g1-b2.json <<'PY'
import json, sys
c = json.load(open(sys.argv[1]))
c["generation"]["completion_tokens"] += 1
json.dump(c, open(sys.argv[1], "w"))
PY
run_pilot 1 verify runs/s
expect_in err "g1-b2"

# Bad budgets: refused naming the option, no folder.
for bad in "--max-ttft-ms -1" "--max-tpot-ms 0" "--max-tpot-ms nan"; do
  run_pilot 2 sweep --params $P --groups 1 --batch-sizes 1 $bad --out runs/bad
  expect_in err "${bad%% *}"
  [ ! -e runs/bad ] || fail "a refused sweep left runs/bad ($bad)"
done
