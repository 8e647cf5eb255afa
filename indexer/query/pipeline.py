"""The query pipeline: a text query from what the user typed to hits, and images to vectors — one concept, one
module, used by the service, ``polyglot search``, ``polyglot evaluate``, the tagger and the benchmarks alike.

1. **The text** (:func:`clean_query`, :func:`checked_query`): control characters dropped, invisible ones trimmed;
   an empty or over-long query is a :class:`QueryTextError` (the service answers it 422). An all-capitals query
   is read in lower case (:func:`unshouted`) when it is embedded.
2. **Its language** when the user does not say it (:func:`detect_language`): py3langid (the langid.py model, 97
   languages, shipped in the wheel): on dev captions of en/de/fr/cs/pt/zh/ja/ar/es/uk it was right 99.1 % of the
   time (mean; 96.6 % in the worst language, Chinese) in ~50 µs a query, where langdetect was right 98.4 %
   (95.2 %) in ~1.8 ms, and lingua's high-accuracy mode 99.3 % in ~1.8 ms after 47 s and 1.3 GB of loading
   (benchmarks/language_detection.md). Deterministic, thread-safe once loaded. A single word is another matter:
   what a search answer labels is :func:`confident_language` (only when the detector is sure, among the text
   encoder's languages; issue 36).
3. **Its vector** (:meth:`QueryPipeline.embed_queries`): every text query, whatever its language (or none
   detected), takes the one text side of :class:`~indexer.query.models.Models` — the shipped student reads the
   ~100 languages of its e5 trunk itself — in one encoder call per batch, through the :class:`QueryCache` (a
   small thread-safe LRU: popular queries skip the encoder).
4. **Its hits** (:meth:`QueryPipeline.search_texts`): one index search per batch. With ``clc`` (per call, or
   POLYGLOT_CLC by default) a query is also translated into POLYGLOT_CLC_LANGUAGES by the configured translator
   and the scores of all versions are combined (:mod:`indexer.query.consistency`: CLC-A average, CLC-C classifier
   re-ranking).
5. **Where its hits stop** (:func:`cutoff_count`): the adaptive relevance cut-off below, which a text search
   applies by default.

Thread-safe: the service calls it from its search threads, ``polyglot evaluate`` and ``polyglot search``
directly. Anything that searches (the image index, an in-memory index in evaluation) is a :class:`VectorSearch`.
"""

from __future__ import annotations

import copy
import string
import threading
import unicodedata
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar, cast

import numpy as np
from PIL import Image

from indexer.concepts import ConceptLexicon
from indexer.query.consistency import ClcError, ClcMode, Versions
from indexer.settings import Settings

if TYPE_CHECKING:  # the models import torch; the query text's cleaning and language detection do not need it
    from indexer.encoders.base import ImageEncoder
    from indexer.image_space import ImageSpace
    from indexer.query.consistency import ClcReranker, QueryTranslator
    from indexer.tower import TextEmbedder


# ------------------------------------------------------------------ 1. the text
class QueryTextError(ValueError):
    """A query with nothing visible in it, or longer than allowed; the message says which."""


def _invisible(char: str) -> bool:
    # Controls, format characters (zero-width space, BOM, bidi marks), unassigned/private code points, spaces.
    return unicodedata.category(char)[0] in "CZ"


def clean_query(text: str) -> str:
    """``q`` as the encoders should see it: control characters (NUL, escapes) become spaces, and invisible
    characters at either end go. Nothing visible left (only zero-width spaces, say) → "" (an empty query).
    Format characters inside a query stay: zero-width (non-)joiners are spelling in Persian or Hindi."""
    text = "".join(" " if unicodedata.category(char) == "Cc" else char for char in text)
    start, end = 0, len(text)
    while start < end and _invisible(text[start]):
        start += 1
    while end > start and _invisible(text[end - 1]):
        end -= 1
    return text[start:end]


