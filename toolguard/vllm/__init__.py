"""toolguard inside vLLM: a tool-call parser and a runaway logits processor (importable where vLLM is).

Serve a model with both (the demo model here; any model whose chat template writes hermes calls)::

    TOOLGUARD_VLLM_FORMAT=hermes vllm serve MODEL \\
        --enable-auto-tool-choice --tool-parser-plugin toolguard.vllm --tool-call-parser toolguard \\
        --logits-processors toolguard.vllm:RunawayProcessor

(``--tool-parser-plugin "$(toolguard vllm-plugin-path)"`` names the same plugin by file.) Then every
``/v1/chat/completions`` request with tools gets the structural tag that makes the engine enforce the turn,
and its answer contains only valid calls to offered tools, terminated; a request opts into the runaway stop
with ``vllm_xargs: {"toolguard_runaway": "stop"}`` (or every request, with ``TOOLGUARD_VLLM_RUNAWAY=stop``).

- ``ToolguardToolParser`` (``toolguard.vllm._parser``): the ``toolguard`` tool parser.
- ``RunawayProcessor`` (``toolguard.vllm._processor``): the logits processor.
- ``RUNAWAY_STOP``: the stop string a stopped loop ends with (``stop_reason``).

Importing this package imports vLLM (and registers the parser); toolguard's core never imports it.
"""

from __future__ import annotations

from ._options import RUNAWAY_ARG, RUNAWAY_STOP
from ._parser import ToolguardToolParser
from ._processor import RunawayProcessor

__all__ = ["RUNAWAY_ARG", "RUNAWAY_STOP", "RunawayProcessor", "ToolguardToolParser"]
