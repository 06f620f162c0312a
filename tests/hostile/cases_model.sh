# Hostile model files: the parameters' stage.model points at a crafted file and carry no
# stage.model_sha256 (so that the pin does not refuse it first). Whatever the file is, pilot
# refuses it before any run folder exists (exit 2), quickly, naming the model file.
# (TorchScript models with bad contract attributes are built by the C++ tests.)
# Sourced by catalogue.sh; each hc_model__NAME function is one case.

MF=proj/config/pm.json
MD=proj/data/models
# pm FILE-NAME: parameters whose model is proj/data/models/FILE-NAME, unpinned.
pm() {
  sed -e "s#\"model\": \"../data/models/langid/langid.pt\"#\"model\": \"../data/models/$1\"#" \
    -e '/"model_sha256"/d' "$P" >"$MF"
  grep -q "models/$1\"" "$MF" || bad "pm: could not point the parameters at $1"
}
runmodel() { hrun run --params "$MF" --runs-dir runs; }
# zipfile NAME MEMBER=TEXT...: a zip archive written with Python's zipfile.
zipfile() {
  python3 - "$@" <<'EOF'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w") as z:
    for spec in sys.argv[2:]:
        name, _, text = spec.partition("=")
        z.writestr(name, text)
EOF
}

hc_model__random_bytes() {
  head -c 65536 /dev/urandom >"$MD/bad.pt"
  pm bad.pt
  refuse 'bad\.pt'
  quick
  runmodel
}
hc_model__zip_with_garbage() {
  zipfile "$MD/bad.pt" 'notes.txt=just some text' 'x/y.bin=garbage garbage'
  pm bad.pt
  refuse 'bad\.pt'
  quick
  runmodel
}
hc_model__zip_torchscript_layout_garbage() {
  # The layout of a TorchScript archive, with garbage pickles and code.
  zipfile "$MD/bad.pt" 'bad/data.pkl=not a pickle' 'bad/constants.pkl=\x80\x02garbage' 'bad/version=3' \
    'bad/code/__torch__.py=def forward(self): return ((((' 'bad/data/0=0123'
  pm bad.pt
  refuse 'bad\.pt'
  quick
  runmodel
}
hc_model__zip_version_huge() {
  zipfile "$MD/bad.pt" 'bad/data.pkl=x' 'bad/version=99999999999999999999'
  pm bad.pt
  refuse 'bad\.pt'
  quick
  runmodel
}
hc_model__truncated_real_model() {
  head -c 1000000 "$MD/langid/langid.pt" >"$MD/bad.pt"
  pm bad.pt
  refuse 'bad\.pt'
  quick
  runmodel
}
hc_model__real_model_tail_damaged() {
  # A whole archive whose last 64 KiB (the zip's central directory) is overwritten.
  cp "$MD/langid/langid.pt" "$MD/bad.pt"
  local size
  size=$(stat -c %s "$MD/bad.pt")
  head -c 65536 /dev/urandom | dd of="$MD/bad.pt" bs=1 seek=$((size - 65536)) conv=notrunc status=none
  pm bad.pt
  refuse 'bad\.pt'
  quick
  runmodel
}
hc_model__empty_file() {
  : >"$MD/bad.pt"
  pm bad.pt
  refuse 'bad\.pt'
  quick
  runmodel
}
hc_model__fifo() {
  mkfifo "$MD/bad.pt"
  pm bad.pt
  refuse 'bad\.pt'
  quick
  runmodel
}
hc_model__directory() {
  mkdir "$MD/bad.pt"
  pm bad.pt
  refuse 'bad\.pt'
  quick
  runmodel
}
hc_model__dev_zero() {
  ln -s /dev/zero "$MD/bad.pt"
  pm bad.pt
  refuse 'bad\.pt'
  quick
  bounded
  runmodel
}
hc_model__dev_urandom() {
  ln -s /dev/urandom "$MD/bad.pt"
  pm bad.pt
  refuse 'bad\.pt'
  quick
  bounded
  runmodel
}
hc_model__missing() {
  pm nope.pt
  refuse 'nope\.pt'
  runmodel
}
hc_model__text_file() {
  printf 'import torch\nprint("not a model")\n' >"$MD/bad.pt"
  pm bad.pt
  refuse 'bad\.pt'
  quick
  runmodel
}
hc_model__pin_mismatch() {
  # With the pin kept, a different file is refused by its sha256, naming it.
  head -c 4096 /dev/urandom >"$MD/bad.pt"
  sed 's#langid/langid.pt#bad.pt#' "$P" >"$MF"
  refuse 'bad\.pt' 'sha256'
  runmodel
}
hc_model__doctor_random_bytes() {
  # doctor loads the model too: a broken one is a failed check, not a crash.
  head -c 65536 /dev/urandom >"$MD/bad.pt"
  pm bad.pt
  want_rc 2 3
  quick
  hrun doctor --params "$MF" --device cpu --runs-dir runs
  # doctor's report (stdout) or its error (stderr) names the model file.
  grep -q 'bad\.pt' "$OUT" "$ERR" || bad "neither stdout nor stderr names bad.pt"
}

