"""Everything one student run trains on, assembled once and cached as arrays.

* **photos**: the train split's photos (image-space unit vectors) and every caption they have, in every
  language (``m30k-f8k`` plus the photo rows of ``more-langs``), for the image–caption contrastive term. A fixed
  share of the train photos is held out (``holdout``) to choose hyper-parameters and checkpoints; dev stays unseen.
* **translations**: ``m30k-text`` task-1 English captions with their human translations (de, fr, cs) and the
  machine translations of ``more-langs`` (es, zh, uk, ar), for distillation: the teacher's vector of the English
  caption is the target of each translation and of the English caption itself.
* **concepts**: the 1,000 ImageNet class names in English only (and, with ``name_texts="lemmas"``, every other
  English name WordNet gives the class), in a few phrasings, and where the image
  encoder's own classifier puts each class (:func:`class_prototypes`). The non-English names of
  ``imagenet-labels`` are measurement data and never read here.
"""

from __future__ import annotations

import json
import random
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from indexer.encoders.base import ImageEncoder
from indexer.encoders.imagenet import imagenet_class_names
from indexer.image_space import ImageSpace
from training.data.dataset import load_dataset
from training.data.features import image_features
from training.losses.concept import class_prototypes  # the concept term's targets, shared with towers

# Phrasings of a class name: the bare name is what people type; the others are how captions mention things.
CONCEPT_TEMPLATES = ("{}", "a photo of a {}", "a {}", "the {} in the picture")
TRANSLATION_SOURCE = "multi30k-task1"
MT_SOURCE = "multi30k-ext-mt"


@dataclass
class PhotoCaptions:
    vectors: np.ndarray  # (n_images, dim) unit image-space vectors
    images: list[str]
    caption_text: list[str]
    caption_image: np.ndarray  # (n_captions,) index into images
    caption_lang: list[str]


@dataclass
class Translations:
    sources: list[str]  # English captions (the teacher reads these)
    text: list[str]  # every translation and each English source itself
    lang: list[str]
    source: np.ndarray  # (n,) index into sources


@dataclass
class Concepts:
    text: list[str]
    label: np.ndarray  # (n,) class index
    prototypes: np.ndarray  # (classes, dim) unit vectors in the image space


def photo_captions(
    data: Path,
    extra: list[Path],
    image_encoder: ImageEncoder,
    space: ImageSpace,
    cache_dir: Path,
    split: str = "train",
    holdout: float = 0.0,
    seed: int = 0,
) -> tuple[PhotoCaptions, PhotoCaptions | None]:
    """The split's photos with all their captions; ``holdout`` of the photos (a seeded random choice) apart."""
    dataset = load_dataset(data, split, extra=extra)
    features = image_features(image_encoder, [dataset.image_path(i) for i in dataset.images], cache_dir, desc=split)
    vectors = space.apply(features)
    order = list(range(len(dataset.images)))
    random.Random(seed).shuffle(order)
    held = set(order[: round(holdout * len(order))])
    parts: list[PhotoCaptions | None] = []
    for keep in (lambda i: i not in held, lambda i: i in held):
        chosen = [i for i in range(len(dataset.images)) if keep(i)]
        if not chosen:
            parts.append(None)
            continue
        position = {dataset.images[i]: n for n, i in enumerate(chosen)}
        rows = [c for c in dataset.captions if c.image in position]
        parts.append(
            PhotoCaptions(
                vectors=vectors[chosen],
                images=[dataset.images[i] for i in chosen],
                caption_text=[c.text for c in rows],
                caption_image=np.array([position[c.image] for c in rows], dtype=np.int64),
                caption_lang=[c.lang for c in rows],
            )
        )
    train, held_out = parts
    assert train is not None
    return train, held_out


def translations(text_corpus: Path, extra: list[Path]) -> Translations:
    """Parallel captions grouped by photo: the task-1 English caption is the source of the task-1 translations
    and of the machine translations that were made from it."""
    english: dict[str, str] = {}
    others: dict[str, list[tuple[str, str]]] = defaultdict(list)
    for path in (Path(text_corpus) / "captions.jsonl", *extra):
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                row = json.loads(line)
                if row.get("source") not in (TRANSLATION_SOURCE, MT_SOURCE):
                    continue
                if row["lang"] == "en":
                    english[row["image"]] = row["text"]
                else:
                    others[row["image"]].append((row["lang"], row["text"]))
    sources = sorted(english)
    index = {image: n for n, image in enumerate(sources)}
    text, lang, source = [], [], []
    for image in sources:
        for code, caption in [("en", english[image]), *others.get(image, [])]:
            text.append(caption)
            lang.append(code)
            source.append(index[image])
    return Translations([english[i] for i in sources], text, lang, np.array(source, dtype=np.int64))


def concepts(image_encoder: ImageEncoder, synonyms: list[list[str]] | None = None) -> Concepts:
    """The class names in ``CONCEPT_TEMPLATES``' phrasings; ``synonyms`` (each class's other English names, e.g.
    WordNet's lemmas) are added bare and as "a photo of a …"."""
    names = imagenet_class_names()
    text, label = [], []
    for index, name in enumerate(names):
        for template in CONCEPT_TEMPLATES:
            text.append(template.format(name))
            label.append(index)
        for other in synonyms[index] if synonyms else []:
            if other.lower() != name.lower():
                text += [other, f"a photo of a {other}"]
                label += [index, index]
    return Concepts(text, np.array(label, dtype=np.int64), class_prototypes(image_encoder))
