"""The distillation teacher: a frozen text tower's vectors for the English captions, computed once and cached.

The default teacher is the previous served model (``training/assets/tower``: mUSE + e5-small + MLP, dev English
t2i R@10 0.619), read with its English route, as in M-CLIP where the English CLIP text encoder is the teacher.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
from tqdm import tqdm

from indexer.atomic import atomic_open
from indexer.tower import TextEmbedder


def teacher_vectors(
    teacher: TextEmbedder, texts: list[str], cache_dir: Path, name: str, batch_size: int = 256
) -> np.ndarray:
    """(len(texts), dim) unit vectors of ``teacher`` for English ``texts``; cached under ``cache_dir``."""
    digest = hashlib.sha256(name.encode())
    for text in texts:
        digest.update(text.encode())
        digest.update(b"\0")
    path = Path(cache_dir) / "student-teacher" / f"{digest.hexdigest()[:20]}.npy"
    if path.exists():
        return np.load(path)
    teacher.load()
    out = np.empty((len(texts), teacher.dim), dtype=np.float32)
    for start in tqdm(range(0, len(texts), batch_size), desc="teacher", unit="batch"):
        chunk = texts[start : start + batch_size]
        out[start : start + len(chunk)] = teacher.embed(chunk, "en")
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_open(path) as handle:
        np.save(handle, out)
    return out
