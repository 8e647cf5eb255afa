"""The markdown page of an ``index_scale.py`` report."""

from __future__ import annotations

from typing import Any


def markdown(report: dict[str, Any]) -> str:
    machine = report["machine"]
    lines = [
        "# Index kinds at scale: 10 thousand to a million photos",
        "",
        f"Command: `{report['command']}` ({report['seconds']:.0f} s)",
        "",
        f"Collections: the {report['real_images']:,} real {report['dim']}-d image vectors of the shared data, then "
        "synthetic vectors drawn from a Gaussian mixture fitted on them (16 k-means components sharing the pooled "
        "within-cluster covariance, l2-normalised: `benchmarks/scale_data.py`; the last table compares it with the "
        "real vectors). Queries: "
        f"{report['queries']} dev captions embedded by the shipped mUSE tower. Recall@{report['k']} against exact "
        "inner-product search over the same collection. Machine: "
        f"{machine['cpus']} CPUs ({machine['platform']}), load average {machine['load_avg_start']:.1f} at the start "
        f"and {machine.get('load_avg_end', 0):.1f} at the end (a shared machine).",
        "",
        "Per photo: **RAM** = growth of the searching process's anonymous resident memory (RssAnon, /proc) from "
        "before opening to after all queries, / n; **page cache** = file pages it mapped (memory-mapped vectors "
        "read for re-ranking: shared with the OS cache, reclaimable); **disk** = all index files. **open** = cold "
        "start (the index files dropped from the page cache first). Latency: one query per call, k = 10, "
        "warm page cache, FAISS with 1 or 2 threads; **cold** = the first pass right after the cold open.",
        "",
        "| n | kind | chosen | build s | open s | RAM B/photo | page cache B/photo | disk B/photo |"
        " p50 ms | p99 ms | p50 / p99 ms, 2 threads | cold p50 / p99 ms | recall@10 |",
        "| ---: | --- | :---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for r in report["runs"]:
        lines.append(
            f"| {r['n']:,} | `{r['kind']}` | {'yes' if r['chosen'] else ''} | {r['build_s']} | {r['open_s']} | "
            f"{r['ram_bytes_per_image']:,} | {r['page_cache_bytes_per_image']:,} | {r['disk_bytes_per_image']:,} | "
            f"{r['p50_ms']} | {r['p99_ms']} | {r['p50_ms_2t']} / {r['p99_ms_2t']} | "
            f"{r['cold_p50_ms']} / {r['cold_p99_ms']} | {r['recall_at_10']:.4f} |"
        )
    writes = [r for r in report["runs"] if "add_one_ms" in r]
    if writes:
        lines += ["", "One photo added (rows appended + fsync, codes encoded) and deleted (tombstone + fsync), no rebuild:", ""]
        lines += [f"- {r['n']:,} `{r['kind']}`: add {r['add_one_ms']} ms, delete {r['delete_one_ms']} ms" for r in writes]
        lines += [""]
    sweeps = [r for r in report["runs"] if r.get("sweep")]
    if sweeps:
        lines += [
            "Search settings of `ivf-pq-mmap` (same index, 1 thread, warm): lists probed and candidates re-ranked "
            "per result (`POLYGLOT_INDEX_MMAP_NPROBE`, `POLYGLOT_INDEX_MMAP_RERANK`).",
            "",
            "| n | kind | nlist | nprobe | rerank | p50 ms | p99 ms | recall@10 |",
            "| ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
        ]
        for r in sweeps:
            for s in r["sweep"]:
                lines.append(
                    f"| {r['n']:,} | `{r['kind']}` | {s['nlist']} | {s['nprobe']} | {s['rerank']} | {s['p50_ms']} | "
                    f"{s['p99_ms']} | {s['recall_at_10']:.4f} |"
                )
    if "calibration" in report:
        lines += [
            "",
            "Real against synthetic ({:,} vectors each, the same queries): is the synthetic data as hard to search? "
            "`nn cosine`: mean cosine of a vector to its nearest other vector; recall of an inverted file "
            "(128 lists, exact distances) probing 4 and 16 lists.".format(report["real_images"]),
            "",
            "| collection | mean top-1 cosine | mean 10th cosine | nn cosine | IVF recall@10, 4 lists | 16 lists |",
            "| --- | ---: | ---: | ---: | ---: | ---: |",
        ]
        for name, c in report["calibration"].items():
            lines.append(
                f"| {name} | {c['top1_cosine']} | {c['top10_cosine']} | {c['nn_cosine']} | "
                f"{c['ivf128_nprobe4_recall']} | {c['ivf128_nprobe16_recall']} |"
            )
    if report.get("notes"):
        lines += ["", *report["notes"]]
    return "\n".join(lines) + "\n"
