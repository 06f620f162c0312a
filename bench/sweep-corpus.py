#!/usr/bin/env python3
"""Writes a deterministic corpus for `pilot sweep`: N documents whose lengths spread from one
sentence to a few pages (so every length group fills its batches), and a sha256-pinned
manifest.jsonl beside them. Standard library only; the same N gives the same bytes.

usage: sweep-corpus.py N DIR
"""
import hashlib
import json
import os
import random
import sys

SENTENCES = [
    "Please check the invoice before you send it to the customer.",
    "Le comité a décidé de reporter la réunion à la semaine prochaine.",
    "Die Stadtverwaltung hat angekündigt, dass die Bauarbeiten im Frühjahr beginnen.",
    "El informe anual muestra que las ventas crecieron en todas las regiones.",
    "La biblioteca comunale resterà chiusa per lavori di ristrutturazione.",
    "O relatório técnico descreve os resultados dos testes realizados no laboratório.",
    "De gemeente heeft besloten om het park aan de rand van de stad opnieuw in te richten.",
    "このソフトウェアは、設定ファイルを読み込んでからデータを処理します。",
]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[-1])
    n, out = int(sys.argv[1]), sys.argv[2]
    rng = random.Random(20261130)
    os.makedirs(os.path.join(out, "docs"), exist_ok=True)
    lines = []
    for i in range(n):
        lang = rng.randrange(len(SENTENCES))
        # 1 to 64 sentences, log-uniform: as many short messages as long documents.
        count = int(2 ** rng.uniform(0, 6))
        text = " ".join(SENTENCES[lang] for _ in range(count)) + f" {i}\n"
        data = text.encode("utf-8")
        name = f"docs/s{i:05d}.txt"
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)
        lines.append(json.dumps({"id": f"s{i:05d}", "path": name,
                                 "sha256": hashlib.sha256(data).hexdigest()}, separators=(",", ":")))
    with open(os.path.join(out, "manifest.jsonl"), "w") as f:
        f.write("\n".join(lines) + "\n")
    print(json.dumps({"generated": n, "dir": out}))


if __name__ == "__main__":
    main()
