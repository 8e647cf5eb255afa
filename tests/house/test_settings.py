"""The one settings tree (indexer/settings.py, app/service_settings.py): sections, unchanged environment
variable names, flat names routed to their section, and who may build it (entry points only, read over ``ast``)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from conftest import clear_polyglot_env
from pydantic import SecretStr
from pydantic_settings import BaseSettings

from app.service_settings import ServiceSection, ServiceSettings
from indexer.settings import IndexSettings, ModelSettings, QuerySettings, Settings, TaggingSettings
from indexer.store.index_kinds import VectorIndexSettings
from indexer.tagging.ranking import DEFAULT_W1, DEFAULT_W2

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> pytest.MonkeyPatch:
    clear_polyglot_env(monkeypatch)
    monkeypatch.chdir(tmp_path)  # no ./.env
    return monkeypatch


def test_every_section_reads_the_variable_names_of_before(clean_env: pytest.MonkeyPatch) -> None:
    names = {
        "POLYGLOT_HOME": "/srv/polyglot",
        "POLYGLOT_TOWER_PATH": "/srv/student",
        "POLYGLOT_E5_PRECISION": "int8",
        "POLYGLOT_BATCH_SIZE": "7",
        "POLYGLOT_WATCH_DIRS": '["/photos"]',
        "POLYGLOT_CLC": "average",
        "POLYGLOT_QUERY_CACHE_SIZE": "0",
        "POLYGLOT_TAG_W1": "0.5",
        "POLYGLOT_TAG_MAX_K": "20",
        "POLYGLOT_INDEX_KIND": "hnsw",
        "POLYGLOT_MAX_K": "30",
        "POLYGLOT_API_KEY": "secret",
    }
    for name, value in names.items():
        clean_env.setenv(name, value)
    settings = ServiceSettings()
    assert settings.home == Path("/srv/polyglot") and settings.resolved_index_dir == Path("/srv/polyglot/index")
    assert settings.models.tower_path == Path("/srv/student") and settings.models.e5_precision == "int8"
    assert settings.index.batch_size == 7 and settings.index.watch_dirs == [Path("/photos")]
    assert settings.query.clc == "average" and settings.query.query_cache_size == 0
    assert settings.tagging.w1 == 0.5 and settings.tagging.max_k == 20
    assert settings.vector_index.kind == "hnsw"
    assert settings.service.max_k == 30 and settings.service.api_key == SecretStr("secret")
    assert Settings().index.batch_size == 7  # the library's root reads the same names


def test_flat_names_go_to_their_section_and_the_rest_still_comes_from_the_environment(
    clean_env: pytest.MonkeyPatch,
) -> None:
    clean_env.setenv("POLYGLOT_MAX_IMAGE_PIXELS", "1000")
    settings = ServiceSettings(batch_size=3, tower_path="/t", max_k=5, clc="average")
    assert settings.index.batch_size == 3 and settings.index.max_image_pixels == 1000
    assert settings.models.tower_path == Path("/t") and settings.service.max_k == 5 and settings.query.clc == "average"
    copy = settings.model_copy(update={"batch_size": 9, "home": Path("/h"), "max_k": 6})
    assert copy.index.batch_size == 9 and copy.home == Path("/h") and copy.service.max_k == 6
    assert settings.index.batch_size == 3 and settings.service.max_k == 5  # the original is unchanged
    given = Settings(index=IndexSettings(batch_size=2), thumbnail_size=64)
    assert given.index.batch_size == 2 and given.index.thumbnail_size == 64


def test_flat_names_are_unique_across_the_root_and_its_flat_sections() -> None:
    sections = [ModelSettings, IndexSettings, QuerySettings, ServiceSection]
    root = {name for name in ServiceSettings.model_fields if name not in (*ServiceSettings.FLAT_SECTIONS, "tagging")}
    seen: dict[str, str] = {name: "root" for name in root}
    for section in sections:
        for name in section.model_fields:
            assert name not in seen, f"{name} is in {seen.get(name)} and {section.__name__}"
            seen[name] = section.__name__
    assert {section.model_config.get("env_prefix") for section in sections} == {"POLYGLOT_"}
    assert TaggingSettings.model_config.get("env_prefix") == "POLYGLOT_TAG_"
    assert VectorIndexSettings.model_config.get("env_prefix") == "POLYGLOT_INDEX_"


def test_tagging_defaults_are_the_rankings() -> None:
    assert (TaggingSettings.model_fields["w1"].default, TaggingSettings.model_fields["w2"].default) == (
        DEFAULT_W1,
        DEFAULT_W2,
    )


def _settings_classes() -> set[str]:
    import app.service_settings
    import indexer.settings

    found = {"get_settings"}
    for module in (indexer.settings, app.service_settings):
        found |= {
            name
            for name, value in vars(module).items()
            if isinstance(value, type) and issubclass(value, BaseSettings) and value is not BaseSettings
        }
    return found | {"VectorIndexSettings"}


def settings_constructions(root: Path = ROOT) -> list[str]:
    """``path:line`` of every call that builds settings outside an entry point: the service's ``create_app``,
    the CLI's one helper, the settings modules themselves, and modules run as scripts (``__main__``)."""
    names = _settings_classes()
    allowed = {"app/main.py", "app/cli/settings_cli.py", "indexer/settings.py", "app/service_settings.py"}
    found = []
    for package in ("app", "indexer", "training"):
        for path in sorted((root / package).rglob("*.py")):
            relative = path.relative_to(root).as_posix()
            text = path.read_text(encoding="utf-8")
            if relative in allowed or 'if __name__ == "__main__"' in text:
                continue
            for node in ast.walk(ast.parse(text)):
                if isinstance(node, ast.Call):
                    func = node.func
                    name = (
                        func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
                    )
                    if name in names:
                        found.append(f"{relative}:{node.lineno} {name}")
    return found


def test_settings_are_built_only_at_entry_points(tmp_path: Path) -> None:
    assert settings_constructions() == []
    # …and the check finds one where it does not belong.
    (tmp_path / "indexer").mkdir()
    (tmp_path / "app").mkdir()
    (tmp_path / "training").mkdir()
    (tmp_path / "indexer" / "library.py").write_text("def f():\n    return TaggingSettings().w1\n")
    assert settings_constructions(tmp_path) == ["indexer/library.py:2 TaggingSettings"]
