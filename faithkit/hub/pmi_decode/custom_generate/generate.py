"""PMI-DECODE (Nandwani et al., EMNLP 2023) as a transformers custom_generate: faithkit builds the two views of each
(document, history) context and decodes with its PMIDecode processor. See ../README.md."""

from faithkit.decoding.two_view.custom_generate import pmi_generate


def generate(model, *args, **kwargs):
    """transformers calls this in place of ``model.generate`` (with ``model`` and generate's own arguments)."""
    return pmi_generate(model, *args, **kwargs)
