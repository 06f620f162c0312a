#!/usr/bin/env python3
"""Makes the small tokenizers in tests/tokenizer/data/ that the unit tests and fuzz targets
load: a WordPiece (BERT), a byte-level BPE (RoBERTa), a tokenizers Unigram (NFKC, Metaspace,
<s> $A </s>), a SentencePiece unigram model, and a byte-level BPE with the ByteLevel decoder
(tiny-bytelevel.json, GPT-2-style, for decoding a generator's completions), each
trained on the GNU GPL v3 text Debian ships (/usr/share/common-licenses/GPL-3). Run with the
test venv's Python (tokenizers 0.23.3, sentencepiece 0.1.99):

  build/venv/bin/python tests/tokenizer/make-data.py tests/tokenizer/data
"""
import os
import pathlib
import sys

os.environ.setdefault("RAYON_NUM_THREADS", "1")
from tokenizers import AddedToken, Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers  # noqa: E402
import sentencepiece as spm  # noqa: E402


def main():
    out = pathlib.Path(sys.argv[1])
    lines = [l for l in pathlib.Path("/usr/share/common-licenses/GPL-3").read_text().splitlines() if l.strip()]
    bert = Tokenizer(models.WordPiece(unk_token="[UNK]"))
    bert.normalizer = normalizers.BertNormalizer(lowercase=True)
    bert.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    bert.train_from_iterator(lines, trainers.WordPieceTrainer(
        vocab_size=300, special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"], show_progress=False))
    bert.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", bert.token_to_id("[CLS]")), ("[SEP]", bert.token_to_id("[SEP]"))])
    bert.save(str(out / "tiny-bert.json"))

    rob = Tokenizer(models.BPE())
    rob.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    rob.train_from_iterator(lines, trainers.BpeTrainer(
        vocab_size=400, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False,
        special_tokens=["<s>", "<pad>", "</s>", "<unk>", AddedToken("<mask>", lstrip=True, special=True)]))
    rob.post_processor = processors.RobertaProcessing(("</s>", rob.token_to_id("</s>")), ("<s>", rob.token_to_id("<s>")))
    rob.save(str(out / "tiny-roberta.json"))

    # Every line, empty ones too (what tests/e2e/data/generation_models.py trains on).
    gpt = Tokenizer(models.BPE())
    gpt.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    gpt.decoder = decoders.ByteLevel()
    gpt.train_from_iterator(pathlib.Path("/usr/share/common-licenses/GPL-3").read_text().splitlines(), trainers.BpeTrainer(
        vocab_size=300, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), special_tokens=["<|endoftext|>"]))
    gpt.save(str(out / "tiny-bytelevel.json"))

    uni = Tokenizer(models.Unigram())
    uni.normalizer = normalizers.NFKC()
    uni.pre_tokenizer = pre_tokenizers.Metaspace()
    uni.train_from_iterator(lines, trainers.UnigramTrainer(
        vocab_size=300, special_tokens=["<pad>", "<unk>", "<s>", "</s>"], unk_token="<unk>", show_progress=False))
    uni.post_processor = processors.TemplateProcessing(
        single="<s> $A </s>", special_tokens=[("<s>", uni.token_to_id("<s>")), ("</s>", uni.token_to_id("</s>"))])
    uni.save(str(out / "tiny-unigram.json"))

    corpus = out / "gpl3.txt"
    corpus.write_text("\n".join(lines))
    spm.SentencePieceTrainer.train(input=str(corpus), model_prefix=str(out / "tiny"), vocab_size=300,
                                   model_type="unigram", num_threads=1, minloglevel=2)
    corpus.unlink()
    (out / "tiny.vocab").unlink()


if __name__ == "__main__":
    main()
