"""Server-wide options of the vLLM plugin, read from the environment (both vLLM processes inherit it).

The tool parser runs in vLLM's API server process and the logits processor in its worker processes; neither
gets toolguard options through vLLM's own flags, but both see the environment the server was started with:

- ``TOOLGUARD_VLLM_FORMAT``: the call syntax of the served model's chat template (``hermes``, the default;
  ``llama3``, ``openai``, ``mistral``, ``react``): what the structural tag enforces and the parser reads.
- ``TOOLGUARD_VLLM_RUNAWAY``: ``stop`` turns the runaway stop on for every request (a request opts out with
  ``vllm_xargs: {"toolguard_runaway": "off"}``); ``off`` (the default) leaves it to each request
  (``vllm_xargs: {"toolguard_runaway": "stop"}``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from .._exceptions import ConfigError
from ..engines import TAG_FORMATS, TagFormat

__all__ = [
    "RUNAWAY_ARG",
    "RUNAWAY_STOP",
    "RUNAWAY_VALUES",
    "call_format",
    "runaway_default",
    "runaway_wanted",
]

#: The ``vllm_xargs`` key (``SamplingParams.extra_args``) that turns the runaway stop on or off per request.
RUNAWAY_ARG = "toolguard_runaway"
RUNAWAY_VALUES = ("stop", "off")
#: The stop string the runaway processor writes to end a looping request (U+10FFFD, the last private-use
#: code point: never meaningful text, valid unescaped inside JSON strings). A request that lists it in
#: ``stop`` ends with ``finish_reason: "stop"`` and ``stop_reason`` equal to it when a loop is stopped; the
#: plugin adds it to requests with tools. vLLM cuts it from the text.
RUNAWAY_STOP = "\U0010fffd"


def call_format(environ: Mapping[str, str] = os.environ) -> TagFormat:
    """``TOOLGUARD_VLLM_FORMAT`` (default ``hermes``); raises ``ConfigError`` for an unknown format."""
    value = environ.get("TOOLGUARD_VLLM_FORMAT", "hermes").strip() or "hermes"
    if value not in TAG_FORMATS:
        raise ConfigError(f"TOOLGUARD_VLLM_FORMAT={value!r}: choose one of {sorted(TAG_FORMATS)}")
    return value


def runaway_default(environ: Mapping[str, str] = os.environ) -> str:
    """``TOOLGUARD_VLLM_RUNAWAY`` (``stop`` or ``off``, default ``off``); ``ConfigError`` otherwise."""
    value = environ.get("TOOLGUARD_VLLM_RUNAWAY", "off").strip().lower() or "off"
    if value not in RUNAWAY_VALUES:
        raise ConfigError(f"TOOLGUARD_VLLM_RUNAWAY={value!r}: choose 'stop' or 'off'")
    return value


def runaway_wanted(extra_args: Mapping[str, Any] | None, default: str) -> bool:
    """Whether the runaway stop applies to a request with these ``vllm_xargs`` under the server default."""
    value = (extra_args or {}).get(RUNAWAY_ARG)
    if value is None:
        return default == "stop"
    return bool(value == "stop")
