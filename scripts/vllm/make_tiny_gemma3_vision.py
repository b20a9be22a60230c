"""Builds a tiny vision-language Gemma 3 with random weights for llmload's image tests: the text
model of make_tiny_gemma3.py (2 layers, hidden size 128, the real Gemma 3 tokenizer) with a tiny
SigLIP vision tower (1 layer, hidden size 32) and Gemma 3's processor, everything made locally
(no hub access).

    python make_tiny_gemma3_vision.py TINY_GEMMA3_DIR OUT_DIR

TINY_GEMMA3_DIR is the text model make_tiny_gemma3.py wrote (its tokenizer and chat template are
taken from there). An image of any size is resized to 224×224, cut into 16×16 patches of 14
pixels and pooled to 16 soft tokens: the processor puts `<start_of_image>`, 16 image tokens and
`<end_of_image>` (with blank lines around them) where the chat template puts the image.
Writes into OUT_DIR.tmp and renames it to OUT_DIR when complete.
"""

import json
import os
import shutil
import sys

import torch
from transformers import (
    AutoTokenizer,
    Gemma3Config,
    Gemma3ForConditionalGeneration,
    Gemma3ImageProcessor,
    Gemma3Processor,
    Gemma3TextConfig,
    SiglipVisionConfig,
)

SEED = 20260102
IMAGE_TOKENS = 16


def log(msg):
    print(f"make_tiny_gemma3_vision: {msg}", file=sys.stderr, flush=True)


def hub_names(path):
    """Renames the vision tower's weights as Gemma 3's published checkpoints name them
    (`vision_tower.vision_model.…`), which is what vLLM loads."""
    from safetensors.torch import load_file, save_file

    tensors = load_file(path)
    renamed = {}
    for name, tensor in tensors.items():
        if name.startswith("vision_tower.") and not name.startswith("vision_tower.vision_model."):
            name = "vision_tower.vision_model." + name[len("vision_tower."):]
        renamed[name] = tensor.contiguous()
    save_file(renamed, path, metadata={"format": "pt"})


def main():
    text_dir, out = sys.argv[1], sys.argv[2]
    tmp = out + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    tok = AutoTokenizer.from_pretrained(text_dir)
    # Gemma 3's image token comes after the text vocabulary, as in the real vision models, and
    # the tokenizer names its image tokens as Gemma 3's own tokenizer_config.json does.
    tok.add_tokens(["<image_soft_token>"], special_tokens=True)
    tok.save_pretrained(tmp)
    path = os.path.join(tmp, "tokenizer_config.json")
    with open(path) as f:
        cfg = json.load(f)
    cfg["extra_special_tokens"] = {
        "boi_token": "<start_of_image>",
        "eoi_token": "<end_of_image>",
        "image_token": "<image_soft_token>",
    }
    with open(path, "w") as f:
        json.dump(cfg, f, indent=2)
    tok = AutoTokenizer.from_pretrained(tmp)
    image_token_id = tok.convert_tokens_to_ids("<image_soft_token>")
    boi, eoi = tok.convert_tokens_to_ids("<start_of_image>"), tok.convert_tokens_to_ids("<end_of_image>")
    log(f"image token {image_token_id}, boi {boi}, eoi {eoi}, vocabulary {len(tok)}")
    with open(os.path.join(text_dir, "chat_template.jinja")) as f:
        template = f.read()
    image_processor = Gemma3ImageProcessor(
        size={"height": 224, "width": 224},
        image_mean=[0.5, 0.5, 0.5],
        image_std=[0.5, 0.5, 0.5],
        do_pan_and_scan=False,
    )
    processor = Gemma3Processor(
        image_processor=image_processor,
        tokenizer=tok,
        chat_template=template,
        image_seq_length=IMAGE_TOKENS,
    )
    processor.save_pretrained(tmp)
    with open(os.path.join(text_dir, "config.json")) as f:
        text = json.load(f)
    torch.manual_seed(SEED)
    text_config = Gemma3TextConfig(
        vocab_size=len(tok),
        hidden_size=text["hidden_size"],
        intermediate_size=text["intermediate_size"],
        num_hidden_layers=text["num_hidden_layers"],
        num_attention_heads=text["num_attention_heads"],
        num_key_value_heads=text["num_key_value_heads"],
        head_dim=text["head_dim"],
        max_position_embeddings=text["max_position_embeddings"],
        sliding_window=text["sliding_window"],
        layer_types=text["layer_types"],
        rope_theta=text.get("rope_theta", 1_000_000.0),
        rms_norm_eps=1e-6,
        query_pre_attn_scalar=text["query_pre_attn_scalar"],
        bos_token_id=2,
        eos_token_id=[1, 106],
        pad_token_id=0,
    )
    vision_config = SiglipVisionConfig(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=1,
        num_attention_heads=2,
        image_size=224,
        patch_size=14,
        vision_use_head=False,
    )
    config = Gemma3Config(
        text_config=text_config.to_dict(),
        vision_config=vision_config.to_dict(),
        mm_tokens_per_image=IMAGE_TOKENS,
        boi_token_index=boi,
        eoi_token_index=eoi,
        image_token_index=image_token_id,
        tie_word_embeddings=True,
        torch_dtype="bfloat16",
    )
    model = Gemma3ForConditionalGeneration(config).to(torch.bfloat16)
    model.generation_config.bos_token_id = 2
    model.generation_config.eos_token_id = [1, 106]
    model.generation_config.pad_token_id = 0
    model.save_pretrained(tmp, safe_serialization=True)
    hub_names(os.path.join(tmp, "model.safetensors"))
    params = sum(p.numel() for p in model.parameters())
    log(f"model saved: {params / 1e6:.1f}M parameters")
    with open(os.path.join(tmp, "llmload-model.json"), "w") as f:
        json.dump({"name": "gemma3-tiny-vision-random", "text_from": os.path.basename(text_dir), "seed": SEED}, f)
    shutil.rmtree(out, ignore_errors=True)
    os.rename(tmp, out)


if __name__ == "__main__":
    main()
