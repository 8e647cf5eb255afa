"""How people type a name: lower-case, Capitalised or UPPER.

The dictionaries and most class names are lower-case, but people type "Panda" and "PANDA", and German
capitalises every noun. Training shows a drawn word or name in one of these forms (``training.student.words``),
and ``polyglot evaluate --query-case`` puts every wide-dev query in one of them to measure what that buys.
"""

from __future__ import annotations

from indexer.query.pipeline import DOTTED_I_LANGUAGES, lower_case

CASE_FORMS = ("lower", "capitalised", "upper")


def _upper_case(text: str, lang: str | None) -> str:
    # A Turkish keyboard writes "kedi" in capitals as "KEDİ" and "ırmak" as "IRMAK"; str.upper() gives "KEDI".
    if lang in DOTTED_I_LANGUAGES:
        text = text.replace("i", "İ").replace("ı", "I")
    return text.upper()


def in_case(text: str, form: str, lang: str | None = None) -> str:
    """``text`` in ``form``, as a keyboard for ``lang`` types it (the dotted and dotless i of Turkish and
    Azerbaijani): ``capitalised`` upper-cases the first letter only ("Great white shark")."""
    if form == "lower":
        return lower_case(text, lang)
    if form == "capitalised":
        return _upper_case(text[:1], lang) + text[1:]
    if form == "upper":
        return _upper_case(text, lang)
    raise ValueError(f"unknown case form {form!r}; one of {', '.join(CASE_FORMS)}")
