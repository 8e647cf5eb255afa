"""What an image index is made of, by role (the facade that uses them all: :mod:`indexer.image_index`).

* state shared by the roles: ``index_state`` (folder, sidecar, rows, vectors + their lock, encoder, features cache);
* ingest (photos in): ``photo_ingest`` (the add loop), ``ingest`` (reading and hashing files, ``AddReport``),
  ``uploads``;
* maintenance: ``maintenance`` (write sessions, persist, reconcile, remove, rebuild, stats), ``reencode``,
  ``opening`` (the checks made on open), ``sidecar``, ``locks``, ``failures``;
* vectors: ``backend`` (the ``VectorBackend`` interface), ``vector_files`` (the one place a backend is chosen),
  ``vectors`` (FAISS), ``mmap_index`` + ``row_file`` (ivf-pq-mmap), ``milvus_vectors``,
  ``filtered`` (search restricted to a subset), ``index_kinds`` (the size rule and its settings);
* rows: ``metadata`` (the images table, and the ids a photo filter keeps), ``sql``, ``migrate``.
"""
