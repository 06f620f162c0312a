#!/usr/bin/env bash
# Rebuilds the bundled model data/models/langid/langid.pt from scratch: fetches the corpus
# (Debian packages, by name), builds the trainer, trains, evaluates and rewrites the model,
# its metrics and its model card. Training is deterministic: the same corpus gives the same
# model bytes. If Debian has since updated a package, the corpus hash differs from the one
# in the model card and so will the model; the card then records the new versions.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
corpus=${CORPUS_DIR:-$(mktemp -d)}
tools/langid/fetch-corpus.sh "$corpus"
# Debian's libtorch 1.13 (preset debian): the libtorch the bundled models were built with, so
# that the same corpus gives the same bytes (another libtorch writes another archive layout).
scripts/deps.sh --debian
cmake --preset debian >/dev/null
cmake --build --preset debian --target pilot-train-langid
out=data/models/langid
build/debian/pilot-train-langid --corpus "$corpus" --languages tools/langid/languages.txt \
  --out-model "$out/langid.pt" --out-metrics "$out/metrics.json" --out-card "$out/MODEL_CARD.md"
echo "model sha256: $(sha256sum "$out/langid.pt" | cut -d' ' -f1) (pin it as stage.model_sha256 in config/pilot.json)"
# The bundled embedding model is derived from the langid model's n-gram embedding bag.
cmake --build --preset debian --target pilot-derive-embedding
build/debian/pilot-derive-embedding --from "$out/langid.pt" --out data/models/langid-embed/langid-embed.pt
echo "(pin the embedding model's sha256 as stage.model_sha256 in config/embed.json)"
