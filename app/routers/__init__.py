"""One router per resource; ``app.main`` mounts each under ``/v1`` and at the root (short form)."""
