"""The concept lexicon: WordNet noun concepts people photograph, their hierarchy and their names in many languages.

Files (``indexer/assets/concepts/``, built by ``python -m training.concepts.build``; its README is the data card):

* ``concepts.tsv``: :data:`CONCEPT_COLUMNS`, one concept a row (``02084071-n`` is *dog*; ``hypernyms`` are the
  nearest kept ancestors, comma-separated; ``imagenet`` the ImageNet-1k class index or empty);
* ``names/<lang>.tsv``: :data:`NAME_COLUMNS`, the concept's names, ``|``-separated, commonest first;
* ``manifest.json``: the format, counts, columns and every file's sha256 and size.

:meth:`ConceptLexicon.load` checks everything before it returns (a missing, truncated, altered or wrongly shaped
file raises :class:`LexiconError` with one line naming the file), so a lexicon is whole or not loaded at all.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

FORMAT = 1
CONCEPT_COLUMNS = ("synset", "lexname", "freq", "hypernyms", "imagenet", "lemmas", "gloss")
NAME_COLUMNS = ("synset", "names")
MANIFEST = "manifest.json"
CONCEPTS_FILE = "concepts.tsv"


class LexiconError(ValueError):
    """A lexicon file is missing, truncated or not in the expected format; the one-line message names the file."""

    def __init__(self, path: Path | str, why: str) -> None:
        self.path = str(path)
        super().__init__(f"concept lexicon file {path}: {why}")


@dataclass(frozen=True)
class Concept:
    id: str
    lexname: str
    freq: int
    hypernyms: tuple[str, ...]
    imagenet: int | None
    lemmas: tuple[str, ...]
    gloss: str

    @property
    def english(self) -> str:
        return self.lemmas[0]


def _fold(name: str) -> str:
    return " ".join(name.casefold().split())


@dataclass
class ConceptLexicon:
    folder: Path
    digest: str  # sha256 of manifest.json (which holds every file's sha256): names this lexicon in caches
    concepts: dict[str, Concept]
    ids: list[str]
    _names: dict[str, dict[str, tuple[str, ...]]]  # lang → concept → names, commonest first
    _hyponyms: dict[str, list[str]] = field(default_factory=dict)
    _found: dict[str, dict[str, list[str]]] = field(default_factory=dict)

    # -- loading -------------------------------------------------------------------------------------------------

    @classmethod
    def load(cls, folder: Path | str, languages: Iterable[str] | None = None) -> ConceptLexicon:
        """The lexicon in ``folder``, every file checked against the manifest; ``languages``: only these names
        files (default: all). Raises :class:`LexiconError` (one line, naming the file).

        A process loads it once: the service's search fusion and its tagger, and every later start of either in
        the same process, share one read-only lexicon while none of its files has changed (size, modification
        time and inode of each, looked at on every call; a changed file is read and checked again)."""
        folder = Path(folder)
        wanted_key = None if languages is None else tuple(sorted(set(languages)))
        signature = _file_signature(folder)
        if signature is None:
            return cls._read(folder, languages)
        key = (str(folder.resolve()), wanted_key, signature)
        with _LOADED_LOCK:
            loaded = _LOADED.get(key)
        if loaded is not None:
            return loaded
        lexicon = cls._read(folder, languages)
        with _LOADED_LOCK:
            _LOADED[key] = lexicon
            while len(_LOADED) > _LOADED_KEPT:
                _LOADED.popitem(last=False)
        return lexicon

    @classmethod
    def _read(cls, folder: Path, languages: Iterable[str] | None) -> ConceptLexicon:
        manifest_path = folder / MANIFEST
        raw = _read_bytes(manifest_path)
        try:
            manifest = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            raise LexiconError(manifest_path, f"not JSON ({_one_line(exc)})") from None
        files, counts, declared = _check_manifest(manifest_path, manifest)
        concepts_path = folder / CONCEPTS_FILE
        concepts = _read_concepts(concepts_path, _verified(concepts_path, files.get(CONCEPTS_FILE)), counts)
        wanted = set(declared) if languages is None else set(languages)
        unknown = sorted(wanted - set(declared))
        if unknown:
            raise LexiconError(manifest_path, f"no names file for {', '.join(unknown)} (has {', '.join(declared)})")
        names: dict[str, dict[str, tuple[str, ...]]] = {}
        for lang in sorted(wanted):
            path = folder / "names" / f"{lang}.tsv"
            data = _verified(path, files.get(f"names/{lang}.tsv"))
            names[lang] = _read_names(path, data, concepts, declared[lang])
        return cls(
            folder,
            hashlib.sha256(raw).hexdigest(),
            concepts,
            list(concepts),
            names,
        )

    # -- names ---------------------------------------------------------------------------------------------------

    @property
    def languages(self) -> list[str]:
        """Languages with a names file loaded (English is every concept's lemmas, always there)."""
        return sorted(self._names)

    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, concept: object) -> bool:
        return concept in self.concepts

    def concept(self, concept: str) -> Concept:
        try:
            return self.concepts[concept]
        except KeyError:
            raise KeyError(f"no concept {concept!r} in the lexicon") from None

    def english(self, concept: str) -> str:
        """The concept's commonest English name ("dog" for ``02084071-n``)."""
        return self.concept(concept).english

    def names(self, concept: str, lang: str) -> list[str]:
        """Its names in ``lang``, commonest first; empty when the lexicon has none (English: its lemmas)."""
        if lang == "en":
            return list(self.concept(concept).lemmas)
        return list(self._names.get(lang, {}).get(concept, ()))

    def name(self, concept: str, lang: str) -> str | None:
        names = self.names(concept, lang)
        return names[0] if names else None

    def named(self, lang: str) -> int:
        """How many concepts have a name in ``lang``."""
        return len(self.ids) if lang == "en" else len(self._names.get(lang, {}))

    def find(self, name: str, lang: str) -> list[str]:
        """The concepts that ``name`` names in ``lang`` (case-insensitive), those it is the first name of first."""
        table = self._found.get(lang)
        if table is None:
            table = {}
            entries: Iterable[tuple[str, Sequence[str]]] = (
                ((c.id, c.lemmas) for c in self.concepts.values())
                if lang == "en"
                else self._names.get(lang, {}).items()
            )
            ranked: dict[str, list[tuple[int, int, str]]] = {}
            for order, (concept, names) in enumerate(entries):
                for position, written in enumerate(names):
                    ranked.setdefault(_fold(written), []).append((position, order, concept))
            table = {key: [c for _, _, c in sorted(hits)] for key, hits in ranked.items()}
            self._found[lang] = table  # one assignment: a concurrent caller builds its own or reads this
        return list(table.get(_fold(name), []))

    # -- hierarchy -----------------------------------------------------------------------------------------------

    def hypernyms(self, concept: str) -> list[str]:
        """The nearest more general concepts kept in the lexicon (dog → canine, domestic animal)."""
        return list(self.concept(concept).hypernyms)

    def hyponyms(self, concept: str) -> list[str]:
        """The nearest more specific concepts (dog → puppy, hunting dog, ...)."""
        if not self._hyponyms:
            children: dict[str, list[str]] = {}
            for c in self.concepts.values():
                for parent in c.hypernyms:
                    children.setdefault(parent, []).append(c.id)
            self._hyponyms = children
        self.concept(concept)
        return list(self._hyponyms.get(concept, []))

    def ancestors(self, concept: str, depth: int | None = None) -> dict[str, int]:
        """Every more general concept with its distance in steps (1: a hypernym), up to ``depth`` steps."""
        found: dict[str, int] = {}
        frontier = [concept]
        steps = 0
        while frontier and (depth is None or steps < depth):
            steps += 1
            following = []
            for current in frontier:
                for parent in self.concept(current).hypernyms:
                    if parent not in found:
                        found[parent] = steps
                        following.append(parent)
            frontier = following
        return found

    def descendants(self, concept: str) -> set[str]:
        found: set[str] = set()
        stack = self.hyponyms(concept)
        while stack:
            child = stack.pop()
            if child not in found:
                found.add(child)
                stack.extend(self.hyponyms(child))
        return found

    def imagenet_concepts(self) -> list[str]:
        """The concept of each ImageNet-1k class, in class order (all 1,000 are in the lexicon)."""
        by_class = {c.imagenet: c.id for c in self.concepts.values() if c.imagenet is not None}
        return [by_class[index] for index in range(len(by_class))]