def checked_query(text: str, max_chars: int) -> str:
    """``text`` cleaned (:func:`clean_query`); :class:`QueryTextError` when nothing visible is left or it is
    longer than ``max_chars``."""
    query = clean_query(text)
    if not query:
        raise QueryTextError(
            "empty query: q must contain some visible text (not only spaces, zero-width or control characters)"
        )
    if len(query) > max_chars:
        raise QueryTextError(f"query too long: {len(query)} characters, the limit is {max_chars}")
    return query


# Turkish and Azerbaijani pair their i's by the dot: "ı" ↔ "I", "i" ↔ "İ". str.lower() knows no language: it reads
# "KIRMIZI" (red) as "kirmizi" and "İ" as "i" plus a combining dot.
DOTTED_I_LANGUAGES = frozenset({"tr", "az"})


def lower_case(text: str, lang: str | None = None) -> str:
    """``text`` in lower case as ``lang`` writes it: Turkish and Azerbaijani "I" → "ı" and "İ" → "i". A text
    holding "İ" (a letter only they write) is read as theirs whatever the language says: a detector may guess
    another for a word or two."""
    if lang in DOTTED_I_LANGUAGES or "İ" in text:
        text = text.replace("I", "ı")
    return text.replace("İ", "i").lower()


def unshouted(text: str, lang: str | None = None) -> str:
    """``text`` in lower case (:func:`lower_case`, in ``lang``) when every cased letter of it is a capital ("PANDA",
    "KINDERWAGEN", "СЛОН", "KIRMIZI" in Turkish), else as typed. Case carries no meaning in such a query, and the
    encoders read capitals worse: the shipped student's wide-dev R@10 with every name in capitals is 0.476 outside
    English (0.956 in English), 0.552 (0.979) with every name in lower case (docs/model-card.md). One capital ("A")
    and mixed case ("DNA test") stay as typed."""
    cased = [char for char in text if char.lower() != char.upper()]
    if len(cased) >= 2 and all(char.isupper() for char in cased):
        return lower_case(text, lang)
    return text


# ------------------------------------------------------------------ 2. its language
_identifiers: dict[frozenset[str] | None, Any] = {}
_lock = threading.Lock()

# How sure the detector must be before a language is shown for a query (issue 36: single words were labelled
# wrongly 64 times in 120 — "dog" cs, "Hund" da, "chat" qu). Measured with `benchmarks/language_labels.py` on
# 1,353 single words of 41 languages (the shared lexicons) and 138 short sentences, the detector restricted to the
# student's languages: a single word reaches 0.9 in 13 % of cases, every one of them right (1.000; at 0.6: 0.968);
# a sentence reaches 0.6 in 78 % of cases, 99.1 % of them right (at 0.5: 0.943).
CONFIDENT_WORD = 0.9
CONFIDENT_TEXT = 0.6


def _load(languages: frozenset[str] | None = None, cache_dir: Path | None = None) -> Any:
    """The detector (among ``languages`` when given): the model is read once (~0.5 s), each restriction is a
    shallow copy of it over a slice of its tables."""
    with _lock:
        identifier = _identifiers.get(languages)
        if identifier is None:
            full = _identifiers.get(None)
            if full is None:
                from indexer.query.detector_model import read_detector

                full = _identifiers[None] = read_detector(cache_dir)  # cache_dir: kept decompressed there
            identifier = full
            known = sorted(set(full.nb_classes) & (languages or frozenset()))
            if known:  # an encoder none of whose languages the detector knows: detected among all
                identifier = copy.copy(full)
                identifier.set_languages(known)
            _identifiers[languages] = identifier
    return identifier


def warm_up_language_detection(languages: frozenset[str] | None = None, cache_dir: Path | None = None) -> None:
    """Load the model (seconds) before the first query rather than during it; ``cache_dir``: where its
    decompressed copy is kept (:mod:`indexer.query.detector_model`: ~0.55 s of CPU less at each later start)."""
    _load(languages, cache_dir).classify("warm up the language model")


