"""Line charts of ``index_scale.py`` runs (latency and recall against collection size), drawn with Pillow so
the benchmarks need nothing the service does not already install."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw, ImageFont

COLOURS = [(31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (148, 103, 189), (140, 86, 75)]
WIDTH, HEIGHT, PAD = 560, 420, 70


def _font(size: int) -> Any:
    try:
        return ImageFont.truetype("DejaVuSans.ttf", size)
    except OSError:
        return ImageFont.load_default()


def _panel(
    draw: ImageDraw.ImageDraw,
    left: int,
    series: dict[str, list[tuple[float, float]]],
    title: str,
    y_label: str,
    y_range: tuple[float, float],
    targets: list[tuple[float, str]],
) -> None:
    font, small = _font(15), _font(12)
    x0, y0, x1, y1 = left + PAD, 40, left + WIDTH - 20, HEIGHT - 60
    xs = [x for points in series.values() for x, _ in points]
    lo, hi = math.log10(min(xs)), math.log10(max(xs))
    lo, hi = (lo - 0.5, hi + 0.5) if hi == lo else (lo - 0.1, hi + 0.1)
    y_lo, y_hi = y_range

    def at(x: float, y: float) -> tuple[float, float]:
        fx = (math.log10(x) - lo) / (hi - lo)
        fy = (min(max(y, y_lo), y_hi) - y_lo) / (y_hi - y_lo)
        return x0 + fx * (x1 - x0), y1 - fy * (y1 - y0)

    draw.rectangle((x0, y0, x1, y1), outline=(0, 0, 0))
    draw.text((x0, 10), title, fill=(0, 0, 0), font=font)
    for step in range(6):
        value = y_lo + (y_hi - y_lo) * step / 5
        _, y = at(10**lo, value)
        draw.line((x0 - 4, y, x0, y), fill=(0, 0, 0))
        draw.text((left + 5, y - 7), f"{value:g}", fill=(0, 0, 0), font=small)
    for x in sorted(set(xs)):
        px, _ = at(x, y_lo)
        draw.line((px, y1, px, y1 + 4), fill=(0, 0, 0))
        draw.text((px - 20, y1 + 8), f"{x:,.0f}", fill=(0, 0, 0), font=small)
    draw.text((x0 + (x1 - x0) // 2 - 60, y1 + 28), "photos (log scale)", fill=(0, 0, 0), font=small)
    draw.text((left + 5, y0 - 18), y_label, fill=(0, 0, 0), font=small)
    for value, label in targets:
        _, y = at(10**lo, value)
        for start in range(int(x0), int(x1), 12):
            draw.line((start, y, min(start + 6, x1), y), fill=(120, 120, 120))
        draw.text((x1 - 120, y - 15), label, fill=(90, 90, 90), font=small)
    for number, (label, points) in enumerate(series.items()):
        colour = COLOURS[number % len(COLOURS)]
        coords = [at(x, y) for x, y in sorted(points)]
        if len(coords) > 1:
            draw.line(coords, fill=colour, width=2)
        for cx, cy in coords:
            draw.ellipse((cx - 3, cy - 3, cx + 3, cy + 3), fill=colour)
        draw.text((x0 + 8, y0 + 6 + 16 * number), label, fill=colour, font=small)


def plot(runs: list[dict[str, Any]], path: Path) -> None:
    """Two panels: single-query p50/p99 latency (1 thread) and recall@10, against the collection size."""
    latency: dict[str, list[tuple[float, float]]] = {}
    recall: dict[str, list[tuple[float, float]]] = {}
    for run in runs:
        latency.setdefault(f"{run['kind']} p50", []).append((run["n"], run["p50_ms"]))
        latency.setdefault(f"{run['kind']} p99", []).append((run["n"], run["p99_ms"]))
        recall.setdefault(run["kind"], []).append((run["n"], run["recall_at_10"]))
    top = max(value for points in latency.values() for _, value in points)
    image = Image.new("RGB", (2 * WIDTH, HEIGHT), "white")
    draw = ImageDraw.Draw(image)
    _panel(draw, 0, latency, "Single-query search latency (1 thread)", "ms", (0, max(5.0, math.ceil(top))), [])
    low = min(value for points in recall.values() for _, value in points)
    _panel(
        draw, WIDTH, recall, "Recall@10 against exact search", "recall@10", (min(0.9, math.floor(low * 20) / 20), 1.0),
        [(0.95, "target 0.95")],
    )
    image.save(path)
