"""The research MLP tower over a frozen sentence encoder (``polyglot train tower``): the loop (``train``), its
training space (``space``), early stopping, distillation on text-only corpora (``distill``), training on
disjoint collections and their pseudo-pairs (``disjoint``, ``pseudopairs``), the language bridge of a hybrid
tower (``bridge_fit``), the model card, and the quick M3L ablation."""