def detect_language(text: str, among: frozenset[str] | None = None) -> tuple[str | None, float | None]:
    """``(code, probability)`` of the most likely language (of ``among`` when given), or ``(None, None)`` when
    nothing can be detected (digits, emoji, punctuation). Tens of microseconds for a query: cheaper than a hop to
    a thread. A guess, however unlikely: what a label shows is :func:`confident_language`."""
    if not any(char.isalpha() for char in text):
        return None, None
    code, probability = _load(among).classify(text)
    return str(code), round(float(probability), 4)


def confident_language(text: str, among: frozenset[str] | None = None) -> tuple[str | None, float | None]:
    """The query's language when the detector is confident of it (``CONFIDENT_WORD`` for one word,
    ``CONFIDENT_TEXT`` for more), else None; with the detector's probability of its best guess either way.
    ``among``: the text encoder's languages — a query is only ever labelled with a language the encoder serves."""
    code, probability = detect_language(text, among)
    if code is None or probability is None:
        return None, None
    bar = CONFIDENT_WORD if len(text.split()) <= 1 else CONFIDENT_TEXT
    return (code if probability >= bar else None), probability


# ------------------------------------------------------------------ 3. the query cache
class QueryCache:
    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> np.ndarray | None:
        with self._lock:
            vector = self._items.get(key)
            if vector is not None:
                self._items.move_to_end(key)
            return vector

    def put(self, key: str, vector: np.ndarray) -> None:
        if self.size <= 0:
            return
        with self._lock:
            self._items[key] = vector
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def __len__(self) -> int:
        return len(self._items)


# ------------------------------------------------------------------ 4. the pipeline
H = TypeVar("H", covariant=True)
HitT = TypeVar("HitT")


class QueryModels(Protocol):
    """What the pipeline reads of :class:`indexer.query.models.Models`, named as a protocol: the models module
    builds the pipeline's :class:`ConceptFusion`, and a type imported back from it would make an import cycle."""

    text: TextEmbedder
    image_encoder: ImageEncoder
    translator: QueryTranslator | None
    clc_classifier: ClcReranker | None
    fusion: ConceptFusion | None

    @property
    def image_space(self) -> ImageSpace: ...


M = TypeVar("M", bound=QueryModels)  # the models a pipeline runs: indexer.query.models.Models


class VectorSearch(Protocol[H]):
    """Anything that answers a batch of unit query vectors with hits, best first (the image index)."""

    def search(self, vectors: np.ndarray, k: int) -> Sequence[Sequence[H]]: ...


class CandidateVectors(Protocol):
    """An index that can also return stored vectors by id (CLC-C re-ranks candidates by their exact scores)."""

    def vectors(self, ids: Sequence[int]) -> np.ndarray: ...


