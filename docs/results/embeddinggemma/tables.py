"""Print the markdown tables of docs/embeddinggemma.md and the README from the evaluation JSONs here."""

import json
import sys
from pathlib import Path

HERE = Path(__file__).parent


def row(name: str, path: Path, langs: list[str], r1: bool) -> str:
    d = json.loads(path.read_text())["languages"]
    cells = []
    for lang in langs:
        t2i = d[lang]["t2i"]
        cells.append(f"{t2i['r10']:.3f}" + (f" / {t2i['r1']:.3f}" if r1 else ""))
    return f"| {name} | " + " | ".join(cells) + " |"


def table(files: list[tuple[str, str]], r1: bool) -> None:
    first = json.loads((HERE / files[0][1]).read_text())["languages"]
    langs = sorted(first, key=lambda lang: (lang != "en", lang))
    counts = ", ".join(f"{lang} {first[lang]['queries']}" for lang in langs)
    print(f"queries: {counts}\n")
    print("| text side | " + " | ".join(langs) + " |")
    print("| --- | " + " | ".join("---:" for _ in langs) + " |")
    for name, file in files:
        print(row(name, HERE / file, langs, r1))
    print()


if __name__ == "__main__":
    wide = sys.argv[1] if len(sys.argv) > 1 else "wide"
    table(
        [("student (default)", "flickr-subset-student.json"), ("EmbeddingGemma + tower", "flickr-subset-gemma.json")],
        False,
    )
    table([("student (default)", f"{wide}-student.json"), ("EmbeddingGemma + tower", f"{wide}-gemma.json")], True)
