"""Words in ~40 languages for the student, from the MUSE English→X dictionaries (``../shared/data/lexicons``).

* **word pairs** (the ``words`` term): an English word and each of its translations. The teacher's vector of the
  English word is the target of the translation and of the word itself (Reimers & Gurevych 2020 applied to words).
  Only English words people use about photos are kept: the words of the English photo captions (seen at least
  ``min_count`` times) and of the English ImageNet class names. Identity pairs (``pizza → pizza``, names, numbers)
  are dropped, and so are pairs that cannot be a word of the language (digits, punctuation, Latin letters where
  the language has its own script). A seeded share of the English words is held out, with all their translations:
  the training curve's word-translation check.
* **pseudo-translated class names** (more rows of the ``concept`` term): an English ImageNet class name translated
  word by word where every word has a translation (``goldfish → goldfisch``, ``great white shark → große weiß
  hai``). The human class names of ``imagenet-labels`` stay measurement data: none is read here.
* **case forms**: people type ``Panda``, ``PANDA`` and German capitalises every noun, while the dictionaries are
  lower-case; a drawn word is shown lower-case, capitalised or upper-case (:func:`case_form`).

The Chinese dictionary is written in traditional characters; every Chinese word is also given in simplified
characters (OpenCC's ``t2s``), which is what most users in mainland China type.

Data licence: MUSE dictionaries, CC BY-NC 4.0 (the model card says so).
"""

from __future__ import annotations

import json
import random
import re
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from training.data.chinese_script import simplified_chinese
from training.data.text_case import CASE_FORMS, in_case

# Languages whose words are written in their own script: a pair whose translation is plain ASCII is noise there
# (an untranslated English word, a name, a code).
OWN_SCRIPT = frozenset({"ar", "bg", "fa", "hi", "ja", "ko", "mk", "ru", "ta", "th", "uk", "zh"})
# Written without spaces between words: a word-by-word translation is joined without them.
NO_SPACES = frozenset({"ja", "zh", "th"})
ENGLISH_WORD = re.compile(r"[a-z]+(?:-[a-z]+)?")
NOT_A_WORD = re.compile(r"[\d_#@/\\<>()\[\]{}|+=*&%$!?;:\"]")
CASE_WEIGHTS = (0.5, 0.35, 0.15)


@dataclass
class WordPairs:
    english: list[str]  # distinct English words: the teacher reads these
    text: list[str]  # each translation, and each English word itself (lang "en")
    lang: list[str]
    source: np.ndarray  # (n,) index into english

    def languages(self) -> list[str]:
        return sorted(set(self.lang))


Embed = Callable[[Sequence[str]], np.ndarray]  # texts → unit vectors, by the model being trained


def nearest_source_check(held: WordPairs, langs: Sequence[str], prefix: str) -> Callable[[Embed], dict[str, float]]:
    """Held-out pairs: how often a text's nearest held-out English source (by the model's own vectors) is its own
    (R@1 among the held-out sources), per language, as ``{prefix}-{lang}``."""
    rows = {lang: [i for i, code in enumerate(held.lang) if code == lang] for lang in langs}

    def evaluate(embed: Embed) -> dict[str, float]:
        english = embed(held.english)
        scores = {}
        for lang, chosen in rows.items():
            if chosen:
                vectors = embed([held.text[i] for i in chosen])
                nearest = np.argmax(vectors @ english.T, axis=1)
                scores[f"{prefix}-{lang}"] = float(np.mean(nearest == held.source[chosen]))
        return scores

    return evaluate


@dataclass
class PseudoNames:
    text: list[str]
    lang: list[str]
    label: np.ndarray  # (n,) class index


def lexicon_languages(folder: Path) -> list[str]:
    return sorted(path.stem.split("-", 1)[1] for path in Path(folder).glob("en-*.tsv"))


def plausible_translation(english: str, other: str, lang: str) -> bool:
    shortest = 1 if lang in NO_SPACES or lang == "ko" else 2  # 狗 is a word; a lone Latin letter is not
    if english == other or len(other) < shortest or NOT_A_WORD.search(other):
        return False
    return not (lang in OWN_SCRIPT and other.isascii())


