"""Image embedding, FAISS indices and metadata: the inference library of Polyglot Image Search.

Dependencies point one way: ``app`` and ``training`` import ``indexer``; ``indexer`` imports neither.
"""
