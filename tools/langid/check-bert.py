#!/usr/bin/env python3
"""Compares a fresh training of the bundled transformer (tools/langid/train-bert.py --out NEW)
with the shipped one (data/models/langid-bert), and says whether the rebuild reproduced it:

  identical         tokenizer.json, config.json and model.safetensors the same bytes, and
                    model.pt the same code, constants and tensors (torch writes a random
                    serialization id and source positions into every save): what a rebuild
                    with the shipped tokenizer gives with the same corpus, wheels and CPU kind;
  within tolerance  some bytes differ, but at least 99% of the tokenizer's pieces are the same
                    (tokenizers' WordPieceTrainer orders characters of equal count as a hash map
                    iterates them, so a retrained tokenizer differs in a few pieces and in its
                    ids), held-out accuracy is within 0.5 points overall and 2 points per
                    label on texts, within 1 point overall and 3 per label on single messages,
                    and every text of the bundled pilot gets the same category;
  different         anything else (exit 1), with what differs.
"""
import json
import sys
import zipfile
from pathlib import Path

import torch
from safetensors.torch import load_file
from tokenizers import Tokenizer

FILES = ("tokenizer.json", "config.json", "model.safetensors", "model.pt")


def same_archive(a: Path, b: Path) -> bool:
    """Two TorchScript archives hold the same code, constants and tensors: every member equal
    but the save's random serialization_id and the debug pickles of source positions."""
    def members(path):
        with zipfile.ZipFile(path) as z:
            return {n.split("/", 1)[-1]: z.read(n) for n in z.namelist()
                    if not n.endswith((".debug_pkl", "/.data/serialization_id"))}
    return members(a) == members(b)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--same-archive":
        sys.exit(0 if same_archive(Path(sys.argv[2]), Path(sys.argv[3])) else 1)
    if len(sys.argv) != 4:
        sys.exit("usage: check-bert.py SHIPPED_DIR NEW_DIR PILOT_DATA_DIR\n"
                 "       check-bert.py --same-archive A.pt B.pt")
    old, new, pilot_data = (Path(p) for p in sys.argv[1:])
    same = {f: (old / f).read_bytes() == (new / f).read_bytes() for f in FILES}
    for f in FILES:
        if not same[f] and f == "model.pt" and same_archive(old / f, new / f):
            # torch writes a random serialization id and the exporting script's source
            # positions into every save.
            print(f"{f}: the same code, constants and tensors")
            same[f] = True
        else:
            print(f"{f}: {'identical' if same[f] else 'differs'}")
    if all(same.values()):
        print("rebuild: identical")
        return
    problems = []
    toks = [Tokenizer.from_file(str(d / "tokenizer.json")) for d in (old, new)]
    if not same["tokenizer.json"]:
        va, vb = (set(t.get_vocab()) for t in toks)
        share = len(va & vb) / max(len(va), 1)
        print(f"tokenizer: {len(va & vb)} of {len(va)} pieces the same ({100 * share:.2f}%)")
        if share < 0.99:
            problems.append(f"only {100 * share:.2f}% of the tokenizer's pieces are the same (tolerance 99%)")
    a, b = load_file(str(old / "model.safetensors")), load_file(str(new / "model.safetensors"))
    if sorted(a) != sorted(b) or any(a[k].shape != b[k].shape for k in a):
        print("weights: the checkpoints hold different tensors")
    else:
        worst = max((a[k].float() - b[k].float()).abs().max().item() for k in a)
        print(f"weights: largest |shipped - rebuilt| {worst:.3g}")
    ma, mb = (json.loads((d / "metrics.json").read_text()) for d in (old, new))
    if ma["corpus_sha256"] != mb["corpus_sha256"]:
        problems.append(f"corpus sha256 {mb['corpus_sha256']}, the card has {ma['corpus_sha256']}")
    for what, overall, per_label, tol, tol_label in (
        ("text", "text_100_accuracy", "heldout_text_100_accuracy", 0.5, 2),
        ("message", "message_accuracy", "heldout_message_accuracy", 1, 3),
    ):
        da = 100 * (mb["heldout"][overall] - ma["heldout"][overall])
        print(f"held-out {what} accuracy: shipped {100 * ma['heldout'][overall]:.2f}%,"
              f" rebuilt {100 * mb['heldout'][overall]:.2f}%")
        if abs(da) > tol:
            problems.append(f"held-out {what} accuracy moved {da:+.2f} points (tolerance {tol})")
        for lang, r in ma["labels"].items():
            if lang not in mb["labels"]:
                problems.append(f"{lang}: the rebuild has no such label")
                continue
            d = 100 * (mb["labels"][lang][per_label] - r[per_label])
            if abs(d) > tol_label:
                problems.append(f"{lang}: held-out {what} accuracy moved {d:+.2f} points (tolerance {tol_label})")
    models = [torch.jit.load(str(d / "model.pt")).eval() for d in (old, new)]
    for t in toks:
        t.enable_truncation(128)
    for f in sorted(pilot_data.glob("doc-*.txt")):
        text = f.read_text(encoding="utf-8")
        if not text:
            continue
        got = []
        for t, m in zip(toks, models):
            ids = torch.tensor([t.encode(text).ids])
            with torch.inference_mode():
                got.append(m(ids, torch.ones_like(ids)).argmax(1).item())
        if got[0] != got[1]:
            problems.append(f"{f.name}: category {got[1]} rebuilt, {got[0]} shipped")
    for p in problems:
        print("different:", p)
    if problems:
        sys.exit(1)
    print("rebuild: within tolerance")


if __name__ == "__main__":
    main()
