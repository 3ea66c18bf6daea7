"""The reference side of tests/unit/model/loraMerge.test.ts: a model folder read by transformers' Auto classes as a
user would (AutoTokenizer, AutoModelForCausalLM), issue 30 item 7.

    python hf_folder_peer.py FOLDER OUTDIR --text TEXT

Prints one JSON line: {"ids": the tokenizer's ids of TEXT (no special tokens added), "chat": apply_chat_template of
one user message with the generation prompt, as text}; OUTDIR/logits.f32 holds the last position's logits of those
ids, float32 little-endian.
"""

import argparse
import json
import os


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("folder")
    ap.add_argument("outdir")
    ap.add_argument("--text", required=True)
    a = ap.parse_args()

    import numpy as np
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.set_num_threads(1)
    tok = AutoTokenizer.from_pretrained(a.folder)
    model = AutoModelForCausalLM.from_pretrained(a.folder, torch_dtype=torch.float32, attn_implementation="eager")
    ids = tok(a.text, add_special_tokens=False)["input_ids"]
    chat = tok.apply_chat_template([{"role": "user", "content": "What is 2 + 3?"}], add_generation_prompt=True, tokenize=False)
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0, -1].numpy()
    os.makedirs(a.outdir, exist_ok=True)
    np.ascontiguousarray(logits, dtype="<f4").tofile(os.path.join(a.outdir, "logits.f32"))
    print(json.dumps({"ids": ids, "chat": chat}))


if __name__ == "__main__":
    main()
