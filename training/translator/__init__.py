"""The Translator of "Grounding multilingual concepts with vision" (``polyglot translator fit|curves``): the map
and its fits (``model``), the lexicon fit (``fit``) and the FS/T1/T2 learning curves (``curves``)."""
