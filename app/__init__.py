"""The Polyglot Image Search service (FastAPI) and the ``polyglot`` command line."""
