"""Cross-lingual consistency's classifier CLC-C (SMALR §3.4; ``polyglot clc fit``)."""
