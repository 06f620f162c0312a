#!/usr/bin/env bash
# pilot load's own cost (docs/load.md, "Speed"). Not a test: it prints figures. Builds
# pilot-load-bench in the release tree (the build users get), then:
#   1. the scheduler's lateness against its schedule, with a stage that answers at once, against a
#      bare clock_nanosleep(TIMER_ABSTIME) loop over the same schedule, alternated in one process
#      (target: p99 lateness <= 1.5x the bare loop's), at 1,000 and 5,000 requests/s;
#   2. the requests per second that scheduling and accounting sustain on one core.
#
#   bench/load-bench.sh [REQUESTS-PER-ROUND] [ROUNDS]     (default 2000 4)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
n=${1:-2000}
rounds=${2:-4}
preset=${PILOT_BENCH_PRESET:-release}
cd "$root"
[ -d "build/$preset" ] || cmake --preset "$preset" >/dev/null
cmake --build --preset "$preset" --target pilot-load-bench >/dev/null
bench=build/$preset/pilot-load-bench
for rate in 1000 5000; do
  "$bench" lateness "$n" "$rate" "$rounds"
done
"$bench" throughput 1000000
