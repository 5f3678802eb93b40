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
"""

from __future__ import annotations

import hashlib
import json
import random
import re
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..errors import InputError
from ..options import option
from ..paths import PathArg

LABELS = ("supported", "generic", "unsupported")

KINDS: dict[str, tuple[str, str]] = {
    "extractive": ("supported", "a document sentence, restated as a dialogue turn"),
    "clause": ("supported", "the first clause of a document sentence (the rest dropped)"),
    "pronoun": ("supported", "a document sentence with its subject entity replaced by a pronoun"),
    "human_grounded": ("supported", "a human turn whose content words all occur in its document"),
    "generic_template": ("generic", "a generic reply from a fixed list (reaction, opinion, question back)"),
    "human_generic": ("generic", "a short human turn with no entity, number or document word"),
    "swap_same_document": ("unsupported", "one entity replaced by another of its type from the same section"),
    "swap_other_document": ("unsupported", "one entity replaced by another of its type from another section"),
    "number": ("unsupported", "one number or year changed"),
    "negation": ("unsupported", "the sentence negated, or its negation removed"),
    "antonym": ("unsupported", "one word replaced by its antonym"),
    "role_swap": ("unsupported", "two entities of one type swapped in place"),
    "added_claim": ("unsupported", "a document sentence followed by a sentence from another section"),
    "unrelated_claim": ("unsupported", "a sentence from another section alone"),
    "lm_claim": (
        "unsupported",
        "the LM's reply to the history without the document, naming an entity or number the document does not",
    ),
}
"""Example kinds: their label and what they are (the data card lists them with their counts)."""

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
PREFIXES = ("", "", "", "", "Yes, ", "Well, ", "I read that ", "I heard that ", "Actually, ", "Oh, ", "Interesting, ")
ANTONYMS = dict(
    pair
    for a, b in (
        ("first", "last"),
        ("largest", "smallest"),
        ("largest", "second largest"),
        ("before", "after"),
        ("more", "less"),
        ("most", "least"),
        ("highest", "lowest"),
        ("best", "worst"),
        ("oldest", "youngest"),
        ("early", "late"),
        ("north", "south"),
        ("east", "west"),
        ("won", "lost"),
        ("increased", "decreased"),
        ("older", "younger"),
        ("larger", "smaller"),
        ("higher", "lower"),
        ("longest", "shortest"),
        ("male", "female"),
        ("major", "minor"),
        ("public", "private"),
        ("modern", "ancient"),
        ("above", "below"),
        ("inside", "outside"),
        ("popular", "unpopular"),
        ("successful", "unsuccessful"),
        ("many", "few"),
        ("always", "never"),
        ("western", "eastern"),
        ("northern", "southern"),
        ("begins", "ends"),
    )
    for pair in ((a, b), (b, a))
)
SWAP_LABELS = ("PERSON", "ORG", "GPE", "LOC", "NORP", "FAC", "EVENT", "WORK_OF_ART", "PRODUCT", "LANGUAGE", "DATE")
NUMBER_WORDS = ("two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "twelve", "twenty")
AUXILIARIES = {"is", "was", "are", "were", "has", "have", "had", "can", "could", "will", "would", "should", "may"}
MAX_DOCUMENT_CHARS = 700
"""Documents are cut to at most this many characters (about 160 tokens) around their target sentence."""


@dataclass
class Example:
    id: str
    document: str
    history: list[str]
    response: str
    label: str
    kind: str
    source: str
    detail: str = ""
    split: str = "train"
    section: str = field(default="", repr=False)


@dataclass
class Section:
    """A Wikipedia lead section with its sentences (spaCy spans) and entities."""

    key: str
    text: str
    sentences: list  # spaCy Spans
    split: str


def section_split(text: str, test_share: float) -> str:
    """``test`` for a stable ``test_share`` of sections (by a hash of the text), else ``train``."""
    bucket = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF
    return "test" if bucket < test_share else "train"


def restyle(text: str, rng: random.Random) -> str:
    """Sometimes in the lower-case, space-tokenised style of Wizard-of-Wikipedia and BEGIN responses."""
    if rng.random() < 0.25:
        text = re.sub(r"\s*([,.;:!?])", r" \1", text.lower()).strip()
    return text


def with_prefix(sentence: str, rng: random.Random) -> str:
    """The sentence after a conversational opening ("I read that …"), its first word lower-cased if it is a
    function word ("The", "In"), kept otherwise (names)."""
    from spacy.lang.en.stop_words import STOP_WORDS

    prefix = rng.choice(PREFIXES)
    if not prefix:
        return sentence
    first = sentence.split(" ", 1)[0]
    return prefix + (first.lower() if first.lower() in STOP_WORDS else first) + sentence[len(first) :]


def window_around(section: Section, index: int, rng: random.Random) -> str:
    """One to four sentences of the section that include sentence ``index``, within :data:`MAX_DOCUMENT_CHARS`."""
    sentences = [s.text.strip() for s in section.sentences]
    if rng.random() < 0.3:
        return sentences[index]
    start, end = index - rng.randint(0, 2), index + 1 + rng.randint(0, 2)
    start, end = max(0, start), min(len(sentences), end)
    while end - start > 1 and len(" ".join(sentences[start:end])) > MAX_DOCUMENT_CHARS:
        if end - 1 > index:
            end -= 1
        else:
            start += 1
    return " ".join(sentences[start:end])[: MAX_DOCUMENT_CHARS * 2]


def _replace_span(sentence, start: int, end: int, new: str) -> str:
    text = sentence.text
    offset = sentence.start_char
    return (text[: start - offset] + new + text[end - offset :]).strip()


def _same_text(a: str, b: str) -> bool:
    a, b = a.lower().strip(), b.lower().strip()
    return a == b or a in b or b in a


def entity_swap(sentence, pool: Sequence, rng: random.Random) -> tuple[str, str] | None:
    """The sentence with one entity replaced by a same-type entity of ``pool`` (spans), or None."""
    entities = [e for e in sentence.ents if e.label_ in SWAP_LABELS]
    rng.shuffle(entities)
    for entity in entities:
        options = sorted({e.text for e in pool if e.label_ == entity.label_ and not _same_text(e.text, entity.text)})
        if options:
            new = rng.choice(options)
            return _replace_span(
                sentence, entity.start_char, entity.end_char, new
            ), f"{entity.label_} {entity.text!r} -> {new!r}"
    return None


def number_change(sentence, rng: random.Random) -> tuple[str, str] | None:
    """The sentence with one year, number or number word changed, or None."""
    tokens = [t for t in sentence if t.like_num]
    rng.shuffle(tokens)
    for token in tokens:
        text = token.text
        if re.fullmatch(r"1[5-9]\d\d|20[0-4]\d", text):
            new = str(int(text) + rng.choice([-1, 1]) * rng.randint(1, 12))
        elif re.fullmatch(r"\d+", text):
            value = int(text)
            new = str(rng.choice([value + rng.randint(1, 9), value * 2 + 1, max(0, value - rng.randint(1, 9)) or 11]))
        elif re.fullmatch(r"\d[\d,.]*\d", text):
            digits = [i for i, c in enumerate(text) if c.isdigit()]
            position = digits[0]
            new = text[:position] + str((int(text[position]) + rng.randint(1, 8)) % 9 + 1) + text[position + 1 :]
        elif text.lower() in NUMBER_WORDS:
            new = rng.choice([w for w in NUMBER_WORDS if w != text.lower()])
        else:
            continue
        if new != text:
            return _replace_span(sentence, token.idx, token.idx + len(text), new), f"number {text!r} -> {new!r}"
    return None


def negation_flip(sentence) -> tuple[str, str] | None:
    """The sentence with its first negation removed, or ``not`` added to its main verb; None if neither applies."""
    for token in sentence:
        if token.dep_ == "neg":
            start, end = token.idx, token.idx + len(token.text_with_ws)
            if token.text.lower() == "n't":
                head = token.nbor(-1)
                fixed = {"ca": "can", "wo": "will", "sha": "shall"}.get(head.text.lower(), head.text)
                return _replace_span(
                    sentence, head.idx, end, fixed + (" " if token.whitespace_ else "")
                ), "negation removed"
            return _replace_span(sentence, start, end, ""), "negation removed"
    root = sentence.root
    helpers = [c for c in root.children if c.dep_ in ("aux", "auxpass") and c.text.lower() in AUXILIARIES]
    target = helpers[0] if helpers else root if root.text.lower() in AUXILIARIES else None
    if target is not None:
        end = target.idx + len(target.text)
        return _replace_span(sentence, end, end, " not"), f"'not' after {target.text!r}"
    if root.tag_ in ("VBD", "VBZ", "VBP") and root.lemma_:
        helper = {"VBD": "did not", "VBZ": "does not", "VBP": "do not"}[root.tag_]
        return _replace_span(
            sentence, root.idx, root.idx + len(root.text), f"{helper} {root.lemma_}"
        ), f"{root.text!r} -> {helper} {root.lemma_}"
    return None


def antonym_flip(sentence, rng: random.Random) -> tuple[str, str] | None:
    words = [t for t in sentence if t.text.lower() in ANTONYMS]
    if not words:
        return None
    token = rng.choice(words)
    new = ANTONYMS[token.text.lower()]
    new = new.capitalize() if token.text[:1].isupper() else new
    return _replace_span(sentence, token.idx, token.idx + len(token.text), new), f"{token.text!r} -> {new!r}"


def role_swap(sentence) -> tuple[str, str] | None:
    """Two entities of one type (PERSON, ORG, GPE, DATE…) swapped in place, or None."""
    entities = [e for e in sentence.ents if e.label_ in SWAP_LABELS]
    for i, first in enumerate(entities):
        for second in entities[i + 1 :]:
            if first.label_ == second.label_ and not _same_text(first.text, second.text):
                text, offset = sentence.text, sentence.start_char
                a0, a1, b0, b1 = (
                    x - offset for x in (first.start_char, first.end_char, second.start_char, second.end_char)
                )
                swapped = text[:a0] + second.text + text[a1:b0] + first.text + text[b1:]
                return swapped.strip(), f"{first.text!r} <-> {second.text!r}"
    return None


def first_clause(sentence) -> tuple[str, str] | None:
    """The sentence cut at its first comma after at least six words, as a sentence of its own."""
    words = sentence.text.split()
    for position, word in enumerate(words):
        if position >= 6 and word.endswith(",") and position < len(words) - 3:
            clause = " ".join(words[: position + 1]).rstrip(",") + "."
            return clause, f"cut after word {position + 1} of {len(words)}"
    return None


def pronoun_subject(sentence) -> tuple[str, str] | None:
    """The sentence's opening ORG/GPE/PRODUCT/WORK_OF_ART subject replaced by "It" (people's pronouns are guessed
    by no rule here), or None."""
    for entity in sentence.ents:
        if entity.start_char == sentence.start_char and entity.label_ in (
            "ORG",
            "GPE",
            "PRODUCT",
            "WORK_OF_ART",
            "FAC",
        ):
            rest = sentence.text[len(entity.text) :].lstrip()
            if rest[:1].islower():
                return "It " + rest, f"{entity.text!r} -> 'It'"
    return None


def content_words(text: str) -> set[str]:
    from ..metrics.lexical import content_tokens

    return set(content_tokens(text))


def novel_facts(doc, document: str) -> list[str]:
    """Entities and numbers of a parsed response that the document does not contain (case-insensitive)."""
    lowered = document.lower()
    found = [e.text for e in doc.ents if e.label_ not in ("ORDINAL",) and e.text.lower() not in lowered]
    found += [t.text for t in doc if t.like_num and t.text.lower() not in lowered and not t.ent_type_]
    return found


@dataclass
class Context:
    """A corpus turn: its document's sections, its history and the human response."""

    row_id: str
    sections: list[str]
    history: list[str]
    response: str
    personal: bool
    factual: bool


