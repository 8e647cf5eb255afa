"""Where multilingual-e5-small's languages meet: word-translation retrieval at each depth of the frozen model.

For 300 word pairs of a MUSE dictionary (``../shared/data/lexicons/en-XX.tsv``; ImageNet class names and
words spelled the same in both languages left out), each English word's mean-pooled hidden state after the
first ``d`` layers retrieves its translation among the 300 by cosine (R@1). Training data only (the dictionaries),
no dev set: this is what chose the student's depth (docs/model-card.md)::

    .venv/bin/python benchmarks/alignment_by_depth.py --langs de,zh,ru --out docs/results/student/alignment-by-depth.json
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from indexer.encoders.e5 import E5Weights  # noqa: E402
from indexer.encoders.imagenet import imagenet_class_names  # noqa: E402
from indexer.export.e5 import E5Encoder, attention_bias  # noqa: E402
from training.student.train import Batcher  # noqa: E402

LEXICONS = ROOT.parent / "shared" / "data" / "lexicons"


def word_pairs(lang: str, count: int) -> list[tuple[str, str]]:
    names = {name.lower() for name in imagenet_class_names()}
    rows = []
    for line in (LEXICONS / f"en-{lang}.tsv").read_text(encoding="utf-8").splitlines():
        parts = line.split("\t")
        if len(parts) >= 2 and parts[0].lower() not in names and parts[0] != parts[1] and len(parts[0]) > 3:
            rows.append((parts[0], parts[1]))
    random.Random(0).shuffle(rows)
    return rows[:count]


def pooled_by_depth(model: E5Encoder, batcher: Batcher, texts: list[str], depths: list[int]) -> dict[int, np.ndarray]:
    embeddings, mask = batcher(texts)
    out = {}
    with torch.no_grad():
        x = model.lower(embeddings, mask, 0)  # the embedding LayerNorm, no layer yet
        bias = attention_bias(mask)
        for depth, layer in enumerate(model.layers, start=1):
            x = layer(x, bias)
            if depth in depths:
                pooled = (x * mask[:, :, None]).sum(dim=1) / mask.sum(dim=1, keepdim=True)
                out[depth] = torch.nn.functional.normalize(pooled, dim=-1).numpy()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--langs", default="de,zh,ru")
    parser.add_argument("--depths", default="2,4,6,8,12")
    parser.add_argument("--pairs", type=int, default=300)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    torch.set_num_threads(1)
    weights = E5Weights()
    model, batcher = E5Encoder(weights).eval(), Batcher(weights, 64, "cpu")
    depths = [int(d) for d in args.depths.split(",")]
    table = {}
    for lang in args.langs.split(","):
        pairs = word_pairs(lang, args.pairs)
        english = pooled_by_depth(model, batcher, [a for a, _ in pairs], depths)
        other = pooled_by_depth(model, batcher, [b for _, b in pairs], depths)
        table[lang] = {
            str(d): round(float(np.mean((english[d] @ other[d].T).argmax(1) == np.arange(len(pairs)))), 3)
            for d in depths
        }
        print(lang, table[lang], flush=True)
    args.out.write_text(json.dumps({"command": " ".join(sys.argv), "r1": table}, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
