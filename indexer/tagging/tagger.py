"""``Tagger``: an image → tags in the requested languages, chosen with the image as context.

By default the photo ranks the concept lexicon's concepts and each language names them (:mod:`.concepts`); the
other sources give one tag per English source tag (§3.3.2 of the M3L paper: ImageNet classes or caption words).

Construction does no I/O; :meth:`Tagger.from_settings` loads the models and the vocabularies. After that,
:meth:`tag` is safe to call from several threads: the encoders are thread-safe, vocabularies are swapped
as a whole on reload, and the source-tag embedding cache is guarded by a lock.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
from PIL import Image

from indexer.encoders.base import ImageEncoder
from indexer.image_space import ImageSpace
from indexer.settings import TaggingSettings
from indexer.tagging.concepts import ConceptTagger
from indexer.tagging.ranking import assign_tags, by_score, contextual_tags
from indexer.tagging.shipped import ShippedVocabularies
from indexer.tagging.source_tags import (
    CaptionRetriever,
    SourceKind,
    caption_source_tags,
    imagenet_source_tags,
)
from indexer.tagging.store import VocabularyStore
from indexer.tagging.vocabulary import Vocabulary, VocabularyError

log = logging.getLogger(__name__)
_CACHE_LIMIT = 20_000


class TextEmbedding(Protocol):
    def embed(self, texts: Sequence[str], langs: str | None = None) -> np.ndarray: ...


class UnknownLanguageError(ValueError):
    def __init__(self, unknown: Sequence[str], available: Sequence[str]) -> None:
        self.unknown = list(unknown)
        self.available = list(available)
        listed = ", ".join(self.available) or "none"
        super().__init__(
            f"no tag vocabulary for {', '.join(self.unknown)}; available languages: {listed} "
            f"(build one with `polyglot tags vocab build --lang {self.unknown[0]} FILE...`)"
        )


@dataclass(frozen=True)
class Tag:
    tag: str
    score: float
    source: str  # concept tags: where the name is from (lexicon, vocabulary); else the English source tag
    concept: str | None = None  # the lexicon concept the tag names (WordNet synset, e.g. 02084071-n)
    english: str | None = None  # that concept's English name (else the English source tag)

    def as_dict(self) -> dict[str, str | float | None]:
        return {
            "tag": self.tag,
            "score": round(self.score, 6),
            "source": self.source,
            "concept": self.concept,
            "english": self.english,
        }


class Tagger:
    def __init__(
        self,
        image_encoder: ImageEncoder,
        text: TextEmbedding,
        image_space: ImageSpace,
        vocabularies: dict[str, Vocabulary],
        settings: TaggingSettings,
        captions: CaptionRetriever | None = None,
        fingerprint: str | None = None,
        store: VocabularyStore | None = None,
        shipped: ShippedVocabularies | None = None,
        concepts: ConceptTagger | None = None,
    ) -> None:
        self.image_encoder = image_encoder
        self.concepts = concepts  # the concept lexicon's tagger (None: English source tags only)
        self.text = text
        self.image_space = image_space
        self.settings = settings
        self.captions = captions
        self.fingerprint = fingerprint
        self._lock = threading.Lock()
        self._source_vectors: dict[str, np.ndarray] = {}
        # The CNN's class names (the ImageNet source tags) and, per vocabulary, their cosines to every tag: computed
        # once (about a second for 3,000 tags), so a request reads 10 rows instead of a (10 × 1,280) · (1,280 × n) product.
        self._class_rows: dict[str, int] = {}
        self._class_vectors = np.zeros((0, 0), np.float32)
        self._class_tables: dict[str, tuple[Vocabulary, np.ndarray]] = {}
        self._vocabularies: dict[str, Vocabulary] = {}
        self.store = store
        self.shipped = shipped  # the languages that ship (embedded on first use); a built vocabulary comes first
        self._checked = time.monotonic()
        self.set_vocabularies(vocabularies)

    def refresh(self, every: float = 5.0) -> bool:
        """Pick up vocabularies built (or rolled back) on disk since loading; at most one look per ``every`` s.

        Returns whether anything changed. A version that cannot be read keeps the loaded one (and logs).
        """
        now = time.monotonic()
        if self.store is None or now - self._checked < every:
            return False
        self._checked = now
        current = {lang: self.store.current_version(lang) for lang in self.store.languages()}
        loaded = {lang: v.info.get("version") for lang, v in self._vocabularies.items()}
        if current == loaded:
            return False
        fresh = {}
        for lang, version in current.items():
            if loaded.get(lang) == version:
                fresh[lang] = self._vocabularies[lang]
                continue
            try:
                fresh[lang] = self.store.load(lang, version)
            except VocabularyError as exc:
                log.warning("tag vocabulary not reloaded", extra={"lang": lang, "error": str(exc)})
                if lang in self._vocabularies:
                    fresh[lang] = self._vocabularies[lang]
        self.set_vocabularies(fresh)
        return True

    @property
    def languages(self) -> list[str]:
        """Languages with a built or a shipped vocabulary, and (tagging by concept) names in the concept lexicon."""
        shipped = self.shipped.languages if self.shipped is not None else []
        by_concept = self.concepts is not None and self.settings.source == SourceKind.CONCEPTS
        concepts = self.concepts.languages if self.concepts is not None and by_concept else []
        return sorted(set(self._vocabularies) | set(shipped) | set(concepts))

    def vocabulary(self, lang: str) -> Vocabulary:
        """The vocabulary of ``lang``: the one built beside the index, else the shipped one (embedded now if this
        text side never did: seconds, once)."""
        built = self._vocabularies.get(lang)
        if built is not None:
            return built
        if self.shipped is not None and lang in self.shipped.languages:
            return self.shipped.get(lang)
        raise UnknownLanguageError([lang], self.languages)

    @property
    def vocabularies(self) -> dict[str, Vocabulary]:
        return dict(self._vocabularies)

    def set_vocabularies(self, vocabularies: dict[str, Vocabulary]) -> None:
        """Replace all vocabularies at once; vectors made by another tower are re-embedded with this one."""
        ready = {}
        for lang, vocabulary in vocabularies.items():
            made_by = vocabulary.info.get("tower")
            if self.fingerprint and made_by and made_by != self.fingerprint:
                log.warning(
                    "re-embedding tag vocabulary made by another text tower (in memory, at every start until it is "
                    "rebuilt: polyglot tags vocab build FILES --lang LANG)",
                    extra={"lang": lang, "made_by": made_by, "tower": self.fingerprint},
                )
                vectors = np.asarray(self.text.embed(vocabulary.words, lang), dtype=np.float32)
                vocabulary = Vocabulary(
                    lang, vocabulary.words, vocabulary.counts, vectors, vocabulary.info, vocabulary.display
                )
            ready[lang] = vocabulary
        self._vocabularies = ready  # one assignment: readers see the old or the new set, never a mix

    def check_languages(self, langs: Sequence[str]) -> list[str]:
        wanted = [lang.strip().lower() for lang in langs if lang.strip()]
        available = set(self.languages)
        unknown = [lang for lang in wanted if lang not in available]
        if unknown or not wanted:
            raise UnknownLanguageError(unknown or ["(none given)"], self.languages)
        return list(dict.fromkeys(wanted))

    def source_kind(self, kind: str | None = None) -> SourceKind:
        chosen = kind or self.settings.source
        if chosen == SourceKind.CONCEPTS:
            if self.concepts is not None:
                return SourceKind.CONCEPTS
            if kind is not None:
                raise ValueError("concept tags need the concept lexicon; none is loaded")
            chosen = "auto"  # a tagger made without a lexicon (tests' tiny models): English source tags
        if chosen == "auto":
            return SourceKind.CAPTIONS if self.captions is not None else SourceKind.IMAGENET
        if chosen == SourceKind.CAPTIONS and self.captions is None:
            raise ValueError("caption source tags need a caption index; none is loaded")
        return SourceKind(chosen)

    def source_tags(self, features: np.ndarray, image_vector: np.ndarray, kind: SourceKind, n: int) -> list[str]:
        if kind is SourceKind.CAPTIONS:
            assert self.captions is not None
            hits = self.captions.search(image_vector, self.settings.captions_k)
            if not hits:
                raise ValueError(
                    "caption source tags need English captions, and the caption index has none "
                    "(add some with `polyglot index captions add FILE.jsonl`, or use source=imagenet)"
                )
            return caption_source_tags(hits, n)
        probabilities = self.image_encoder.classify(features.reshape(1, -1))[0]
        return imagenet_source_tags(probabilities, self.image_encoder.class_names, n)

    def remember_sources(self, tags: Sequence[str], vectors: np.ndarray) -> None:
        """Seed the source-tag vectors (the CNN's class names at load, so that ``/tag`` with ImageNet source
        tags never runs the text encoder: measured, a new class name cost a main-tower e5-small call)."""
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        with self._lock:
            self._source_vectors.update(zip(tags, vectors, strict=True))
            self._class_rows = {tag: row for row, tag in enumerate(tags)}
            self._class_vectors = vectors
            self._class_tables = {}

    def _source_similarities(self, lang: str, vocabulary: Vocabulary, sources: Sequence[str]) -> np.ndarray | None:
        """cos(source, tag) for every tag, (len(sources), n), when every source is a remembered class name."""
        if not sources or any(source not in self._class_rows for source in sources):
            return None
        rows = [self._class_rows[source] for source in sources]
        cached = self._class_tables.get(lang)
        if cached is None or cached[0] is not vocabulary:  # a vocabulary rebuilt or reloaded: its own table
            cached = (vocabulary, np.ascontiguousarray(self._class_vectors @ vocabulary.vectors.T))
            self._class_tables[lang] = cached  # one assignment: a concurrent request computes its own or reads this
        return cached[1][rows]

    def embed_sources(self, tags: Sequence[str]) -> np.ndarray:
        with self._lock:
            missing = [tag for tag in dict.fromkeys(tags) if tag not in self._source_vectors]
        if missing:
            vectors = np.asarray(self.text.embed(missing), dtype=np.float32)
            with self._lock:
                if len(self._source_vectors) + len(missing) > _CACHE_LIMIT:
                    self._source_vectors.clear()
                self._source_vectors.update(zip(missing, vectors, strict=True))
        with self._lock:
            cached = {tag: self._source_vectors.get(tag) for tag in tags}
        rows = [cached[tag] for tag in tags]
        if any(row is None for row in rows):  # evicted by a concurrent clear: embed directly
            return np.asarray(self.text.embed(list(tags)), dtype=np.float32)
        return np.stack([row for row in rows if row is not None]) if rows else np.zeros((0, 0), np.float32)

    def rank(
        self,
        image_vector: np.ndarray,
        sources: Sequence[str],
        lang: str,
        w1: float | None = None,
        w2: float | None = None,
    ) -> list[Tag]:
        """Tags of ``lang`` for the English ``sources``, best score first, no near-synonym twice (the same English
        sense, or vectors closer than ``POLYGLOT_TAG_MAX_SIMILARITY``)."""
        vocabulary = self.vocabulary(lang)
        if not sources:
            return []
        w1 = self.settings.w1 if w1 is None else w1
        w2 = self.settings.w2 if w2 is None else w2
        known = self._source_similarities(lang, vocabulary, sources)
        if known is not None:  # eq. 5 with the precomputed cos(S_j, T_i)
            image_sim = vocabulary.vectors @ np.asarray(image_vector, dtype=np.float32).reshape(-1)
            scores = (w1 * image_sim[None, :] + w2 * known).astype(np.float32)
            ranked = assign_tags(scores, vocabulary.vectors, vocabulary.sources, self.settings.max_similarity)
        else:
            ranked = contextual_tags(
                image_vector,
                self.embed_sources(sources),
                vocabulary.vectors,
                w1,
                w2,
                senses=vocabulary.sources,
                max_similarity=self.settings.max_similarity,
            )
        written = vocabulary.display or vocabulary.words
        return [
            Tag(written[r.target], r.score, sources[r.source], self.concept_of(sources[r.source]), sources[r.source])
            for r in by_score(ranked)
        ]

    def concept_of(self, english: str) -> str | None:
        """The lexicon concept an English source tag names (its commonest sense), if the lexicon has one."""
        if self.concepts is None:
            return None
        found = self.concepts.lexicon.find(english, "en")
        return found[0] if found else None

    def concept_tags(
        self, features: np.ndarray, image_vector: np.ndarray, langs: Sequence[str], k: int
    ) -> dict[str, list[Tag]]:
        """Tags by concept: one ranking of the lexicon's concepts for the photo, named in each language."""
        assert self.concepts is not None
        probabilities = None
        if self.concepts.uses_classes:
            probabilities = self.image_encoder.classify(features.reshape(1, -1))[0]
        answers = self.concepts.tag(probabilities, image_vector, langs, k)
        return {
            lang: [Tag(t.name, t.score, t.source, t.concept, t.english) for t in tags] for lang, tags in answers.items()
        }

    def tag_features(
        self, features: np.ndarray, langs: Sequence[str], k: int, source: str | None = None
    ) -> dict[str, list[Tag]]:
        """Tags for an image given its raw pooled CNN features (what the index and the features cache hold)."""
        langs = self.check_languages(langs)
        features = np.asarray(features, dtype=np.float32).reshape(-1)
        image_vector = self.image_space.apply(features)[0]
        kind = self.source_kind(source)
        if kind is SourceKind.CONCEPTS:
            return self.concept_tags(features, image_vector, langs, k)
        try:
            sources = self.source_tags(features, image_vector, kind, k)
        except ValueError:
            if (source or self.settings.source) not in ("auto", SourceKind.CONCEPTS):
                raise  # asked for captions by name (concepts here: a tagger without a lexicon, as auto)
            # auto and no English captions indexed (yet): the CNN's classes still give source tags.
            sources = self.source_tags(features, image_vector, SourceKind.IMAGENET, k)
        return {lang: self.rank(image_vector, sources, lang) for lang in langs}

    def tag(
        self, image: Image.Image, langs: Sequence[str], k: int | None = None, source: str | None = None
    ) -> dict[str, list[Tag]]:
        """``{lang: [Tag, ...]}``: up to ``k`` tags per language, best score first (by concept: one ranking named in
        every language; else one tag per English source tag)."""
        k = self.settings.default_k if k is None else k
        if not 1 <= k <= self.settings.max_k:
            raise ValueError(f"k must be between 1 and {self.settings.max_k}, got {k}")
        langs = self.check_languages(langs)  # before the CNN runs: a bad request costs nothing
        return self.tag_features(self.image_encoder.predict([image])[0], langs, k, source)
