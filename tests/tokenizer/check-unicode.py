#!/usr/bin/env python3
"""Compares, code point by code point, what pilot's tokenizer components and Hugging Face
tokenizers' make of every code point (BERT's normalizer in each of its four steps, the four
normalization forms, BERT's pre-tokenizer, the byte-level pre-tokenizer).

usage: check-unicode.py PROBE PYTHON
  PROBE   pilot-tokenizer-probe (build tree, tests/)
  PYTHON  a Python with tokenizers installed (the test venv)

Every difference must be at a code point ICU does not know (assigned after ICU 72's Unicode
15.0): exit 1 listing any other. Prints the counts and both sides' Unicode versions."""
import json
import os
import subprocess
import sys

NAMES = ["clean_text", "chinese_chars", "strip_accents", "lowercase", "StripAccents", "NFKC", "NFD", "NFC", "NFKD",
         "BertPreTokenizer", "ByteLevel"]


def main():
    probe, python = sys.argv[1], sys.argv[2]
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, RAYON_NUM_THREADS="1", HF_HUB_OFFLINE="1")
    ref = subprocess.Popen([python, os.path.join(here, "probe.py")], stdout=subprocess.PIPE, text=True, env=env)
    mine = subprocess.Popen([probe], stdout=subprocess.PIPE, text=True)
    unknown = set(int(x) for x in subprocess.run([probe, "--unassigned"], check=True, capture_output=True,
                                                 text=True).stdout.split())
    counts = {n: 0 for n in NAMES}
    unexplained = []
    rows = 0
    for a, b in zip(ref.stdout, mine.stdout):
        rows += 1
        if a == b:
            continue
        ra, rb = json.loads(a), json.loads(b)
        for i, n in enumerate(NAMES):
            if ra[i + 1] != rb[i + 1]:
                counts[n] += 1
                if ra[0] not in unknown:
                    unexplained.append((n, ra[0], ra[i + 1], rb[i + 1]))
    ref.wait()
    mine.wait()
    version = subprocess.run([python, "-c", "import tokenizers, unicodedata; print(tokenizers.__version__)"],
                             capture_output=True, text=True).stdout.strip()
    print(f"unicode: {rows} code points compared with tokenizers {version}; "
          f"{len(unknown)} are unassigned in ICU's tables")
    for n in NAMES:
        known = not any(u[0] == n for u in unexplained)
        print(f"  {n}: {counts[n]} differ" + (", all at code points ICU does not know" if counts[n] and known else ""))
    if rows != 0x110000 - 0x800 or ref.returncode or mine.returncode:
        print(f"unicode: error: {rows} rows (want {0x110000 - 0x800}), exit {ref.returncode}/{mine.returncode}")
        return 1
    for n, cp, want, got in unexplained[:20]:
        print(f"  U+{cp:04X} {n}: tokenizers {want!r}, pilot {got!r}")
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())
