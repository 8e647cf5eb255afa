"""SMALR (Burns et al., "Learning to Scale Multilingual Representations for Vision-Language Tasks", ECCV 2020).

At query time: a word-level tokenizer and hybrid vocabulary (``vocab``), a GRU language branch in numpy
(``gru``), the tower that holds the weights and the image-branch map (``tower``) and its embedder (``embedder``),
which the encoder factory serves for a SMALR folder once the lab has registered it (:mod:`training.plugin`).

Training (``polyglot train smalr --method smalr|hem|la``): ``vocabulary`` builds the hybrid vocabulary from the
training captions, ``word_vectors`` the 50-d word features (FastText ``.vec`` files, or a bundled sentence encoder
applied to each word), ``pretrain`` learns the rare-word → latent-token assignment, ``network`` is the trainable
model, ``train`` the loop.
"""

from training.smalr.embedder import SmalrEmbedder, is_smalr_folder
from training.smalr.tower import SmalrTower
from training.smalr.vocab import SmalrVocab, tokenize

__all__ = ["SmalrEmbedder", "SmalrTower", "SmalrVocab", "is_smalr_folder", "tokenize"]
