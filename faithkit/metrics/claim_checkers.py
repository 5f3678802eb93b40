"""Claim checkers from the hub: fact-checking classifiers, run as their authors run them, as one metric family.

A claim checker reads (document, claim) and gives the probability that the document supports the claim.
Documents are longer than these models read, and responses hold several claims, so every checker here
scores a response the same way:

* the document is cut into overlapping windows of ``window`` tokens of the checker's own tokenizer,
  ``stride`` tokens apart (the last window ends at the document's end);
* the response is split into sentences (spaCy's rule-based sentencizer);
* each sentence's score is its best window (a claim is supported if some part of the document supports
  it), and the response's score is its worst sentence (one unsupported sentence makes it unfaithful),
  or, where the authors average sentences (AlignScore), their mean.

:data:`PRESETS` names each checker: its hub id, architecture, the index of "supported" and how the pair
is written as the model's input. They follow the authors' code (MiniCheck's ``minicheck/inference.py``,
Vectara's ``modeling_hhem_v2.py``, AlignScore's ``inference.py``), with one difference: their
documents are cut into sentence-aligned chunks without overlap, ours into overlapping token windows.
None of these checkpoints could be run here (no hub), so none was measured in this project: the tests
run each architecture on tiny random models (see ``docs/claim_checkers.md``).
HHEM-2.1-Open runs without its remote code (:mod:`.hhem`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from ..errors import ConfigError, ModelNotAvailableError
from ..serving.model_names import is_adapter_folder
from .base import Metric, check_columns
from .faithkit_checker import ADAPTERS, DEFAULT_ADAPTER, three_way_row
from .checker_reading import Reading
from .claim_windows import MAX_WINDOWS, chosen_spans, sentence_spans
from .metric_options import check_option_values

if TYPE_CHECKING:
    from transformers import BatchEncoding

HHEM_PROMPT = "<pad> Determine if the hypothesis is true given the premise?\n\nPremise: {text1}\n\nHypothesis: {text2}"
"""HHEM-2.1-Open's input template (its config's ``prompt``): premise = document window, hypothesis = claim."""


@dataclass(frozen=True)
class CheckerPreset:
    """How one checkpoint is run.

    ``architecture``: ``sequence-classification`` (softmax over the classes), ``seq2seq-label-tokens`` (one
    decoder step from the start token; softmax over the logits of the two ``label_tokens``, unsupported then
    supported, as MiniCheck-Flan-T5 reads them) or ``t5-token-classification`` (HHEM: the first position's
    logits). ``supported``: the index of "supported" in those probabilities. ``input_format``: ``pair`` (the
    tokenizer's sentence pair), ``eos-joined`` (``document + eos + claim`` as one text, as MiniCheck does),
    ``t5-predict`` (``"predict: " + document + eos + claim``) or ``hhem-prompt`` (:data:`HHEM_PROMPT`).
    ``sentences``: how sentence scores combine, ``min`` or ``mean``. ``three_way``: the classes are (supported,
    generic, unsupported), as faithkit's own checker gives them (:mod:`.faithkit_checker`); sentences then combine by
    :func:`.faithkit_checker.combine` and its rows hold :attr:`score_keys` (P(faithful), the verdict, the three
    probabilities) and ``sentences``.

    Args:
        name (`str`): the metric's name.
        hub_id (`str`): the checkpoint (faithkit's own checker: its adapter folder).
        architecture (`str`): one of :data:`ARCHITECTURES`.
        supported (`int`): the index of "supported" among the probabilities.
        input_format (`str`): one of :data:`INPUT_FORMATS`.
        window (`int`): tokens per document window.
        stride (`int`): tokens between window starts.
        max_length (`int`, *optional*): the model's longest input (None: no limit).
        sentences (`str`, defaults to "min"): ``min`` or ``mean`` of the sentences' scores.
        label_tokens (`tuple[int, int]`, *optional*): the decoder's (unsupported, supported) token ids.
        note (`str`, defaults to ""): where the recipe comes from, for the docs' table.
        three_way (`bool`, defaults to False): (supported, generic, unsupported) classes.
        adapter (`str`, defaults to ""): faithkit's checker's adapter, a name of :data:`.faithkit_checker.ADAPTERS`.

    Examples:

    ```python
    >>> from faithkit.metrics.claim_checkers import PRESETS
    >>> preset = PRESETS["minicheck-flan-t5-large"]
    >>> preset.architecture, preset.label_tokens, preset.window, preset.stride, preset.score_key
    ('seq2seq-label-tokens', (3, 209), 500, 375, 'minicheck_flan_t5_large')
    ```
    """

    name: str
    hub_id: str
    architecture: str
    supported: int
    input_format: str
    window: int
    stride: int
    max_length: int | None
    sentences: str = "min"
    label_tokens: tuple[int, int] | None = None
    note: str = ""
    three_way: bool = False
    adapter: str = ""

    @property
    def score_key(self) -> str:
        return self.name.replace("-", "_").replace(".", "_")

    @property
    def score_keys(self) -> tuple[str, ...]:
        """The keys of its rows' scores, the one to rank by first (higher = more faithful)."""
        key = self.score_key
        if self.three_way:
            return (key, f"{key}_verdict", f"{key}_supported", f"{key}_generic", f"{key}_hallucination")
        return (key,)

    @property
    def directions(self) -> dict[str, bool | None]:
        """Each score key's direction: True where higher is more faithful, False where lower is, None neither."""
        if not self.three_way:
            return {self.score_key: True}
        return dict(zip(self.score_keys, (True, True, True, None, False)))


def _faithkit_checker(name: str, adapter: str, note: str) -> CheckerPreset:
    """A preset of faithkit's own checker on one of its adapters (:data:`.faithkit_checker.ADAPTERS`)."""
    return CheckerPreset(
        name,
        f"faithkit/metrics/{ADAPTERS[adapter].name}",
        "causal-lm-label-words",
        0,
        "checker-prompt",
        window=200,
        stride=150,
        max_length=None,
        three_way=True,
        adapter=adapter,
        note=note,
    )


PRESETS: dict[str, CheckerPreset] = {
    preset.name: preset
    for preset in (
        CheckerPreset(
            "nli-roberta-large-mnli",
            "FacebookAI/roberta-large-mnli",
            "sequence-classification",
            2,
            "pair",
            window=400,
            stride=300,
            max_length=512,
            note="the e2e-nli metric's hub model (labels contradiction, neutral, entailment), scored as "
            "P(entailment) instead of the argmax",
        ),
        CheckerPreset(
            "minicheck-roberta-large",
            "lytang/MiniCheck-RoBERTa-Large",
            "sequence-classification",
            1,
            "eos-joined",
            window=400,
            stride=300,
            max_length=512,
            note="MiniCheck (Tang et al. 2024); label 1 = supported; chunks of 400 tokens",
        ),
        CheckerPreset(
            "minicheck-deberta-v3-large",
            "lytang/MiniCheck-DeBERTa-v3-Large",
            "sequence-classification",
            1,
            "eos-joined",
            window=400,
            stride=300,
            max_length=2048,
            note="MiniCheck; label 1 = supported; chunks of 400 tokens, inputs up to 2048",
        ),
        CheckerPreset(
            "minicheck-flan-t5-large",
            "lytang/MiniCheck-Flan-T5-Large",
            "seq2seq-label-tokens",
            1,
            "t5-predict",
            window=500,
            stride=375,
            max_length=2048,
            label_tokens=(3, 209),
            note="MiniCheck; the decoder's first token: id 3 unsupported, 209 supported; the authors' chunks "
            "are 500 words, ours 500 tokens",
        ),
        CheckerPreset(
            "hhem-2.1-open",
            "vectara/hallucination_evaluation_model",
            "t5-token-classification",
            1,
            "hhem-prompt",
            window=500,
            stride=375,
            max_length=None,
            note="Vectara HHEM-2.1-Open on google/flan-t5-base; class 1 = consistent; no length limit",
        ),
        CheckerPreset(
            "alignscore-style",
            "FacebookAI/roberta-large-mnli",
            "sequence-classification",
            2,
            "pair",
            window=350,
            stride=350,
            max_length=512,
            sentences="mean",
            note="AlignScore's recipe (Zha et al. 2023): chunks of about 350 tokens, each sentence its best "
            "chunk, the response the mean of its sentences; on an NLI classifier, since AlignScore's own "
            "checkpoints are Lightning files with their own heads, not a transformers model",
        ),
        _faithkit_checker(
            "faithkit-checker",
            DEFAULT_ADAPTER,
            f"faithkit's own checker (docs/checker.md): today faithkit-checker-{DEFAULT_ADAPTER}'s adapter, under "
            "keys that stay when the default adapter changes; reads the history too; offline",
        ),
        _faithkit_checker(
            "faithkit-checker-smollm2",
            "smollm2",
            "faithkit's checker, a LoRA adapter on smollm2-135m trained on synthetic contradictions; offline",
        ),
        _faithkit_checker(
            "faithkit-checker-gemma",
            "gemma",
            "faithkit's checker on gemma3-270m (configs/checker/gemma3.yaml); its adapter ships once trained",
        ),
    )
}
ARCHITECTURES = ("sequence-classification", "seq2seq-label-tokens", "t5-token-classification", "causal-lm-label-words")
INPUT_FORMATS = ("pair", "eos-joined", "t5-predict", "hhem-prompt", "checker-prompt")


def format_pairs(preset: CheckerPreset, tokenizer, premises: Sequence[str], claims: Sequence[str]) -> BatchEncoding:
    """The model's inputs for (window, claim) pairs in the preset's input format, padded as one batch."""
    options = {"padding": True, "return_tensors": "pt"}
    if preset.max_length is not None:
        options.update(truncation="only_first" if preset.input_format == "pair" else True, max_length=preset.max_length)
    if preset.input_format == "pair":
        return tokenizer(list(premises), list(claims), **options)
    eos = tokenizer.eos_token
    texts = {
        "eos-joined": lambda p, c: p + eos + c,
        "t5-predict": lambda p, c: "predict: " + p + eos + c,
        "hhem-prompt": lambda p, c: HHEM_PROMPT.format(text1=p, text2=c),
    }[preset.input_format]
    return tokenizer([texts(p, c) for p, c in zip(premises, claims)], **options)


class SupportModel:
    """Class probabilities for (window, claim) pairs from a loaded hub checker, batched (histories unread)."""

    def __init__(self, preset: CheckerPreset, model, tokenizer, batch_size: int = 8):
        self.preset, self.model, self.tokenizer, self.batch_size = preset, model, tokenizer, batch_size

    def __call__(self, premises: Sequence[str], claims: Sequence[str], histories=None) -> list[list[float]]:
        import torch

        from ..serving import models

        scores: list[list[float]] = []
        for start in range(0, len(premises), self.batch_size):
            encoded = format_pairs(
                self.preset,
                self.tokenizer,
                premises[start : start + self.batch_size],
                claims[start : start + self.batch_size],
            ).to(models.input_device(self.model))
            with torch.no_grad():
                probabilities = torch.softmax(self._logits(encoded).float(), dim=-1)
            scores += probabilities.tolist()
        return scores

    def _logits(self, encoded):
        import torch

        from ..serving import models

        if self.preset.architecture == "sequence-classification":
            return self.model(**encoded).logits
        if self.preset.architecture == "seq2seq-label-tokens":
            start = torch.full(
                (len(encoded["input_ids"]), 1),
                self.model.config.decoder_start_token_id,
                dtype=torch.long,
                device=models.input_device(self.model),
            )
            logits = self.model(**encoded, decoder_input_ids=start).logits[:, 0, :]
            return logits[:, list(self.preset.label_tokens)]
        return self.model(**encoded).logits[:, 0, :]  # t5-token-classification: the first position


def load_support_model(preset: CheckerPreset, name: str | None, device=None, batch_size: int = 8, dtype=None):
    """The preset's model from ``name`` (a hub id or a local folder; None: the preset's own), ready to score pairs."""
    from ..serving import models

    if preset.architecture == "causal-lm-label-words":
        from .faithkit_checker import load_checker

        if name is None and not is_adapter_folder(ADAPTERS[preset.adapter]):
            raise ConfigError(
                f"{preset.name}: its adapter is not in {ADAPTERS[preset.adapter]} (it ships once trained); train "
                "it with 'faithkit checker train --config configs/checker/gemma3.yaml' and copy the run's adapter/ "
                "folder there, or give --nli-model ADAPTER_FOLDER"
            )
        return load_checker(name or str(ADAPTERS[preset.adapter]), device, dtype, batch_size)
    name = name or preset.hub_id
    if preset.architecture == "t5-token-classification":
        from .hhem import load_hhem

        model, tokenizer = load_hhem(name, device, dtype)
    else:
        kind = "sequence-classification" if preset.architecture == "sequence-classification" else "seq2seq"
        try:
            model, tokenizer = models.load(name, kind=kind, device=device, dtype=dtype)
        except ModelNotAvailableError:
            if Path(name).expanduser().exists():
                raise
            raise ModelNotAvailableError(  # the offline names are causal LMs, which no hub checker can read
                f"claim checker {preset.name}: '{name}' is not a local folder or in the Hugging Face cache, and could "
                f"not be downloaded; give a local copy of a {preset.name} checkpoint (nli_model=FOLDER, "
                f"--nli-model FOLDER), or check claims offline with faithkit-checker, or download it where the hub "
                f"is reachable (`hf download {name}`) and copy the cache"
            ) from None
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    if not tokenizer.is_fast:
        raise ConfigError(
            f"claim checker {name}: its tokenizer has no fast version, which cutting the document "
            f"into token windows needs (offsets); install the tokenizers package"
        )
    if preset.label_tokens and max(preset.label_tokens) >= model.config.vocab_size:
        raise ConfigError(
            f"claim checker {name} has a vocabulary of {model.config.vocab_size}, without the label "
            f"tokens {preset.label_tokens} that {preset.name} reads; give a {preset.name} checkpoint"
        )
    classes = len(preset.label_tokens) if preset.label_tokens else model.config.num_labels
    if preset.supported >= classes:
        raise ConfigError(
            f"claim checker {name} has {classes} classes, so it cannot be read as {preset.name}, "
            f"whose 'supported' class is {preset.supported}; give a {preset.name} checkpoint"
        )
    return SupportModel(preset, model, tokenizer, batch_size)


class ClaimScores(NamedTuple):
    """:meth:`ClaimChecker.score`'s result, in the order of MiniCheck's first two: per claim its label (1 supported,
    0 not) and its probability."""

    labels: list[int]
    probabilities: list[float]


class ClaimChecker(Metric):
    """A claim checker as a metric: per response, the support of its worst sentence in the document's best window.

    ``preset`` names the checker (:data:`PRESETS`); ``nli_model`` replaces its hub id (e.g. a local copy);
    ``window`` and ``stride`` its token windows, of which at most ``max_windows`` are scored
    (:func:`chosen_windows`; a row that left some out says ``windows`` and ``truncated_chars``). Per row: the score
    (key: the preset's name with ``_``), and ``sentence_scores``, each sentence's best-window support; faithkit's
    own checker's rows hold more (:func:`.faithkit_checker.three_way_row`). ``support`` (tests, other backends) replaces the model: a
    function from (windows, claims, histories) to class probabilities, with ``tokenizer`` cutting the windows (and
    its ``reading`` attribute, if any, reading faithkit's checker's three). A sentence's best window is the one where
    "supported" is likeliest.

    Args:
        preset (`str`): a name of :data:`PRESETS`.
        nli_model (`str`, *optional*): replaces the preset's checkpoint (a hub id or local folder).
        window (`int`, *optional*): tokens per document window (default: the preset's).
        stride (`int`, *optional*): tokens between window starts (default: the preset's).
        max_windows (`int`, defaults to 16): windows scored per row at most.
        batch_size (`int`, defaults to 8): pairs per forward pass.
        device (`str`, *optional*): where the checker runs (default: a GPU if any).
        dtype (`str`, *optional*): its precision (:data:`faithkit.serving.precision.DTYPES`).
        support (`Callable`, *optional*): stands in for the support model (tests and other backends).
        tokenizer (`PreTrainedTokenizerFast`, *optional*): cuts the windows when ``support`` is given.

    Examples:

    faithkit's own checker runs offline (the hub presets download their checkpoints the same way):

    ```python
    >>> from faithkit.metrics import load_metric
    >>> checker = load_metric("faithkit-checker")  # ClaimChecker("faithkit-checker")
    >>> document = "Emperor penguins live only in Antarctica. They breed during the Antarctic winter."
    >>> result = checker.compute(
    ...     documents=[document] * 2,
    ...     histories=[["Where do emperor penguins live?"]] * 2,
    ...     responses=["They live only in Antarctica. I love them!", "They live in the Arctic, close to polar bears."],
    ... )
    >>> [round(p, 2) for p in result["faithkit_checker"]], result["faithkit_checker_verdict"]  # P(faithful), verdict
    ([0.71, 0.26], [1.0, 0.0])
    >>> [round(p, 2) for p in result["faithkit_checker_supported"]], [round(p, 2) for p in result["faithkit_checker_hallucination"]]
    ([0.7, 0.21], [0.29, 0.74])
    >>> [[(s["text"], round(s["unsupported"], 2)) for s in sentences] for sentences in result["sentences"]]
    [[('They live only in Antarctica.', 0.29), ('I love them!', 0.0)], [('They live in the Arctic, close to polar bears.', 0.74)]]
    ```

    MiniCheck's call (:meth:`score`): documents and claims in, a label and a probability per claim out:

    ```python
    >>> labels, probabilities = checker.score(
    ...     documents=[document] * 2,
    ...     claims=["They live only in Antarctica. I love them!", "They live in the Arctic, close to polar bears."],
    ...     histories=[["Where do emperor penguins live?"]] * 2,
    ... )
    >>> labels, [round(p, 2) for p in probabilities]  # 1 supported, 0 not; P(faithful)
    ([1, 0], [0.71, 0.26])
    >>> checker.score(documents=[document] * 2, claims=["They live only in Antarctica."])
    Traceback (most recent call last):
      ...
    ValueError: documents, claims must have the same length (one of each per claim), got 2, 1
    ```
    """

    def __init__(
        self,
        preset: str,
        nli_model: str | None = None,
        window: int | None = None,
        stride: int | None = None,
        max_windows: int = MAX_WINDOWS,
        batch_size: int = 8,
        device=None,
        dtype=None,
        support: Callable[[Sequence[str], Sequence[str], Sequence[Sequence[str]]], list[list[float]]] | None = None,
        tokenizer=None,
    ):
        if preset not in PRESETS:
            raise ValueError(f"unknown claim checker {preset!r}; choose one of {', '.join(PRESETS)}")
        check_option_values(batch_size=batch_size, window=window, stride=stride, max_windows=max_windows)
        self.max_windows = max_windows
        self.preset = PRESETS[preset]
        self.window, self.stride = window or self.preset.window, stride or self.preset.stride
        if self.window < 1 or not 1 <= self.stride <= self.window:
            raise ValueError(
                f"window must be at least 1 and stride between 1 and window, got window={self.window}, "
                f"stride={self.stride}"
            )
        self.score_keys = self.preset.score_keys
        if support is None:
            support = load_support_model(self.preset, nli_model, device, batch_size, dtype)
            tokenizer = support.tokenizer
        self.support, self.tokenizer = support, tokenizer
        self.reading: Reading = getattr(support, "reading", None) or Reading()

    def compute_rows(
        self, documents: Sequence[str], histories, responses: Sequence[str], references=None
    ) -> list[dict]:
        """One dict per row: the response's score(s) and each sentence's best-window P(supported); histories are
        read by the presets that take them (``faithkit-checker``)."""
        documents, histories, responses, _ = check_columns(documents, histories, responses)
        cases, left_out = [], []
        for document, history, response in zip(documents, histories, responses):
            sentences = sentence_spans(response)
            texts = [response[start:end] for start, end in sentences]
            windows, chars = chosen_spans(document, texts, self.tokenizer, self.window, self.stride, self.max_windows)
            cases.append((windows, sentences, document, history, response))
            left_out.append(chars)
        premises = [d[a:b] for windows, sentences, d, _, _ in cases for _ in sentences for a, b in windows]
        claims = [r[a:b] for windows, sentences, _, _, r in cases for a, b in sentences for _ in windows]
        contexts = [h for windows, sentences, _, h, _ in cases for _ in sentences for _ in windows]
        probabilities = iter(self.support(premises, claims, contexts) if premises else [])
        supported = self.preset.supported
        rows = []
        for (windows, sentences, _, _, response), chars in zip(cases, left_out):
            judged = []  # per sentence: its best window and that window's probabilities
            for _ in sentences:
                scored = [(next(probabilities), span) for span in windows]
                judged.append(max(scored, key=lambda pair: pair[0][supported]))
            if self.preset.three_way:
                row = three_way_row(judged, sentences, response, self.reading, self.score_keys)
            else:
                row = self._combine([probabilities for probabilities, _ in judged])
            cut = {"windows": len(windows), "truncated_chars": chars, "truncated_from": "outside the windows"}
            rows.append({**row, **cut} if chars else row)
        return rows

    def score(self, documents: Sequence[str], claims: Sequence[str], histories=None) -> ClaimScores:
        """MiniCheck's call: documents and claims in, per claim a label and a probability out, in MiniCheck's order.

        ``pred_labels, probabilities, _, _ = MiniCheck(...).score(docs=..., claims=...)`` reads here
        ``labels, probabilities = checker.score(documents=..., claims=...)``: ``documents`` is MiniCheck's ``docs``
        (faithkit's one name for them), and MiniCheck's last two results (its chunks and their probabilities) are a
        row's ``sentences`` or ``sentence_scores`` in :meth:`compute_rows`. The probability is the metric's first
        score (faithkit's checker: P(faithful); a hub checker: its worst sentence's P(supported)); the label is 1
        (supported) or 0: faithkit's checker's verdict, or MiniCheck's rule (the probability above 0.5).

        Args:
            documents (`Sequence[str]`): one grounding document per claim.
            claims (`Sequence[str]`): the claims (responses) to check, none empty.
            histories (`Sequence`, *optional*): one dialogue history per claim, read by faithkit's checker only.

        Returns:
            `ClaimScores`: ``(labels, probabilities)``, one of each per claim.

        The class's example calls it.
        """
        columns = {"documents": documents, "claims": claims}
        for name, column in columns.items():
            if isinstance(column, str):
                raise TypeError(f"{name} must be a list, got a single string; wrap it in a list")
        lengths = {name: len(column) for name, column in columns.items()}
        if histories is not None:
            lengths["histories"] = len(histories)
        if len(set(lengths.values())) > 1:
            raise ValueError(
                f"{', '.join(lengths)} must have the same length (one of each per claim), got "
                f"{', '.join(str(n) for n in lengths.values())}"
            )
        for name, column in columns.items():
            for i, text in enumerate(column):
                if not isinstance(text, str) or not text.strip():
                    given = "empty" if isinstance(text, str) else f"a {type(text).__name__}, not a string"
                    raise ValueError(f"{name}[{i}] is {given}; each of {name} must be a non-empty string")
        rows = self.compute_rows(list(documents), histories, list(claims))
        probabilities = [row[self.score_keys[0]] for row in rows]
        if self.preset.three_way:
            return ClaimScores([int(row[self.score_keys[1]]) for row in rows], probabilities)
        return ClaimScores([int(probability > 0.5) for probability in probabilities], probabilities)

    def _combine(self, best: list[list[float]]) -> dict:
        per_sentence = [row[self.preset.supported] for row in best]
        score = min(per_sentence) if self.preset.sentences == "min" else sum(per_sentence) / len(per_sentence)
        return {self.preset.score_key: score, "sentence_scores": per_sentence}


__all__ = ["ClaimChecker", "ClaimScores", "CheckerPreset", "PRESETS"]
