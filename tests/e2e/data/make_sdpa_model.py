"""A TorchScript classifier that calls F.scaled_dot_product_attention, scripted and saved by the
torch this Python imports (e2e.torch2_export). torch 1.13 lacks the operator, so only a pilot
built against PyTorch 2.x loads it. Deterministic: fixed seed, no training.

usage: make_sdpa_model.py OUT.pt
"""
import sys
from typing import List

import torch
import torch.nn.functional as F


class SdpaClassifier(torch.nn.Module):
    labels: List[str]
    input_kind: str
    output: str

    def __init__(self):
        super().__init__()
        self.labels = ["short", "long"]
        self.input_kind = "text"
        self.output = "logits"
        torch.manual_seed(0)
        self.embed = torch.nn.Embedding(256, 16)
        self.qkv = torch.nn.Linear(16, 48)
        # Logit "long" grows with the number of tokens, "short" is fixed: texts of more than
        # 20 characters come out "long".

    def forward(self, texts: List[str]) -> torch.Tensor:
        out: List[torch.Tensor] = []
        for text in texts:
            ids = torch.tensor([ord(c) % 256 for c in text[:64]] + [32], dtype=torch.int64)
            x = self.embed(ids).unsqueeze(0).unsqueeze(0)  # [1, 1, T, 16]
            q, k, v = self.qkv(x).chunk(3, dim=-1)
            attended = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            n = float(ids.numel()) + 0.0 * attended.sum()
            out.append(torch.stack([torch.tensor(21.0), n]))
        return torch.stack(out)


torch.jit.save(torch.jit.script(SdpaClassifier()), sys.argv[1],
               _extra_files={"torch_version": torch.__version__})
