"""Responses for the rows of a file, where decoding meets the metrics: ``faithkit generate``'s job (:mod:`.generate`),
``faithkit candidates``' draws from a serving engine (:mod:`.candidates`), and the rerank strategy's judges and
``faithkit rerank``'s job (:mod:`.rerank`)."""
