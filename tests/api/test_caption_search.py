"""Caption → caption search across languages: ``GET /captions/search`` and ``polyglot captions search``, on the
fake encoder and tiny captions (no model files), with an alignment fitted on synthetic pairs."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from api_fixtures import CAPTIONS, FakeTextEncoder, fake_engine_factory, fake_text_embedder
from fastapi.testclient import TestClient

from app.main import create_app
from app.service_settings import ServiceSettings
from indexer.captions import Caption, CaptionIndex
from indexer.captions.alignment import CaptionAlignment, LinearAlignment, save_linear
from indexer.captions.cross_lingual import SPACES_DIR, CaptionSearchError, CrossLingualCaptions

pytest_plugins = ("api_fixtures",)


def write_alignment(folder: Path, langs: tuple[str, str] = ("en", "fr"), seed: int = 0) -> Path:
    """A random linear alignment over the fake encoder's 16-d sentence space."""
    rng = np.random.default_rng(seed)
    dim = FakeTextEncoder.dim
    linear = LinearAlignment(
        rng.standard_normal(dim) * 0.01,
        rng.standard_normal(dim) * 0.01,
        rng.standard_normal((dim, 8)),
        rng.standard_normal((dim, 8)),
        np.linspace(0.9, 0.1, 8),
    )
    meta = {"method": "pcca", "langs": list(langs), "text_encoder": FakeTextEncoder.name, "dim": 8}
    save_linear(folder, linear, meta)
    return folder


@pytest.fixture
def aligned_client(service_settings: ServiceSettings, tmp_path: Path) -> Iterator[TestClient]:
    settings = service_settings.model_copy(update={"caption_alignments": [write_alignment(tmp_path / "en-fr")]})
    app = create_app(settings, fake_engine_factory((), CAPTIONS))
    with TestClient(app, raise_server_exceptions=False) as test_client:
        yield test_client


def test_search_ranks_target_captions_in_the_alignment_space(aligned_client: TestClient) -> None:
    answer = aligned_client.get(
        "/captions/search", params={"q": "a dog runs on the beach", "lang": "en", "target": "fr"}
    )
    assert answer.status_code == 200, answer.text
    body = answer.json()
    assert body["space"] == "pcca:en-fr" and body["lang"] == "en" and body["target"] == "fr"
    assert [c["rank"] for c in body["captions"]] == [1, 2]
    assert {c["text"] for c in body["captions"]} == {"un chien court sur la plage", "deux enfants jouent au football"}
    scores = [c["score"] for c in body["captions"]]
    assert scores == sorted(scores, reverse=True)
    # The reverse direction uses the same alignment; a pair without one takes the fallback (sentence space).
    back = aligned_client.get("/captions/search", params={"q": "deux enfants", "lang": "fr", "target": "en", "k": 1})
    assert back.json()["space"] == "pcca:en-fr" and len(back.json()["captions"]) == 1
    other = aligned_client.get("/captions/search", params={"q": "ein Hund", "lang": "de", "target": "en", "k": 3})
    assert other.json()["space"] == "sentence:fake-text"
    # In the sentence space identical words give identical vectors: the exact English caption comes first.
    same = aligned_client.get(
        "/captions/search", params={"q": "two children play football", "lang": "de", "target": "en"}
    )
    assert same.json()["captions"][0]["text"] == "two children play football"


def test_an_all_capitals_query_is_read_in_lower_case(aligned_client: TestClient, encoded_texts: list[str]) -> None:
    """As on ``/search`` (indexer.query.pipeline.unshouted), in the alignment space and in the fallback space."""
    seen = encoded_texts
    for lang, target in (("en", "fr"), ("de", "en")):
        shouted = aligned_client.get("/captions/search", params={"q": "TWO CHILDREN", "lang": lang, "target": target})
        assert shouted.status_code == 200, shouted.text
        assert shouted.json()["query"] == "TWO CHILDREN"  # the answer echoes what was typed
    assert seen.count("two children") == 2 and "TWO CHILDREN" not in seen
    seen.clear()
    typed = aligned_client.get("/captions/search", params={"q": "Two Children", "lang": "en", "target": "fr"})
    assert typed.status_code == 200 and seen == ["Two Children"]  # mixed case stays as typed


