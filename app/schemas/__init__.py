"""Request/response models of the HTTP API (every field bounded)."""
