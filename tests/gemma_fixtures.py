"""A tiny random model of EmbeddingGemma's architecture, saved as a sentence-transformers folder: Gemma 3 text
transformer (bidirectional attention, as EmbeddingGemma), mean pooling, two bias-free Dense layers, Normalize.
Sizes are tiny (2 layers, 32-d hidden) but the output is 768-d, so the Matryoshka truncations apply as to the real
model. CI needs no weights: the real model is only used by `polyglot models fetch --embeddinggemma`."""

from __future__ import annotations

from pathlib import Path

WORDS = "a dog cat runs on the beach un chien sur la plage ein hund am strand task search result query title none text"


def tiny_embeddinggemma(folder: Path) -> Path:
    import torch
    from sentence_transformers import SentenceTransformer, models
    from tokenizers import Tokenizer, pre_tokenizers
    from tokenizers import models as token_models
    from transformers import Gemma3TextConfig, Gemma3TextModel, PreTrainedTokenizerFast

    vocab = {
        word: i for i, word in enumerate(["<pad>", "<unk>", "<bos>", "<eos>", ":", "|", *dict.fromkeys(WORDS.split())])
    }
    tokenizer = Tokenizer(token_models.WordLevel(vocab, unk_token="<unk>"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, pad_token="<pad>", unk_token="<unk>", bos_token="<bos>", eos_token="<eos>"
    )
    torch.manual_seed(0)
    config = Gemma3TextConfig(
        vocab_size=len(vocab), hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
        num_key_value_heads=1, head_dim=16, max_position_embeddings=64, sliding_window=8, pad_token_id=0,
        bos_token_id=2, eos_token_id=3, use_bidirectional_attention=True,
    )  # fmt: skip
    transformer_dir = folder / "transformer"
    Gemma3TextModel(config).save_pretrained(transformer_dir)
    fast.save_pretrained(transformer_dir)
    identity = torch.nn.Identity()
    modules = [
        models.Transformer(str(transformer_dir), max_seq_length=64),
        models.Pooling(32, pooling_mode="mean"),
        models.Dense(32, 64, bias=False, activation_function=identity),
        models.Dense(64, 768, bias=False, activation_function=identity),
        models.Normalize(),
    ]
    out = folder / "embeddinggemma-300m"
    SentenceTransformer(modules=modules).save(str(out))
    return out
