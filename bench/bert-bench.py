#!/usr/bin/env python3
"""pilot's transformer path against the Python pipeline a user would write (bench/bert-peer.py:
Hugging Face tokenizers' encode_batch, then the transformers model under torch.inference_mode),
on N texts on the CPU, for two models:

  bundled   data/models/langid-bert (config/bert.json's model: 2 layers, hidden size 64);
  bert-4x256  a BERT with 4 layers, hidden size 256, 4 heads, 128 positions (random weights,
            seeded), exported by docs/models.md's lines, with the bundled tokenizer.

Both sides: the same texts in the same order, batch --batch-size, --threads intra-op threads,
max_length 128 with truncation, on this machine's cores. Each figure is a whole command's wall
time, start-up and model load included, over --pairs pairs whose order alternates; the ratio
is the median of the pairs. Every item's category must be the same and its probability within
1e-4, or the bench fails. Also printed: the tokenization share of each side's time, and
tokenization on one core, pilot (`pilot-bench tokenize`) against tokenizers with
RAYON_NUM_THREADS=1.

    build/venv/bin/python bench/bert-bench.py PILOT PILOT_BENCH WORK_DIR [--texts N] [--pairs P]

bench/bert-bench.sh builds the release preset and runs this.
"""
import argparse
import hashlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BUNDLED = ROOT / "data/models/langid-bert"
PY = sys.executable


def make_texts(work: Path, n: int, seed: int):
    """N texts of one to four sentences: the bundled documents' (eight languages) and the GPL's."""
    import re

    sentences = []
    for i in range(1, 9):
        text = (ROOT / f"data/pilot/doc-0{i}.txt").read_text(encoding="utf-8")
        sentences += [s.strip() for s in re.split(r"(?<=[.!?\u3002])\s*", text) if len(s.strip()) > 3]
    gpl = Path("/usr/share/common-licenses/GPL-3")
    if gpl.exists():
        paragraph = " ".join(gpl.read_text(encoding="utf-8").split())
        sentences += [s for s in re.split(r"(?<=[.;])\s+", paragraph) if 20 < len(s) < 400][:400]
    rng = random.Random(seed)
    texts_dir = work / "texts"
    texts_dir.mkdir(parents=True, exist_ok=True)
    texts, items = [], []
    for i in range(n):
        text = " ".join(rng.choice(sentences) for _ in range(rng.randint(1, 4)))
        name = f"t-{i:06d}.txt"
        (texts_dir / name).write_text(text, encoding="utf-8")
        texts.append(text)
        items.append({"id": f"t-{i:06d}", "path": name, "sha256": hashlib.sha256(text.encode()).hexdigest()})
    (texts_dir / "manifest.json").write_text(json.dumps({"name": "bert-bench", "items": items}))
    with open(work / "texts.jsonl", "w", encoding="utf-8") as f:
        for t in texts:
            f.write(json.dumps(t, ensure_ascii=False) + "\n")
    return texts


def make_larger(work: Path):
    """bert-4x256: random weights (seed 0), saved with save_pretrained, exported as model.pt."""
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    out = work / "bert-4x256-init0.2"
    if (out / "model.pt").exists():
        return out
    labels = json.loads((BUNDLED / "config.json").read_text())["id2label"]
    labels = [labels[str(i)] for i in range(len(labels))]
    torch.manual_seed(0)
    # initializer_range 0.2, not BERT's 0.02: random weights at 0.02 give every text nearly the
    # same 1/16 probabilities, which would make the 1e-4 comparison check little. At 0.2 the top
    # probabilities spread from about 0.3 to 0.95 over several labels.
    cfg = BertConfig(vocab_size=json.loads((BUNDLED / "config.json").read_text())["vocab_size"], hidden_size=256,
                     num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024, max_position_embeddings=128,
                     type_vocab_size=1, num_labels=len(labels), id2label=dict(enumerate(labels)),
                     label2id={l: i for i, l in enumerate(labels)}, initializer_range=0.2)
    BertForSequenceClassification(cfg).eval().save_pretrained(str(out))
    sys.path.insert(0, str(ROOT / "tools/langid"))
    from export_torchscript import export  # docs/models.md's export lines

    export(out, out / "model.pt")
    return out


