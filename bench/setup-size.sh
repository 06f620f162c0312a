#!/usr/bin/env bash
# What the README's commands install on a Debian 12 machine, with and without Recommends:
# apt's own resolver, simulated against an empty package database (so the figures count
# every package, including the few any Debian already has). Installs nothing; prints figures.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
empty=$(mktemp)
trap 'rm -f "$empty"' EXIT
pkgs=$(sed 's/#.*//; s/=.*//' "$root/requirements-rebuild.txt" | tr -s ' \n' ' ')
for mode in "" --no-install-recommends; do
  apt-get -o Dir::State::status="$empty" -o Dir::Cache::archives=/nonexistent --print-uris -qq install $mode $pkgs |
    awk -v m="${mode:-with recommends}" '{ s += $3 } END { printf "%-24s %4d packages, %4.0f MB to download\n", m, NR, s / 1e6 }'
done
