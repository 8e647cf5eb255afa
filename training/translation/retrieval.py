"""Translation by retrieval: a query's "translation" into a language is the caption of that language, in a
multilingual caption collection, nearest to the query in a cross-lingual sentence space (mUSE).

No translation model is available offline, but captions in many languages are. The collection's sentence vectors
are computed once (through the features cache, so the towers later find the retrieved captions' embeddings
there too) and stored as ``vectors.npy`` (float16, unit rows) with a ``captions.json`` sidecar (texts, each
language's row range, the encoder and the collection's size and mtime) written last, atomically: an index without
a complete sidecar is rebuilt. Search is an exact inner product per target language (numpy; ~110k rows: a few ms).
"""

from __future__ import annotations

import hashlib
import io
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from indexer.atomic import atomic_write_bytes, atomic_write_json
from indexer.caption_records import CaptionFileError, iter_captions
from indexer.unit import unit_rows
from training.translation.base import TranslationError

log = logging.getLogger(__name__)
Embed = Callable[[list[str]], np.ndarray]  # texts → sentence vectors (any norm)
SIDECAR = "captions.json"
VECTORS = "vectors.npy"


def corpus_file(corpus: Path) -> Path:
    """A captions JSONL file, or a folder holding ``captions.jsonl`` (the layout of ../shared/data/*)."""
    path = Path(corpus)
    path = path / "captions.jsonl" if path.is_dir() else path
    if not path.is_file():
        raise TranslationError(f"translation corpus {corpus} is not a captions.jsonl file or a folder holding one")
    return path


def index_folder(cache_dir: Path, corpus: Path, encoder: str, langs: Sequence[str]) -> Path:
    """Where the index of ``corpus`` lives: one folder per (collection file, its size and mtime, encoder, langs)."""
    path = corpus_file(corpus).resolve()
    stat = path.stat()
    key = f"{path}\x00{stat.st_size}\x00{stat.st_mtime_ns}\x00{encoder}\x00{','.join(sorted(langs))}"
    return Path(cache_dir) / "translation" / f"{encoder}-{hashlib.sha256(key.encode()).hexdigest()[:16]}"


@dataclass
class RetrievalTranslator:
    texts: list[str]
    vectors: np.ndarray  # (n, d) float32 unit rows, grouped by language
    ranges: dict[str, tuple[int, int]]  # lang → [start, stop) rows
    embed: Embed
    name: str = "retrieval"
    # The encoder's languages (None: any): a query in another language, or a target outside them, gets no
    # translation — mUSE has no Czech, and its nearest "Czech caption" of a query is noise (docs/results.md).
    supported: frozenset[str] | None = None
    min_similarity: float = -1.0  # below this cosine the nearest caption is no translation (None)

    @property
    def languages(self) -> frozenset[str]:
        return frozenset(self.ranges)

    def with_queries(
        self, embed: Embed, supported: frozenset[str] | None = None, min_similarity: float = -1.0
    ) -> RetrievalTranslator:
        """The same index, with queries embedded by ``embed`` (e.g. through the features cache in evaluation)."""
        return RetrievalTranslator(self.texts, self.vectors, self.ranges, embed, self.name, supported, min_similarity)

    def translate(self, texts: Sequence[str], sources: Sequence[str | None], target: str) -> list[str | None]:
        out: list[str | None] = [None] * len(texts)
        known = self.supported
        rows = [i for i, lang in enumerate(sources) if known is None or lang is None or lang in known]
        if target not in self.ranges or (known is not None and target not in known) or not rows:
            return out
        start, stop = self.ranges[target]
        queries = unit_rows(np.asarray(self.embed([texts[i] for i in rows]), dtype=np.float32))
        for lo in range(0, len(rows), 1024):  # bounded score blocks: 1,024 × 130k floats at most
            scores = queries[lo : lo + 1024] @ self.vectors[start:stop].T
            best = scores.argmax(axis=1)
            for j, i in enumerate(best):
                if scores[j, i] >= self.min_similarity:
                    out[rows[lo + j]] = self.texts[start + int(i)]
        return out

    @classmethod
    def open_or_build(
        cls, corpus: Path, langs: Sequence[str], embed: Embed, encoder: str, cache_dir: Path, batch: int = 4096
    ) -> RetrievalTranslator:
        folder = index_folder(cache_dir, corpus, encoder, langs)
        if not (folder / SIDECAR).is_file():
            build_index(corpus_file(corpus), langs, embed, encoder, folder, batch)
        return cls.load(folder, embed)

    @classmethod
    def load(cls, folder: Path, embed: Embed) -> RetrievalTranslator:
        meta = json.loads((folder / SIDECAR).read_text(encoding="utf-8"))
        vectors = np.load(folder / VECTORS).astype(np.float32)
        if len(vectors) != len(meta["texts"]):
            raise TranslationError(f"{folder}: {len(vectors)} vectors for {len(meta['texts'])} captions: rebuild it")
        ranges = {lang: (int(a), int(b)) for lang, (a, b) in meta["languages"].items()}
        return cls(meta["texts"], vectors, ranges, embed)


def build_index(corpus: Path, langs: Sequence[str], embed: Embed, encoder: str, folder: Path, batch: int) -> None:
    """Embed each language's distinct captions and write vectors, then the sidecar (the commit point)."""
    from tqdm.auto import tqdm

    by_lang: dict[str, dict[str, None]] = {lang: {} for lang in sorted(set(langs))}
    try:
        for caption in iter_captions(corpus, by_lang):
            by_lang[caption.lang].setdefault(caption.text)
    except CaptionFileError as exc:
        raise TranslationError(str(exc)) from None
    texts = [text for rows in by_lang.values() for text in rows]
    if not texts:
        raise TranslationError(f"{corpus} has no captions in {', '.join(sorted(by_lang))}")
    ranges, start = {}, 0
    for lang, rows in by_lang.items():
        if rows:
            ranges[lang] = [start, start + len(rows)]
            start += len(rows)
    log.info("building the translation index of %s (%d captions) in %s", corpus, len(texts), folder)
    chunks = []
    with tqdm(total=len(texts), desc="translation corpus", unit="caption") as bar:
        for lo in range(0, len(texts), batch):
            chunks.append(unit_rows(np.asarray(embed(texts[lo : lo + batch]), dtype=np.float32)).astype(np.float16))
            bar.update(len(chunks[-1]))
    buffer = io.BytesIO()
    np.save(buffer, np.concatenate(chunks))
    atomic_write_bytes(folder / VECTORS, buffer.getvalue())
    atomic_write_json(
        folder / SIDECAR, {"encoder": encoder, "corpus": str(corpus), "languages": ranges, "texts": texts}
    )
