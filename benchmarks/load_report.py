"""The Markdown page of a ``benchmarks/load_search.py`` report (JSON → table)."""

from __future__ import annotations

from typing import Any


def markdown(report: dict[str, Any]) -> str:
    server, machine = report["server"], report["machine"]
    lines = [
        "# Load test: `GET /search` (text encoding included)",
        "",
        f"Command: `{report['command']}`",
        "",
        f"Server: one uvicorn process on 127.0.0.1, {server['images']:,} images"
        + (f" (index kind `{server['index_kind']}`)" if server.get("index_kind") else "")
        + (f", ready {report['startup_s']} s after it started" if report.get("startup_s") else "")
        + f", text encoder `{server['text_encoder']}` (`{report['tower']}`) for every language"
        f", image encoder `{server['image_encoder']}`, k = {report['k']}, query cache off"
        f" (every query is a distinct caption in {'/'.join(report.get('langs', ['en', 'de', 'fr', 'pt']))} with its `lang`, "
        f"languages in turn; encoder per language, from the answers: {encoders(report)}). "
        f"Client: {'wrk (C)' if report.get('client') == 'wrk' else 'httpx async (Python)'} on the same machine.",
        f"Machine: {machine['cpus']} CPUs ({machine['platform']}), load average {machine['load_avg_start']:.1f} at the start and "
        f"{machine['load_avg_1m']:.1f} at the end (load generator and server share the cores).",
        f"Each level ran {report.get('repeat', 1)} time(s), {report.get('seconds', '?')} s each; a row is the run with the median req/s.",
        "",
        "| clients | requests | req/s | p50 ms | p95 ms | p99 ms | mean ms | errors | all runs: req/s, p50 / p99 ms |",
        "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- |",
    ]
    for r in report["results"]:
        runs = "; ".join(f"{run['rps']}, {run['p50_ms']} / {run['p99_ms']}" for run in r.get("runs", [r]))
        lines.append(
            f"| {r['clients']} | {r['requests']} | {r['rps']} | {r['p50_ms']} | {r['p95_ms']} | {r['p99_ms']} |"
            f" {r['mean_ms']} | {r['errors'] or 'none'} | {runs} |"
        )
    lines += language_table(
        report,
        "mixed_by_lang",
        "The mixed load, each language's own latency: one wrk per language at the same time against the same "
        "server (the connections split between the languages in turn, e.g. 8 over 7: en 2, the others 1; each "
        "wrk its own latency histogram):",
        "connections",
    )
    lines += language_table(
        report,
        "per_lang",
        "Each language on its own (the same server, every query a distinct dev caption of that language; "
        "`encoder`: the one that answered, from the server's answers):",
        "clients",
    )
    lines += [
        "",
        "Reference: `GET /health` through the same server and client (no search work: HTTP stack + load generator):",
        "",
        "| clients | requests | req/s | p50 ms | p95 ms | p99 ms |",
        "| ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for b in report["baseline"]:
        lines.append(
            f"| {b['clients']} | {b['requests']} | {b['rps']} | {b['p50_ms']} | {b['p95_ms']} | {b['p99_ms']} |"
        )
    return "\n".join(lines) + "\n"


def language_table(report: dict[str, Any], key: str, intro: str, count: str) -> list[str]:
    """One row per language and level of ``report[key]`` (none when the report has no such runs)."""
    if not report.get(key):
        return []
    lines = [
        "",
        intro,
        "",
        f"| lang | encoder | {count} | req/s | p50 ms | p95 ms | p99 ms | all runs: req/s, p50 / p99 ms |",
        "| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |",
    ]
    for lang, rows in report[key].items():
        encoder = report.get("encoders", report.get("routes", {})).get(lang, "?")
        for r in rows:
            runs = "; ".join(f"{run['rps']}, {run['p50_ms']} / {run['p99_ms']}" for run in r.get("runs", [r]))
            lines.append(
                f"| {lang} | {encoder} | {r['clients']} | {r['rps']} | {r['p50_ms']} | {r['p95_ms']} | {r['p99_ms']} "
                f"| {runs} |"
            )
    return lines


def encoders(report: dict[str, Any]) -> str:
    """``en `e5-student`, de `e5-student`…`` (older reports call it ``routes``)."""
    found = report.get("encoders", report.get("routes", {}))
    return ", ".join(f"{lang} `{name}`" for lang, name in found.items()) or "not recorded"
