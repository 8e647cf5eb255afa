"""``CaptionIndex``: a collection of captions embedded by the text tower, so an image can find its best captions.

Captions live in the image space (text encoder → tower → unit vector), so image→caption retrieval is the
image's unit vector against caption vectors, inner product = cosine similarity.

On disk (default ``INDEX_DIR/captions/``)::

    captions.sqlite   id, lang, text, image, source (unique per (lang, text)); the source of truth
    <lang>.faiss      one exact ``IndexIDMap2(IndexFlatIP)`` per language, id = SQL id
    captions.json     sidecar: dim, tower fingerprint, counts

One FAISS index per language (not one index with a language column): a query always asks for captions in
given languages, and per-language indexes answer that exactly with no over-fetch-then-filter step; see
``benchmarks/captions_layout.md`` for the measurement. Sentence embeddings come from the features cache
(keyed by text hash), so re-indexing or a new tower only re-runs the small MLP.

Commit protocol: rows are committed in one SQL transaction, then each touched language's FAISS file is
rewritten atomically. :meth:`CaptionIndex.open` rebuilds any language whose FAISS file disagrees with SQL
(a crash in between) or whose vectors came from another tower. Writers build a new FAISS object and swap
it in under a lock, so concurrent searches never see a half-changed index.
"""

from __future__ import annotations

import builtins
import hashlib
import json
import re
import sqlite3
import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from indexer.atomic import atomic_write_bytes, atomic_write_json
from indexer.embedders import TextEmbedder
from indexer.sentence_cache import cached_sentences

