"""llm-judge: a model served over an OpenAI-compatible API asked the annotation page's faithfulness question.

The prompt shows the document, the dialogue and the response, then the statement and definition
annotators rate (:data:`faithkit.questions.DIMENSIONS`), on the page's scale (agree, neutral,
disagree: 1, 0.5, 0). Where the server returns log-probabilities, the score is the expected value
over the answers' probabilities at the reply's first token, as G-Eval weights its ratings; without
them, the value of the answer the reply names. Requests go through :class:`faithkit.serving.engine.Engine`
(retries, one-line errors; the API key to the server only).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from ..questions import ANSWERS, DIMENSIONS
from ..serving.engine import Engine, EngineOptions, Reply, api_key
from ..errors import ConfigError
from .base import Metric, check_columns, check_not_empty

SCALE = dict(zip(ANSWERS, (1.0, 0.5, 0.0)))
"""Each answer's score: agree (faithful) 1, neutral 0.5, disagree 0."""
TOP_LOGPROBS = 10
"""First-token alternatives asked for (OpenAI's API allows up to 20)."""
MAX_TOKENS = 8
"""Enough for a one-word answer; the score reads the first token (or the first answer word) only."""
_ANSWER_WORD = re.compile(rf"\b({'|'.join(ANSWERS)})\b", re.IGNORECASE)


def judge_messages(document: str, history: Sequence[str], response: str) -> list[dict]:
    """The chat messages the judge gets: the page's faithfulness statement and definition about one response, so a
    model is asked what human raters are asked.

    Args:
        document (`str`): the document.
        history (`Sequence[str]`): the dialogue's turns, the user's last.
        response (`str`): the response.

    Examples:

    ```python
    >>> from faithkit.metrics.llm_judge import judge_messages
    >>> messages = judge_messages("Emperor penguins live only in Antarctica.", ["Where do they live?"], "In the Arctic.")
    >>> print(messages[1]["content"])
    Document:
    Emperor penguins live only in Antarctica.
    <BLANKLINE>
    Dialogue:
    User: Where do they live?
    <BLANKLINE>
    Response:
    In the Arctic.
    <BLANKLINE>
    Statement: Everything the response says can be inferred from the document.
    Can the whole response be inferred from the document? Judge this regardless of relevance: a response that is off-topic for the dialogue but supported by the document is faithful.
    Do you agree with the statement? Answer with one word: agree, neutral or disagree.
    ```
    """
    statement, definition = DIMENSIONS["faithfulness"]
    speakers = ["User" if (len(history) - i) % 2 else "Assistant" for i in range(len(history))]  # the last asks
    dialogue = "\n".join(f"{speaker}: {turn}" for speaker, turn in zip(speakers, history)) or "(no earlier turns)"
    question = (
        f"Document:\n{document}\n\nDialogue:\n{dialogue}\n\nResponse:\n{response}\n\n"
        f"Statement: {statement}\n{definition}\n"
        f"Do you agree with the statement? Answer with one word: {', '.join(ANSWERS[:-1])} or {ANSWERS[-1]}."
    )
    return [
        {"role": "system", "content": "You rate responses of a dialogue system that answers from a document."},
        {"role": "user", "content": question},
    ]


def answer_probabilities(first_token: dict[str, float]) -> dict[str, float] | None:
    """Each answer's share of the probability the first token's alternatives give the answers (a token counts for
    the one answer it begins: " Agree", "dis"); None when none begins an answer.

    Args:
        first_token (`dict[str, float]`): the reply's first token's alternatives, token -> log-probability.

    Examples:

    ```python
    >>> import math
    >>> from faithkit.metrics.llm_judge import answer_probabilities
    >>> answer_probabilities({" agree": math.log(0.6), " disagree": math.log(0.2), "The": math.log(0.1)})
    {'agree': 0.7499999999999999, 'neutral': 0.0, 'disagree': 0.25}
    ```
    """
    mass = dict.fromkeys(ANSWERS, 0.0)
    for token, logprob in first_token.items():
        word = token.strip().lower()
        begun = [answer for answer in ANSWERS if word and answer.startswith(word)]
        if len(begun) == 1:
            mass[begun[0]] += math.exp(logprob)
    total = sum(mass.values())
    return {answer: value / total for answer, value in mass.items()} if total > 0 else None


