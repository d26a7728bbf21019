#!/usr/bin/python3
"""Trains the project's demo model and writes it as GGUF, in one command (a few minutes, CPU).

    /usr/bin/python3 tools/demo_model/train_demo_model.py --out models/demo/demo-stories.gguf

Steps: generate the corpus (corpus.py), learn the tokenizer on it (spm_tokenizer.py), encode
it the way llama.cpp will, train the Llama (model.py) on it, print samples, write the GGUF
(export_gguf.py) and a JSON log next to it (command, seed, versions, time, losses, samples).

Needs Debian's python3-torch and python3-numpy. Debian's torch calls the system BLAS; when
OpenBLAS is installed (libopenblas0-pthread), the script re-runs itself with OpenBLAS first on
LD_LIBRARY_PATH (about 8x faster than the reference BLAS that Debian selects by default),
whatever BLAS the system's alternatives select. Training is deterministic for a given seed,
thread count, torch build and BLAS.
"""

import argparse
import json
import os
import platform
import sys
import time

OPENBLAS_DIR = "/usr/lib/x86_64-linux-gnu/openblas-pthread"


def reexec_with_runtime_env(threads):
    """Runs the script again with the BLAS and thread settings in place before torch loads.

    One thread each for torch and OpenBLAS, and OpenMP threads that sleep instead of spinning:
    on 2 shared cores this trains ~5x faster than the defaults (OpenBLAS starting a thread per
    core under torch's OpenMP threads), and a single thread also keeps the result independent
    of the machine's core count."""
    if os.environ.get("DEMO_MODEL_ENV_SET"):
        return
    env = dict(os.environ, DEMO_MODEL_ENV_SET="1")
    env.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    env["OPENBLAS_NUM_THREADS"] = str(threads)
    env["OMP_NUM_THREADS"] = str(threads)
    if os.path.exists(os.path.join(OPENBLAS_DIR, "libblas.so.3")):
        env["LD_LIBRARY_PATH"] = OPENBLAS_DIR + (":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    os.execve(sys.executable, [sys.executable] + sys.argv, env)


def blas_in_use():
    try:
        with open("/proc/self/maps") as f:
            libs = {line.split()[-1] for line in f if "blas" in line}
        return sorted(lib for lib in libs if lib.startswith("/"))
    except OSError:
        return []


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="GGUF file to write")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--vocab", type=int, default=1024, help="largest vocabulary (the BPE may stop earlier)")
    ap.add_argument("--stories", type=int, default=6000)
    ap.add_argument("--dialogues", type=int, default=4000)
    ap.add_argument("--embd", type=int, default=128)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--ff", type=int, default=384)
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--seq", type=int, default=256, help="training sequence length")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--val-every", type=int, default=0, help="print the validation loss every N steps")
    ap.add_argument("--log", default=None, help="JSON log (default: OUT with .train.json)")
    return ap.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    reexec_with_runtime_env(args.threads)
    started = time.time()

    import numpy as np
    import torch
    import torch.nn.functional as F

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import corpus
    import spm_tokenizer as spm
    from export_gguf import write_gguf
    from model import Config, Llama

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)

    # ---- corpus and tokenizer ----
    docs = corpus.make_corpus(args.seed, args.stories, args.dialogues)
    texts = [text for text, _ in docs]
    pieces, scores = spm.train_bpe(texts, args.vocab)
    tok = spm.SPMTokenizer(pieces, scores)

    def encode_doc(text, kind):
        if kind == "chat":  # "...</s>\n": the last EOS ends the document
            return tok.encode(text[:-1])
        return tok.encode(text) + [spm.EOS]

    encoded = [encode_doc(t, k) for t, k in docs]
    # The chunked encoder must agree with llama.cpp's whole-text algorithm.
    for t, _ in docs[:200]:
        assert tok.encode(t, slow=True) == tok.encode(t), t
    n_val = max(1, len(encoded) // 50)
    val = np.array([i for doc in encoded[:n_val] for i in doc], dtype=np.int64)
    train = np.array([i for doc in encoded[n_val:] for i in doc], dtype=np.int64)
    print("corpus: %d documents, %d characters, %d tokens (%d train, %d validation), vocab %d"
          % (len(docs), sum(map(len, texts)), len(train) + len(val), len(train), len(val), len(tok)), flush=True)

    # ---- model ----
    cfg = Config(len(tok), n_embd=args.embd, n_layer=args.layers, n_head=args.heads, n_head_kv=args.kv_heads,
                 n_ff=args.ff, n_ctx=args.ctx)
    model = Llama(cfg)
    print("model: %d parameters" % model.n_params(), flush=True)
    decay = [p for p in model.parameters() if p.dim() == 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=args.lr, betas=(0.9, 0.95), eps=1e-8)

    def lr_at(step):
        if step < args.warmup:
            return args.lr * (step + 1) / args.warmup
        progress = (step - args.warmup) / max(1, args.steps - args.warmup)
        return args.lr * (0.1 + 0.9 * 0.5 * (1 + np.cos(np.pi * progress)))

    train_t = torch.from_numpy(train)
    gen = torch.Generator().manual_seed(args.seed)

    def batch():
        # Windows at random offsets of the concatenated documents: most hold one document's end
        # and the next one's BOS and beginning.
        starts = torch.randint(0, len(train_t) - args.seq - 1, (args.batch,), generator=gen)
        rows = torch.stack([train_t[s:s + args.seq + 1] for s in starts.tolist()])
        return rows[:, :-1], rows[:, 1:]

    @torch.no_grad()
    def val_loss():
        model.eval()
        v = torch.from_numpy(val)
        n = (len(v) - 1) // args.seq
        x = torch.stack([v[i * args.seq:(i + 1) * args.seq] for i in range(n)])
        y = torch.stack([v[i * args.seq + 1:(i + 1) * args.seq + 1] for i in range(n)])
        total = 0.0
        for i in range(0, n, 16):
            logits = model(x[i:i + 16])
            total += F.cross_entropy(logits.reshape(-1, cfg.n_vocab), y[i:i + 16].reshape(-1), reduction="sum").item()
        model.train()
        return total / (n * args.seq)

    losses = []
    t_train = time.time()
    model.train()
    for step in range(args.steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        x, y = batch()
        loss = F.cross_entropy(model(x).reshape(-1, cfg.n_vocab), y.reshape(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
        if step % 25 == 0 or step == args.steps - 1:
            recent = losses[-25:]
            extra = ""
            if args.val_every and step % args.val_every == 0 and step > 0:
                extra = "  validation %.4f" % val_loss()
            print("step %4d  loss %.4f  lr %.2e  %.0f s%s" % (step, sum(recent) / len(recent), lr_at(step),
                                                                time.time() - t_train, extra), flush=True)
    train_seconds = time.time() - t_train
    final_val = val_loss()
    print("validation loss %.4f (perplexity %.3f), training %.0f s" % (final_val, np.exp(final_val), train_seconds),
          flush=True)

    # ---- samples ----
    model.eval()
    samples = {}

    def show(label, prompt, n, temperature=0.0, seed=0):
        prompt_ids = tok.encode(prompt)
        g = torch.Generator().manual_seed(seed)
        out = model.generate(prompt_ids, n, temperature=temperature, eos=spm.EOS, generator=g)
        text = tok.decode([i for i in out if i != spm.EOS])
        samples[label] = {"prompt": prompt, "ids": out, "text": text,
                          "ended_at_eos": bool(out and out[-1] == spm.EOS)}
        print("--- %s\n%s%s\n" % (label, prompt, text), flush=True)

    show("greedy: Once upon a time", "Once upon a time", 200)
    show("sampled T=0.8 seed 1: Once upon a time", "Once upon a time", 200, 0.8, 1)
    show("sampled T=0.8 seed 2: One day", "One day", 200, 0.8, 2)
    show("chat greedy: Tell me a story about a cat.",
         "<|user|>\nTell me a story about a cat.</s>\n<|assistant|>\n", 300)
    show("chat sampled T=0.8 seed 3: Hello!",
         "<|system|>\nYou are a friendly storyteller.</s>\n<|user|>\nHello!</s>\n<|assistant|>\n", 60, 0.8, 3)

    # ---- export ----
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    command = "/usr/bin/python3 tools/demo_model/train_demo_model.py " + " ".join(sys.argv[1:])
    description = ("Demo model trained by this project on its own generated stories and chats "
                   "(tools/demo_model, seed %d)" % args.seed)
    write_gguf(args.out, model, tok, corpus.CHAT_TEMPLATE, "demo-stories", description)
    log = {
        "command": command,
        "seed": args.seed,
        "threads": args.threads,
        "args": vars(args),
        "versions": {"python": platform.python_version(), "torch": torch.__version__, "numpy": np.__version__,
                     "blas": blas_in_use()},
        "corpus": {"documents": len(docs), "characters": sum(map(len, texts)), "train_tokens": int(len(train)),
                   "validation_tokens": int(len(val)), "vocab": len(tok)},
        "model": {"parameters": model.n_params(), "n_vocab": cfg.n_vocab, "n_embd": cfg.n_embd,
                  "n_layer": cfg.n_layer, "n_head": cfg.n_head, "n_head_kv": cfg.n_head_kv, "n_ff": cfg.n_ff,
                  "n_ctx": cfg.n_ctx, "tied_embeddings": cfg.tied},
        "file_bytes": os.path.getsize(args.out),
        "train_seconds": round(train_seconds, 1),
        "total_seconds": round(time.time() - started, 1),
        "final_train_loss_last25": round(sum(losses[-25:]) / len(losses[-25:]), 4),
        "validation_loss": round(final_val, 4),
        "loss_every_25_steps": [round(losses[i], 4) for i in range(0, len(losses), 25)],
        "samples": samples,
    }
    log_path = args.log or os.path.splitext(args.out)[0] + ".train.json"
    with open(log_path, "w") as f:
        json.dump(log, f, indent=1, ensure_ascii=False)
        f.write("\n")
    print("wrote %s (%d bytes) and %s in %.0f s" % (args.out, log["file_bytes"], log_path, log["total_seconds"]))


if __name__ == "__main__":
    main()
