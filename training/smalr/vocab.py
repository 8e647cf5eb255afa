"""The hybrid vocabulary of a SMALR tower: (language, word) → a row of one embedding table.

Row layout (shared by training and inference): row 0 pads, rows ``1..L`` are one unknown-word row per language,
then the language-specific rows (the K most frequent words of each language: HEM, §3.1), then the shared latent
rows (every rarer word of every language maps to one of them; LA maps every word there). Words are lower-cased
``\\w+`` runs, the same at training and query time.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from indexer.atomic import atomic_write_json

VOCAB_NAME = "vocab.json"
PAD = 0
_WORD = re.compile(r"\w+")


def tokenize(text: str) -> list[str]:
    return _WORD.findall(text.lower())


@dataclass
class SmalrVocab:
    languages: list[str]
    words: dict[str, dict[str, int]]  # lang → word → table row
    n_specific: int  # rows 1 + L .. 1 + L + n_specific - 1 are language-specific
    n_latent: int  # the latent rows follow

    @property
    def first_specific(self) -> int:
        return 1 + len(self.languages)

    @property
    def first_latent(self) -> int:
        return self.first_specific + self.n_specific

    @property
    def rows(self) -> int:
        return self.first_latent + self.n_latent

    def unk(self, lang: str) -> int:
        return 1 + self.languages.index(lang)

    def guess_language(self, tokens: Sequence[str]) -> str:
        """The language whose vocabulary knows most of the tokens (ties: the first language)."""
        known = [sum(token in self.words[lang] for token in tokens) for lang in self.languages]
        return self.languages[int(np.argmax(known))]

    def ids(self, text: str, lang: str | None) -> list[int]:
        tokens = tokenize(text)
        if lang not in self.words:  # unknown or undeclared language: the vocabulary guesses it
            lang = self.guess_language(tokens)
        table, unk = self.words[lang], self.unk(lang)
        return [table.get(token, unk) for token in tokens] or [unk]

    def batch(self, texts: Sequence[str], langs: Sequence[str | None]) -> tuple[np.ndarray, np.ndarray]:
        """Padded row ids (n, max_len) and lengths (n,) for a batch of texts."""
        rows = [self.ids(text, lang) for text, lang in zip(texts, langs, strict=True)]
        lengths = np.array([len(r) for r in rows], dtype=np.int64)
        out = np.full((len(rows), int(lengths.max(initial=1))), PAD, dtype=np.int64)
        for i, r in enumerate(rows):
            out[i, : len(r)] = r
        return out, lengths

    def save(self, folder: Path) -> None:
        atomic_write_json(
            Path(folder) / VOCAB_NAME,
            {
                "languages": self.languages,
                "n_specific": self.n_specific,
                "n_latent": self.n_latent,
                "words": self.words,
            },
        )

    @classmethod
    def load(cls, folder: Path) -> SmalrVocab:
        data = json.loads((Path(folder) / VOCAB_NAME).read_text(encoding="utf-8"))
        return cls(list(data["languages"]), data["words"], int(data["n_specific"]), int(data["n_latent"]))
