"""Small parts of the ONNX e5 path that need no model: 4-bit blocks, padding, windows, length groups."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from indexer.encoders.e5 import combine_windows, dequantize_q4, length_groups, pad_batch


def test_dequantize_q4_block_layout() -> None:
    block = np.zeros((1, 18), dtype=np.uint8)
    block[0, :2] = np.frombuffer(np.float16(0.5).tobytes(), dtype=np.uint8)
    block[0, 2:] = [(hi << 4) | lo for lo, hi in zip(range(16), range(15, -1, -1), strict=True)]
    values = dequantize_q4(block)
    # low nibbles are weights 0..15, high nibbles 16..31, each (q - 8) · scale
    np.testing.assert_array_equal(values[:16], (np.arange(16) - 8) * 0.5)
    np.testing.assert_array_equal(values[16:], (np.arange(15, -1, -1) - 8) * 0.5)


def test_pad_batch_and_windows() -> None:
    ids, mask = pad_batch([[0, 5, 2], [0, 2]], pad=1)
    np.testing.assert_array_equal(ids, [[0, 5, 2], [0, 2, 1]])
    np.testing.assert_array_equal(mask, [[1, 1, 1], [1, 1, 0]])
    pooled = np.array([[1.0, 0.0], [0.0, 1.0], [3.0, 3.0]], dtype=np.float32)
    combined = combine_windows(pooled, [0, 0, 1], [3, 1, 5], 2)
    np.testing.assert_allclose(combined, [[0.75, 0.25], [3.0, 3.0]])


def test_length_groups_bound_padding() -> None:
    lengths = [20, 21, 19, 60, 22, 58]
    groups = length_groups(lengths)
    assert sorted(i for group in groups for i in group) == list(range(len(lengths)))
    for group in groups:
        longest, total = max(lengths[i] for i in group), sum(lengths[i] for i in group)
        assert longest * len(group) <= 1.5 * total
    assert len(groups) == 2  # the short ones together, the long ones together


def test_the_tokenizers_kept_tables_are_the_ones_it_builds(tmp_path: Path) -> None:
    """`polyglot search` reads the tokenizer's tables from the cache (E5Tokenizer.kept, memory-mapped): the same
    entries, the same tokens (a Viterbi search over the substrings' entries alone); a damaged copy is built again."""
    from indexer.encoders.e5 import E5Tokenizer, E5Weights, KeptPieces, tokenizer_tables

    weights = E5Weights()
    built = E5Tokenizer(weights)
    first = E5Tokenizer.kept(weights, tmp_path)  # builds and keeps them
    again = E5Tokenizer.kept(E5Weights(), tmp_path)  # reads them
    assert isinstance(again._pieces, KeptPieces) and isinstance(first._pieces, dict)
    assert again._pieces.to_dict() == built._pieces == tokenizer_tables(weights)[0] and again._stop_at_space is True
    texts = (
        "un chien sur la plage",
        "Ein Hund rennt am Strand.",
        "里斯本的电车",
        "собака бежит по пляжу",
        "كلب على الشاطئ",
        "Été à Lisboa, l'œuvre  naïve",
        "a\x00b ☃ 🐕 zzqxj",
        "a" * 600,
    )
    for text in texts:
        assert again.windows([text]) == first.windows([text]) == built.windows([text])
    # Without the word split (a vocabulary with pieces across words): the whole string's substrings.
    again._stop_at_space = built._stop_at_space = False
    for text in texts[:4]:
        assert again.content_ids(text) == built.content_ids(text)
    (kept,) = tmp_path.glob("*/keys.npy")
    kept.write_bytes(b"\x00garbage")
    rebuilt = E5Tokenizer.kept(E5Weights(), tmp_path)
    assert rebuilt._pieces == built._pieces
    assert isinstance(E5Tokenizer.kept(E5Weights(), tmp_path)._pieces, KeptPieces)  # kept again


def test_kept_pieces_answer_only_their_own_entries() -> None:
    from indexer.encoders.e5 import KeptPieces

    table = {"▁a": (5, -1.5), "ab": (7, -2.25), "b": (9, -3.0), "é": (11, -0.5)}
    kept = KeptPieces.of(table)
    assert kept.to_dict() == table
    assert kept.within("▁ab", 4) == {"▁a": (5, -1.5), "ab": (7, -2.25), "b": (9, -3.0)}
    assert kept.within("▁ab", 3) == {"ab": (7, -2.25), "b": (9, -3.0)}  # "▁a" is 4 bytes
    assert kept.within("zé", 8) == {"é": (11, -0.5)}
    assert kept.within("b\x00", 8) == {"b": (9, -3.0)}  # "b\x00" is no piece, though fixed-width bytes drop NULs
    assert kept.within("", 8) == {}
    assert all(type(v) is int and type(s) is float for v, s in kept.within("▁ab", 8).values())
