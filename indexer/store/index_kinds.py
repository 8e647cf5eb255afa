"""Which FAISS index kind a collection gets, and what each costs per image (the kind rule and its settings).

Index kind rule (``POLYGLOT_INDEX_KIND=auto``, thresholds in :class:`VectorIndexSettings`):

============================  =============  ==========================================  ========================
collection size n             kind           FAISS                                       memory per image (d dims)
============================  =============  ==========================================  ========================
n <= 2,000 (flat_max)         ``flat``       ``IndexIDMap2(IndexFlatIP)``: exact          4·d + 16 B (1280-d: 5.1 KB)
2,000 < n <= 50,000           ``pq-refine``  ``IndexIDMap2(IndexRefineFlat(              4·d + d/8 + 16 B
(exact_max)                                  IndexPQFastScan(d, d/4, 4 bits)))``         (1280-d: ~5.3 KB)
50,000 < n <= 100,000         ``hnsw``       ``IndexIDMap2(IndexHNSWFlat(d, M=32, IP))``  4·d + 8·M·~1.03 + 16 B
                                                                                         (1280-d: ~5.4 KB)
n > 100,000 (hnsw_max)        ``ivf-pq-     ``IndexIVFPQFastScan(d, nlist = 2·√n,         d/8 + ~50 B in RAM
                              mmap``         d/4 x 4 bits)`` over row numbers; the       (1280-d: ~0.24 KB);
                                             full vectors memory-mapped from disk,       4·d B on disk
                                             rerank·k candidates re-ranked exactly        (float16: 2·d)
(forced only:                 ``ivf-sq8``    ``IndexIVFScalarQuantizer``, 8-bit,          d + 8 + 16 B
POLYGLOT_INDEX_KIND=ivf-sq8)                 nlist = 4·√n, nprobe = nlist/8             (1280-d: ~1.3 KB)
============================  =============  ==========================================  ========================

The 16 B per image are the id map (id list + reverse hash map of ``IndexIDMap2``, which lets us
reconstruct a stored vector by id).

``flat`` reads every stored vector for each query: 36 MB at 7,000 x 1,280 floats, more than this machine's
last-level cache, so it also evicts the text encoder's and the tower's weights between queries. ``pq-refine``
ranks every image on 4-bit product-quantized codes (d/8 bytes each, scanned with SIMD in registers), keeps the
best ``refine_factor``·k and re-ranks those by exact inner products with the stored float32 vectors: the scores
are the exact cosines, and on the 7,000-photo collection its top 20 and top 100 were the exhaustive ones for all
of 800 real caption queries (``benchmarks/index_kinds.md``), at a sixth of the search time. Beyond 50k images
HNSW keeps ~1 ms queries with recall > 0.95. Beyond ``hnsw_max``, ``ivf-pq-mmap`` keeps only 4-bit codes in
RAM (~0.24 KB a photo instead of 5.4) and the full vectors on disk, memory-mapped: the candidates of the codes
are re-ranked by exact inner products read from the page cache, so the scores stay the exact cosines; adds
and deletes append to its files (no rebuild). Measured from 10 thousand to a million photos in
``benchmarks/index_scale.md`` (with ``ivf-sq8``'s k-means on a million 1,280-d points out of reach of a 2-core
build, ``ivf-sq8`` is no longer picked by the rule; existing ``ivf-sq8`` indexes still open, and grow into
``ivf-pq-mmap`` at their next add).
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

MMAP_KIND = "ivf-pq-mmap"
# Ordered by the size they serve: the auto rule never moves an index down this list by itself.
FAISS_KINDS: tuple[str, ...] = ("flat", "pq-refine", "hnsw", "ivf-sq8", MMAP_KIND)
# POLYGLOT_INDEX_BACKEND=milvus: the vectors live in a Milvus collection (indexer/store/milvus_vectors.py).
MILVUS_KINDS: tuple[str, ...] = ("milvus-flat", "milvus-hnsw")
KINDS: tuple[str, ...] = FAISS_KINDS + MILVUS_KINDS
# 4-bit codebooks have 16 centroids per sub-quantizer; FAISS's k-means wants >= 39 training points per centroid.
PQ_MIN_VECTORS = 39 * 16
HNSW_MAX = 100_000  # measured: above it ivf-pq-mmap has better recall, 1/20 of the RAM, 1/10 of the build time


class VectorIndexSettings(BaseSettings):
    """Where the vectors live and how their index is chosen and tuned (env prefix ``POLYGLOT_INDEX_``)."""

    model_config = SettingsConfigDict(env_prefix="POLYGLOT_INDEX_", env_file=".env", extra="ignore")

    backend: Literal["faiss", "milvus"] = Field(
        default="faiss",
        description="faiss: in-process files in the index folder; milvus: a Milvus server or cluster "
        "(docs/deployment.md). Metadata stays in SQL either way.",
    )
    milvus_uri: str = Field(default="http://127.0.0.1:19530", description="Milvus server (backend=milvus).")
    milvus_token: str | None = Field(default=None, description="Milvus credentials 'user:password' or an API key.")
    milvus_collection: str = Field(
        default="polyglot_images",
        pattern=r"^[A-Za-z_][A-Za-z0-9_]{0,200}$",
        description="Collection name prefix; each rebuild writes a new generation <prefix>_g<time>.",
    )
    milvus_consistency: Literal["Strong", "Session", "Bounded"] = Field(
        default="Session",
        description="What searches and counts wait for. Session: this process's own writes (its deletes never "
        "come back), others' within Milvus's time tick. Strong: every write, waiting for a tick each time.",
    )
    milvus_timeout: float = Field(
        default=5.0,
        gt=0,
        le=600,
        description="Seconds one Milvus call may take (retries included) before it fails as an outage (503).",
    )
    milvus_index: Literal["flat", "hnsw"] = Field(
        default="hnsw", description="Milvus index: flat (exact) or hnsw (ANN, tuned by POLYGLOT_INDEX_HNSW_*)."
    )

    kind: Literal["auto", "flat", "pq-refine", "hnsw", "ivf-sq8", "ivf-pq-mmap"] = Field(
        default="auto", description="auto applies the size rule; anything else forces that kind."
    )
    flat_max: int = Field(default=2_000, ge=0, description="Largest collection scanned in full (flat).")
    exact_max: int = Field(
        default=50_000, ge=0, description="Largest collection ranked by exact re-ranking (pq-refine); HNSW above."
    )
    refine_factor: int = Field(
        default=10, ge=1, le=1000, description="pq-refine: candidates re-ranked exactly per result (k_factor)."
    )
    hnsw_max: int = Field(
        default=HNSW_MAX, ge=0, description="Largest collection kept in HNSW; ivf-pq-mmap (vectors on disk) above."
    )
    hnsw_m: int = Field(default=32, ge=4, le=128, description="HNSW graph degree M.")
    hnsw_ef_construction: int = Field(default=200, ge=8, le=2048)
    hnsw_ef_search: int = Field(default=128, ge=8, le=4096, description="HNSW search breadth (recall vs speed).")
    ivf_nlist: int | None = Field(default=None, ge=1, description="IVF lists; default 4·sqrt(n).")
    ivf_nprobe: int | None = Field(default=None, ge=1, description="IVF lists visited per query; default nlist/8.")
    # ivf-pq-mmap (indexer/store/mmap_index.py); defaults measured in benchmarks/index_scale.md.
    mmap_nlist: int | None = Field(default=None, ge=1, description="ivf-pq-mmap IVF lists; default 2·sqrt(n).")
    mmap_nprobe: int | None = Field(default=None, ge=1, description="ivf-pq-mmap lists visited; default nlist/4.")
    mmap_pq_dims: int = Field(default=4, ge=1, le=64, description="Dimensions per 4-bit code (1280-d, 4: 160 B).")
    mmap_rerank: int = Field(
        default=30, ge=1, le=1000, description="ivf-pq-mmap: candidates re-ranked exactly per result (from disk)."
    )
    mmap_dtype: Literal["float32", "float16"] = Field(
        default="float32", description="Full vectors on disk: float32 (exact scores) or float16 (half the disk)."
    )
    mmap_train_per_list: int = Field(default=40, ge=39, le=1000, description="k-means sample per IVF list.")
    mmap_train_iterations: int = Field(default=10, ge=1, le=100, description="k-means iterations of the quantiser.")
    mmap_snapshot_rows: int = Field(
        default=20_000, ge=0, description="Rows added since the codes were last written before they are rewritten."
    )


def choose_kind(count: int, settings: VectorIndexSettings) -> str:
    """The index kind for a collection of ``count`` images (see the module docstring)."""
    if settings.backend == "milvus":  # Milvus builds and tunes its own segments: one kind whatever the size
        return f"milvus-{settings.milvus_index}"
    if settings.kind != "auto":
        # Codebooks cannot be trained on a handful of vectors: such a collection is scanned in full meanwhile.
        trained = settings.kind in ("pq-refine", MMAP_KIND)
        return "flat" if trained and count < PQ_MIN_VECTORS else settings.kind
    if count <= min(settings.flat_max, settings.exact_max):
        return "flat"
    if count <= settings.exact_max:
        return "pq-refine"
    if count <= settings.hnsw_max:
        return "hnsw"
    return MMAP_KIND


def bytes_per_vector(kind: str, dim: int, settings: VectorIndexSettings) -> float:
    """Approximate resident memory per stored vector, id map included."""
    id_map = 16.0
    if kind == "flat":
        return 4 * dim + id_map
    if kind == "pq-refine":
        return 4 * dim + pq_subquantizers(dim) / 2 + id_map
    if kind == "hnsw":
        # level 0 keeps 2·M neighbours (int32); upper levels add ~1/M of that on average.
        return 4 * dim + 4 * 2 * settings.hnsw_m * (1 + 1 / settings.hnsw_m) + id_map
    if kind == "ivf-sq8":
        return dim + 8 + id_map
    if kind == MMAP_KIND:
        # 4-bit codes + list id + the row file's id, live flag and sorted look-up (id, row); vectors on disk.
        return dim / settings.mmap_pq_dims / 2 + 8 + 8 + 1 + 16
    if kind in MILVUS_KINDS:
        # Held by the Milvus query nodes, not by this process: float32 vector + int64 id (+ HNSW links).
        links = 4 * 2 * settings.hnsw_m * (1 + 1 / settings.hnsw_m) if kind == "milvus-hnsw" else 0.0
        return 4 * dim + 8 + links
    raise ValueError(f"unknown index kind {kind!r}; choose one of {', '.join(KINDS)}")


def pq_subquantizers(dim: int) -> int:
    """Sub-quantizers of the pq-refine codes: the most that divide ``dim`` with >= 4 dimensions each."""
    return max(m for m in range(1, max(1, dim // 4) + 1) if dim % m == 0)
