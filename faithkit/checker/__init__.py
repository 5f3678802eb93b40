"""faithkit's own claim checker: synthetic training data from the corpora (:mod:`.synthetic`, the recipe; its
examples :mod:`.examples`, contexts :mod:`.contexts`, sentence edits :mod:`.edits` and LM-written claims
:mod:`.lm_claims`) and its LoRA fine-tuning on an offline LM (:mod:`.training`); the trained checker is the metric
``faithkit-checker``."""
