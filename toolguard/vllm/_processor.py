"""``RunawayProcessor``: toolguard's repetition-loop stop inside the vLLM engine (a v1 logits processor).

Theory of operation
-------------------
Load it with ``--logits-processors toolguard.vllm:RunawayProcessor``. It is a no-op for every request that
did not ask for it (``vllm_xargs: {"toolguard_runaway": "stop"}``, or every request when the server runs with
``TOOLGUARD_VLLM_RUNAWAY=stop``; ``"off"`` opts a request out). For a request it watches, each step:

1. **detect**: the tokens sampled since the last step are detokenized with the same incremental decoder vLLM
   uses (``tokenizers.decoders.DecodeStream`` primed with the prompt) and pushed, as text, into a
   ``RunawayDetector`` with the default configuration. Text only, no token ids: the detector's checkpoints
   then depend only on the text, so the tool parser, which runs the same detector over the same text, sees
   the loop at the same character and knows the answer was stopped.
2. **stop**, without ever choosing a token the grammar forbids (vLLM applies the structured-output mask
   before custom processors, so a token whose logit is ``-inf`` here is forbidden; forcing one makes the
   request fail with a 500 "grammar rejected tokens"). In order of preference, among the tokens still
   allowed:

   - **the stop string**: when the request lists ``RUNAWAY_STOP`` (U+10FFFD) among its ``stop`` strings (the
     plugin's tool parser adds it to every request with tools that the stop applies to), its tokens are
     forced one per step. The character is valid in free text and inside JSON strings, where loops happen
     and where EOS is forbidden; vLLM's detokenizer then ends the request with ``finish_reason: "stop"`` and
     ``stop_reason: "\\U0010fffd"``, cut from the text. This is the visible stop.
   - **end of sequence**: a stop token (EOS, or the request's ``stop_token_ids``) if the grammar allows one
     here; ``finish_reason: "stop"``, ``stop_reason: null``.
   - **close the structure**: otherwise (inside a JSON value under a grammar), the allowed token with the
     best logit among the *closers* — tokens made of ``"``, ``}``, ``]``, ``,`` and whitespace, starting with
     one of the first three — so a string ends, then the object, then the call, until one of the exits
     above is allowed. The arguments written so far stay in the output, where the tool parser sees the loop
     and withholds the call.
   - **wind down**: when no closer is allowed either, the tokens of the loop's last copy are banned (never all
     allowed tokens), so the loop cannot go on, and each later step tries the exits above again. Bounded by
     the request's ``max_tokens``.

Per-request state lives in this worker process and dies with the request; nothing is shared between
requests or replicas. Cost per step: nothing for rows that did not opt in; for a watched row one decoder step
and one detector push per new token (measured in ``benchmarks/vllm_plugin.py``), and a few tensor reads on
that row only once a loop was found.
"""

from __future__ import annotations

import logging
from collections import deque
from typing import TYPE_CHECKING, Any

import torch
from vllm.sampling_params import SamplingParams
from vllm.v1.sample.logits_processor import BatchUpdate, LogitsProcessor
from vllm.v1.sample.logits_processor.builtin import process_dict_updates

from .._runaway import RunawayConfig, RunawayDetector
from ._options import RUNAWAY_ARG, RUNAWAY_STOP, RUNAWAY_VALUES, runaway_default, runaway_wanted

if TYPE_CHECKING:
    from vllm.config import VllmConfig

__all__ = ["RunawayProcessor"]

_log = logging.getLogger("vllm.toolguard")
_CONFIG = RunawayConfig()  # shared with the tool parser's Guard: the same thresholds see the same loop
_RECENT = 64  # tokens remembered per row, to find the last copy of a loop's unit
_NEG_INF = float("-inf")


class _Row:
    """One watched request: its decoder, detector and, once a loop is found, how it is being stopped."""

    __slots__ = (
        "banned", "detector", "ends", "fed", "loop", "output", "recent", "sent", "sentinel", "stream",
    )

    def __init__(self, proc: RunawayProcessor, params: SamplingParams, prompt: list[int] | None,
                 output: list[int]) -> None:
        self.output = output  # vLLM's live list of this request's output token ids
        self.fed = 0
        self.detector = RunawayDetector(config=_CONFIG)
        self.stream = proc.decode_stream(prompt, params)
        self.recent: deque[tuple[int, int]] = deque(maxlen=_RECENT)  # (token id, characters)
        self.loop: Any = None
        self.banned: list[int] = []
        stops = set(params.stop_token_ids or ())
        if not params.ignore_eos:
            stops |= set(getattr(params, "all_stop_token_ids", ()) or ())
            if params.eos_token_id is not None:
                stops.add(params.eos_token_id)
        self.ends = sorted(stops)
        wanted = RUNAWAY_STOP in (params.stop or ())
        self.sentinel = proc.sentinel_ids if wanted else []
        self.sent = 0

    def catch_up(self, proc: RunawayProcessor) -> None:
        output = self.output
        while self.fed < len(output):
            token = output[self.fed]
            if token < 0:  # a placeholder for a token still being sampled (async scheduling)
                break
            self.fed += 1
            text = proc.decode(self.stream, token)
            if self.loop is None:
                self.recent.append((token, len(text)))
                found = self.detector.push(text)
                if found is not None:
                    self._found(found)

    def _found(self, loop: Any) -> None:
        self.loop = loop
        need, banned = loop.period, []
        for token, chars in reversed(self.recent):
            banned.append(token)
            need -= chars
            if need <= 0:
                break
        self.banned = sorted(set(banned))
        _log.warning("toolguard runaway: %s loop of %d x %r found after %d characters; stopping the request",
                     loop.kind, loop.copies, loop.unit[:40], loop.detected_at)

    def steer(self, logits: torch.Tensor, proc: RunawayProcessor) -> None:
        """Force the next token of the best exit the grammar still allows (see the module docstring)."""
        if self.sent < len(self.sentinel):
            token = self.sentinel[self.sent]
            if logits[token] > _NEG_INF:
                self.sent += 1
                _force(logits, token)
                return
            self.sent = len(self.sentinel)  # the grammar forbids it here: use the other exits
        if self.ends:
            ends = torch.tensor(self.ends, device=logits.device)
            scores = logits[ends]
            best = int(torch.argmax(scores))
            if scores[best] > _NEG_INF:
                _force(logits, self.ends[best])
                return
        closers = proc.closers
        if closers is not None and len(closers):
            scores = logits[closers]
            best = int(torch.argmax(scores))
            if scores[best] > _NEG_INF:
                _force(logits, int(closers[best]))
                return
        if self.banned:
            keep = logits.clone()
            logits[self.banned] = _NEG_INF
            if not bool(torch.isfinite(logits).any()):
                logits.copy_(keep)  # banning would leave nothing: let the grammar's choice stand


