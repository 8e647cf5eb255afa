"""The caption index: a collection of captions embedded by the text tower, so an image can find its best captions.

Captions live in the image space (text encoder → tower → unit vector), so image→caption retrieval is the
image's unit vector against caption vectors, inner product = cosine similarity.

On disk (default ``INDEX_DIR/captions/``)::

    captions.sqlite   the ``captions`` table: id, lang, text, image, source, unique (lang, text); the source of
                      truth (or the same table in the database ``CaptionIndex.open(database_url=...)`` names)
    <lang>.faiss      one exact ``IndexIDMap2(IndexFlatIP)`` per language, id = SQL id
    captions.json     sidecar: format, dim, tower fingerprint, counts, revision (incremented by every save) and the
                      revision each language's file was saved at, database (redacted), library versions

The table is opened like the image index's (:class:`indexer.store.sql.SqlStore`) and the vectors are
:class:`indexer.store.vectors.VectorIndex` objects of kind ``flat``. One FAISS index per language (not one index
with a language column): a query always asks for captions in given languages, and per-language indexes answer
that exactly with no over-fetch-then-filter step; see ``benchmarks/captions_layout.md``. Sentence embeddings come
from the features cache (keyed by text hash), so re-indexing or a new tower only re-runs the small MLP.

Commit protocol: new captions are embedded first, their rows committed in one SQL transaction, then each touched
language's FAISS file is rewritten atomically, then the sidecar. :meth:`CaptionIndex.open` rebuilds any language
whose FAISS file disagrees with SQL (ids; a crash in between) or whose vectors came from another tower
(:func:`indexer.tower.tower_fingerprint`). Writers change a copy of a language's index and swap it in, so
concurrent searches never see a half-changed index; writes are serialised in-process and across processes
(``flock`` on ``.write.lock``), and a process takes in the languages another one saved before it writes (and,
searching, within a second): :mod:`indexer.captions.index`.
"""

from indexer.caption_records import Caption, CaptionFileError, iter_captions, read_captions
from indexer.captions.files import SIDECAR_NAME
from indexer.captions.index import DB_NAME, CaptionHit, CaptionIndex

__all__ = [
    "DB_NAME",
    "SIDECAR_NAME",
    "Caption",
    "CaptionFileError",
    "CaptionHit",
    "CaptionIndex",
    "iter_captions",
    "read_captions",
]
