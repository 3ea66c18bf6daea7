"""
The PyTorch peer of `npm run bench` (a benchmark fixture, never a test): the same Llama architecture, sizes, batch,
sequence length, training step and sampling loop as mars-lab's, written independently in plain PyTorch on the CPU.

It shares only numbers with the TypeScript side: `npm run bench` passes the model config (Llama field names), the
batch shape, the loss settings, the sampling shapes and the thread count as JSON on stdin, and reads one JSON object
back from stdout. Run by hand:  echo '{...}' | python3 tests/bench/peer/torch_peer.py

Training step (as engine/rl/policyUpdate with one epoch and one minibatch): a no-grad forward of a frozen reference
copy, the policy forward, the ppoToken loss (clipped ratio, ℓold = the forward's own detached value) plus the k3 KL
term, backward, global-norm clipping at 1.0 and Adam. Sampling: prompt of one token, `new_tokens` tokens, softmax
sampling at temperature 1, with a KV cache and by recomputing the whole prefix every token.
"""
import json
import math
import sys
import time

import torch
import torch.nn.functional as F


class RMSNorm(torch.nn.Module):
    def __init__(self, d, eps):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.ones(d))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


class Layer(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        d, hd = c["hidden_size"], c["head_dim"]
        self.nh, self.nkv, self.hd = c["num_attention_heads"], c["num_key_value_heads"], hd
        self.input_layernorm = RMSNorm(d, c["rms_norm_eps"])
        self.post_attention_layernorm = RMSNorm(d, c["rms_norm_eps"])
        self.q_proj = torch.nn.Linear(d, self.nh * hd, bias=False)
        self.k_proj = torch.nn.Linear(d, self.nkv * hd, bias=False)
        self.v_proj = torch.nn.Linear(d, self.nkv * hd, bias=False)
        self.o_proj = torch.nn.Linear(self.nh * hd, d, bias=False)
        self.gate_proj = torch.nn.Linear(d, c["intermediate_size"], bias=False)
        self.up_proj = torch.nn.Linear(d, c["intermediate_size"], bias=False)
        self.down_proj = torch.nn.Linear(c["intermediate_size"], d, bias=False)

    def forward(self, x, cos, sin, cache=None):
        B, T, _ = x.shape
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(B, T, self.nh, self.hd).transpose(1, 2)
        k = self.k_proj(h).view(B, T, self.nkv, self.hd).transpose(1, 2)
        v = self.v_proj(h).view(B, T, self.nkv, self.hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        if cache is not None:
            if "k" in cache:
                k = torch.cat((cache["k"], k), dim=2)
                v = torch.cat((cache["v"], v), dim=2)
            cache["k"], cache["v"] = k, v
        rep = self.nh // self.nkv
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        S = k.shape[2]
        att = (q @ k.transpose(-1, -2)) / math.sqrt(self.hd)
        if T > 1:
            causal = torch.ones(T, S, dtype=torch.bool).tril(S - T)
            att = att.masked_fill(~causal, float("-inf"))
        o = (att.softmax(-1) @ v).transpose(1, 2).reshape(B, T, self.nh * self.hd)
        x = x + self.o_proj(o)
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


class Llama(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.embed_tokens = torch.nn.Embedding(c["vocab_size"], c["hidden_size"])
        self.layers = torch.nn.ModuleList([Layer(c) for _ in range(c["num_hidden_layers"])])
        self.norm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])
        self.lm_head = torch.nn.Linear(c["hidden_size"], c["vocab_size"], bias=False)
        if c.get("tie_word_embeddings"):
            self.lm_head.weight = self.embed_tokens.weight
        hd = c["head_dim"]
        inv = 1.0 / (c["rope_theta"] ** (torch.arange(0, hd, 2, dtype=torch.float32) / hd))
        ang = torch.outer(torch.arange(c["max_position_embeddings"], dtype=torch.float32), inv)
        ang = torch.cat((ang, ang), dim=-1)
        self.cos_table, self.sin_table = ang.cos(), ang.sin()

    def forward(self, ids, start=0, caches=None):
        T = ids.shape[1]
        cos, sin = self.cos_table[start:start + T], self.sin_table[start:start + T]
        x = self.embed_tokens(ids)
        for i, layer in enumerate(self.layers):
            x = layer(x, cos, sin, None if caches is None else caches[i])
        return self.lm_head(self.norm(x))


def stat(xs):
    s = sorted(xs)
    n = len(s)
    med = s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2
    return {"median": med, "min": s[0], "max": s[-1], "n": n}


def timed(fn, repeats, warmup, cpu=None):
    """Wall-clock ms per call; with a list `cpu`, also this process's CPU ms per call (all its threads) into it."""
    for _ in range(warmup):
        fn()
    ms = []
    cpu_ms = []
    for _ in range(repeats):
        c0 = time.process_time()
        t0 = time.perf_counter()
        fn()
        ms.append((time.perf_counter() - t0) * 1000)
        cpu_ms.append((time.process_time() - c0) * 1000)
    if cpu is not None:
        cpu.append(stat(cpu_ms))
    return stat(ms)


def blas_info():
    """The OpenBLAS this process loaded (torch links the system BLAS): its core name and thread count, or why unknown."""
    import ctypes

    try:
        with open("/proc/self/maps") as f:
            libs = sorted({line.split()[-1] for line in f if "blas" in line.split()[-1].lower()})
    except OSError as e:
        return {"error": str(e)}
    for lib in libs:
        try:
            so = ctypes.CDLL(lib)
            core = so.openblas_get_corename
            core.restype = ctypes.c_char_p
            return {"library": lib, "core": core().decode(), "threads": so.openblas_get_num_threads()}
        except (OSError, AttributeError):
            continue
    return {"libraries": libs, "core": None}


def token_logp(model, ids):
    logits = model(ids[:, :-1])
    return torch.gather(F.log_softmax(logits, -1), 2, ids[:, 1:].unsqueeze(-1)).squeeze(-1)


def main():
    spec = json.load(sys.stdin)
    c = spec["config"]
    c.setdefault("head_dim", c["hidden_size"] // c["num_attention_heads"])
    torch.set_num_threads(spec["threads"])
    torch.manual_seed(1)
    B, T = spec["batch"], spec["seq"]
    out = {"torch": torch.__version__, "threads": torch.get_num_threads()}
    model = Llama(c)
    reference = Llama(c)
    reference.load_state_dict(model.state_dict())
    reference.requires_grad_(False)
    opt = torch.optim.Adam(model.parameters(), lr=1e-5, betas=(0.9, 0.999), eps=1e-8)
    ids = torch.randint(0, c["vocab_size"], (B, T))
    adv = torch.tensor([1.0 if i % 2 else -1.0 for i in range(B)]).unsqueeze(1)
    kl_coef, clip_lo, clip_hi = spec["klCoef"], 0.2, 0.2

    def train_step():
        with torch.no_grad():
            ref = token_logp(reference, ids)
        logp = token_logp(model, ids)
        ratio = torch.exp(logp - logp.detach())
        pg = -torch.minimum(ratio * adv, ratio.clamp(1 - clip_lo, 1 + clip_hi) * adv)
        d = ref - logp
        k3 = torch.exp(d) - d - 1
        loss = ((pg + kl_coef * k3).sum(1) / (T - 1)).mean()
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()

    cpu = []
    train = timed(train_step, spec["trainRepeats"], 2, cpu)
    out["train"] = {"msPerStep": train, "cpuMsPerStep": cpu[0], "tokensPerSec": B * T / (train["median"] / 1000)}
    out["blas"] = blas_info()

    new_tokens = spec["newTokens"]

    @torch.no_grad()
    def sample(rows, use_cache):
        seq = torch.ones(rows, 1, dtype=torch.long)
        caches = [dict() for _ in model.layers] if use_cache else None
        logits = model(seq, 0, caches)
        for t in range(new_tokens):
            nxt = torch.multinomial(logits[:, -1].softmax(-1), 1)
            seq = torch.cat((seq, nxt), dim=1)
            if t == new_tokens - 1:
                break
            logits = model(nxt, seq.shape[1] - 1, caches) if use_cache else model(seq)
        return seq

    out["sampling"] = []
    for rows, naive_repeats in spec["sampleBatches"]:
        kv = timed(lambda: sample(rows, True), spec["sampleRepeats"], 1)
        row = {"batch": rows, "kvMs": kv, "kvTokensPerSec": rows * new_tokens / (kv["median"] / 1000)}
        if naive_repeats > 0:
            naive = timed(lambda: sample(rows, False), naive_repeats, 0)
            row.update(naiveMs=naive, naiveTokensPerSec=rows * new_tokens / (naive["median"] / 1000))
        out["sampling"].append(row)
    out["gemm"] = []
    for m, k, n in spec["gemm"]:
        a, b = torch.randn(m, k), torch.randn(k, n)
        ms = timed(lambda: a @ b, 15, 3)["median"]
        out["gemm"].append({"shape": [m, k, n], "ms": ms, "gflops": 2 * m * k * n / ms / 1e6})
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
