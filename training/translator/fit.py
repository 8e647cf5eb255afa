"""Fit the Translator from a bilingual lexicon (``polyglot translator fit``): words → embeddings → M.

Lexicon files are the MUSE ``english<TAB>other`` dictionaries (``../shared/data/lexicons``). Identity pairs
(names, numbers, loanwords) are dropped, and so are pairs whose English word never occurs in the data set's
English training captions when a vocabulary is given: the map should be good on the words people use to describe
photos, not on the dictionary's long tail. The new language's words are split (seeded) into training and test
words; M is fitted on the training pairs (least squares or Procrustes), refined with RCSLS, and word-translation
P@1 on the test words is reported before and after the refinement (the side metric of the issue).

Source words are embedded by the new language's encoder, English words by the pivot tower's encoder (the same
encoder for a language map, another one for an encoder swap), both through the features cache.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from safetensors.numpy import load, save

from indexer.atomic import atomic_write_bytes, atomic_write_json
from indexer.encoders.base import TextEncoder
from indexer.sentence_cache import cached_sentences
from training.translator.model import least_squares, procrustes, refine_rcsls, translation_p1

CONFIG_NAME, WEIGHTS_NAME = "translator.json", "translator.safetensors"
WORD = re.compile(r"\w+", re.UNICODE)


def caption_vocabulary(texts: Iterable[str]) -> Counter[str]:
    return Counter(word for text in texts for word in WORD.findall(text.lower()))


def read_lexicon(path: Path, vocabulary: Counter[str] | None = None) -> list[tuple[str, str]]:
    """``(other, english)`` pairs, identity pairs dropped, English words restricted to ``vocabulary`` if given."""
    pairs = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        english, _, other = line.partition("\t")
        english, other = english.strip(), other.strip()
        if english and other and english != other and (vocabulary is None or vocabulary[english] > 0):
            pairs.append((other, english))
    if not pairs:
        raise ValueError(f"no usable word pairs in {path}")
    return pairs


@dataclass
class LexiconSplit:
    train: list[tuple[str, str]]
    test_words: list[str]
    test_gold: list[set[int]]  # indexes into candidates
    candidates: list[str]  # every English word of the kept pairs


def split_lexicon(
    pairs: list[tuple[str, str]], test_share: float = 0.2, max_train: int = 5000, max_test: int = 1500, seed: int = 0
) -> LexiconSplit:
    words = sorted({other for other, _ in pairs})
    order = np.random.default_rng(seed).permutation(len(words))
    cut = int(len(words) * (1 - test_share))
    train_words = {words[i] for i in order[:cut][:max_train]}
    test_words = [words[i] for i in order[cut:][:max_test]]
    candidates = sorted({english for _, english in pairs})
    index = {word: i for i, word in enumerate(candidates)}
    gold: dict[str, set[int]] = {}
    for other, english in pairs:
        gold.setdefault(other, set()).add(index[english])
    return LexiconSplit(
        train=[(o, e) for o, e in pairs if o in train_words],
        test_words=test_words,
        test_gold=[gold[w] for w in test_words],
        candidates=candidates,
    )


def fit_translator(
    split: LexiconSplit,
    source_encoder: TextEncoder,
    target_encoder: TextEncoder,
    cache_dir: Path,
    init: str = "procrustes",
    rcsls_steps: int = 50,
    k: int = 10,
    lr: float = 1.0,
) -> tuple[np.ndarray, dict[str, Any]]:
    """M (d_target, d_source) and its report (pairs, P@1 of the initialisation and after RCSLS)."""
    if init not in ("procrustes", "lstsq"):
        raise ValueError(f"unknown initialisation {init!r}; choose procrustes or lstsq")
    source = cached_sentences(source_encoder, [o for o, _ in split.train], cache_dir)
    target = cached_sentences(target_encoder, [e for _, e in split.train], cache_dir)
    queries = cached_sentences(source_encoder, split.test_words, cache_dir)
    candidates = cached_sentences(target_encoder, split.candidates, cache_dir)
    start = procrustes(source, target) if init == "procrustes" else least_squares(source, target, ridge=1e-2)
    refined, history = (
        refine_rcsls(start, source, target, k=k, steps=rcsls_steps, lr=lr) if rcsls_steps else (start, [])
    )
    report: dict[str, Any] = {
        "train_pairs": len(split.train),
        "test_words": len(split.test_words),
        "candidates": len(split.candidates),
        "init": init,
        "p1_init": translation_p1(start, queries, split.test_gold, candidates),
        "p1_rcsls": translation_p1(refined, queries, split.test_gold, candidates),
        "rcsls_loss": [round(history[0], 4), round(history[-1], 4)] if history else [],
    }
    if source_encoder.name == target_encoder.name and source.shape[1] == target.shape[1]:
        # Same space: the identity (no map at all) is the baseline the map must beat.
        report["p1_identity"] = translation_p1(np.eye(source.shape[1]), queries, split.test_gold, candidates)
    return refined, report


def save_translator(folder: Path, m: np.ndarray, meta: dict[str, Any]) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(folder / WEIGHTS_NAME, save({"m": np.ascontiguousarray(m, dtype=np.float32)}))
    atomic_write_json(folder / CONFIG_NAME, meta)


def load_translator(folder: Path) -> tuple[np.ndarray, dict[str, Any]]:
    path = Path(folder) / CONFIG_NAME
    if not path.exists():
        raise FileNotFoundError(f"no translator at {folder}: {CONFIG_NAME} is missing (polyglot translator fit)")
    return load((Path(folder) / WEIGHTS_NAME).read_bytes())["m"], json.loads(path.read_text(encoding="utf-8"))