def read_lexicon(path: Path, lang: str) -> dict[str, list[str]]:
    """English word → its plausible translations (file order; Chinese also in simplified characters)."""
    table: dict[str, list[str]] = defaultdict(list)
    converter = simplified_chinese() if lang == "zh" else None
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            english, _, other = line.rstrip("\n").partition("\t")
            if not plausible_translation(english, other, lang):
                continue
            forms = [other]
            if converter is not None:
                simple = converter(other)
                if simple != other:
                    forms.insert(0, simple)
            for form in forms:
                if form not in table[english]:
                    table[english].append(form)
    return table


def read_lexicons(folder: Path, langs: Sequence[str] | None = None) -> dict[str, dict[str, list[str]]]:
    """Every language's table (:func:`read_lexicon`), read once for the words term and the translated names."""
    return {lang: read_lexicon(Path(folder) / f"en-{lang}.tsv", lang) for lang in langs or lexicon_languages(folder)}


def english_vocabulary(caption_files: Iterable[Path], class_names: Sequence[str], min_count: int = 3) -> set[str]:
    """English words of the photo captions seen at least ``min_count`` times, and every word of the class names."""
    counts: Counter[str] = Counter()
    for path in caption_files:
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                row = json.loads(line)
                if row.get("lang") == "en":
                    counts.update(ENGLISH_WORD.findall(row["text"].lower()))
    words = {word for word, count in counts.items() if count >= min_count and len(word) > 1}
    for name in class_names:
        words.update(ENGLISH_WORD.findall(name.lower()))
    return words


def word_pairs(
    tables: dict[str, dict[str, list[str]]],
    vocabulary: set[str],
    holdout: float = 0.05,
    seed: int = 0,
) -> tuple[WordPairs, WordPairs]:
    """(train, held-out) pairs of every language of ``tables`` (:func:`read_lexicons`); held-out English words (a
    seeded share) never train."""
    english = sorted(word for word in vocabulary if any(word in table for table in tables.values()))
    order = list(english)
    random.Random(seed).shuffle(order)
    held = set(order[: round(holdout * len(order))])
    parts = []
    for keep in (lambda w: w not in held, lambda w: w in held):
        words = [w for w in english if keep(w)]
        index = {w: n for n, w in enumerate(words)}
        text, lang, source = [], [], []
        for word in words:
            text.append(word)
            lang.append("en")
            source.append(index[word])
        for code, table in tables.items():
            for word in words:
                for other in table.get(word, ()):
                    text.append(other)
                    lang.append(code)
                    source.append(index[word])
        parts.append(WordPairs(words, text, lang, np.array(source, dtype=np.int64)))
    return parts[0], parts[1]


def pseudo_class_names(
    tables: dict[str, dict[str, list[str]]], class_names: Sequence[str], variants: int = 2, seed: int = 0
) -> PseudoNames:
    """Each class name translated word by word into every language of ``tables`` where all its words translate."""
    rng = random.Random(seed)
    text, lang, label = [], [], []
    for code, table in tables.items():
        joiner = "" if code in NO_SPACES else " "
        for index, name in enumerate(class_names):
            words = name.lower().replace("-", " ").split()
            if not words or any(word not in table for word in words):
                continue
            seen: set[str] = set()
            for _ in range(variants):
                candidate = joiner.join(rng.choice(table[word]) for word in words)
                if candidate not in seen and candidate != name.lower():
                    seen.add(candidate)
                    text.append(candidate)
                    lang.append(code)
                    label.append(index)
    return PseudoNames(text, lang, np.array(label, dtype=np.int64))


def case_form(text: str, rng: np.random.Generator, lang: str | None = None) -> str:
    """The text as people type it: lower-case, capitalised or upper-case (drawn by ``CASE_WEIGHTS``), on a keyboard
    for ``lang`` (Turkish "kedi" in capitals is "KEDİ", as serving and evaluation read it)."""
    form = CASE_FORMS[int(rng.choice(len(CASE_FORMS), p=CASE_WEIGHTS))]
    # The drawn texts are lower-case already; "lower" leaves the odd capitalised name as it is.
    return text if form == "lower" else in_case(text, form, lang)
