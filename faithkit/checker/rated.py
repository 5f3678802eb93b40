"""Rated generations as checker examples: the rows ``faithkit annotate export`` writes (a response, its document and
history, and every rater's answers), labelled by their raters' faithfulness answers.

The label rule (:func:`rated_label`) reads the page's faithfulness question ("Everything the response says can be
inferred from the document"):

* every rater Agree -> ``supported``;
* some rater Disagree -> ``unsupported`` (one rater who finds a claim the document does not make is enough, as one
  unsupported sentence makes a response unsupported);
* every rater Neutral -> ``generic`` (nothing to infer: the page's Neutral);
* Agree and Neutral mixed -> left out (the raters disagree on whether it claims anything).

A response rated in several tasks is one example, labelled from all of its answers. Its document is cut, as the
synthetic examples' are, to at most :data:`~.contexts.MAX_DOCUMENT_CHARS` characters: the run of whole sentences of
one section (a line of the document) sharing most words with the response (:func:`best_window`), which is what the
metric's best window would hold.

Splits follow the sections, as the synthetic recipe's do (:func:`rated_examples`): a rated response is ``test`` when
its document falls in the rated test share (a hash of the document, so every system's response to one context is on
one side) or holds a section that the held-out split reads (``valid_rare``) or that falls in the sections' test share,
and so are the responses that share a section with a test one, until no train response shares a section with a test
one; every section of a test response is then held out of the synthetic training split too, so the rated test
responses are judged on documents the checker never trained on.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

from ..errors import InputError
from ..metrics.claim_windows import claim_words, overlap, response_sentences
from ..data.schema import TEXT, ListOf, MapOf, Object, read_json_line
from .contexts import MAX_DOCUMENT_CHARS, MIN_SECTION_CHARS, section_split
from .examples import Example

RATED = Object(
    {
        "id": TEXT,
        "document": TEXT,
        "history": ListOf(TEXT),
        "response": TEXT,
        "ratings": Object({"faithfulness": MapOf(TEXT, "an object of each rater's answer")}),
    }
)
"""What the recipe reads of a rated row (``faithkit annotate export`` writes more: the system, the aggregate)."""
FAITHFULNESS_ANSWERS = ("agree", "neutral", "disagree")


def rated_label(answers: Sequence[str]) -> str | None:
    """The example label of a response from its raters' faithfulness answers (the module's rule), or None.

    Args:
        answers (`Sequence[str]`): each rater's answer: ``agree``, ``neutral`` or ``disagree``.

    Examples:

    ```python
    >>> from faithkit.checker.rated import rated_label
    >>> [rated_label(answers) for answers in (["agree", "agree"], ["agree", "disagree"], ["neutral"], ["agree", "neutral"])]
    ['supported', 'unsupported', 'generic', None]
    ```
    """
    if "disagree" in answers:
        return "unsupported"
    if all(answer == "agree" for answer in answers):
        return "supported"
    if all(answer == "neutral" for answer in answers):
        return "generic"
    return None


def read_rated(path: str | Path) -> list[dict]:
    """The rows of a rated JSONL file; a row that is not one is an :class:`InputError` naming the file and line."""
    fix = "give a file that 'faithkit annotate export' wrote"
    rows = []
    try:
        lines = Path(path).read_text(encoding="utf-8-sig").splitlines()
    except FileNotFoundError:
        raise InputError(f"rated file {path} not found; {fix}") from None
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        row = read_json_line(line, RATED, f"{path}, line {number}", fix)
        answers = list(row["ratings"]["faithfulness"].values())
        if not answers or any(answer not in FAITHFULNESS_ANSWERS for answer in answers):
            raise InputError(
                f"{path}, line {number}: ratings.faithfulness must map each rater to one of "
                f"{', '.join(FAITHFULNESS_ANSWERS)}; {fix}"
            )
        rows.append(row)
    return rows


def document_sections(document: str, min_chars: int = MIN_SECTION_CHARS) -> list[str]:
    """The sections of a document as the recipe splits them: its lines longer than ``min_chars``."""
    return [line.strip() for line in document.split("\n") if len(line.strip()) > min_chars]


def best_window(document: str, response: str, limit: int = MAX_DOCUMENT_CHARS) -> str:
    """The document itself when it fits in ``limit`` characters, else the run of whole sentences of one of its lines,
    within ``limit``, that holds most of the response's words (:func:`~faithkit.metrics.claim_windows.claim_words`;
    ties go to the earlier run). A sentence longer than ``limit`` is cut to it."""
    if len(document.strip()) <= limit:
        return document.strip()
    words = claim_words([response])
    best, best_overlap = "", -1
    for line in document.split("\n"):
        sentences = response_sentences(line) if line.strip() else []
        for start in range(len(sentences)):
            end = start + 1
            while end < len(sentences) and len(" ".join(sentences[start : end + 1])) <= limit:
                end += 1
            window = " ".join(sentences[start:end])[:limit]
            shared = overlap(window, words)
            if shared > best_overlap:
                best, best_overlap = window, shared
    return best


def _key(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def rated_examples(
    rows: Iterable[dict], test_share: float, rated_test_share: float, excluded: set[str]
) -> tuple[list[Example], set[str], set[str], int]:
    """The rated rows as examples, split by document and section (the module's rule: ``rated_test_share`` of the
    documents, ``test_share`` of the sections); with the sections and the row ids of the test examples (the synthetic
    recipe holds those sections out of training and makes nothing from those rows), and how many responses the label
    rule left out. ``excluded``: the sections of the split kept for evaluation."""
    pooled: dict[tuple, tuple[dict, list[str]]] = {}
    for row in rows:
        group = (row["document"], tuple(row["history"]), row["response"])
        first, answers = pooled.setdefault(group, (row, []))
        answers += row["ratings"]["faithfulness"].values()
    labelled = [(row, label, answers) for row, answers in pooled.values() if (label := rated_label(answers))]
    sections = [set(document_sections(row["document"])) for row, _, _ in labelled]
    held_out = {s for texts in sections for s in texts if s in excluded or section_split(s, test_share) == "test"}
    test = [
        bool(texts & held_out) or section_split(row["document"], rated_test_share) == "test"
        for (row, _, _), texts in zip(labelled, sections)
    ]
    while True:  # a train response sharing a section with a test one goes to test, with its sections
        held_out |= {s for texts, is_test in zip(sections, test) for s in texts if is_test}
        moved = [not is_test and bool(texts & held_out) for texts, is_test in zip(sections, test)]
        if not any(moved):
            break
        test = [is_test or move for is_test, move in zip(test, moved)]
    numbers: Counter = Counter()
    examples = []
    for (row, label, answers), texts, is_test in zip(labelled, sections, test):
        kind = f"rated_{label}"
        examples.append(
            Example(
                id=f"{kind}-{numbers[kind]}",
                document=best_window(row["document"], row["response"]),
                history=list(row["history"])[-2:],
                response=row["response"].strip(),
                label=label,
                kind=kind,
                source=f"rated:{row['id']}",
                detail="faithfulness: " + ", ".join(answers),
                split="test" if is_test else "train",
                section=",".join(sorted(_key(text) for text in texts)),
            )
        )
        numbers[kind] += 1
    held_rows = {str(row.get("row", "")) for (row, _, _), is_test in zip(labelled, test) if is_test} - {""}
    return examples, held_out, held_rows, len(pooled) - len(labelled)