def judged(reply: Reply) -> dict:
    """One row's fields: ``llm_judge`` (None when the reply names no answer and no logprobs weigh one), the reply's
    ``answer``, and the weights ``answer_probs`` where the server sent logprobs.

    Args:
        reply (`Reply`): the server's reply, with its first token's alternatives if it sent them.

    Examples:

    ```python
    >>> from faithkit.metrics.llm_judge import judged
    >>> from faithkit.serving.engine import Reply
    >>> judged(Reply("Disagree.")), judged(Reply("I cannot tell."))
    ({'llm_judge': 0.0, 'answer': 'disagree'}, {'llm_judge': None, 'answer': 'I cannot tell.'})
    ```
    """
    named = _ANSWER_WORD.search(reply.text)
    answer = named.group(1).lower() if named else None
    probabilities = answer_probabilities(reply.first_token) if reply.first_token else None
    if probabilities is not None:
        score: float | None = sum(SCALE[name] * p for name, p in probabilities.items())
    else:
        score = SCALE[answer] if answer else None
    row = {"llm_judge": score, "answer": answer or reply.text.strip()[:80]}
    return row if probabilities is None else {**row, "answer_probs": probabilities}


class LLMJudge(Metric):
    """Score responses by asking a served chat model whether the document supports them, in the ``evaluate`` style.

    Args:
        server (`str`): the OpenAI-compatible API's base URL, e.g. ``http://127.0.0.1:8080/v1`` (llama.cpp's server).
        served_model (`str`, *optional*): the model's name on the server (unset: its only model).
        api_key (`str`, *optional*): the server's key (unset: ``$OPENAI_API_KEY``; local servers need none).

    Examples:

    ```python
    >>> from faithkit.metrics.llm_judge import LLMJudge
    >>> LLMJudge()  # with a server, compute() asks it one request per row
    Traceback (most recent call last):
      ...
    faithkit.errors.ConfigError: llm-judge asks a served model: give the API's base URL with --server, e.g. http://127.0.0.1:8080/v1
    ```
    """

    score_keys = ("llm_judge",)

    def __init__(self, server: str | None = None, served_model: str | None = None, api_key: str | None = None):
        self.engine = served_engine(server, served_model, api_key)

    def compute_rows(
        self, documents: Sequence[str], histories, responses: Sequence[str], references=None
    ) -> list[dict]:
        """One dict per row, asked ``concurrency`` at a time (greedy, seed 0)."""
        documents, histories, responses, _ = check_columns(documents, histories, responses)
        check_not_empty(documents, responses)

        def ask(row) -> dict:
            reply = self.engine.reply(
                judge_messages(*row), MAX_TOKENS, temperature=0.0, top_p=1.0, seed=0, top_logprobs=TOP_LOGPROBS
            )
            return judged(reply)

        return self.engine.map(ask, zip(documents, histories, responses))


def served_engine(server: str | None, served_model: str | None, key: str | None) -> Engine:
    """The judge's :class:`Engine` (it asks the server which model it serves); a ConfigError without ``server``.

    Args:
        server (`str`, *optional*): the API's base URL.
        served_model (`str`, *optional*): the model's name there.
        key (`str`, *optional*): the API key.

    Examples:

    ```python
    >>> from faithkit.metrics.llm_judge import served_engine
    >>> served_engine(None, None, None)
    Traceback (most recent call last):
      ...
    faithkit.errors.ConfigError: llm-judge asks a served model: give the API's base URL with --server, e.g. http://127.0.0.1:8080/v1
    ```
    """
    if not server:
        raise ConfigError(
            "llm-judge asks a served model: give the API's base URL with --server, e.g. http://127.0.0.1:8080/v1"
        )
    return Engine(server, served_model, api_key(key), EngineOptions())


__all__ = ["LLMJudge", "judge_messages"]
