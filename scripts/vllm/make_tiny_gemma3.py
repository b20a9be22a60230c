"""Builds the model that llmload's tests serve with vLLM: a tiny Gemma 3 with random weights and
the real Gemma 3 tokenizer.

No model can be downloaded here, so the weights are random (2 layers, hidden size 128) while the
tokenizer is extracted from the Gemma 3 270M GGUF that scripts/setup-llama-server.sh installs: token
counts, /tokenize and the chat prompt therefore agree with the real model; the generated text is
noise.

    python make_tiny_gemma3.py GGUF_PATH OUT_DIR

Writes into OUT_DIR.tmp and renames it to OUT_DIR when complete.
"""

import json
import os
import shutil
import sys

import torch
from tokenizers import processors
from transformers import AutoTokenizer, Gemma3ForCausalLM, Gemma3TextConfig

HERE = os.path.dirname(os.path.abspath(__file__))
SEED = 20260101


def log(msg):
    print(f"make_tiny_gemma3: {msg}", file=sys.stderr, flush=True)


def build_tokenizer(gguf_path, out):
    log(f"extracting the tokenizer from {gguf_path} (about a minute)")
    tok = AutoTokenizer.from_pretrained(os.path.dirname(gguf_path), gguf_file=os.path.basename(gguf_path))
    # The GGUF says add_bos_token=true, but the extracted tokenizer has no post-processor adding it.
    tok.add_bos_token = True
    tok.add_eos_token = False
    bos = tok.bos_token
    tok.backend_tokenizer.post_processor = processors.TemplateProcessing(
        single=f"{bos}:0 $A:0",
        pair=f"{bos}:0 $A:0 {bos}:1 $B:1",
        special_tokens=[(bos, tok.bos_token_id)],
    )
    with open(os.path.join(HERE, "gemma3_chat_template.jinja")) as f:
        tok.chat_template = f.read()
    tok.save_pretrained(out)
    # State the BOS rule in the config too, as Gemma's own tokenizer_config.json does.
    path = os.path.join(out, "tokenizer_config.json")
    with open(path) as f:
        cfg = json.load(f)
    for key in ("is_local", "local_files_only"):
        cfg.pop(key, None)
    cfg.update(add_bos_token=True, add_eos_token=False)
    with open(path, "w") as f:
        json.dump(cfg, f, indent=2)
    return tok


def check_tokenizer(out, vocab_size):
    tok = AutoTokenizer.from_pretrained(out)
    ids = tok("Hello there")["input_ids"]
    assert ids[0] == tok.bos_token_id == 2, ids
    assert len(tok) == vocab_size, (len(tok), vocab_size)
    prompt = tok.apply_chat_template([{"role": "user", "content": "Hi"}], tokenize=False, add_generation_prompt=True)
    assert prompt == "<bos><start_of_turn>user\nHi<end_of_turn>\n<start_of_turn>model\n", repr(prompt)
    log(f"tokenizer ok: 'Hello there' -> {ids}")


def build_model(vocab_size, out):
    torch.manual_seed(SEED)
    config = Gemma3TextConfig(
        vocab_size=vocab_size,
        hidden_size=128,
        intermediate_size=512,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=1,
        head_dim=32,
        max_position_embeddings=32768,
        sliding_window=512,
        layer_types=["sliding_attention", "full_attention"],
        rope_theta=1_000_000.0,
        rms_norm_eps=1e-6,
        query_pre_attn_scalar=32,
        bos_token_id=2,
        eos_token_id=[1, 106],
        pad_token_id=0,
        tie_word_embeddings=True,
        torch_dtype="bfloat16",
    )
    model = Gemma3ForCausalLM(config).to(torch.bfloat16)
    model.generation_config.bos_token_id = 2
    model.generation_config.eos_token_id = [1, 106]  # <eos>, <end_of_turn>, as the real model
    model.generation_config.pad_token_id = 0
    model.save_pretrained(out, safe_serialization=True)
    params = sum(p.numel() for p in model.parameters())
    log(f"model saved: {params / 1e6:.1f}M parameters")


def main():
    gguf_path, out = sys.argv[1], sys.argv[2]
    tmp = out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    tok = build_tokenizer(gguf_path, tmp)
    vocab_size = len(tok)
    build_model(vocab_size, tmp)
    check_tokenizer(tmp, vocab_size)
    with open(os.path.join(tmp, "llmload-model.json"), "w") as f:
        json.dump({"name": "gemma3-tiny-random", "tokenizer_from": os.path.basename(gguf_path), "seed": SEED}, f)
    shutil.rmtree(out, ignore_errors=True)
    os.rename(tmp, out)


if __name__ == "__main__":
    main()
