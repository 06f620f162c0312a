#!/usr/bin/env python3
"""For every code point, what Hugging Face tokenizers' components make of it (one JSON row
per code point), to compare with pilot-tokenizer-probe's rows: tests/tokenizer/check-unicode.py."""
import json
import sys

from tokenizers import normalizers, pre_tokenizers


def main():
    bert = [normalizers.BertNormalizer(clean_text=a, handle_chinese_chars=b, strip_accents=c, lowercase=d)
            for a, b, c, d in [(True, False, False, False), (False, True, False, False),
                               (False, False, True, False), (False, False, False, True)]]
    strip = normalizers.StripAccents()
    forms = [normalizers.NFKC(), normalizers.NFD(), normalizers.NFC(), normalizers.NFKD()]
    bpt = pre_tokenizers.BertPreTokenizer()
    bl = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    out = sys.stdout
    for cp in range(0x110000):
        if 0xD800 <= cp <= 0xDFFF:
            continue
        c = chr(cp)
        row = [cp] + [n.normalize_str(c) for n in bert] + [strip.normalize_str(c)] + [f.normalize_str(c) for f in forms]
        row.append([p for p, _ in bpt.pre_tokenize_str("a" + c + "b")])
        row.append([p for p, _ in bl.pre_tokenize_str("a" + c + "1" + c + " " + c)])
        out.write(json.dumps(row, ensure_ascii=True) + "\n")


if __name__ == "__main__":
    main()
