"""Training data for the claim checker, made from grounded dialogue corpora by rule (and, optionally, an LM).

Every example is ``(document, history, response, label)`` with one of three labels, the classes of BEGIN
and of the annotation page's faithfulness question:

* ``supported``: everything the response claims, the document says;
* ``generic``: the response claims nothing the document could settle ("That's cool!", "Do you like it?");
* ``unsupported``: some claim of the response is contradicted by the document or absent from it.

Documents are Topical-Chat's Wikipedia lead sections, cut around one target sentence (one to four sentences,
so short WoW-like passages and longer ones both occur); histories are the conversation's turns before the
one grounded in that section. Responses are made from the target sentence (:data:`KINDS` lists how) or taken
from the human turns; hard negatives reuse the document's words and change one fact. Every example records
its ``kind``, its ``source`` (the corpus row) and its ``detail`` (what was changed). Documents are split
between ``train`` and ``test`` by a hash of the section, so no section is in both.

Everything is deterministic given the seed (``random.Random``, sorted inputs, hashlib, greedy or seeded LM
sampling), so :func:`build` with the same corpus files and seed writes the same bytes.

This module is the recipe (the mix of kinds, :class:`Builder`, :func:`build`); the examples' format is
:mod:`.examples`, the corpus contexts :mod:`.contexts`, the sentence edits :mod:`.edits` and the LM-written kind
:mod:`.lm_claims`.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..settings.options import option
from ..data.paths import PathArg
from .contexts import (
    MAX_DOCUMENT_CHARS,
    Context,
    Section,
    SectionSplit,
    topicalchat_contexts,
    wiki_contexts,
    window_around,
)
from .edits import (
    antonym_flip,
    content_words,
    entity_swap,
    first_clause,
    negation_flip,
    number_change,
    pronoun_subject,
    restyle,
    role_swap,
    same_text,
    with_prefix,
)
from .examples import KINDS, Example, card, write
from .lm_claims import history_only_replies, lm_claims
from .rated import document_sections, rated_examples, read_rated

__all__ = ["GENERIC_REPLIES", "HUMAN_KINDS", "MIX", "Builder", "CheckerData", "build", "build_from_corpora"]

MIX: dict[str, float] = {
    "extractive": 0.14,
    "clause": 0.08,
    "pronoun": 0.04,
    "human_grounded": 0.08,
    "generic_template": 0.06,
    "human_generic": 0.06,
    "swap_same_document": 0.09,
    "swap_other_document": 0.05,
    "number": 0.07,
    "negation": 0.07,
    "antonym": 0.03,
    "role_swap": 0.03,
    "added_claim": 0.05,
    "unrelated_claim": 0.02,
    "lm_claim": 0.08,
}
"""The share of each kind asked for (40% supported, 12% generic, 43% unsupported; kinds a context cannot give,
mostly ``human_grounded``, come out short: the data card counts what was made)."""

GENERIC_REPLIES = (
    "That's interesting!",
    "I didn't know that.",
    "Wow, that's cool.",
    "Haha, that's funny.",
    "I agree with you.",
    "What do you think about it?",
    "Do you like it?",
    "That sounds fun.",
    "I'm not sure about that.",
    "Tell me more!",
    "Yeah, I can see why.",
    "I've never thought about it that way.",
    "That's a good point.",
    "Really? That's surprising.",
    "I love that!",
    "Have you ever tried it?",
    "Me too, I'm a big fan.",
    "That makes sense.",
    "It was nice chatting with you!",
    "I'm glad to hear that.",
    "Oh wow, I had no idea.",
    "Do you know anything else about it?",
    "That is pretty amazing.",
    "I guess so.",
    "What else do you like to do?",
    "Sounds like a lot of fun to me.",
    "I'd like to learn more about that.",
    "That's so true.",
    "Yes, definitely.",
    "Hmm, I'm not sure I follow.",
)


class Builder:
    """Makes examples of each kind from contexts; ``nlp`` is a spaCy pipeline with a parser and NER; ``split`` says
    which sections are test."""

    def __init__(self, contexts: list[Context], nlp, seed: int, split: SectionSplit):
        self.contexts, self.nlp, self.rng = contexts, nlp, random.Random(seed)
        texts = sorted({s for c in contexts for s in c.sections})
        self.sections = {
            text: Section(
                hashlib.sha256(text.encode()).hexdigest()[:12],
                text,
                list(doc.sents),
                split.of(text),
            )
            for text, doc in zip(texts, nlp.pipe(texts, batch_size=64))
        }
        self.entities = {
            split: [e for s in self.sections.values() if s.split == split for x in s.sentences for e in x.ents]
            for split in ("train", "test")
        }
        self.claims = {
            split: [
                x
                for s in self.sections.values()
                if s.split == split
                for x in s.sentences
                if x.ents and 40 < len(x.text) < 220
            ]
            for split in ("train", "test")
        }

    def _target(self, context: Context) -> tuple[Section, int]:
        section = self.sections[self.rng.choice(context.sections)]
        usable = [i for i, s in enumerate(section.sentences) if 30 < len(s.text.strip()) < 300]
        return section, self.rng.choice(usable) if usable else -1

    def example(self, kind: str, context: Context) -> Example | None:
        """One example of ``kind`` from ``context``, or None when the context does not allow it."""
        section, index = self._target(context)
        if index < 0:
            return None
        document = window_around(section, index, self.rng)
        edit = self._edits(section, section.sentences[index], document).get(kind)
        if edit is None:
            return self._human(kind, context, section, document)
        made = edit()
        if made is None:
            return None
        response, detail = made
        if kind != "generic_template":
            response = with_prefix(response, self.rng)
        return self.make(kind, context, section, document, restyle(response, self.rng), detail)

    def _edits(self, section: Section, sentence, document: str) -> dict[str, Callable[[], tuple[str, str] | None]]:
        """How each rule-made kind turns the target ``sentence`` into ``(response, detail)`` (None: it cannot)."""
        rng, split = self.rng, section.split

        def other_claim(added: bool) -> tuple[str, str] | None:
            other = rng.choice(self.claims[split])
            if same_text(other.text, section.text) or other.text in document:
                return None
            if added:
                return sentence.text.strip() + " " + other.text.strip(), "added: " + other.text.strip()[:60]
            return other.text.strip(), "from another section"

        def other_entities() -> list:
            return rng.sample(self.entities[split], min(400, len(self.entities[split])))

        return {
            "extractive": lambda: (sentence.text.strip(), ""),
            "clause": lambda: first_clause(sentence),
            "pronoun": lambda: pronoun_subject(sentence),
            "swap_same_document": lambda: entity_swap(sentence, [e for s in section.sentences for e in s.ents], rng),
            "swap_other_document": lambda: entity_swap(sentence, other_entities(), rng),
            "number": lambda: number_change(sentence, rng),
            "negation": lambda: negation_flip(sentence),
            "antonym": lambda: antonym_flip(sentence, rng),
            "role_swap": lambda: role_swap(sentence),
            "added_claim": lambda: other_claim(added=True),
            "unrelated_claim": lambda: other_claim(added=False),
            "generic_template": lambda: (rng.choice(GENERIC_REPLIES), ""),
        }

    def _human(self, kind: str, context: Context, section: Section, document: str) -> Example | None:
        """The context's own human turn, when it fits ``kind`` (its document: the section it overlaps most)."""
        response = context.response.strip()
        words = content_words(response)
        best = max(context.sections, key=lambda s: len(words & content_words(s)))
        section = self.sections[best]
        overlap = words & content_words(best)
        if kind == "human_grounded":
            fits = context.factual and not context.personal and len(words) >= 4 and overlap == words
        elif kind == "human_generic":
            parsed = self.nlp(response)
            fits = (
                len(response.split()) <= 12 and not overlap and not parsed.ents and not any(t.like_num for t in parsed)
            )
        else:
            raise ValueError(f"unknown example kind {kind!r}")
        if not fits:
            return None
        document = best if len(best) <= MAX_DOCUMENT_CHARS else self._window_for(section, words)
        return self.make(kind, context, section, document, response, "human turn")

    def _window_for(self, section: Section, words: set[str]) -> str:
        index = max(range(len(section.sentences)), key=lambda i: len(words & content_words(section.sentences[i].text)))
        return window_around(section, index, self.rng)

    def make(self, kind, context, section, document, response, detail) -> Example:
        """The example of ``kind`` with this ``response`` to ``context``'s history, on ``document``."""
        return Example(
            id="",
            document=document,
            history=context.history[-2:],
            response=response,
            label=KINDS[kind][0],
            kind=kind,
            source=f"topicalchat:{context.row_id}",
            detail=detail,
            split=section.split,
            section=section.key,
        )

    def lm_claim(self, context: Context, reply: str, detail: str) -> Example:
        """The ``lm_claim`` example of an LM's ``reply`` to ``context``'s history, on its first section (a window of
        it when the section is long)."""
        section = self.sections[context.sections[0]]
        document = section.text if len(section.text) <= MAX_DOCUMENT_CHARS else window_around(section, 0, self.rng)
        return self.make("lm_claim", context, section, document, reply, detail)


