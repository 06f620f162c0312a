#!/usr/bin/env python3
"""Token-id parity between pilot's tokenizers and the reference libraries.

Builds one tokenizer per family here, from Debian's own text (the licences and copyright files
under /usr/share), since no model hub is reachable:
  bert       WordPiece trained by Hugging Face tokenizers, BERT's normalizer, pre-tokenizer and
             template ([CLS] $A [SEP]);
  roberta    byte-level BPE trained by tokenizers, RoBERTa's post-processor and added tokens
             (<mask> with lstrip);
  spm        a SentencePiece unigram model trained by sentencepiece (the .model file);
  unigram    a Unigram model trained by tokenizers, with NFKC and Metaspace (prepend always,
             split) and the template <s> $A </s>: the tokenizer.json form of the family.
  xlmr       the spm model read with XLM-R's (fairseq's) ids; transformers' fast XLM-R
             tokenizer's agreement with them is printed.
Then encodes at least 10,000 texts (corpus lines with accents, CJK, emoji, code points added
after Unicode 9, odd white space, control characters, special-token literals, runs like
'=====', random code points, very long inputs) with the reference (tokenizers with
RAYON_NUM_THREADS=1; sentencepiece) and with pilot (pilot-tokenizer-probe --encode), and
counts the texts whose ids differ. Exit 1 when any does.

usage: parity.py PROBE WORKDIR [--texts N] [--family F ...]
"""
import argparse
import json
import os
import pathlib
import random
import subprocess
import sys
import time

