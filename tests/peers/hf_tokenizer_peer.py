"""The reference side of tests/unit/model/hfTokenizerPeers.test.ts: token ids from Python `tokenizers` (the Rust
library, 0.20.3) and transformers' GGUF tokenizer conversion (4.46.3), engines no one here wrote.

    python hf_tokenizer_peer.py encode GGUF CORPUS OUTDIR [--decode IDS_JSON] [NAME=TOKENIZER_JSON ...]
        transformers converts GGUF's tokenizer (AutoTokenizer.from_pretrained(dir, gguf_file=)); its backend
        (a tokenizers.Tokenizer) encodes every string of CORPUS (a JSON array) without special tokens and decodes the
        ids back: results["transformers"]. It is saved as an HF folder, OUTDIR/hf (tokenizer.json and
        tokenizer_config.json). Each NAME=TOKENIZER_JSON is loaded by the Rust library itself: results[NAME]; and
        results[NAME + "+transformers"] is transformers' conversion with that file's normalizer and pre-tokenizer put
        in (what tells a difference in the pre-tokenizer from one in the vocabulary, merges or added tokens).
        With --decode, the backend also decodes each id list of IDS_JSON (a JSON array of arrays): results["decode"].
        Writes OUTDIR/results.json {name: {"ids": [[...]], "decoded": [...]}}; prints one JSON line of timings.
    python hf_tokenizer_peer.py spm-gguf SOURCE_GGUF OUT_GGUF N
        Writes a llama-architecture GGUF with a SentencePiece ("llama") tokenizer, as Llama 2 / TinyLlama files hold
        one (<unk> UNKNOWN, <s> </s> CONTROL, 256 <0xNN> BYTE tokens, pieces with ▁ for spaces, scores, no merges), its
        pieces the first N of SOURCE_GGUF's byte-level tokens turned into text. No tensors: only the tokenizer is read.

Run with the project's peer venv (.venv-peers/bin/python, scripts/peerEnv.mjs).
"""

import json
import os
import sys
import time


def encode_all(tok, corpus: list[str]) -> dict:
    ids = [e.ids for e in tok.encode_batch(corpus, add_special_tokens=False)]
    return {"ids": ids, "decoded": tok.decode_batch(ids, skip_special_tokens=False)}


def save_folder(fast, folder: str) -> None:
    os.makedirs(folder, exist_ok=True)
    fast.backend_tokenizer.save(os.path.join(folder, "tokenizer.json"))
    config = {
        "bos_token": fast.bos_token,
        "eos_token": fast.eos_token,
        "unk_token": fast.unk_token,
        "pad_token": fast.pad_token,
        "add_bos_token": False,
        "add_eos_token": False,
    }
    with open(os.path.join(folder, "tokenizer_config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f)


def encode(gguf_path: str, corpus_path: str, outdir: str, named: list[str], decode_path: str | None) -> dict:
    from tokenizers import Tokenizer
    from transformers import AutoTokenizer

    with open(corpus_path, encoding="utf-8") as f:
        corpus = json.load(f)
    t0 = time.perf_counter()
    fast = AutoTokenizer.from_pretrained(os.path.dirname(gguf_path), gguf_file=os.path.basename(gguf_path))
    timings = {"transformers_load_s": time.perf_counter() - t0}
    backend = fast.backend_tokenizer
    t0 = time.perf_counter()
    results = {"transformers": encode_all(backend, corpus)}
    timings["rust_encode_corpus_s"] = time.perf_counter() - t0
    if decode_path is not None:
        with open(decode_path, encoding="utf-8") as f:
            lists = json.load(f)
        results["decode"] = {"ids": lists, "decoded": backend.decode_batch(lists, skip_special_tokens=False)}
    save_folder(fast, os.path.join(outdir, "hf"))
    converted = json.loads(backend.to_str())
    for item in named:
        name, path = item.split("=", 1)
        results[name] = encode_all(Tokenizer.from_file(path), corpus)
        with open(path, encoding="utf-8") as f:
            ours = json.load(f)
        mixed = dict(converted, normalizer=ours.get("normalizer"), pre_tokenizer=ours.get("pre_tokenizer"))
        results[name + "+transformers"] = encode_all(Tokenizer.from_str(json.dumps(mixed)), corpus)
    with open(os.path.join(outdir, "results.json"), "w", encoding="utf-8") as f:
        json.dump(results, f)
    return timings


def byte_decoder() -> dict:
    """GPT-2's byte ↔ printable-character table, reversed."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def spm_gguf(source: str, out: str, n: int) -> dict:
    from gguf import GGUFReader, GGUFWriter, TokenType

    reader = GGUFReader(source)
    field = reader.fields["tokenizer.ggml.tokens"]
    types = reader.fields["tokenizer.ggml.token_type"]
    dec = byte_decoder()
    pieces, seen = [], set()
    for i, t in zip(field.data, types.data):
        if int(types.parts[t][0]) != 1:
            continue
        try:
            text = bytes(dec[c] for c in bytes(field.parts[i]).decode("utf-8")).decode("utf-8")
        except (KeyError, UnicodeDecodeError):
            continue
        piece = text.replace(" ", "\u2581")
        if piece and piece not in seen and not (piece.startswith("<0x") and piece.endswith(">")):
            seen.add(piece)
            pieces.append(piece)
        if len(pieces) == n:
            break
    tokens = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)] + pieces
    token_types = [TokenType.UNKNOWN, TokenType.CONTROL, TokenType.CONTROL] + [TokenType.BYTE] * 256
    token_types += [TokenType.NORMAL] * len(pieces)
    scores = [0.0] * 259 + [-float(i) for i in range(len(pieces))]
    w = GGUFWriter(out, "llama")
    w.add_name("spm-test")
    w.add_context_length(64)
    w.add_embedding_length(8)
    w.add_block_count(1)
    w.add_feed_forward_length(16)
    w.add_head_count(2)
    w.add_head_count_kv(1)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores(scores)
    w.add_token_types(token_types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_add_bos_token(True)
    w.add_add_eos_token(False)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return {"tokens": len(tokens)}


def main() -> None:
    mode = sys.argv[1]
    if mode == "encode":
        rest = sys.argv[5:]
        decode_path = None
        if rest[:1] == ["--decode"]:
            decode_path, rest = rest[1], rest[2:]
        print(json.dumps(encode(sys.argv[2], sys.argv[3], sys.argv[4], rest, decode_path)))
    elif mode == "spm-gguf":
        print(json.dumps(spm_gguf(sys.argv[2], sys.argv[3], int(sys.argv[4]))))
    else:
        raise SystemExit(f"unknown mode {mode!r}; use encode or spm-gguf")


if __name__ == "__main__":
    main()
