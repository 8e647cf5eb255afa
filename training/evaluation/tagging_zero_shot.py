"""Zero-shot ImageNet label check of the tagger: Babel-ImageNet labels as target vocabularies, the image's top-5
ImageNet classes as English source tags (``--imagenet-labels`` of :mod:`training.evaluation.tagging_eval`)."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from indexer.tagging.cached import embed_cached
from indexer.tagging.ranking import assign_tags
from indexer.tagging.source_tags import clean_class_name
from indexer.tagging.text import normalise_text
from indexer.tower import TextEmbedder
from training.evaluation.tagging_methods import WEIGHTINGS


def imagenet_check(
    labels_path: Path, text: TextEmbedder, encoder: Any, features: np.ndarray, image_vectors: np.ndarray, args: Any
) -> dict[str, Any]:
    """Zero-shot label check: the top-5 ImageNet classes of each image as English source tags, a language's
    Babel-ImageNet labels as the target vocabulary; a tag is right when it is a label of the source's class."""
    babel = json.loads(labels_path.read_text(encoding="utf-8"))
    top = np.argsort(-encoder.classify(features), axis=1)[:, :5]
    names = [clean_class_name(n) for n in encoder.class_names]
    source_vectors = embed_cached(text, names, args.cache_dir)
    out: dict[str, Any] = {}
    for key, (indices, labels) in babel.items():
        lang = key.lower()
        words = list(dict.fromkeys(normalise_text(label) for label in labels))
        classes_of: dict[str, set[int]] = defaultdict(set)
        for index, label in zip(indices, labels, strict=True):
            classes_of[normalise_text(label)].add(int(index))
        covered = set(int(i) for i in indices)
        vectors = embed_cached(text, words, args.cache_dir, lang=lang)
        image_sim = image_vectors @ vectors.T
        row_scores: dict[str, list[float]] = defaultdict(list)
        for row, classes in enumerate(top):
            source_sim = source_vectors[classes] @ vectors.T
            for name, weights in WEIGHTINGS.items():
                w1, w2 = weights or (args.w1, args.w2)
                for ranked in assign_tags(w1 * image_sim[row][None, :] + w2 * source_sim):
                    cls = int(classes[ranked.source])
                    if cls in covered:
                        row_scores[name].append(float(cls in classes_of[words[ranked.target]]))
        out[lang] = {
            "labels": len(words),
            "covered_by_text_encoder": text.encoder.supports(lang),
            **{name: round(float(np.mean(v)), 4) for name, v in row_scores.items()},
            "sources_scored": len(row_scores["contextual"]),
        }
    return out
