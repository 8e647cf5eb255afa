"""Training SMALR and its baselines (``polyglot train smalr --method smalr|hem|la``), Burns et al. 2020.

``vocabulary`` builds the hybrid vocabulary from the training captions, ``word_vectors`` the 50-d word features
(FastText ``.vec`` files, or a bundled sentence encoder applied to each word), ``pretrain`` learns the
rare-word → latent-token assignment, ``network`` is the trainable model, ``train`` the loop. Inference is in
:mod:`indexer.smalr`.
"""
