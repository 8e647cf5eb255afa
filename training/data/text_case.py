"""How people type a name: lower-case, Capitalised or UPPER.

The dictionaries and most class names are lower-case, but people type "Panda" and "PANDA", and German
capitalises every noun. Training shows a drawn word or name in one of these forms (``training.student.words``),
and ``polyglot evaluate --query-case`` puts every wide-dev query in one of them to measure what that buys.
"""

from __future__ import annotations

CASE_FORMS = ("lower", "capitalised", "upper")


def in_case(text: str, form: str) -> str:
    """``text`` in ``form``: ``capitalised`` upper-cases the first letter only ("Great white shark")."""
    if form == "lower":
        return text.lower()
    if form == "capitalised":
        return text[:1].upper() + text[1:]
    if form == "upper":
        return text.upper()
    raise ValueError(f"unknown case form {form!r}; one of {', '.join(CASE_FORMS)}")
