"""Offline learning and evaluation of the text tower (M3L, PATR, VSE hinge).

Imports ``indexer`` (encoders, tower); nothing in ``indexer`` or ``app`` needs this package at serving time,
except the CLI, which exposes ``polyglot train`` and ``polyglot evaluate``.
"""
