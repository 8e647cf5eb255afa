"""Markdown tables of a tagging evaluation report (:mod:`training.evaluation.tagging_eval`): per-method precision@5 and
content recall, the W1 sweep, and the zero-shot ImageNet label check."""

from __future__ import annotations

from typing import Any

from training.evaluation.tagging_methods import METHOD_ORDER, SOURCE_KINDS


def sweep_markdown(report: dict[str, Any], sweep: list[float]) -> str:
    header = " | ".join(f"W1={w:g}" for w in sweep)
    lines = [f"| lang | source tags | {header} |", "| --- | --- | " + " | ".join("---:" for _ in sweep) + " |"]
    for lang, methods in report["results"].items():
        for kind in SOURCE_KINDS:
            cells = [methods.get(f"sweep-{w:g}/{kind}", {}).get("precision@5") for w in sweep]
            lines.append(f"| {lang} | {kind} | " + " | ".join("—" if c is None else f"{c:.3f}" for c in cells) + " |")
    return "\n".join(lines) + "\n"


def imagenet_markdown(check: dict[str, Any]) -> str:
    lines = [
        "| lang | labels | sources scored | contextual | image-only | text-only |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for lang, row in check.items():
        note = "" if row["covered_by_text_encoder"] else " (not in text encoder)"
        lines.append(
            f"| {lang}{note} | {row['labels']} | {row['sources_scored']} | {row['contextual']:.3f} | "
            f"{row['image-only']:.3f} | {row['text-only']:.3f} |"
        )
    return "\n".join(lines) + "\n"


def markdown(report: dict[str, Any], key: str = "results") -> str:
    """Per language × source kind: precision@5 and content recall of every method (contextual first)."""
    lines = [
        f"Split `{report['split']}` (skipping the first {report['skip']}), {report['images']} images, k = {report['k']} tags per image, "
        f"W1 = {report['w1']}, W2 = {report['w2']}; tower `{report['tower']['fingerprint']}` "
        f"({report['tower']['text_encoder']} → {report['tower']['image_encoder']}).",
        "",
        "| lang | source tags | vocabulary | "
        + " | ".join(f"{m} P@5" for m in METHOD_ORDER)
        + " | "
        + " | ".join(f"{m} R" for m in METHOD_ORDER)
        + " |",
        "| --- | --- | ---: | " + " | ".join("---:" for _ in METHOD_ORDER * 2) + " |",
    ]
    for lang, methods in report[key].items():
        covered = "" if report["text_encoder_covers"][lang] else " (not in text encoder)"
        for kind in SOURCE_KINDS:
            cells = []
            for metric in ("precision@5", "content_recall"):
                for method in METHOD_ORDER:
                    block = methods.get(f"{method}/{kind}")
                    cells.append(f"{block[metric]:.3f}" if block else "—")
            lines.append(
                f"| {lang}{covered} | {kind} | {report['vocabulary_sizes'][lang]} | " + " | ".join(cells) + " |"
            )
    return "\n".join(lines) + "\n"
