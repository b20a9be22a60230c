"""Builds LoRA adapters for the tiny random-weight Gemma 3 that llmload's tests serve with vLLM.

No adapter can be downloaded, so each is written by hand in PEFT's layout: adapter_config.json and
adapter_model.safetensors with random A and B matrices (rank RANK) on every layer's q_proj and
v_proj, from a seed of its own. The generated text is noise, as the base model's is; what matters is
that vLLM loads them as real adapters and applies their weights on every request that names one.

    python make_tiny_lora.py BASE_MODEL_DIR OUT_DIR NAME [NAME…]

Writes OUT_DIR/NAME for each NAME (through NAME.tmp, renamed when complete).
"""

import json
import os
import shutil
import sys

import torch
from safetensors.torch import save_file

RANK = 8
SEED = 20260102
TARGETS = ("q_proj", "v_proj")


def log(msg):
    print(f"make_tiny_lora: {msg}", file=sys.stderr, flush=True)


def shapes(config):
    """(in, out) features of each target projection."""
    hidden = config["hidden_size"]
    head = config["head_dim"]
    return {
        "q_proj": (hidden, config["num_attention_heads"] * head),
        "v_proj": (hidden, config["num_key_value_heads"] * head),
    }


def build(base, out, name, seed):
    with open(os.path.join(base, "config.json")) as f:
        config = json.load(f)
    generator = torch.Generator().manual_seed(seed)
    tensors = {}
    for layer in range(config["num_hidden_layers"]):
        for target, (fan_in, fan_out) in shapes(config).items():
            key = f"base_model.model.model.layers.{layer}.self_attn.{target}"
            a = torch.randn(RANK, fan_in, generator=generator) / fan_in**0.5
            b = torch.randn(fan_out, RANK, generator=generator) * 0.02
            tensors[f"{key}.lora_A.weight"] = a.to(torch.bfloat16).contiguous()
            tensors[f"{key}.lora_B.weight"] = b.to(torch.bfloat16).contiguous()
    adapter_config = {
        "peft_type": "LORA",
        "task_type": "CAUSAL_LM",
        "base_model_name_or_path": base,
        "r": RANK,
        "lora_alpha": 2 * RANK,
        "lora_dropout": 0.0,
        "bias": "none",
        "target_modules": list(TARGETS),
        "fan_in_fan_out": False,
        "inference_mode": True,
        "modules_to_save": None,
    }
    target = os.path.join(out, name)
    tmp = target + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    save_file(tensors, os.path.join(tmp, "adapter_model.safetensors"))
    with open(os.path.join(tmp, "adapter_config.json"), "w") as f:
        json.dump(adapter_config, f, indent=2)
    shutil.rmtree(target, ignore_errors=True)
    os.rename(tmp, target)
    log(f"{name}: rank {RANK} on {', '.join(TARGETS)}, {len(tensors)} tensors, seed {seed}")


def main():
    base, out, names = sys.argv[1], sys.argv[2], sys.argv[3:]
    if not names:
        sys.exit("usage: make_tiny_lora.py BASE_MODEL_DIR OUT_DIR NAME [NAME…]")
    os.makedirs(out, exist_ok=True)
    for i, name in enumerate(names):
        build(base, out, name, SEED + i)


if __name__ == "__main__":
    main()