class QueryPipeline(Generic[M]):
    def __init__(self, models: M, settings: Settings, cache: QueryCache | None = None) -> None:
        self.models = models
        self.settings = settings
        self.cache = cache if cache is not None else QueryCache(settings.query.query_cache_size)

    # ------------------------------------------------------------------ languages
    @property
    def languages(self) -> list[str] | None:
        """The languages queries may name (the text side's encoder's; None: it declares none and accepts any)."""
        langs = self.models.text.languages
        return sorted(langs) if langs is not None else None

    def supports(self, lang: str) -> bool:
        return self.models.text.encoder.supports(lang)

    @property
    def encoder_name(self) -> str:
        """The text encoder that embeds every query, as the service reports it to clients (``e5-student``)."""
        return self.models.text.encoder.name

    # ------------------------------------------------------------------ text → vectors → hits
    def embed_queries(self, texts: Sequence[str], langs: str | Sequence[str | None] | None = None) -> np.ndarray:
        """Unit query vectors, each text in its language (one for all, or one per text; a research tower's
        bridge reads it), in one encoder call for the texts the query cache does not hold. With
        POLYGLOT_CONCEPT_FUSION_WEIGHT, a text that is a concept's name in its language (with none given: a name
        of one concept in every language) has the concept's English vector fused in (:class:`ConceptFusion`)."""
        per_text = [langs] * len(texts) if langs is None or isinstance(langs, str) else list(langs)
        texts = [unshouted(text, lang) for text, lang in zip(texts, per_text, strict=True)]
        # A bridge maps some languages apart, so the language is part of the key.
        keys = [f"{lang}\x00{text}" for text, lang in zip(texts, per_text, strict=True)]
        vectors: list[np.ndarray | None] = [self.cache.get(key) for key in keys]
        missing = [i for i, vector in enumerate(vectors) if vector is None]
        if missing:
            fresh = self.models.text.embed([texts[i] for i in missing], [per_text[i] for i in missing])
            fusion = self.models.fusion
            if fusion is not None:  # a query naming a lexicon concept: its English vector fused in
                concepts = fusion.rows([texts[i] for i in missing], [per_text[i] for i in missing])
                fresh = fusion.fuse(fresh, concepts)
            for row, i in enumerate(missing):
                vectors[i] = fresh[row]
                self.cache.put(keys[i], fresh[row])
        if not vectors:
            return np.empty((0, self.models.text.dim), dtype=np.float32)
        return np.stack([v for v in vectors if v is not None])

    def search_texts(
        self, index: VectorSearch[HitT], items: Sequence[tuple[str, str | None, int]], clc: ClcMode | None = None
    ) -> list[list[HitT]]:
        """``(text, lang, depth)`` → the best ``depth`` hits of each, with one search call for all. ``clc``:
        cross-lingual consistency for these queries (None: POLYGLOT_CLC)."""
        if not items:
            return []
        mode = self.check_clc(clc)
        texts, langs = [text for text, _, _ in items], [lang for _, lang, _ in items]
        depth = max(depth for _, _, depth in items)
        if mode == "off":
            hits = index.search(self.embed_queries(texts, langs), depth)
        else:
            hits = self.search_versions(index, self.clc_versions(texts, langs), depth, mode)
        return [list(row[:depth]) for row, (_, _, depth) in zip(hits, items, strict=True)]

    # ------------------------------------------------------------------ cross-lingual consistency
    def check_clc(self, clc: ClcMode | None) -> ClcMode:
        """The CLC mode a search uses; :class:`ClcError` when it cannot run with the loaded parts."""
        mode: ClcMode = clc or self.settings.query.clc
        if mode != "off" and self.models.translator is None:
            raise ClcError(f"clc={mode} needs a query translator: set POLYGLOT_CLC_TRANSLATOR (gloss, retrieval or mt)")
        if mode == "classifier" and self.models.clc_classifier is None:
            raise ClcError("clc=classifier needs a CLC-C model: set POLYGLOT_CLC_CLASSIFIER (polyglot clc fit)")
        return mode

    @property
    def clc_languages(self) -> list[str]:
        """The translation targets (a classifier's own languages: its inputs are fixed)."""
        classifier = self.models.clc_classifier
        return list(classifier.languages) if classifier is not None else list(self.settings.query.clc_languages)

    def clc_versions(self, texts: Sequence[str], langs: Sequence[str | None]) -> Versions:
        """Each query and its translations into the CLC languages, embedded as queries in those languages."""
        translator, targets = self.models.translator, self.clc_languages
        assert translator is not None  # check_clc
        n = len(texts)
        vectors = np.zeros((n, 1 + len(targets), self.models.text.dim), dtype=np.float32)
        present = np.zeros((n, 1 + len(targets)), dtype=bool)
        vectors[:, 0], present[:, 0] = self.embed_queries(texts, langs), True
        wanted: list[tuple[int, int]] = []  # (query row, slot)
        extra_texts: list[str] = []
        extra_langs: list[str | None] = []
        for slot, target in enumerate(targets, start=1):
            rows = [i for i, lang in enumerate(langs) if lang != target]
            found = translator.translate([texts[i] for i in rows], [langs[i] for i in rows], target)
            for i, translation in zip(rows, found, strict=True):
                if translation and translation != texts[i]:
                    wanted.append((i, slot))
                    extra_texts.append(translation)
                    extra_langs.append(target)
        if wanted:
            embedded = self.embed_queries(extra_texts, extra_langs)
            rows_, slots = np.array([w[0] for w in wanted]), np.array([w[1] for w in wanted])
            vectors[rows_, slots], present[rows_, slots] = embedded, True
        return Versions(vectors, present)

    def search_versions(
        self, index: VectorSearch[HitT], versions: Versions, depth: int, mode: ClcMode
    ) -> Sequence[Sequence[HitT]]:
        """The best ``depth`` hits of queries' versions: CLC-A's one search, or CLC-C's re-ranking of it."""
        if mode == "average":
            return index.search(versions.average(), depth)
        return self._clc_classify(index, versions, depth)

    def _clc_classify(self, index: VectorSearch[HitT], versions: Versions, depth: int) -> list[list[HitT]]:
        """CLC-C: the CLC-A search's best candidates, re-ranked by the classifier over their per-version scores."""
        if not hasattr(index, "vectors"):
            raise ClcError("clc=classifier needs an index that returns stored vectors")
        source = cast(CandidateVectors, index)
        classifier = self.models.clc_classifier
        assert classifier is not None  # check_clc
        pool = max(depth, self.settings.query.clc_candidates)
        found = index.search(versions.average(), pool)
        ids = [[int(cast(Any, hit).id) for hit in row] for row in found]
        width = max((len(row) for row in ids), default=0)
        candidates = np.zeros((len(ids), width, self.models.text.dim), dtype=np.float32)
        for row, row_ids in enumerate(ids):
            if row_ids:
                candidates[row, : len(row_ids)] = source.vectors(row_ids)
        order, scores = classifier.rerank(versions, ids, candidates)
        by_id = [{int(cast(Any, hit).id): hit for hit in row} for row in found]
        return [
            [replace_score(by_id[row][i], s) for i, s in zip(order[row], scores[row], strict=True)]
            for row in range(len(ids))
        ]

    # ------------------------------------------------------------------ images → vectors
    def embed_images(self, images: Sequence[Image.Image]) -> np.ndarray:
        """Unit image vectors (frozen CNN + the towers' image space): what the index stores for a photo."""
        encoder = self.models.image_encoder
        encoder.load()  # idempotent and thread-safe
        return self.models.image_space.apply(encoder.predict(images))


