"""``POST /tag`` over HTTP with the service's fake engine (tiny encoders, random tower): answers and bad inputs."""

from __future__ import annotations

import io
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from api_fixtures import CAPTIONS, fake_engine_factory, fake_text_embedder, service_settings  # noqa: F401
from fastapi.testclient import TestClient
from PIL import Image

from app.main import create_app
from app.service_settings import ServiceSettings
from indexer.asset_paths import SHIPPED_TAGS
from indexer.settings import TaggingSettings
from indexer.tagging.shipped import ShippedWords
from indexer.tagging.store import VocabularyStore
from indexer.tagging.vocabulary import build_vocabulary

FR_WORDS = ["chien", "plage", "rouge", "voiture", "enfants", "rue", "vert", "bleu"]
DE_WORDS = ["hund", "strand", "rot", "auto", "kinder", "straße"]


def png(colour: tuple[int, int, int] = (230, 20, 20), size: tuple[int, int] = (40, 30)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, colour).save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture
def tag_client(service_settings: ServiceSettings) -> Iterator[TestClient]:  # noqa: F811
    embed = fake_text_embedder().embed
    store = VocabularyStore.beside_index(service_settings.resolved_index_dir)
    for lang, words in (("fr", FR_WORDS), ("de", DE_WORDS)):
        store.save(build_vocabulary(lang, Counter(dict.fromkeys(words, 3)), embed))
    # The fake tower's vectors are close together: no near-synonym rule, so that k tags always come back.
    service_settings = service_settings.model_copy(
        update={"tagging": TaggingSettings(max_similarity=1.0, source="auto")}
    )
    app = create_app(service_settings, fake_engine_factory((), CAPTIONS))  # app/main.py loads the tagger
    with TestClient(app, raise_server_exceptions=False) as client:
        yield client


def post(client: TestClient, params: dict[str, Any], data: bytes | None = None, name: str = "photo.png") -> Any:
    files = {"file": (name, data if data is not None else png(), "image/png")}
    return client.post("/v1/tag", params=params, files=files)


def test_tags_in_two_languages(tag_client: TestClient) -> None:
    short = tag_client.post("/tag", params={"lang": "fr"}, files={"file": ("p.png", png(), "image/png")})
    assert short.status_code == 200, short.text  # the short form, as for every router
    response = post(tag_client, {"lang": "fr,de", "k": 3})
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {"fr", "de"}
    for lang, words in (("fr", FR_WORDS), ("de", DE_WORDS)):
        tags = body[lang]
        assert len(tags) == 3
        assert all(t["tag"] in words for t in tags)
        assert len({t["tag"] for t in tags}) == 3  # one distinct target tag per source tag
        # auto: the caption index has English captions, so the sources are words of the nearest captions
        caption_words = {w for c in CAPTIONS if c.lang == "en" for w in c.text.split()}
        assert all(t["source"] in caption_words for t in tags)
    assert sorted(t["source"] for t in body["fr"]) == sorted(t["source"] for t in body["de"])
    for tags in body.values():  # best score first
        assert [t["score"] for t in tags] == sorted((t["score"] for t in tags), reverse=True)


def test_answer_is_what_the_tagger_computes(tag_client: TestClient) -> None:
    body = post(tag_client, {"lang": "fr", "k": 2, "source": "imagenet"}).json()
    engine = tag_client.app.state.engine  # type: ignore[attr-defined]
    expected = engine.components["tagger"].tag(Image.open(io.BytesIO(png())).convert("RGB"), ["fr"], 2, "imagenet")
    assert [(t["tag"], t["source"]) for t in body["fr"]] == [(t.tag, t.source) for t in expected["fr"]]
    assert body["fr"][0]["source"] == "red"  # the fake CNN's top class for a red image
    assert [t["score"] for t in body["fr"]] == pytest.approx([t.score for t in expected["fr"]], abs=1e-5)


