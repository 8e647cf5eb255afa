"""What every family trains and is measured on: the data set layout (``dataset``), cached frozen features
(``features``), splits ready in memory (``prepared``), batches of distinct photos (``sampler``), text-only
corpora (``text_corpus``), collections that share no photos (``collections``), the wide-domain dev set
(``wide_dev``) and the synthetic data set of the tests (``synthetic``)."""
