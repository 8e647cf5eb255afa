"""LASER2 (Artetxe & Schwenk 2019): 1024-d language-agnostic sentence embeddings for 93 languages.

Optional extra (``pip install sentencepiece sacremoses``); loaded from a local folder, never downloaded here.

Why not the ``laser_encoders`` package: it imports fairseq at import time, and fairseq does not install on
Python 3.11+. LASER2 itself is a plain BiLSTM with max-pooling, so this module loads its checkpoint with torch
and reproduces the package's preprocessing exactly: non-printing characters → space, Moses punctuation
normalisation (Moses 4.0 parity), lower-casing, SentencePiece pieces, ``</s>`` appended. LASER3 (fairseq
transformers) is not supported.

Files: ``laser2.pt`` and ``laser2.spm`` in ``MODELS_DIR/laser/`` (spec ``laser``) or in ``<folder>`` (spec
``laser:<folder>``). Fetch them once on a machine with internet access, e.g.::

    pip install laser_encoders
    python -m laser_encoders.download_models --laser laser2 --model-dir <folder>
"""

from __future__ import annotations

import logging
import pickle
import re
import threading
import unicodedata
from collections.abc import Sequence
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np

from indexer.encoders.base import TextEncoder
from indexer.encoders.languages import LASER_93

log = logging.getLogger(__name__)

WEIGHTS_FILE = "laser2.pt"
SPM_FILE = "laser2.spm"
_SPACES = re.compile(r"\s+")
# Fixed by LASER's training code, whatever the checkpoint's dictionary says.
BOS, PAD, EOS, UNK = 0, 1, 2, 3


class LaserUnavailableError(RuntimeError):
    """The optional LASER extra or its model files are missing; the message says how to get them."""


@cache
def _non_printing() -> frozenset[str]:
    # Unicode category C* (control, format, unassigned, private use, surrogate), as LASER's unicategories["C"].
    return frozenset(chr(c) for c in range(0x110000) if unicodedata.category(chr(c)).startswith("C"))


