"""Caption → caption search across languages: the captions of language ``target`` in the caption collection
ranked for a query written in ``lang`` (``GET /captions/search``, ``polyglot captions search``).

Which space the two sides meet in, per (lang, target) pair:

* ``pcca:<x>-<y>`` — a linear alignment trained for the pair (:mod:`indexer.captions.alignment`): the query's
  sentence embedding through the query language's map, each caption's through the target language's map, cosine
  in the aligned space. It measured above every other space on the dev task-1 translations.
* otherwise the fallback (``POLYGLOT_CAPTION_SEARCH_FALLBACK``): ``sentence`` — the text encoder's sentence
  embeddings (the student's trunk; a research tower's frozen encoder) compared as they are — or ``tower`` — the captions' image-space vectors the caption index already
  holds (``benchmarks/caption_search_eval.py`` measures both).

The caption vectors of a language in a sentence or aligned space are computed once and kept: in memory, checked
against the caption index's current vectors of that language on every query (a write swaps in a new object, so
an identity test suffices), and on disk under ``<captions folder>/spaces/<space key>/<lang>.safetensors``, the
key carrying the alignment's weight hash. After captions are added or removed only the new ones are embedded
(their sentence embeddings usually come from the features cache, filled when they were indexed).
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from safetensors import SafetensorError
from safetensors.numpy import load as load_numpy
from safetensors.numpy import save as save_numpy

from indexer.atomic import atomic_write_bytes
from indexer.caption_records import LANG_CODE
from indexer.captions.alignment import CaptionAlignment
from indexer.captions.index import CaptionHit, CaptionIndex
from indexer.encoders.base import TextEncoder
from indexer.query.pipeline import unshouted
from indexer.sentence_cache import cached_sentences
from indexer.store.vectors import VectorIndex
from indexer.tower import TextEmbedder
from indexer.unit import unit_rows

log = logging.getLogger(__name__)

SPACES_DIR = "spaces"
_BATCH = 4096  # captions embedded per pass


class CaptionSearchError(ValueError):
    """A request this collection cannot answer (unknown language, no captions in the target); says why."""


@dataclass(frozen=True)
class Space:
    name: str  # reported with the results: pcca:en-de, sentence:muse+e5-small, tower
    key: str  # folder of its cached caption vectors; changes when the alignment's weights change
    encoder: TextEncoder | None  # None: the tower space (the caption index's own vectors)
    query: Callable[[np.ndarray], np.ndarray]  # the query language's sentence embeddings → the space
    target: Callable[[np.ndarray], np.ndarray]  # the target language's


@dataclass(frozen=True)
class _Kept:
    source: VectorIndex | None  # the caption index's vectors of the language these were computed against
    ids: np.ndarray  # ascending SQL ids
    vectors: np.ndarray  # unit rows, one per id


def _identity(sentences: np.ndarray) -> np.ndarray:
    return sentences


class CrossLingualCaptions:
    def __init__(
        self,
        captions: CaptionIndex,
        tower: TextEmbedder,
        alignments: Sequence[CaptionAlignment] = (),
        encoders: dict[str, TextEncoder] | None = None,
        fallback: str = "sentence",
        query_cache: Path | None = None,
    ) -> None:
        """``query_cache``: also read the queries' sentence embeddings through the features cache (evaluation
        runs embed the same captions again and again; the service leaves it off)."""
        if fallback not in ("sentence", "tower"):
            raise ValueError(f"unknown caption search fallback {fallback!r}; choose sentence or tower")
        self.captions = captions
        self.tower = tower
        self.query_cache = query_cache
        self._pairs: dict[tuple[str, str], Space] = {}
        for alignment in alignments:
            encoder = (encoders or {})[alignment.text_encoder]
            x, y = alignment.langs
            key = f"{alignment.method}-{x}-{y}-{alignment.fingerprint}"
            for a, b in ((x, y), (y, x)):
                self._pairs[(a, b)] = Space(alignment.name, key, encoder, _side(alignment, a), _side(alignment, b))
        self.fallback = fallback
        self._fallbacks: dict[tuple[str, str], Space] = {}
        self._kept: dict[tuple[str, str], _Kept] = {}
        self._lock = threading.Lock()  # one computation of a language's vectors at a time

    # ------------------------------------------------------------------ which space
    def space(self, lang: str, target: str) -> Space:
        """The space a query in ``lang`` meets the captions of ``target`` in; raises :class:`CaptionSearchError`
        for a language the space's encoder does not cover or a target with no captions."""
        if not LANG_CODE.match(lang):
            raise CaptionSearchError(f"{lang!r} is not a language code (ISO 639-1, e.g. en, de, zh)")
        available = self.captions.languages()
        if target not in available:
            raise CaptionSearchError(
                f"no captions in {target!r}: the caption collection has "
                f"{', '.join(available) or 'no captions (index some with `polyglot index captions add FILE.jsonl`)'}"
            )
        space = self._pairs.get((lang, target)) or self._fallback(lang, target)
        encoder = space.encoder or self.tower.encoder
        # An alignment was trained on both its languages, whatever its encoder declares.
        if (lang, target) not in self._pairs and encoder.languages is not None and lang not in encoder.languages:
            raise CaptionSearchError(
                f"the text encoder {encoder.name} does not cover {lang!r}; it covers "
                f"{', '.join(sorted(encoder.languages))}"
            )
        return space

    def _fallback(self, lang: str, target: str) -> Space:
        if self.fallback == "tower":
            return Space("tower", "tower", None, _identity, _identity)
        space = self._fallbacks.get((lang, target))
        if space is None:
            # The tower's input: the main encoder's sentence embeddings with its language bridge applied (a bridged
            # language's embedding part that the encoder lacks is predicted from the part it has, e.g. Czech mUSE
            # from e5), so a caption's key depends on its language only through the bridge.
            bridge, name = self.tower.bridge, self.tower.encoder.name
            key = f"sentence-{name}"
            if bridge is not None and target in bridge.languages:  # the kept vectors depend on the bridge's weights
                key += "-bridge-" + hashlib.sha256(bridge.weight.tobytes()).hexdigest()[:12]
            space = Space(f"sentence:{name}", key, self.tower.encoder, self._bridged(lang), self._bridged(target))
            self._fallbacks[(lang, target)] = space
        return space

    def _bridged(self, lang: str) -> Callable[[np.ndarray], np.ndarray]:
        bridge = self.tower.bridge
        if bridge is None or lang not in bridge.languages:
            return _identity
        return lambda sentences: bridge.apply(sentences, lang)

    # ------------------------------------------------------------------ search
    def search(self, texts: Sequence[str], lang: str, target: str, k: int) -> tuple[list[list[CaptionHit]], str]:
        """The best ``k`` captions in ``target`` for each query text in ``lang``, and the space's name."""
        if k < 1:
            raise CaptionSearchError(f"k must be at least 1, got {k}")
        space = self.space(lang, target)
        texts = [unshouted(text, lang) for text in texts]  # "A DOG ON THE BEACH" is read as "/search" reads it
        if space.encoder is None:
            vectors = self.tower.embed(texts, lang)
            return [self.captions.search(row, [target], k)[target] for row in vectors], space.name
        query = unit_rows(space.query(self._sentences(space.encoder, texts, self.query_cache)))
        kept = self.vectors(space, target)
        if not len(kept.ids):
            return [[] for _ in texts], space.name
        scores = query @ kept.vectors.T
        k = min(k, scores.shape[1])
        best = np.argpartition(-scores, k - 1, axis=1)[:, :k]
        order = np.take_along_axis(best, np.argsort(-np.take_along_axis(scores, best, axis=1), axis=1), axis=1)
        rows = self.captions.store.get_many(kept.ids[order].ravel().tolist())
        hits = []
        for q, positions in enumerate(order):
            found = []
            for p in positions:
                row = rows.get(int(kept.ids[p]))
                if row is not None:  # removed since the vectors were read: left out
                    found.append(CaptionHit(row.id, float(scores[q, p]), row.lang, row.text, row.image, row.source))
            hits.append(found)
        return hits, space.name

    # ------------------------------------------------------------------ kept caption vectors
    def vectors(self, space: Space, target: str) -> _Kept:
        """The target language's caption vectors in ``space``, brought up to date with the caption index."""
        current = self.captions.vectors(target)
        kept = self._kept.get((space.key, target))
        if kept is not None and kept.source is current:
            return kept
        with self._lock:
            kept = self._kept.get((space.key, target))
            if kept is None or kept.source is not current:
                kept = self._refresh(space, target, current, kept or self._read(space, target))
                self._kept[(space.key, target)] = kept
            return kept

    def _refresh(self, space: Space, target: str, current: VectorIndex | None, old: _Kept | None) -> _Kept:
        assert space.encoder is not None
        ids = np.sort(current.ids()) if current is not None else np.zeros(0, dtype=np.int64)
        if old is not None and np.array_equal(old.ids, ids):
            return _Kept(current, ids, old.vectors)
        old_ids = old.ids if old is not None else np.zeros(0, dtype=np.int64)
        known = np.isin(ids, old_ids)
        rows = self.captions.store.get_many(ids[~known].tolist())
        new_ids = np.array([i for i in ids[~known] if int(i) in rows], dtype=np.int64)
        texts = [rows[int(i)].text for i in new_ids]
        new = [
            unit_rows(space.target(self._sentences(space.encoder, texts[s : s + _BATCH], self.captions.cache_dir)))
            for s in range(0, len(texts), _BATCH)
        ]
        parts_ids = [ids[known], new_ids]
        parts = [old.vectors[np.searchsorted(old_ids, ids[known])] if old is not None else None, *new]
        dim = next((p.shape[1] for p in parts if p is not None and p.ndim == 2), 0)
        stacked = [p for p in parts if p is not None and len(p)]
        vectors = np.concatenate(stacked).astype(np.float32) if stacked else np.zeros((0, dim), np.float32)
        all_ids = np.concatenate(parts_ids)
        order = np.argsort(all_ids)
        kept = _Kept(current, all_ids[order], np.ascontiguousarray(vectors[order]))
        log.info(
            "caption vectors updated",
            extra={"space": space.name, "lang": target, "embedded": len(new_ids), "kept": int(known.sum())},
        )
        self._write(space, target, kept)
        return kept

    def _path(self, space: Space, target: str) -> Path:
        return self.captions.folder / SPACES_DIR / space.key / f"{target}.safetensors"

    def _read(self, space: Space, target: str) -> _Kept | None:
        """What an earlier run kept on disk (``None`` when missing or unreadable: recomputed)."""
        try:
            tensors = load_numpy(self._path(space, target).read_bytes())
            ids, vectors = tensors["ids"].astype(np.int64), tensors["vectors"].astype(np.float32)
        except (OSError, KeyError, SafetensorError, ValueError):
            return None
        if vectors.ndim != 2 or len(ids) != len(vectors) or np.any(np.diff(ids) <= 0):
            return None
        return _Kept(None, ids, vectors)

    def _write(self, space: Space, target: str, kept: _Kept) -> None:
        path = self._path(space, target)
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_bytes(path, save_numpy({"ids": kept.ids, "vectors": kept.vectors}))

    @staticmethod
    def _sentences(encoder: TextEncoder, texts: Sequence[str], cache_dir: Path | None) -> np.ndarray:
        if not texts:
            return np.zeros((0, encoder.dim), dtype=np.float32)
        if not encoder.loaded:
            encoder.load()
        if cache_dir is not None and encoder.dim:
            return cached_sentences(encoder, list(texts), cache_dir)
        return encoder.predict(list(texts))


def _side(alignment: CaptionAlignment, lang: str) -> Callable[[np.ndarray], np.ndarray]:
    return lambda sentences: alignment.project(lang, sentences)
