#!/usr/bin/env python3
"""The Python side of bench/generation-vs-hf.sh (docs/generation.md, "Speed against Hugging Face").

    generation-hf.py setup OUT
        OUT/gpt2: the parity test's GPT-2-style model (tests/e2e/data/generation_models.py make: 2
        layers, width 64, 4 heads, context 128, random weights) and OUT/gpt2-256: a larger one (4
        layers, width 256, context 256), both over that script's 300-id byte-level BPE tokenizer
        (OUT/tokenizer.json); OUT/gpt2-prompts/ and OUT/reverse-prompts/: 200 prompts each with a
        manifest.json (lines of the GPL-3 text Debian ships, cut to 8..40 tokens; random words of
        2..12 letters and "=" for the bundled reverse-gpt2).
    generation-hf.py hf MODEL_DIR TOKENIZER MANIFEST MAX_NEW BATCH THREADS OUT.json [--eos]
        Hugging Face's generate(do_sample=False, use_cache=True) under inference_mode, the
        manifest's prompts in order in batches of BATCH (left-padded, as generate wants), with
        end-of-sequence ignored so that every prompt gets MAX_NEW tokens, on THREADS intra-op
        threads, fp32 (--eos: each sequence ends at the model's end-of-sequence id, generate padding it
        until its batch ends; its tokens are counted up to that id). Timed: the generate calls alone, after one untimed warm-up batch. TTFT per
        batch: a generate of one token on the same batch; TPOT: (batch time - TTFT) / (MAX_NEW - 1).
        Then, untimed, the same calls with the logits kept: each prompt's tokens and the top-2
        margin at each step, for `check`.
    generation-hf.py check OUT.json RESULTS
        pilot's completion_ids against the reference's, token for token: a completion that differs
        first where the reference's top-2 margin is below 1e-4, or at a step pilot marked a
        near-tie, is a near-tie (counted, listed); any other difference fails.
"""
import hashlib
import json
import os
import random
import statistics
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
import transformers
from tokenizers import Tokenizer

NEAR_TIE = 1e-4
root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def write_prompts(folder, texts):
    os.makedirs(folder, exist_ok=True)
    items = []
    for i, text in enumerate(texts):
        data = text.encode()
        open(os.path.join(folder, f"p{i:03d}.txt"), "wb").write(data)
        items.append({"id": f"p{i:03d}", "path": f"p{i:03d}.txt", "sha256": hashlib.sha256(data).hexdigest()})
    json.dump({"name": os.path.basename(folder), "items": items}, open(os.path.join(folder, "manifest.json"), "w"))


def setup(out):
    sys.path.insert(0, os.path.join(root, "tests/e2e/data"))
    import generation_models
    generation_models.make(os.path.join(out, "made"))
    os.replace(os.path.join(out, "made/tokenizer.json"), os.path.join(out, "tokenizer.json"))
    os.replace(os.path.join(out, "made/gpt2"), os.path.join(out, "gpt2"))
    tok = Tokenizer.from_file(os.path.join(out, "tokenizer.json"))
    torch.manual_seed(3)
    gpt2 = transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=300, n_positions=256, n_embd=256, n_layer=4, n_head=4, initializer_range=0.05,
        bos_token_id=0, eos_token_id=0))
    gpt2.save_pretrained(os.path.join(out, "gpt2-256"))
    rng = random.Random(7)
    lines = [l.strip() for l in open("/usr/share/common-licenses/GPL-3") if len(l.strip()) > 20]
    texts = []
    while len(texts) < 200:
        ids = tok.encode(rng.choice(lines)).ids[: rng.randint(8, 40)]
        texts.append(tok.decode(ids))
    write_prompts(os.path.join(out, "gpt2-prompts"), texts)
    words = ["".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(rng.randint(2, 12))) + "="
             for _ in range(200)]
    write_prompts(os.path.join(out, "reverse-prompts"), words)


