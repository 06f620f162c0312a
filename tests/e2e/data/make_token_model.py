"""A TorchScript classifier over token ids (input_kind "token_ids"): an embedding, a mean over
the tokens the attention mask keeps, and a linear layer to two labels, as logits. Saved by the
torch this Python imports, with random weights from a fixed seed. Used by e2e.tokenizer_pilot.

usage: make_token_model.py OUT.pt VOCAB_SIZE [--token-type-ids]
       make_token_model.py --reference MODEL.pt TOKENIZER.json MAX_LENGTH TEXT_DIR OUT.json
The second form is the Python pipeline the pilot must match: Hugging Face tokenizers (truncated
to MAX_LENGTH), or sentencepiece for a .model (with </s>), then the model on each text alone,
without padding; OUT.json maps each file name to its label, probability and token count.
"""
import json
import os
import sys
from typing import List

import torch


class TokenClassifier(torch.nn.Module):
    labels: List[str]
    input_kind: str
    output: str
    token_type_ids: bool

    def __init__(self, vocab: int, type_ids: bool):
        super().__init__()
        self.labels = ["neg", "pos"]
        self.input_kind = "token_ids"
        self.output = "logits"
        self.token_type_ids = type_ids
        torch.manual_seed(28)
        self.embed = torch.nn.Embedding(vocab, 16)
        self.types = torch.nn.Embedding(2, 16)
        self.head = torch.nn.Linear(16, 2)

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor,
                token_type_ids: torch.Tensor = torch.zeros(1, 1, dtype=torch.int64)) -> torch.Tensor:
        x = self.embed(input_ids)
        if self.token_type_ids:
            x = x + self.types(token_type_ids)
        m = attention_mask.unsqueeze(-1).to(x.dtype)
        pooled = (x * m).sum(1) / m.sum(1).clamp(min=1.0)
        return self.head(pooled)


def encoder(tokenizer_path, max_length):
    """(ids, type_ids) of a text, as the reference library gives them."""
    if tokenizer_path.endswith(".model"):  # SentencePiece, with </s> (add_eos)
        import sentencepiece as spm
        proc = spm.SentencePieceProcessor(model_file=tokenizer_path)
        def encode(text):
            ids = proc.encode(text)[:max_length - 1] + [proc.eos_id()]
            return ids, [0] * len(ids)
        return encode
    from tokenizers import Tokenizer
    tok = Tokenizer.from_file(tokenizer_path)
    tok.enable_truncation(max_length)
    def encode(text):
        enc = tok.encode(text)
        return enc.ids, enc.type_ids
    return encode


def reference(model_path, tokenizer_path, max_length, text_dir, out_path):
    encode = encoder(tokenizer_path, max_length)
    model = torch.jit.load(model_path)
    out = {}
    with torch.inference_mode():
        for name in sorted(os.listdir(text_dir)):
            text = open(os.path.join(text_dir, name), encoding="utf-8").read()
            ids_list, type_ids = encode(text)
            ids = torch.tensor([ids_list], dtype=torch.int64)
            probs = torch.softmax(model(ids, torch.ones_like(ids), torch.tensor([type_ids])).double(), 1)[0]
            best = int(probs.argmax())
            out[name] = {"label": ["neg", "pos"][best], "confidence": float(probs[best]), "tokens": len(ids_list)}
    json.dump(out, open(out_path, "w"), indent=1)


if __name__ == "__main__":
    if sys.argv[1] == "--reference":
        reference(sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5], sys.argv[6])
    else:
        torch.jit.save(torch.jit.script(TokenClassifier(int(sys.argv[2]), "--token-type-ids" in sys.argv)),
                       sys.argv[1], _extra_files={"torch_version": torch.__version__})