def test_default_k_and_caption_sources(tag_client: TestClient) -> None:
    body = post(tag_client, {"lang": "fr", "source": "captions"}).json()
    # English caption words (dog, beach, children, …) are the sources; 8 French words cap the answer.
    assert 1 <= len(body["fr"]) <= len(FR_WORDS)
    caption_words = {w for c in CAPTIONS if c.lang == "en" for w in c.text.split()}
    assert all(t["source"] in caption_words for t in body["fr"])


def test_unknown_language_is_422_listing_the_available_ones(tag_client: TestClient) -> None:
    response = post(tag_client, {"lang": "fr,xx"})
    assert response.status_code == 422
    detail = response.json()["detail"]
    assert "no tag vocabulary for xx" in detail and "de, en, es, et, fa, fi, fr" in detail  # built + shipped


@pytest.mark.parametrize(
    "params",
    [{"lang": "fr", "k": 0}, {"lang": "fr", "k": 51}, {"lang": "fr", "source": "wiki"}, {"lang": ","}, {"lang": ""}],
)
def test_bad_parameters_are_422(tag_client: TestClient, params: dict[str, Any]) -> None:
    assert post(tag_client, params).status_code == 422


def test_not_an_image_is_422(tag_client: TestClient) -> None:
    response = post(tag_client, {"lang": "fr"}, data=b"this is a text file", name="notes.txt")
    assert response.status_code == 422
    assert "not an image" in response.json()["detail"]


def test_empty_and_missing_uploads_are_422(tag_client: TestClient) -> None:
    assert post(tag_client, {"lang": "fr"}, data=b"").status_code == 422
    assert tag_client.post("/v1/tag", params={"lang": "fr"}).status_code == 422


def test_too_large_upload_is_413(tag_client: TestClient) -> None:
    response = post(tag_client, {"lang": "fr"}, data=b"\x89PNG" + b"0" * 300_000)
    assert response.status_code == 413


def test_a_language_without_any_vocabulary_says_how_to_build(service_settings: ServiceSettings) -> None:  # noqa: F811
    app = create_app(service_settings, fake_engine_factory())
    with TestClient(app, raise_server_exceptions=False) as client:
        response = post(client, {"lang": "he"})  # Hebrew: no lexicon names, no vocabulary
    assert response.status_code == 422
    assert "no tag vocabulary for he" in response.json()["detail"]
    assert "polyglot tags vocab build --lang he" in response.json()["detail"]


def test_a_vocabulary_built_while_serving_is_picked_up(
    tag_client: TestClient,
    service_settings: ServiceSettings,  # noqa: F811
) -> None:
    assert post(tag_client, {"lang": "eo"}).status_code == 422  # no vocabulary ships for Esperanto
    store = VocabularyStore.beside_index(service_settings.resolved_index_dir)
    store.save(build_vocabulary("eo", Counter({"hundo": 3, "strando": 3}), fake_text_embedder().embed))
    store.save(build_vocabulary("pt", Counter({"cachorro": 3, "praia": 3}), fake_text_embedder().embed))
    tagger = tag_client.app.state.engine.components["tagger"]  # type: ignore[attr-defined]
    tagger._checked = -1e9  # do not wait for the 5 s refresh interval
    response = post(tag_client, {"lang": "eo,pt", "k": 2})
    assert response.status_code == 200, response.text
    # (the fake tower's vectors are close together: a near-synonym may be left out, so subsets)
    assert {t["tag"] for t in response.json()["eo"]} <= {"hundo", "strando"}
    assert response.json()["pt"] and response.json()["eo"]
    assert {t["tag"] for t in response.json()["pt"]} <= {"cachorro", "praia"}  # a built one replaces the shipped


def test_caption_source_without_english_captions_is_422(service_settings: ServiceSettings) -> None:  # noqa: F811
    VocabularyStore.beside_index(service_settings.resolved_index_dir).save(
        build_vocabulary("fr", Counter({"chien": 3, "plage": 3}), fake_text_embedder().embed)
    )
    with TestClient(create_app(service_settings, fake_engine_factory()), raise_server_exceptions=False) as client:
        assert post(client, {"lang": "fr", "k": 2}).status_code == 200  # auto: ImageNet classes instead
        response = post(client, {"lang": "fr", "source": "captions"})
    assert response.status_code == 422
    assert "no" in response.json()["detail"] and "captions add" in response.json()["detail"]


