"""The questions people rate a response on, in one place: the annotation page asks them and ``llm-judge`` asks a
served model the faithfulness one, so a model judge and the human raters answer the same question."""

DIMENSIONS = {  # the PMI-DECODE paper's three questions: statement rated, definition a click away
    "faithfulness": (
        "Everything the response says can be inferred from the document.",
        "Can the whole response be inferred from the document? Judge this regardless of relevance: "
        "a response that is off-topic for the dialogue but supported by the document is faithful.",
    ),
    "relevance": (
        "The response is relevant to the dialogue and the document, and conveys nothing incorrect.",
        "Is the response apt for the dialogue and for the knowledge in the document, without conveying "
        "anything incorrect? (As in the PMI-DECODE paper, an apt response that states something false is "
        "not relevant, so this question shares that part with Faithfulness.)",
    ),
    "grammar": (
        "The response is grammatical and well written: agree only if it reads like an expert's writing.",
        "Judge the writing alone, independent of the dialogue and the document. Agree only if it reads "
        "like the writing of an expert.",
    ),
}
ANSWERS = ("agree", "neutral", "disagree")
"""The scale, in the page's order and as the category indices of :mod:`faithkit.annotate.agreement` (0 = agree)."""
