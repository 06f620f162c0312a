# Items that escape the manifest's folder, are missing, changed or too large are rejected
# with their reason; unmet acceptance criteria exit 4 with a run that still verifies.
source "$(dirname "$0")/lib.sh"
copy_project
D=proj/data/pilot
echo "secret outside" >proj/outside.txt
ln -s ../../outside.txt $D/link.txt
printf 'A changed line of English text.\n' >$D/changed.txt
head -c 70000 /dev/zero | tr '\0' 'a' >$D/big.txt
sha_out=$(sha256sum proj/outside.txt | cut -d' ' -f1)
sha_old=$(printf 'An original line.\n' | sha256sum | cut -d' ' -f1)
sha_big=$(sha256sum $D/big.txt | cut -d' ' -f1)
cat >$D/edge.jsonl <<EOT
{"id":"escape-dotdot","path":"../../outside.txt","sha256":"$sha_out","expected_rejection":"path_outside_root"}
{"id":"escape-link","path":"link.txt","sha256":"$sha_out","expected_rejection":"path_outside_root"}
{"id":"absolute","path":"/etc/hostname","sha256":"$sha_out","expected_rejection":"path_outside_root"}
{"id":"gone","path":"gone.txt","sha256":"$sha_out","expected_rejection":"missing_file"}
{"id":"changed","path":"changed.txt","sha256":"$sha_old","expected_rejection":"input_changed"}
{"id":"big","path":"big.txt","sha256":"$sha_big","expected_rejection":"too_large"}
{"id":"fine","path":"doc-03.txt","sha256":"$(sha256sum $D/doc-03.txt | cut -d' ' -f1)","expected":"de"}
EOT
run_pilot 0 run --params proj/config/pilot.json --manifest $D/edge.jsonl --runs-dir runs --run-id edge
expect_in out "7 items, 1 accepted, 6 rejected"
r=runs/edge/data/results.jsonl
for pair in escape-dotdot:path_outside_root escape-link:path_outside_root absolute:path_outside_root \
            gone:missing_file changed:input_changed big:too_large; do
  expect_in $r "\"id\":\"${pair%%:*}\",\"status\":\"rejected\",\"reason\":\"${pair#*:}\""
done
[ -f runs/edge/data/manifest.jsonl ] || fail "a JSON Lines manifest is copied as manifest.jsonl"
run_pilot 0 verify runs/edge

# Acceptance: a p95 latency limit no run can meet.
sed 's/"max_p95_latency_ms": 250/"max_p95_latency_ms": 0.000001/' proj/config/pilot.json >proj/config/strict.json
run_pilot 4 run --params proj/config/strict.json --runs-dir runs --run-id strict
expect_in out "acceptance: max_p95_latency_ms not met"
expect_in runs/strict/data/report.json '"verdict": "acceptance_not_met"'
run_pilot 0 verify runs/strict
echo PASS
