"""PMI-DECODE as transformers' custom_generate gives the tokens ``logits_processor=[PMIDecode(...)]`` gives.

Both forms: the decoding loop passed as a callable (:func:`pmi_decoding`), and the shipped folder loaded from its
local path (:data:`PMI_DECODE_FOLDER`, transformers runs its ``custom_generate/generate.py``), on greedy search, beam
search and seeded sampling, with a tiny random Llama and with SmolLM2.
"""

import pytest
import torch

from faithkit.decoding import PMIDecode, build_inputs
from faithkit.decoding.two_view.custom_generate import PMI_DECODE_FOLDER, pmi_decoding

DOCUMENTS = [
    "The Eiffel Tower is 330 metres tall and stands in Paris.",
    "Apples grow on trees; an orchard of them blooms in spring.",
]
HISTORIES = [["How tall is the Eiffel Tower?"], ["Hi!", "Hello, what would you like to know?", "When do apples bloom?"]]
ALPHA, TOP_P = 0.25, 0.6
SEARCHES = {
    "greedy": {},
    "beam": {"num_beams": 3, "num_return_sequences": 2},
    "sample": {"do_sample": True, "temperature": 0.7, "top_k": 20, "num_return_sequences": 2},
}


def _processor(search: dict) -> PMIDecode:
    sampling = {key: search[key] for key in ("temperature", "top_k") if key in search}
    return PMIDecode(ALPHA, TOP_P, do_sample=search.get("do_sample", False), **sampling)


def _same_outputs(model, tokenizer, search: dict) -> None:
    inputs = build_inputs(model, tokenizer, DOCUMENTS, HISTORIES)
    common = {"max_new_tokens": 12, "pad_token_id": tokenizer.pad_token_id or tokenizer.eos_token_id, **search}
    torch.manual_seed(0)
    reference = model.generate(**inputs, **common, logits_processor=[_processor(search)])
    torch.manual_seed(0)
    looped = model.generate(**inputs, **common, custom_generate=pmi_decoding, alpha=ALPHA, top_p=TOP_P)
    torch.manual_seed(0)
    shared = model.generate(
        custom_generate=str(PMI_DECODE_FOLDER),
        trust_remote_code=True,
        tokenizer=tokenizer,
        documents=DOCUMENTS,
        histories=HISTORIES,
        alpha=ALPHA,
        top_p=TOP_P,
        **common,
    )
    assert torch.equal(looped, reference)
    conditioned = len(DOCUMENTS) * search.get("num_return_sequences", 1)
    assert torch.equal(shared, reference[:conditioned])
    assert reference.shape[1] > inputs["input_ids"].shape[1]  # it decoded something


@pytest.mark.parametrize("search", list(SEARCHES))
def test_custom_generate_equals_the_processor_on_a_tiny_llama(tiny_llama, search):
    model, tokenizer = tiny_llama
    _same_outputs(model, tokenizer, SEARCHES[search])


@pytest.mark.parametrize("search", list(SEARCHES))
def test_custom_generate_equals_the_processor_on_smollm2(smollm2, search):
    model, tokenizer = smollm2
    _same_outputs(model, tokenizer, SEARCHES[search])


def test_the_folder_says_what_it_needs(tiny_llama):
    model, tokenizer = tiny_llama
    with pytest.raises(ValueError, match="needs documents=, histories= and tokenizer="):
        model.generate(custom_generate=str(PMI_DECODE_FOLDER), trust_remote_code=True, tokenizer=tokenizer)


def test_the_folder_is_what_the_hub_takes():
    """A hub repository's layout: the loader's file, its requirements, and a card naming the custom_generate tag."""
    assert (PMI_DECODE_FOLDER / "custom_generate" / "generate.py").is_file()
    assert (PMI_DECODE_FOLDER / "custom_generate" / "requirements.txt").read_text().split() == ["faithkit"]
    assert "custom_generate" in (PMI_DECODE_FOLDER / "README.md").read_text().split("---")[1]
