#!/usr/bin/env bash
# The sanitizer and fuzzing check (CI calls it): builds the `asan` preset (clang, ASan +
# UBSan, the libFuzzer targets of tests/fuzz) into build/asan, runs the unit tests (and any
# test labelled `sanitize`) under the sanitizers, then for every fuzz target replays its
# committed corpus and fuzzes it for FUZZ_SECONDS (default 10) with a fixed seed, into a
# scratch copy of the corpus (the committed corpus is never written).
#
# Fails (exit 1) on any test failure, crash, sanitizer or leak report. Findings are kept
# under build/asan/fuzz-findings/<target>/ and every fuzzer's log under
# build/asan/fuzz-logs/; to keep a finding as a regression input, copy it to
# tests/fuzz/corpus/<target>/regress-<what>.
#
# Environment: FUZZ_SECONDS (per target; 0 skips fuzzing, replays only), FUZZ_MAX_LEN
# (largest fuzzed input, default 4096; the replay runs every committed file whole), FUZZ_TARGETS
# (space-separated names such as "params journal" to limit the fuzz targets), FUZZ_JOBS (targets
# at a time, default 2), SKIP_BUILD=1
# (use build/asan as it is), SKIP_TESTS=1 (fuzz targets only).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"

FUZZ_SECONDS=${FUZZ_SECONDS:-10}
# Fuzzed inputs stay small: exec/s drops tenfold at 64 KiB, and the caps pilot enforces
# (nesting 64, ids 128) are reached within a few KiB. Larger inputs are in the replay.
FUZZ_MAX_LEN=${FUZZ_MAX_LEN:-4096}
build=build/asan

# Sanitizer options: stop at the first report, with a stack; leaks are reports too. The same
# as the `asan` test preset's environment (CMakePresets.json), exported here for the
# fuzzers (and every other process started from here). One leak suppression
# (tests/fuzz/lsan-suppressions.txt): Debian's libtorch leaks its zip reader when it refuses
# a damaged model file; not pilot's leak.
export ASAN_OPTIONS="halt_on_error=1:print_stacktrace=1:detect_leaks=1:strict_string_checks=1:detect_stack_use_after_return=1:check_initialization_order=1:strict_init_order=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:report_error_type=1"
export LSAN_OPTIONS="suppressions=$root/tests/fuzz/lsan-suppressions.txt:print_suppressions=0"

