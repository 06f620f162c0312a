#!/usr/bin/env bash
# Builds the bundled adaptation example (data/adapt): short texts -- names of countries
# (ISO 3166-1: short name, official name, common name, as iso-codes translates them) in a
# few of the bundled langid model's languages, labelled with the language, split into train/
# and eval/ with a manifest for each. The base model is weak on this domain (proper nouns of
# one to a few words, not UI messages), so a short fine-tuning (`pilot adapt`) shows a gain.
#
# Needs only apt-get (no root), dpkg-deb and python3 (standard library). Deterministic:
# selection and split use sha256 of the country code, every list is sorted, so
# the same package versions give the same bytes. Everything the script generates under
# OUT_DIR (train/, eval/, train.json, eval.json) is replaced; other files there are kept.
#
# Usage: tools/adapt/make-example.sh [OUT_DIR]   (default: data/adapt of this repository)
set -euo pipefail
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
out=${1:-"$here/../../data/adapt"}
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Languages of the example (all from tools/langid/languages.txt): those where the base model
# errs most on these names. Every label language is still used to drop ambiguous texts.
example_langs="en de nl sv it fi fr pl"
mapfile -t label_langs < <(grep -v '^#' "$here/../langid/languages.txt" | awk '{print $1}' | grep .)
mapfile -t packages < <(grep -v '^#' "$here/example-packages.txt" | grep .)

( cd "$work" && apt-get download "${packages[@]}" >/dev/null 2>&1 ) ||
  { echo "apt-get download ${packages[*]} failed" >&2; exit 1; }
: >"$work/packages.txt"
for deb in "$work"/*.deb; do
  pkg=$(dpkg-deb -f "$deb" Package)
  ver=$(dpkg-deb -f "$deb" Version)
  echo "$pkg $ver" >>"$work/packages.txt"
  dpkg-deb -x "$deb" "$work/root"
done
sort -o "$work/packages.txt" "$work/packages.txt"
echo "packages:"
sed 's/^/  /' "$work/packages.txt"

rm -rf "$out/train" "$out/eval"
mkdir -p "$out/train" "$out/eval"

python3 - "$work/root/usr/share" "$out" "$example_langs" "${label_langs[*]}" <<'PY'
import gettext, hashlib, json, os, sys

share, out, example_langs, label_langs = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4].split()
SELECT_PERCENT = 34   # share of countries kept (all their texts, in every language)
EVAL_MODULUS = 3      # a kept country goes to eval when its hash % 3 == 0

def h(s):
    return int.from_bytes(hashlib.sha256(s.encode("utf-8")).digest()[:8], "big")

DOMAIN = "iso_3166-1"

# Sources: (country code, field, English text); the English texts are the gettext msgids.
sources = []
t3166 = json.load(open(os.path.join(share, "iso-codes/json/iso_3166-1.json"), encoding="utf-8"))["3166-1"]
for e in t3166:
    for field in ("name", "official_name", "common_name"):
        if e.get(field):
            sources.append((e["alpha_2"], field, e[field]))
sources.sort()

def catalogs(lang):
    """The iso_3166-1 catalogs of one label language: LANG and LANG_REGION folders, sorted."""
    locale = os.path.join(share, "locale")
    dirs = sorted(d for d in os.listdir(locale) if d == lang or (d.startswith(lang + "_") and len(d) == len(lang) + 3))
    cats = []
    for d in dirs:
        mo = os.path.join(locale, d, "LC_MESSAGES", DOMAIN + ".mo")
        if os.path.isfile(mo):
            with open(mo, "rb") as f:
                cats.append(gettext.GNUTranslations(f))
    return cats

# (lang, domain, code, field, text) for every label language; English from the msgids.
texts = []
for lang in label_langs:
    cats = catalogs(lang) if lang != "en" else []
    for code, field, msgid in sources:
        if lang == "en":
            texts.append((lang, DOMAIN, code, field, msgid))
            continue
        for cat in cats:
            t = cat.gettext(msgid)
            if t != msgid:              # untranslated strings are left out
                texts.append((lang, DOMAIN, code, field, t))

def norm(t):
    return " ".join(t.split()).casefold()

# A text written the same way in two label languages ("Canada", "Argentina") says nothing
# about the language: drop it everywhere.
langs_of = {}
for lang, dom, code, field, t in texts:
    langs_of.setdefault(norm(t), set()).add(lang)

chosen = {}
for lang, dom, code, field, t in sorted(texts):
    if lang not in example_langs or len(langs_of[norm(t)]) > 1:
        continue
    key = dom + ":" + code                     # one country = one source
    if h("select:" + key) % 100 >= SELECT_PERCENT:
        continue
    # One text once per language: keep the occurrence of the source with the smallest hash.
    k = (lang, norm(t))
    cand = (h("dedup:" + key), key, dom, code, field, " ".join(t.split()))
    if k not in chosen or cand < chosen[k]:
        chosen[k] = cand

fshort = {"name": "name", "official_name": "official", "common_name": "common"}
splits = {"train": [], "eval": []}
for (lang, _), (_, key, dom, code, field, t) in sorted(chosen.items()):
    split = "eval" if h("split:" + key) % EVAL_MODULUS == 0 else "train"
    prefix = "tr" if split == "train" else "ev"
    ident = "%s-%s-country-%s-%s" % (prefix, lang, code, fshort[field])
    data = (t + "\n").encode("utf-8")
    assert len(data) < 300
    path = "%s/%s.txt" % (split, ident)
    with open(os.path.join(out, path), "wb") as f:
        f.write(data)
    splits[split].append({"id": ident, "path": path, "sha256": hashlib.sha256(data).hexdigest(), "expected": lang})

# The deliberately bad training item: not UTF-8, must be rejected as invalid_encoding.
bad = b"caf\xe9 au lait\n"
with open(os.path.join(out, "train/bad-encoding.bin"), "wb") as f:
    f.write(bad)

ids = set()
for split, items in splits.items():
    items.sort(key=lambda i: i["id"])
    for i in items:
        assert i["id"] not in ids
        ids.add(i["id"])
    if split == "train":
        items.append({"id": "tr-bad-encoding", "path": "train/bad-encoding.bin",
                      "sha256": hashlib.sha256(bad).hexdigest(), "expected_rejection": "invalid_encoding"})
    manifest = {"name": "adapt-example-" + split, "items": items}
    with open(os.path.join(out, split + ".json"), "w", encoding="utf-8") as f:
        f.write(json.dumps(manifest, indent=2, ensure_ascii=False) + "\n")

print("items per language (train / eval):")
for lang in example_langs:
    n_tr = sum(1 for i in splits["train"] if i.get("expected") == lang)
    n_ev = sum(1 for i in splits["eval"] if i.get("expected") == lang)
    print("  %s %4d %4d" % (lang, n_tr, n_ev))
print("  total %d %d (+1 bad training item)" % (len(splits["train"]) - 1, len(splits["eval"])))
PY
echo "wrote $out/train.json and $out/eval.json"
( cd "$out" && cat train.json eval.json | sha256sum | sed 's/ .*//; s/^/manifests sha256: /' )
