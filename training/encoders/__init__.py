"""The lab's research encoders: mUSE (``muse``, ``muse-numpy``), LASER, sentence-transformers models, ResNet-152
and hybrids of text encoders (``muse+e5-small``). The product's encoder factory builds them by name once the lab
has registered them (:mod:`training.plugin`).
"""
