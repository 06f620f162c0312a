#!/usr/bin/env bash
# `pilot load --target URL` end to end against a real server on loopback
# (tests/http/openai_server.py, Debian's python3-aiohttp), serving the bundled models' outputs as
# `pilot run` computed them. Bounded in count and time. Covers: the three APIs (embeddings;
# completions and chat streamed, with TTFT and ITL; completions whole); every fault forced
# (429 and 503 refused, a missed deadline timed out, a truncated, garbage, huge or reset answer
# failed with its reason) with pilot's counts beside the server's; the client's in-flight bound;
# an interrupt; verify catching an edited record; and bad input (an unreachable target is exit 3,
# a bad URL, credentials, a missing key variable exit 2), nothing written and no secret echoed.
source "$(dirname "$0")/lib.sh"
copy_project
P=$WORK/proj/config
PY=/usr/bin/python3  # Debian's, with python3-aiohttp (another python3 on PATH may lack it)
SERVER="$SRC/tests/http/openai_server.py"
"$PY" -c 'import aiohttp' || fail "python3-aiohttp is missing: scripts/deps.sh --test installs it"

lp() {
  python3 - "$1" "$2" "$3" <<'PYEOF'
import json, sys
d = json.load(open(sys.argv[1]))
exec(sys.argv[3])
open(sys.argv[2], "w").write(json.dumps(d, indent=2) + "\n")
PYEOF
}
# The generator's parameters with a generous SLO and a 300 ms deadline; the embedding pilot's with
# a service.
lp "$P/generate.json" "$P/g.json" 'd["service"].update(deadline_ms=300, slo={"percentile": 0.9, "confidence": 0.9, "e2e_ms": 5000, "ttft_ms": 5000, "tpot_ms": 5000})'
lp "$P/embed.json" "$P/e.json" 'd["service"] = {"max_request_bytes": 65536, "deadline_ms": 2000, "slo": {"percentile": 0.9, "confidence": 0.9, "e2e_ms": 5000}}'

# The bundled models' outputs, computed by pilot run, for the server to answer with.
run_pilot 0 run --params "$P/g.json" --runs-dir "$WORK/runs" --run-id gen
run_pilot 0 run --params "$P/e.json" --runs-dir "$WORK/runs" --run-id emb

SERVER_PID=
stop_server() { [ -z "$SERVER_PID" ] || { kill "$SERVER_PID" 2>/dev/null || true; wait "$SERVER_PID" 2>/dev/null || true; }; SERVER_PID=; }
trap 'stop_server; rm -rf "$WORK"' EXIT
# start_server ARGS...: a server for at most 120 s; its URL in $URL.
start_server() {
  stop_server
  rm -f "$WORK/port"
  "$PY" "$SERVER" --from-run "$WORK/runs/gen" --from-run "$WORK/runs/emb" --port-file "$WORK/port" \
    --lifetime-s 120 "$@" 2>"$WORK/server.err" &
  SERVER_PID=$!
  wait_for "$WORK/port" .
  URL="http://127.0.0.1:$(cat "$WORK/port")"
}
stats() { python3 -c 'import json,sys,urllib.request; print(json.dumps(json.load(urllib.request.urlopen(sys.argv[1] + "/stats"))))' "$URL"; }

# check_folder DIR: verify passes; every request has one outcome; the step's figures add up.
check_folder() {
  run_pilot 0 verify "$1"
  expect_in "$WORK/out" "verify: ok"
  python3 - "$1" <<'PYEOF'
import json, sys
d = sys.argv[1]
load = json.load(open(d + "/data/load.json"))
lines = [json.loads(l) for l in open(d + "/data/requests.jsonl")]
for k, s in enumerate(load["steps"]):
    f = s["figures"]
    mine = [l for l in lines if l["step"] == k]
    assert [l["request"] for l in mine] == list(range(f["issued"]))
    outs = [l["outcome"] for l in mine]
    for o in ("completed", "over_capacity", "rejected", "timed_out", "failed"):
        assert outs.count(o) == f[o], (k, o, outs.count(o), f[o])
    assert sum(f[o] for o in ("completed", "over_capacity", "rejected", "timed_out", "failed")) == f["issued"]
PYEOF
}