def replace_score(hit: HitT, score: float) -> HitT:
    """The hit with the score shown to users (hits are small dataclasses: ``Hit(id, score)``)."""
    import dataclasses

    return dataclasses.replace(hit, score=score) if dataclasses.is_dataclass(hit) else hit  # type: ignore[type-var]


# ------------------------------------------------------------------ search through the concept lexicon
# Search through the concept lexicon: a query that names a concept gets that concept's English vector fused in.
#
# When a query, read as the lexicon compares names (:func:`name_key`: lower case as its language writes it, spaces
# folded, surrounding punctuation dropped), is exactly a name of a concept in its language (the given one, or the one
# ``/search`` detected with confidence), its vector becomes ``normalise(q + α · e_en(concept))``: ``e_en`` is the text side's own vector of
# the concept's English name (the concept vectors the tagger uses, :func:`indexer.tagging.concepts.concept_vectors`,
# cached under the cache folder by text fingerprint and lexicon digest). A name that names several concepts takes
# the one it is the commonest name of (the lexicon's :meth:`~indexer.concepts.ConceptLexicon.find` order). A query
# with no language fuses only a name that means one concept in every language that has it: a detector's guess for a
# single word is often wrong (``chat`` read as French would pull an English query towards *cat*).
#
# α is POLYGLOT_CONCEPT_FUSION_WEIGHT (0: off, nothing loaded). Per query the cost is one dict lookup and one
# vector add; the table is built once when the models load.

