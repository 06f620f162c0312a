"""A tiny Hugging Face transformers BERT classifier with random weights, and the Python pipeline
a pilot of its exports must match. Used by e2e.transformers_export.

usage: make_transformers_model.py MODEL_DIR TOKENIZER.json
       make_transformers_model.py --reference MODEL_DIR TOKENIZER.json MAX_LENGTH TEXT_DIR OUT.json
The first form saves, with save_pretrained, a BertForSequenceClassification (2 layers, hidden
size 32, labels neg/neu/pos) sized to the tokenizer's vocabulary, from a fixed seed: the folder
the export lines of docs/models.md load, as they would load a fine-tuned model.
The second is the production pipeline, run on each text alone: transformers' own fast
tokenizer over the same tokenizer.json (truncated to MAX_LENGTH), then the model in eager
mode; OUT.json maps each file name to its softmax probabilities and token count.
Runs offline (HF_HUB_OFFLINE=1): nothing is downloaded.
"""
import json
import os
import sys

os.environ["HF_HUB_OFFLINE"] = "1"
import torch  # noqa: E402
from transformers import (BertConfig, BertForSequenceClassification,  # noqa: E402
                          PreTrainedTokenizerFast)


def make(model_dir, tokenizer_path):
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(tokenizer_path)
    torch.manual_seed(29)
    labels = ["neg", "neu", "pos"]
    config = BertConfig(vocab_size=tok.get_vocab_size(), hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=2, intermediate_size=64, max_position_embeddings=128,
                        num_labels=len(labels), id2label=dict(enumerate(labels)),
                        label2id={name: i for i, name in enumerate(labels)},
                        pad_token_id=tok.token_to_id("[PAD]"))
    BertForSequenceClassification(config).eval().save_pretrained(model_dir)


def reference(model_dir, tokenizer_path, max_length, text_dir, out_path):
    tokenizer = PreTrainedTokenizerFast(tokenizer_file=tokenizer_path, unk_token="[UNK]",
                                        pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]")
    model = BertForSequenceClassification.from_pretrained(model_dir).eval()
    out = {}
    for name in sorted(os.listdir(text_dir)):
        with open(os.path.join(text_dir, name), encoding="utf-8") as f:
            text = f.read()
        enc = tokenizer(text, truncation=True, max_length=max_length, return_tensors="pt")
        with torch.no_grad():
            probs = model(**enc).logits.softmax(-1)[0]
        out[name] = {"probabilities": [float(p) for p in probs],
                     "tokens": int(enc["input_ids"].shape[1])}
    with open(out_path, "w") as f:
        json.dump({"labels": [model.config.id2label[i] for i in range(model.config.num_labels)],
                   "items": out}, f)


if __name__ == "__main__":
    if sys.argv[1] == "--reference":
        reference(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6])
    else:
        make(sys.argv[1], sys.argv[2])
