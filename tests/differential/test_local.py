"""Differential suite, local decoding: what ``LocalGenerator`` produces, read through each local door.

The embedded demo model (``toolguard/_models/demo``) decodes the same request (same seed) through
``LocalGenerator.chat`` (non-stream, stream hold, stream pass) and through ``wrap(LocalGenerator)`` (the
same three). The behaviours a local model can be made to produce: a grammar-enforced call, parallel calls,
free text, a call cut by the token limit, a loop (a logit bias at the logits boundary; ``wrap`` has no way to
pass one). Every door must show the same text, calls and finish reason, except where the README says why
(a generator reports a truncated call with ``finish_reason: "length"``, ``wrap`` raises).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import toolguard
from toolguard import GuardError, Policy

from .doors import Outcome

pytest.importorskip("torch")
pytest.importorskip("transformers")
pytestmark = pytest.mark.local

TOOLS = json.loads((Path(__file__).resolve().parents[2] / "schemas" / "tools" / "weather.json").read_text())
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]
MODES = ("hold", "pass")


@pytest.fixture(scope="module")
def generator() -> Any:
    from toolguard._models import demo_model_path
    from toolguard.local import LocalGenerator
    from toolguard.local._serve import load_local_model

    model, tokenizer = load_local_model(demo_model_path(), threads=1)  # embedded, whatever the default
    return LocalGenerator(model, tokenizer, model_name="toolguard-demo")


def fold_chunks(chunks: Any) -> Outcome:
    text, calls, finish = "", {}, None
    for chunk in chunks:
        for choice in chunk["choices"]:
            delta = choice["delta"]
            text += delta.get("content") or ""
            for tc in delta.get("tool_calls") or ():
                slot = calls.setdefault(tc["index"], ["", ""])
                slot[0] += (tc.get("function") or {}).get("name") or ""
                slot[1] += (tc.get("function") or {}).get("arguments") or ""
            finish = choice["finish_reason"] or finish
    return Outcome(text, tuple((n, a) for n, a in (calls[i] for i in sorted(calls))), finish)


def fold_completion(result: dict[str, Any]) -> Outcome:
    choice = result["choices"][0]
    message = choice["message"]
    calls = tuple(
        (c["function"]["name"], c["function"]["arguments"]) for c in message.get("tool_calls") or ()
    )
    return Outcome(message.get("content") or "", calls, choice["finish_reason"])


def through_generator(gen: Any, request: dict[str, Any], stream: str | None) -> Outcome:
    kwargs = {k: v for k, v in request.items() if k != "max_tokens"}
    kwargs["max_new_tokens"] = request["max_tokens"]
    if stream is None:
        return fold_completion(gen.chat(ASK, **kwargs))
    return fold_chunks(gen.chat(ASK, stream=True, stream_calls=stream, **kwargs))


def through_wrap(gen: Any, request: dict[str, Any], stream: str | None) -> Outcome:
    policy = Policy(stream=stream or "hold", max_truncation_retries=0, max_runaway_retries=0)
    wrapped = toolguard.wrap(gen, policy=policy)
    try:
        if stream is None:
            return fold_completion(wrapped.chat.completions.create(model="local", messages=ASK, **request))
        return fold_chunks(
            wrapped.chat.completions.create(model="local", messages=ASK, stream=True, **request)
        )
    except GuardError as exc:
        return Outcome(error=exc.violation.kind)


REQUESTS = {  # name: (request, the finish reason the generator must produce)
    "call": ({"tools": TOOLS, "tool_choice": "required", "seed": 3, "max_tokens": 80}, "tool_calls"),
    "auto": ({"tools": TOOLS, "seed": 11, "max_tokens": 60}, "tool_calls"),
    "text": ({"tools": TOOLS, "tool_choice": "none", "seed": 1, "max_tokens": 40}, "stop"),
    "truncated": ({"tools": TOOLS, "tool_choice": "required", "seed": 3, "max_tokens": 12}, "length"),
}


@pytest.mark.parametrize("name", list(REQUESTS))
def test_every_local_door_agrees(generator: Any, name: str) -> None:
    request, finish = REQUESTS[name]
    want = through_generator(generator, request, None)
    assert want.finish == finish
    got = {f"generator-stream-{m}": through_generator(generator, request, m) for m in MODES}
    for stream in (None, *MODES):
        got[f"wrap-{stream or 'plain'}"] = through_wrap(generator, request, stream)
    if want.finish == "length":  # the generator reports a truncated call; wrap, out of retries, raises it
        assert not want.calls
        wrapped = Outcome(error="truncated")
        assert {k: v for k, v in got.items() if k.startswith("wrap")} == dict.fromkeys(
            ("wrap-plain", "wrap-hold", "wrap-pass"), wrapped
        )
        got = {k: v for k, v in got.items() if not k.startswith("wrap")}
    assert got == dict.fromkeys(got, want)


def test_parallel_calls_agree(generator: Any) -> None:
    ends = list(generator.end_token_ids)

    def no_end(input_ids: Any, scores: Any) -> Any:  # the turn may not end before its second call
        scores[:, ends] -= 50.0
        return scores

    request = {
        "tools": TOOLS,
        "tool_choice": "required",
        "parallel_tool_calls": True,
        "max_calls": 2,
        "seed": 0,
        "max_tokens": 160,
        "logits_processors": [no_end],
    }
    want = through_generator(generator, request, None)
    assert want.finish == "tool_calls" and len(want.calls) == 2
    assert [through_generator(generator, request, mode) for mode in MODES] == [want, want]


def test_a_loop_in_the_text_ends_every_generator_door_alike(generator: Any) -> None:
    tokenizer = generator.tokenizer
    word = tokenizer.encode(" weather", add_special_tokens=False)

    def bias(input_ids: Any, scores: Any) -> Any:
        scores[:, word] += 30.0
        return scores

    request = {
        "tools": TOOLS,
        "tool_choice": "none",
        "seed": 0,
        "max_tokens": 300,
        "logits_processors": [bias],
    }
    want = through_generator(generator, request, None)
    assert want.finish == "repetition"
    for mode in MODES:
        got = through_generator(generator, request, mode)
        # a stream shows the text up to the delta that completed the loop, the completion one copy of it
        assert got.finish == "repetition" and not got.calls
        assert want.text.startswith(got.text) or got.text.startswith(want.text)
