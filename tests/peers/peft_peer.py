"""The reference side of tests/unit/model/loraPeers.test.ts: LoRA adapters through Hugging Face PEFT itself (issue 30,
item 7).

    python peft_peer.py apply BASE ADAPTER OUTDIR --ids 1,2,3 [--gguf FILE] [--no-merge]
    python peft_peer.py make BASE ADAPTER_OUT OUTDIR --ids 1,2,3 --r 4 --alpha 8 --targets q_proj,v_proj --seed 3
                              [--gguf FILE]

BASE is an HF model folder (with --gguf: the folder of the GGUF file FILE, read by transformers' GGUF loader).
apply: PeftModel.from_pretrained(base, ADAPTER) (an adapter mars-lab wrote), eval mode; OUTDIR/logits.f32 holds every
position's logits of the ids, float32 little-endian [len(ids), vocab]; then merge_and_unload() and save_pretrained into
OUTDIR/merged (safetensors), unless --no-merge. make: a LoraConfig of its own with init_lora_weights=False (A and B both random, so the
adapter changes the model), saved with save_pretrained into ADAPTER_OUT, and the logits of the adapted model as above.
Prints one JSON line: {"shape", "peft"}.
"""

import argparse
import json
import os


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("mode", choices=["apply", "make"])
    ap.add_argument("base")
    ap.add_argument("adapter")
    ap.add_argument("outdir", nargs="?")
    ap.add_argument("--ids", required=True)
    ap.add_argument("--gguf")
    ap.add_argument("--r", type=int, default=4)
    ap.add_argument("--alpha", type=float, default=8)
    ap.add_argument("--targets", default="q_proj,v_proj")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--no-merge", action="store_true")
    a = ap.parse_args()

    import numpy as np
    import peft
    import torch
    from transformers import AutoModelForCausalLM

    torch.manual_seed(a.seed)
    kwargs = {"gguf_file": a.gguf} if a.gguf else {}
    base = AutoModelForCausalLM.from_pretrained(a.base, torch_dtype=torch.float32, attn_implementation="eager", **kwargs)
    if a.gguf:
        from gguf import GGUFReader

        # transformers leaves lm_head untied (and random) for a GGUF without output.weight (as gguf_peer.py says).
        if "output.weight" not in {t.name for t in GGUFReader(os.path.join(a.base, a.gguf)).tensors}:
            base.lm_head.weight = base.model.embed_tokens.weight
    if a.mode == "apply":
        model = peft.PeftModel.from_pretrained(base, a.adapter)
        outdir = a.outdir
    else:
        cfg = peft.LoraConfig(
            r=a.r, lora_alpha=a.alpha, lora_dropout=0.0, target_modules=a.targets.split(","),
            init_lora_weights=False, task_type="CAUSAL_LM",
        )
        model = peft.get_peft_model(base, cfg)
        model.save_pretrained(a.adapter, safe_serialization=True)
        outdir = a.outdir
    model.eval()
    ids = torch.tensor([[int(x) for x in a.ids.split(",")]])
    with torch.no_grad():
        logits = model(input_ids=ids).logits[0].float().numpy()
    os.makedirs(outdir, exist_ok=True)
    np.ascontiguousarray(logits, dtype="<f4").tofile(os.path.join(outdir, "logits.f32"))
    if a.mode == "apply" and not a.no_merge:
        merged = model.merge_and_unload()
        merged.save_pretrained(os.path.join(outdir, "merged"), safe_serialization=True)
    print(json.dumps({"shape": list(logits.shape), "peft": peft.__version__}))


if __name__ == "__main__":
    main()
