#!/usr/bin/env python3
"""Exports a bundled TorchScript model (data/models/langid, data/models/langid-embed) to an
AOTInductor package (.pt2) for pilot's aoti-classifier / aoti-embedding stage kinds, with
torch.export and torch._inductor.aoti_compile_and_package from the pinned torch wheel
(requirements-torch.txt; run it with build/venv/bin/python).

    export-pt2.py MODEL.pt OUT.pt2 [MODEL.pt OUT.pt2 ...] [--device cpu|cuda]

Several pairs are exported in one process (torch is imported once).

A package is native code compiled for one device, one CPU instruction set and one torch
version, so none is committed: CI exports the CPU one, scripts/gpu-check.sh the CUDA one.
The contract pilot reads (labels, input kind, n-gram settings, dim) travels in the
package's metadata under "pilot.*" keys. The batch (and the n-gram id count) are dynamic,
so one package serves every batch size. Prints the package's sha256, the value of
stage.model_sha256 in the parameters.
"""
import argparse
import ctypes
import hashlib
import json
import math
import os
import sys

import torch


class NgramClassifier(torch.nn.Module):
    """The bundled langid forward: mean of n-gram embeddings, a linear layer, softmax."""

    def __init__(self, emb, fc_w, fc_b):
        super().__init__()
        self.emb = torch.nn.Parameter(emb, requires_grad=False)
        self.fc_w = torch.nn.Parameter(fc_w, requires_grad=False)
        self.fc_b = torch.nn.Parameter(fc_b, requires_grad=False)

    def forward(self, ids, offsets):
        pooled = torch.nn.functional.embedding_bag(ids, self.emb, offsets, mode="mean")
        return torch.softmax(torch.addmm(self.fc_b, pooled, self.fc_w.t()), dim=1)


class NgramEmbedding(torch.nn.Module):
    """The bundled langid-embed forward: mean of n-gram embeddings, L2-normalised."""

    def __init__(self, emb):
        super().__init__()
        self.emb = torch.nn.Parameter(emb, requires_grad=False)

    def forward(self, ids, offsets):
        pooled = torch.nn.functional.embedding_bag(ids, self.emb, offsets, mode="mean")
        return pooled / torch.clamp(torch.norm(pooled, 2, [1], True), 1e-12)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("pairs", nargs="+", metavar="MODEL.pt OUT.pt2",
                    help="a bundled TorchScript model (.pt) and the .pt2 package to write, once or more")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    args = ap.parse_args()
    if len(args.pairs) % 2:
        ap.error("give MODEL.pt OUT.pt2 in pairs")
    for model, out in zip(args.pairs[0::2], args.pairs[1::2]):
        export(model, out, args.device)
    return 0


def export(model_path, out, device):
    """Exports one model to one package; exits on a package that differs from the model."""
    args = argparse.Namespace(model=model_path, out=out, device=device)
    scripted = torch.jit.load(args.model, map_location="cpu")
    state = scripted.state_dict()
    if scripted.input_kind != "hashed_char_ngrams":
        sys.exit(f"export-pt2: {args.model}: only the hashed_char_ngrams models are exported here")
    meta = {"pilot.input_kind": scripted.input_kind}
    for key in ("ngram_min", "ngram_max", "buckets", "max_chars"):
        meta[f"pilot.{key}"] = str(int(getattr(scripted, key)))
    if hasattr(scripted, "labels"):
        model = NgramClassifier(state["emb"], state["fc_w"], state["fc_b"])
        meta["pilot.labels"] = json.dumps(list(scripted.labels))
        meta["pilot.output"] = "probabilities"
    else:
        model = NgramEmbedding(state["emb"])
        meta["pilot.dim"] = str(int(scripted.dim))
    model = model.to(args.device).eval()

    # Example inputs of two documents; batch and id count are dynamic.
    ids = torch.tensor([1, 2, 3, 4, 5], dtype=torch.int64, device=args.device)
    offsets = torch.tensor([0, 2], dtype=torch.int64, device=args.device)
    n_ids = torch.export.Dim("ids", min=1)
    batch = torch.export.Dim("batch", min=1)
    with torch.no_grad():
        # The reference outputs, to check the package against the TorchScript model below.
        reference = scripted.to(args.device)(ids, offsets)
        ep = torch.export.export(model, (ids, offsets), dynamic_shapes=({0: n_ids}, {0: batch}))
        path = torch._inductor.aoti_compile_and_package(
            ep, package_path=args.out, inductor_configs={"aot_inductor.metadata": meta})
        # The package's library resolves libtorch's C shim from the global scope (as pilot's
        # stage arranges too): make the already-loaded libtorch libraries global first.
        for lib in ("libc10.so", "libtorch_cpu.so"):  # (a second package finds them loaded)
            ctypes.CDLL(os.path.join(os.path.dirname(torch.__file__), "lib", lib), mode=ctypes.RTLD_GLOBAL)
        loaded = torch._inductor.aoti_load_package(path)
        got = loaded(ids, offsets)
    diff = (got - reference).abs().max().item()
    if not math.isfinite(diff) or diff > 1e-5:
        sys.exit(f"export-pt2: the package differs from {args.model} by {diff:.2e} on the example inputs")
    sha = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            sha.update(block)
    digest = sha.hexdigest()
    print(json.dumps({"package": path, "sha256": digest, "device": args.device, "torch": torch.__version__,
                      "max_abs_difference": diff, "metadata": meta}))


if __name__ == "__main__":
    sys.exit(main())
