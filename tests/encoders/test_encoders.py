"""Encoder factory and the hub/local-path loaders, exercised with tiny random models built in the test."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from PIL import Image, ImageOps

from indexer.encoders.base import EncoderNotLoadedError
from indexer.encoders.factory import UnknownEncoderError, create_image_encoder, create_text_encoder


@pytest.fixture(autouse=True)
def _one_thread() -> None:
    import torch

    torch.set_num_threads(1)


def random_image(seed: int, size: tuple[int, int] = (300, 200)) -> Image.Image:
    pixels = np.random.default_rng(seed).integers(0, 256, size=(size[1], size[0], 3), dtype=np.uint8)
    return Image.fromarray(pixels)


@pytest.mark.parametrize(
    ("factory", "spec", "message"),
    [
        ("image", "vgg16", "unknown image encoder 'vgg16'; choose one of: efficientnet-lite0"),
        ("image", "efficientnet-lite0:foo", "takes no argument"),
        ("text", "word2vec", "unknown text encoder 'word2vec'; choose one of: e5-small, embeddinggemma, muse"),
    ],
)
def test_unknown_names_are_clear_errors(factory: str, spec: str, message: str, tmp_path: Path) -> None:
    with pytest.raises(UnknownEncoderError, match=message):
        if factory == "image":
            create_image_encoder(spec)
        else:
            create_text_encoder(spec, tmp_path)


def test_sentence_transformers_needs_a_model(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="needs a model name or path"):
        create_text_encoder("sentence-transformers", tmp_path)


def test_construction_is_cheap_and_predict_needs_load(tmp_path: Path) -> None:
    encoder = create_image_encoder("resnet152:/nonexistent/folder")  # nothing is read yet
    assert not encoder.loaded
    with pytest.raises(EncoderNotLoadedError):
        encoder.predict([random_image(0)])


@pytest.fixture(scope="module")
def tiny_resnet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from transformers import ResNetConfig, ResNetForImageClassification

    config = ResNetConfig(
        embedding_size=8,
        hidden_sizes=[8, 16],
        depths=[1, 1],
        layer_type="basic",
        num_labels=5,
        id2label={i: f"thing {i}" for i in range(5)},
        label2id={f"thing {i}": i for i in range(5)},
    )
    folder = tmp_path_factory.mktemp("tiny-resnet")
    ResNetForImageClassification(config).eval().save_pretrained(folder)
    return folder


def test_tiny_resnet_from_local_folder(tiny_resnet: Path) -> None:
    encoder = create_image_encoder(f"resnet152:{tiny_resnet}")
    assert encoder.name == f"resnet152:{tiny_resnet}"
    encoder.load()
    images = [random_image(1), random_image(2, (50, 80)).convert("L").convert("RGB")]
    features = encoder.predict(images)
    assert features.shape == (2, 16) and features.dtype == np.float32 and np.isfinite(features).all()
    probabilities = encoder.classify(features)
    assert probabilities.shape == (2, 5)
    np.testing.assert_allclose(probabilities.sum(axis=1), 1.0, rtol=1e-5)
    assert encoder.class_names == [f"thing {i}" for i in range(5)]
    np.testing.assert_allclose(encoder.predict(images[:1]), features[:1], rtol=1e-4, atol=1e-5)  # deterministic


def test_tiny_resnet_ten_crop(tiny_resnet: Path) -> None:
    single = create_image_encoder(f"resnet152:{tiny_resnet}")
    ten = create_image_encoder(f"resnet152:{tiny_resnet}", ten_crop=True)
    single.load()
    ten.load()
    image = random_image(3)
    assert not np.allclose(single.predict([image]), ten.predict([image]))
    # The ten views (corners, centre and their mirrors) of a mirrored image are the same set of views.
    np.testing.assert_allclose(ten.predict([ImageOps.mirror(image)]), ten.predict([image]), rtol=1e-4, atol=1e-5)
    assert not np.allclose(single.predict([ImageOps.mirror(image)]), single.predict([image]), atol=1e-5)


@pytest.fixture(scope="module")
def tiny_sentence_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from sentence_transformers import SentenceTransformer, models
    from transformers import BertConfig, BertModel, BertTokenizerFast

    root = tmp_path_factory.mktemp("tiny-st")
    words = ["dog", "chien", "hund", "cat", "bank", "banque", "a", "the", "red", "car"]
    (root / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *words]) + "\n")
    bert_dir = root / "bert"
    BertTokenizerFast(vocab_file=str(root / "vocab.txt")).save_pretrained(bert_dir)
    config = BertConfig(
        vocab_size=len(words) + 5, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32
    )
    BertModel(config).eval().save_pretrained(bert_dir)
    transformer = models.Transformer(str(bert_dir), max_seq_length=16)
    get_dim = getattr(transformer, "get_embedding_dimension", None) or transformer.get_word_embedding_dimension
    pooling = models.Pooling(get_dim(), pooling_mode="mean")
    out = root / "st"
    SentenceTransformer(modules=[transformer, pooling], device="cpu").save(str(out))
    return out


def test_tiny_sentence_transformers_from_local_folder(tiny_sentence_model: Path, tmp_path: Path) -> None:
    encoder = create_text_encoder(f"sentence-transformers:{tiny_sentence_model}", tmp_path)
    assert encoder.languages is None and encoder.supports("xx")  # a local folder declares no languages
    encoder.load()
    vectors = encoder.predict(["a red dog", "the cat", "chien"])
    assert vectors.shape == (3, 16) and encoder.dim == 16
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1.0, rtol=1e-5)
    assert not np.allclose(vectors[0], vectors[1])
    np.testing.assert_allclose(encoder.predict(["a red dog"])[0], vectors[0], rtol=1e-4, atol=1e-5)
    assert encoder.predict([]).shape == (0, 16)
