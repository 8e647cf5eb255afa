"""The tag vocabularies that ship in ``indexer/assets/tags/`` (one word file per language), built from public sources
by ``polyglot tags vocab ship``: English everyday words (:mod:`.english`), translated with the MUSE dictionaries and
checked to be words of their language (:mod:`.checks`), written reproducibly (:mod:`.build`). Words only: the
served text side embeds them once per fingerprint (:mod:`indexer.tagging.shipped`)."""