HUMAN_KINDS = ("human_grounded", "human_generic", "lm_claim")
"""Kinds made from a real turn (its history, its human response); the others from any section."""


def build(
    turns: list[Context],
    sections: list[Context],
    nlp,
    *,
    size: int,
    split: SectionSplit,
    seed: int = 0,
    generate: Callable[[Sequence[list[str]]], list[str]] | None = None,
) -> list[Example]:
    """About ``size`` examples in the proportions of :data:`MIX` (``lm_claim`` only with ``generate``),
    deterministic given the contexts and ``seed``; ids are ``<kind>-<n>``. Rule-made kinds visit ``sections``
    (and ``turns``) in a seeded order, several times if needed; human kinds read ``turns``; ``split`` says which
    sections are test."""
    builder = Builder([*turns, *sections], nlp, seed, split)
    order = list(turns)
    random.Random(seed).shuffle(order)
    per_section = {text: Context(c.row_id, [text], c.history, "", False, False) for c in order for text in c.sections}
    per_section.update({c.sections[0]: c for c in sections if c.sections[0] not in per_section})
    documents = [per_section[text] for text in sorted(per_section)]
    random.Random(seed + 1).shuffle(documents)
    wanted = {kind: round(share * size) for kind, share in MIX.items() if kind != "lm_claim" or generate}
    examples: list[Example] = []
    for kind, count in wanted.items():
        if kind == "lm_claim":
            assert generate is not None
            made = lm_claims(order[len(order) // 2 :], count, generate, nlp, builder.lm_claim)
        else:
            made, seen = [], set()
            visits = order if kind in HUMAN_KINDS else documents * 30
            for context in visits:
                if len(made) >= count:
                    break
                example = builder.example(kind, context)
                if example and (example.document, example.response) not in seen:
                    seen.add((example.document, example.response))
                    made.append(example)
        for number, example in enumerate(made):
            example.id = f"{kind}-{number}"
        examples += made
    return examples


@dataclass(frozen=True)
class CheckerData:
    """The data recipe: which corpus files, how many examples, which LM writes the ``lm_claim`` kind."""

    output: str = option(
        "runs/checker-data",
        "folder to write train.jsonl, test.jsonl and the card README.md to",
        flag_type=PathArg("output folder"),
    )
    topicalchat: str = option(
        "",
        "Topical-Chat folder (flat layout, as in the shared data); default: the data root's",
        flag_type=PathArg("input folder", unset=True),
    )
    split: str = option("valid_freq", "the Topical-Chat split whose turns give histories and human responses")
    exclude_split: str = option("valid_rare", "a split whose Wikipedia sections are never used (kept for evaluation)")
    size: int = option(2800, "examples to make (train and test together)", low=10)
    seed: int = option(0, "seed of every random choice")
    test_share: float = option(0.1, "share of Wikipedia sections held out as the test split", low=0, high=1)
    lm: str = option("smollm2-135m", "LM that writes the lm_claim kind from histories alone; 'none' leaves it out")
    rated: list[str] = option(
        [],
        "rated responses ('faithkit annotate export' files) added as examples, labelled by their raters' "
        "faithfulness answers (faithkit.checker.rated) and split by section with the rest",
        flag_type=PathArg("text"),
    )
    rated_test_share: float = option(
        0.3,
        "share of the rated responses' documents held out as test (with those holding a test section)",
        low=0,
        high=1,
    )


RATED_NOTE = (
    "Rated examples ({files}) are labelled by their raters' faithfulness answers: every rater Agree -> supported, "
    "some rater Disagree -> unsupported, every rater Neutral -> generic; {left_out} responses rated both Agree and "
    "Neutral are left out. A rated response is test when its document is in the rated test share ({share}) or holds "
    "a test section, a section the held-out split reads, or one of another test response; its sections are then "
    "test sections for every kind, and its dialogue turn gives no synthetic example."
)


def build_from_corpora(config: CheckerData) -> dict:
    """Make and write the data of ``config``; return the counts per label and split."""
    from ..data import data_root
    from ..data.corpora.topicalchat import load_topicalchat
    from ..metrics.q2.metric import load_spacy

    folder = Path(config.topicalchat) if config.topicalchat else data_root() / "topicalchat"
    rows = [row for path in config.rated for row in read_rated(path)]  # a bad file stops the recipe before any work
    turns = topicalchat_contexts(folder, config.split)
    rated: list[Example] = []
    held_out: frozenset[str] = frozenset()
    notes: list[str] = []
    if config.rated:
        evaluated = load_topicalchat(config.exclude_split, folder, keep_opening=True, keep_personal=True)
        excluded = {s for row in evaluated for s in document_sections(row["document"])}
        rated, sections_out, rows_out, left_out = rated_examples(
            rows, config.test_share, config.rated_test_share, excluded
        )
        held_out = frozenset(sections_out)
        turns = [turn for turn in turns if turn.row_id not in rows_out]
        notes.append(RATED_NOTE.format(files=", ".join(config.rated), left_out=left_out, share=config.rated_test_share))
    sections = wiki_contexts(folder, turns, config.exclude_split, config.seed)
    nlp = load_spacy()
    generate = None if config.lm == "none" else history_only_replies(config.lm, config.seed)
    examples = build(
        turns,
        sections,
        nlp,
        size=config.size,
        split=SectionSplit(config.test_share, held_out),
        seed=config.seed,
        generate=generate,
    )
    examples += rated
    sources = [
        f"Topical-Chat {config.split} turns ({folder})",
        f"wiki.json sections not read by {config.exclude_split}",
        *([f"rated responses ({', '.join(config.rated)})"] if config.rated else []),
    ]
    write(examples, config.output, card(examples, sources, config.seed, notes))
    counts = Counter(f"{e.split}/{e.label}" for e in examples)
    return dict(sorted(counts.items()))
