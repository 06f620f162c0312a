# Per-label quality through the real binary: a label the manifest expects and the model never
# gives shows on the console, in report.md and report.json, in decide, and fails
# acceptance.min_recall_per_label (exit 4); every labelled result line carries its label.
source "$(dirname "$0")/lib.sh"
copy_project
# doc-01 (English) relabelled 'pl' (Polish): accuracy stays high, 'pl' is never predicted.
python3 - "$WORK/proj" <<'PY'
import json, sys
proj = sys.argv[1]
m = json.load(open(proj + "/data/pilot/manifest.json"))
for item in m["items"]:
    if item["id"] == "doc-01":
        item["expected"] = "pl"
json.dump(m, open(proj + "/data/pilot/manifest-dead.json", "w"), indent=2)
p = json.load(open(proj + "/config/pilot.json"))
p["manifest"] = "../data/pilot/manifest-dead.json"
p["acceptance"]["min_accuracy"] = 0.8  # 8 of 9: met
if "pl" not in p["allowed_categories"]: p["allowed_categories"].append("pl")
json.dump(p, open(proj + "/config/dead.json", "w"), indent=2)
p["acceptance"]["min_recall_per_label"] = 0.5
json.dump(p, open(proj + "/config/dead-strict.json", "w"), indent=2)
PY
run_pilot 0 run --params proj/config/dead.json --runs-dir runs --run-id dead
expect_in out "accuracy on labelled items: 8/9"
expect_in out "label never predicted: pl (0 of the 1 labelled items that expect it)"
expect_in runs/dead/data/report.md "**Never predicted:** pl (0 of 1 labelled items)"
expect_in runs/dead/data/report.md "| pl | 1 | 0 | 0 | - | 0.000 |"
python3 - runs/dead/data/report.json runs/dead/data/results.jsonl <<'PY' || fail "report.json or results.jsonl lacks the labels"
import json, sys
q = json.load(open(sys.argv[1]))["quality"]
assert q["never_predicted"] == ["pl"], q["never_predicted"]
row = {r["expected"]: r for r in q["confusion"]}["pl"]
assert row["predicted"] == {"en": 1} and row["rejected"] == 0, row
lines = [json.loads(l) for l in open(sys.argv[2])]
labelled = {r["id"]: r["expected"] for r in lines if "expected" in r}
assert labelled["doc-01"] == "pl" and len(labelled) == 9, labelled
PY
run_pilot 0 verify runs/dead
run_pilot 0 decide runs/dead
expect_in out "the label 'pl' is never predicted (0 of the 1 labelled items that expect it"
# The criterion makes it a failed acceptance: exit 4, named.
run_pilot 4 run --params proj/config/dead-strict.json --runs-dir runs --run-id strict
expect_in out "min_recall_per_label"
run_pilot 0 verify runs/strict
echo PASS
