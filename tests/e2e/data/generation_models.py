#!/usr/bin/env python3
"""The generation parity test's Python side (e2e.generation_parity, docs/generation.md "Parity").

    generation_models.py make OUT_DIR
        A byte-level BPE tokenizer (300 ids, <|endoftext|> among them, trained on the GPL-3 text
        Debian ships) and two transformers models with random weights saved with save_pretrained:
        OUT_DIR/gpt2 (GPT2LMHeadModel) and OUT_DIR/llama (LlamaForCausalLM, 4 attention heads over
        2 key/value heads: grouped-query attention).
    generation_models.py compare MODEL_DIR TOKENIZER MANIFEST RESULTS MAX_NEW_TOKENS [--labelled]
        Hugging Face's generate(do_sample=False) on each prompt alone (no padding), against
        pilot's accepted records in RESULTS (results.jsonl), token for token. A difference is a
        near-tie when the reference's top-2 logit margin at that step is below 1e-4 (fp32): it is
        counted and listed, and the rest of that completion is not compared. Any other difference
        fails. The completion's text must equal tokenizers' decode of its ids (the end-of-sequence
        token left out). With --labelled, every item of MANIFEST must also meet its `expected`
        completion or its `expected_rejection`. Prints one summary line.
    generation_models.py kvmodel OUT_DIR
        The KV benchmark's model (bench/generation-kv.sh): a Llama-style model with random
        weights, 4 layers, 8 key/value heads of 64, a context of 16384, its final norm zeroed so
        that every logit is 0 and greedy decoding picks id 0 at once (with stop_token_ids [0], a
        sequence ends after one token while its cache is allocated for the whole
        max_new_tokens), with the tokenizer of `make`.
    generation_models.py broken MODEL_DIR OUT_DIR
        TorchScript generators that break the contract, from MODEL_DIR's weights, each OUT_DIR/NAME.pt
        beside NAME.want: "refused:TEXT" (pilot must refuse it when loaded, exit 2, saying TEXT) or
        "rejected:TEXT" (its items rejected, TEXT in their records).
"""
import json
import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
import torch
import transformers
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

NEAR_TIE = 1e-4


def make(out):
    os.makedirs(out, exist_ok=True)
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=300, initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  special_tokens=["<|endoftext|>"], show_progress=False)
    tok.train_from_iterator(open("/usr/share/common-licenses/GPL-3").read().splitlines(), trainer)
    tok.save(os.path.join(out, "tokenizer.json"))
    # eos: a common token (the space before a word), so that some completions end on it.
    eos = tok.token_to_id("Ġ")
    torch.manual_seed(0)
    gpt2 = transformers.GPT2LMHeadModel(transformers.GPT2Config(
        vocab_size=300, n_positions=128, n_embd=64, n_layer=2, n_head=4, initializer_range=0.2,
        bos_token_id=eos, eos_token_id=eos))
    gpt2.save_pretrained(os.path.join(out, "gpt2"))
    torch.manual_seed(1)
    llama = transformers.LlamaForCausalLM(transformers.LlamaConfig(
        vocab_size=300, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
        num_key_value_heads=2, max_position_embeddings=128, initializer_range=0.2, bos_token_id=eos,
        eos_token_id=eos, pad_token_id=0))
    llama.save_pretrained(os.path.join(out, "llama"))
    print(f"made {out}: tokenizer (300 ids, eos {eos}), gpt2, llama (4 heads, 2 kv heads)")


def compare(model_dir, tokenizer, manifest_file, results, max_new, labelled=False):
    tok = Tokenizer.from_file(tokenizer)
    model = transformers.AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    eos = model.generation_config.eos_token_id
    eos = set([eos] if isinstance(eos, int) else eos or [])
    manifest = {i["id"]: i for i in json.load(open(manifest_file))["items"]}
    inputs = os.path.dirname(os.path.abspath(manifest_file))
    records = [json.loads(line) for line in open(results)]
    accepted = [r for r in records if r["status"] == "accepted"]
    assert accepted, "no accepted completion to compare"
    same = ties = tokens = 0
    listed = []
    for r in accepted:
        ids = tok.encode(open(os.path.join(inputs, manifest[r["id"]]["path"]), encoding="utf-8").read()).ids
        assert len(ids) == r["tokens"], (r["id"], len(ids), r["tokens"])
        with torch.inference_mode():
            out = model.generate(torch.tensor([ids]), attention_mask=torch.ones(1, len(ids), dtype=torch.long),
                                 do_sample=False, max_new_tokens=max_new, output_logits=True,
                                 return_dict_in_generate=True, pad_token_id=0)
        ref = out.sequences[0, len(ids):].tolist()
        got = r["completion_ids"]
        tokens += len(ref)
        if got == ref:
            same += 1
        else:
            step = next(k for k in range(min(len(got), len(ref)) + 1)
                        if k == len(got) or k == len(ref) or got[k] != ref[k])
            assert step < len(out.logits), f"{r['id']}: the completions differ in length only: {got} against {ref}"
            top2 = torch.topk(out.logits[step][0].float(), 2).values
            margin = float(top2[0] - top2[1])
            if margin >= NEAR_TIE:
                sys.exit(f"{r['id']}: pilot's token {step} is {got[step] if step < len(got) else 'none'}, the "
                         f"reference's {ref[step]} (margin {margin:.3g}): not a near-tie\n pilot {got}\n ref   {ref}")
            ties += 1
            listed.append(f"{r['id']} at token {step} (margin {margin:.2e})")
        shown = got[:-1] if got and got[-1] in eos and r["finish_reason"] == "eos" else got
        want = tok.decode(shown, skip_special_tokens=True)
        assert r["completion"] == want, (r["id"], r["completion"], want)
        reason = "eos" if got[-1] in eos else "length"
        assert r["finish_reason"] == reason, (r["id"], r["finish_reason"], reason)
    if labelled:
        for r in records:
            item = manifest[r["id"]]
            if "expected" in item:
                assert r["status"] == "accepted" and r["completion"] == item["expected"], (r["id"], r)
            else:
                assert r["status"] == "rejected" and r["reason"] == item["expected_rejection"], (r["id"], r)
    print(f"parity {os.path.basename(model_dir.rstrip('/'))}: {len(accepted)} completions, {tokens} reference tokens, "
          f"{same} identical, {ties} near-ties" + (": " + "; ".join(listed) if listed else ""))


