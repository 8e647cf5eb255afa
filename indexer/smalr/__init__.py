"""SMALR text side at query time (Burns et al., "Learning to Scale Multilingual Representations for
Vision-Language Tasks"): a word-level tokenizer and hybrid vocabulary (``vocab``), a GRU language branch in numpy
(``gru``), the tower that holds the weights and the image-branch map (``tower``) and its embedder (``embedder``).
Training lives in :mod:`training.smalr`; this package imports nothing from it."""

from indexer.smalr.embedder import SmalrEmbedder, is_smalr_folder
from indexer.smalr.tower import SmalrTower
from indexer.smalr.vocab import SmalrVocab, tokenize

__all__ = ["SmalrEmbedder", "SmalrTower", "SmalrVocab", "is_smalr_folder", "tokenize"]
