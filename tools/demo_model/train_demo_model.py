#!/usr/bin/python3
"""Trains the project's demo model and writes it as GGUF, in one command (a few minutes, CPU).

    /usr/bin/python3 tools/demo_model/train_demo_model.py --out models/demo/demo-stories.gguf

Steps: generate the corpus (corpus.py), learn the tokenizer on it (spm_tokenizer.py), encode
it the way llama.cpp will, train the Llama (model.py) on it, print samples, write the GGUF
(export_gguf.py) and a JSON log next to it (command, seed, versions, time, losses, samples).

Needs Debian's python3-torch and python3-numpy. Debian's torch calls the system BLAS; when
OpenBLAS is installed (libopenblas0-pthread), the script re-runs itself with OpenBLAS first on
LD_LIBRARY_PATH (about 8x faster than the reference BLAS that Debian selects by default), whatever
BLAS the system's alternatives select. Training is deterministic for a given seed, thread count,
torch build and BLAS.
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
    core under torch's OpenMP threads), and a single thread is also what makes the result
    independent of the machine's core count."""
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
        return sorted(l for l in libs if l.startswith("/"))
    except OSError:
        return []


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="GGUF file to write")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--vocab", type=int, default=1024)
    ap.add_argument("--stories", type=int, default=6000)
    ap.add_argument("--dialogues", type=int, default=4000)
    ap.add_argument("--repeats", type=int, default=2000, help="'repeat after me' dialogues")
    ap.add_argument("--embd", type=int, default=128)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--heads", type=int, default=4)
    ap.add_argument("--kv-heads", type=int, default=2)
    ap.add_argument("--ff", type=int, default=384)
    ap.add_argument("--ctx", type=int, default=512)
    ap.add_argument("--seq", type=int, default=256, help="training sequence length")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=800)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--warmup", type=int, default=30)
    ap.add_argument("--copy-weight", type=float, default=4.0, help="extra loss weight of recalled entities")
    ap.add_argument("--copy-steps", type=int, default=0, help="first steps train on 'repeat' dialogues only")
    ap.add_argument("--copy-seq", type=int, default=128)
    ap.add_argument("--copy-batch", type=int, default=16)
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
    docs = corpus.make_corpus(args.seed, args.stories, args.dialogues, args.repeats)
    texts = [text for text, _ in docs]
    pieces, scores = spm.train_bpe(texts, args.vocab)
    tok = spm.SPMTokenizer(pieces, scores)

    def encode_doc(text, kind):
        if kind != "story":  # a dialogue: "...</s>\n" -> the last EOS ends the document
            return tok.encode(text[:-1])
        return tok.encode(text) + [spm.EOS]

    encoded = [encode_doc(t, k) for t, k in docs]
    # The chunked encoder must agree with llama.cpp's whole-text algorithm.
    for t, k in docs[:200]:
        assert tok.encode(t, slow=True) == tok.encode(t), t
    n_val = max(1, len(encoded) // 50)
    val = np.array([i for doc in encoded[:n_val] for i in doc], dtype=np.int64)
    train = np.array([i for doc in encoded[n_val:] for i in doc], dtype=np.int64)
    copy_docs = [doc for doc, (_, kind) in zip(encoded[n_val:], docs[n_val:]) if kind == "repeat"]
    copy = np.array([i for doc in copy_docs for i in doc], dtype=np.int64)
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

    train_t, copy_t = torch.from_numpy(train), torch.from_numpy(copy)
    train_starts = torch.arange(0, len(train) - args.seq - 1)
    copy_starts = torch.from_numpy(np.cumsum([0] + [len(d) for d in copy_docs[:-1]]))
    copy_starts = copy_starts[copy_starts + args.copy_seq + 1 <= len(copy)]
    gen = torch.Generator().manual_seed(args.seed)

    def windows(stream, starts, seq, n):
        idx = starts[torch.randint(0, len(starts), (n,), generator=gen)]
        rows = torch.stack([stream[i:i + seq + 1] for i in idx.tolist()])
        return rows[:, :-1], rows[:, 1:]

    def batch(step):
        # Curriculum: the first steps see only "repeat after me" dialogues, where most tokens
        # can only be predicted by copying. The model learns to look back and copy there in a
        # few dozen steps; on stories alone it had not learned that after 800 steps, and names
        # and animals changed from sentence to sentence.
        if step < args.copy_steps:
            return windows(copy_t, copy_starts, args.copy_seq, args.copy_batch)
        return windows(train_t, train_starts, args.seq, args.batch)

    # Names the story has used before: predicting them needs the model to look back and copy.
    name_ids = {tok.encode(" " + n, add_bos=False)[-1] for n in corpus.GIRLS + corpus.BOYS}
    val_docs = encoded[:min(n_val, 200)]

    @torch.no_grad()
    def name_copy_loss():
        """Mean loss on names that already occurred earlier in their document."""
        model.eval()
        total, count = 0.0, 0
        for doc in val_docs:
            ids = torch.tensor([doc[:args.seq + 1]])
            logp = F.log_softmax(model(ids[:, :-1])[0], dim=-1)
            seen = set()
            for t, target in enumerate(ids[0, 1:].tolist()):
                if target in name_ids and target in seen:
                    total -= logp[t, target].item()
                    count += 1
                seen.add(ids[0, t].item())
        model.train()
        return total / max(1, count)

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

    # Tokens whose choice the text fixed earlier: a name, animal or thing that already occurred
    # in the window, and pronouns. Their loss is weighted up (--copy-weight): it is a small part
    # of the text but the part that needs the model to look back, and without the extra weight
    # the model kept changing names and animals mid-story for as long as we trained it.
    entity_words = corpus.GIRLS + corpus.BOYS + corpus.ANIMALS + ["girl", "boy"] + corpus.WORD_POOL
    entity_ids = sorted({i for w in entity_words for i in tok.encode(" " + w, add_bos=False)[1:]
                         if len(tok.encode(" " + w, add_bos=False)) == 2})
    pronoun_ids = sorted({tok.encode(" " + w, add_bos=False)[-1] for w in ["He", "She", "he", "she", "his", "her", "him"]})
    slot = torch.full((cfg.n_vocab,), -1, dtype=torch.long)
    slot[torch.tensor(entity_ids)] = torch.arange(len(entity_ids))
    is_pronoun = torch.zeros(cfg.n_vocab, dtype=torch.bool)
    is_pronoun[torch.tensor(pronoun_ids)] = True

    def recall_targets(x, y):
        """1.0 where the target is an entity seen earlier in the row (or a pronoun), else 0."""
        s = slot[x]
        seen = F.one_hot(s.clamp(min=0), len(entity_ids)) * (s >= 0).unsqueeze(-1)
        seen = seen.cumsum(1) > 0                                  # [B, T, n_entities]
        ys = slot[y]
        hit = seen.gather(2, ys.clamp(min=0).unsqueeze(-1)).squeeze(-1) & (ys >= 0)
        return (hit | is_pronoun[y]).float()

    losses = []
    t_train = time.time()
    model.train()
    for step in range(args.steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        x, y = batch(step)
        token_loss = F.cross_entropy(model(x).reshape(-1, cfg.n_vocab), y.reshape(-1), reduction="none")
        loss = token_loss.mean()
        if args.copy_weight > 0:
            w = 1.0 + args.copy_weight * recall_targets(x, y).reshape(-1)
            weighted = (token_loss * w).sum() / w.sum()
        else:
            weighted = loss
        opt.zero_grad(set_to_none=True)
        weighted.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
        if step % 25 == 0 or step == args.steps - 1:
            recent = losses[-25:]
            extra = ""
            if args.val_every and step % args.val_every == 0 and step > 0:
                extra = "  validation %.4f  repeated names %.3f" % (val_loss(), name_copy_loss())
            print("step %4d  loss %.4f  lr %.2e  %.0f s%s" % (step, sum(recent) / len(recent), lr_at(step),
                                                                time.time() - t_train, extra), flush=True)
    train_seconds = time.time() - t_train
    final_val = val_loss()
    print("validation loss %.4f (perplexity %.2f), training %.0f s" % (final_val, np.exp(final_val), train_seconds),
          flush=True)

    # ---- samples ----
    model.eval()
    samples = {}

    def show(label, prompt_ids, n, temperature=0.0, seed=0):
        g = torch.Generator().manual_seed(seed)
        out = model.generate(prompt_ids, n, temperature=temperature, eos=spm.EOS, generator=g)
        text = tok.decode([i for i in out if i != spm.EOS])
        samples[label] = {"prompt": tok.decode(prompt_ids), "ids": out, "text": text,
                          "ended_at_eos": bool(out and out[-1] == spm.EOS)}
        print("--- %s\n%s%s\n" % (label, tok.decode(prompt_ids).lstrip(" "), text), flush=True)

    show("greedy: Once upon a time", tok.encode("Once upon a time"), 120)
    show("sampled T=0.8 seed 1: Once upon a time", tok.encode("Once upon a time"), 160, 0.8, 1)
    show("sampled T=0.8 seed 2: The dog", tok.encode("The dog"), 160, 0.8, 2)
    chat = "<|user|>\nTell me a story about a cat.</s>\n<|assistant|>\n"
    show("chat greedy: Tell me a story about a cat.", tok.encode(chat), 250)
    chat = "<|system|>\nYou are a friendly storyteller.</s>\n<|user|>\nHello!</s>\n<|assistant|>\n"
    show("chat greedy: Hello!", tok.encode(chat), 60)
    chat = "<|user|>\nRepeat these words: Max, frog, shiny, garden and Lily.</s>\n<|assistant|>\n"
    show("chat greedy: Repeat these words", tok.encode(chat), 30)

    # ---- export ----
    out_dir = os.path.dirname(os.path.abspath(args.out))
    os.makedirs(out_dir, exist_ok=True)
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
                   "validation_tokens": int(len(val))},
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
