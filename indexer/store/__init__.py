"""Storage of an image index: FAISS vectors, SQL metadata and the JSON sidecar (see indexer.image_index)."""