_EDGES = string.punctuation + "¿¡«»“”„‘’。、！？・「」"


def name_key(text: str, lang: str | None) -> str:
    """``text`` as names are compared: lower case in ``lang``, one space between words, no edge punctuation."""
    return " ".join(lower_case(text, lang).casefold().split()).strip(_EDGES).strip()


NameTable = dict[str, dict[str, int]]  # lang → name key → lexicon row
_NAME_TABLES: dict[tuple[str, tuple[str, ...]], tuple[NameTable, dict[str, int]]] = {}
_NAME_TABLES_LOCK = threading.Lock()


def name_tables(lexicon: ConceptLexicon) -> tuple[NameTable, dict[str, int]]:
    """Which concept each name means, per language, and the names that mean one concept in every language that has
    them (for a query in no known language). Built once per lexicon in a process (its digest names its content;
    310K names, about two seconds), then shared read-only by every fusion over it."""
    key = (lexicon.digest, tuple(lexicon.languages))
    with _NAME_TABLES_LOCK:
        built = _NAME_TABLES.get(key)
    if built is not None:
        return built
    row = {concept: i for i, concept in enumerate(lexicon.ids)}
    table: NameTable = {}
    for lang in ["en", *lexicon.languages]:
        ranked: dict[str, tuple[int, int, int]] = {}
        for order, concept in enumerate(lexicon.ids):
            for position, written in enumerate(lexicon.names(concept, lang)):
                name = name_key(written, lang)
                candidate = (position, order, row[concept])
                if name and (name not in ranked or candidate < ranked[name]):
                    ranked[name] = candidate
        table[lang] = {name: hit[2] for name, hit in ranked.items()}
    # A query in no known language: a name fuses only when every language it is a name in means one concept.
    votes: dict[str, int | None] = {}
    for names in table.values():
        for name, meant in names.items():
            votes[name] = meant if votes.get(name, meant) == meant else None
    anywhere = {name: meant for name, meant in votes.items() if meant is not None}
    with _NAME_TABLES_LOCK:
        _NAME_TABLES.clear()  # one lexicon is served at a time: keep only the newest
        _NAME_TABLES[key] = (table, anywhere)
    return table, anywhere


class ConceptFusion:
    def __init__(self, lexicon: ConceptLexicon, vectors: np.ndarray, weight: float) -> None:
        """``vectors``: the concepts' unit English vectors in lexicon order; ``weight``: α."""
        if len(vectors) != len(lexicon):
            raise ValueError(f"{len(vectors)} concept vectors for a lexicon of {len(lexicon)} concepts")
        self.weight = float(weight)
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        self.ids = list(lexicon.ids)
        self.table, self.anywhere = name_tables(lexicon)
        self.languages = frozenset(self.table)

    def match(self, text: str, lang: str | None) -> int | None:
        """The lexicon row of the concept ``text`` names in ``lang`` (None: in whichever language, when all the
        languages it is a name in agree on one concept), or None."""
        if lang is None:
            return self.anywhere.get(name_key(text, None))
        names = self.table.get(lang)
        return names.get(name_key(text, lang)) if names is not None else None

    def rows(self, texts: Sequence[str], langs: Sequence[str | None]) -> list[int | None]:
        """The concept row each text names in its language (see :meth:`match`)."""
        return [self.match(text, lang) for text, lang in zip(texts, langs, strict=True)]

    def fuse(self, vectors: np.ndarray, rows: Sequence[int | None], weight: float | None = None) -> np.ndarray:
        """``vectors`` with each matched row's concept vector added (× α) and renormalised; others unchanged."""
        alpha = self.weight if weight is None else weight
        out = np.array(vectors, dtype=np.float32, copy=True)
        if alpha == 0:
            return out
        for i, row in enumerate(rows):
            if row is not None:
                fused = out[i] + alpha * self.vectors[row]
                out[i] = fused / max(float(np.linalg.norm(fused)), 1e-12)
        return out


