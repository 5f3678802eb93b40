"""faithkit's own claim checker: synthetic training data from the corpora (:mod:`.synthetic`) and its LoRA
fine-tuning on an offline LM (:mod:`.training`); the trained checker is the metric ``faithkit-checker``."""
