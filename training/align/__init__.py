"""The DPCCA family (``polyglot train align --method cca|pcca|dcca-noi|dpcca-a|dpcca-b``): closed-form CCA/PCCA
(``cca``), deep CCA by non-linear orthogonal iterations (``dcca``), the run and its saved alignment
(``alignment``), caption→caption R@1 and BLEU+1 (``c2c_eval``)."""