MIN_SECTION_CHARS = 80
"""Shorter paragraphs (headings, one-liners) are not used as documents."""


def wiki_contexts(
    folder: str | Path, histories: Sequence[Context], exclude_split: str, seed: int, min_chars: int = MIN_SECTION_CHARS
) -> list[Context]:
    """One context per Topical-Chat Wikipedia section (``wiki.json``) that no conversation of ``exclude_split``
    reads (keep the split you evaluate dialogue models on out), each with the history of a random turn."""
    from ..data.corpora.topicalchat import _files

    _, reading_file, wiki_file = _files(Path(folder), exclude_split)
    wiki = json.loads(wiki_file.read_text(encoding="utf-8"))
    reading_sets = json.loads(reading_file.read_text(encoding="utf-8"))
    excluded = {
        (key, str(section[key]))
        for conversation in reading_sets.values()
        for agent in conversation.values()
        if isinstance(agent, dict)
        for section in agent.values()
        if isinstance(section, dict)
        for key in ("shortened_wiki_lead_section", "summarized_wiki_lead_section")
        if key in section
    }
    texts = sorted(  # pre-build reading sets name a section by id, post-build ones hold its text
        {
            text
            for key, sections in wiki.items()
            for text, id_ in sections.items()
            if (key, str(id_)) not in excluded and (key, text) not in excluded
        }
    )
    rng = random.Random(seed)
    return [
        Context(
            f"wiki:{hashlib.sha256(text.encode()).hexdigest()[:12]}",
            [text],
            rng.choice(histories).history,
            "",
            False,
            False,
        )
        for text in texts
        if len(text) > min_chars
    ]