# 1. Completions, streamed: the completions are those of pilot run, token for token, with TTFT
#    and ITL per request; the server saw every request the client sent, and nothing else.
start_server --token-ms 1
run_pilot 0 load --params "$P/g.json" --target "$URL" --api completions --rate 100 --requests 48 --out "$WORK/C1"
expect_in "$WORK/out" "against $URL (completions, model pilot-test)"
expect_in "$WORK/out" "TTFT p50"
check_folder "$WORK/C1"
stats >"$WORK/stats.json"
python3 - "$WORK/C1" "$WORK/runs/gen" "$WORK/stats.json" <<'PYEOF'
import json, sys
d, run, stats = sys.argv[1], sys.argv[2], json.load(open(sys.argv[3]))
rec = json.load(open(d + "/data/run.json"))
assert rec["request"]["load"]["target"]["api"] == "completions" and rec["stage"]["kind"] == "http"
tokens = {r["id"]: r["completion_tokens"] for r in map(json.loads, open(run + "/data/results.jsonl"))
          if r["status"] == "accepted"}
lines = [json.loads(l) for l in open(d + "/data/requests.jsonl")]
done = [l for l in lines if l["outcome"] == "completed"]
assert done and all(l["output_tokens"] == tokens[l["item"]] for l in done), "usage.completion_tokens"
assert all(l["ttft_ms"] > 0 and len(l["itl_ms"]) >= 1 for l in done)
# Items pilot rejects unsent (its prechecks) and those the server refuses as bad (400) are rejected.
reasons = {l.get("reason") for l in lines if l["outcome"] == "rejected"}
assert reasons <= {"invalid_encoding", "http_400", "too_large"}, reasons
sent = sum(1 for l in lines if l.get("reason") not in ("invalid_encoding", "too_large")) + 1  # + the cold start
assert stats["posts"] == sent and stats["completed"] == len(done) + 1, (stats, sent, len(done))
assert stats["bad_request"] == sum(1 for l in lines if l.get("reason") == "http_400")
assert stats["streamed"] == stats["posts"] - stats["bad_request"]
PYEOF

# 2. Chat, streamed, and completions whole: the same tokens; no TTFT without a stream.
run_pilot 0 load --params "$P/g.json" --target "$URL" --api chat --concurrency 3 --requests 48 --out "$WORK/C2"
check_folder "$WORK/C2"
# Whole answers carry no token times: an SLO on TTFT or TPOT is refused; one on e2e alone is judged.
run_pilot 2 load --params "$P/g.json" --target "$URL" --api completions --no-stream --concurrency 2 --requests 48 --out "$WORK/C3"
expect_in "$WORK/err" "--no-stream gives no token times"
lp "$P/g.json" "$P/g-e2e.json" 'd["service"]["slo"] = {"percentile": 0.9, "confidence": 0.9, "e2e_ms": 5000}'
run_pilot 0 load --params "$P/g-e2e.json" --target "$URL" --api completions --no-stream --concurrency 2 --requests 48 --out "$WORK/C3"
check_folder "$WORK/C3"
python3 - "$WORK/C2" "$WORK/C3" <<'PYEOF'
import json, sys
chat = [json.loads(l) for l in open(sys.argv[1] + "/data/requests.jsonl")]
whole = [json.loads(l) for l in open(sys.argv[2] + "/data/requests.jsonl")]
assert all("ttft_ms" in l for l in chat if l["outcome"] == "completed")
assert all("ttft_ms" not in l and l["output_tokens"] > 0 for l in whole if l["outcome"] == "completed")
assert json.load(open(sys.argv[2] + "/data/run.json"))["request"]["load"]["target"]["stream"] is False
PYEOF

