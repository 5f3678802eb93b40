"""Where a claim checker looks: a document cut into token windows, a response cut into its sentences.

A checker reads a few hundred tokens at a time, so a document is cut into overlapping windows of
its own tokenizer's tokens; a long document's windows are first narrowed to those sharing most
words with the claims (:func:`chosen_windows`), so a 50 MB document costs no more than
:data:`MAX_WINDOWS` windows. :mod:`faithkit.metrics.claim_checkers` pairs every chosen window with
every sentence.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

from ..prompts import CHARS_PER_TOKEN
from .base import check_parsable


def document_windows(document: str, tokenizer, window: int, stride: int) -> list[str]:
    """The document cut into windows of ``window`` tokens starting every ``stride`` tokens, the last one ending at
    the document's end; each window is the document's own text from its first token to its last.

    Args:
        document (`str`): the document.
        tokenizer (`PreTrainedTokenizerFast`): the checker's tokenizer (offsets: a fast one).
        window (`int`): tokens per window.
        stride (`int`): tokens from one window's start to the next's, at most ``window`` (less: they overlap).

    Examples:

    ```python
    >>> from tokenizers import Tokenizer, models, pre_tokenizers
    >>> from transformers import PreTrainedTokenizerFast
    >>> words = Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    >>> words.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    >>> tokenizer = PreTrainedTokenizerFast(tokenizer_object=words)  # one token per word, for the example
    >>> from faithkit.metrics.claim_windows import document_windows
    >>> document_windows("a b c d e f g", tokenizer, window=4, stride=2)
    ['a b c d', 'c d e f', 'd e f g']
    ```
    """
    return [document[start:end].strip() for start, end in window_spans(document, tokenizer, window, stride)]


def window_spans(text: str, tokenizer, window: int, stride: int) -> list[tuple[int, int]]:
    """The character spans of :func:`document_windows`' windows (the whole text when it fits in one).

    Args:
        text (`str`): the document.
        tokenizer (`PreTrainedTokenizerFast`): the checker's tokenizer.
        window (`int`): tokens per window.
        stride (`int`): tokens between window starts.

    Examples:

    ```python
    >>> from tokenizers import Tokenizer, models, pre_tokenizers
    >>> from transformers import PreTrainedTokenizerFast
    >>> words = Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    >>> words.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    >>> tokenizer = PreTrainedTokenizerFast(tokenizer_object=words)  # one token per word, for the example
    >>> from faithkit.metrics.claim_windows import window_spans
    >>> window_spans("a b c d e f g", tokenizer, window=4, stride=2), window_spans("a b", tokenizer, 4, 2)
    ([(0, 7), (4, 11), (6, 13)], [(0, 3)])
    ```
    """
    offsets = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    if len(offsets) <= window:
        return [(0, len(text))]
    starts = list(range(0, len(offsets) - window + 1, stride))
    if starts[-1] + window < len(offsets):
        starts.append(len(offsets) - window)
    return [(offsets[start][0], offsets[start + window - 1][1]) for start in starts]


MAX_WINDOWS = 16
"""Windows of a document scored per row unless ``max_windows`` says otherwise: every window is paired with every
sentence of the response, so a 320 KB document (thousands of windows) took over 15 minutes."""
CLAIM_WORD = re.compile(r"\w{4,}")


def claim_words(claims: Sequence[str]) -> set[str]:
    """The claims' distinct words of four characters or more, lowercased: short ones (the, and, is) are everywhere,
    so they say nothing about where in a document a claim is.

    Args:
        claims (`Sequence[str]`): the response's sentences.

    Examples:

    ```python
    >>> from faithkit.metrics.claim_windows import claim_words
    >>> sorted(claim_words(["They live in the Arctic.", "Polar bears live there."]))
    ['arctic', 'bears', 'live', 'polar', 'there', 'they']
    ```
    """
    return {word for claim in claims for word in CLAIM_WORD.findall(claim.lower())}


def overlap(text: str, words: set[str]) -> int:
    """How many of ``words`` appear in ``text`` (a substring test: cheap enough to run over a 50 MB document).

    Args:
        text (`str`): a window or block of the document.
        words (`set[str]`): :func:`claim_words`.

    Examples:

    ```python
    >>> from faithkit.metrics.claim_windows import overlap
    >>> overlap("Polar bears live in the Arctic.", {"live", "arctic", "penguins"})
    2
    ```
    """
    lowered = text.lower()
    return sum(word in lowered for word in words)


def chosen_windows(
    document: str, claims: Sequence[str], tokenizer, window: int, stride: int, max_windows: int
) -> tuple[list[str], int]:
    """The texts of :func:`chosen_spans`' windows, and how many characters of the document they leave out.

    Args:
        document (`str`): the document.
        claims (`Sequence[str]`): the response's sentences.
        tokenizer (`PreTrainedTokenizerFast`): the checker's tokenizer.
        window (`int`): tokens per window.
        stride (`int`): tokens between window starts.
        max_windows (`int`): windows kept at most.

    Examples:

    ```python
    >>> from tokenizers import Tokenizer, models, pre_tokenizers
    >>> from transformers import PreTrainedTokenizerFast
    >>> words = Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    >>> words.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    >>> tokenizer = PreTrainedTokenizerFast(tokenizer_object=words)  # one token per word, for the example
    >>> from faithkit.metrics.claim_windows import chosen_windows
    >>> document = "Cats nap a lot. Polar bears live up north. Dogs bark loud."
    >>> chosen_windows(document, ["Polar bears live up north."], tokenizer, window=4, stride=4, max_windows=2)
    (['Polar bears live up', 'north. Dogs bark loud.'], 17)
    ```
    """
    spans, left_out = chosen_spans(document, claims, tokenizer, window, stride, max_windows)
    return [document[start:end] for start, end in spans], left_out


def chosen_spans(
    document: str, claims: Sequence[str], tokenizer, window: int, stride: int, max_windows: int
) -> tuple[list[tuple[int, int]], int]:
    """The windows to score, as character spans of the document without their outer whitespace: all of
    :func:`document_windows` when there are at most ``max_windows``, else the ``max_windows`` that share most words
    with the claims (:func:`claim_words`; ties go to the earlier window), in the document's order; and how many
    characters of the document no chosen window holds (0 when none was left out).

    A document longer than ``max_windows`` windows span at :data:`~faithkit.prompts.CHARS_PER_TOKEN` characters a
    token is never tokenised whole: its blocks of one window's characters (every half block) are ranked by the same
    overlap first, and only the best ``max_windows`` blocks are cut into token windows.

    Args:
        document (`str`): the document.
        claims (`Sequence[str]`): the response's sentences.
        tokenizer (`PreTrainedTokenizerFast`): the checker's tokenizer.
        window (`int`): tokens per window.
        stride (`int`): tokens between window starts.
        max_windows (`int`): windows kept at most.

    Examples:

    ```python
    >>> from tokenizers import Tokenizer, models, pre_tokenizers
    >>> from transformers import PreTrainedTokenizerFast
    >>> words = Tokenizer(models.WordLevel({"[UNK]": 0}, unk_token="[UNK]"))
    >>> words.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    >>> tokenizer = PreTrainedTokenizerFast(tokenizer_object=words)  # one token per word, for the example
    >>> from faithkit.metrics.claim_windows import chosen_spans
    >>> document = "Cats nap a lot. Polar bears live up north. Dogs bark loud."
    >>> chosen_spans(document, ["Polar bears live up north."], tokenizer, window=4, stride=4, max_windows=2)
    ([(16, 35), (36, 58)], 17)
    ```
    """
    words = claim_words(claims)
    block = CHARS_PER_TOKEN * window
    regions = [(0, len(document))]
    if len(document) > CHARS_PER_TOKEN * (window + (max_windows - 1) * stride):
        starts = list(range(0, len(document) - block, block // 2)) + [len(document) - block]
        best = sorted(starts, key=lambda start: -overlap(document[start : start + block], words))[:max_windows]
        regions = _merged([(start, start + block) for start in sorted(best)])
    spans = [
        (first + start, first + end)
        for first, last in regions
        for start, end in window_spans(document[first:last], tokenizer, window, stride)
    ]
    if len(spans) <= max_windows and len(regions) == 1 and regions[0] == (0, len(document)):
        return [stripped(document, start, end) for start, end in spans], 0
    ranked = sorted(range(len(spans)), key=lambda i: -overlap(document[spans[i][0] : spans[i][1]], words))
    spans = [spans[i] for i in sorted(ranked[:max_windows])]
    held = sum(end - start for start, end in _merged(spans))
    return [stripped(document, start, end) for start, end in spans], len(document) - held


def stripped(text: str, start: int, end: int) -> tuple[int, int]:
    """The span ``text[start:end]`` without its leading and trailing whitespace (as ``str.strip`` cuts it).

    Args:
        text (`str`): the text.
        start (`int`): the span's first character.
        end (`int`): the character after its last.

    Examples:

    ```python
    >>> from faithkit.metrics.claim_windows import stripped
    >>> stripped("  Hi there.  ", 0, 13)
    (2, 11)
    ```
    """
    piece = text[start:end]
    lead = len(piece) - len(piece.lstrip())
    return start + lead, max(start + lead, end - (len(piece) - len(piece.rstrip())))


def _merged(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted character spans with the overlapping or touching ones joined."""
    joined: list[tuple[int, int]] = []
    for start, end in spans:
        if joined and start <= joined[-1][1]:
            joined[-1] = (joined[-1][0], max(joined[-1][1], end))
        else:
            joined.append((start, end))
    return joined


@lru_cache(maxsize=1)
def _sentencizer():
    import spacy

    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    return nlp


def response_sentences(response: str) -> list[str]:
    """The response's sentences (spaCy's rule-based sentencizer); the whole response if it finds none.

    Args:
        response (`str`): the response.

    Examples:

    ```python
    >>> from faithkit.metrics.claim_windows import response_sentences
    >>> response_sentences("They live in Antarctica. They breed in winter!")
    ['They live in Antarctica.', 'They breed in winter!']
    ```
    """
    return [response[start:end] for start, end in sentence_spans(response)]


def sentence_spans(response: str) -> list[tuple[int, int]]:
    """The character spans of :func:`response_sentences` in the response (without outer whitespace).

    Args:
        response (`str`): the response.

    Examples:

    ```python
    >>> from faithkit.metrics.claim_windows import sentence_spans
    >>> sentence_spans("They live in Antarctica.  They breed in winter!")
    [(0, 24), (26, 47)]
    ```
    """
    nlp = _sentencizer()
    check_parsable(nlp, [response], "response")
    spans = [stripped(response, s.start_char, s.end_char) for s in nlp(response).sents if s.text.strip()]
    return spans or [stripped(response, 0, len(response))]
