"""
The PyTorch + PEFT peer of `npm run bench:lora` (a benchmark fixture, never a test): one LoRA policy-gradient step on
the real SmolLM2-135M, as tests/bench/loraStepBench.ts takes it in mars-lab, at the same shape and thread count.

Reads one JSON object on stdin: {"gguf", "ids" (rows of token ids, equal lengths), "mask" (the same shape, 1 where a
token's log-prob is trained), "adv" (one advantage per row), "rank", "alpha", "targets", "threads", "repeats"};
prints one JSON object: {"ms": [wall ms of each timed step], "torch", "peft", "threads", "loss"}.

The step: the policy forward in train mode, per-token log-probs of the given ids, the loss −Σ adv·ℓ·mask / Σ mask
(the ppoToken loss at ratio 1, which is what one pass over one minibatch is), backward, Adam (lr 1e-4) on the
adapters. The base model comes from transformers' GGUF loader (lm_head tied by hand, as tests/peers/gguf_peer.py).
One warm-up step is not timed.
"""
import json
import os
import sys
import time

import torch


def main() -> None:
    spec = json.load(sys.stdin)
    torch.set_num_threads(spec["threads"])
    import peft
    from gguf import GGUFReader
    from transformers import AutoModelForCausalLM

    path = spec["gguf"]
    model = AutoModelForCausalLM.from_pretrained(
        os.path.dirname(path), gguf_file=os.path.basename(path), torch_dtype=torch.float32, attn_implementation="eager"
    )
    if "output.weight" not in {t.name for t in GGUFReader(path).tensors}:
        model.lm_head.weight = model.model.embed_tokens.weight
    cfg = peft.LoraConfig(
        r=spec["rank"], lora_alpha=spec["alpha"], lora_dropout=0.0, target_modules=spec["targets"], task_type="CAUSAL_LM"
    )
    model = peft.get_peft_model(model, cfg)
    model.train()
    opt = torch.optim.Adam([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    ids = torch.tensor(spec["ids"])
    mask = torch.tensor(spec["mask"], dtype=torch.float32)[:, 1:]
    adv = torch.tensor(spec["adv"], dtype=torch.float32)[:, None]

    def step() -> float:
        opt.zero_grad(set_to_none=True)
        logits = model(input_ids=ids).logits[:, :-1]
        logp = torch.log_softmax(logits, -1).gather(-1, ids[:, 1:, None])[..., 0]
        loss = -(adv * logp * mask).sum() / mask.sum()
        loss.backward()
        opt.step()
        return float(loss)

    step()
    ms = []
    loss = 0.0
    for _ in range(spec["repeats"]):
        t0 = time.perf_counter()
        loss = step()
        ms.append((time.perf_counter() - t0) * 1000)
    print(json.dumps({"ms": ms, "torch": torch.__version__, "peft": peft.__version__, "threads": spec["threads"], "loss": loss}))


if __name__ == "__main__":
    main()