# 3. Embeddings: every accepted item's vector answered.
run_pilot 0 load --params "$P/e.json" --target "$URL" --api embeddings --concurrency 2 --requests 48 --out "$WORK/E1"
expect_in "$WORK/out" "(embeddings, model pilot-test)"
check_folder "$WORK/E1"

# 4. Every fault, forced by the server's request count, with pilot's counts beside the server's.
#    The deadline is 300 ms; a slow answer takes 600 ms, so it times out.
start_server --token-ms 0 --refuse-every 7 --unavailable-every 11 --truncate-every 13 --reset-every 17 \
  --garbage-every 19 --huge-every 23 --huge-mb 17 --slow-every 29 --slow-ms 600
run_pilot 4 load --params "$P/g.json" --target "$URL" --api completions --rate 80 --requests 240 --out "$WORK/F1"
check_folder "$WORK/F1"
sleep 0.8  # the slow answers the client gave up on end on the server too
stats >"$WORK/stats.json"
python3 - "$WORK/F1" "$WORK/stats.json" <<'PYEOF'
import collections, json, sys
d, s = sys.argv[1], json.load(open(sys.argv[2]))
lines = [json.loads(l) for l in open(d + "/data/requests.jsonl")]
cold = json.load(open(d + "/data/load.json"))["cold_start"]
c = collections.Counter((l["outcome"], l.get("reason")) for l in lines)
resent = sum(l.get("resent", 0) for l in lines)
unsent = c[("rejected", "invalid_encoding")] + c[("rejected", "too_large")]
print("pilot:", dict(c), "resent", resent, "cold start", cold["first_request_outcome"])
print("server:", s)
cold_done = cold["first_request_outcome"] == "completed"
# Every request the client sent reached the server; a reset on a reused connection is sent again
# once by libcurl, and the record says so.
assert s["posts"] == len(lines) - unsent + resent + 1, (s["posts"], len(lines), unsent, resent)
assert s["completed"] == c[("completed", None)] + cold_done
assert s["refused_429"] == c[("over_capacity", "http_429")]
assert s["unavailable_503"] == c[("over_capacity", "http_503")]
assert s["truncated"] == c[("failed", "truncated_response")]
assert s["garbage"] == c[("failed", "bad_response")]
assert s["huge"] == c[("failed", "response_too_large")]
assert s["reset"] == c[("failed", "connection_reset")] + resent
assert s["bad_request"] == c[("rejected", "http_400")]
# A slow answer (600 ms) past the 300 ms deadline: timed out at its deadline, the server's client gone.
assert c[("timed_out", None)] == s["slow"] == s["client_gone"] > 0, (c, s)
for l in lines:
    if l["outcome"] == "timed_out":
        assert abs(l["finished_ms"] - l["arrived_ms"] - 300) < 2e-3, l
for key in ("refused_429", "unavailable_503", "truncated", "garbage", "huge", "reset"):
    assert s[key] > 0, key
PYEOF

# 5. The client's bound: at most 2 requests open at once, the rest of a burst fail at once.
start_server --slow-every 1 --slow-ms 200
run_pilot 4 load --params "$P/g.json" --target "$URL" --api completions --max-in-flight 2 --rate 2000 \
  --requests 20 --arrivals constant --out "$WORK/B1"
check_folder "$WORK/B1"
python3 -c '
import json,sys
ls=[json.loads(l) for l in open(sys.argv[1]+"/data/requests.jsonl")]
assert sum(l.get("reason")=="client_in_flight_bound" for l in ls) > 0
' "$WORK/B1"