def listed_languages(folder: Path | str) -> list[str]:
    """The languages a lexicon's manifest lists, without loading or checking it (empty when it cannot be read:
    :meth:`ConceptLexicon.load` then says why)."""
    try:
        languages = json.loads((Path(folder) / MANIFEST).read_text(encoding="utf-8")).get("languages")
    except (OSError, ValueError, AttributeError):
        return []
    return sorted(languages) if isinstance(languages, dict) else []


# -- reading and checking ----------------------------------------------------------------------------------------


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


# Lexicons loaded by this process, by folder, languages and file signature (the newest few: a lexicon is tens of MB).
_LoadedKey = tuple[str, tuple[str, ...] | None, tuple[tuple[str, int, int, int], ...]]
_LOADED: OrderedDict[_LoadedKey, ConceptLexicon] = OrderedDict()
_LOADED_LOCK = threading.Lock()
_LOADED_KEPT = 2


def _file_signature(folder: Path) -> tuple[tuple[str, int, int, int], ...] | None:
    """Name, size, modification time and inode of every file of the lexicon folder; None when one cannot be read
    (then nothing is shared and the load says what is wrong)."""
    try:
        paths = [folder / MANIFEST, folder / CONCEPTS_FILE, *sorted((folder / "names").glob("*.tsv"))]
        stats = [(path, os.stat(path)) for path in paths]
    except OSError:
        return None
    return tuple((path.name, stat.st_size, stat.st_mtime_ns, stat.st_ino) for path, stat in stats)


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise LexiconError(path, "missing (rebuild: python -m training.concepts.build)") from None
    except OSError as exc:
        raise LexiconError(path, f"unreadable ({exc.strerror or _one_line(exc)})") from None


