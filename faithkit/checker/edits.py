"""How a document sentence becomes a response: rule edits that keep its facts (a clause, a pronoun, an opening) or
change exactly one (an entity, a number, a negation, an antonym, two roles); each returns ``(text, detail)`` or None
when the sentence does not allow it."""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

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


def replace_span(sentence, start: int, end: int, new: str) -> str:
    text = sentence.text
    offset = sentence.start_char
    return (text[: start - offset] + new + text[end - offset :]).strip()


def same_text(a: str, b: str) -> bool:
    a, b = a.lower().strip(), b.lower().strip()
    return a == b or a in b or b in a


def entity_swap(sentence, pool: Sequence, rng: random.Random) -> tuple[str, str] | None:
    """The sentence with one entity replaced by a same-type entity of ``pool`` (spans), or None."""
    entities = [e for e in sentence.ents if e.label_ in SWAP_LABELS]
    rng.shuffle(entities)
    for entity in entities:
        options = sorted({e.text for e in pool if e.label_ == entity.label_ and not same_text(e.text, entity.text)})
        if options:
            new = rng.choice(options)
            return replace_span(
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
            return replace_span(sentence, token.idx, token.idx + len(text), new), f"number {text!r} -> {new!r}"
    return None


def negation_flip(sentence) -> tuple[str, str] | None:
    """The sentence with its first negation removed, or ``not`` added to its main verb; None if neither applies."""
    for token in sentence:
        if token.dep_ == "neg":
            start, end = token.idx, token.idx + len(token.text_with_ws)
            if token.text.lower() == "n't":
                head = token.nbor(-1)
                fixed = {"ca": "can", "wo": "will", "sha": "shall"}.get(head.text.lower(), head.text)
                return replace_span(
                    sentence, head.idx, end, fixed + (" " if token.whitespace_ else "")
                ), "negation removed"
            return replace_span(sentence, start, end, ""), "negation removed"
    root = sentence.root
    helpers = [c for c in root.children if c.dep_ in ("aux", "auxpass") and c.text.lower() in AUXILIARIES]
    target = helpers[0] if helpers else root if root.text.lower() in AUXILIARIES else None
    if target is not None:
        end = target.idx + len(target.text)
        return replace_span(sentence, end, end, " not"), f"'not' after {target.text!r}"
    if root.tag_ in ("VBD", "VBZ", "VBP") and root.lemma_:
        helper = {"VBD": "did not", "VBZ": "does not", "VBP": "do not"}[root.tag_]
        return replace_span(
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
    return replace_span(sentence, token.idx, token.idx + len(token.text), new), f"{token.text!r} -> {new!r}"


def role_swap(sentence) -> tuple[str, str] | None:
    """Two entities of one type (PERSON, ORG, GPE, DATE…) swapped in place, or None."""
    entities = [e for e in sentence.ents if e.label_ in SWAP_LABELS]
    for i, first in enumerate(entities):
        for second in entities[i + 1 :]:
            if first.label_ == second.label_ and not same_text(first.text, second.text):
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