# --- toolchain: clang with the compiler-rt sanitizer and libFuzzer runtimes -------------
scripts/deps.sh --debian
need=()
command -v /usr/bin/clang++ >/dev/null || need+=(clang)
if [ ${#need[@]} -eq 0 ]; then
  rt=$(/usr/bin/clang++ -print-runtime-dir 2>/dev/null || true)
  [ -f "$rt/libclang_rt.fuzzer-x86_64.a" ] && [ -f "$rt/libclang_rt.asan-x86_64.a" ] || need+=(libclang-rt-14-dev)
fi
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "sanitize: error: missing Debian packages: ${need[*]}" >&2
    echo "  run: sudo apt-get update && sudo apt-get install -y clang libclang-rt-14-dev" >&2
    exit 1
  fi
  echo "sanitize: installing clang libclang-rt-14-dev" >&2
  DEBIAN_FRONTEND=noninteractive apt-get update -q
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q clang libclang-rt-14-dev
fi

# --- build ---------------------------------------------------------------------------------
if [ "${SKIP_BUILD:-0}" != 1 ]; then
  fresh=()
  # A build tree configured from another checkout (a moved or copied repository) is redone.
  if [ -f "$build/CMakeCache.txt" ] && ! grep -qxF "CMAKE_HOME_DIRECTORY:INTERNAL=$root" "$build/CMakeCache.txt"; then
    fresh=(--fresh)
  fi
  cmake --preset asan "${fresh[@]}"
  start=$SECONDS
  # What the sanitizer checks run: the CLI, the unit tests, the fuzzers and the hostile
  # catalogue's model builder (not the torch
  # unit tests or the model trainer, which the default build covers).
  cmake --build --preset asan --target pilot pilot_core_tests pilot-test-model fuzz
  echo "sanitize: build/asan built in $((SECONDS - start)) s"
fi
targets_file=$build/tests/fuzz/fuzz-targets.txt
if [ ! -f "$targets_file" ]; then
  echo "sanitize: error: $targets_file is missing: the build has no fuzz targets (PILOT_FUZZ off, or not clang?)" >&2
  exit 1
fi

# --- tests under the sanitizers --------------------------------------------------------------
# A failing test does not stop the fuzz targets: the run reports everything, then fails.
tests_failed=()
if [ "${SKIP_TESTS:-0}" != 1 ]; then
  ctest --preset asan -R '^unit\.' || tests_failed+=("unit")
  labelled=$(ctest --preset asan -N -L sanitize | sed -n 's/^Total Tests: *//p')
  if [ "${labelled:-0}" -gt 0 ]; then
    # The unit tests were just run; the rest of the `sanitize` label (e2e suites).
    ctest --preset asan -L sanitize -E '^unit\.' || tests_failed+=("sanitize")
  fi
fi

# --- fuzz targets -----------------------------------------------------------------------------
scratch=$(mktemp -d "${TMPDIR:-/tmp}/pilot-fuzz.XXXXXX")
trap 'rm -rf "$scratch"' EXIT
findings_root=$build/fuzz-findings
logs=$build/fuzz-logs
mkdir -p "$logs"

# A sanitizer or libFuzzer report in a log, whatever the exit status said.
reported() {
  grep -qE 'ERROR: (AddressSanitizer|LeakSanitizer|UndefinedBehaviorSanitizer)|runtime error:|==[0-9]+==ERROR|deadly signal|libFuzzer: (timeout|out-of-memory|fuzz target exited)|invariant violated|terminate called' "$1"
}

brief() {  # the end of a log without libFuzzer's per-input lines and deep stack frames
  grep -vE '^(Running|Executed) |^ +#([1-9][0-9]|[0-9]{3,}) ' "$1" | tail -n 40 || true
}

stat_of() {  # stat_of LOG NAME: a -print_final_stats=1 value
  sed -n "s/^stat::$2: *//p" "$1" | tail -n 1
}

# One target: replay, then fuzz. Its row of the summary goes to $scratch/rows/NAME, and the
# file $scratch/failed/NAME marks a failure. Two targets run at a time (FUZZ_JOBS): each is
# one process, and the machine has two cores.
fuzz_one() {
  set +e  # every step's outcome is checked here; a failure is a row, never a silent stop
  local target=$1 name=${1#fuzz_}
  local bin=$build/tests/fuzz/$target corpus=tests/fuzz/corpus/$name findings=$findings_root/$name
  rm -rf "$findings"
  mkdir -p "$findings"
  local dict_args=() d
  for d in "tests/fuzz/dict/$name.dict" "tests/fuzz/dict/${name%_*}.dict"; do
    if [ -f "$d" ]; then dict_args=("-dict=$d"); break; fi
  done
  local ok=1

  # 1. Replay every committed input once, each file whole (seeds and regress-* reproducers).
  local inputs=()
  mapfile -t inputs < <(find "$corpus" -type f | LC_ALL=C sort)
  local replay_log=$logs/$name.replay.log
  echo "sanitize: $target: replaying ${#inputs[@]} inputs of $corpus"
  if [ ! -x "$bin" ]; then
    echo "sanitize: $target: FAILED: $bin was not built" >&2
    ok=0
  elif [ ${#inputs[@]} -eq 0 ]; then
    echo "sanitize: $target: no committed corpus in $corpus" >&2
    ok=0
  elif ! "$bin" "${inputs[@]}" >"$replay_log" 2>&1 || reported "$replay_log"; then
    ok=0
    echo "sanitize: $target: FAILED on the committed corpus; $(grep '^Running: ' "$replay_log" | tail -n 1)" >&2
    brief "$replay_log" >&2
    # libFuzzer stops at the first crash: replay each input alone to name every failing one.
    local f one_log=$scratch/replay-one.$name.log
    for f in "${inputs[@]}"; do
      if ! "$bin" "$f" >"$one_log" 2>&1 || reported "$one_log"; then
        echo "sanitize: $target: fails on $f: $(grep -m1 -E 'ERROR|runtime error|what\(\)|invariant' "$one_log" | cut -c1-200)" >&2
      fi
    done
  fi

  # 2. Fuzz a scratch copy for a fixed time with a fixed seed.
  local execs="-" rate="-" new="-"
  if [ "$ok" = 1 ] && [ "$FUZZ_SECONDS" -gt 0 ]; then
    local work=$scratch/$name fuzz_log=$logs/$name.fuzz.log
    mkdir -p "$work"
    cp -R "$corpus/." "$work/"
    echo "sanitize: $target: fuzzing for $FUZZ_SECONDS s"
    if ! "$bin" -seed=1 -max_total_time="$FUZZ_SECONDS" -rss_limit_mb=2048 -timeout=10 -max_len="$FUZZ_MAX_LEN" \
         -print_final_stats=1 -artifact_prefix="$findings/" "${dict_args[@]}" "$work" \
         >"$fuzz_log" 2>&1 || reported "$fuzz_log"; then
      ok=0
      echo "sanitize: $target: FAILED while fuzzing; findings in $findings/:" >&2
      ls -l "$findings" >&2 || true
      brief "$fuzz_log" >&2
    fi
    execs=$(stat_of "$fuzz_log" number_of_executed_units)
    rate=$(stat_of "$fuzz_log" average_exec_per_sec)
    new=$(stat_of "$fuzz_log" new_units_added)
  fi
  local status=passed
  if [ "$ok" = 1 ]; then
    rmdir "$findings" 2>/dev/null || true
  else
    status=FAILED
    : >"$scratch/failed/$name"
  fi
  printf '  %-16s %-7s %10s execs %8s exec/s %6s new units\n' "$name" "$status" "${execs:--}" "${rate:--}" \
    "${new:--}" >"$scratch/rows/$name"
}

FUZZ_JOBS=${FUZZ_JOBS:-2}
mkdir -p "$scratch/rows" "$scratch/failed"
mapfile -t all_targets <"$targets_file"
running=0
started=()
for target in "${all_targets[@]}"; do
  name=${target#fuzz_}
  if [ -n "${FUZZ_TARGETS:-}" ] && [[ " $FUZZ_TARGETS " != *" $name "* ]]; then continue; fi
  if [ "$running" -ge "$FUZZ_JOBS" ]; then
    wait -n || true
    running=$((running - 1))
  fi
  started+=("$name")
  fuzz_one "$target" &
  running=$((running + 1))
done
wait || true
rows=()
failed_names=()
for name in "${started[@]}"; do
  if [ ! -f "$scratch/rows/$name" ]; then  # its process ended before its row: a failure
    printf '  %-16s %-7s (no result)\n' "$name" FAILED >"$scratch/rows/$name"
    : >"$scratch/failed/$name"
  fi
  rows+=("$(cat "$scratch/rows/$name")")
  if [ -f "$scratch/failed/$name" ]; then failed_names+=("$name"); fi
done
failed=${#failed_names[@]}
passed=$((${#rows[@]} - failed))

echo "sanitize: fuzz targets (${FUZZ_SECONDS} s each, -seed=1):"
printf '%s\n' "${rows[@]}"
if [ ${#tests_failed[@]} -gt 0 ]; then
  echo "sanitize: tests FAILED under the sanitizers: ${tests_failed[*]} (see the ctest output above)"
fi
echo "sanitize: fuzz targets: $passed passed, $failed failed${failed_names:+ (${failed_names[*]})}"
[ "$failed" -eq 0 ] && [ ${#tests_failed[@]} -eq 0 ]
