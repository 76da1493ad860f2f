"""Fuzz target ``sse``: the proxy's incremental SSE decoder (``toolguard.proxy._sse.SSEDecoder``).

Invariants, for random bytes, OpenAI-style streams with every framing variant (LF, CRLF, CR, comments,
``event:``, multi-line data, a BOM, missing spaces) and mutated ones (deleted, inserted, invalid UTF-8,
truncated bytes):

- ``no-unexpected-exception``: ``feed``/``close`` raise nothing but a ``ToolguardError``;
- ``split-invariance``: the events (and the error class, if any) are the same fed whole, one byte at a time,
  split in two at every byte (inputs up to ``EVERY_SPLIT_MAX`` bytes) and at random cut points;
- ``reference``: without an error, the events equal those of a whole-input reference decoder written here from
  the decoder's documented rules (lines end in LF, CRLF or CR; a blank line dispatches; ``data`` lines join
  with LF; comments and unknown fields are ignored; ``close`` flushes an unterminated event).

Cost per case: O(n) per split, O(n²) for the every-byte splits, so inputs are kept to a few KB.
"""

from __future__ import annotations

import base64
import json
import random
import re
from typing import Any

from .._core import Target, Violation, register
from ._common import component, describe_exception, random_cuts, split_at

__all__ = ["SSETarget", "reference_decode"]

EVERY_SPLIT_MAX = 400
"""Inputs up to this many bytes are also split in two at every byte."""
SMALL_LIMITS = (16, 64, 300)

Outcome = tuple[list[tuple[str, str | None]], str | None]


def _decode_events(decoder_cls: Any, chunks: list[bytes], limits: dict[str, int] | None) -> Outcome:
    """Feed chunks, then close; return (events, error class name). Non-toolguard exceptions propagate."""
    from ..._exceptions import ToolguardError

    decoder = decoder_cls(**(limits or {}))
    events: list[tuple[str, str | None]] = []
    try:
        for chunk in chunks:
            events.extend((e.data, e.event) for e in decoder.feed(chunk))
        events.extend((e.data, e.event) for e in decoder.close())
    except ToolguardError as exc:
        return events, type(exc).__name__
    return events, None


_LINE_END = re.compile(rb"\r\n|\r|\n")


def reference_decode(data: bytes) -> list[tuple[str, str | None]] | None:
    """Events of a whole SSE byte stream by the documented rules; None when a line is not UTF-8."""
    events: list[tuple[str, str | None]] = []
    lines = _LINE_END.split(data)
    buffer: list[str] = []
    name: str | None = None
    for raw in [*lines, b""]:
        if not raw:
            if buffer or name is not None:
                events.append(("\n".join(buffer), name))
            buffer, name = [], None
            continue
        if raw.startswith(b":"):
            continue
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            return None
        field, sep, value = line.partition(":")
        if sep and value.startswith(" "):
            value = value[1:]
        if field == "data":
            buffer.append(value)
        elif field == "event":
            name = value
    return events


def _openai_stream(rng: random.Random) -> bytes:
    eol = rng.choice([b"\n", b"\r\n", b"\r"])
    mixed = rng.random() < 0.2
    out = bytearray()
    if rng.random() < 0.1:
        out += b"\xef\xbb\xbf"
    for index in range(rng.randint(0, 6)):
        end = rng.choice([b"\n", b"\r\n", b"\r"]) if mixed else eol
        roll = rng.random()
        if roll < 0.15:
            out += b": keep-alive" + end
        if roll > 0.9:
            out += b"event: " + rng.choice([b"message", b"error", b"ping", b""]) + end
        payload: dict[str, Any] = {
            "id": "c1",
            "choices": [{"index": 0, "delta": {"content": rng.choice(["hé", "x", "\n", "😀"])}}],
        }
        if index == 0:
            payload["choices"][0]["delta"] = {
                "role": "assistant",
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "f", "arguments": ""},
                    }
                ],
            }
        text = json.dumps(payload, ensure_ascii=rng.random() < 0.5).encode()
        sep = b"data: " if rng.random() < 0.8 else b"data:"
        if rng.random() < 0.1:  # a payload split over two data lines
            cut = rng.randint(0, len(text))
            out += sep + text[:cut] + end + sep + text[cut:] + end
        else:
            out += sep + text + end
        if rng.random() < 0.05:
            out += b"id: 7" + end + b"retry: 10" + end + b"data" + end
        out += end
    if rng.random() < 0.8:
        out += b"data: [DONE]" + eol + eol
    return bytes(out)


