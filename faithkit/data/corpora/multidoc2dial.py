"""MultiDoc2Dial (Feng et al., EMNLP 2021): goal-oriented dialogues grounded in several documents.

The release (``multidoc2dial.zip``) holds ``multidoc2dial_dial_{train,validation,test}.json``,
``{"dial_data": {domain: [{"dial_id", "turns": [{"turn_id", "role", "da", "references":
[{"id_sp", "label", "doc_id"}], "utterance"}]}]}}``, and ``multidoc2dial_doc.json``,
``{"doc_data": {domain: {doc_id: {"title", "doc_text", "spans": {id_sp: {"id_sec",
"text_sec", ...}}, ...}}}}``.

As in the official generation task (IBM/multidoc2dial's ``doc2dial_pub.py`` loader), a row is
an agent turn that answers a user turn: agent turns that follow another agent turn are
skipped (``skipped_follow_up``), and so are those with no grounding, the ``respond_no_solution``
turns and any without references (``skipped_no_grounding``). The document is the grounding
section: the ``text_sec`` of the section of each span the turn's references name, each
section once, in the order referenced, stripped and joined by newlines.

Row ids are ``<dial_id>:<turn_id>``; ``extras`` hold ``dial_id``, ``domain``, ``doc_id``
(of the first reference) and the turn's other fields (``turn_id``, ``role``, ``da``,
``references``).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from ...errors import InputError
from ..rows import Row
from .common import corpus_dataset, last_turns, layout_of, read_json

if TYPE_CHECKING:
    from datasets import Dataset

SPLITS = ("train", "validation", "test")
SOURCE = (
    "https://doc2dial.github.io/multidoc2dial/file/multidoc2dial.zip "
    "(as IBM/multidoc2dial's scripts/run_download.sh does)"
)
FEATURES = {
    "dial_id": "string",
    "domain": "string",
    "doc_id": "string",
    "turn_id": "int64",
    "role": "string",
    "da": "string",
    "references": [{"id_sp": "string", "label": "string", "doc_id": "string"}],
}
NO_SOLUTION = "respond_no_solution"


def load_multidoc2dial(split: str, path: str | Path, history_turns: int | None = 2) -> Dataset:
    """One split of MultiDoc2Dial as rows, from the unzipped release folder ``path``."""
    dial_file = Path(path) / f"multidoc2dial_dial_{split}.json"
    doc_file = Path(path) / "multidoc2dial_doc.json"
    dialogues = read_json(dial_file, f"the MultiDoc2Dial {split} dialogues", SOURCE, dict)
    documents = read_json(doc_file, "the MultiDoc2Dial documents", SOURCE, dict)
    with layout_of(doc_file, "MultiDoc2Dial documents", SOURCE):
        spans = {
            doc_id: document["spans"]
            for domain in documents["doc_data"].values()
            for doc_id, document in domain.items()
        }
    counts = dict(dialogues=0, turns=0, kept=0, skipped_follow_up=0, skipped_no_grounding=0)
    rows = []
    with layout_of(dial_file, "MultiDoc2Dial dialogues", SOURCE):
        for domain, domain_dialogues in dialogues["dial_data"].items():
            for dialogue in domain_dialogues:
                counts["dialogues"] += 1
                turns = dialogue["turns"]
                for index, turn in enumerate(turns):
                    if turn["role"] != "agent":
                        continue
                    counts["turns"] += 1
                    if index == 0 or turns[index - 1]["role"] != "user":
                        counts["skipped_follow_up"] += 1
                        continue
                    if turn["da"] == NO_SOLUTION or not turn["references"]:
                        counts["skipped_no_grounding"] += 1
                        continue
                    counts["kept"] += 1
                    where = f"{dial_file}: dialogue {dialogue['dial_id']} turn {turn['turn_id']}"
                    extras = {
                        "dial_id": dialogue["dial_id"],
                        "domain": domain,
                        "doc_id": turn["references"][0]["doc_id"],
                        **{key: value for key, value in turn.items() if key != "utterance"},
                    }
                    rows.append(
                        Row(
                            id=f"{dialogue['dial_id']}:{turn['turn_id']}",
                            document=_grounding(turn["references"], spans, where),
                            history=last_turns([earlier["utterance"] for earlier in turns[:index]], history_turns),
                            response=turn["utterance"],
                            extras=extras,
                        )
                    )
    summary = {"corpus": "multidoc2dial", "split": split, "source": str(dial_file), **counts}
    return corpus_dataset(rows, summary, FEATURES)


def _grounding(references: list[dict], spans: dict, where: str) -> str:
    """The sections holding the referenced spans, each once, in the order referenced."""
    sections = {}
    for reference in references:
        doc_id, span_id = reference["doc_id"], reference["id_sp"]
        if doc_id not in spans or span_id not in spans[doc_id]:
            raise InputError(
                f"{where} references span {span_id} of document {doc_id!r}, which "
                f"multidoc2dial_doc.json does not hold; use the files of one release ({SOURCE})"
            )
        span = spans[doc_id][span_id]
        sections[(doc_id, span["id_sec"])] = span["text_sec"].strip()
    return "\n".join(sections.values())
