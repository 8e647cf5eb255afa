"""Fit the language bridge (``training/bridge.py``) of a hybrid tower from parallel captions.

Parallel pairs come from the data set itself: for each image and caption source, one caption in the bridged
language and one in English (Multi30K task 1 is exactly that: an English caption and its translations). The
input is the covering part's embedding of the translation, the target the other part's embedding of the
English caption. Part embeddings come from the sentence cache, so a refit costs seconds.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from indexer.encoders.base import TextEncoder
from indexer.sentence_cache import cached_sentences
from indexer.unit import unit_rows
from training.bridge import LanguageBridge, fit_ridge, part_columns
from training.data.dataset import CaptionDataset
from training.encoders.hybrid import HybridTextEncoder


def parallel_pairs(dataset: CaptionDataset, lang: str, pivot: str = "en") -> list[tuple[str, str]]:
    """``(caption in lang, caption in pivot)`` for each (image, source) with exactly one caption in each."""
    groups: dict[tuple[str, str], dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for caption in dataset.captions:
        if caption.lang in (lang, pivot):
            groups[(caption.image, caption.source)][caption.lang].append(caption.text)
    return [
        (texts[lang][0], texts[pivot][0])
        for texts in groups.values()
        if len(texts[lang]) == 1 and len(texts[pivot]) == 1
    ]


def choose_parts(encoder: HybridTextEncoder, lang: str) -> tuple[int, int]:
    """(source, target) part indexes: the target does not declare ``lang``, the source does."""
    missing = [i for i, part in enumerate(encoder.parts) if part.languages is not None and lang not in part.languages]
    covering = [i for i, part in enumerate(encoder.parts) if part.supports(lang)]
    if not missing:
        raise ValueError(f"every part of {encoder.name} declares {lang!r}: there is nothing to bridge")
    if not covering:
        raise ValueError(f"no part of {encoder.name} declares {lang!r}: there is nothing to bridge from")
    return covering[0], missing[0]


def fit_bridge(
    dataset: CaptionDataset,
    encoder: TextEncoder,
    langs: Sequence[str],
    cache_dir: Path,
    ridge: float = 0.01,
    held_out: float = 0.1,
) -> LanguageBridge:
    """Fit one map for ``langs`` (all must need the same source → target parts) and report held-out cosine."""
    if not isinstance(encoder, HybridTextEncoder):
        raise ValueError(f"a language bridge needs a hybrid text encoder (e.g. muse+e5-small), not {encoder.name!r}")
    parts = {choose_parts(encoder, lang) for lang in langs}
    if len(parts) != 1:
        raise ValueError(f"{', '.join(langs)} need different parts bridged: fit them one at a time")
    source, target = parts.pop()
    pairs = [pair for lang in langs for pair in parallel_pairs(dataset, lang)]
    if len(pairs) < 100:
        raise ValueError(f"only {len(pairs)} parallel caption pairs for {', '.join(langs)} ↔ en: need at least 100")
    inputs = cached_sentences(encoder.parts[source], [p[0] for p in pairs], cache_dir)
    targets = cached_sentences(encoder.parts[target], [p[1] for p in pairs], cache_dir)
    order = np.random.default_rng(0).permutation(len(pairs))
    cut = int(len(pairs) * (1 - held_out))
    fit_rows, check_rows = order[:cut], order[cut:]
    dims = [part.dim for part in encoder.parts]
    bridge = LanguageBridge(
        weight=fit_ridge(inputs[fit_rows], targets[fit_rows], ridge),
        source=part_columns(dims, source),
        target=part_columns(dims, target),
        languages=frozenset(langs),
        text_encoder=encoder.name,
    )
    info: dict[str, Any] = {
        "pairs": len(pairs),
        "ridge": ridge,
        "held_out_pairs": len(check_rows),
        # How close the prediction gets to the target part on pairs it never saw, against the untouched part.
        "held_out_cosine": _mean_cosine(bridge.predict_target(inputs[check_rows]), targets[check_rows]),
    }
    # Refit on every pair for the shipped map once the held-out check is recorded.
    bridge.weight = fit_ridge(inputs, targets, ridge)
    bridge.info = info
    return bridge


def untouched_cosine(encoder: HybridTextEncoder, dataset: CaptionDataset, lang: str, cache_dir: Path) -> float:
    """Cosine between the target part's own embedding of the translation and of the English caption."""
    _, target = choose_parts(encoder, lang)
    pairs = parallel_pairs(dataset, lang)
    part = encoder.parts[target]
    own = cached_sentences(part, [p[0] for p in pairs], cache_dir)
    english = cached_sentences(part, [p[1] for p in pairs], cache_dir)
    return _mean_cosine(own, english)


def _mean_cosine(a: np.ndarray, b: np.ndarray) -> float:
    return round(float(np.mean(np.sum(unit_rows(a) * unit_rows(b), axis=1))), 4)