def timed(cmd, env=None):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    took = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"bert-bench: {' '.join(map(str, cmd))} exited {p.returncode}:\n{p.stdout}\n{p.stderr}")
    return took, p.stdout


def one_core_tokenize(tokenizer: Path, texts_file: Path, repeat=3):
    code = (
        "import json,sys,time\nfrom tokenizers import Tokenizer\n"
        "t=Tokenizer.from_file(sys.argv[1]); x=[json.loads(l) for l in open(sys.argv[2],encoding='utf-8')]\n"
        "best=None\nfor _ in range(int(sys.argv[3])):\n"
        "  t0=time.perf_counter(); e=t.encode_batch(x); s=time.perf_counter()-t0; best=s if best is None else min(best,s)\n"
        "print(json.dumps({'seconds':best,'tokens':sum(len(i.ids) for i in e),'id_sum':sum(sum(i.ids) for i in e)}))\n"
    )
    env = dict(os.environ, RAYON_NUM_THREADS="1")
    _, out = timed([PY, "-c", code, str(tokenizer), str(texts_file), str(repeat)], env)
    return json.loads(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pilot")
    ap.add_argument("pilot_bench")
    ap.add_argument("work")
    ap.add_argument("--texts", type=int, default=10_000)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=32)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cores", type=int, default=2, help="CPUs both sides are pinned to")
    ap.add_argument("--model", action="append", choices=["bundled", "bert-4x256"])
    a = ap.parse_args()
    work = Path(a.work).resolve()
    work.mkdir(parents=True, exist_ok=True)
    shutil.rmtree(work / "runs", ignore_errors=True)  # pilot never reuses a run folder
    # Both sides on the same cores: the first --cores of those this process may use (the
    # children inherit the affinity; tokenizers' encode_batch would otherwise use them all).
    cores = sorted(os.sched_getaffinity(0))[: a.cores]
    os.sched_setaffinity(0, cores)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("PYTHONWARNINGS", "ignore")
    texts = make_texts(work, a.texts, 20261203)
    manifest = work / "texts/manifest.json"
    tokenizer = BUNDLED / "tokenizer.json"
    tok_sha = hashlib.sha256(tokenizer.read_bytes()).hexdigest()

    # Tokenization on one core: the bundled tokenizer (the BERT family) on these texts.
    ref = one_core_tokenize(tokenizer, work / "texts.jsonl")
    _, out = timed([a.pilot_bench, "tokenize", str(tokenizer), str(work / "texts.jsonl"), "--repeat", "3"])
    mine = json.loads(out)
    if (mine["tokens"], mine["id_sum"]) != (ref["tokens"], ref["id_sum"]):
        sys.exit(f"bert-bench: pilot's ids differ from tokenizers' ({mine} against {ref})")
    print(f"texts: {len(texts)}, {ref['tokens']} tokens untruncated; batch {a.batch_size}, {a.threads} threads,"
          f" pinned to CPUs {','.join(map(str, cores))}")
    print(f"tokenization on one core (bundled WordPiece): tokenizers {len(texts) / ref['seconds']:,.0f} texts/s,"
          f" pilot {len(texts) / mine['seconds']:,.0f} texts/s: {ref['seconds'] / mine['seconds']:.2f}x")

    rows = []
    for name in a.model or ["bundled", "bert-4x256"]:
        model_dir = BUNDLED if name == "bundled" else make_larger(work)
        labels = list(json.loads((model_dir / "config.json").read_text())["id2label"].values())
        params = work / f"{name}.json"
        params.write_text(json.dumps({
            "manifest": str(manifest),
            "stage": {"kind": "torchscript-classifier", "model": str(model_dir / "model.pt"),
                      "tokenizer": {"file": str(tokenizer), "sha256": tok_sha, "max_length": 128,
                                    "truncation": "truncate"}},
            "allowed_categories": labels,
            "device": "cpu", "batch_size": a.batch_size, "threads": a.threads, "prepare_threads": 1}))
        pilot_s, peer_s, ratios, peer_figs = [], [], [], []
        for pair in range(a.pairs):
            def run_pilot():
                t, _ = timed([a.pilot, "run", "--params", str(params), "--runs-dir", str(work / "runs"),
                              "--run-id", f"{name}-{pair}", "-q"])
                return t

            def run_peer():
                t, out = timed([PY, str(ROOT / "bench/bert-peer.py"), str(model_dir), str(tokenizer), str(manifest),
                                str(work / f"peer-{name}.jsonl"), "--batch-size", str(a.batch_size),
                                "--threads", str(a.threads), "--max-length", "128"])
                return t, json.loads(out)

            if pair % 2 == 0:
                p = run_pilot()
                q, fig = run_peer()
            else:
                q, fig = run_peer()
                p = run_pilot()
            pilot_s.append(p)
            peer_s.append(q)
            ratios.append(q / p)
            peer_figs.append(fig)
            print(f"  {name} pair {pair + 1}: pilot {p:.2f} s, python {q:.2f} s: {q / p:.2f}x", flush=True)
        # The outputs, item by item.
        got = {}
        for line in open(work / f"runs/{name}-0/data/results.jsonl"):
            r = json.loads(line)
            got[r["id"]] = r
        worst, differ = 0.0, 0
        for line in open(work / f"peer-{name}.jsonl"):
            r = json.loads(line)
            g = got[r["id"]]
            if g.get("status") != "accepted" or g["category"] != r["category"]:
                differ += 1
                continue
            worst = max(worst, abs(g["confidence"] - r["confidence"]))
        if differ or worst >= 1e-4 or len(got) != len(texts):
            sys.exit(f"bert-bench: {name}: {differ} items differ in category, largest |pilot - python| {worst:.3g}")
        report = json.loads((work / f"runs/{name}-0/data/report.json").read_text())
        p_med, q_med, r_med = statistics.median(pilot_s), statistics.median(peer_s), statistics.median(ratios)
        tok_med = statistics.median(f["tokenize_seconds"] for f in peer_figs)
        model_med = statistics.median(f["model_seconds"] for f in peer_figs)
        share_med = statistics.median(f["tokenize_seconds"] / q for f, q in zip(peer_figs, peer_s))
        rows.append({"model": name, "pilot_s": pilot_s, "python_s": peer_s, "ratio_median": r_med,
                     "max_abs_diff": worst, "python_tokenize_s": [f["tokenize_seconds"] for f in peer_figs],
                     "python_model_s": [f["model_seconds"] for f in peer_figs],
                     "python_tokenize_share_median": share_med, "pilot_tokenize_one_core_s": mine["seconds"],
                     "pilot_tokens": report["tokens"]})
        print(f"{name}: pilot {len(texts) / p_med:,.0f} texts/s ({p_med:.2f} s), python {len(texts) / q_med:,.0f}"
              f" texts/s ({q_med:.2f} s): **{r_med:.2f}x** (median of {a.pairs}); categories equal,"
              f" largest |pilot - python| probability {worst:.2g}")
        print(f"  tokenization share: python {100 * share_med:.1f}% of its time (median over the pairs;"
              f" encode_batch {tok_med:.2f} s, model {model_med:.2f} s); pilot about {100 * mine['seconds'] / p_med:.1f}%"
              f" (an estimate: {mine['seconds']:.2f} s, pilot-bench tokenize on one core over the same texts,"
              f" against the run's median; pilot tokenizes on its prepare thread, beside the model)")
    (work / "bert-bench.json").write_text(json.dumps({"texts": len(texts), "tokenize_one_core": {
        "tokenizers_s": ref["seconds"], "pilot_s": mine["seconds"]}, "rows": rows}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
