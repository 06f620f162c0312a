#!/usr/bin/env bash
# What the README's two commands install on a Debian 12 machine, with and without Recommends:
# apt's own resolver, simulated against an empty package database (so the figures count
# every package, including the few any Debian already has). Installs nothing; prints figures.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
empty=$(mktemp)
trap 'rm -f "$empty"' EXIT
# The pilot command installs the untagged lines; the test command the [test] and [debian] ones too
# ([bench] ones only for the benchmarks that need them).
pilot_pkgs=$(grep -v '\[test\]\|\[debian\]\|\[bench\]' "$root/requirements-rebuild.txt" | sed 's/#.*//; s/=.*//' | tr -s ' \n' ' ')
test_pkgs=$(grep -v '\[bench\]' "$root/requirements-rebuild.txt" | sed 's/#.*//; s/=.*//' | tr -s ' \n' ' ')
for which in pilot test; do
  [ "$which" = pilot ] && pkgs=$pilot_pkgs || pkgs=$test_pkgs
  for mode in "" --no-install-recommends; do
    apt-get -o Dir::State::status="$empty" -o Dir::Cache::archives=/nonexistent --print-uris -qq install $mode $pkgs |
      awk -v m="$which command, ${mode:-with recommends}" '{ s += $3 } END { printf "%-45s %4d packages, %4.0f MB to download\n", m, NR, s / 1e6 }'
  done
done
echo "(and the pinned wheels of requirements-torch.txt from PyPI, into build/venv: scripts/torch-deps.sh prints their size)"