DB_NAME = "captions.sqlite"
SIDECAR_NAME = "captions.json"
_LANG = re.compile(r"^[a-z]{2,3}(-[A-Za-z0-9]{2,8})?$")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS captions (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    lang TEXT NOT NULL,
    text TEXT NOT NULL,
    image TEXT,
    source TEXT,
    UNIQUE (lang, text)
)
"""


class CaptionFileError(ValueError):
    """A captions JSONL file cannot be used; the message names the line and the problem."""


@dataclass
class Caption:
    lang: str
    text: str
    image: str | None = None
    source: str | None = None


@dataclass
class CaptionHit:
    id: int
    score: float
    lang: str
    text: str
    image: str | None
    source: str | None


def read_captions(path: Path, langs: Iterable[str] | None = None) -> list[Caption]:
    """Rows of a JSONL file with the shared schema (``image``, ``lang``, ``text``, ``source``)."""
    wanted = {lang.lower() for lang in langs} if langs else None
    rows: list[Caption] = []
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise CaptionFileError(f"{path}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise CaptionFileError(f"{path}:{number}: not JSON ({exc.msg})") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("text"), str) or not isinstance(obj.get("lang"), str):
            raise CaptionFileError(f"{path}:{number}: each line needs string fields 'lang' and 'text'")
        lang, text = obj["lang"].strip().lower(), obj["text"].strip()
        if not _LANG.match(lang):
            raise CaptionFileError(f"{path}:{number}: {obj['lang']!r} is not a language code like 'en' or 'pt'")
        if not text or (wanted is not None and lang not in wanted):
            continue
        image, source = obj.get("image"), obj.get("source")
        rows.append(Caption(lang, text, str(image) if image is not None else None, source and str(source)))
    return rows


def tower_fingerprint(embedder: TextEmbedder) -> str:
    """Identity of the text side: encoder name, tower weights, bridge; captions embedded by another are stale."""
    digest = hashlib.sha256(embedder.encoder.name.encode())
    for name, tensor in sorted(embedder.tower.state_dict().items()):
        digest.update(name.encode())
        digest.update(tensor.detach().cpu().numpy().tobytes())
    if embedder.bridge is not None:
        digest.update(embedder.bridge.weight.tobytes())
    return digest.hexdigest()[:16]


class CaptionIndex:
    def __init__(self, folder: Path, embedder: TextEmbedder, cache_dir: Path | None = None) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.embedder = embedder
        self.cache_dir = cache_dir
        self.dim = embedder.dim
        self.fingerprint = tower_fingerprint(embedder)
        self._db = sqlite3.connect(self.folder / DB_NAME, check_same_thread=False, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute(_SCHEMA)
        self._db_lock = threading.Lock()
        self._write_lock = threading.Lock()  # one writer at a time; readers never wait on it
        self._indexes: dict[str, faiss.Index] = {}

    # ------------------------------------------------------------------ opening
    @classmethod
    def open(cls, folder: Path, embedder: TextEmbedder, cache_dir: Path | None = None) -> CaptionIndex:
        """Open (or create) the caption index; rebuild languages whose vectors are missing, partial or stale."""
        index = cls(folder, embedder, cache_dir)
        sidecar = index._read_sidecar()
        stale = sidecar.get("fingerprint") != index.fingerprint or sidecar.get("dim") != index.dim
        for lang in index.languages():
            loaded = None if stale else index._load_faiss(lang)
            if loaded is None or loaded.ntotal != index.count(lang):
                index._rebuild_lang(lang)
            else:
                index._indexes[lang] = loaded
        index._write_sidecar()
        return index

    def close(self) -> None:
        with self._db_lock:
            self._db.close()

    # ------------------------------------------------------------------ reading
    def languages(self) -> builtins.list[str]:
        with self._db_lock:
            return [row[0] for row in self._db.execute("SELECT DISTINCT lang FROM captions ORDER BY lang")]

    def count(self, lang: str | None = None) -> int:
        with self._db_lock:
            if lang is None:
                return int(self._db.execute("SELECT COUNT(*) FROM captions").fetchone()[0])
            return int(self._db.execute("SELECT COUNT(*) FROM captions WHERE lang = ?", (lang,)).fetchone()[0])

    def __len__(self) -> int:
        return self.count()

    def stats(self) -> dict[str, Any]:
        with self._db_lock:
            per_lang = dict(self._db.execute("SELECT lang, COUNT(*) FROM captions GROUP BY lang ORDER BY lang"))
        return {"count": sum(per_lang.values()), "languages": per_lang, "dim": self.dim, "folder": str(self.folder)}

    def list(self, lang: str | None = None, offset: int = 0, limit: int = 100) -> builtins.list[CaptionHit]:
        query = "SELECT id, lang, text, image, source FROM captions"
        params: tuple[Any, ...] = ()
        if lang:
            query, params = query + " WHERE lang = ?", (lang,)
        with self._db_lock:
            rows = self._db.execute(query + " ORDER BY id LIMIT ? OFFSET ?", (*params, limit, offset)).fetchall()
        return [CaptionHit(int(r[0]), 0.0, r[1], r[2], r[3], r[4]) for r in rows]

    def search(self, vector: np.ndarray, langs: Sequence[str], k: int) -> dict[str, builtins.list[CaptionHit]]:
        """Best ``k`` captions per requested language for one unit vector (languages with none: empty)."""
        query = np.ascontiguousarray(np.atleast_2d(vector), dtype=np.float32)
        if query.shape[1] != self.dim:
            raise ValueError(f"query vector has {query.shape[1]} dimensions; captions are stored in {self.dim}")
        found: dict[str, builtins.list[tuple[int, float]]] = {}
        for lang in langs:
            index = self._indexes.get(lang)  # a reference: a concurrent writer swaps, never mutates, it
            if index is None or index.ntotal == 0 or k <= 0:
                found[lang] = []
                continue
            scores, ids = index.search(query, min(k, index.ntotal))
            found[lang] = [(int(i), float(s)) for i, s in zip(ids[0], scores[0], strict=True) if i >= 0]
        rows = self._rows([i for hits in found.values() for i, _ in hits])
        return {lang: [CaptionHit(i, s, *rows[i]) for i, s in hits if i in rows] for lang, hits in found.items()}

    # ------------------------------------------------------------------ writing
    def add(self, captions: Sequence[Caption], progress: Callable[[int], object] | None = None) -> int:
        """Index captions not yet present (same language and text); returns how many were added."""
        with self._write_lock:
            fresh = self._insert(captions)
            by_lang: dict[str, builtins.list[tuple[int, str]]] = {}
            for cid, lang, text in fresh:
                by_lang.setdefault(lang, []).append((cid, text))
            for lang, items in by_lang.items():
                vectors = self._embed([t for _, t in items], lang, progress)
                index = self._indexes.get(lang)
                updated = faiss.clone_index(index) if index is not None else self._empty()
                updated.add_with_ids(vectors, np.array([i for i, _ in items], dtype=np.int64))
                self._save_faiss(lang, updated)
                self._indexes[lang] = updated
            self._write_sidecar()
            return len(fresh)

    def remove(self, lang: str | None = None, source: str | None = None, image: str | None = None) -> int:
        """Delete captions matching every given filter (at least one filter is required)."""
        filters = [(col, val) for col, val in (("lang", lang), ("source", source), ("image", image)) if val]
        if not filters:
            raise ValueError("give at least one of lang, source or image to remove captions")
        where = " AND ".join(f"{col} = ?" for col, _ in filters)
        params = [val for _, val in filters]
        with self._write_lock:
            with self._db_lock:
                doomed = self._db.execute(f"SELECT id, lang FROM captions WHERE {where}", params).fetchall()
                self._db.execute(f"DELETE FROM captions WHERE {where}", params)
            for lang_name in sorted({row[1] for row in doomed}):
                updated = faiss.clone_index(self._indexes.get(lang_name) or self._empty())
                updated.remove_ids(np.array([r[0] for r in doomed if r[1] == lang_name], dtype=np.int64))  # type: ignore[arg-type]
                self._save_faiss(lang_name, updated)
                self._indexes[lang_name] = updated
            self._write_sidecar()
            return len(doomed)

    # ------------------------------------------------------------------ internals
    def _insert(self, captions: Sequence[Caption]) -> builtins.list[tuple[int, str, str]]:
        unique = list({(c.lang, c.text): c for c in captions}.values())
        with self._db_lock:
            self._db.execute("BEGIN")
            try:
                before = int(self._db.execute("SELECT COALESCE(MAX(id), 0) FROM captions").fetchone()[0])
                self._db.executemany(
                    "INSERT OR IGNORE INTO captions (lang, text, image, source) VALUES (?, ?, ?, ?)",
                    [(c.lang, c.text, c.image, c.source) for c in unique],
                )
                fresh = self._db.execute(
                    "SELECT id, lang, text FROM captions WHERE id > ? ORDER BY id", (before,)
                ).fetchall()
                self._db.execute("COMMIT")
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
        return [(int(i), lang, text) for i, lang, text in fresh]

    def _rows(self, ids: Sequence[int]) -> dict[int, tuple[str, str, str | None, str | None]]:
        if not ids:
            return {}
        marks = ",".join("?" * len(ids))
        with self._db_lock:
            rows = self._db.execute(f"SELECT id, lang, text, image, source FROM captions WHERE id IN ({marks})", ids)
            return {int(r[0]): (r[1], r[2], r[3], r[4]) for r in rows}

    def _embed(self, texts: Sequence[str], lang: str, progress: Callable[[int], object] | None = None) -> np.ndarray:
        encoder = self.embedder.encoder
        if not encoder.loaded:
            encoder.load()
        if self.cache_dir is None or not encoder.dim:
            sentences = encoder.predict(texts)
            if progress is not None:
                progress(len(texts))
        else:
            sentences = cached_sentences(encoder, texts, self.cache_dir, progress=progress)
        out = [self.embedder.embed_sentences(sentences[s : s + 4096], lang) for s in range(0, len(sentences), 4096)]
        return np.ascontiguousarray(np.concatenate(out) if out else np.zeros((0, self.dim)), dtype=np.float32)

    def _rebuild_lang(self, lang: str) -> None:
        with self._db_lock:
            rows = self._db.execute("SELECT id, text FROM captions WHERE lang = ? ORDER BY id", (lang,)).fetchall()
        index = self._empty()
        if rows:
            vectors = self._embed([r[1] for r in rows], lang)
            index.add_with_ids(vectors, np.array([r[0] for r in rows], dtype=np.int64))
        self._save_faiss(lang, index)
        self._indexes[lang] = index

    def _empty(self) -> faiss.Index:
        return faiss.IndexIDMap2(faiss.IndexFlatIP(self.dim))

    def _faiss_path(self, lang: str) -> Path:
        return self.folder / f"{lang}.faiss"

    def _load_faiss(self, lang: str) -> faiss.Index | None:
        path = self._faiss_path(lang)
        if not path.exists():
            return None
        try:
            index = faiss.deserialize_index(np.frombuffer(path.read_bytes(), dtype=np.uint8))
        except RuntimeError:
            return None  # unreadable file: rebuilt from SQL by the caller
        return index if index.d == self.dim else None

    def _save_faiss(self, lang: str, index: faiss.Index) -> None:
        atomic_write_bytes(self._faiss_path(lang), faiss.serialize_index(index).tobytes())

    def _read_sidecar(self) -> dict[str, Any]:
        path = self.folder / SIDECAR_NAME
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _write_sidecar(self) -> None:
        counts = {lang: int(index.ntotal) for lang, index in self._indexes.items()}
        atomic_write_json(
            self.folder / SIDECAR_NAME,
            {"format": 1, "dim": self.dim, "fingerprint": self.fingerprint, "counts": counts},
        )