def _mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    out = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        i = rng.randint(0, len(out))
        op = rng.choice(["del", "ins", "rep", "cut", "bad-utf8", "eol", "long"])
        if op == "del" and out:
            del out[i : i + rng.randint(1, 3)]
        elif op == "ins":
            out[i:i] = bytes([rng.choice(b"\r\n:d \xff\xc3")])
        elif op == "rep" and i < len(out):
            out[i] = rng.randrange(256)
        elif op == "cut":
            del out[i:]
        elif op == "bad-utf8":
            out[i:i] = rng.choice([b"\xff", b"\xc3", b"\xe2\x82", b"\xed\xa0\x80"])
        elif op == "eol":
            out[i:i] = rng.choice([b"\r", b"\n", b"\r\n", b"\n\n", b"\r\r"])
        else:
            out[i:i] = b"data: " + b"x" * rng.choice([15, 16, 17, 70, 320])
    return bytes(out)


class SSETarget(Target):
    name = "sse"
    description = "proxy SSE decoder: random bytes, broken framing, every split"

    def _decoder(self) -> tuple[Any, str | None]:
        return component("toolguard.proxy._sse", "SSEDecoder")

    def unavailable(self) -> str | None:
        return self._decoder()[1]

    def generate(self, rng: random.Random) -> dict[str, Any]:
        roll = rng.random()
        if roll < 0.15:
            data = bytes(rng.randrange(256) for _ in range(rng.randint(0, 200)))
            kind = "random"
        elif roll < 0.5:
            data, kind = _openai_stream(rng), "openai"
        else:
            data, kind = _mutate_bytes(rng, _openai_stream(rng)), "mutated"
        limits = None
        if rng.random() < 0.25:
            limits = {"max_line_bytes": rng.choice(SMALL_LIMITS), "max_event_bytes": rng.choice(SMALL_LIMITS)}
        return {
            "kind": kind,
            "data_b64": base64.b64encode(data).decode(),
            "cuts": random_cuts(rng, len(data)),
            "limits": limits,
        }

    def check(self, case: dict[str, Any]) -> list[Violation]:
        decoder_cls, reason = self._decoder()
        if decoder_cls is None:
            return [Violation("unavailable", "the SSE decoder exists", str(reason))]
        data = base64.b64decode(case["data_b64"])
        limits = case.get("limits")
        splits: list[tuple[str, list[bytes]]] = [
            ("whole", [data]),
            ("byte-by-byte", [data[i : i + 1] for i in range(len(data))]),
            ("random cuts", split_at(data, case.get("cuts", []))),
        ]
        if len(data) <= EVERY_SPLIT_MAX:
            splits += [(f"split at byte {k}", [data[:k], data[k:]]) for k in range(1, len(data))]
        outcomes: list[tuple[str, Outcome]] = []
        for label, chunks in splits:
            try:
                outcomes.append((label, _decode_events(decoder_cls, chunks, limits)))
            except Exception as exc:
                return [
                    Violation(
                        "no-unexpected-exception",
                        "SSEDecoder raises only ToolguardError (UpstreamProtocolError)",
                        f"{label}: {describe_exception(exc)}",
                        signature=f"exception:{type(exc).__qualname__}",
                    )
                ]
        self.stats["errors" if outcomes[0][1][1] else "clean"] += 1
        base_label, base = outcomes[0]
        for label, outcome in outcomes[1:]:
            if outcome != base:
                return [
                    Violation(
                        "split-invariance",
                        "the same events and error whatever the split",
                        f"{base_label}: {_show(base)}\n{label}: {_show(outcome)}",
                        signature="split-invariance:error" if base[1] or outcome[1] else "split-invariance",
                    )
                ]
        if base[1] is None:
            expected = reference_decode(data)
            if expected is not None and expected != base[0]:
                return [
                    Violation(
                        "reference",
                        f"the events of the reference decoder: {expected!r}"[:2000],
                        f"decoder gave {base[0]!r}"[:2000],
                    )
                ]
        return []

    def shrink(self, case: dict[str, Any]) -> Any:
        data = base64.b64decode(case["data_b64"])
        size = len(data)
        step = size // 2
        while step >= 1:
            for start in range(0, size, step):
                smaller = data[:start] + data[start + step :]
                yield {
                    **case,
                    "data_b64": base64.b64encode(smaller).decode(),
                    "cuts": [c for c in case.get("cuts", []) if c < len(smaller)],
                }
            step //= 2


def _show(outcome: Outcome) -> str:
    events, error = outcome
    return f"{events!r}"[:800] + (f" then {error}" if error else "")


register("sse", SSETarget)