def _check_manifest(path: Path, manifest: Any) -> tuple[dict[str, dict[str, Any]], dict[str, int], dict[str, int]]:
    if not isinstance(manifest, dict):
        raise LexiconError(path, "not a JSON object")
    if manifest.get("format") != FORMAT:
        raise LexiconError(path, f"format {manifest.get('format')!r}, this version reads format {FORMAT}")
    columns = manifest.get("columns")
    expected = {CONCEPTS_FILE: list(CONCEPT_COLUMNS), "names": list(NAME_COLUMNS)}
    if columns != expected:
        raise LexiconError(path, f"columns {columns!r}, expected {expected!r}")
    files = manifest.get("files")
    languages = manifest.get("languages")
    total = manifest.get("concepts")
    if not isinstance(files, dict) or not isinstance(languages, dict) or not isinstance(total, int):
        raise LexiconError(path, "lacks 'files', 'languages' or 'concepts'")
    declared: dict[str, int] = {}
    for lang, counts in languages.items():
        if not isinstance(counts, dict) or not isinstance(counts.get("concepts"), int):
            raise LexiconError(path, f"language {lang!r} lacks its concept count")
        if f"names/{lang}.tsv" not in files:
            raise LexiconError(path, f"lists language {lang!r} but not its file names/{lang}.tsv")
        declared[lang] = counts["concepts"]
    for name, entry in files.items():
        if not isinstance(entry, dict) or not isinstance(entry.get("sha256"), str):
            raise LexiconError(path, f"file {name!r} lacks its sha256")
    return files, {"concepts": total}, declared


def _verified(path: Path, entry: dict[str, Any] | None) -> bytes:
    if entry is None:
        raise LexiconError(path, f"not listed in {MANIFEST}")
    data = _read_bytes(path)
    size = entry.get("bytes")
    if isinstance(size, int) and len(data) != size:
        raise LexiconError(path, f"{len(data):,} bytes, the manifest says {size:,} (truncated or altered)")
    if hashlib.sha256(data).hexdigest() != entry["sha256"]:
        raise LexiconError(path, "sha256 differs from the manifest's (altered or from another build)")
    return data


def _rows(path: Path, data: bytes, columns: Sequence[str]) -> list[list[str]]:
    try:
        lines = data.decode("utf-8").split("\n")
    except UnicodeDecodeError as exc:
        raise LexiconError(path, f"not UTF-8 ({_one_line(exc)})") from None
    if lines and lines[-1] == "":
        lines.pop()
    if not lines or lines[0].split("\t") != list(columns):
        raise LexiconError(path, f"header {lines[0][:80]!r} is not {chr(9).join(columns)!r}" if lines else "empty")
    rows = []
    for number, line in enumerate(lines[1:], start=2):
        cells = line.split("\t")
        if len(cells) != len(columns):
            raise LexiconError(path, f"line {number} has {len(cells)} columns, expected {len(columns)}")
        rows.append(cells)
    return rows


def _read_concepts(path: Path, data: bytes, counts: dict[str, int]) -> dict[str, Concept]:
    concepts: dict[str, Concept] = {}
    for number, cells in enumerate(_rows(path, data, CONCEPT_COLUMNS), start=2):
        synset, lexname, freq, hypernyms, imagenet, lemmas, gloss = cells
        names = tuple(lemma for lemma in lemmas.split("|") if lemma)
        if not synset or not names or not freq.isdigit() or (imagenet and not imagenet.isdigit()):
            raise LexiconError(path, f"line {number} is not a concept row (synset, English lemmas, counts)")
        if synset in concepts:
            raise LexiconError(path, f"line {number}: concept {synset} twice")
        concepts[synset] = Concept(
            synset,
            lexname,
            int(freq),
            tuple(h for h in hypernyms.split(",") if h),
            int(imagenet) if imagenet else None,
            names,
            gloss,
        )
    if len(concepts) != counts["concepts"]:
        raise LexiconError(path, f"{len(concepts):,} concepts, the manifest says {counts['concepts']:,}")
    for concept in concepts.values():
        missing = [h for h in concept.hypernyms if h not in concepts]
        if missing:
            raise LexiconError(path, f"concept {concept.id} has hypernym {missing[0]} that is not in the file")
    return concepts


def _read_names(path: Path, data: bytes, concepts: dict[str, Concept], declared: int) -> dict[str, tuple[str, ...]]:
    names: dict[str, tuple[str, ...]] = {}
    for number, (synset, written) in enumerate(_rows(path, data, NAME_COLUMNS), start=2):
        if synset not in concepts:
            raise LexiconError(path, f"line {number}: concept {synset!r} is not in {CONCEPTS_FILE}")
        kept = tuple(name for name in written.split("|") if name)
        if not kept:
            raise LexiconError(path, f"line {number}: concept {synset} has no name")
        names[synset] = kept
    if len(names) != declared:
        raise LexiconError(path, f"{len(names):,} concepts named, the manifest says {declared:,}")
    return names