def topicalchat_contexts(folder: str | Path, split: str, min_chars: int = MIN_SECTION_CHARS) -> list[Context]:
    """Every turn of a Topical-Chat split with a Wikipedia document, personal-knowledge turns included."""
    from ..data.corpora.topicalchat import PERSONAL, load_topicalchat

    rows = load_topicalchat(split, folder, history_turns=2, keep_personal=True)
    contexts = []
    for row in rows:
        named = row["knowledge_source"]
        sections = [s.strip() for s in row["document"].split("\n") if len(s.strip()) > min_chars]
        if sections and row["history"]:
            contexts.append(
                Context(
                    row["id"],
                    sections,
                    list(row["history"]),
                    row["response"],
                    personal=PERSONAL in named,
                    factual=any(n.startswith("FS") for n in named),
                )
            )
    return contexts


class Builder:
    """Makes examples of each kind from contexts; ``nlp`` is a spaCy pipeline with a parser and NER."""

    def __init__(self, contexts: list[Context], nlp, seed: int, test_share: float):
        self.contexts, self.nlp, self.rng = contexts, nlp, random.Random(seed)
        texts = sorted({s for c in contexts for s in c.sections})
        self.sections = {
            text: Section(
                hashlib.sha256(text.encode()).hexdigest()[:12], text, list(doc.sents), section_split(text, test_share)
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
        rng = self.rng
        section, index = self._target(context)
        if index < 0:
            return None
        sentence = section.sentences[index]
        document = window_around(section, index, rng)
        made: tuple[str, str] | None
        split = section.split
        if kind == "extractive":
            made = sentence.text.strip(), ""
        elif kind == "clause":
            made = first_clause(sentence)
        elif kind == "pronoun":
            made = pronoun_subject(sentence)
        elif kind == "swap_same_document":
            pool = [e for s in section.sentences for e in s.ents]
            made = entity_swap(sentence, pool, rng)
        elif kind == "swap_other_document":
            made = entity_swap(
                sentence, self.rng.sample(self.entities[split], min(400, len(self.entities[split]))), rng
            )
        elif kind == "number":
            made = number_change(sentence, rng)
        elif kind == "negation":
            made = negation_flip(sentence)
        elif kind == "antonym":
            made = antonym_flip(sentence, rng)
        elif kind == "role_swap":
            made = role_swap(sentence)
        elif kind in ("added_claim", "unrelated_claim"):
            other = rng.choice(self.claims[split])
            if _same_text(other.text, section.text) or other.text in document:
                return None
            made = (
                (sentence.text.strip() + " " + other.text.strip(), "added: " + other.text.strip()[:60])
                if kind == "added_claim"
                else (other.text.strip(), "from another section")
            )
        elif kind == "generic_template":
            made = rng.choice(GENERIC_REPLIES), ""
        else:
            return self._human(kind, context, section, document)
        if made is None:
            return None
        response, detail = made
        if kind != "generic_template":
            response = with_prefix(response, rng)
        return self._example(kind, context, section, document, restyle(response, rng), detail)

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
        return self._example(kind, context, section, document, response, "human turn")

    def _window_for(self, section: Section, words: set[str]) -> str:
        index = max(range(len(section.sentences)), key=lambda i: len(words & content_words(section.sentences[i].text)))
        return window_around(section, index, self.rng)

    def _example(self, kind, context, section, document, response, detail) -> Example:
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


def lm_claims(contexts: Sequence[Context], count: int, generate, nlp, builder: Builder) -> list[Example]:
    """Replies of an LM that was shown the history only, kept where they name an entity or number that the
    context's document does not: added claims of the kind a model hallucinates. ``generate`` maps a list of
    histories to replies; it is asked in rounds of twice what is still missing."""
    examples: list[Example] = []
    position = 0
    while len(examples) < count and position < len(contexts):
        batch = contexts[position : position + 2 * (count - len(examples))]
        position += len(batch)
        for context, reply in zip(batch, generate([c.history for c in batch])):
            reply = reply.strip()
            novel = novel_facts(nlp(reply), "\n".join(context.sections)) if reply else []
            if novel and len(reply.split()) >= 4 and len(examples) < count:
                section = builder.sections[context.sections[0]]
                document = (
                    section.text if len(section.text) <= MAX_DOCUMENT_CHARS else window_around(section, 0, builder.rng)
                )
                examples.append(
                    builder._example("lm_claim", context, section, document, reply, "names " + ", ".join(novel[:3]))
                )
    return examples


HUMAN_KINDS = ("human_grounded", "human_generic", "lm_claim")
"""Kinds made from a real turn (its history, its human response); the others from any section."""


def build(
    turns: list[Context],
    sections: list[Context],
    nlp,
    *,
    size: int,
    seed: int = 0,
    test_share: float = 0.1,
    generate: Callable[[Sequence[list[str]]], list[str]] | None = None,
) -> list[Example]:
    """About ``size`` examples in the proportions of :data:`MIX` (``lm_claim`` only with ``generate``),
    deterministic given the contexts and ``seed``; ids are ``<kind>-<n>``. Rule-made kinds visit ``sections``
    (and ``turns``) in a seeded order, several times if needed; human kinds read ``turns``."""
    builder = Builder([*turns, *sections], nlp, seed, test_share)
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
            made = lm_claims(order[len(order) // 2 :], count, generate, nlp, builder)
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


def card(examples: Sequence[Example], sources: Iterable[str], seed: int) -> str:
    """A dataset card: what each kind is, how many of each per split, and how to rebuild the files."""
    counts = Counter((e.kind, e.split) for e in examples)
    lines = [
        "---",
        "license: cdla-sharing-1.0",
        "task_categories: [text-classification]",
        "---",
        "# faithkit claim-checker training data",
        "",
        f"Made by `faithkit checker data` (seed {seed}) from: {', '.join(sources)}.",
        "Documents are split between train and test by section: no Wikipedia section is in both.",
        "",
        "| kind | label | what | train | test |",
        "|---|---|---|---|---|",
    ]
    for kind, (label, what) in KINDS.items():
        lines.append(f"| {kind} | {label} | {what} | {counts[kind, 'train']} | {counts[kind, 'test']} |")
    labels = Counter((e.label, e.split) for e in examples)
    lines += ["", "| label | train | test |", "|---|---|---|"]
    lines += [f"| {label} | {labels[label, 'train']} | {labels[label, 'test']} |" for label in LABELS]
    return "\n".join(lines) + "\n"


def write(examples: Sequence[Example], folder: str | Path, card_text: str) -> dict[str, Path]:
    """``train.jsonl``, ``test.jsonl`` (one example per line; ``datasets.load_dataset("json", ...)`` reads them)
    and ``README.md``, the card."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    paths = {}
    for split in ("train", "test"):
        paths[split] = folder / f"{split}.jsonl"
        with open(paths[split], "w", encoding="utf-8") as stream:
            for example in examples:
                if example.split == split:
                    stream.write(json.dumps(asdict(example), ensure_ascii=False) + "\n")
    (folder / "README.md").write_text(card_text, encoding="utf-8")
    return paths


def read(path: str | Path) -> list[Example]:
    """Examples written by :func:`write`; a line that is not one is an :class:`InputError` naming it."""
    examples = []
    with open(path, encoding="utf-8-sig") as stream:
        for number, line in enumerate(stream, 1):
            try:
                record = json.loads(line)
                if record["label"] not in LABELS:
                    raise ValueError(f"label must be one of {', '.join(LABELS)}, got {record['label']!r}")
                examples.append(Example(**record))
            except (ValueError, KeyError, TypeError) as error:
                raise InputError(f"{path}:{number}: not a checker example ({error})") from None
    return examples


def history_only_replies(model_name: str, seed: int, max_new_tokens: int = 40, batch_size: int = 16):
    """A function from histories to the LM's replies without any document (chat template, left-padded batches,
    sampling at temperature 0.9 and top-p 0.9 seeded with ``seed`` + the batch's number, so a run is reproducible)."""
    import torch

    from .. import models

    model, tokenizer = models.load(model_name)
    tokenizer.padding_side = "left"
    batches = iter(range(seed, seed + 10**9))

    def messages(history: list[str]) -> list[dict]:
        turns = history[-2:]
        return [{"role": "user" if (len(turns) - i) % 2 else "assistant", "content": t} for i, t in enumerate(turns)]

    def replies(histories: Sequence[list[str]]) -> list[str]:
        out: list[str] = []
        for start in range(0, len(histories), batch_size):
            prompts = [
                tokenizer.apply_chat_template(messages(h), add_generation_prompt=True, tokenize=False)
                for h in histories[start : start + batch_size]
            ]
            encoded = tokenizer(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
            torch.manual_seed(next(batches))
            with torch.no_grad():
                output = model.generate(
                    **encoded,
                    do_sample=True,
                    temperature=0.9,
                    top_p=0.9,
                    max_new_tokens=max_new_tokens,
                    pad_token_id=tokenizer.pad_token_id or tokenizer.eos_token_id,
                )
            out += tokenizer.batch_decode(output[:, encoded["input_ids"].shape[1] :], skip_special_tokens=True)
        return out

    return replies


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


def build_from_corpora(config: CheckerData) -> dict:
    """Make and write the data of ``config``; return the counts per label and split."""
    from ..data import data_root
    from ..metrics.q2 import load_spacy

    folder = Path(config.topicalchat) if config.topicalchat else data_root() / "topicalchat"
    turns = topicalchat_contexts(folder, config.split)
    sections = wiki_contexts(folder, turns, config.exclude_split, config.seed)
    nlp = load_spacy()
    generate = None if config.lm == "none" else history_only_replies(config.lm, config.seed)
    examples = build(
        turns, sections, nlp, size=config.size, seed=config.seed, test_share=config.test_share, generate=generate
    )
    sources = [
        f"Topical-Chat {config.split} turns ({folder})",
        f"wiki.json sections not read by {config.exclude_split}",
    ]
    write(examples, config.output, card(examples, sources, config.seed))
    counts = Counter(f"{e.split}/{e.label}" for e in examples)
    return dict(sorted(counts.items()))