def _force(logits: torch.Tensor, token: int) -> None:
    logits.fill_(_NEG_INF)
    logits[token] = 0.0


class RunawayProcessor(LogitsProcessor):  # type: ignore[misc]  # vLLM ships no type information
    """vLLM v1 logits processor stopping repetition loops (see the module docstring).

    ``--logits-processors toolguard.vllm:RunawayProcessor``; per request ``vllm_xargs: {"toolguard_runaway":
    "stop"}`` (or ``"off"``); ``TOOLGUARD_VLLM_RUNAWAY=stop`` for every request. A bad value is a 400.
    """

    @classmethod
    def validate_params(cls, sampling_params: SamplingParams) -> None:
        value = (sampling_params.extra_args or {}).get(RUNAWAY_ARG)
        if value is not None and value not in RUNAWAY_VALUES:
            raise ValueError(f"vllm_xargs.{RUNAWAY_ARG} must be one of {list(RUNAWAY_VALUES)}, not {value!r}")

    def __init__(self, vllm_config: VllmConfig, device: torch.device, is_pin_memory: bool) -> None:
        from vllm.tokenizers import cached_tokenizer_from_config

        self._default = runaway_default()
        self._rows: dict[int, _Row] = {}
        self._tokenizer: Any = None
        self._backend: Any = None
        self.sentinel_ids: list[int] = []
        self.closers: torch.Tensor | None = None
        model_config = getattr(vllm_config, "model_config", None)
        if model_config is not None and not getattr(model_config, "skip_tokenizer_init", False):
            self._tokenizer = cached_tokenizer_from_config(model_config)
            self._backend = getattr(self._tokenizer, "_tokenizer", None)
            self.sentinel_ids = _sentinel_ids(self._tokenizer)
            self.closers = torch.tensor(_closer_ids(self._tokenizer), dtype=torch.long, device=device)

    def is_argmax_invariant(self) -> bool:
        return False  # it forces tokens

    def update_state(self, batch_update: BatchUpdate | None) -> None:
        process_dict_updates(self._rows, batch_update, self._new_row)

    def _new_row(self, params: SamplingParams, prompt: list[int] | None, output: list[int]) -> _Row | None:
        if self._tokenizer is None or not runaway_wanted(params.extra_args, self._default):
            return None
        return _Row(self, params, prompt, output)

    def apply(self, logits: torch.Tensor) -> torch.Tensor:
        for index, row in self._rows.items():
            row.catch_up(self)
            if row.loop is not None:
                row.steer(logits[index], self)
        return logits

    # -- detokenizing, as vLLM's FastIncrementalDetokenizer does ------------------------------------------
    def decode_stream(self, prompt: list[int] | None, params: SamplingParams) -> Any:
        if self._backend is None:
            return None
        from tokenizers.decoders import DecodeStream

        return DecodeStream(ids=list(prompt or ()), skip_special_tokens=params.skip_special_tokens)

    def decode(self, stream: Any, token: int) -> str:
        if stream is None:  # a tokenizer without a Rust backend: per-token decoding (approximate)
            return str(self._tokenizer.decode([token], skip_special_tokens=True))
        try:
            return stream.step(self._backend, token) or ""
        except Exception:  # tokenizers raises plain Exceptions on invalid UTF-8 prefixes
            return ""


_CLOSING = frozenset('"}]')
_CLOSER_CHARS = frozenset('"}], \t\r\n')


def _closer_ids(tokenizer: Any) -> list[int]:
    """Token ids whose text closes JSON values: only ``"}],`` and whitespace, the first non-space a closer.
    One pass over the vocabulary when the processor is built (about a second for 150k tokens)."""
    ids = []
    for token_id in range(len(tokenizer)):
        try:
            text = tokenizer.decode([token_id])
        except Exception:  # ids some tokenizers reserve but cannot decode
            continue
        stripped = text.lstrip()
        if stripped and stripped[0] in _CLOSING and set(text) <= _CLOSER_CHARS:
            ids.append(token_id)
    return ids


def _sentinel_ids(tokenizer: Any) -> list[int]:
    """The token ids that write ``RUNAWAY_STOP``; empty when the tokenizer cannot write it exactly."""
    try:
        ids = list(tokenizer.encode(RUNAWAY_STOP, add_special_tokens=False))
    except Exception:  # any tokenizer failure only disables the stop-string exit
        return []
    for start in range(len(ids)):  # drop a leading space marker some tokenizers prepend
        if tokenizer.decode(ids[start:]) == RUNAWAY_STOP:
            return ids[start:]
    return []
