"""The wide-domain dev set: one photo per ImageNet class, the class name as the query, in 13 languages.

``../shared/data/imagenet-samples`` (700 photos, one per class) with the class names of
``../shared/data/imagenet-labels/babel-imagenet.json`` is laid out as a caption data set (``images/``,
``captions.jsonl``, ``splits/dev.txt``) so that ``polyglot evaluate`` measures it like Flickr dev: each photo
is the only one of its class, so each name has exactly one right answer among 700. A language's queries are the
classes it has a name for. The names are measurement data only (BabelNet non-commercial licence): they are read
here and nowhere in training or serving.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from indexer.atomic import atomic_write_bytes
from training.data.text_case import in_case

SOURCE = "babel-imagenet"
# Languages of the student's training data; the others of the 13 are reported apart as never trained on.
TRAINED_LANGUAGES = frozenset({"en", "de", "fr", "cs", "pt", "zh", "ja", "ar", "es", "uk"})


class WideDevError(ValueError):
    pass


def build_wide_dev(samples: Path, labels: Path, out: Path, case: str | None = None) -> Path:
    """Write the data set layout into ``out`` (its ``images`` links to the samples' folder); returns ``out``.

    ``case`` (a ``text_case.CASE_FORMS`` form) puts every query in that form instead of as the names are written.
    """
    samples, labels, out = Path(samples), Path(labels), Path(out)
    if labels.is_dir():
        labels = labels / "babel-imagenet.json"
    index_file = samples / "images.jsonl"
    if not index_file.is_file() or not labels.is_file():
        raise WideDevError(f"need {index_file} and {labels} (imagenet-samples and imagenet-labels)")
    photos = [json.loads(line) for line in index_file.read_text(encoding="utf-8").splitlines() if line.strip()]
    names: dict[str, list[list]] = json.loads(labels.read_text(encoding="utf-8"))
    rows = []
    for code, (classes, texts) in names.items():
        by_class = dict(zip(classes, texts, strict=True))
        for photo in photos:
            text = by_class.get(photo["class_index"])
            if text:
                text = text if case is None else in_case(text, case, code.lower())
                rows.append({"image": photo["image"], "lang": code.lower(), "text": text, "source": SOURCE})
    (out / "splits").mkdir(parents=True, exist_ok=True)
    link = out / "images"
    if link.is_symlink() and Path(os.readlink(link)) != (samples / "images").resolve():
        link.unlink()
    if not link.exists():
        link.symlink_to((samples / "images").resolve(), target_is_directory=True)
    body = "".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)
    atomic_write_bytes(out / "captions.jsonl", body.encode("utf-8"))
    atomic_write_bytes(out / "splits" / "dev.txt", "".join(p["image"] + "\n" for p in photos).encode())
    return out
