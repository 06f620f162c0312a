#!/usr/bin/env python3
"""Trains the bundled transformer: a small BERT (Hugging Face transformers'
BertForSequenceClassification) that identifies the language of a text, with its own WordPiece
tokenizer trained by Hugging Face tokenizers, on the gettext catalogs fetched by
tools/langid/fetch-corpus.sh. Writes, into --out:

  tokenizer.json               the tokenizer (tokenizers' WordPieceTrainer)
  config.json, model.safetensors   the transformers checkpoint (save_pretrained)
  model.pt                     the TorchScript pilot runs, exported by docs/models.md's lines
  metrics.json, MODEL_CARD.md  held-out accuracy per label, the corpus and the recipe

Everything is seeded and runs on one thread with torch's deterministic algorithms, so the same
corpus and tokenizer on the same kind of CPU give the same weights, and a model.pt with the same
code and tensors (torch writes a random serialization id into every save;
tools/langid/rebuild-bert.sh checks).
The corpus is cleaned and split as tools/langid/train.cpp does for the n-gram model: messages
split 90/10 by an FNV-1a hash of their cleaned msgid, so every translation of one message falls
on the same side.
"""
import argparse
import hashlib
import json
import os
import random
import re
import struct
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("RAYON_NUM_THREADS", "1")  # tokenizers' trainer: one thread, one order
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers  # noqa: E402
from transformers import BertConfig, BertForSequenceClassification  # noqa: E402

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
FORMAT = re.compile(
    r"%(\d+\$)?[-+ #0']*(\d+|\*)?(\.(\d+|\*))?(hh|h|ll|l|L|q|j|z|t)?[diouxXeEfFgGaAcsSpn%]"
    r"|%<PRI\w+>|\$\{?\w+\}?|\{[^}]*\}|<[^>]*>|&\w+;|https?://\S+",
    re.ASCII,
)


def fnv(data: bytes) -> int:
    h = 2166136261
    for c in data:
        h = ((h ^ c) * 16777619) & 0xFFFFFFFF
    return h


def read_mo(path: Path):
    """(msgid, msgstr) pairs of a GNU .mo file, the first plural form of each."""
    data = path.read_bytes()
    if len(data) < 28:
        return []
    for order in "<>":
        magic, _, n, orig, trans = struct.unpack(order + "5I", data[:20])
        if magic == 0x950412DE:
            break
    else:
        return []

    def string(table, i):
        at = table + 8 * i
        if at + 8 > len(data):
            return b""
        length, off = struct.unpack(order + "2I", data[at : at + 8])
        return data[off : off + length] if off + length <= len(data) else b""

    out = []
    for i in range(n):
        mid, tr = string(orig, i), string(trans, i)
        if not mid:
            continue  # the header entry
        mid = mid.split(b"\x04", 1)[-1]
        out.append((mid.split(b"\0")[0], tr.split(b"\0")[0]))
    return out


def clean(raw: bytes) -> str:
    """What is natural language in a message: no format directives, markup or accelerators."""
    s = FORMAT.sub(" ", raw.decode("utf-8", "replace"))
    s = re.sub(r"[_&](?=[A-Za-z])", "", s)
    return " ".join(s.split())


def letters(s: str) -> int:
    return sum(ch.isalpha() for ch in s)


def load_corpus(corpus: Path, labels, seed: int, cap: int):
    by_lang = {}
    catalogs = 0
    for mo in sorted(corpus.rglob("*.mo")):
        lang = mo.parent.name
        if lang not in labels:
            continue
        catalogs += 1
        for mid, tr in read_mo(mo):
            cid, ctr = clean(mid), clean(tr)
            if letters(cid) >= 3:
                by_lang.setdefault("en", {}).setdefault(cid, cid)
            if lang != "en" and letters(ctr) >= 3 and ctr != cid:
                by_lang.setdefault(lang, {}).setdefault(cid, ctr)
    rng = random.Random(seed)
    splits = {}
    for lang in labels:
        train, test = [], []
        msgs = by_lang.get(lang, {})
        for key in sorted(msgs, key=lambda k: k.encode()):
            (test if fnv(key.encode()) % 10 == 0 else train).append(msgs[key])
        rng.shuffle(train)
        rng.shuffle(test)
        splits[lang] = (train[:cap], test)
    return splits, catalogs


