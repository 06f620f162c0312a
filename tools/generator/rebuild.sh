#!/usr/bin/env bash
# Rebuilds the bundled generator, data/models/reverse-gpt2, from scratch and compares it with the
# shipped files: installs the pinned wheels (torch, transformers, tokenizers) into build/venv,
# trains the model (tools/generator/train.py: seeded, one thread; about 2 minutes here), exports
# the TorchScript step pilot runs (scripts/export-generator.py) and compares the weights and the
# greedy completions of the bundled prompts with the shipped model's.
#
#   tools/generator/rebuild.sh            rebuild, compare
#   tools/generator/rebuild.sh --write    then replace the shipped files (print the new sha256s:
#                                         pin them in config/generate.json)
#
# Same wheels, same kind of CPU: the same bytes of model.safetensors. Elsewhere the weights may
# differ in their last bits (float sums in another order); the check then says so and compares
# the completions, which must match.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
write=0
case "${1:-}" in
  --write) write=1 ;;
  "") ;;
  *) echo "usage: tools/generator/rebuild.sh [--write]" >&2; exit 2 ;;
esac
scripts/torch-deps.sh >/dev/null
py=build/venv/bin/python
new=$(mktemp -d)
trap 'rm -rf "$new"' EXIT
export HF_HUB_OFFLINE=1 PYTHONWARNINGS=ignore
"$py" tools/generator/train.py "$new"
"$py" scripts/export-generator.py "$new" --torchscript "$new/model.pt"
shipped=data/models/reverse-gpt2
same=1
for f in tokenizer.json config.json generation_config.json model.safetensors; do
  if [ -f "$shipped/$f" ] && cmp -s "$new/$f" "$shipped/$f"; then
    echo "rebuild: $f identical"
  else
    echo "rebuild: $f differs"; same=0
  fi
done
if [ -f "$shipped/model.safetensors" ]; then
  "$py" - "$new" "$shipped" data/generate <<'PY'
import json, os, sys, torch, transformers
from tokenizers import Tokenizer
new, old, prompts = sys.argv[1:4]
tok = Tokenizer.from_file(os.path.join(old, "tokenizer.json"))
models = [transformers.AutoModelForCausalLM.from_pretrained(d).eval() for d in (new, old)]
manifest = json.load(open(os.path.join(prompts, "manifest.json")))
differ = 0
for item in manifest["items"]:
    if "expected" not in item: continue
    ids = tok.encode(open(os.path.join(prompts, item["path"]), encoding="utf-8").read()).ids
    outs = [m.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                       do_sample=False, max_new_tokens=16, pad_token_id=256)[0, len(ids):].tolist() for m in models]
    differ += outs[0] != outs[1]
print(f"rebuild: the bundled prompts' completions: {differ} differ")
sys.exit(1 if differ else 0)
PY
fi
if [ $write = 1 ]; then
  for f in tokenizer.json config.json generation_config.json model.safetensors model.pt metrics.json; do
    cp "$new/$f" "$shipped/$f"
  done
  sha256sum "$shipped/model.pt" "$shipped/tokenizer.json"
  echo "rebuild: written; pin the sha256s above in config/generate.json and MODEL_CARD.md"
fi
[ $same = 1 ] || echo "rebuild: the files differ from the shipped ones (see above)"