@pytest.mark.parametrize(
    ("params", "message"),
    [
        ({"q": "a dog", "lang": "en", "target": "ja"}, "no captions in 'ja'"),
        ({"q": "a dog", "lang": "zh", "target": "fr"}, "does not cover 'zh'"),
        ({"q": "a dog", "lang": "english", "target": "fr"}, "not a language code"),
        ({"q": " \u200b ", "lang": "en", "target": "fr"}, "empty query"),
        ({"q": "a dog", "lang": "en", "target": "fr", "k": 51}, "less than or equal to 50"),
        ({"q": "a" * 300, "lang": "en", "target": "fr"}, "query too long"),
    ],
)
def test_bad_requests_are_4xx_with_a_message(
    aligned_client: TestClient, params: dict[str, object], message: str
) -> None:
    answer = aligned_client.get("/captions/search", params=params)
    assert answer.status_code == 422
    assert message in answer.text


def test_missing_q_or_target_is_422(aligned_client: TestClient) -> None:
    assert aligned_client.get("/captions/search", params={"q": "a dog"}).status_code == 422
    assert aligned_client.get("/captions/search", params={"target": "en"}).status_code == 422


def test_vectors_are_kept_on_disk_and_follow_caption_changes(tmp_path: Path) -> None:
    embedder = fake_text_embedder()
    index = CaptionIndex.open(tmp_path / "captions", embedder)
    index.add(CAPTIONS)
    alignment = CaptionAlignment(write_alignment(tmp_path / "en-fr"))
    search = CrossLingualCaptions(index, embedder, [alignment], {FakeTextEncoder.name: embedder.encoder})
    hits, space = search.search(["a dog runs on the beach"], "en", "fr", 5)
    assert space == "pcca:en-fr" and len(hits[0]) == 2
    files = list((tmp_path / "captions" / SPACES_DIR).glob("*/fr.safetensors"))
    assert len(files) == 1 and alignment.fingerprint in files[0].parent.name
    # A new caption is embedded and found; a removed one disappears (the kept vectors follow the index).
    index.add([Caption("fr", "un chat dort sur le canapé", "4.jpg", "test")])
    texts = [h.text for h in search.search(["a cat"], "en", "fr", 5)[0][0]]
    assert "un chat dort sur le canapé" in texts and len(texts) == 3
    index.remove(image="1.jpg")
    texts = [h.text for h in search.search(["a dog"], "en", "fr", 5)[0][0]]
    assert "un chien court sur la plage" not in texts and len(texts) == 2
    # A fresh process reads them back from disk instead of re-embedding: same answer.
    again = CrossLingualCaptions(index, embedder, [alignment], {FakeTextEncoder.name: embedder.encoder})
    calls = []
    original = embedder.encoder.predict
    embedder.encoder.predict = lambda texts: calls.append(list(texts)) or original(texts)  # type: ignore[method-assign]
    assert [h.text for h in again.search(["a dog"], "en", "fr", 5)[0][0]] == texts
    assert calls == [["a dog"]]  # only the query was embedded
    # A retrained alignment (other weights) gets other vectors.
    retrained = CaptionAlignment(write_alignment(tmp_path / "en-fr-2", seed=1))
    assert retrained.fingerprint != alignment.fingerprint
    index.close()


def test_tower_fallback_and_unknown_target(tmp_path: Path) -> None:
    embedder = fake_text_embedder()
    index = CaptionIndex.open(tmp_path / "captions", embedder)
    index.add(CAPTIONS)
    search = CrossLingualCaptions(index, embedder, fallback="tower")
    hits, space = search.search(["a dog runs on the beach"], "fr", "en", 2)
    assert space == "tower" and len(hits[0]) == 2
    assert hits[0][0].text == "a dog runs on the beach"  # same words, same tower vector
    with pytest.raises(CaptionSearchError, match="no captions in 'pt'"):
        search.search(["x"], "en", "pt", 1)
    index.close()


