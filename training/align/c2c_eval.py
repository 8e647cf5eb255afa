"""Cross-lingual caption retrieval as in the DPCCA paper's Table 2: R@1 and sentence-level BLEU+1.

A query caption in language a retrieves, among the captions of language b, the one describing the same image
(one relevant target per query, single-best). R@1 counts exact hits; BLEU+1 (Lin & Och 2004: BLEU with add-one
smoothing of the n-gram precisions for n > 1) scores the retrieved caption against the relevant one, so a near
miss that says the same thing still earns credit. Captions are lower-cased and tokenised (sacrebleu's 13a), as
the paper lower-cased and tokenised them. Similarity is the cosine; ties count against the query.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np


def unit(vectors: np.ndarray) -> np.ndarray:
    vectors = np.asarray(vectors, dtype=np.float32)
    return vectors / np.maximum(np.linalg.norm(vectors, axis=1, keepdims=True), 1e-12)


def retrieve(source: np.ndarray, target: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Row k of ``source`` and of ``target`` describe the same image. Returns (hit@1 per query, best target)."""
    scores = unit(source) @ unit(target).T
    true = scores.diagonal()
    hits = (scores >= true[:, None]).sum(axis=1) == 1
    return hits, scores.argmax(axis=1)


def bleu_plus_one(hypotheses: Sequence[str], references: Sequence[str]) -> np.ndarray:
    """Sentence BLEU+1 of each hypothesis against its one reference, in [0, 1]."""
    from sacrebleu.metrics import BLEU  # research dependency (the `research` extra)

    # Add-one smoothing already covers orders longer than the sentence, which sacrebleu's advice is about.
    logging.getLogger("sacrebleu").setLevel(logging.ERROR)
    bleu = BLEU(lowercase=True, tokenize="13a", smooth_method="add-k", smooth_value=1)
    return np.array([bleu.sentence_score(h, [r]).score / 100.0 for h, r in zip(hypotheses, references, strict=True)])


def c2c_table(
    x_vectors: np.ndarray,
    y_vectors: np.ndarray,
    x_texts: Sequence[str],
    y_texts: Sequence[str],
    x_lang: str,
    y_lang: str,
    bleu: bool = True,
) -> dict[str, dict[str, float]]:
    """``{"en→de": {"r1", "bleu1", "queries"}, "de→en": {...}}`` for paired rows of the two languages."""
    table: dict[str, dict[str, float]] = {}
    for src, tgt, tgt_texts, a, b in (
        (x_vectors, y_vectors, y_texts, x_lang, y_lang),
        (y_vectors, x_vectors, x_texts, y_lang, x_lang),
    ):
        hits, best = retrieve(src, tgt)
        row: dict[str, float] = {"r1": float(hits.mean()), "queries": len(hits)}
        if bleu:
            row["bleu1"] = float(bleu_plus_one([tgt_texts[i] for i in best], list(tgt_texts)).mean())
        table[f"{a}→{b}"] = row
    return table
