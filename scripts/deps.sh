#!/usr/bin/env bash
# Installs the Debian packages in requirements-rebuild.txt that are missing. As root it runs
# apt-get; otherwise it prints the exact apt-get line to run and fails. Recommends are not
# installed: requirements-rebuild.txt names everything pilot needs (bench/setup-size.sh
# prints what that saves). Lines tagged `[debian]` are needed only by the builds against
# Debian's libtorch 1.13 (preset debian, the sanitizer build), installed with --debian; lines
# tagged `[test]` only by the tests, installed with --test (scripts/test.sh passes both); lines
# tagged `[bench]` only by the benchmarks that need them, installed with --bench.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
debian=0
tests=0
bench=0
for arg in "$@"; do
  case "$arg" in
    --debian) debian=1 ;;
    --test) tests=1 ;;
    --bench) bench=1 ;;
    *) echo "usage: scripts/deps.sh [--debian] [--test] [--bench]" >&2; exit 2 ;;
  esac
done
missing=()
while IFS= read -r line; do
  case "$line" in *"[debian]"*) [ $debian = 1 ] || continue ;; esac
  case "$line" in *"[test]"*) [ $tests = 1 ] || continue ;; esac
  case "$line" in *"[bench]"*) [ $bench = 1 ] || continue ;; esac
  line=${line%%#*}
  line=${line%%[[:space:]]*}
  [ -n "${line// }" ] || continue
  pkg=${line%%=*}
  want=${line#*=}
  have=$(dpkg-query -W -f='${Status} ${Version}' "$pkg" 2>/dev/null || true)
  case "$have" in
    "install ok installed "*)
      have=${have#install ok installed }
      [ "$have" = "$want" ] || echo "pilot: note: $pkg $have is installed; requirements-rebuild.txt pins $want" >&2 ;;
    *) missing+=("$pkg") ;;
  esac
done <"$root/requirements-rebuild.txt"
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" -ne 0 ]; then
  echo "pilot: error: missing Debian packages: ${missing[*]}" >&2
  echo "  run: sudo apt-get update && sudo apt-get install -y --no-install-recommends ${missing[*]}" >&2
  exit 1
fi
echo "pilot: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
# No package may start a system service (munge, slurmd, slurmctld): the tests start their
# own daemons in a temporary folder. Where the machine has no policy-rc.d, one that denies
# every start is in place for the install only.
policy=/usr/sbin/policy-rc.d
if [ ! -e "$policy" ]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy"
  chmod 755 "$policy"
  trap 'rm -f "$policy"' EXIT
fi
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}"
