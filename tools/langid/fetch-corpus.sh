#!/usr/bin/env bash
# Fetches the language-identification training corpus: the gettext catalogs (.mo) that a
# fixed list of Debian 12 packages ship, for the model's languages. English text comes from
# the msgids, every other language from the msgstrs. Needs only apt-get (no root) and
# dpkg-deb. Writes OUT_DIR/<package>/<lang>/<domain>.mo and OUT_DIR/packages.txt (the exact
# package versions fetched), and prints the corpus hash that the model card records.
set -euo pipefail

out=${1:?usage: fetch-corpus.sh OUT_DIR}
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

mapfile -t packages < <(grep -v '^#' "$here/corpus-packages.txt" | grep .)
mapfile -t langs < <(grep -v '^#' "$here/languages.txt" | awk '{print $1}' | grep .)

( cd "$work" && apt-get download "${packages[@]}" >/dev/null )
: >"$out/packages.txt"
for deb in "$work"/*.deb; do
  pkg=$(dpkg-deb -f "$deb" Package)
  ver=$(dpkg-deb -f "$deb" Version)
  echo "$pkg $ver" >>"$out/packages.txt"
  x="$work/x-$pkg"
  dpkg-deb -x "$deb" "$x"
  for lang in "${langs[@]}"; do
    [ "$lang" = en ] && continue  # English comes from the msgids of every catalog
    # A language's catalogs may live under lang or lang_REGION (pt and pt_BR both count as pt).
    for dir in "$x"/usr/share/locale/"$lang" "$x"/usr/share/locale/"$lang"_[A-Z][A-Z]; do
      [ -d "$dir/LC_MESSAGES" ] || continue
      for mo in "$dir"/LC_MESSAGES/*.mo; do
        [ -f "$mo" ] || continue
        dest="$out/$pkg/$lang"
        mkdir -p "$dest"
        cp "$mo" "$dest/$(basename "$dir")-$(basename "$mo")"
      done
    done
  done
done
sort -o "$out/packages.txt" "$out/packages.txt"
( cd "$out" && find . -name '*.mo' -type f | LC_ALL=C sort | xargs sha256sum ) >"$out/SHA256SUMS"
echo "corpus: $(find "$out" -name '*.mo' | wc -l) catalogs from $(wc -l <"$out/packages.txt") packages"
echo "corpus sha256: $(sha256sum "$out/SHA256SUMS" | cut -d' ' -f1)"
