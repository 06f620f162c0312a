"""docs/models.md's TorchScript export lines ("A Hugging Face transformers model") as a function:
the classifier save_pretrained wrote in MODEL_DIR, traced with SDPA and a padded row, inside a
scripted module that carries pilot's contract as attributes. tools/langid/train-bert.py exports
the bundled transformer with it, and bench/bert-bench.py its 4-layer model."""
from pathlib import Path
from typing import List

import torch
from transformers import AutoModelForSequenceClassification


def export(model_dir: Path, out: Path) -> None:
    model = AutoModelForSequenceClassification.from_pretrained(
        str(model_dir), attn_implementation="sdpa", return_dict=False
    ).eval()
    labels = [model.config.id2label[i] for i in range(model.config.num_labels)]
    ids = torch.tensor([[2, 40, 41, 3], [2, 40, 3, 0]])  # one row padded: the mask is traced

    class Pilot(torch.nn.Module):
        labels: List[str]
        input_kind: str
        output: str

        def __init__(self, m):
            super().__init__()
            self.m, self.labels, self.input_kind, self.output = m, labels, "token_ids", "logits"

        def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
            return self.m(input_ids, attention_mask)[0]

    torch.jit.save(torch.jit.script(Pilot(torch.jit.trace(model, (ids, (ids != 0).long())))), str(out),
                   _extra_files={"torch_version": torch.__version__})
