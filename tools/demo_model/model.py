"""A small Llama in PyTorch, computing what llama.cpp computes for architecture "llama".

Pre-norm blocks: x += Wo·attn(RoPE(Wq·n), RoPE(Wk·n), Wv·n) with n = RMSNorm(x);
x += Wdown·(silu(Wgate·n) * Wup·n) with n = RMSNorm(x); logits = Wout·RMSNorm(x).

RoPE rotates adjacent pairs (x[2i], x[2i+1]) of each head by pos * base^(-2i/head_dim): ggml's
"normal" rope, which llama.cpp uses for "llama" GGUFs. (Hugging Face Llama checkpoints rotate
half-split pairs instead, which is why llama.cpp's converter permutes their Q/K rows; training
with adjacent pairs means the weights are written as they are, with no permutation.)
Grouped-query attention: query head h reads key/value head h // (n_head / n_head_kv).
"""

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class Config:
    def __init__(self, n_vocab, n_embd=128, n_layer=4, n_head=4, n_head_kv=2, n_ff=384,
                 n_ctx=512, rope_base=10000.0, rms_eps=1e-5, tied=True):
        self.n_vocab, self.n_embd, self.n_layer = n_vocab, n_embd, n_layer
        self.n_head, self.n_head_kv, self.n_ff = n_head, n_head_kv, n_ff
        self.n_ctx, self.rope_base, self.rms_eps, self.tied = n_ctx, rope_base, rms_eps, tied

    @property
    def head_dim(self):
        return self.n_embd // self.n_head


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(cfg, n_pos):
    """cos and sin, [n_pos, head_dim/2], of the angles pos * base^(-2i/head_dim)."""
    hd = cfg.head_dim
    inv_freq = cfg.rope_base ** (-torch.arange(0, hd, 2, dtype=torch.float64) / hd)
    angles = torch.arange(n_pos, dtype=torch.float64)[:, None] * inv_freq[None, :]
    return torch.cos(angles).float(), torch.sin(angles).float()


def apply_rope(x, cos, sin):
    """x: [B, H, T, hd]; rotates (x[..., 2i], x[..., 2i+1]) pairs."""
    x0, x1 = x[..., 0::2], x[..., 1::2]
    out0 = x0 * cos - x1 * sin
    out1 = x0 * sin + x1 * cos
    return torch.stack((out0, out1), dim=-1).flatten(-2)


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        d, hd = cfg.n_embd, cfg.head_dim
        self.attn_norm = RMSNorm(d, cfg.rms_eps)
        self.wq = nn.Linear(d, cfg.n_head * hd, bias=False)
        self.wk = nn.Linear(d, cfg.n_head_kv * hd, bias=False)
        self.wv = nn.Linear(d, cfg.n_head_kv * hd, bias=False)
        self.wo = nn.Linear(cfg.n_head * hd, d, bias=False)
        self.ffn_norm = RMSNorm(d, cfg.rms_eps)
        self.w_gate = nn.Linear(d, cfg.n_ff, bias=False)
        self.w_up = nn.Linear(d, cfg.n_ff, bias=False)
        self.w_down = nn.Linear(cfg.n_ff, d, bias=False)

    def forward(self, x, cos, sin, mask):
        cfg = self.cfg
        B, T, _ = x.shape
        hd = cfg.head_dim
        n = self.attn_norm(x)
        q = self.wq(n).view(B, T, cfg.n_head, hd).transpose(1, 2)
        k = self.wk(n).view(B, T, cfg.n_head_kv, hd).transpose(1, 2)
        v = self.wv(n).view(B, T, cfg.n_head_kv, hd).transpose(1, 2)
        q, k = apply_rope(q, cos, sin) * (1.0 / math.sqrt(hd)), apply_rope(k, cos, sin)
        # Grouped-query attention without copying K and V: the `group` query heads that share
        # a KV head are stacked along the time axis.
        group = cfg.n_head // cfg.n_head_kv
        q = q.reshape(B, cfg.n_head_kv, group * T, hd)
        att = (q @ k.transpose(-2, -1)).view(B, cfg.n_head_kv, group, T, T) + mask
        y = (F.softmax(att, dim=-1).view(B, cfg.n_head_kv, group * T, T) @ v).view(B, cfg.n_head, T, hd)
        x = x + self.wo(y.transpose(1, 2).reshape(B, T, cfg.n_head * hd))
        n = self.ffn_norm(x)
        return x + self.w_down(F.silu(self.w_gate(n)) * self.w_up(n))


class Llama(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.tok_embd = nn.Embedding(cfg.n_vocab, cfg.n_embd)
        self.blocks = nn.ModuleList([Block(cfg) for _ in range(cfg.n_layer)])
        self.out_norm = RMSNorm(cfg.n_embd, cfg.rms_eps)
        self.output = None if cfg.tied else nn.Linear(cfg.n_embd, cfg.n_vocab, bias=False)
        cos, sin = rope_tables(cfg, cfg.n_ctx)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)
        self.reset_parameters()

    def reset_parameters(self):
        std = 0.02
        for name, p in self.named_parameters():
            if p.dim() == 2:
                # Residual-branch outputs scaled down with depth (GPT-2 style).
                s = std / math.sqrt(2 * self.cfg.n_layer) if name.endswith(("wo.weight", "w_down.weight")) else std
                nn.init.normal_(p, mean=0.0, std=s)

    def n_params(self):
        return sum(p.numel() for p in self.parameters())

    def forward(self, ids):
        T = ids.shape[1]
        mask = torch.full((T, T), float("-inf")).triu(1)
        x = self.tok_embd(ids)
        cos, sin = self.cos[:T], self.sin[:T]
        for block in self.blocks:
            x = block(x, cos, sin, mask)
        x = self.out_norm(x)
        w = self.tok_embd.weight if self.output is None else self.output.weight
        return x @ w.t()

    @torch.no_grad()
    def generate(self, ids, n_new, temperature=0.0, eos=None, generator=None):
        """Plain loop without a cache (the model is tiny); greedy when temperature is 0."""
        ids = list(ids)
        out = []
        for _ in range(n_new):
            logits = self.forward(torch.tensor([ids[-self.cfg.n_ctx:]]))[0, -1]
            if temperature <= 0:
                nxt = int(torch.argmax(logits))
            else:
                p = F.softmax(logits / temperature, dim=-1)
                nxt = int(torch.multinomial(p, 1, generator=generator))
            ids.append(nxt)
            out.append(nxt)
            if nxt == eos:
                break
        return out
