"""Traditional → simplified Chinese, the script most users in mainland China type.

MUSE's en–zh dictionary is written in traditional characters (金魚, 鯊魚); the student's word data and the
shipped tag vocabularies both add the simplified forms (金鱼, 鲨鱼) with OpenCC's ``t2s`` tables (a PyPI wheel,
Apache-2.0, offline). One converter for both, so that the words the student learns and the tags it is asked to
rank are written the same way.
"""

from __future__ import annotations

from collections.abc import Callable


def simplified_chinese() -> Callable[[str], str]:
    """A function that writes a text in simplified characters (text without traditional ones comes back as is)."""
    import opencc  # imported here: only the Chinese data needs its tables

    converter = opencc.OpenCC("t2s")
    return lambda text: str(converter.convert(text))
