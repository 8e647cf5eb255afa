"""The one settings tree: a root object with nested sections, read from the environment once per process.

    Settings            POLYGLOT_HOME, _INDEX_DIR, _MODELS_DIR, _CACHE_DIR, _DATABASE_URL, …: where things live
    ├── models          ModelSettings: POLYGLOT_IMAGE_ENCODER, _TOWER_PATH, _DEVICE, _ENCODER_BACKEND, …
    ├── index           IndexSettings: POLYGLOT_BATCH_SIZE, _MAX_IMAGE_PIXELS, _THUMBNAIL_SIZE, _WATCH_DIRS, …
    ├── query           QuerySettings: POLYGLOT_QUERY_CACHE_SIZE, _DATE_SORT_POOL, _CLC*, _CAPTION_*
    ├── tagging         TaggingSettings: POLYGLOT_TAG_W1, POLYGLOT_TAG_SOURCE, …
    └── vector_index    VectorIndexSettings: POLYGLOT_INDEX_BACKEND, POLYGLOT_INDEX_KIND, … (indexer/store/index_kinds.py)
    ServiceSettings(Settings) adds `service`: ServiceSection, POLYGLOT_API_KEY, _MAX_K, … (app/service_settings.py)

Every environment variable keeps the name it had before the sections existed (nothing was renamed, so no alias
is needed): a section's fields are still ``POLYGLOT_<FIELD>`` (the tagging and vector sections keep their own
prefixes, ``POLYGLOT_TAG_`` and ``POLYGLOT_INDEX_``), read from the environment and ``./.env``.

Read once, at an entry point — the service's lifespan (``create_app``), each CLI command (one helper,
``app/cli/settings_cli.py``), a benchmark's or training script's ``main`` — and handed down: library code never
builds settings. For convenience (tests, scripts), a section's field may be given by its flat name:
``Settings(batch_size=4)`` is ``Settings(index=IndexSettings(batch_size=4))`` (the section's other fields still
come from the environment), and ``settings.model_copy(update={"tower_path": p})`` updates the ``models`` section.
Flat names are unique across the root and its flat sections (tests/house/test_settings.py).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar, Literal, Self

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from indexer.store.index_kinds import VectorIndexSettings


def default_home() -> Path:
    """Where models, indices and caches live unless configured: ``./var`` of the working directory."""
    return Path("var")


class ModelSettings(BaseSettings):
    """Which models embed images and text, and how they run (what the encoder factory reads)."""

    model_config = SettingsConfigDict(env_prefix="POLYGLOT_", env_file=".env", extra="ignore")

    image_encoder: str = Field(default="efficientnet-lite2", description="Image encoder name (see encoders).")
    text_encoder: str = Field(
        default="muse",
        description="Sentence encoder that `polyglot train` trains a new MLP tower over and the label-bridge "
        "baseline reads. Serving uses it only to pick a tower shipped for that encoder ('embeddinggemma': "
        "indexer/assets/tower-embeddinggemma) when POLYGLOT_TOWER_PATH is unset; otherwise the student and every "
        "tower folder name their own encoder.",
    )
    tower_path: Path | None = Field(
        default=None,
        description="Text side of /search, captions and tags: a student or tower folder; default the shipped "
        "student (indexer/assets/student). A research tower (e.g. training/assets/tower) brings its language bridge.",
    )
    device: str = Field(default="cpu", description="torch device for the encoders: cpu or cuda.")
    encoder_backend: Literal["auto", "onnx", "torch"] = Field(
        default="auto",
        description="How the bundled encoders run: 'auto' through ONNX Runtime when `polyglot models build` "
        "exported them (CUDA provider on a GPU when onnxruntime has it, else eager PyTorch there), 'onnx' always "
        "(an error names the build command when the export is missing), 'torch' the eager PyTorch/C reference.",
    )
    e5_precision: Literal["auto", "int8", "fp32"] = Field(
        default="auto",
        description="The ONNX graph of the student's trunk (and of e5-small in research towers): 'fp32' (the 4-bit "
        "weights' float model), 'int8' (dynamic quantisation, ~2.5x faster on a CPU with VNNI; a calibrated "
        "student's int8 graph is smoothed first and keeps every dev language's recall within 0.01 of fp32; "
        "docs/model-card.md) or 'auto': int8 for a calibrated student, fp32 for anything else.",
    )
    image_precision: Literal["int8", "fp32"] = Field(
        default="int8",
        description="The image CNN's ONNX graph on the CPU: 'int8' (static quantisation, ~0.65x the CPU time: "
        "indexing 12-Mpx photos ~25 % faster, served recall within 0.005 of fp32, vectors interchangeable with "
        "fp32 indexes; docs/image-int8.md) or 'fp32'. A GPU and the torch backend run fp32; 'auto' backend falls "
        "back to fp32 when the int8 build is missing.",
    )
    torch_threads: int | None = Field(default=None, ge=1, le=256, description="torch intra-op threads.")


class IndexSettings(BaseSettings):
    """How photos are read into the index: batches, what one file may cost, thumbnails, watched folders."""

    model_config = SettingsConfigDict(env_prefix="POLYGLOT_", env_file=".env", extra="ignore")

    batch_size: int = Field(default=32, ge=1, le=1024, description="Images per encoder batch while indexing.")
    max_image_pixels: int = Field(
        default=64_000_000, ge=1, description="Decompression-bomb limit: images with more pixels are refused."
    )
    max_file_bytes: int = Field(
        default=100_000_000,
        ge=1_000,
        le=1 << 40,
        description="Largest image file read (index add, admin server paths, uploads): checked from the file's size "
        "before any byte is read.",
    )
    allowed_roots: list[Path] | None = Field(
        default=None,
        description="Folders (JSON list) whose files the service may index by server path (admin POST /images "
        "`path`) and serve; a symlink out of them is refused. Unset: the served photo folder (POLYGLOT_IMAGES_DIR / "
        "`polyglot serve --images`), the watched folders (`serve --watch`) and the index's uploads.",
    )
    decode_full_size: bool = Field(
        default=False,
        description="Decode photos at full size while indexing. Default: at the reduced size the encoder needs "
        "(JPEG DCT scaling, integer reduce for other formats; ~7x faster on 12-Mpx photos, benchmarks/indexing.md).",
    )
    indexing_workers: int | None = Field(
        default=None,
        ge=1,
        le=256,
        description="Threads that read, decode and encode photos side by side while indexing. Default: one per CPU "
        "core for the ONNX image encoder (each runs the network on one thread), else one.",
    )
    index_thumbnails: bool = Field(
        default=True, description="Write each photo's thumbnail while indexing, from the same reduced decode."
    )
    thumbnail_size: int = Field(default=256, ge=32, le=1024, description="Longest side of thumbnails (pixels).")
    preview_size: int = Field(
        default=1600,
        ge=256,
        le=4096,
        description="Longest side of the JPEG previews the page opens a photo with (made once per photo on request, "
        "cached beside the thumbnails): HEIC, AVIF and camera RAW shown in any browser, a 12-Mpx JPEG without its "
        "full download.",
    )
    watch_dirs: list[Path] = Field(
        default_factory=list,
        description="Folders the service keeps in sync with the index while it runs (`serve --watch`; a JSON list).",
    )
    watch_settle_seconds: float = Field(
        default=1.0, ge=0.05, le=600, description="Quiet time after file changes before the watcher applies them."
    )

    def decode_side(self, encoder_side: int | None) -> int | None:
        """The short side a photo is decoded down to for its vector (:func:`indexer.images.decode_image`'s
        ``min_side``): the encoder's (``encoder.decode_side``), and the thumbnail's when it is written from the same
        decode (a 256-px thumbnail needs a short side of at most 256); None: full size. Every path that encodes a
        photo uses it (``index add``, uploads, re-encoding in rebuilds and reconciliation, Ray workers), so a photo
        gets the same vector whichever path encoded it."""
        if self.decode_full_size or encoder_side is None:
            return None
        return max(encoder_side, self.thumbnail_size) if self.index_thumbnails else encoder_side


class QuerySettings(BaseSettings):
    """The query side: the query cache, date ordering, caption → caption search, cross-lingual consistency."""

    model_config = SettingsConfigDict(env_prefix="POLYGLOT_", env_file=".env", extra="ignore")

    date_sort_pool: int = Field(
        default=200, ge=1, le=10_000, description="sort=date: how many of the best matches are ordered by date."
    )
    stack_threshold: float = Field(
        default=0.85,
        ge=0.5,
        le=1.0,
        description="Cosine at or above which photos are one stack in the library and in results (stack=true): "
        "near-duplicates of a shot (benchmarks/duplicates.md measured 0.85).",
    )
    query_cache_size: int = Field(default=1024, ge=0, le=1_000_000, description="Query vectors kept (LRU); 0 = off.")
    concept_fusion_weight: float = Field(
        default=1.5,
        ge=0.0,
        le=4.0,
        description="Search through the concept lexicon: a query that is a concept's name in its language gets "
        "that concept's English vector added with this weight (0 = off; chosen on m30k-f8k train, "
        "docs/results/search-names-by-lexicon.md).",
    )
    caption_alignments: list[Path] | None = Field(
        default=None,
        description="Folders of linear caption alignments (`polyglot train --method pcca --langs x,y`; JSON list): "
        "captions of y found for a query in x (and back) are ranked in the alignment's space. Unset: the shipped "
        "ones (training/assets/align/*, over mUSE: used when the text side's encoder includes it, i.e. a research "
        "tower, not the student); [] = none.",
    )
    caption_search_fallback: Literal["sentence", "tower"] = Field(
        default="sentence",
        description="Language pairs without an alignment: 'sentence' ranks the text encoder's sentence embeddings "
        "(the student's trunk) by cosine, 'tower' the captions' image-space vectors (benchmarks/caption_search_eval.py compares them).",
    )
    # Cross-lingual consistency (training/clc/consistency.py): queries also scored by their
    # translations. Off unless asked per request (/search?clc=) or here.
    clc: Literal["off", "average", "classifier"] = Field(
        default="off",
        description="Cross-lingual consistency for /search queries that do not ask: 'off', 'average' (CLC-A: the "
        "mean score of the query and its translations) or 'classifier' (CLC-C: POLYGLOT_CLC_CLASSIFIER).",
    )
    clc_languages: list[str] = Field(
        default_factory=lambda: ["en", "de", "fr", "cs"],
        min_length=1,
        max_length=20,
        description='Languages a query is translated into for CLC (JSON list, e.g. ["en","de"]).',
    )
    clc_translator: Literal["gloss", "retrieval", "mt"] | None = Field(
        default=None,
        description="How queries are translated for CLC: 'gloss' (MUSE dictionaries, into English only), "
        "'retrieval' (nearest caption of POLYGLOT_CLC_CORPUS in the target language), 'mt' (argostranslate, when "
        "installed). Unset: CLC unavailable.",
    )
    clc_lexicons_dir: Path | None = Field(
        default=None, description="Dictionaries of the gloss translator (en-XX.tsv, MUSE layout)."
    )
    clc_corpus: Path | None = Field(
        default=None,
        description="Caption collection of the retrieval translator (a captions.jsonl file or a folder with one); "
        "its sentence index is built once under CACHE_DIR/translation.",
    )
    clc_encoder: str = Field(
        default="muse",
        description="Cross-lingual sentence encoder of the retrieval translator (queries and targets outside its "
        "languages get no translation).",
    )
    clc_min_similarity: float = Field(
        default=-1.0,
        ge=-1.0,
        le=1.0,
        description="The retrieval translator's nearest caption counts as a translation only from this cosine up.",
    )
    clc_classifier: Path | None = Field(
        default=None, description="CLC-C checkpoint folder (config.json + model.safetensors, polyglot clc fit)."
    )
    clc_candidates: int = Field(
        default=100, ge=1, le=10_000, description="Images CLC-C re-ranks (the CLC-A search's best)."
    )


class TaggingSettings(BaseSettings):
    """Contextual tagging (env prefix ``POLYGLOT_TAG_``, e.g. ``POLYGLOT_TAG_W1=0.65``)."""

    model_config = SettingsConfigDict(env_prefix="POLYGLOT_TAG_", env_file=".env", extra="ignore")
    # w1, w2: the defaults of indexer/tagging/ranking.py (DEFAULT_W1, DEFAULT_W2; tests/house/test_settings.py checks
    # they agree), written out here because the settings sit below every other module of the library.

    w1: float = Field(default=0.65, ge=0.0, le=10.0, description="Weight of cos(image, target tag), eq. 5.")
    w2: float = Field(default=0.35, ge=0.0, le=10.0, description="Weight of cos(source tag, target tag).")
    source: Literal["concepts", "auto", "imagenet", "captions"] = Field(
        default="concepts",
        description="How tags are chosen: concepts (the concept lexicon's concepts ranked by the photo itself, one "
        "ranking named in every language, whatever captions are indexed), or one tag per English source tag: "
        "ImageNet classes, retrieved captions' words, or auto (captions if a caption index is loaded, else ImageNet).",
    )
    lexicon_dir: Path | None = Field(
        default=None,
        description="Concept lexicon folder (manifest.json, concepts.tsv, names/); default the shipped "
        "indexer/assets/concepts. A missing or damaged file stops start-up with one line naming it.",
    )
    concept_weight: float = Field(
        default=0.15,
        ge=0.0,
        le=10.0,
        description="Concept tags: weight of the standardised cos(image, concept name) beside the CNN's class mass.",
    )
    concept_generality: float = Field(
        default=2.0,
        ge=0.0,
        le=100.0,
        description="Concept tags: what a concept loses per share of the 1,000 ImageNet classes below it (entity: all).",
    )
    concept_frequency: float = Field(
        default=0.05,
        ge=0.0,
        le=10.0,
        description="Concept tags: weight of the concept's standardised log corpus count (common concepts first).",
    )
    captions_k: int = Field(default=10, ge=1, le=200, description="Captions retrieved per image for source tags.")
    default_k: int = Field(default=10, ge=1, le=100, description="Tags per language when the request gives no k.")
    max_k: int = Field(default=50, ge=1, le=500, description="Most tags per language a request may ask for.")
    # 0.7: in the student's space near-synonyms sit at 0.7-0.8 (bike/bicycle 0.76, vélo/bicyclette 0.74), related
    # but distinct words lower (dog/puppy 0.65, car/automobile 0.51, chien/chiot 0.40), unrelated ones ~0.05.
    max_similarity: float = Field(
        default=0.7,
        ge=0.0,
        le=1.0,
        description="A tag whose vector is at least this close (cosine) to a better tag of the same answer is a "
        "near-synonym and is left out (1: keep all).",
    )
    english_weight: float = Field(
        default=0.75,
        ge=0.0,
        le=1.0,
        description="A shipped tag's vector: this much of its English source word's vector, the rest its own "
        "(0: the tag's own vector only).",
    )


class Settings(BaseSettings):
    """The root: where things live, and one section per part of the house (see the module docstring)."""

    model_config = SettingsConfigDict(env_prefix="POLYGLOT_", env_file=".env", extra="ignore")
    # Sections whose fields keep flat POLYGLOT_<FIELD> names and may be given flat (see the module docstring).
    FLAT_SECTIONS: ClassVar[tuple[str, ...]] = ("models", "index", "query")

    home: Path = Field(default_factory=default_home, description="Root folder for models, index and caches.")
    index_dir: Path | None = Field(default=None, description="Index folder; default HOME/index.")
    models_dir: Path | None = Field(default=None, description="Downloaded/verified model files; default HOME/models.")
    cache_dir: Path | None = Field(default=None, description="Feature caches; default HOME/cache.")
    database_url: str | None = Field(
        default=None,
        description="SQLAlchemy URL for image metadata; default a SQLite file in the index folder.",
    )
    database_timeout_seconds: float | None = Field(
        default=None,
        ge=1,
        le=3600,
        description="The longest wait for a database server (PostgreSQL) to answer one call: a server that stops "
        "answering without refusing is an outage after this, not a hung request. Unset: no bound on answers (the "
        "CLI's long maintenance statements); the service's default is 5. Connecting is always bounded.",
    )
    captions_dir: Path | None = Field(default=None, description="Caption index folder; default INDEX_DIR/captions.")
    captions_database_url: str | None = Field(
        default=None,
        description="SQLAlchemy URL for the caption rows (e.g. the PostgreSQL of POLYGLOT_DATABASE_URL); default a "
        "SQLite file in the caption folder. Set it before indexing captions: rows are not moved between databases.",
    )

    models: ModelSettings = Field(default_factory=ModelSettings, description="Encoders and how they run.")
    index: IndexSettings = Field(default_factory=IndexSettings, description="Reading photos into the index.")
    query: QuerySettings = Field(default_factory=QuerySettings, description="The query side.")
    tagging: TaggingSettings = Field(default_factory=TaggingSettings, description="Tagging (POLYGLOT_TAG_*).")
    vector_index: VectorIndexSettings = Field(
        default_factory=VectorIndexSettings,
        description="Where vectors live, the FAISS index kind rule and tuning (POLYGLOT_INDEX_*).",
    )

    @property
    def resolved_index_dir(self) -> Path:
        return self.index_dir or self.home / "index"

    @property
    def resolved_captions_dir(self) -> Path:
        return self.captions_dir or self.resolved_index_dir / "captions"

    @property
    def resolved_models_dir(self) -> Path:
        return self.models_dir or self.home / "models"

    @property
    def resolved_cache_dir(self) -> Path:
        return self.cache_dir or self.home / "cache"

    @classmethod
    def flat_owner(cls, name: str) -> str | None:
        """The flat section that holds field ``name`` (None: a root field, or no such field)."""
        if name in cls.model_fields:
            return None
        for section in cls.FLAT_SECTIONS:
            annotation = cls.model_fields[section].annotation
            if (
                isinstance(annotation, type)
                and issubclass(annotation, BaseSettings)
                and name in annotation.model_fields
            ):
                return section
        return None

    @classmethod
    def _grouped(cls, values: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
        """``values`` split into root keys and, per flat section, the flat keys it owns."""
        root: dict[str, Any] = {}
        sections: dict[str, dict[str, Any]] = {}
        for key, value in values.items():
            owner = cls.flat_owner(key)
            if owner is None:
                root[key] = value
            else:
                sections.setdefault(owner, {})[key] = value
        return root, sections

    @model_validator(mode="before")
    @classmethod
    def _flat_fields_to_sections(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        root, sections = cls._grouped(data)
        for section, values in sections.items():
            current = root.get(section)
            section_type = cls.model_fields[section].annotation
            assert isinstance(section_type, type) and issubclass(section_type, BaseSettings)
            if isinstance(current, BaseSettings):
                root[section] = section_type(**{**dict(current), **values})
            elif isinstance(current, Mapping):
                root[section] = section_type(**{**current, **values})
            else:  # the section's other fields from the environment, as if it had been built without these
                root[section] = section_type(**values)
        return root

    def model_copy(self, *, update: Mapping[str, Any] | None = None, deep: bool = False) -> Self:
        """pydantic's copy; ``update`` may name a flat section's fields directly (they update that section)."""
        if update:
            root, sections = self._grouped(update)
            for section, values in sections.items():
                base = root.get(section, getattr(self, section))
                root[section] = base.model_copy(update=values)
            update = root
        return super().model_copy(update=update, deep=deep)


# Settings of the query side the student made unnecessary (issue 23): the fast mUSE tower and its routes, and the
# English glosses of queries. Setting them is harmless (extra="ignore") but would silently do nothing, so
# start-up names them once (:func:`warn_removed_settings`).
REMOVED_SETTINGS = {
    "POLYGLOT_FAST_TOWER": "the fast tower and its route",
    "POLYGLOT_FAST_TOWER_LANGUAGES": "the fast tower and its route",
    "POLYGLOT_FAST_TOWER_USE": "the fast tower and its route",
    "POLYGLOT_FAST_TOWER_WEIGHT": "the fast tower and its route",
    "POLYGLOT_LEXICONS_DIR": "English glosses of queries (POLYGLOT_CLC_LEXICONS_DIR feeds CLC's gloss translator)",
    "POLYGLOT_LEXICON_WEIGHT": "English glosses of queries",
}


def removed_settings(environ: Mapping[str, str] | None = None) -> list[str]:
    """The removed POLYGLOT_* variables set in ``environ`` (default: the process environment)."""
    env = os.environ if environ is None else environ
    return [name for name in REMOVED_SETTINGS if name in env]


_warned: set[str] = set()  # names already logged by this process (the CLI's serve loads the models twice)


def warn_removed_settings(environ: Mapping[str, str] | None = None, *, once: bool = True) -> list[str]:
    """Log one warning naming the removed variables still set (none: no log; ``once``: each name once per
    process); returns the names it logged. :func:`indexer.query.load_models` calls it, so the service, the CLI
    and ``polyglot evaluate`` all say it at start-up."""
    found = [name for name in removed_settings(environ) if not (once and name in _warned)]
    _warned.update(found)
    if found:
        what = "; ".join(f"{name}: {REMOVED_SETTINGS[name]}" for name in found)
        logging.getLogger("indexer.settings").warning(
            "%s no longer %s an effect: every language takes the one text side (POLYGLOT_TOWER_PATH, default "
            "the shipped student). Removed: %s. Unset %s.",
            ", ".join(found),
            "has" if len(found) == 1 else "have",
            what,
            "it" if len(found) == 1 else "them",
            extra={"removed_settings": found},
        )
    return found
