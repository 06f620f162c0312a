#!/usr/bin/env python3
"""Trains pilot's bundled generator (data/models/reverse-gpt2): a tiny GPT-2 (transformers'
GPT2LMHeadModel, 2 layers, width 64) that reverses a word of 3 to 10 lowercase letters:
the prompt "pilot=" gives the completion "tolip", then <|endoftext|>. Its tokenizer is a
byte-level BPE without merges (one token a byte, 256 + <|endoftext|> = 257 ids) with the
ByteLevel decoder, written with Hugging Face tokenizers. The task's answers can be checked,
so the generation pilot's exact-match rate means something.

    train.py OUT_DIR [--steps N] [--seed N]

Deterministic for a given torch build and CPU (one thread, seeded); tools/generator/rebuild.sh
runs it and exports the TorchScript model pilot runs. Writes OUT_DIR/{config.json,
generation_config.json, model.safetensors, tokenizer.json, metrics.json}.
"""
import argparse
import json
import os
import random
import string
import sys
import time

import torch

LETTERS = string.ascii_lowercase


def word(rng):
    return "".join(rng.choice(LETTERS) for _ in range(rng.randint(3, 10)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--steps", type=int, default=2500)
    ap.add_argument("--seed", type=int, default=20261204)
    args = ap.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import transformers
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    torch.set_num_threads(1)
    torch.manual_seed(args.seed)
    rng = random.Random(args.seed)
    os.makedirs(args.out, exist_ok=True)

    # The tokenizer: every byte its own token (ids 0..255 in ByteLevel's alphabet order), no merges.
    byte_chars = {}
    # GPT-2's bytes_to_unicode, which ByteLevel uses: the printable bytes map to themselves.
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    byte_chars = {b: chr(c) for b, c in zip(bs, cs)}
    vocab = {byte_chars[b]: b for b in range(256)}
    eos = "<|endoftext|>"
    tok = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    tok.decoder = decoders.ByteLevel()
    tok.add_special_tokens([eos])
    eos_id = tok.token_to_id(eos)
    assert eos_id == 256 and tok.get_vocab_size() == 257
    tok.save(os.path.join(args.out, "tokenizer.json"))

    cfg = transformers.GPT2Config(vocab_size=257, n_positions=48, n_embd=64, n_layer=2, n_head=4,
                                  bos_token_id=eos_id, eos_token_id=eos_id, pad_token_id=eos_id,
                                  resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0)
    model = transformers.GPT2LMHeadModel(cfg)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, total_steps=args.steps, pct_start=0.1)
    batch = 64

    def example(w):
        prompt = tok.encode(w + "=").ids
        answer = tok.encode(w[::-1]).ids + [eos_id]
        return prompt, answer

    start = time.time()
    model.train()
    for step in range(args.steps):
        rows = [example(word(rng)) for _ in range(batch)]
        width = max(len(p) + len(a) for p, a in rows)
        ids = torch.full((batch, width), eos_id)
        labels = torch.full((batch, width), -100)
        mask = torch.zeros(batch, width, dtype=torch.long)
        for i, (p, a) in enumerate(rows):
            seq = p + a
            ids[i, :len(seq)] = torch.tensor(seq)
            mask[i, :len(seq)] = 1
            labels[i, len(p):len(seq)] = torch.tensor(a)  # the loss on the completion alone
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        if step % 250 == 0 or step == args.steps - 1:
            print(f"step {step}: loss {loss.item():.4f} ({time.time() - start:.0f} s)", file=sys.stderr)
    model.eval()
    # Held-out words, greedy, as pilot decodes.
    held = random.Random(args.seed + 1)
    words = [word(held) for _ in range(500)]
    correct = 0
    with torch.no_grad():
        for w in words:
            p, _ = example(w)
            out = model.generate(torch.tensor([p]), attention_mask=torch.ones(1, len(p), dtype=torch.long),
                                 do_sample=False, max_new_tokens=16, pad_token_id=eos_id)
            got = tok.decode(out[0, len(p):].tolist(), skip_special_tokens=True)
            correct += got == w[::-1]
    model.save_pretrained(args.out)
    metrics = {"steps": args.steps, "batch": batch, "seed": args.seed, "final_loss": round(loss.item(), 6),
               "held_out_words": len(words), "held_out_exact_match": correct / len(words),
               "train_seconds": round(time.time() - start, 1), "torch": torch.__version__,
               "transformers": transformers.__version__}
    with open(os.path.join(args.out, "metrics.json"), "w") as f:
        json.dump(metrics, f, indent=2)
        f.write("\n")
    print(json.dumps(metrics), file=sys.stderr)


if __name__ == "__main__":
    main()
