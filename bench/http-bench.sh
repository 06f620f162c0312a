#!/usr/bin/env bash
# pilot load --target's HTTP client against Debian's wrk (docs/load.md, "Speed"). Not a test: it
# prints figures. Against the loopback test server answering at once (tests/http/openai_server.py
# --trivial, one Python process), rounds alternate between:
#   wrk -t1 -cC -dS   with a POST of one embedding request (the same body pilot sends), and
#   pilot load --target URL --api embeddings --concurrency C --duration S   (the release build),
# so that both meet the same server in the same minute. It prints each round's requests/s, the
# medians and their ratio (target: pilot >= 0.8x wrk), and pilot's client CPU per request: its
# user + system time over a long and a short run, the difference divided by the difference in
# requests (what one more request costs, the setup and the folder's writing left out), and the
# whole run's time over all its requests (an upper bound).
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

# pilot_round SECONDS OUT: one pilot load; prints "achieved_per_s sent cpu_s".
pilot_round() {
  rm -rf "$2"
  "$PY" - "$pilot" "$work/p.json" "$url" "$conns" "$1" "$2" <<'PYEOF'
import json, resource, subprocess, sys
pilot, params, url, conns, secs, out = sys.argv[1:]
before = resource.getrusage(resource.RUSAGE_CHILDREN)
subprocess.run([pilot, "load", "--params", params, "--target", url, "--api", "embeddings", "--concurrency",
                conns, "--duration", secs, "--out", out, "--quiet"], check=True, stdout=subprocess.DEVNULL)
after = resource.getrusage(resource.RUSAGE_CHILDREN)
f = json.load(open(out + "/data/load.json"))["steps"][0]["figures"]
cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
print(f["achieved_per_s"], f["completed"] + 1, cpu)  # + the cold start's request
PYEOF
}

echo "server: $url (tests/http/openai_server.py --trivial); $conns connections, ${secs} s a round, $rounds rounds; pilot: build/$preset"
wrk_rates=() pilot_rates=()
for r in $(seq "$rounds"); do
  w=$(wrk -t1 -c"$conns" -d"${secs}s" -s "$work/post.lua" "$url/v1/embeddings" | awk '/Requests\/sec/ {print $2}')
  read -r p sent cpu < <(pilot_round "$secs" "$work/L$r")
  echo "round $r: wrk $w req/s, pilot $p req/s (${sent} requests, ${cpu} s CPU)"
  wrk_rates+=("$w") pilot_rates+=("$p")
done
read -r p_short n_short cpu_short < <(pilot_round 1 "$work/S")
read -r p_long n_long cpu_long < <(pilot_round "$((secs * 2))" "$work/T")
"$PY" - "${wrk_rates[*]}" "${pilot_rates[*]}" "$n_short" "$cpu_short" "$n_long" "$cpu_long" <<'PYEOF'
import statistics, sys
w = [float(x) for x in sys.argv[1].split()]
p = [float(x) for x in sys.argv[2].split()]
n1, c1, n2, c2 = int(sys.argv[3]), float(sys.argv[4]), int(sys.argv[5]), float(sys.argv[6])
mw, mp = statistics.median(w), statistics.median(p)
print(f"median: wrk {mw:,.0f} req/s, pilot {mp:,.0f} req/s: pilot/wrk = {mp / mw:.2f}x (target >= 0.8x)")
if n2 > n1:
    print(f"pilot client CPU: {(c2 - c1) / (n2 - n1) * 1e6:.1f} us per request at the margin "
          f"({n2 - n1} more requests, {c2 - c1:.2f} s more CPU); {c2 / n2 * 1e6:.1f} us per request over a whole "
          f"run of {n2} (setup, verify and the folder's writing included)")
PYEOF