def kvmodel(out):
    make(out)
    torch.manual_seed(2)
    llama = transformers.LlamaForCausalLM(transformers.LlamaConfig(
        vocab_size=300, hidden_size=512, intermediate_size=1024, num_hidden_layers=4, num_attention_heads=8,
        num_key_value_heads=8, max_position_embeddings=16384, bos_token_id=1, eos_token_id=2, pad_token_id=0))
    with torch.no_grad():
        llama.model.norm.weight.zero_()
    llama.save_pretrained(os.path.join(out, "kv"))
    print(f"made {out}/kv: 4 layers, 8 kv heads of 64, context 16384; 16 KiB of float32 KV a position")


def broken(model_dir, out):
    import importlib.util
    from typing import Tuple
    spec = importlib.util.spec_from_file_location(
        "export_generator", os.path.join(os.path.dirname(__file__), "../../../scripts/export-generator.py"))
    ex = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(ex)
    model = transformers.AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32).eval()
    g, facts = ex.build(model)
    os.makedirs(out, exist_ok=True)

    class NanLogits(torch.nn.Module):
        def __init__(self, step):
            super().__init__()
            self.step = step

        def forward(self, ids: torch.Tensor, pos: torch.Tensor, at: torch.Tensor, k: torch.Tensor,
                    v: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
            logits, nk, nv = self.step(ids, pos, at, k, v)
            return logits * float("nan"), nk, nv

    class FailsOnPrompts(torch.nn.Module):
        def __init__(self, step):
            super().__init__()
            self.step = step

        def forward(self, ids: torch.Tensor, pos: torch.Tensor, at: torch.Tensor, k: torch.Tensor,
                    v: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
            if ids.size(1) > 1:
                raise RuntimeError("this step takes one token at a time")
            return self.step(ids, pos, at, k, v)

    def save(name, step, want, **override):
        f = dict(facts, **{k: v for k, v in override.items() if k in facts})
        c = ex.Contract(step, f, override.get("kv_dtype", "float32"))
        for key in ("generator_contract", "input_kind"):
            if key in override:
                setattr(c, key, override[key])
        script = torch.jit.script(c)
        if "drop" in override:  # an attribute left out: script a copy of the class without it
            script = None
            cls = type("Partial", (ex.Contract,), {"__annotations__": {
                k: v for k, v in ex.Contract.__annotations__.items() if k != override["drop"]}})
            c = cls.__new__(cls)
            torch.nn.Module.__init__(c)
            c.step = step
            for k in cls.__annotations__:
                setattr(c, k, getattr(ex.Contract(step, f, "float32"), k))
            script = torch.jit.script(c)
        script.save(os.path.join(out, name + ".pt"))
        open(os.path.join(out, name + ".want"), "w").write(want)

    save("huge-layers", g, "refused:the model's layers 2000 is outside 1..1024", layers=2000)
    save("huge-context", g, "refused:the model's context 1073741824 is outside 1..16777216", context=1 << 30)
    save("eos-outside", g, "refused:the model's eos token id 300 is outside its vocabulary of 257",
         eos_token_ids=[300])
    save("kv-int8", g, "refused:the model's kv_dtype 'int8' is not float32, bfloat16 or float16", kv_dtype="int8")
    save("contract-2", g, "refused:the model follows generator contract 2", generator_contract=2)
    save("wrong-vocab", g, "refused:the model's logits have shape [1, 257], expected [1, 300]", vocab=300)
    save("no-eos", g, "refused:the model has no 'eos_token_ids' attribute", drop="eos_token_ids")
    save("huge-cache", g, "refused:out of memory: the KV cache of 1 sequences of 2 positions needs 1099511627776 bytes",
         layers=1024, kv_heads=1024, head_dim=65536)
    save("nan-logits", NanLogits(g), "rejected:the model's logits are not finite")
    save("fails-on-prompts", FailsOnPrompts(g), "rejected:stage_error")
    print(f"made {out}: 10 broken generators")


if __name__ == "__main__":
    if sys.argv[1] == "make":
        make(sys.argv[2])
    elif sys.argv[1] == "compare":
        compare(sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5], int(sys.argv[6]), "--labelled" in sys.argv)
    elif sys.argv[1] == "kvmodel":
        kvmodel(sys.argv[2])
    elif sys.argv[1] == "broken":
        broken(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