def build_lstm(params: dict[str, Any]) -> Any:
    """The LASER2 BiLSTM encoder module (parameter names match the released checkpoint)."""
    import torch
    from torch import nn

    class LaserLstm(nn.Module):
        def __init__(
            self,
            num_embeddings: int,
            padding_idx: int,
            embed_dim: int = 320,
            hidden_size: int = 512,
            num_layers: int = 1,
            bidirectional: bool = False,
            **_: Any,  # left_pad, padding_value: fixed by how we batch
        ) -> None:
            super().__init__()
            self.padding_idx = padding_idx
            self.output_units = hidden_size * (2 if bidirectional else 1)
            self.embed_tokens = nn.Embedding(num_embeddings, embed_dim, padding_idx=padding_idx)
            self.lstm = nn.LSTM(embed_dim, hidden_size, num_layers=num_layers, bidirectional=bidirectional)

        def forward(self, tokens: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
            x = self.embed_tokens(tokens).transpose(0, 1)  # T x B x C
            packed = nn.utils.rnn.pack_padded_sequence(x, lengths.cpu(), enforce_sorted=False)
            out, _ = self.lstm(packed)
            x, _ = nn.utils.rnn.pad_packed_sequence(out, padding_value=0.0, total_length=tokens.shape[1])
            padding = tokens.eq(self.padding_idx).t().unsqueeze(-1)
            # Max-pool over time, padded steps excluded.
            return x.float().masked_fill(padding, float("-inf")).max(dim=0).values

    return LaserLstm(**params)


class LaserEncoder(TextEncoder):
    dim = 1024
    languages = LASER_93

    def __init__(self, path: str | None, models_dir: Path, device: str = "cpu", batch_size: int = 64) -> None:
        super().__init__()
        self.folder = Path(path).expanduser() if path else Path(models_dir) / "laser"
        self.name = f"laser:{path}" if path else "laser"
        self.device = device
        self.batch_size = batch_size
        self._model: Any = None
        self._dictionary: dict[str, int] = {}
        self._spm: Any = None
        self._normalizer: Any = None
        self._lock = threading.Lock()

    def _load(self) -> None:
        try:
            import sentencepiece
            from sacremoses import MosesPunctNormalizer
        except ImportError as exc:
            raise LaserUnavailableError(
                f"the LASER encoder needs the optional extra: pip install sentencepiece sacremoses ({exc})"
            ) from exc
        missing = [name for name in (WEIGHTS_FILE, SPM_FILE) if not (self.folder / name).is_file()]
        if missing:
            raise LaserUnavailableError(
                f"LASER2 model files missing in {self.folder}: {', '.join(missing)}. Fetch them once with "
                f"`pip install laser_encoders && python -m laser_encoders.download_models --laser laser2 "
                f"--model-dir {self.folder}` (or copy them there); they are never downloaded at run time"
            )
        import torch

        checkpoint = _load_checkpoint(self.folder / WEIGHTS_FILE)
        if "params" not in checkpoint:
            raise LaserUnavailableError(
                f"{self.folder / WEIGHTS_FILE} is not a LASER2 (LSTM) checkpoint; LASER3 needs fairseq, unsupported"
            )
        model = build_lstm(dict(checkpoint["params"]))
        model.load_state_dict(checkpoint["model"])
        self._model = model.eval().to(torch.device(self.device))
        self._dictionary = {str(k): int(v) for k, v in checkpoint["dictionary"].items()}
        self.dim = int(model.output_units)
        self._spm = sentencepiece.SentencePieceProcessor(model_file=str(self.folder / SPM_FILE))
        normalizer = MosesPunctNormalizer("en", perl_parity=True)
        # Parity with Moses release 4.0, as the reference implementation does.
        normalizer.substitutions[21] = ("‘", r'"')
        normalizer.substitutions[22] = ("‚", r'"')
        self._normalizer = normalizer

    def tokenize(self, text: str) -> list[str]:
        """LASER preprocessing: SentencePiece pieces of the normalised, lower-cased text."""
        non_printing = _non_printing()
        cleaned = "".join(" " if c in non_printing else c for c in text)
        cleaned = self._normalizer.normalize(cleaned).lower()
        pieces = " ".join(self._spm.encode(cleaned, out_type=str))
        return _SPACES.sub(" ", pieces).strip().split()

    def token_ids(self, text: str) -> list[int]:
        return [self._dictionary.get(piece, UNK) for piece in self.tokenize(text)] + [EOS]

    def _predict(self, texts: Sequence[str]) -> np.ndarray:
        import torch

        rows = [self.token_ids(text) for text in texts]
        out = np.zeros((len(rows), self.dim), dtype=np.float32)
        with self._lock, torch.inference_mode():
            for start in range(0, len(rows), self.batch_size):
                chunk = rows[start : start + self.batch_size]
                width = max(len(r) for r in chunk)
                tokens = torch.full((len(chunk), width), PAD, dtype=torch.long)
                for i, ids in enumerate(chunk):
                    tokens[i, : len(ids)] = torch.tensor(ids)
                lengths = torch.tensor([len(r) for r in chunk])
                out[start : start + len(chunk)] = self._model(tokens.to(self.device), lengths).cpu().numpy()
        return out


def _load_checkpoint(path: Path) -> dict[str, Any]:
    import torch

    try:
        return dict(torch.load(path, map_location="cpu", weights_only=True))
    except pickle.UnpicklingError:
        # Checkpoints saved by old fairseq-era torch may pickle plain objects the safe loader refuses. The file
        # comes from the administrator's own models folder, never from a request, so a full load is acceptable.
        log.warning("loading LASER checkpoint with weights_only=False", extra={"path": str(path)})
        return dict(torch.load(path, map_location="cpu", weights_only=False))
