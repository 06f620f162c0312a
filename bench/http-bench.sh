#!/usr/bin/env bash
# pilot load --target's HTTP client against Debian's wrk (docs/load.md, "Speed"). Not a test: it
# prints figures. Against the loopback test server answering at once (tests/http/openai_server.py
# --trivial, one Python process), rounds alternate between:
#   wrk -t1 -cC -dS   with a POST of one embedding request (the same body pilot sends), and
#   pilot load --target URL --api embeddings --concurrency C --duration S   (the release build),
# so that both meet the same server in the same minute. It prints each round's requests/s, the
# medians and their ratio (target: pilot >= 0.8x wrk), and the client CPU per request: pilot's
# HTTP client thread over the step (load.json's client_cpu_ms over its requests), wrk's user +
# system time over its requests, and pilot's whole process over a whole run (setup, the folder's
# writing and its verify included: an upper bound).
#
#   bench/http-bench.sh [CONNECTIONS] [SECONDS] [ROUNDS]     (default 8 5 3)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
conns=${1:-8}
secs=${2:-5}
rounds=${3:-3}
preset=${PILOT_BENCH_PRESET:-release}
PY=/usr/bin/python3
cd "$root"
scripts/deps.sh --test --bench
[ -d "build/$preset" ] || cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" --target pilot >/dev/null
pilot=$root/build/$preset/pilot
work=$(mktemp -d)
server=
trap '[ -z "$server" ] || kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT

"$PY" tests/http/openai_server.py --trivial --port-file "$work/port" --lifetime-s 3600 &
server=$!
for _ in $(seq 100); do [ -s "$work/port" ] && break; sleep 0.1; done
url="http://127.0.0.1:$(cat "$work/port")"
# The embedding pilot's manifest, every item sent (no item is over the service's largest request).
"$PY" - "$root/config/embed.json" "$work/p.json" <<'PYEOF'
import json, os, sys
d = json.load(open(sys.argv[1]))
base = os.path.dirname(os.path.abspath(sys.argv[1]))
d["manifest"] = os.path.join(base, d["manifest"])
d["stage"]["model"] = os.path.join(base, d["stage"]["model"])
d["service"] = {"deadline_ms": 10000, "slo": {"percentile": 0.5, "confidence": 0.5, "e2e_ms": 10000}}
json.dump(d, open(sys.argv[2], "w"))
PYEOF
body=$("$PY" -c 'import json; print(json.dumps({"model": "pilot-test", "input": "The quick brown fox jumps over the lazy dog.", "encoding_format": "float"}))')
cat >"$work/post.lua" <<LUA
wrk.method = "POST"
wrk.body = '$body'
wrk.headers["Content-Type"] = "application/json"
LUA

# wrk_round: one wrk run; prints "requests_per_s cpu_us_per_request".
wrk_round() {
  "$PY" - "$conns" "$secs" "$work/post.lua" "$url/v1/embeddings" <<'PYEOF'
import re, resource, subprocess, sys
conns, secs, lua, url = sys.argv[1:]
before = resource.getrusage(resource.RUSAGE_CHILDREN)
out = subprocess.run(["wrk", "-t1", "-c" + conns, "-d" + secs + "s", "-s", lua, url], check=True,
                     capture_output=True, text=True).stdout
after = resource.getrusage(resource.RUSAGE_CHILDREN)
rate = float(re.search(r"Requests/sec:\s+([\d.]+)", out).group(1))
n = int(re.search(r"(\d+) requests in", out).group(1))
cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
print(rate, cpu / n * 1e6)
PYEOF
}

# pilot_round SECONDS OUT: one pilot load; prints "achieved_per_s sent cpu_s client_us_per_request".
pilot_round() {
  rm -rf "$2"
  "$PY" - "$pilot" "$work/p.json" "$url" "$conns" "$1" "$2" <<'PYEOF'
import json, resource, subprocess, sys
pilot, params, url, conns, secs, out = sys.argv[1:]
before = resource.getrusage(resource.RUSAGE_CHILDREN)
subprocess.run([pilot, "load", "--params", params, "--target", url, "--api", "embeddings", "--concurrency",
                conns, "--duration", secs, "--out", out, "--quiet"], check=True, stdout=subprocess.DEVNULL)
after = resource.getrusage(resource.RUSAGE_CHILDREN)
step = json.load(open(out + "/data/load.json"))["steps"][0]
f = step["figures"]
cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
# + the cold start's request; the client thread's CPU over the step's requests
print(f["achieved_per_s"], f["completed"] + 1, cpu, step["client_cpu_ms"] * 1000 / f["issued"])
PYEOF
}

echo "server: $url (tests/http/openai_server.py --trivial); $conns connections, ${secs} s a round, $rounds rounds; pilot: build/$preset"
wrk_rates=() pilot_rates=() wrk_cpu=() pilot_cpu=() whole_cpu=()
for r in $(seq "$rounds"); do
  read -r w wc < <(wrk_round)
  read -r p sent cpu client < <(pilot_round "$secs" "$work/L$r")
  echo "round $r: wrk $w req/s (${wc} us CPU a request), pilot $p req/s (${sent} requests; client thread ${client} us a request, whole process ${cpu} s)"
  wrk_rates+=("$w") pilot_rates+=("$p") wrk_cpu+=("$wc") pilot_cpu+=("$client")
  whole_cpu+=("$("$PY" -c 'import sys; print(float(sys.argv[1]) / int(sys.argv[2]) * 1e6)' "$cpu" "$sent")")
done
"$PY" - "${wrk_rates[*]}" "${pilot_rates[*]}" "${wrk_cpu[*]}" "${pilot_cpu[*]}" "${whole_cpu[*]}" <<'PYEOF'
import statistics, sys
med = lambda s: statistics.median(float(x) for x in s.split())
mw, mp = med(sys.argv[1]), med(sys.argv[2])
print(f"median: wrk {mw:,.0f} req/s, pilot {mp:,.0f} req/s: pilot/wrk = {mp / mw:.2f}x (target >= 0.8x)")
print(f"client CPU a request (median): pilot's HTTP client thread {med(sys.argv[4]):.1f} us, wrk {med(sys.argv[3]):.1f} us; "
      f"pilot's whole process {med(sys.argv[5]):.1f} us (setup, the folder's writing and verify included)")
PYEOF
