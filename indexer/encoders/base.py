"""Abstract encoders: construct cheaply, ``load()`` once (never in ``__init__``), then ``predict()``.

Image encoders return the frozen pooled feature vector of an ImageNet CNN (no trainable layer on the image
side) and can turn those features into ImageNet class probabilities with the CNN's own classifier head.
Text encoders return one l2-normalised sentence embedding per text, in any language they declare.
"""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import Any

import numpy as np
from PIL import Image


class EncoderNotLoadedError(RuntimeError):
    pass


class Encoder(ABC):
    """Common life cycle: cheap constructor, explicit ``load()``, thread-safe ``predict()`` afterwards."""

    name: str = ""

    def __init__(self) -> None:
        self._loaded = False
        self._load_lock = threading.Lock()  # one encoder object is shared by the index, the service and the tagger

    @property
    def loaded(self) -> bool:
        return self._loaded

    def __getstate__(self) -> dict[str, Any]:
        """An encoder is shipped to distributed workers as its configuration, before ``load()``: each worker
        loads the weights itself, once (indexer/distributed/ray_embed.py)."""
        if self._loaded:
            raise TypeError(f"encoder {self.name!r} is loaded: send it to workers before load()")
        state = dict(self.__dict__)
        state.pop("_load_lock")
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._load_lock = threading.Lock()

    @property
    def cache_name(self) -> str:
        """The features cache's key for this encoder's vectors: the name, unless a backend gives vectors that
        differ beyond the tolerance that lets backends share a cache (then ``name@backend``)."""
        return self.name

    def load(self) -> None:
        """Read weights from disk (idempotent, thread-safe). Never downloads unless the encoder is a hub encoder."""
        if self._loaded:
            return
        with self._load_lock:
            if not self._loaded:
                self._load()
                self._loaded = True

    @abstractmethod
    def _load(self) -> None: ...

    def _require_loaded(self) -> None:
        if not self._loaded:
            raise EncoderNotLoadedError(f"encoder {self.name!r} used before load()")


class ImageEncoder(Encoder):
    """Frozen CNN: ``predict`` gives pooled features (n, dim); ``classify`` maps them to class probabilities."""

    dim: int = 0
    #: ``predict_prepared(..., threads=1)`` runs the call on the calling thread alone: the indexer then runs one
    #: call per core, each overlapping its own decoding (indexer/store/core.py), instead of one call spread over
    #: the cores. Encoders that cannot choose threads per call leave it False and get one call at a time.
    per_call_threads: bool = False

    @property
    def decode_side(self) -> int | None:
        """The smallest short side an image must keep for this encoder's preprocessing: the indexer decodes
        photos at a reduced size down to it (:func:`indexer.images.decode_image`'s ``min_side``). None: full size."""
        size = getattr(self, "input_size", None)
        if not isinstance(size, int):
            return None
        return round(size * 256 / 224) if getattr(self, "ten_crop", False) else size

    @abstractmethod
    def _predict(self, images: Sequence[Image.Image]) -> np.ndarray: ...

    @abstractmethod
    def _classify(self, features: np.ndarray) -> np.ndarray: ...

    @property
    @abstractmethod
    def class_names(self) -> list[str]:
        """Readable English names of the classifier's classes (index-aligned with ``classify``)."""

    def predict(self, images: Sequence[Image.Image]) -> np.ndarray:
        self._require_loaded()
        if not images:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.ascontiguousarray(self._predict(images), dtype=np.float32)

    def prepare(self, image: Image.Image) -> Any:
        """The per-image CPU work before the network (resize, crop, normalise), thread-safe and usable before
        ``load()``: the indexer runs it in a worker thread, overlapped with inference on the previous batch.
        Encoders without such a step return the image."""
        return image

    def predict_prepared(self, prepared: Sequence[Any], *, threads: int | None = None) -> np.ndarray:
        """``predict`` on the outputs of :meth:`prepare`; ``threads``: the intra-op threads of this call where the
        encoder can choose them per call (:attr:`per_call_threads`), else ignored. The features are the same."""
        self._require_loaded()
        if not prepared:
            return np.zeros((0, self.dim), dtype=np.float32)
        computed = self._predict_prepared(prepared) if threads is None else self._predict_prepared_on(prepared, threads)
        return np.ascontiguousarray(computed, dtype=np.float32)

    def _predict_prepared(self, prepared: Sequence[Any]) -> np.ndarray:
        return self._predict(prepared)

    def _predict_prepared_on(self, prepared: Sequence[Any], threads: int) -> np.ndarray:
        return self._predict_prepared(prepared)

    def classify(self, features: np.ndarray) -> np.ndarray:
        """Class probabilities (n, num_classes) from pooled features, via the CNN's own linear head."""
        self._require_loaded()
        return np.ascontiguousarray(self._classify(np.atleast_2d(features)), dtype=np.float32)

    def classifier_head(self) -> tuple[np.ndarray, np.ndarray]:
        """The linear head: weight (dim, num_classes) and bias (num_classes,), float32, each up to a constant
        over the classes (which softmax cannot see). The student's concept targets are read from it."""
        self._require_loaded()
        eye = np.eye(self.dim, dtype=np.float32)
        # Logits are not exposed, but the head is linear: log-probabilities of the basis vectors and of zero
        # differ from the logits by one constant per row, which the differences below cancel.
        zero = np.log(np.maximum(self._classify(np.zeros((1, self.dim), dtype=np.float32)), 1e-30))
        basis = np.log(np.maximum(self._classify(eye), 1e-30))
        weight = (basis - basis.mean(axis=1, keepdims=True)) - (zero - zero.mean(axis=1, keepdims=True))
        bias = zero[0] - zero[0].mean()
        return weight.astype(np.float32), bias.astype(np.float32)


class TextEncoder(Encoder):
    """Multilingual sentence encoder: ``predict`` gives l2-normalised embeddings (n, dim)."""

    dim: int = 0
    #: ISO 639-1 codes the model was trained on; ``None`` means "not declared" (accept any code).
    languages: frozenset[str] | None = None

    @abstractmethod
    def _predict(self, texts: Sequence[str]) -> np.ndarray: ...

    @property
    def weights_digest(self) -> str | None:
        """Identity of weights this encoder reads beyond those its name fixes (a student's trained trunk), or
        None: the text side's fingerprint (:func:`indexer.tower.tower_fingerprint`) hashes it when there is one."""
        return None

    @property
    def parts(self) -> Sequence[TextEncoder]:
        """The encoders whose unit vectors this one concatenates (a hybrid such as ``muse+e5-small``, which a
        plugin registers); empty for a single encoder. Caches and alignments see each part on its own."""
        return ()

    def combine(self, embeddings: Sequence[np.ndarray]) -> np.ndarray:
        """This encoder's vectors from its parts' (also used on cached part embeddings); only a hybrid has parts."""
        raise NotImplementedError(f"{self.name} has no parts to combine")

    def supports(self, lang: str) -> bool:
        return self.languages is None or lang.lower() in self.languages

    def predict(self, texts: Sequence[str]) -> np.ndarray:
        self._require_loaded()
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = np.asarray(self._predict(list(texts)), dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return np.ascontiguousarray(vectors / np.maximum(norms, 1e-12))