# 5b. Whole answers of 15 MiB each to 32 open requests (480 MiB): pilot holds at most 256 MiB of
#     answers at once; those past it fail response_too_large, the rest bad_response (not JSON).
start_server --huge-every 1 --huge-mb 15
python3 - "$PILOT" "$P/e.json" "$URL" "$WORK/H1" >"$WORK/rss" <<'PYEOF'
import resource, subprocess, sys
pilot, params, url, out = sys.argv[1:]
rc = subprocess.run([pilot, "load", "--params", params, "--target", url, "--api", "embeddings", "--concurrency", "32",
                     "--requests", "32", "--out", out, "--quiet"], stdout=subprocess.DEVNULL).returncode
print(rc, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024)
PYEOF
read -r rc rss <"$WORK/rss"
[ "$rc" = 4 ] || fail "the huge answers' load exited $rc"
[ "$rss" -lt 400 ] || fail "pilot's peak RSS was $rss MB with 480 MiB of answers open (budget 256 MiB)"
check_folder "$WORK/H1"
python3 -c '
import json,sys,collections
c=collections.Counter(l.get("reason") for l in map(json.loads, open(sys.argv[1]+"/data/requests.jsonl")) if l["outcome"]=="failed")
assert c["response_too_large"] > 0 and c["bad_response"] > 0, c
' "$WORK/H1"

# 6. Interrupted: issuing stops, open requests end, the folder verifies, exit 130.
start_server --token-ms 1
"$PILOT" load --params "$P/g.json" --target "$URL" --api chat --rate 50 --duration 30 --out "$WORK/I1" \
  >"$WORK/out" 2>"$WORK/err" &
pid=$!
sleep 2
kill -INT "$pid"
rc=0; wait "$pid" || rc=$?
[ "$rc" = 130 ] || { cat "$WORK/err"; fail "interrupted load exited $rc"; }
check_folder "$WORK/I1"
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]+"/data/load.json"))["interrupted"] is True' "$WORK/I1"

# 6b. HTTPS: a certificate made here for 127.0.0.1, trusted through --cacert (its sha256 recorded);
#     without it, the system's certificates do not know it: exit 3, nothing written.
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
  -keyout "$WORK/tls.key" -out "$WORK/tls.pem" 2>/dev/null
start_server --tls-cert "$WORK/tls.pem" --tls-key "$WORK/tls.key"
TLS_URL=${URL/http:/https:}
run_pilot 0 load --params "$P/g.json" --target "$TLS_URL" --api chat --cacert "$WORK/tls.pem" --concurrency 2 \
  --requests 48 --out "$WORK/S1"
check_folder "$WORK/S1"
python3 - "$WORK/S1" "$WORK/tls.pem" <<'PYEOF'
import hashlib, json, sys
t = json.load(open(sys.argv[1] + "/data/run.json"))["request"]["load"]["target"]
assert t["url"].startswith("https://") and t["cacert"]["sha256"] == hashlib.sha256(open(sys.argv[2], "rb").read()).hexdigest(), t
assert json.load(open(sys.argv[1] + "/data/load.json"))["steps"][0]["figures"]["completed"] > 0
PYEOF
run_pilot 3 load --params "$P/g.json" --target "$TLS_URL" --api chat --concurrency 1 --requests 1 --out "$WORK/S2"
expect_in "$WORK/err" "the target cannot be reached"
[ ! -e "$WORK/S2" ] || fail "an unverified target left a folder"
run_pilot 2 load --params "$P/g.json" --target "$TLS_URL" --api chat --cacert "$WORK/tls.key" --concurrency 1 --requests 1 --out "$WORK/S3"
expect_in "$WORK/err" "no PEM certificate"
mkfifo "$WORK/ca.fifo"
run_pilot 2 load --params "$P/g.json" --target "$TLS_URL" --api chat --cacert "$WORK/ca.fifo" --concurrency 1 --requests 1 --out "$WORK/S4"
expect_in "$WORK/err" "ca.fifo"

