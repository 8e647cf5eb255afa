"""The student's int8 graphs against its fp32 graph: cosine on held-apart training texts, and encoding time.

    .venv/bin/python benchmarks/student_int8.py --md benchmarks/student_int8.md

Graphs: fp32, ONNX Runtime's plain dynamic int8 (the export before SmoothQuant) and SmoothQuant + dynamic int8 at
each ``--alphas`` (indexer/export/e5_int8.py). The smoothing ranges are measured on the calibration sample
(training/student/int8_calibration.py, seed 0: what ``polyglot models calibrate-student`` measures), at each
sample size of ``--scales`` (the sample's texts per source times N); the cosines are over another seeded sample of
the same training sources with every calibration text taken out (seed 1). No dev text: this is where the sample size
is chosen.
``--fp32-shares``: at each share, the Linears whose int8 moves the vectors most per multiply (measured on the
calibration sample, training/student/int8_sensitivity.py) stay fp32 until that share of the multiplies is fp32;
where the share is chosen, by the same held-apart texts. ``--roundings nearest,gptq``: the int8 weights rounded to
the nearest level, or by GPTQ on the calibration sample (training/student/int8_rounding.py).
Timing: one text of ``--tokens`` tokens, p50 of ``--runs`` runs after 5 warm-ups, one and two intra-op threads,
spinning off (as the service runs it). Run it with nothing else running; the load average is printed beside it.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from indexer.asset_paths import SHIPPED_STUDENT
from indexer.encoders.e5 import E5Weights
from indexer.export.e5 import export_encoder, quantize_int8
from indexer.export.e5_int8 import export_smoothed_int8, input_absmax
from indexer.student.model import load_trunk
from training.student.int8_calibration import ROUNDINGS, calibration_texts, padded_batches, text_inputs
from training.student.int8_rounding import input_grams, rounding_corrections
from training.student.int8_sensitivity import fp32_choice, linear_macs, linear_sensitivity
from training.student.words import read_lexicons

SHARED = Path("../shared/data")


def session(path: Path, threads: int) -> Any:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def pooled(path: Path, feeds: list[dict[str, np.ndarray]]) -> np.ndarray:
    run = session(path, 1)
    out = np.stack([run.run(None, feed)[0][0] for feed in feeds])
    return np.asarray(out / np.linalg.norm(out, axis=1, keepdims=True))


def p50_ms(path: Path, feed: dict[str, np.ndarray], threads: int, runs: int) -> float:
    run = session(path, threads)
    for _ in range(5):
        run.run(None, feed)
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        run.run(None, feed)
        times.append(time.perf_counter() - start)
    return 1000 * statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--student", type=Path, default=SHIPPED_STUDENT)
    parser.add_argument("--alphas", default="0.5,0.7,0.8,0.85")
    parser.add_argument("--scales", default="1", help="calibration sample sizes, as multiples of the default's")
    parser.add_argument("--fp32-shares", default="0", help="shares of the multiplies kept in fp32 (0: all int8)")
    parser.add_argument("--roundings", default="nearest", help=f"int8 weight roundings ({', '.join(ROUNDINGS)})")
    parser.add_argument("--tokens", type=int, default=20)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--md", type=Path, default=None)
    args = parser.parse_args()
    captions = [SHARED / "m30k-text" / "captions.jsonl", SHARED / "more-langs" / "text-captions.jsonl"]
    tables = read_lexicons(SHARED / "lexicons")
    scales = [int(value) for value in args.scales.split(",")]
    calibrations = {scale: calibration_texts(captions, tables, scale=scale) for scale in scales}
    calibrated = {text for texts in calibrations.values() for text in texts}
    held = [text for text in calibration_texts(captions, tables, seed=1) if text not in calibrated]
    weights = E5Weights()
    trunk = load_trunk(args.student, weights)
    absmax = {scale: input_absmax(trunk, text_inputs(texts, weights)) for scale, texts in calibrations.items()}
    feeds = [{"embeddings": e.numpy(), "mask": m.numpy()} for e, m in text_inputs(held, weights)]
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="student-int8-") as scratch:
        folder = Path(scratch)
        graphs = {"fp32": folder / "fp32.onnx", "int8, plain": folder / "plain.onnx"}
        export_encoder(trunk, graphs["fp32"], None)
        quantize_int8(graphs["fp32"], graphs["int8, plain"])
        shares = [float(value) for value in args.fp32_shares.split(",")]
        if not set(args.roundings.split(",")) <= set(ROUNDINGS):
            parser.error(f"--roundings: each one of {', '.join(ROUNDINGS)}")
        roundings = args.roundings.split(",")
        for scale in scales:
            smoothed_inputs = padded_batches(list(text_inputs(calibrations[scale], weights)))
            grams = input_grams(trunk, smoothed_inputs) if "gptq" in roundings else {}
            for alpha in (float(value) for value in args.alphas.split(",")):
                for rounding in roundings:
                    corrections = rounding_corrections(trunk, absmax[scale], grams, alpha) if rounding == "gptq" else {}
                    sensitivity = {}
                    if any(share > 0 for share in shares):
                        sensitivity = linear_sensitivity(
                            trunk, absmax[scale], smoothed_inputs, alpha=alpha, rounding=corrections
                        )
                    for share in shares:
                        kept = fp32_choice(sensitivity, linear_macs(trunk), share) if share > 0 else {}
                        name = f"int8, SmoothQuant α {alpha}, calibration {len(calibrations[scale])} texts (×{scale})"
                        if rounding != "nearest":
                            name += f", weights rounded by {rounding}"
                        if share > 0:
                            name += f", {share:.0%} of multiplies fp32 ({len(kept)} Linears: {', '.join(kept)})"
                        graphs[name] = folder / f"smoothed-{alpha}-{scale}-{share}-{rounding}.onnx"
                        export_smoothed_int8(
                            trunk, absmax[scale], graphs[name], alpha=alpha, keep_fp32=kept, rounding=corrections
                        )
        reference = pooled(graphs["fp32"], feeds)
        timing_feed = {
            "embeddings": np.random.default_rng(0).standard_normal((1, args.tokens, 384)).astype(np.float32) * 0.05,
            "mask": np.ones((1, args.tokens), dtype=np.float32),
        }
        rows = []
        for name, path in graphs.items():
            cosine = (pooled(path, feeds) * reference).sum(axis=1)
            one, two = (p50_ms(path, timing_feed, threads, args.runs) for threads in (1, 2))
            rows.append(
                f"| {name} | {cosine.mean():.5f} | {cosine.min():.4f} | {np.percentile(cosine, 1):.4f} | "
                f"{one:.1f} | {two:.1f} |"
            )
    lines = [
        f"# The student's int8 graphs (`{os.path.relpath(args.student)}`)",
        "",
        f"Command: `.venv/bin/python benchmarks/student_int8.py {' '.join(sys.argv[1:])}`",
        f"Cosine to the fp32 graph's pooled vector over {len(held)} held-apart training texts (none of them in a "
        f"calibration sample); encoding time: one {args.tokens}-token input, p50 of {args.runs} runs. "
        f"Load average {load_before:.1f} at the start, {os.getloadavg()[0]:.1f} at the end.",
        "",
        "| graph | mean cosine | lowest | 1 %-quantile | ms, 1 thread | ms, 2 threads |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
        *rows,
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.md is not None:
        args.md.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
