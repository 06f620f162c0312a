#!/usr/bin/env python3
"""The harness a user would write in Python with torch 2.x instead of pilot: the peer that
bench/run-bench.sh times pilot against.

For every item of a manifest (pilot's .json or .jsonl format): read the file, check its
sha256, featurise it as the model's hashed_char_ngrams contract says, run the TorchScript
model in batches, and write one JSON line per item, flushed and fsynced after every batch.

    peer.py MODEL MANIFEST OUT.jsonl [--batch-size 64] [--threads 1]

Plain, idiomatic Python on purpose: it is the baseline, not a rival to tune.
"""
import argparse
import hashlib
import json
import os
import sys

import torch


def read_manifest(path):
    base = os.path.dirname(os.path.abspath(path))
    with open(path, encoding="utf-8") as f:
        if path.endswith(".jsonl"):
            items = [json.loads(line) for line in f if line.strip()]
        else:
            items = json.load(f)["items"]
    for item in items:
        item["file"] = os.path.join(base, item["path"])
    return items


def is_letter(c):
    o = ord(c)
    if o < 0x80:
        return ("a" <= c <= "z") or ("A" <= c <= "Z")
    if o in (0xD7, 0xF7):
        return False
    return (0xC0 <= o <= 0x24F or 0x370 <= o <= 0x52F or 0x3040 <= o <= 0x30FF
            or 0x4E00 <= o <= 0x9FFF or 0x1E00 <= o <= 0x1FFF or 0x0590 <= o <= 0x08FF
            or 0x0900 <= o <= 0x0DFF or 0xAC00 <= o <= 0xD7AF)


def lower(c):
    o = ord(c)
    if "A" <= c <= "Z" or (0xC0 <= o <= 0xDE and o != 0xD7) or 0x410 <= o <= 0x42F:
        return chr(o + 32)
    if 0x400 <= o <= 0x40F:
        return chr(o + 80)
    if 0x391 <= o <= 0x3A9 and o != 0x3A2:
        return chr(o + 32)
    return c


def normalise(text, max_chars):
    out = [" "]
    letters = 0
    for c in text:
        if letters >= max_chars:
            break
        if is_letter(c):
            out.append(lower(c))
            letters += 1
        elif out[-1] != " ":
            out.append(" ")
    if out[-1] != " ":
        out.append(" ")
    return out


def ngram_ids(text, ngram_min, ngram_max, buckets, max_chars):
    chars = normalise(text, max_chars)
    ids = []
    for n in range(ngram_min, ngram_max + 1):
        if len(chars) < n:
            break
        for start in range(len(chars) - n + 1):
            if n == 1 and chars[start] == " ":
                continue
            h = 2166136261 ^ n
            for b in "".join(chars[start:start + n]).encode("utf-8"):
                h = ((h ^ b) * 16777619) & 0xFFFFFFFF
            ids.append(h % buckets)
    return ids or [0]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model")
    ap.add_argument("manifest")
    ap.add_argument("out")
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    model = torch.jit.load(args.model, map_location="cpu").eval()
    labels = list(model.labels)
    contract = (model.ngram_min, model.ngram_max, model.buckets, model.max_chars)
    logits = getattr(model, "output", "probabilities") == "logits"

    items = read_manifest(args.manifest)
    accepted = rejected = 0
    with open(args.out, "w", encoding="utf-8") as out, torch.inference_mode():
        for first in range(0, len(items), args.batch_size):
            batch = items[first:first + args.batch_size]
            records, ready, features = [], [], []
            for item in batch:
                with open(item["file"], "rb") as f:
                    data = f.read()
                if hashlib.sha256(data).hexdigest() != item["sha256"]:
                    records.append({"id": item["id"], "status": "rejected", "reason": "checksum_mismatch"})
                    continue
                try:
                    text = data.decode("utf-8")
                except UnicodeDecodeError:
                    records.append({"id": item["id"], "status": "rejected", "reason": "invalid_utf8"})
                    continue
                records.append({"id": item["id"], "status": "accepted"})
                ready.append(records[-1])
                features.append(ngram_ids(text, *contract))
            if features:
                offsets = torch.tensor([0] + [len(f) for f in features[:-1]]).cumsum(0)
                ids = torch.tensor([i for f in features for i in f], dtype=torch.int64)
                scores = model(ids, offsets)
                if logits:
                    scores = torch.softmax(scores, dim=1)
                best, index = scores.max(dim=1)
                for record, p, k in zip(ready, best.tolist(), index.tolist()):
                    record["category"] = labels[k]
                    record["confidence"] = p
            for record in records:
                out.write(json.dumps(record) + "\n")
                accepted += record["status"] == "accepted"
                rejected += record["status"] == "rejected"
            out.flush()
            os.fsync(out.fileno())
    print(json.dumps({"items": len(items), "accepted": accepted, "rejected": rejected}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