def heldout_texts(messages):
    """Held-out texts of >= 100 characters, made by joining held-out messages of one language."""
    out, cur = [], ""
    for t in messages:
        cur = t if not cur else cur + ". " + t
        if len(cur) >= 100:
            out.append(cur)
            cur = ""
    return out


def train_tokenizer(texts, vocab_size):
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]", continuing_subword_prefix="##", max_input_chars_per_word=100))
    # Accents and letter forms are what tell languages apart: lower case, but no accent stripping.
    tok.normalizer = normalizers.BertNormalizer(
        clean_text=True, handle_chinese_chars=True, strip_accents=False, lowercase=True
    )
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece(prefix="##")
    trainer = trainers.WordPieceTrainer(
        vocab_size=vocab_size, min_frequency=2, special_tokens=SPECIALS, show_progress=False
    )
    tok.train_from_iterator(texts, trainer=trainer)
    cls, sep = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", cls), ("[SEP]", sep)]
    )
    return tok


def batch(tok, texts, max_length):
    """Token ids and attention mask of a padded batch, each text cut to max_length tokens."""
    tok.enable_truncation(max_length)
    tok.enable_padding(pad_id=0, pad_token="[PAD]")
    enc = tok.encode_batch(texts)
    ids = torch.tensor([e.ids for e in enc])
    return ids, torch.tensor([e.attention_mask for e in enc])


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", required=True, help="folder written by tools/langid/fetch-corpus.sh")
    ap.add_argument("--languages", required=True, help="tools/langid/languages.txt")
    ap.add_argument("--out", required=True, help="folder to write the model into")
    ap.add_argument("--tokenizer", help="train with this tokenizer.json instead of training one")
    ap.add_argument("--seed", type=int, default=20261203)
    ap.add_argument("--cap", type=int, default=4000, help="training messages per language")
    ap.add_argument("--vocab", type=int, default=6000)
    ap.add_argument("--hidden", type=int, default=64)
    ap.add_argument("--layers", type=int, default=2)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--epochs", type=int, default=2)
    ap.add_argument("--batch", type=int, default=64)
    ap.add_argument("--lr", type=float, default=2e-3)
    ap.add_argument("--train-length", type=int, default=48, help="tokens per training message")
    ap.add_argument("--max-length", type=int, default=128, help="the model's max_position_embeddings")
    a = ap.parse_args()

    torch.set_num_threads(1)
    torch.manual_seed(a.seed)
    torch.use_deterministic_algorithms(True)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    names = {}
    for line in Path(a.languages).read_text().splitlines():
        if line and not line.startswith("#"):
            code, name = line.split(None, 1)
            names[code] = name.strip()
    labels = list(names)
    corpus = Path(a.corpus)
    for need in ("SHA256SUMS", "packages.txt"):
        if not (corpus / need).is_file():
            sys.exit(f"train-bert: {corpus / need} is missing: give --corpus a folder tools/langid/fetch-corpus.sh wrote")
    splits, catalogs = load_corpus(corpus, labels, a.seed, a.cap)
    empty = [lang for lang in labels if not splits[lang][0]]
    if catalogs == 0 or empty:
        sys.exit(f"train-bert: {corpus}: {catalogs} catalogs; no training messages for {', '.join(empty) or 'any label'}")
    train = [(t, i) for i, lang in enumerate(labels) for t in splits[lang][0]]
    for lang in labels:
        print(f"{lang}: {len(splits[lang][0])} train, {len(splits[lang][1])} held-out messages", file=sys.stderr)

    start = time.time()
    if a.tokenizer:
        # The shipped tokenizer: tokenizers' WordPieceTrainer is not reproducible run to run (it
        # orders characters of equal count as a hash map iterates them), so a rebuild keeps it.
        tok = Tokenizer.from_file(a.tokenizer)
    else:
        tok = train_tokenizer([t for t, _ in train], a.vocab)
        print(f"tokenizer: {tok.get_vocab_size()} pieces in {time.time() - start:.1f} s", file=sys.stderr)
    tok.save(str(out / "tokenizer.json"))

    config = BertConfig(
        vocab_size=tok.get_vocab_size(),
        hidden_size=a.hidden,
        num_hidden_layers=a.layers,
        num_attention_heads=a.heads,
        intermediate_size=4 * a.hidden,
        max_position_embeddings=a.max_length,
        type_vocab_size=1,
        pad_token_id=0,
        num_labels=len(labels),
        id2label=dict(enumerate(labels)),
        label2id={l: i for i, l in enumerate(labels)},
    )
    model = BertForSequenceClassification(config)
    params = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=0.01)
    rng = random.Random(a.seed + 1)
    steps_per_epoch = (len(train) + a.batch - 1) // a.batch
    total = steps_per_epoch * a.epochs
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 200) * max(0.0, 1 - s / total))
    start = time.time()
    for epoch in range(a.epochs):
        model.train()
        order = list(range(len(train)))
        rng.shuffle(order)
        loss_sum = 0.0
        for b in range(0, len(order), a.batch):
            rows = [train[i] for i in order[b : b + a.batch]]
            ids, mask = batch(tok, [t for t, _ in rows], a.train_length)
            y = torch.tensor([l for _, l in rows])
            loss = model(input_ids=ids, attention_mask=mask, labels=y).loss
            opt.zero_grad()
            loss.backward()
            opt.step()
            sched.step()
            loss_sum += loss.item()
        print(f"epoch {epoch + 1}: mean loss {loss_sum / steps_per_epoch:.4f} ({time.time() - start:.0f} s)", file=sys.stderr)
    train_seconds = time.time() - start
    model.eval()

    def predict(texts):
        got = []
        with torch.inference_mode():
            for b in range(0, len(texts), 256):
                ids, mask = batch(tok, texts[b : b + 256], a.max_length)
                got += model(input_ids=ids, attention_mask=mask).logits.argmax(1).tolist()
        return got

    per_label, msg_ok, msg_n, text_ok, text_n = {}, 0, 0, 0, 0
    for i, lang in enumerate(labels):
        test = splits[lang][1]
        texts = heldout_texts(test)
        m = sum(p == i for p in predict(test))
        t_pred = predict(texts)
        t = sum(p == i for p in t_pred)
        confused = {}
        for p in t_pred:
            if p != i:
                confused[labels[p]] = confused.get(labels[p], 0) + 1
        per_label[lang] = {
            "name": names[lang],
            "train_messages": len(splits[lang][0]),
            "heldout_messages": len(test),
            "heldout_message_accuracy": m / max(1, len(test)),
            "heldout_texts_100": len(texts),
            "heldout_text_100_accuracy": t / max(1, len(texts)),
            "confused_with": confused,
        }
        msg_ok, msg_n, text_ok, text_n = msg_ok + m, msg_n + len(test), text_ok + t, text_n + len(texts)

    model.save_pretrained(str(out), safe_serialization=True)
    # The export, as docs/models.md gives it ("A Hugging Face transformers model").
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from export_torchscript import export

    export(out, out / "model.pt")

    def sha(name):
        return hashlib.sha256((out / name).read_bytes()).hexdigest()

    corpus_sha = hashlib.sha256((Path(a.corpus) / "SHA256SUMS").read_bytes()).hexdigest()
    packages = (Path(a.corpus) / "packages.txt").read_text().split("\n")
    recipe = {k: v for k, v in vars(a).items() if k not in ("corpus", "languages", "out", "tokenizer")}
    metrics = {
        "model": "langid-bert",
        "files": {f: sha(f) for f in ("tokenizer.json", "config.json", "model.safetensors", "model.pt")},
        "parameters": params,
        "recipe": recipe,
        "torch": torch.__version__,
        "corpus_sha256": corpus_sha,
        "catalogs": catalogs,
        "train_seconds": round(train_seconds, 1),
        "heldout": {
            "messages": msg_n,
            "message_accuracy": msg_ok / msg_n,
            "texts_100": text_n,
            "text_100_accuracy": text_ok / text_n,
        },
        "labels": per_label,
    }
    (out / "metrics.json").write_text(json.dumps(metrics, indent=2, ensure_ascii=False) + "\n")

    import tokenizers
    import transformers

    card = [
        "# Model card: langid-bert (the bundled transformer of pilot)",
        "",
        "Generated by `tools/langid/train-bert.py`; every figure below was measured by that program on",
        "held-out text. Regenerate and check with `tools/langid/rebuild-bert.sh`.",
        "",
        f"- Files: `model.pt` (TorchScript, what `config/bert.json` runs), sha256 `{sha('model.pt')}`;",
        f"  `tokenizer.json` (WordPiece), sha256 `{sha('tokenizer.json')}`;",
        f"  `config.json` and `model.safetensors` (the transformers checkpoint the Python reference loads),",
        f"  sha256 `{sha('model.safetensors')}`.",
        "- Task: language identification of UTF-8 text; labels are ISO 639-1 codes.",
        f"- Architecture: transformers `BertForSequenceClassification`, {a.layers} layers, hidden size {a.hidden},"
        f" {a.heads} heads, intermediate size {4 * a.hidden}, {a.max_length} positions, {tok.get_vocab_size()}"
        f" WordPiece pieces: {params:,} parameters.",
        "- Tokenizer: Hugging Face tokenizers' `WordPieceTrainer` on the training messages (`BertNormalizer`,"
        " lower case, accents kept; `BertPreTokenizer`; `[CLS] $A [SEP]`).",
        f"- Training: AdamW, lr {a.lr} (200 warm-up steps, then linear decay), weight decay 0.01, batch {a.batch},"
        f" {a.epochs} epochs, messages cut to {a.train_length} tokens, at most {a.cap} messages per language,"
        f" seed {a.seed}, one thread, deterministic algorithms; torch {torch.__version__},"
        f" transformers {transformers.__version__}, tokenizers {tokenizers.__version__}"
        f" ({train_seconds:.0f} s of training here).",
        "- Export: docs/models.md's lines (traced with SDPA and a padded row, the contract as attributes).",
        "",
        "## Corpus",
        "",
        "The gettext catalogs (.mo) shipped by these Debian 12 packages, fetched by name with",
        "`tools/langid/fetch-corpus.sh` (English from the msgids, other languages from the msgstrs;",
        "format directives, markup and accelerators stripped; untranslated strings dropped). Messages are",
        "split 90/10 by a hash of their msgid, so all translations of one message fall on the same side.",
        "",
        *[f"- {p}" for p in packages if p],
        "",
        f"{catalogs} catalogs; sha256 of the corpus's SHA256SUMS: `{corpus_sha}`",
        "",
        "## Held-out accuracy",
        "",
        f"Overall: **{100 * text_ok / text_n:.2f}%** on {text_n} held-out texts of >= 100 characters;"
        f" {100 * msg_ok / msg_n:.2f}% on {msg_n} single held-out messages (often a few words).",
        "",
        "| code | language | train msgs | held-out msgs | msg acc. | texts >= 100 ch | text acc. |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for lang, r in per_label.items():
        card.append(
            f"| {lang} | {r['name']} | {r['train_messages']} | {r['heldout_messages']} |"
            f" {100 * r['heldout_message_accuracy']:.2f}% | {r['heldout_texts_100']} |"
            f" {100 * r['heldout_text_100_accuracy']:.2f}% |"
        )
    (out / "MODEL_CARD.md").write_text("\n".join(card) + "\n")
    print(
        f"held-out accuracy {100 * text_ok / text_n:.2f}% on {text_n} texts >= 100 chars,"
        f" {100 * msg_ok / msg_n:.2f}% on {msg_n} messages; model.pt sha256 {sha('model.pt')}"
    )


if __name__ == "__main__":
    main()