def test_tags_of_an_indexed_image(tag_client: TestClient, tmp_path: Path) -> None:
    photo = tmp_path / "red.png"
    photo.write_bytes(png())
    engine = tag_client.app.state.engine  # type: ignore[attr-defined]
    engine.images.add_paths([photo], progress=False)
    image_id = engine.images.list()[0].id
    by_id = tag_client.get(f"/v1/images/{image_id}/tags", params={"lang": "fr", "k": 2})
    assert by_id.status_code == 200, by_id.text
    uploaded = post(tag_client, {"lang": "fr", "k": 2}).json()
    assert [t["tag"] for t in by_id.json()["fr"]] == [t["tag"] for t in uploaded["fr"]]  # the same image, same tags
    assert tag_client.get("/v1/images/424242/tags", params={"lang": "fr"}).status_code == 404
    assert tag_client.get(f"/v1/images/{image_id}/tags", params={"lang": "xx"}).status_code == 422


def test_tags_of_an_indexed_image_read_its_verified_file(tag_client: TestClient, tmp_path: Path) -> None:
    """The merged issues 24 + 27: ``GET /images/{id}/tags`` reads the file as ``GET /images/{id}`` serves it
    (size and sha256 as indexed, no symlink out), and a thumbnail still comes from the indexed bytes."""
    engine = tag_client.app.state.engine  # type: ignore[attr-defined]
    changed, linked = tmp_path / "changed.png", tmp_path / "linked.png"
    changed.write_bytes(png((20, 200, 20)))
    linked.write_bytes(png((20, 20, 200)))
    engine.images.add_paths([changed, linked], progress=False)
    ids = {Path(r.path).name: r.id for r in engine.images.list()}
    for name in ids:
        assert tag_client.get(f"/v1/images/{ids[name]}/tags", params={"lang": "fr", "k": 2}).status_code == 200
    changed.write_bytes(png((200, 200, 20), size=(41, 30)))  # another picture under the indexed name
    linked.unlink()
    linked.symlink_to("/etc/passwd")
    for name in ids:
        refused = tag_client.get(f"/v1/images/{ids[name]}/tags", params={"lang": "fr", "k": 2})
        assert refused.status_code == 404, refused.text
        assert "cannot be read" in refused.json()["detail"]
        assert b"root:" not in tag_client.get(f"/v1/images/{ids[name]}/thumbnail").content


TEN = ["en", "de", "fr", "cs", "pt", "zh", "ja", "ar", "es", "uk"]


def shipped_words(lang: str) -> set[str]:
    return set(ShippedWords(lang, SHIPPED_TAGS / f"{lang}.tsv").shown)


def test_shipped_vocabularies_answer_on_a_fresh_index(service_settings: ServiceSettings) -> None:  # noqa: F811
    """No `polyglot tags vocab build`: ten languages answer from the shipped words, embedded on first use and
    cached by the text side's fingerprint."""
    app = create_app(service_settings, fake_engine_factory())
    with TestClient(app, raise_server_exceptions=False) as client:
        assert not (service_settings.resolved_index_dir / "tags").exists()
        assert set(TEN) <= set(client.get("/v1/languages").json()["tag_languages"])
        response = post(client, {"lang": ",".join(TEN), "k": 5, "source": "imagenet"})
        assert response.status_code == 200, response.text
        body = response.json()
        assert list(body) == TEN
        for lang, tags in body.items():
            assert 1 <= len(tags) <= 5 and {t["tag"] for t in tags} <= shipped_words(lang), lang
            assert [t["score"] for t in tags] == sorted((t["score"] for t in tags), reverse=True)
        fingerprint = client.app.state.engine.models.text.fingerprint  # type: ignore[attr-defined]
    cached = {
        p.name.split("-")[0] for p in (service_settings.resolved_cache_dir / "tag-vectors" / fingerprint).iterdir()
    }
    assert cached == set(TEN)  # only the languages asked for were embedded


