#!/usr/bin/env bash
# Rebuilds the bundled transformer, data/models/langid-bert, from scratch and checks it against
# the shipped files: fetches the corpus (Debian packages, by name), installs the pinned wheels
# (torch, transformers, tokenizers) into build/venv, trains the tokenizer and the model
# (tools/langid/train-bert.py: seeded, one thread, deterministic algorithms; about 5 minutes),
# and compares (tools/langid/check-bert.py).
#
# By default the model is trained with the shipped tokenizer.json, and the rebuild is identical
# bytes with the same corpus and wheels on the same kind of CPU. tokenizers' WordPieceTrainer is
# not reproducible run to run (it orders characters of equal count as a hash map iterates them),
# so --retrain-tokenizer trains a new one too, and the check is then the tolerance of
# docs/models.md ("The bundled transformer").
#
#   tools/langid/rebuild-bert.sh [--retrain-tokenizer]            rebuild, compare
#   tools/langid/rebuild-bert.sh [--retrain-tokenizer] --write    then replace the shipped files
#                                   (refused when the check says "different", unless --force;
#                                   a model.pt with the same code and tensors is kept)
#
# CORPUS_DIR=DIR fetches the corpus into DIR and keeps it, or reuses the one already there.
# After --write, pin the new sha256s in config/bert.json (the script prints them).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
write=0
force=0
tokenizer=(--tokenizer data/models/langid-bert/tokenizer.json)
for arg in "$@"; do
  case "$arg" in
    --write) write=1 ;;
    --retrain-tokenizer) tokenizer=() ;;
    --force) force=1 ;;
    *) echo "usage: tools/langid/rebuild-bert.sh [--retrain-tokenizer] [--write [--force]]" >&2; exit 2 ;;
  esac
done
[ ${#tokenizer[@]} = 0 ] || [ -f "${tokenizer[1]}" ] || tokenizer=()
new=$(mktemp -d)
if [ -n "${CORPUS_DIR:-}" ]; then
  corpus=$CORPUS_DIR  # kept: a folder fetch-corpus.sh wrote, or one it fills now
  trap 'rm -rf "$new"' EXIT
else
  corpus=$(mktemp -d)
  trap 'rm -rf "$new" "$corpus"' EXIT
fi
[ -f "$corpus/SHA256SUMS" ] || tools/langid/fetch-corpus.sh "$corpus"
scripts/torch-deps.sh >/dev/null
py=build/venv/bin/python
"$py" tools/langid/train-bert.py --corpus "$corpus" --languages tools/langid/languages.txt --out "$new" "${tokenizer[@]}"
out=data/models/langid-bert
status=0
"$py" tools/langid/check-bert.py "$out" "$new" data/pilot || status=$?
if [ "$write" = 1 ]; then
  if [ "$status" != 0 ] && [ "$force" != 1 ] && [ -f "$out/model.pt" ]; then
    echo "rebuild-bert: the rebuild differs from the shipped model beyond the tolerance; nothing written" \
      "(--force writes it anyway)" >&2
    exit 1
  fi
  mkdir -p "$out"
  for f in tokenizer.json config.json model.safetensors model.pt metrics.json MODEL_CARD.md; do
    # A model.pt with the same code and tensors is kept, so that its sha256 pin holds (every
    # save has a new random serialization id).
    if [ "$f" = model.pt ] && [ -f "$out/$f" ] && "$py" tools/langid/check-bert.py --same-archive "$out/$f" "$new/$f"; then
      continue
    fi
    install -m 644 "$new/$f" "$out/$f"
  done
  echo "wrote $out: pin stage.model_sha256 $(sha256sum "$out/model.pt" | cut -c1-64) and" \
    "stage.tokenizer.sha256 $(sha256sum "$out/tokenizer.json" | cut -c1-64) in config/bert.json"
  exit 0
fi
exit "$status"