def prompts(tokenizer, manifest):
    tok = Tokenizer.from_file(tokenizer)
    base = os.path.dirname(os.path.abspath(manifest))
    items = json.load(open(manifest))["items"]
    return [(i["id"], tok.encode(open(os.path.join(base, i["path"]), encoding="utf-8").read()).ids) for i in items]


def batches(items, batch):
    for b in range(0, len(items), batch):
        part = items[b:b + batch]
        width = max(len(ids) for _, ids in part)
        ids = torch.tensor([[0] * (width - len(x)) + x for _, x in part])
        mask = torch.tensor([[0] * (width - len(x)) + [1] * len(x) for _, x in part])
        yield part, ids, mask


def hf(model_dir, tokenizer, manifest, max_new, batch, threads, out, eos=False):
    torch.set_num_threads(threads)
    model = transformers.AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    eos_id = model.generation_config.eos_token_id
    if not eos:
        model.generation_config.eos_token_id = None  # every prompt gets max_new tokens, as pilot's ignore_eos
    model.generation_config.pad_token_id = 0
    items = prompts(tokenizer, manifest)
    kw = dict(do_sample=False, use_cache=True)
    with torch.inference_mode():
        _, ids, mask = next(batches(items, batch))
        model.generate(ids, attention_mask=mask, max_new_tokens=max_new, **kw)  # warm-up
        ttft, tpot, total = [], [], 0.0
        for part, ids, mask in batches(items, batch):
            t0 = time.perf_counter()
            model.generate(ids, attention_mask=mask, max_new_tokens=1, **kw)
            first = time.perf_counter() - t0
            t0 = time.perf_counter()
            model.generate(ids, attention_mask=mask, max_new_tokens=max_new, **kw)
            whole = time.perf_counter() - t0
            total += whole
            ttft += [first * 1000] * len(part)
            tpot += [(whole - first) * 1000 / (max_new - 1)] * len(part)
        tokens = {}
        for part, ids, mask in batches(items, batch):
            o = model.generate(ids, attention_mask=mask, max_new_tokens=max_new, output_logits=True,
                               return_dict_in_generate=True, **kw)
            for row, (item, _) in enumerate(part):
                margins = []
                for step in o.logits:
                    top2 = torch.topk(step[row].float(), 2).values
                    margins.append(float(top2[0] - top2[1]))
                new = o.sequences[row, ids.shape[1]:].tolist()
                if eos and eos_id in new:
                    new = new[:new.index(eos_id) + 1]
                tokens[item] = {"ids": new, "margins": margins}
    n = sum(len(t["ids"]) for t in tokens.values())
    q = lambda v, p: statistics.quantiles(v, n=100, method="inclusive")[p - 1]
    res = {"prompts": len(items), "tokens": n, "seconds": total, "tokens_per_s": n / total,
           "ttft_ms": {"p50": q(ttft, 50), "p99": q(ttft, 99)}, "tpot_ms": {"p50": q(tpot, 50), "p99": q(tpot, 99)},
           "completions": tokens}
    json.dump(res, open(out, "w"))


def check(ref_file, results):
    ref = json.load(open(ref_file))["completions"]
    same = ties = 0
    listed = []
    for line in open(results):
        r = json.loads(line)
        assert r["status"] == "accepted", r
        got, want = r["completion_ids"], ref[r["id"]]["ids"]
        if got == want:
            same += 1
            continue
        step = next(k for k in range(min(len(got), len(want))) if got[k] != want[k])
        margin = ref[r["id"]]["margins"][step]
        if margin >= NEAR_TIE and step not in r.get("near_tie_steps", []):
            sys.exit(f"{r['id']}: token {step} is {got[step]}, the reference's {want[step]} (margin {margin:.3g}): "
                     "not a near-tie")
        ties += 1
        listed.append(f"{r['id']}@{step}")
    print(f"{same} identical, {ties} near-ties" + (f" ({', '.join(listed)})" if listed else ""))


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "setup":
        setup(sys.argv[2])
    elif cmd == "hf":
        hf(sys.argv[2], sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6]), int(sys.argv[7]), sys.argv[8],
           "--eos" in sys.argv[9:])
    elif cmd == "check":
        check(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
