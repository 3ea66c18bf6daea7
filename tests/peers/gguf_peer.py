"""The reference side of tests/unit/model/gguf*.test.ts: what engines no one here wrote read from a GGUF file.

    python gguf_peer.py dequant FILE OUTDIR NAME...      gguf-py (GGUFReader + gguf.quants.dequantize): each named
                                                         tensor's float32 values, little-endian, to OUTDIR/NAME.f32
    python gguf_peer.py hf FILE OUTDIR [--ids 1,2,3] NAME...
                                                         transformers' GGUF loader (from_pretrained(gguf_file=)):
                                                         each named HF tensor of its state_dict to OUTDIR/NAME.f32 and,
                                                         with --ids, the last position's logits to OUTDIR/logits.f32

    python gguf_peer.py f32 FILE OUT_GGUF                a copy of FILE with every tensor dequantised to F32 by
                                                         gguf-py, metadata unchanged (what llama.cpp computes
                                                         without quantising activations)

Each prints one JSON line ({name: shape}; f32: {"bytes": N}). Run with the project's peer venv (.venv-peers/bin/python, scripts/peerEnv.mjs).
transformers leaves lm_head untied (and random) for a GGUF without output.weight: it is tied by hand here.
"""

import json
import os
import sys

import numpy as np


def write(outdir: str, name: str, values) -> list[int]:
    arr = np.ascontiguousarray(values, dtype="<f4")
    arr.tofile(os.path.join(outdir, name + ".f32"))
    return list(arr.shape)


def dequant(path: str, outdir: str, names: list[str]) -> dict:
    from gguf import GGUFReader
    from gguf.quants import dequantize

    reader = GGUFReader(path)
    by_name = {t.name: t for t in reader.tensors}
    shapes = {}
    for name in names:
        t = by_name[name]
        shapes[name] = write(outdir, name, dequantize(t.data, t.tensor_type))
    return shapes


def hf(path: str, outdir: str, names: list[str], ids: list[int] | None) -> dict:
    import torch
    from transformers import AutoModelForCausalLM

    torch.set_num_threads(1)
    model = AutoModelForCausalLM.from_pretrained(
        os.path.dirname(path), gguf_file=os.path.basename(path), torch_dtype=torch.float32
    )
    from gguf import GGUFReader

    if "output.weight" not in {t.name for t in GGUFReader(path).tensors}:
        model.lm_head.weight = model.model.embed_tokens.weight
    state = model.state_dict()
    shapes = {name: write(outdir, name, state[name].detach().numpy()) for name in names}
    if ids is not None:
        with torch.no_grad():
            logits = model(torch.tensor([ids])).logits[0, -1]
        shapes["logits"] = write(outdir, "logits", logits.numpy())
    return shapes


def f32_copy(path: str, out: str) -> dict:
    from gguf import GGUFReader, GGUFWriter, GGMLQuantizationType, Keys
    from gguf.quants import dequantize
    from scripts.gguf_new_metadata import decode_field

    reader = GGUFReader(path)
    arch = decode_field(reader.fields[Keys.General.ARCHITECTURE])
    writer = GGUFWriter(out, arch)
    for field in reader.fields.values():
        if field.name == Keys.General.ARCHITECTURE or field.name.startswith("GGUF."):
            continue
        writer.add_key_value(field.name, decode_field(field), field.types[0])
    for t in reader.tensors:
        values = dequantize(t.data, t.tensor_type).astype(np.float32)
        writer.add_tensor(t.name, values.reshape([int(d) for d in reversed(t.shape)]), raw_dtype=GGMLQuantizationType.F32)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return {"bytes": os.path.getsize(out)}


def main() -> None:
    mode, path, outdir, *rest = sys.argv[1:]
    if mode == "f32":
        print(json.dumps(f32_copy(path, outdir)))
        return
    ids = None
    if rest[:1] == ["--ids"]:
        ids = [int(x) for x in rest[1].split(",")]
        rest = rest[2:]
    shapes = dequant(path, outdir, rest) if mode == "dequant" else hf(path, outdir, rest, ids)
    print(json.dumps(shapes))


if __name__ == "__main__":
    main()
