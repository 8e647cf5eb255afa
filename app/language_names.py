"""English names for language codes, for the web page's selector (unknown codes show as themselves)."""

from __future__ import annotations

from collections.abc import Iterable

_NAMES = {
    "af": "Afrikaans", "az": "Azerbaijani", "be": "Belarusian", "br": "Breton", "bs": "Bosnian", "ar": "Arabic", "bg": "Bulgarian", "bn": "Bengali", "ca": "Catalan", "cs": "Czech",
    "cy": "Welsh", "da": "Danish", "de": "German", "el": "Greek", "en": "English", "eo": "Esperanto", "es": "Spanish",
    "et": "Estonian", "eu": "Basque", "fa": "Persian", "fi": "Finnish", "fr": "French", "fy": "Western Frisian", "ga": "Irish", "gd": "Scottish Gaelic",
    "gl": "Galician", "he": "Hebrew", "hi": "Hindi", "hr": "Croatian", "hu": "Hungarian", "hy": "Armenian",
    "id": "Indonesian", "is": "Icelandic", "it": "Italian", "ja": "Japanese", "ka": "Georgian", "kk": "Kazakh", "km": "Khmer", "ku": "Kurdish", "ky": "Kyrgyz", "la": "Latin", "lo": "Lao",
    "ko": "Korean", "lt": "Lithuanian", "lv": "Latvian", "mk": "Macedonian", "ml": "Malayalam", "mn": "Mongolian", "mr": "Marathi", "my": "Burmese", "ms": "Malay", "nl": "Dutch",
    "nn": "Norwegian Nynorsk", "no": "Norwegian", "pl": "Polish", "pt": "Portuguese", "ro": "Romanian", "ru": "Russian", "sk": "Slovak",
    "sl": "Slovenian", "sq": "Albanian", "sr": "Serbian", "sv": "Swedish", "sw": "Swahili", "ta": "Tamil", "te": "Telugu",
    "th": "Thai", "tl": "Tagalog", "tr": "Turkish", "uk": "Ukrainian", "ur": "Urdu", "uz": "Uzbek", "vi": "Vietnamese", "yi": "Yiddish",
    "zh": "Chinese", "zh-tw": "Chinese (Traditional)",
}  # fmt: skip


def language_names(codes: Iterable[str]) -> dict[str, str]:
    return {code: _NAMES.get(code, code) for code in sorted(set(codes))}
