"""Raw CNN features of indexed rows: from the features cache, else re-encoded from their files (rebuilds, and
the reconciliation after a crash)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from indexer.encoders.base import ImageEncoder
from indexer.feature_cache import FeatureCache
from indexer.images import ImageDecodeError, content_hash, decode_image
from indexer.settings import Settings


def reencode(
    keys: Sequence[tuple[int, str, str]],
    cache: FeatureCache,
    prepare: Callable[[Any], Any],
    loaded_encoder: Callable[[], ImageEncoder],
    settings: Settings,
    progress: bool,
    decode_side: int | None = None,
) -> tuple[dict[int, np.ndarray], list[tuple[str, str]]]:
    """Features by id for ``(id, sha256, path)`` rows, and the ``(path, reason)`` of rows whose file is gone or
    changed. Each photo is decoded at the reduced size ``index add`` decodes it to (``decode_side``: the same
    vector, and a 12-Mpx JPEG costs a 1/8-scale decode, not 12 million pixels) and turned into the model's input
    (``prepare``) at once, so a batch holds model-size inputs, never decoded photos."""
    cached = cache.get_many([sha for _, sha, _ in keys])
    out = {i: cached[sha] for i, sha, _ in keys if sha in cached}
    missing = [(i, sha, path) for i, sha, path in keys if sha not in cached]
    failed: list[tuple[str, str]] = []
    from tqdm.auto import tqdm  # here: a search opens the index and never shows a bar (test_search_startup.py)

    bar = tqdm(total=len(missing), unit="img", desc="re-encoding", disable=not progress or not missing)
    for start in range(0, len(missing), settings.index.batch_size):
        batch, inputs = [], []
        for i, sha, path in missing[start : start + settings.index.batch_size]:
            try:
                data = Path(path).read_bytes()
                if content_hash(data) != sha:
                    raise ImageDecodeError("the file changed since it was indexed; run `polyglot index add`")
                image = decode_image(data, max_pixels=settings.index.max_image_pixels, min_side=decode_side)
                inputs.append(prepare(image))
                batch.append((i, sha))
            except (OSError, ImageDecodeError) as exc:
                failed.append((path, str(exc)))
        if inputs:
            vectors = loaded_encoder().predict_prepared(inputs)
            cache.put_many({sha: vectors[n] for n, (_, sha) in enumerate(batch)})
            out.update({i: vectors[n] for n, (i, _) in enumerate(batch)})
        bar.update(len(missing[start : start + settings.index.batch_size]))
    bar.close()
    return out, failed
