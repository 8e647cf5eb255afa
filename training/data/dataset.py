"""Read an image–caption data set in the m30k-f8k layout: ``images/``, ``captions.jsonl``, ``splits/*.txt``.

``captions.jsonl`` is the shared captions format (:mod:`indexer.caption_records`), read by the same reader as
the caption index, with one more rule: every row names its image.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from indexer.caption_records import Caption, CaptionFileError, iter_captions


@dataclass
class CaptionDataset:
    root: Path
    images: list[str]
    captions: list[Caption]

    def image_path(self, image: str) -> Path:
        return self.root / "images" / image

    def languages(self) -> list[str]:
        return sorted({caption.lang for caption in self.captions})

    def by_lang(self, lang: str) -> list[Caption]:
        return [caption for caption in self.captions if caption.lang == lang]


class DatasetError(ValueError):
    pass


def read_split(root: Path, split: str) -> list[str]:
    path = Path(root) / "splits" / f"{split}.txt"
    if not path.exists():
        available = sorted(p.stem for p in (Path(root) / "splits").glob("*.txt"))
        raise DatasetError(f"no split {split!r} in {root}: expected {path} (available: {available or 'none'})")
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def load_dataset(
    root: Path, split: str, langs: Iterable[str] | None = None, extra: Sequence[Path] = ()
) -> CaptionDataset:
    """Images of ``split`` (in split order) and their captions, optionally restricted to ``langs``; ``extra``:
    more caption files of the same schema whose rows for these images are added (after the data set's own)."""
    root = Path(root)
    images = read_split(root, split)
    wanted = set(images)
    for path in extra:
        if not Path(path).is_file():
            raise DatasetError(f"caption file {path} does not exist")
    try:
        captions = [
            caption
            for path in (root / "captions.jsonl", *extra)
            for caption in iter_captions(path, langs, need_image=True)
            if caption.image in wanted
        ]
    except CaptionFileError as exc:
        raise DatasetError(str(exc)) from None
    return CaptionDataset(root=root, images=images, captions=captions)
