"""Folder names as people type them (issue 36): ``Lisboa`` finds ``…/Été à Lisboa``, ``ete`` finds ``…/Été``.

A folder filter that is not an absolute path matches a folder when, once both are *folded* — Unicode NFC, accents
stripped (NFD without its combining marks), case folded (``casefold``: ``ß`` is ``ss``) — it begins a word of the
folder's path: the start of a path segment, or of a word inside one (after a space, ``_``, ``-``, …). So a
segment prefix matches (``lis`` → ``Lisboa``, ``2024/lis`` → ``2024/Lisboa``), a later word of a segment too
(``lisboa`` → ``Été à Lisboa``), and every folder below a matching one. A string inside a word does not
(``boa`` is not ``Lisboa``): for that, and for typos, :func:`close_folder_names` names the folders that come close.

The database holds the folders as they are on disk; the folding and matching run here, over the distinct folders
(:meth:`indexer.store.metadata.MetadataStore.folder_values`), and the search is restricted to the folders that
match — the same answer on SQLite and PostgreSQL, whose own case and accent rules differ.
"""

from __future__ import annotations

import difflib
import functools
import os
import re
import unicodedata
from collections.abc import Iterable, Sequence

_WORD_SPLIT = re.compile(r"[\W_]+")


@functools.lru_cache(maxsize=200_000)  # the same folders and places are folded at every filtered query
def fold(text: str) -> str:
    """``text`` compared as people read it: NFC, accents stripped, case folded."""
    decomposed = unicodedata.normalize("NFD", text)
    bare = "".join(char for char in decomposed if not unicodedata.combining(char))
    return unicodedata.normalize("NFC", bare.casefold())


def _word_starts(folded: str, query: str) -> bool:
    """Whether ``query`` occurs in ``folded`` where a word begins (at the start, or after a non-alphanumeric)."""
    start = folded.find(query)
    while start != -1:
        if start == 0 or not folded[start - 1].isalnum():
            return True
        start = folded.find(query, start + 1)
    return False


def folder_query(text: str) -> str:
    """The folded form of what was typed, without slashes at either end (``Lisboa/`` is ``lisboa``)."""
    return fold(text).strip("/")


def matching_folders(text: str, folders: Iterable[str]) -> list[str]:
    """The ``folders`` (stored paths) that ``text`` finds (module docstring), in the order given."""
    query = folder_query(text)
    if not query:
        return []
    return [folder for folder in folders if _word_starts(fold(folder), query)]


def close_folder_names(text: str, folders: Iterable[str], limit: int = 5) -> list[str]:
    """Names of folders (path segments below the folder all photos share, as on disk) that come close to ``text``
    when none matches it: those that contain it inside a word, then those spelled alike — the whole name or one of
    its words (``difflib``'s ratio ≥ 0.6) — at most ``limit``."""
    query = folder_query(text).rsplit("/", 1)[-1]
    names: dict[str, str] = {}  # folded segment → the segment as on disk (the first met)
    words: dict[str, str] = {}  # folded word of a segment → that segment ("lisboa" → "Été à Lisboa")
    known = list(folders)
    # The folders the library shares above its photos (/home/me/Pictures) are no suggestion: what lies below is.
    try:
        above = os.path.commonpath([os.path.dirname(folder) for folder in known]) if known else ""
    except ValueError:  # absolute and relative folders mixed: nothing is shared
        above = ""
    for folder in known:
        below = folder[len(above) :] if folder.startswith(above) else folder
        for segment in below.split("/"):
            if segment:
                folded = fold(segment)
                names.setdefault(folded, segment)
                for word in _WORD_SPLIT.split(folded):
                    if word:
                        words.setdefault(word, segment)
    if not query:
        return []
    inside = sorted((name for folded, name in names.items() if query in folded), key=len)
    alike = [names[folded] for folded in difflib.get_close_matches(query, list(names), n=limit, cutoff=0.6)]
    alike_word = [words[word] for word in difflib.get_close_matches(query, list(words), n=limit, cutoff=0.6)]
    return list(dict.fromkeys([*inside, *alike, *alike_word]))[:limit]


def describe_no_match(text: str, close: Sequence[str]) -> str:
    """The one-line answer when no folder matches (the API's 422 and the CLI's error say the same)."""
    if not close:
        return f"no folder matches {text[:100]!r}"
    return f"no folder matches {text[:100]!r}; folders with close names: " + ", ".join(repr(n) for n in close)
