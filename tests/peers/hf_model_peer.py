"""The reference side of tests/unit/model/hfFamilies.test.ts: tiny random Llama / Qwen2 / Qwen3 models made and run by
HF transformers itself (issue 30, item 3).

    python hf_model_peer.py FAMILY OUTDIR --config JSON --seed N --ids 1,2,3 [--shard-bytes N] [--transformers DIR]
                            [--gguf FILE]

FAMILY is llama, qwen2 or qwen3; JSON the config's fields (transformers' own defaults for the rest). The model is
built by transformers with random weights (std 0.3 for every weight, biases and norm weights included, so a missing
bias or norm shows in the logits), written with save_pretrained (sharded at --shard-bytes: a real
model.safetensors.index.json), read back with from_pretrained, and run on the ids: OUTDIR/logits.f32 holds every
position's logits, float32 little-endian, [len(ids), vocab]; --gguf also writes the model as an F32 GGUF file, as
llama.cpp's converter names and lays out qwen2 / qwen3 tensors (gguf-py's writer). Prints one JSON line: {"shape", "files", "transformers"}.

--transformers DIR puts a newer transformers first on the path (Qwen3 arrived in 4.51; .venv-peers keeps 4.46.3 for
everything else, scripts/peerEnv.mjs installs 4.51.3 into .venv-peers/qwen3-transformers). 4.51 imports three things
torch 1.13 (Debian's) lacks; they are stubbed below before the import, none of them on the path of a forward pass:
torch.distributed.tensor.DTensor (only isinstance checks against it), torch.compiler.disable (a decorator of the
flex-attention wrapper, not used with eager attention), the float8/uint16+ dtypes (entries of name → dtype tables).
"""

import argparse
import json
import os
import sys
import types


def stub_torch2_names(torch) -> None:
    import torch.distributed  # noqa: F401

    if "torch.distributed.tensor" not in sys.modules:
        m = types.ModuleType("torch.distributed.tensor")

        class DTensor:  # never instantiated: transformers only asks isinstance(x, DTensor)
            pass

        m.DTensor = DTensor
        sys.modules["torch.distributed.tensor"] = m
        torch.distributed.tensor = m
    if not hasattr(torch, "compiler"):
        c = types.ModuleType("torch.compiler")
        c.disable = lambda fn=None, recursive=True: fn if fn is not None else (lambda f: f)
        c.is_compiling = lambda: False
        sys.modules["torch.compiler"] = c
        torch.compiler = c
    for name in ["float8_e4m3fn", "float8_e5m2", "uint16", "uint32", "uint64"]:
        if not hasattr(torch, name):
            setattr(torch, name, torch.float16 if name.startswith("float") else torch.int32)


GGUF_LAYER = {
    "input_layernorm.weight": "attn_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.o_proj.weight": "attn_output.weight",
    "self_attn.q_proj.bias": "attn_q.bias",
    "self_attn.k_proj.bias": "attn_k.bias",
    "self_attn.v_proj.bias": "attn_v.bias",
    "self_attn.q_norm.weight": "attn_q_norm.weight",
    "self_attn.k_norm.weight": "attn_k_norm.weight",
    "post_attention_layernorm.weight": "ffn_norm.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
}


