"""PMI-DECODE, CAD and AdaCAD: decoding from two views of each context (document + history, and history alone).

Read top to bottom, in this order:

1. ``parameters.py``: PMI-DECODE's ``alpha`` and ``top_p`` and CAD's ``alpha``, declared once; no torch.
2. ``strategies.py``: the strategies a user names (``pmi``, ``cad``, ``adacad``): their parameters plus what
   decoding needs; no torch, so the command line reads them quickly.
3. ``processor.py``: what every two-view processor shares: the batch of 2B rows, one combined score for both
   halves, the halves kept in step, the token drawn by the processor itself when it samples.
4. ``pmi_decode.py``: PMI-DECODE's score (:class:`PMIDecode`), inside the top-p set.
5. ``cad.py``: CAD's and AdaCAD's scores.
6. ``custom_generate.py``: PMI-DECODE as transformers' ``custom_generate``, and the hub folder that ships it.

The names a user imports come from :mod:`faithkit.decoding` (``PMI``, ``PMIDecode``, ``build_inputs``, …).
"""
