"""Exports of the bundled weights to ONNX (``polyglot models build``); see :mod:`indexer.built_models`."""
