"""The reference side of tests/unit/model/chatTemplatePeers.test.ts: chat templates rendered by transformers 4.46.3
(its own jinja2 environment, as apply_chat_template compiles it), token ids from Python `tokenizers` (Rust) and the
assistant-token mask transformers computes from a template's {% generation %} markers.

    python chat_template_peer.py INPUT_JSON OUTPUT_JSON

INPUT_JSON: {"folder": HF tokenizer folder (tokenizer.json, tokenizer_config.json), "tagged": a {% generation %}-marked
version of the folder's template or null, "templates": {name: template text}, "tokens": {bos_token, eos_token, ...},
"cases": [{"template": name, "messages": [...], "add_generation_prompt": bool, "extra": {...}}]}.
OUTPUT_JSON: {"cases": [{"text": rendered or null, "error": message or null}], "encoded": [{"ids", "mask",
"tagged_text"}] for each case of the folder's own template ("folder") without generation prompt}.

Run with the project's peer venv (.venv-peers/bin/python, scripts/peerEnv.mjs).
"""

import json
import sys


def main(inp: str, out: str) -> None:
    from transformers import PreTrainedTokenizerFast
    from transformers.utils.chat_template_utils import _compile_jinja_template

    with open(inp, encoding="utf-8") as f:
        spec = json.load(f)
    compiled = {name: _compile_jinja_template(t) for name, t in spec["templates"].items()}
    tokens = spec["tokens"]
    cases = []
    for case in spec["cases"]:
        try:
            text = compiled[case["template"]].render(
                messages=case["messages"],
                add_generation_prompt=case["add_generation_prompt"],
                **tokens,
                **case.get("extra", {}),
            )
            cases.append({"text": text, "error": None})
        except Exception as e:  # noqa: BLE001 - the error's kind is what is compared
            cases.append({"text": None, "error": f"{type(e).__name__}: {e}"})

    tok = PreTrainedTokenizerFast.from_pretrained(spec["folder"])
    encoded = []
    for case in spec["cases"]:
        if case["template"] != "folder" or case["add_generation_prompt"]:
            continue
        ids = tok.apply_chat_template(case["messages"], tokenize=True, **case.get("extra", {}))
        entry = {"ids": ids, "mask": None, "tagged_text": None}
        if spec["tagged"] is not None:
            d = tok.apply_chat_template(
                case["messages"],
                chat_template=spec["tagged"],
                tokenize=True,
                return_dict=True,
                return_assistant_tokens_mask=True,
            )
            entry["mask"] = d["assistant_masks"]
            entry["tagged_text"] = tok.apply_chat_template(case["messages"], chat_template=spec["tagged"], tokenize=False)
            entry["tagged_ids"] = d["input_ids"]
        encoded.append(entry)
    with open(out, "w", encoding="utf-8") as f:
        json.dump({"cases": cases, "encoded": encoded}, f, ensure_ascii=False)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