# --- hostile tokenizer files (stage.tokenizer) ------------------------------------------
# ptok FILE-NAME [FORMAT]: parameters whose stage.tokenizer is proj/data/models/FILE-NAME,
# pinned to its bytes as they are (so that the pin does not refuse it first). The tokenizer is
# read and parsed before the model is loaded: each file is refused, naming it, exit 2.
ptok() {
  local sha
  # A FIFO or a folder has no bytes to pin: any pin, since pilot refuses it before hashing.
  if [ -f "$MD/$1" ]; then sha=$(sha256sum "$MD/$1" | cut -c1-64); else sha=$(printf '0%.0s' {1..64}); fi
  python3 - "$P" "$MF" "../data/models/$1" "$sha" "${2:-tokenizer.json}" <<'PY'
import json, sys
p = json.load(open(sys.argv[1]))
p["stage"]["tokenizer"] = {"file": sys.argv[3], "sha256": sys.argv[4], "format": sys.argv[5], "max_length": 16}
json.dump(p, open(sys.argv[2], "w"))
PY
}
hc_model__tokenizer_random_bytes() {
  head -c 65536 /dev/urandom >"$MD/tok.json"
  ptok tok.json
  refuse 'tok\.json'
  quick
  runmodel
}
hc_model__tokenizer_nested_deep() {
  python3 -c 'print("{\"model\": " + "[" * 200000 + "]" * 200000 + "}")' >"$MD/tok.json"
  ptok tok.json
  refuse 'tok\.json'
  quick
  bounded
  runmodel
}
hc_model__tokenizer_secret_type_name() {
  printf '{"normalizer": {"type": "sk-proj-%s0123456789abcdefABCDEF"}, "model": {"type": "BPE", "vocab": {}, "merges": []}}' \
    "$MARKER" >"$MD/tok.json"
  ptok tok.json
  refuse 'tok\.json' "normalizer\.type"
  quick
  runmodel
}
hc_model__tokenizer_id_huge() {
  printf '{"model": {"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "vocab": {"[UNK]": 18446744073709551615}}}' >"$MD/tok.json"
  ptok tok.json
  refuse 'tok\.json' 'must be a token id'
  quick
  runmodel
}
hc_model__tokenizer_merge_outside_vocab() {
  printf '{"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [["a", "zz"]]}}' >"$MD/tok.json"
  ptok tok.json
  refuse 'tok\.json' 'merge 0 names a token'
  quick
  runmodel
}
hc_model__tokenizer_many_merges() {
  # 300,000 merges of tokens not in the vocabulary: refused at the first, without building the rest.
  python3 -c 'import json; print(json.dumps({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": [["a", "b%d" % i] for i in range(300000)]}}))' >"$MD/tok.json"
  ptok tok.json
  refuse 'tok\.json' 'merge 0'
  quick
  bounded
  runmodel
}
hc_model__tokenizer_unigram_pieces_over_cap() {
  # 5 MiB of distinct Unigram pieces (the cap is 4 MiB, the bound on the trie): refused by
  # key, in bounded memory, before a trie is built.
  python3 -c 'import json; print(json.dumps({"model": {"type": "Unigram", "unk_id": 0, "vocab": [["%08d" % i + "x" * 1000, -1.0] for i in range(5200)]}}))' >"$MD/tok.json"
  ptok tok.json
  refuse 'tok\.json' 'model\.vocab'
  quick
  bounded
  runmodel
}
hc_model__tokenizer_metaspace_two_chars() {
  printf '{"pre_tokenizer": {"type": "Metaspace", "replacement": "ab"}, "model": {"type": "Unigram", "unk_id": 0, "vocab": [["<unk>", 0]]}}' >"$MD/tok.json"
  ptok tok.json
  refuse 'tok\.json' 'pre_tokenizer\.replacement'
  quick
  runmodel
}
hc_model__tokenizer_fifo() {
  mkfifo "$MD/tok.json"
  ptok tok.json
  refuse 'tok\.json'
  quick
  runmodel
}
hc_model__tokenizer_folder() {
  mkdir "$MD/tok.json"
  ptok tok.json
  refuse 'tok\.json'
  quick
  runmodel
}
hc_model__sentencepiece_random_bytes() {
  head -c 65536 /dev/urandom >"$MD/tok.model"
  ptok tok.model sentencepiece
  # Exit 3 in a build without SentencePiece (Debian's libtorch: presets debian, asan).
  want_rc 2 3
  want_err 'tok\.model'
  no_runs
  quick
  runmodel
}
hc_model__sentencepiece_truncated() {
  head -c 4000 "$SRC/tests/tokenizer/data/tiny.model" >"$MD/tok.model"
  ptok tok.model sentencepiece
  # Exit 3 in a build without SentencePiece (Debian's libtorch: presets debian, asan).
  want_rc 2 3
  want_err 'tok\.model'
  no_runs
  quick
  runmodel
}