def write_gguf(path: str, family: str, model, config) -> None:
    """The model as an F32 GGUF the way llama.cpp's convert_hf_to_gguf.py writes qwen2 / qwen3 (names from its
    tensor map, no q/k permutation for these architectures), written by gguf-py's GGUFWriter."""
    import gguf
    import numpy as np

    w = gguf.GGUFWriter(path, family)
    w.add_block_count(config.num_hidden_layers)
    w.add_context_length(config.max_position_embeddings)
    w.add_embedding_length(config.hidden_size)
    w.add_feed_forward_length(config.intermediate_size)
    w.add_head_count(config.num_attention_heads)
    w.add_head_count_kv(config.num_key_value_heads)
    w.add_rope_freq_base(config.rope_theta)
    w.add_layer_norm_rms_eps(config.rms_norm_eps)
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    for name, t in model.state_dict().items():
        if name == "lm_head.weight" and config.tie_word_embeddings:
            continue
        if name.startswith("model.layers."):
            _, _, layer, rest = name.split(".", 3)
            gname = f"blk.{layer}.{GGUF_LAYER[rest]}"
        else:
            gname = {"model.embed_tokens.weight": "token_embd.weight", "model.norm.weight": "output_norm.weight",
                     "lm_head.weight": "output.weight"}[name]
        w.add_tensor(gname, np.ascontiguousarray(t.detach().numpy(), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


def reload_by_hand(outdir: str, config_cls, model_cls, torch):
    """4.51's from_pretrained needs torch 2 (named_parameters(remove_duplicate=)): the same files read back with the
    config class's from_pretrained and a strict load_state_dict of every file the index (or the single file) names."""
    from safetensors.torch import load_file

    config = config_cls.from_pretrained(outdir, attn_implementation="eager")
    index = os.path.join(outdir, "model.safetensors.index.json")
    files = (
        sorted(set(json.load(open(index))["weight_map"].values())) if os.path.exists(index) else ["model.safetensors"]
    )
    state = {}
    for f in files:
        state.update(load_file(os.path.join(outdir, f)))
    model = model_cls(config)
    model.load_state_dict(state, strict=not config.tie_word_embeddings)
    if config.tie_word_embeddings:
        model.tie_weights()
    return model.eval()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("family", choices=["llama", "qwen2", "qwen3"])
    ap.add_argument("outdir")
    ap.add_argument("--config", required=True)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ids", required=True)
    ap.add_argument("--shard-bytes", type=int, default=0)
    ap.add_argument("--transformers", default=None)
    ap.add_argument("--gguf", default=None, help="also write the model as an F32 GGUF here (qwen2, qwen3)")
    a = ap.parse_args()
    if a.transformers:
        sys.path.insert(0, a.transformers)
    import torch

    if a.transformers:
        stub_torch2_names(torch)
    import numpy as np
    import transformers

    torch.set_num_threads(1)
    classes = {
        "llama": ("LlamaConfig", "LlamaForCausalLM"),
        "qwen2": ("Qwen2Config", "Qwen2ForCausalLM"),
        "qwen3": ("Qwen3Config", "Qwen3ForCausalLM"),
    }[a.family]
    config_cls = getattr(transformers, classes[0])
    model_cls = getattr(transformers, classes[1])
    config = config_cls(**json.loads(a.config), attn_implementation="eager", torch_dtype="float32")
    torch.manual_seed(a.seed)
    model = model_cls(config).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.normal_(0.0, 0.3)
            if "norm" in name:
                p.add_(1.0)  # norm weights around 1, as trained ones are
    kwargs = {"safe_serialization": True}
    if a.shard_bytes:
        kwargs["max_shard_size"] = a.shard_bytes
    model.save_pretrained(a.outdir, **kwargs)
    if a.transformers:
        back = reload_by_hand(a.outdir, config_cls, model_cls, torch)
    else:
        back = model_cls.from_pretrained(a.outdir, torch_dtype=torch.float32, attn_implementation="eager").eval()
    ids = [int(x) for x in a.ids.split(",")]
    with torch.no_grad():
        logits = back(torch.tensor([ids])).logits[0]
        same = model(torch.tensor([ids])).logits[0]
    if not torch.equal(logits, same):
        raise SystemExit("from_pretrained did not give back the model save_pretrained wrote")
    np.ascontiguousarray(logits.numpy(), dtype="<f4").tofile(os.path.join(a.outdir, "logits.f32"))
    if a.gguf:
        write_gguf(a.gguf, a.family, back, back.config)
    print(
        json.dumps(
            {
                "shape": list(logits.shape),
                "files": sorted(os.listdir(a.outdir)),
                "transformers": transformers.__version__,
            }
        )
    )


if __name__ == "__main__":
    main()