def test_lang_defaults_to_accept_language_then_english(tag_client: TestClient, tmp_path: Path) -> None:
    files = {"file": ("photo.png", png(), "image/png")}
    swiss = tag_client.post("/v1/tag", files=files, headers={"Accept-Language": "de-CH, fr;q=0.8"})
    assert swiss.status_code == 200, swiss.text
    assert list(swiss.json()) == ["de"] and "accept-language" in swiss.headers["vary"].lower()
    unknown = tag_client.post("/v1/tag", files=files, headers={"Accept-Language": "eo, x-klingon;q=0.5"})
    assert list(unknown.json()) == ["en"]
    assert list(tag_client.post("/v1/tag", files=files).json()) == ["en"]
    explicit = tag_client.post("/v1/tag", params={"lang": "fr"}, files=files, headers={"Accept-Language": "de"})
    assert list(explicit.json()) == ["fr"] and "vary" not in explicit.headers
    photo = tmp_path / "red.png"
    photo.write_bytes(png())
    engine = tag_client.app.state.engine  # type: ignore[attr-defined]
    engine.images.add_paths([photo], progress=False)
    image_id = engine.images.list()[0].id
    indexed = tag_client.get(f"/v1/images/{image_id}/tags", headers={"Accept-Language": "fr-FR,fr;q=0.9"})
    assert indexed.status_code == 200 and list(indexed.json()) == ["fr"]


def test_openapi_documents_the_language_default(tag_client: TestClient) -> None:
    spec = tag_client.get("/openapi.json").json()
    for path, method in (("/v1/tag", "post"), ("/v1/images/{image_id}/tags", "get")):
        params = {p["name"]: p for p in spec["paths"][path][method]["parameters"]}
        assert params["Accept-Language"]["in"] == "header" and not params["lang"].get("required", False)
        assert "Accept-Language" in params["lang"]["description"]


def test_tags_by_concept_name_one_ranking_in_every_language(service_settings: ServiceSettings, tmp_path: Path) -> None:  # noqa: F811
    """The default source: each tag carries its concept and English name, whatever captions are indexed."""
    from indexer.asset_paths import SHIPPED_CONCEPTS
    from indexer.concepts import ConceptLexicon

    lexicon = ConceptLexicon.load(SHIPPED_CONCEPTS)
    answers = []
    for captions in ((), CAPTIONS):
        with TestClient(create_app(service_settings, fake_engine_factory((), captions))) as client:
            response = post(client, {"lang": "en,fr,de", "k": 4})
            assert response.status_code == 200, response.text
            answers.append(response.json())
            photo = tmp_path / "red.png"
            photo.write_bytes(png())
            engine = client.app.state.engine  # type: ignore[attr-defined]
            engine.images.add_paths([photo], progress=False)
            indexed = client.get(f"/v1/images/{engine.images.list()[0].id}/tags", params={"lang": "fr", "k": 4})
            assert indexed.status_code == 200 and indexed.json()["fr"] == response.json()["fr"]
    assert answers[0] == answers[1]  # the caption collection changes nothing
    body = answers[0]
    for tags in body.values():
        assert len(tags) == 4
        for t in tags:
            assert t["english"] == lexicon.english(t["concept"]) and t["source"] in ("lexicon", "vocabulary")
    assert [t["tag"] for t in body["en"]] == [t["english"] for t in body["en"]]
    schema = client.get("/openapi.json").json()["components"]["schemas"]["TagOut"]["properties"]
    assert schema["concept"]["anyOf"][0]["maxLength"] == 10


def test_concepts_source_is_a_query_choice(tag_client: TestClient) -> None:
    response = post(tag_client, {"lang": "fr", "k": 3, "source": "concepts"})
    assert response.status_code == 200 and all(t["concept"] for t in response.json()["fr"])
    assert post(tag_client, {"lang": "fr", "source": "wordnet"}).status_code == 422