def test_captions_search_cli(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from typer.testing import CliRunner

    from app.cli import captions_cmd, cli

    monkeypatch.setenv("POLYGLOT_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("POLYGLOT_CAPTION_ALIGNMENTS", json.dumps([str(write_alignment(tmp_path / "en-fr"))]))
    monkeypatch.setattr(captions_cmd, "load_embedder", lambda settings: fake_text_embedder())
    rows = "\n".join(
        json.dumps({"image": c.image, "lang": c.lang, "text": c.text, "source": c.source}) for c in CAPTIONS
    )
    (tmp_path / "c.jsonl").write_text(rows + "\n", encoding="utf-8")
    runner = CliRunner()
    assert runner.invoke(cli, ["index", "captions", "add", str(tmp_path / "c.jsonl"), "-q"]).exit_code == 0
    result = runner.invoke(cli, ["captions", "search", "a dog runs", "--lang", "en", "--target", "fr", "--json"])
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert body["space"] == "pcca:en-fr" and len(body["captions"]) == 2
    bad = runner.invoke(cli, ["captions", "search", "a dog", "--lang", "en", "--target", "ja"])
    assert bad.exit_code == 2 and "no captions in 'ja'" in bad.output
    empty = runner.invoke(cli, ["captions", "search", "  ", "--lang", "en", "--target", "fr"])
    assert empty.exit_code == 2 and "empty query" in empty.output


def test_shipped_alignments_load_and_match_their_checksums() -> None:
    import hashlib

    from training.asset_paths import SHIPPED_ALIGNMENTS, shipped_alignments

    folder = SHIPPED_ALIGNMENTS
    listed = {}
    for line in (folder / "README.md").read_text(encoding="utf-8").splitlines():
        parts = line.split()
        if len(parts) == 2 and len(parts[0]) == 64:
            listed[parts[1]] = parts[0]
    shipped = shipped_alignments()
    assert {p.name for p in shipped} == {"en-de", "en-fr"}
    for path in shipped:
        alignment = CaptionAlignment(path)
        assert alignment.method == "pcca" and alignment.text_encoder == "muse" and alignment.input_dim == 512
        assert "-".join(alignment.langs) == path.name
        digest = hashlib.sha256((path / "alignment.safetensors").read_bytes()).hexdigest()
        assert listed[f"{path.name}/alignment.safetensors"] == digest


def test_sentence_space_applies_the_towers_language_bridge(tmp_path: Path) -> None:
    """A bridged language's captions and queries are compared as the tower reads them (bridge applied)."""
    from indexer.tower import TextEmbedder
    from training.bridge import LanguageBridge

    plain = fake_text_embedder()
    rng = np.random.default_rng(0)
    bridge = LanguageBridge(
        rng.standard_normal((9, 8)).astype(np.float32), (0, 8), (8, 16), frozenset({"fr"}), "fake-text"
    )
    bridged = TextEmbedder(plain.tower, plain.encoder, bridge)
    index = CaptionIndex.open(tmp_path / "captions", bridged)
    index.add(CAPTIONS)
    search = CrossLingualCaptions(index, bridged)
    french = search.space("en", "fr")
    assert french.key != search.space("fr", "en").key  # French captions are kept under the bridge's weights
    sentences = plain.encoder.predict(["un chien court sur la plage"])
    np.testing.assert_allclose(french.target(sentences), bridge.apply(sentences, "fr"))
    np.testing.assert_allclose(search.space("fr", "en").target(sentences), sentences)
    hits, space = search.search(["un chien court sur la plage"], "fr", "fr", 1)
    assert space == "sentence:fake-text" and hits[0][0].text == "un chien court sur la plage"
    index.close()


def test_configured_alignments_are_checked(tmp_path: Path, service_settings: ServiceSettings) -> None:
    from indexer.query import ModelsError, load_alignments

    embedder = fake_text_embedder()
    missing = service_settings.model_copy(update={"caption_alignments": [tmp_path / "nowhere"]})
    with pytest.raises(ModelsError, match="cannot read the caption alignment"):
        load_alignments(missing, embedder)
    twice = [write_alignment(tmp_path / "a"), write_alignment(tmp_path / "b", ("fr", "en"))]
    with pytest.raises(ModelsError, match="two alignments for en/fr"):
        load_alignments(service_settings.model_copy(update={"caption_alignments": twice}), embedder)
    found, encoders = load_alignments(service_settings.model_copy(update={"caption_alignments": twice[:1]}), embedder)
    assert [a.name for a in found] == ["pcca:en-fr"] and encoders["fake-text"] is embedder.encoder
    # Unset: the shipped alignments, which read mUSE — not loaded with this tower, so none is used.
    assert load_alignments(service_settings, embedder) == ([], {})
