"""Measures: tower-level retrieval recalls (``evaluate``, ``retrieval_metrics``), what ``/search`` serves
(``served_eval``, ``polyglot evaluate``), markdown tables (``report``), and the tagging
evaluation (``tagging_eval`` with its methods, metrics, tables, zero-shot check and lexicon baseline)."""
