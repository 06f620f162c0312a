#!/usr/bin/env python3
"""Exports a Hugging Face causal language model (a folder written by save_pretrained) to pilot's
generator contract (docs/generation.md, "The generator contract"): a .pt2 package
(torch.export, then AOTInductor) for the aoti-generator stage kind and/or a TorchScript file
for torchscript-generator. Run it with the pinned wheel's Python (build/venv/bin/python).

    export-generator.py MODEL_DIR [--pt2 OUT.pt2] [--torchscript OUT.pt] [--device cpu|cuda]
                        [--dtype float32|bfloat16|float16]

Architectures: GPT-2 (model_type "gpt2": learned positions, LayerNorm, GELU) and Llama-style
(model_type "llama", "mistral" without a sliding window, "qwen2": rotary positions with the
default rope, RMSNorm, SwiGLU, grouped-query attention where the model has fewer key/value heads
than attention heads). Anything else is refused by name.

The exported function is one step over an explicit KV cache that pilot allocates and owns:

    step(input_ids  int64 [B, T],        the tokens of this step (a prompt, or one token)
         positions  int64 [B, T],        each token's position in its own sequence
         logits_at  int64 [B],           which of the T tokens each slot wants logits for
         k_cache    [L, B, Hkv, C, D],   keys already in each slot's cache (read only)
         v_cache    [L, B, Hkv, C, D])
      -> (logits float32 [B, V], new_k [L, B, Hkv, T, D], new_v [L, B, Hkv, T, D])

Slot b's token t attends to the slot's cache entries j < positions[b, 0] and to the step's own
tokens t' <= t. pilot writes new_k/new_v into its cache at index positions[b, t]. Each slot
thus has its own position and its own mask (a slot can be refilled alone); the model never
mutates its inputs, so it exports with torch.export as a pure function. Prefill is a step with
the padded prompts (T = the longest); decode a step with T = 1.

The contract's facts travel with the model: as TorchScript attributes, or as the package's
"pilot.*" metadata (strings): input_kind "token_ids", generator_contract 1, layers, kv_heads,
head_dim, context (max_position_embeddings or n_positions), vocab, eos_token_ids (a JSON array).
Prints each file's sha256, the value of stage.model_sha256.
"""
import argparse
import hashlib
import json
import math
import os
import sys
from typing import List, Tuple

import torch
import torch.nn.functional as F


class Layer(torch.nn.Module):
    """One decoder block's weights in one layout for both families (absent biases are zeros,
    which add nothing)."""

    def __init__(self, t):
        super().__init__()
        for name, value in t.items():
            self.register_buffer(name, value.detach().clone().contiguous())


