#!/usr/bin/env python3
"""The pipeline a user would write in Python for a transformers classifier instead of pilot:
the peer that bench/bert-bench.py times pilot against.

For every item of a manifest (pilot's .json format), in batches of the manifest's order: read
the file, check its sha256, decode it, tokenize the batch with Hugging Face tokenizers'
`encode_batch` (truncated to --max-length, padded to the batch's longest), run the transformers
model (SDPA attention) under `torch.inference_mode`, softmax, and write one JSON line per item,
flushed and fsynced after every batch. Prints one JSON line of figures on stdout: the whole
time, and the seconds spent in encode_batch and in the model.

    bert-peer.py MODEL_DIR TOKENIZER MANIFEST OUT.jsonl [--batch-size 32] [--threads 2]
                 [--max-length 128]

Plain, idiomatic Python on purpose: it is the baseline, not a rival to tune.
"""
import argparse
import hashlib
import json
import os
import time

start = time.perf_counter()
import torch  # noqa: E402
from tokenizers import Tokenizer  # noqa: E402
from transformers import AutoModelForSequenceClassification  # noqa: E402


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("model_dir")
    ap.add_argument("tokenizer")
    ap.add_argument("manifest")
    ap.add_argument("out")
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--max-length", type=int, default=128)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    tok = Tokenizer.from_file(a.tokenizer)
    tok.enable_truncation(a.max_length)
    tok.enable_padding(pad_id=tok.token_to_id("[PAD]"), pad_token="[PAD]")
    model = AutoModelForSequenceClassification.from_pretrained(a.model_dir, attn_implementation="sdpa").eval()
    labels = [model.config.id2label[i] for i in range(model.config.num_labels)]
    base = os.path.dirname(os.path.abspath(a.manifest))
    with open(a.manifest, encoding="utf-8") as f:
        items = json.load(f)["items"]
    tokenize_s = model_s = 0.0
    tokens = 0
    with open(a.out, "w", encoding="utf-8") as out:
        for b in range(0, len(items), a.batch_size):
            batch = items[b : b + a.batch_size]
            texts = []
            for item in batch:
                with open(os.path.join(base, item["path"]), "rb") as f:
                    data = f.read()
                if hashlib.sha256(data).hexdigest() != item["sha256"]:
                    raise SystemExit(f"{item['id']}: sha256 mismatch")
                texts.append(data.decode("utf-8"))
            t0 = time.perf_counter()
            enc = tok.encode_batch(texts)
            ids = torch.tensor([e.ids for e in enc])
            mask = torch.tensor([e.attention_mask for e in enc])
            t1 = time.perf_counter()
            with torch.inference_mode():
                probs = model(input_ids=ids, attention_mask=mask).logits.softmax(-1)
            conf, best = probs.max(-1)
            t2 = time.perf_counter()
            tokenize_s += t1 - t0
            model_s += t2 - t1
            tokens += int(mask.sum())
            for item, c, k in zip(batch, conf.tolist(), best.tolist()):
                out.write(json.dumps({"id": item["id"], "category": labels[k], "confidence": c}) + "\n")
            out.flush()
            os.fsync(out.fileno())
    print(json.dumps({"items": len(items), "tokens": tokens, "seconds": time.perf_counter() - start,
                      "tokenize_seconds": tokenize_s, "model_seconds": model_s}))


if __name__ == "__main__":
    main()