class FusionText(Protocol):
    """A text side whose English vectors name the concepts (the full one, or the one-shot search's ONNX one)."""

    def embed(self, texts: Sequence[str], langs: str | Sequence[str | None] | None = None) -> np.ndarray: ...


def load_concept_fusion(settings: Settings, text: FusionText, fingerprint: str) -> ConceptFusion:
    """The concept lexicon's name table and its English concept vectors (by the text side's fingerprint and the
    lexicon's digest, from the models folder or the cache; embedded now when neither has them). A damaged lexicon
    file raises its one-line LexiconError. ``polyglot search`` and ``/search`` both fuse through this, so they rank alike."""
    from indexer.asset_paths import SHIPPED_CONCEPTS
    from indexer.tagging.concepts import concept_vectors

    lexicon = ConceptLexicon.load(settings.tagging.lexicon_dir or SHIPPED_CONCEPTS)
    vectors, _ = concept_vectors(
        lexicon, text, fingerprint, settings.resolved_cache_dir, shipped_dir=settings.resolved_models_dir
    )
    return ConceptFusion(lexicon, vectors, settings.query.concept_fusion_weight)


# ------------------------------------------------------------------ where a query's hits stop
# An adaptive relevance cut-off: results stop where they stop standing out from the collection.
#
# A fixed ``min_score`` cannot be right: text→image cosines of good matches differ by language, tower and query
# (0.25–0.35 for the shipped towers, far higher image→image). Instead each query's own score distribution decides:
# the scores of its best ``CUTOFF_POOL`` candidates, less the ``CUTOFF_SKIP`` best, describe "unrelated" (most photos of a
# collection are unrelated to a query), each result is standardised against them (``z = (s − mean) / std``) and kept
# while its ``z`` is at least ``z_min``. The best candidates are left out of that description because they are the
# likeliest matches: with them in, a query with a strong match gets a wider spread and its next matches fall below
# the line. Relevant photos stand out from the background by a margin that, unlike the cosine itself, is comparable
# across languages and towers.
#
# ``DEFAULT_Z`` is what ``/search`` applies by default, chosen on tuning sets and measured on the dev sets
# in ``benchmarks/relevance_default.md``: R@10 within 2 % of no cut-off in every language (Flickr captions, ImageNet
# class names in 13 languages), and more than half of the unrelated photos of a mixed library cut from a page of 20
# in every language (the same rule with ``skip=0``, the background including the best candidates, cannot do both).

CUTOFF_POOL = 100  # candidates whose scores describe the query's distribution
CUTOFF_SKIP = 2  # the best candidates left out of that description
DEFAULT_Z = 1.6
CUTOFF_MIN_KEEP = 1  # the best match is always shown: an empty page says less than a weak first hit
CUTOFF_MIN_POOL = 5  # fewer candidates (a library of a handful of photos) describe no distribution: all are kept


def cutoff_count(
    scores: Sequence[float], z_min: float = DEFAULT_Z, min_keep: int = CUTOFF_MIN_KEEP, skip: int = CUTOFF_SKIP
) -> int:
    """How many of ``scores`` (best first, at least the ``CUTOFF_POOL`` best when the collection has them) to keep."""
    values = np.asarray(scores, dtype=np.float64)
    if len(values) <= min_keep or len(values) < CUTOFF_MIN_POOL:
        return len(values)
    pool = values[:CUTOFF_POOL]
    background = pool[skip:] if len(pool) - skip >= 2 else pool
    spread = background.std()
    if spread <= 1e-9:
        return len(values)
    z = (values - background.mean()) / spread
    below = np.flatnonzero(z < z_min)
    keep = int(below[0]) if len(below) else len(values)
    return max(min_keep, keep)
