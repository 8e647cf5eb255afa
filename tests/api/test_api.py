"""The HTTP API through a TestClient: search, captions, images, admin, health, and every bad input → 4xx."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from fastapi.testclient import TestClient
from PIL import Image

pytest_plugins = ("api_fixtures",)


def _png(size: tuple[int, int] = (40, 30), colour: tuple[int, int, int] = (200, 30, 30)) -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", size, colour).save(buffer, format="PNG")
    return buffer.getvalue()


def test_search_returns_ranked_results_with_urls_and_metadata(client: TestClient) -> None:
    response = client.get("/v1/search", params={"q": "a dog on the beach", "k": 5})
    assert response.status_code == 200
    body = response.json()
    results = body["results"]
    assert len(results) == 5 and body["total_images"] == 8
    assert [r["rank"] for r in results] == [1, 2, 3, 4, 5]
    scores = [r["score"] for r in results]
    assert scores == sorted(scores, reverse=True) and all(-1 <= s <= 1 for s in scores)
    first = results[0]
    assert first["image_url"] == f"/v1/images/{first['id']}"
    assert first["thumbnail_url"] == f"/v1/images/{first['id']}/thumbnail"
    assert first["metadata"]["filename"].startswith("img_3_") and first["metadata"]["width"] == 48
    assert "/" not in first["metadata"]["filename"]  # never the server-side path


def test_short_form_equals_v1(client: TestClient) -> None:
    a = client.get("/v1/search", params={"q": "chien", "lang": "fr"}).json()
    b = client.get("/search", params={"q": "chien", "lang": "fr"}).json()
    assert [r["id"] for r in a["results"]] == [r["id"] for r in b["results"]]


def test_pagination_and_min_score(client: TestClient) -> None:
    full = client.get("/v1/search", params={"q": "red car", "k": 8}).json()["results"]
    page1 = client.get("/v1/search", params={"q": "red car", "k": 3}).json()
    page2 = client.get("/v1/search", params={"q": "red car", "k": 3, "offset": page1["next_offset"]}).json()
    assert page1["next_offset"] == 3
    assert [r["id"] for r in page1["results"] + page2["results"]] == [r["id"] for r in full[:6]]
    assert page2["results"][0]["rank"] == 4
    last = client.get("/v1/search", params={"q": "red car", "k": 5, "offset": 5}).json()
    assert len(last["results"]) == 3 and last["next_offset"] is None
    threshold = full[2]["score"]
    kept = client.get("/v1/search", params={"q": "red car", "k": 8, "min_score": threshold}).json()
    assert [r["id"] for r in kept["results"]] == [r["id"] for r in full if r["score"] >= threshold]
    assert kept["next_offset"] is None


def test_language_given_detected_and_refused(client: TestClient) -> None:
    given = client.get("/v1/search", params={"q": "dog", "lang": "FR"}).json()["language"]
    assert given == {
        "requested": "fr",
        "detected": None,
        "probability": None,
        "used": "fr",
        "supported": True,
    }
    detected = client.get("/v1/search", params={"q": "un chien qui court sur la plage de sable"}).json()["language"]
    assert detected["detected"] == "fr" and detected["supported"] is True
    unsupported = client.get("/v1/search", params={"q": "ein Hund läuft über die grüne Wiese"}).json()["language"]
    assert unsupported["detected"] == "de" and unsupported["supported"] is True
    nothing = client.get("/v1/search", params={"q": "12345"}).json()["language"]
    assert nothing["detected"] is None
    # A single word the detector cannot be sure of (issue 36: "chat" was Quechua, "not supported"): no label, and
    # never "not supported" for a query the encoder embeds like any other.
    for word in ("chat", "dog", "Hund"):
        unsure = client.get("/v1/search", params={"q": word}).json()["language"]
        assert unsure["detected"] is None and unsure["used"] is None and unsure["supported"] is None, unsure
        assert unsure["probability"] is not None and unsure["probability"] < 0.9
    refused = client.get("/v1/search", params={"q": "dog", "lang": "xx"})
    assert refused.status_code == 422
    assert "unsupported lang 'xx'" in refused.json()["detail"] and "de, en, es, fr" in refused.json()["detail"]


def test_bad_search_parameters_are_422(client: TestClient) -> None:
    for params in (
        {"q": ""},
        {"q": "   "},
        {"q": "x" * 201},  # over POLYGLOT_MAX_QUERY_CHARS (200 in the fixture)
        {"q": "x" * 3000},  # over the schema's hard limit
        {"q": "dog", "k": 0},
        {"q": "dog", "k": 101},
        {"q": "dog", "k": "many"},
        {"q": "dog", "offset": -1},
        {"q": "dog", "min_score": 2},
        {},
    ):
        response = client.get("/v1/search", params=params)
        assert response.status_code == 422, (params, response.text)
        assert response.json()["detail"]
    assert "query too long" in client.get("/v1/search", params={"q": "x" * 201}).json()["detail"]
    assert "empty query" in client.get("/v1/search", params={"q": "  "}).json()["detail"]


def test_search_by_image_upload_and_by_id(client: TestClient, photo_paths: list[Path]) -> None:
    listed = client.get("/v1/images", params={"limit": 100}).json()
    by_name = {item["metadata"]["filename"]: item["id"] for item in listed}
    target = by_name[photo_paths[2].name]
    upload = client.post("/v1/search/image", files={"file": ("q.jpg", photo_paths[2].read_bytes())}, params={"k": 3})
    assert upload.status_code == 200
    assert upload.json()["results"][0]["id"] == target and upload.json()["results"][0]["score"] > 0.999
    by_id = client.post("/v1/search/image", data={"image_id": str(target)}, params={"k": 3}).json()
    assert target not in [r["id"] for r in by_id["results"]] and len(by_id["results"]) == 3
    assert by_id["query_image_id"] == target


def test_search_by_image_bad_inputs(client: TestClient) -> None:
    assert client.post("/v1/search/image").status_code == 422
    both = client.post("/v1/search/image", files={"file": ("a.png", _png())}, data={"image_id": "1"})
    assert both.status_code == 422 and "exactly one" in both.json()["detail"]
    assert client.post("/v1/search/image", data={"image_id": "999999"}).status_code == 404
    not_image = client.post("/v1/search/image", files={"file": ("a.jpg", b"hello, not an image")})
    assert not_image.status_code == 422 and "not an image" in not_image.json()["detail"]
    empty = client.post("/v1/search/image", files={"file": ("a.jpg", b"")})
    assert empty.status_code == 422
    truncated = client.post("/v1/search/image", files={"file": ("a.png", _png((300, 300))[:400])})
    assert truncated.status_code == 422 and "truncated" in truncated.json()["detail"]


def test_decompression_bomb_and_oversized_upload(client: TestClient, service_settings) -> None:
    # 20000x20000 pixels compress to a few hundred KB of PNG but would take 1.2 GB decoded.
    buffer = io.BytesIO()
    Image.new("1", (20_000, 20_000)).save(buffer, format="PNG")
    bomb = buffer.getvalue()
    assert len(bomb) < service_settings.service.max_upload_bytes
    response = client.post("/v1/search/image", files={"file": ("bomb.png", bomb)})
    # 422: the upload is within the byte limit, its content is refused (413 is for the bytes only).
    assert response.status_code == 422 and "too large" in response.json()["detail"]
    big = np.random.default_rng(0).integers(0, 256, 300_000, dtype=np.uint8).tobytes()
    response = client.post("/v1/captions", files={"file": ("big.jpg", big)})
    assert response.status_code == 413 and "200,000 bytes" in response.json()["detail"]


def test_streamed_body_over_limit_is_cut_off_with_413(client: TestClient) -> None:
    def chunks():
        for _ in range(100):
            yield b"x" * 10_000

    response = client.post(
        "/v1/search/image", content=chunks(), headers={"Content-Type": "multipart/form-data; boundary=abc"}
    )
    assert response.status_code == 413


def test_captions_for_upload_and_id(client: TestClient, photo_paths: list[Path]) -> None:
    response = client.post(
        "/v1/captions", files={"file": ("p.jpg", photo_paths[0].read_bytes())}, params={"lang": ["fr", "en"], "k": 2}
    )
    assert response.status_code == 200
    body = response.json()
    assert set(body["captions"]) == {"fr", "en"} and body["available_languages"] == ["de", "en", "fr"]
    assert len(body["captions"]["fr"]) == 2 and len(body["captions"]["en"]) == 2
    fr = body["captions"]["fr"]
    assert fr[0]["score"] >= fr[1]["score"] and {c["text"] for c in fr} <= {
        "un chien court sur la plage",
        "deux enfants jouent au football",
    }
    every = client.post("/v1/captions", files={"file": ("p.jpg", photo_paths[0].read_bytes())}).json()
    assert set(every["captions"]) == {"de", "en", "fr"}
    first_id = client.get("/v1/images").json()[0]["id"]
    by_id = client.get(f"/v1/images/{first_id}/captions", params={"lang": "de"}).json()
    assert by_id["image_id"] == first_id and by_id["captions"]["de"][0]["text"] == "ein Hund läuft am Strand"
    same = client.post("/v1/captions", data={"image_id": str(first_id)}, params={"lang": "de"}).json()
    assert same["captions"] == by_id["captions"]


def test_captions_bad_inputs(client: TestClient) -> None:
    unknown = client.post("/v1/captions", files={"file": ("a.png", _png())}, params={"lang": "pt"})
    assert unknown.status_code == 422 and "no captions in 'pt'" in unknown.json()["detail"]
    assert client.post("/v1/captions", files={"file": ("a.png", b"GIF89a broken")}).status_code == 422
    assert client.post("/v1/captions").status_code == 422
    assert client.get("/v1/images/424242/captions").status_code == 404
    assert client.post("/v1/captions", files={"file": ("a.png", _png())}, params={"k": 0}).status_code == 422


def test_image_file_thumbnail_and_info(client: TestClient, service_settings) -> None:
    item = client.get("/v1/images").json()[0]
    image = client.get(item["image_url"])
    assert image.status_code == 200 and image.headers["content-type"] in ("image/jpeg", "image/png")
    assert Image.open(io.BytesIO(image.content)).size == (48, 36)
    thumb = client.get(item["thumbnail_url"])
    assert thumb.status_code == 200 and thumb.headers["content-type"] == "image/jpeg"
    assert max(Image.open(io.BytesIO(thumb.content)).size) <= service_settings.index.thumbnail_size
    # Written by the indexer from its decode (issue 27), one per indexed photo; served from there
    cached = {path.name.split("_")[0] for path in service_settings.thumbnails_dir.glob("*.jpg")}
    assert item["metadata"]["sha256"] in cached and len(cached) == len(client.get("/v1/images").json())
    assert client.get(item["thumbnail_url"]).content == thumb.content
    info = client.get(f"/v1/images/{item['id']}/info").json()
    assert info["metadata"] == item["metadata"]


def test_unknown_ids_and_traversal_attempts(client: TestClient) -> None:
    for path in (
        "/v1/images/999999",
        "/v1/images/999999/thumbnail",
        "/v1/images/999999/info",
    ):
        response = client.get(path)
        assert response.status_code == 404 and "no image with id 999999" in response.json()["detail"]
    for path in ("/v1/images/..%2F..%2Fetc%2Fpasswd", "/v1/images/-1", "/v1/images/1.5", "/v1/images/abc/thumbnail"):
        assert client.get(path).status_code in (404, 422), path


def test_admin_requires_key(client: TestClient, photo_paths: list[Path]) -> None:
    files = {"file": ("new.png", _png(colour=(1, 2, 3)))}
    missing = client.post("/v1/images", files=files)
    assert missing.status_code == 401 and "X-API-Key" in missing.json()["detail"]
    wrong = client.post("/v1/images", files=files, headers={"X-API-Key": "nope"})
    assert wrong.status_code == 403
    assert client.delete("/v1/images/1").status_code == 401
    assert client.delete("/v1/images/1", headers={"Authorization": "Bearer nope"}).status_code == 403


def test_admin_disabled_without_key(service_settings, photo_paths: list[Path]) -> None:
    from api_fixtures import fake_engine_factory

    from app.main import create_app

    settings = service_settings.model_copy(update={"api_key": None})
    with TestClient(create_app(settings, fake_engine_factory(photo_paths[:2]))) as test_client:
        response = test_client.delete("/v1/images/1", headers={"X-API-Key": "anything"})
    assert response.status_code == 503 and "admin disabled" in response.json()["detail"]


def test_admin_upload_is_searchable_immediately_and_persists(
    client: TestClient,
    admin_headers: dict[str, str],
    service_settings,
    photo_paths: list[Path],
) -> None:
    from api_fixtures import fake_engine_factory

    from app.main import create_app

    data = _png((50, 50), (10, 220, 40))
    added = client.post(
        "/v1/images",
        files={"file": ("green.png", data)},
        data={"title": "Green", "tags": "a, b"},
        headers=admin_headers,
    )
    assert added.status_code == 201, added.text
    body = added.json()
    assert body["created"] is True and body["metadata"]["title"] == "Green" and body["metadata"]["tags"] == ["a", "b"]
    new_id = body["id"]
    found = client.post("/v1/search/image", files={"file": ("q.png", data)}, params={"k": 1}).json()
    assert found["results"][0]["id"] == new_id and found["total_images"] == 9
    again = client.post("/v1/images", files={"file": ("again.png", data)}, headers=admin_headers)
    assert again.status_code == 200 and again.json()["created"] is False and again.json()["id"] == new_id
    by_path = client.post("/v1/images", data={"path": str(photo_paths[0])}, headers=admin_headers)
    assert by_path.status_code == 200 and by_path.json()["created"] is False
    client.close()  # shut the first app down, then open the index again in a fresh one
    with TestClient(create_app(service_settings, fake_engine_factory())) as fresh:
        assert fresh.get(f"/v1/images/{new_id}/info").json()["metadata"]["title"] == "Green"
        deleted = fresh.delete(f"/v1/images/{new_id}", headers=admin_headers)
        assert deleted.status_code == 200 and deleted.json() == {"id": new_id, "deleted": True, "remaining": 8}
        assert fresh.get(f"/v1/images/{new_id}").status_code == 404
        ids = [r["id"] for r in fresh.get("/v1/search", params={"q": "green", "k": 20}).json()["results"]]
        assert new_id not in ids and len(ids) == 8
        assert fresh.delete(f"/v1/images/{new_id}", headers=admin_headers).status_code == 404


def test_admin_add_by_path_and_bad_paths(
    client: TestClient,
    admin_headers: dict[str, str],
    tmp_path: Path,
) -> None:
    fresh = tmp_path / "extra.png"
    fresh.write_bytes(_png((33, 33), (5, 5, 250)))
    added = client.post("/v1/images", data={"path": str(fresh)}, headers=admin_headers)
    assert added.status_code == 201 and added.json()["created"] is True
    # Missing, not an image name: the one refusal of every path that cannot be indexed (nothing told apart).
    missing = client.post("/v1/images", data={"path": str(tmp_path / "nope.png")}, headers=admin_headers)
    assert missing.status_code == 403 and "POLYGLOT_ALLOWED_ROOTS" in missing.json()["detail"]
    notes = tmp_path / "notes.txt"
    notes.write_text("hello")
    named = client.post("/v1/images", data={"path": str(notes)}, headers=admin_headers)
    assert named.status_code == 403 and named.json() == missing.json()
    fake = tmp_path / "fake.jpg"
    fake.write_text("not really a jpeg")
    bad = client.post("/v1/images", data={"path": str(fake)}, headers=admin_headers)
    assert bad.status_code == 422
    junk = client.post("/v1/images", files={"file": ("x.jpg", b"junk")}, headers=admin_headers)
    assert junk.status_code == 422 and "not an image" in junk.json()["detail"]
    assert client.post("/v1/images", headers=admin_headers).status_code == 422


def test_health_ready_metrics_languages(client: TestClient) -> None:
    assert client.get("/health").json() == {"status": "ok", "text_encoder": "fake-text"}
    ready = client.get("/v1/ready").json()
    assert ready["status"] == "ready" and ready["images"] == 8 and ready["captions"] == 6
    assert ready["text_encoder"] == "fake-text" and "caption_index" in ready["load_seconds"]
    assert ready["index_kind"] == "flat"  # 8 images: below every threshold of the size rule
    assert ready["image_precision"] == "fp32"  # the fake CNN has no int8 graph
    client.get("/v1/search", params={"q": "dog"})
    client.get("/v1/search", params={"q": ""})
    text = client.get("/metrics").text
    assert 'polyglot_requests_total{endpoint="/search",method="GET",status="200"}' in text
    assert 'polyglot_requests_total{endpoint="/search",method="GET",status="422"}' in text
    assert "polyglot_request_seconds_bucket" in text and "polyglot_index_images 8.0" in text
    assert 'polyglot_model_load_seconds{component="caption_index"}' in text
    languages = client.get("/v1/languages").json()
    assert languages["text_languages"] == ["de", "en", "es", "fr"] and languages["names"]["fr"] == "French"


def test_openapi_documents_v1_and_score_scale(client: TestClient) -> None:
    schema = client.get("/openapi.json").json()
    paths = set(schema["paths"])
    assert {"/v1/search", "/v1/search/image", "/v1/captions", "/v1/images/{image_id}", "/v1/health"} <= paths
    assert not any(not p.startswith("/v1/") for p in paths)
    assert "[-1, 1]" in schema["info"]["description"]
    assert "[-1, 1]" in schema["paths"]["/v1/search"]["get"]["description"]
    assert "X-API-Key" in str(schema["components"]["securitySchemes"])


def test_web_page_is_served(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and "Polyglot Image Search" in page.text
    assert client.get("/static/app.js").status_code == 200


def test_request_log_lines(service_settings, photo_paths: list[Path], caplog) -> None:
    import logging

    from api_fixtures import fake_engine_factory

    from app.main import create_app

    quiet = TestClient(create_app(service_settings, fake_engine_factory(photo_paths[:2])))
    loud_settings = service_settings.model_copy(update={"log_requests": True})
    with caplog.at_level(logging.DEBUG, logger="app.requests"):
        with quiet:
            quiet.get("/health")
        assert not [r for r in caplog.records if r.name == "app.requests"]
        with TestClient(create_app(loud_settings, fake_engine_factory())) as loud:
            loud.get("/v1/search", params={"q": "dog"})
    lines = [r for r in caplog.records if r.name == "app.requests"]
    assert len(lines) == 1 and lines[0].status == 200 and lines[0].path == "/v1/search"  # type: ignore[attr-defined]
