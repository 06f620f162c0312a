#!/usr/bin/env python3
"""Tokenization throughput on one core: pilot's tokenizers against the reference libraries,
per family. Prints figures; asserts nothing but that both sides give the same ids.

    build/venv/bin/python bench/tokenize-bench.py PILOT_BENCH WORKDIR [--texts N] [--repeat R]

PILOT_BENCH is `pilot-bench` of the build measured (bench/run-tokenize-bench.sh builds the
release one). Each family's tokenizer is built here as the parity test builds it
(tests/tokenizer/parity.py: trained on Debian's licence and copyright text). The texts are N
(default 10,000) passages of that text, each 1-8 consecutive lines (the corpus' own mix of
prose, names and symbols), so that they are what a pilot would tokenize, not the parity test's
edge cases. Both sides encode every text with its special tokens, on one thread, R times
(default 3), and the fastest pass counts:
  - the reference: Hugging Face tokenizers' `encode_batch` with RAYON_NUM_THREADS=1, or
    sentencepiece's `encode` of the list with num_threads=1 (XLM-R: with fairseq's id mapping
    in Python, as transformers' slow tokenizer maps them);
  - pilot: `pilot-bench tokenize`, EncodeText over the texts in memory.
The ratio is pilot's texts/s over the reference's (>= 1.0: pilot at least as fast).
"""
import argparse
import json
import os
import pathlib
import random
import subprocess
import sys
import time

os.environ["RAYON_NUM_THREADS"] = "1"  # before tokenizers is imported
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "python")
HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests" / "tokenizer"))
import parity  # noqa: E402  (the families' training, shared with the parity test)


def passages(lines, n, rng):
    out = []
    while len(out) < n:
        start = rng.randrange(len(lines))
        out.append(" ".join(lines[start:start + rng.randint(1, 8)]))
    return out


def best_of(repeat, fn):
    best, result = None, None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        took = time.perf_counter() - t0
        best = took if best is None or took < best else best
    return best, result


def reference(family, path, texts, repeat):
    """(seconds of the fastest pass, ids per text) of the reference library."""
    if family in ("spm", "xlmr"):
        import sentencepiece as spm
        proc = spm.SentencePieceProcessor(model_file=str(path))
        if family == "spm":
            eos = proc.eos_id()
            return best_of(repeat, lambda: [ids + [eos] for ids in proc.encode(texts, num_threads=1)])
        unk = proc.unk_id()
        return best_of(repeat, lambda: [[0] + [3 if i == unk else i + 1 for i in ids] + [2]
                                        for ids in proc.encode(texts, num_threads=1)])
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(str(path))
    seconds, encodings = best_of(repeat, lambda: tok.encode_batch(texts))
    return seconds, [e.ids for e in encodings]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("bench", help="pilot-bench of the build measured")
    ap.add_argument("work")
    ap.add_argument("--texts", type=int, default=10_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--family", action="append", choices=sorted(parity.FAMILIES))
    args = ap.parse_args()
    work = pathlib.Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    lines = parity.corpus_lines()
    texts = passages(lines, args.texts, random.Random(29))
    texts_file = work / "bench-texts.jsonl"
    texts_file.write_text("".join(json.dumps(t) + "\n" for t in texts), encoding="utf-8")
    size = sum(len(t.encode("utf-8")) for t in texts)
    print(f"tokenize-bench: {len(texts)} texts, {size / 1e6:.2f} MB, mean {size / len(texts):.0f} bytes; "
          f"one thread each side, the fastest of {args.repeat} passes")
    print(f"{'family':8} {'tokens':>9} {'reference s':>12} {'pilot s':>9} {'ref texts/s':>12} "
          f"{'pilot texts/s':>14} {'pilot/ref':>9}")
    rows = []
    for family in args.family or ["bert", "roberta", "spm", "unigram", "xlmr"]:
        if family == "xlmr":
            path = work / "spm.model"
            if not path.exists():
                parity.train_spm(lines, work)
        else:
            path, _ = parity.FAMILIES[family](lines, work)
        ref_s, want = reference(family, path, texts, args.repeat)
        cmd = [args.bench, "tokenize", str(path), str(texts_file), "--repeat", str(args.repeat)]
        if family == "xlmr":
            cmd.append("--fairseq")
        got = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
        tokens = sum(len(w) for w in want)
        id_sum = sum(sum(w) for w in want)
        if got["tokens"] != tokens or got["id_sum"] != id_sum:
            sys.exit(f"tokenize-bench: {family}: pilot's ids differ from the reference's "
                     f"({got['tokens']} tokens, sum {got['id_sum']}; reference {tokens}, sum {id_sum})")
        ratio = ref_s / got["seconds"]
        rows.append({"family": family, "tokens": tokens, "reference_s": ref_s, "pilot_s": got["seconds"],
                     "ratio": ratio})
        print(f"{family:8} {tokens:9d} {ref_s:12.3f} {got['seconds']:9.3f} {len(texts) / ref_s:12.0f} "
              f"{len(texts) / got['seconds']:14.0f} {ratio:8.2f}x")
    (work / "tokenize-bench.json").write_text(json.dumps({"texts": len(texts), "bytes": size, "rows": rows}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