class Generator(torch.nn.Module):
    gpt2: torch.jit.Final[bool]
    heads: torch.jit.Final[int]
    kv_heads: torch.jit.Final[int]
    head_dim: torch.jit.Final[int]
    eps: torch.jit.Final[float]

    def __init__(self, gpt2, heads, kv_heads, head_dim, eps, wte, wpe, inv_freq, lnf_w, lnf_b, lm_head, layers):
        super().__init__()
        self.gpt2 = gpt2
        self.heads = heads
        self.kv_heads = kv_heads
        self.head_dim = head_dim
        self.eps = eps
        self.register_buffer("wte", wte.detach().clone().contiguous())
        self.register_buffer("wpe", wpe.detach().clone().contiguous())
        self.register_buffer("inv_freq", inv_freq.detach().clone().contiguous())
        self.register_buffer("lnf_w", lnf_w.detach().clone().contiguous())
        self.register_buffer("lnf_b", lnf_b.detach().clone().contiguous())
        self.register_buffer("lm_head", lm_head.detach().clone().contiguous())
        self.layers = torch.nn.ModuleList([Layer(t) for t in layers])

    def norm(self, x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
        if self.gpt2:
            return F.layer_norm(x, [x.size(-1)], w, b, self.eps)
        dtype = x.dtype
        h = x.to(torch.float32)
        h = h * torch.rsqrt(h.pow(2).mean(-1, keepdim=True) + self.eps)
        return w * h.to(dtype)

    def rope(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        half = x.size(-1) // 2
        rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
        return x * cos + rotated * sin

    def forward(self, input_ids: torch.Tensor, positions: torch.Tensor, logits_at: torch.Tensor,
                k_cache: torch.Tensor, v_cache: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        b = input_ids.size(0)
        t = input_ids.size(1)
        c = k_cache.size(3)
        x = F.embedding(input_ids, self.wte)
        cos = torch.zeros(1, dtype=x.dtype, device=x.device)
        sin = torch.zeros(1, dtype=x.dtype, device=x.device)
        if self.gpt2:
            x = x + F.embedding(positions, self.wpe)
        else:
            freqs = positions.unsqueeze(-1).to(torch.float32) * self.inv_freq
            emb = torch.cat([freqs, freqs], dim=-1)
            cos = emb.cos().to(x.dtype).unsqueeze(1)
            sin = emb.sin().to(x.dtype).unsqueeze(1)
        # Each slot's mask: its cache entries before this step's first position, then causal.
        cached = torch.arange(c, device=x.device).view(1, 1, c) < positions[:, :1].unsqueeze(-1)
        causal = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        mask = torch.cat([cached.expand(b, t, c), causal.unsqueeze(0).expand(b, t, t)], dim=2).unsqueeze(1)
        rep = self.heads // self.kv_heads
        new_k: List[torch.Tensor] = []
        new_v: List[torch.Tensor] = []
        i = 0
        for layer in self.layers:
            h = self.norm(x, layer.ln1_w, layer.ln1_b)
            q = F.linear(h, layer.q_w, layer.q_b).view(b, t, self.heads, self.head_dim).transpose(1, 2)
            k = F.linear(h, layer.k_w, layer.k_b).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
            v = F.linear(h, layer.v_w, layer.v_b).view(b, t, self.kv_heads, self.head_dim).transpose(1, 2)
            if not self.gpt2:
                q = self.rope(q, cos, sin)
                k = self.rope(k, cos, sin)
            new_k.append(k)
            new_v.append(v)
            keys = torch.cat([k_cache[i], k], dim=2)
            values = torch.cat([v_cache[i], v], dim=2)
            if rep > 1:
                keys = keys.repeat_interleave(rep, dim=1)
                values = values.repeat_interleave(rep, dim=1)
            a = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask)
            a = a.transpose(1, 2).reshape(b, t, self.heads * self.head_dim)
            x = x + F.linear(a, layer.o_w, layer.o_b)
            h = self.norm(x, layer.ln2_w, layer.ln2_b)
            if self.gpt2:
                m = F.linear(F.gelu(F.linear(h, layer.fc1_w, layer.fc1_b), approximate="tanh"), layer.fc2_w,
                             layer.fc2_b)
            else:
                m = F.linear(F.silu(F.linear(h, layer.fc1_w, layer.fc1_b)) * F.linear(h, layer.fc3_w, layer.fc3_b),
                             layer.fc2_w, layer.fc2_b)
            x = x + m
            i += 1
        last = x[torch.arange(b, device=x.device), logits_at]
        logits = F.linear(self.norm(last, self.lnf_w, self.lnf_b), self.lm_head)
        return logits.to(torch.float32), torch.stack(new_k), torch.stack(new_v)


def refuse(why):
    sys.exit(f"export-generator: {why}")


def build(model):
    """The HF model's weights in the Generator's layout, and the contract's facts."""
    cfg = model.config
    sd = {k: v for k, v in model.state_dict().items()}
    kind = cfg.model_type
    zeros = lambda n, like: torch.zeros(n, dtype=like.dtype)
    layers = []
    if kind == "gpt2":
        if getattr(cfg, "scale_attn_by_inverse_layer_idx", False) or not getattr(cfg, "scale_attn_weights", True):
            refuse("GPT-2 attention scaling other than 1/sqrt(head_dim) is not implemented")
        if cfg.activation_function not in ("gelu_new", "gelu_pytorch_tanh"):
            refuse(f"GPT-2 activation {cfg.activation_function!r} is not implemented (gelu_new is)")
        d, heads = cfg.n_embd, cfg.n_head
        hd = d // heads
        for i in range(cfg.n_layer):
            p = f"transformer.h.{i}."
            w, bias = sd[p + "attn.c_attn.weight"].t(), sd[p + "attn.c_attn.bias"]
            layers.append({
                "ln1_w": sd[p + "ln_1.weight"], "ln1_b": sd[p + "ln_1.bias"],
                "ln2_w": sd[p + "ln_2.weight"], "ln2_b": sd[p + "ln_2.bias"],
                "q_w": w[:d], "k_w": w[d:2 * d], "v_w": w[2 * d:],
                "q_b": bias[:d], "k_b": bias[d:2 * d], "v_b": bias[2 * d:],
                "o_w": sd[p + "attn.c_proj.weight"].t(), "o_b": sd[p + "attn.c_proj.bias"],
                "fc1_w": sd[p + "mlp.c_fc.weight"].t(), "fc1_b": sd[p + "mlp.c_fc.bias"],
                "fc2_w": sd[p + "mlp.c_proj.weight"].t(), "fc2_b": sd[p + "mlp.c_proj.bias"],
                "fc3_w": torch.zeros(0), "fc3_b": torch.zeros(0),
            })
        wte = sd["transformer.wte.weight"]
        lm_head = sd.get("lm_head.weight", wte)
        g = Generator(True, heads, heads, hd, float(cfg.layer_norm_epsilon), wte, sd["transformer.wpe.weight"],
                      torch.zeros(0), sd["transformer.ln_f.weight"], sd["transformer.ln_f.bias"], lm_head, layers)
        facts = dict(layers=cfg.n_layer, kv_heads=heads, head_dim=hd, context=cfg.n_positions, vocab=cfg.vocab_size)
    elif kind in ("llama", "mistral", "qwen2"):
        if getattr(cfg, "sliding_window", None) and kind == "mistral":
            refuse("a sliding attention window is not implemented")
        rope = getattr(cfg, "rope_parameters", None) or getattr(cfg, "rope_scaling", None) or {}
        if rope.get("rope_type", "default") != "default":
            refuse(f"rope_type {rope.get('rope_type')!r} is not implemented (the default rope is)")
        theta = rope.get("rope_theta", getattr(cfg, "rope_theta", 10000.0))
        if getattr(cfg, "hidden_act", "silu") != "silu":
            refuse(f"activation {cfg.hidden_act!r} is not implemented (silu is)")
        d, heads = cfg.hidden_size, cfg.num_attention_heads
        kv = getattr(cfg, "num_key_value_heads", None) or heads
        hd = getattr(cfg, "head_dim", None) or d // heads
        if heads % kv:
            refuse(f"{heads} attention heads are not a multiple of {kv} key/value heads")
        for i in range(cfg.num_hidden_layers):
            p = f"model.layers.{i}."
            g_w = lambda n: sd[p + n]
            b_or_0 = lambda n, rows: sd.get(p + n, torch.zeros(rows, dtype=sd[p + "self_attn.q_proj.weight"].dtype))
            layers.append({
                "ln1_w": g_w("input_layernorm.weight"), "ln1_b": torch.zeros(0),
                "ln2_w": g_w("post_attention_layernorm.weight"), "ln2_b": torch.zeros(0),
                "q_w": g_w("self_attn.q_proj.weight"), "q_b": b_or_0("self_attn.q_proj.bias", heads * hd),
                "k_w": g_w("self_attn.k_proj.weight"), "k_b": b_or_0("self_attn.k_proj.bias", kv * hd),
                "v_w": g_w("self_attn.v_proj.weight"), "v_b": b_or_0("self_attn.v_proj.bias", kv * hd),
                "o_w": g_w("self_attn.o_proj.weight"), "o_b": b_or_0("self_attn.o_proj.bias", d),
                "fc1_w": g_w("mlp.gate_proj.weight"), "fc1_b": b_or_0("mlp.gate_proj.bias", cfg.intermediate_size),
                "fc3_w": g_w("mlp.up_proj.weight"), "fc3_b": b_or_0("mlp.up_proj.bias", cfg.intermediate_size),
                "fc2_w": g_w("mlp.down_proj.weight"), "fc2_b": b_or_0("mlp.down_proj.bias", d),
            })
        wte = sd["model.embed_tokens.weight"]
        lm_head = sd.get("lm_head.weight", wte)
        inv_freq = 1.0 / (theta ** (torch.arange(0, hd, 2, dtype=torch.int64).to(torch.float32) / hd))
        g = Generator(False, heads, kv, hd, float(cfg.rms_norm_eps), wte, torch.zeros(0), inv_freq,
                      sd["model.norm.weight"], torch.zeros(0), lm_head, layers)
        facts = dict(layers=cfg.num_hidden_layers, kv_heads=kv, head_dim=hd, context=cfg.max_position_embeddings,
                     vocab=cfg.vocab_size)
    else:
        refuse(f"model_type {kind!r} is not implemented (gpt2, llama, mistral, qwen2 are)")
    eos = model.generation_config.eos_token_id if model.generation_config is not None else None
    if eos is None:
        eos = cfg.eos_token_id
    eos = [] if eos is None else ([eos] if isinstance(eos, int) else list(eos))
    facts["eos_token_ids"] = [int(e) for e in eos]
    return g.eval(), facts


def example(g, facts, dtype, device, b=2, t=3, c=8):
    shape = (facts["layers"], b, facts["kv_heads"], c, facts["head_dim"])
    return (torch.zeros(b, t, dtype=torch.int64, device=device),
            torch.arange(t, device=device).repeat(b, 1),
            torch.full((b,), t - 1, dtype=torch.int64, device=device),
            torch.zeros(shape, dtype=dtype, device=device), torch.zeros(shape, dtype=dtype, device=device))


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model_dir", help="a folder written by save_pretrained (config.json and the weights)")
    ap.add_argument("--pt2", help="the .pt2 package to write (stage kind aoti-generator)")
    ap.add_argument("--torchscript", help="the TorchScript file to write (stage kind torchscript-generator)")
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"], help="the device the .pt2 is compiled for")
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16", "float16"],
                    help="the weights' and the KV cache's dtype")
    args = ap.parse_args()
    if not args.pt2 and not args.torchscript:
        ap.error("give --pt2 OUT.pt2, --torchscript OUT.pt, or both")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import transformers

    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_pretrained(args.model_dir, dtype=torch.float32).eval()
    dtype = getattr(torch, args.dtype)
    g, facts = build(model)
    g = g.to(dtype)
    if not g.gpt2:  # the rope frequencies stay float32, as transformers keeps them
        g.inv_freq = g.inv_freq.to(torch.float32)
    meta = {"input_kind": "token_ids", "generator_contract": "1", "layers": str(facts["layers"]),
            "kv_heads": str(facts["kv_heads"]), "head_dim": str(facts["head_dim"]),
            "context": str(facts["context"]), "vocab": str(facts["vocab"]),
            "eos_token_ids": json.dumps(facts["eos_token_ids"]), "kv_dtype": args.dtype}
    with torch.no_grad():
        if args.torchscript:
            ts = torch.jit.script(Contract(g, facts, args.dtype))
            ts.save(args.torchscript, _extra_files={"torch_version": torch.__version__})
            print(f"{args.torchscript}: sha256 {sha256(args.torchscript)}")
        if args.pt2:
            g = g.to(args.device)
            batch, steps, cache = (torch.export.Dim("batch", min=1, max=1024), torch.export.Dim("steps", min=1, max=65536),
                                   torch.export.Dim("cache", min=1, max=1 << 20))
            shapes = ({0: batch, 1: steps}, {0: batch, 1: steps}, {0: batch}, {1: batch, 3: cache},
                      {1: batch, 3: cache})
            ep = torch.export.export(g, example(g, facts, dtype, args.device), dynamic_shapes=shapes)
            torch._inductor.aoti_compile_and_package(
                ep, package_path=args.pt2,
                inductor_configs={"aot_inductor.metadata": {f"pilot.{k}": v for k, v in meta.items()}})
            print(f"{args.pt2}: sha256 {sha256(args.pt2)}")


class Contract(torch.nn.Module):
    """A TorchScript module that carries the contract's facts as attributes around the step."""
    layers: int
    kv_heads: int
    head_dim: int
    context: int
    vocab: int
    eos_token_ids: List[int]
    input_kind: str
    generator_contract: int
    kv_dtype: str

    def __init__(self, step, facts, kv_dtype):
        super().__init__()
        self.step = step
        self.layers = facts["layers"]
        self.kv_heads = facts["kv_heads"]
        self.head_dim = facts["head_dim"]
        self.context = facts["context"]
        self.vocab = facts["vocab"]
        self.eos_token_ids = facts["eos_token_ids"]
        self.input_kind = "token_ids"
        self.generator_contract = 1
        self.kv_dtype = kv_dtype

    def forward(self, input_ids: torch.Tensor, positions: torch.Tensor, logits_at: torch.Tensor,
                k_cache: torch.Tensor, v_cache: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return self.step(input_ids, positions, logits_at, k_cache, v_cache)


if __name__ == "__main__":
    main()