os.environ.setdefault("RAYON_NUM_THREADS", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")


def corpus_lines(limit_bytes=3_000_000):
    files = sorted(pathlib.Path("/usr/share/common-licenses").glob("*"))
    files += sorted(pathlib.Path("/usr/share/doc").glob("*/copyright"))
    lines, size = [], 0
    for f in files:
        if not f.is_file():
            continue
        try:
            text = f.read_bytes().decode("utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for line in text.splitlines():
            if line.strip():
                lines.append(line)
                size += len(line)
        if size > limit_bytes:
            break
    return lines


POOLS = {
    "accents": ["café", "naïve", "Ångström", "São Paulo", "Ærøskøbing", "façade", "résumé", "ŻÓŁĆ", "İstanbul",
                "ΣΊΣΥΦΟΣ", "Straße", "ǅemal", "ﬁnance", "e\u0301", "a\u0308\u0323", "\u1e9b\u0323", "Ⅻ", "㎒",
                "ﬀ", "Å", "ǰ", "ΐ"],
    "cjk": ["日本語のテキスト", "中文字符测试", "한국어 문장", "𠀀𠀁𪜀", "ｶﾀｶﾅ", "〇〡", "㐀㐁", "漢字かな交じり"],
    "emoji": ["🙂", "👍🏽", "👨\u200d👩\u200d👧", "🇫🇷", "🤣", "🥰", "🫠", "🫨", "❤️", "#️⃣"],
    "space": ["\u00a0", "\u2003", "\u3000", "\t", "\r\n", "\u0085", "\u2028", "\u200b", "\ufeff", "\u180e",
              "   ", " \t ", "\n\n", "\u202f", "\u1680"],
    "control": ["\x00", "\x07", "\x1b", "\ufffd", "\u200d", "\u00ad", "\x7f", "\ue000", "\U000f0000"],
    "punct": ["«»", "—", "…", "¿¡", "'s", "'re", "'ve", "'ll", "'d", "'m", "'t", "=====", "===========",
              "----", "''''", "\u2e42", "\u2e43", "\u166d", "\U000111c9", "\u1734", "\u1885", "\u0f0c"],
    "special": ["[CLS]", "[SEP]", "[MASK]", "[UNK]", "<s>", "</s>", "<mask>", " <mask> ", "<unk>", "<pad>"],
    "numbers": ["١٢٣", "½", "²", "٣.١٤", "१२३", "Ⅳ", "12,345.67", "0x1F"],
}


def make_texts(n, lines, younger, assigned, rng):
    texts = ["", " ", "\t\n", "a", "=" * 11, "[CLS]", "<mask>", " " * 40]
    pools = list(POOLS.values())
    while len(texts) < n * 6 // 10:
        words = rng.choice(lines).split(" ")
        for _ in range(rng.randint(1, 4)):
            pool = rng.choice(pools)
            words.insert(rng.randint(0, len(words)), rng.choice(pool))
        if rng.random() < 0.3:
            words.insert(rng.randint(0, len(words)), "".join(chr(rng.choice(younger)) for _ in range(rng.randint(1, 3))))
        sep = rng.choice([" ", " ", " ", "", "\u00a0"])
        texts.append(sep.join(words))
    while len(texts) < n * 8 // 10:  # code points added after Unicode 9, among ASCII words
        parts = []
        for _ in range(rng.randint(1, 12)):
            parts.append(chr(rng.choice(younger)) if rng.random() < 0.5 else rng.choice(["the", "Word", "x", "42", " ", "."]))
        texts.append("".join(parts))
    while len(texts) < n - 200:  # random code points, all that ICU knows
        texts.append("".join(chr(rng.choice(assigned)) for _ in range(rng.randint(1, 30))))
    while len(texts) < n:  # very long inputs
        kind = rng.random()
        if kind < 0.3:
            texts.append(rng.choice("=-a日🙂") * rng.randint(2000, 30000))
        else:
            texts.append(" ".join(rng.choice(lines) for _ in range(rng.randint(50, 600))))
    return texts


def train_bert(lines, work):
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    trainer = trainers.WordPieceTrainer(vocab_size=8000, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"],
                                        show_progress=False)
    tok.train_from_iterator(lines, trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", tok.token_to_id("[CLS]")), ("[SEP]", tok.token_to_id("[SEP]"))])
    path = work / "bert-tokenizer.json"
    tok.save(str(path))
    return path, lambda texts: [e.ids for e in tok.encode_batch(texts)]


def train_roberta(lines, work):
    from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers, processors, trainers
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=8000, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=["<s>", "<pad>", "</s>", "<unk>",
                                                  AddedToken("<mask>", lstrip=True, special=True)],
                                  show_progress=False)
    tok.train_from_iterator(lines, trainer)
    tok.post_processor = processors.RobertaProcessing(("</s>", tok.token_to_id("</s>")),
                                                      ("<s>", tok.token_to_id("<s>")))
    path = work / "roberta-tokenizer.json"
    tok.save(str(path))
    return path, lambda texts: [e.ids for e in tok.encode_batch(texts)]


def train_spm(lines, work):
    import sentencepiece as spm
    text = work / "spm-corpus.txt"
    text.write_text("\n".join(lines), encoding="utf-8")
    spm.SentencePieceTrainer.train(input=str(text), model_prefix=str(work / "spm"), vocab_size=8000,
                                   model_type="unigram", num_threads=1, minloglevel=2,
                                   # a machine with fewer packages has less Debian text
                                   hard_vocab_limit=False)
    proc = spm.SentencePieceProcessor(model_file=str(work / "spm.model"))
    eos = proc.eos_id()
    return work / "spm.model", lambda texts: [ids + [eos] for ids in proc.encode(texts)]


def train_unigram(lines, work):
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors, trainers
    tok = Tokenizer(models.Unigram())
    tok.normalizer = normalizers.NFKC()
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    trainer = trainers.UnigramTrainer(vocab_size=8000, special_tokens=["<pad>", "<unk>", "<s>", "</s>"],
                                      unk_token="<unk>", show_progress=False)
    tok.train_from_iterator(lines, trainer)
    tok.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", special_tokens=[("<s>", tok.token_to_id("<s>")), ("</s>", tok.token_to_id("</s>"))])
    path = work / "unigram-tokenizer.json"
    tok.save(str(path))
    return path, lambda texts: [e.ids for e in tok.encode_batch(texts)]


def train_xlmr(lines, work):
    """XLM-R: the SentencePiece model read with fairseq's ids by pilot (stage.tokenizer.ids
    "fairseq", <s> and </s> added). The reference is sentencepiece's ids through fairseq's
    dictionary (<s> 0, <pad> 1, </s> 2, <unk> 3, every other piece plus 1), as XLM-R's own
    tokenizer maps them. Beside it, how often transformers' fast XLM-R tokenizer agrees: its
    XLMRobertaConverter turns the .model into a tokenizer.json (Precompiled, Metaspace,
    Unigram), which tokenizers runs; printed, not asserted (docs/tokenizers.md says where the
    two differ)."""
    import sentencepiece as spm
    model = work / "spm.model"
    if not model.exists():
        train_spm(lines, work)
    proc = spm.SentencePieceProcessor(model_file=str(model))
    unk = proc.unk_id()

    def reference(texts):
        want = [[0] + [3 if i == unk else i + 1 for i in ids] + [2] for ids in proc.encode(texts)]
        os.environ.setdefault("PROTOCOL_BUFFERS_PYTHON_IMPLEMENTATION", "python")
        from tokenizers import Tokenizer
        from transformers.convert_slow_tokenizer import XLMRobertaConverter

        class Original:  # what the converter reads of the slow tokenizer
            vocab_file = str(model)

            def convert_tokens_to_ids(self, token):
                return {"<s>": 0, "<pad>": 1, "</s>": 2, "<unk>": 3}[token]

        XLMRobertaConverter(Original()).converted().save(str(work / "xlmr-tokenizer.json"))
        fast = Tokenizer.from_file(str(work / "xlmr-tokenizer.json"))
        hf = [e.ids for e in fast.encode_batch(texts)]
        literal = [any(t in text for t in ("<s>", "</s>", "<pad>", "<unk>", "<mask>")) for text in texts]
        same = sum(1 for a, b in zip(want, hf) if a == b)
        plain = [i for i, lit in enumerate(literal) if not lit]
        same_plain = sum(1 for i in plain if want[i] == hf[i])
        print(f"xlmr against transformers' fast tokenizer (XLMRobertaConverter): {same}/{len(texts)} texts "
              f"identical; {same_plain}/{len(plain)} of those without a special-token literal")
        return want

    return model, reference


FAMILIES = {"bert": train_bert, "roberta": train_roberta, "spm": train_spm, "unigram": train_unigram,
            "xlmr": train_xlmr}
PROBE_FLAGS = {"spm": ["--spm"], "xlmr": ["--fairseq"]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("probe")
    ap.add_argument("work")
    ap.add_argument("--texts", type=int, default=10_000)
    ap.add_argument("--family", action="append", choices=sorted(FAMILIES))
    ap.add_argument("--reference-only", action="store_true",
                    help="write each family's reference ids to WORK/<family>.ids and stop")
    args = ap.parse_args()
    work = pathlib.Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    probe = args.probe
    younger = [int(x) for x in subprocess.run([probe, "--younger-than-9"], check=True, capture_output=True,
                                              text=True).stdout.split()]
    unassigned = set(int(x) for x in subprocess.run([probe, "--unassigned"], check=True, capture_output=True,
                                                    text=True).stdout.split())
    assigned = [c for c in range(0x110000) if c not in unassigned and not 0xD800 <= c <= 0xDFFF]
    lines = corpus_lines()
    rng = random.Random(28)
    texts = make_texts(args.texts, lines, younger, assigned, rng)
    (work / "texts.jsonl").write_text("".join(json.dumps(t) + "\n" for t in texts), encoding="utf-8")
    print(f"parity: {len(texts)} texts, {sum(len(t) for t in texts)} code points, corpus {len(lines)} lines; "
          f"{len(younger)} code points younger than Unicode 9.0 in the pool")
    failed = False
    for family in args.family or sorted(FAMILIES):
        path, reference = FAMILIES[family](lines, work)
        t0 = time.monotonic()
        want = reference(texts)
        t_ref = time.monotonic() - t0
        (work / f"{family}.ids").write_text("".join(" ".join(map(str, ids)) + "\n" for ids in want))
        if args.reference_only:
            continue
        t0 = time.monotonic()
        cmd = [probe, "--encode", str(path), str(work / "texts.jsonl")] + PROBE_FLAGS.get(family, [])
        got = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.splitlines()
        t_pilot = time.monotonic() - t0
        got = [[int(x) for x in line.split()] for line in got]
        bad = [i for i in range(len(texts)) if i >= len(got) or got[i] != want[i]]
        tokens = sum(len(w) for w in want)
        print(f"parity {family}: {len(texts) - len(bad)}/{len(texts)} texts identical, {tokens} tokens "
              f"(reference {t_ref:.2f} s, pilot {t_pilot:.2f} s)")
        for i in bad[:5]:
            print(f"  text {i} {json.dumps(texts[i][:120])}:\n    reference {want[i][:40]}\n    pilot     "
                  f"{(got[i] if i < len(got) else None)}")
        failed |= bool(bad)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