# 7. An edited outcome, re-hashed, is caught by verify.
cp -r "$WORK/C1" "$WORK/T1"
python3 - "$WORK/T1" <<'PYEOF'
import hashlib, json, os, sys
d = sys.argv[1]
p = d + "/data/requests.jsonl"
lines = open(p).read().splitlines()
for i, l in enumerate(lines):
    j = json.loads(l)
    if j["outcome"] == "completed":
        j["outcome"] = "over_capacity"; j["reason"] = "http_429"; j.pop("output_tokens", None)
        for k in ("ttft_ms", "tpot_ms", "itl_ms"): j.pop(k, None)
        lines[i] = json.dumps(j, separators=(",", ":")); break
open(p, "w").write("\n".join(lines) + "\n")
def rehash(manifest, root, files):
    with open(manifest, "w") as m:
        for f in files:
            m.write(hashlib.sha256(open(os.path.join(root, f), "rb").read()).hexdigest() + "  " + f + "\n")
files = sorted(os.path.relpath(os.path.join(a, f), d) for a, _, fs in os.walk(d + "/data") for f in fs)
rehash(d + "/manifest-sha256.txt", d, files)
tags = [f for f in sorted(os.listdir(d)) if f.endswith(".txt") and not f.startswith("tagmanifest")]
rehash(d + "/tagmanifest-sha256.txt", d, tags)
PYEOF
run_pilot 1 verify "$WORK/T1"
expect_in "$WORK/err" "its figures differ"

# 8. Bad input: nothing written, no secret echoed; an unreachable target is the environment's.
stop_server
before=$(ls "$WORK")
run_pilot 3 load --params "$P/g.json" --target "http://127.0.0.1:9" --api chat --concurrency 1 --requests 1 --out "$WORK/X1"
expect_in "$WORK/err" "the target cannot be reached"
run_pilot 2 load --params "$P/g.json" --target "http://user:s3cretpassw0rd@127.0.0.1:9" --api chat --concurrency 1 --requests 1 --out "$WORK/X2"
expect_not_in "$WORK/err" "s3cretpassw0rd"
run_pilot 2 load --params "$P/g.json" --target "http://127.0.0.1:9/?key=s3cretpassw0rd" --api chat --concurrency 1 --requests 1 --out "$WORK/X3"
expect_not_in "$WORK/err" "s3cretpassw0rd"
run_pilot 2 load --params "$P/g.json" --target "ftp://127.0.0.1:9" --api chat --concurrency 1 --requests 1 --out "$WORK/X4"
run_pilot 2 load --params "$P/g.json" --target "http://127.0.0.1:9" --concurrency 1 --requests 1 --out "$WORK/X5"
expect_in "$WORK/err" "--target needs --api"
run_pilot 2 load --params "$P/g.json" --target "http://127.0.0.1:9" --api chat --api-key-env PILOT_TEST_NO_SUCH_VAR --concurrency 1 --requests 1 --out "$WORK/X6"
expect_in "$WORK/err" "PILOT_TEST_NO_SUCH_VAR"
run_pilot 2 load --params "$P/g.json" --api chat --concurrency 1 --requests 1 --out "$WORK/X7"
expect_in "$WORK/err" "applies to a service over HTTP"
run_pilot 2 load --params "$P/e.json" --target "http://127.0.0.1:9" --api embeddings --max-tokens 4 --concurrency 1 --requests 1 --out "$WORK/X8"
[ "$(ls "$WORK")" = "$before" ] || fail "a refused load wrote something"
# The key: sent, never written or printed.
start_server
PILOT_TEST_KEY=sk-pilottest0123456789abcdef run_pilot 0 load --params "$P/g.json" --target "$URL" --api chat \
  --api-key-env PILOT_TEST_KEY --requests 48 --concurrency 2 --out "$WORK/K1"
if grep -rq "sk-pilottest0123456789abcdef" "$WORK/K1" "$WORK/out" "$WORK/err"; then fail "the key was written or printed"; fi
python3 -c 'import json,sys; assert json.load(open(sys.argv[1]+"/data/run.json"))["request"]["load"]["target"]["api_key_env"] == "PILOT_TEST_KEY"' "$WORK/K1"
stop_server
echo "ok"
