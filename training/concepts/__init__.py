"""The concept lexicon's builder (:mod:`.build`) and its name cleaning (:mod:`.names`)."""
