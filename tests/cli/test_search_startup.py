"""A one-shot ``polyglot search "dog"`` loads only the student's ONNX text side and the index, never torch (issue 36).

The text side it loads without torch (indexer/query/onnx_text_side.py) gives the same vectors as the query
pipeline's, and it steps aside whenever only the full path can load the configured text side.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import write_random_images
from fresh_cli import clean_env, polyglot_imports, run_polyglot

from indexer.asset_paths import SHIPPED_STUDENT, STUDENT_TRUNK_DELTA
from indexer.built_models import is_built
from indexer.encoders.onnx_session import KEPT_GRAPH, KEPT_WEIGHTS
from indexer.export.registry import student_export
from indexer.query.onnx_text_side import OPTIMIZED_DIR, STUDENT_ENCODER, STUDENT_KIND, load_onnx_text_side
from indexer.settings import Settings

MODELS = Path(__file__).resolve().parents[2] / "var" / "models"
TEXTS = ["dog", "un chien sur la plage", "Ein Hund rennt über die Wiese.", "犬", "собака в снегу", ""]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not is_built(student_export(SHIPPED_STUDENT), MODELS), reason="the student's ONNX export is not built"
    ),
]


def settings_for(tmp_path: Path, **values: object) -> Settings:
    return Settings(home=tmp_path / "home", models_dir=MODELS, **values)  # type: ignore[arg-type]


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_the_torch_free_text_side_embeds_as_the_query_pipeline_does(tmp_path: Path, precision: str) -> None:
    from indexer.query import load_models

    settings = settings_for(tmp_path, e5_precision=precision)
    light = load_onnx_text_side(settings)
    assert light is not None
    full = load_models(settings, alignments=False, clc=False)
    np.testing.assert_allclose(light.embed(TEXTS), full.text.embed(TEXTS), atol=2e-6)
    assert light.label == full.label and light.languages == sorted(full.text.languages or [])
    assert light.image_space.fingerprint == full.image_space.fingerprint


@pytest.mark.parametrize("precision", ["fp32", "int8"])
def test_the_graph_it_keeps_optimised_gives_the_same_vectors(tmp_path: Path, precision: str) -> None:
    """The first load keeps the trunk's graph as ONNX Runtime optimised it (CACHE_DIR/onnx-optimized, a folder: the
    graph, and its weights beside it); later loads open that copy without optimising again, and a copy that does not
    open is optimised and kept again."""
    settings = settings_for(tmp_path, e5_precision=precision)
    first = load_onnx_text_side(settings)
    assert first is not None
    (kept,) = (settings.resolved_cache_dir / OPTIMIZED_DIR).glob(f"*/{KEPT_GRAPH}")
    assert (kept.parent / KEPT_WEIGHTS).stat().st_size > 10 * kept.stat().st_size  # the weights are not in the graph
    again = load_onnx_text_side(settings)
    assert again is not None and again.trunk._session._model_path == str(kept)
    np.testing.assert_allclose(again.embed(TEXTS), first.embed(TEXTS), rtol=0, atol=1e-5)
    kept.write_bytes(b"not a graph")
    repaired = load_onnx_text_side(settings)
    assert repaired is not None and repaired.trunk._session._model_path != str(kept)
    np.testing.assert_allclose(repaired.embed(TEXTS), first.embed(TEXTS), rtol=0, atol=1e-5)
    assert kept.stat().st_size > 1000 and (kept.parent / KEPT_WEIGHTS).is_file()  # kept again, whole
    assert not list(kept.parent.parent.glob(".*.tmp"))


def test_what_it_reads_of_a_student_folder_is_what_the_student_package_writes() -> None:
    from indexer.student import model

    assert (STUDENT_KIND, STUDENT_ENCODER) == (model.KIND, model.TEXT_ENCODER)


def test_a_text_side_it_cannot_load_is_left_to_the_full_path(tmp_path: Path) -> None:
    other = tmp_path / "student-copy"  # a student whose export (named by its delta's digest) was never built
    shutil.copytree(SHIPPED_STUDENT, other)
    with (other / STUDENT_TRUNK_DELTA).open("ab") as delta:
        delta.write(b"retrained")  # another trunk: its digest names no build
    assert load_onnx_text_side(settings_for(tmp_path, tower_path=other)) is None
    assert load_onnx_text_side(settings_for(tmp_path, image_encoder="efficientnet-lite0")) is None
    research = tmp_path / "tower"
    research.mkdir()
    (research / "config.json").write_text(json.dumps({"kind": "tower", "image_encoder": "efficientnet-lite2"}))
    assert load_onnx_text_side(settings_for(tmp_path, tower_path=research)) is None


def test_a_one_shot_search_never_imports_torch_and_finds_what_the_pipeline_finds(tmp_path: Path) -> None:
    write_random_images(tmp_path / "photos", 6, seed=3)
    env = {**clean_env(tmp_path / "home"), "POLYGLOT_MODELS_DIR": str(MODELS)}
    status, output, _ = run_polyglot(["index", "add", str(tmp_path / "photos")], env)
    assert status == 0, output
    status, output, torch_imported = run_polyglot(["search", "dog", "--k", "4", "--json"], env)
    assert status == 0, output
    assert not torch_imported, output
    answer = json.loads(output[output.index("{") : output.rindex("}") + 1])
    assert answer["model"] == "e5-student:student" and len(answer["results"]) == 4

    from indexer.image_index import ImageIndex
    from indexer.query import QueryPipeline, load_models

    settings = Settings(home=tmp_path / "home", models_dir=MODELS)
    models = load_models(settings, alignments=False, clc=False)
    with ImageIndex.open(settings, image_space=models.image_space, create=False) as index:
        expected = QueryPipeline(models, settings).search_texts(index, [("dog", None, 4)])[0]
    assert [row["id"] for row in answer["results"]] == [hit.id for hit in expected]
    np.testing.assert_allclose([row["score"] for row in answer["results"]], [h.score for h in expected], atol=1e-4)
    # "dog" names a concept: /search fuses its English vector in, and so must the one-shot path, whose concept
    # vectors are the ones the full path cached under the same fingerprint.
    assert models.fusion is not None and models.fusion.match("dog", answer["lang"]) is not None
    light = load_onnx_text_side(settings)
    assert light is not None and light.fingerprint == models.text.fingerprint


def test_a_one_shot_search_imports_no_progress_bar(tmp_path: Path) -> None:
    """What a text search does not use stays out of its start-up: torch, and tqdm (the index's progress bars,
    imported by the functions that show one)."""
    write_random_images(tmp_path / "photos", 3, seed=5)
    env = {**clean_env(tmp_path / "home"), "POLYGLOT_MODELS_DIR": str(MODELS)}
    status, output, _ = run_polyglot(["index", "add", "--quiet", str(tmp_path / "photos")], env)
    assert status == 0, output
    status, output, imported = polyglot_imports(["search", "dog", "--k", "2"], env, ["torch", "tqdm"])
    assert status == 0 and "dog" in output, output
    assert imported == set(), output
