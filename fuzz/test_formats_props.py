"""Properties of the format parsers (hypothesis; deterministic and short, so they run with the tests).

* ``parse(render(calls))`` gives the calls back, in every format, arguments character for character (number
  spellings a float would change, escapes, key order);
* text the model makes up after its calls (a fake tool response, an Observation, a JSON result, another turn)
  is always cut, whole, and reported;
* a streaming parse in any chunking equals the whole parse, on arbitrary text built from the formats' pieces.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolguard import ToolCall
from toolguard.formats import StreamingParser, parse, render

SETTINGS = settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
    database=None,
)
CONCRETE = ["openai", "hermes", "llama3", "mistral", "react"]

names = st.from_regex(r"[A-Za-z_][A-Za-z0-9_.\-]{0,15}", fullmatch=True)
text = st.text(st.characters(exclude_categories=["Cs"]), max_size=12)
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**12), 10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
    max_leaves=6,
)
# numbers JSON allows but a float round trip changes or breaks
number_spellings = st.sampled_from(
    ["1e999", "-1e999", "-0", "1.0", "1E+2", "0.1e-400", "12345678901234567890123"]
)
spelled = st.lists(st.tuples(text, number_spellings), min_size=1, max_size=3).map(
    lambda items: "{" + ", ".join(f"{json.dumps(k)}: {n}" for k, n in items) + "}"
)
arguments = (
    st.dictionaries(text, json_values, max_size=4).map(lambda d: json.dumps(d, ensure_ascii=False))
    | st.dictionaries(text, json_values, max_size=4).map(lambda d: json.dumps(d, indent=1))
    | spelled
)
ids = st.none() | st.from_regex(r"[A-Za-z0-9_]{1,12}", fullmatch=True)
calls = st.lists(st.builds(ToolCall, names, arguments, ids), min_size=1, max_size=3)


def key(call: ToolCall, *, with_id: bool) -> tuple[Any, ...]:
    return call.name, call.arguments, call.id if with_id else None


@SETTINGS
@given(
    calls=calls, fmt=st.sampled_from(CONCRETE), content=st.sampled_from(["", "Let me check.", "Thinking…\n"])
)
def test_parse_render_round_trips(calls: list[ToolCall], fmt: str, content: str) -> None:
    parsed = parse(render(calls, format=fmt, content=content), format=fmt)  # type: ignore[arg-type]
    with_id = fmt in ("openai", "mistral")
    assert [key(c, with_id=with_id) for c in parsed.tool_calls] == [key(c, with_id=with_id) for c in calls]
    assert parsed.complete and parsed.fabricated == ""
    assert {p.kind for p in parsed.problems} <= (
        {"embedded"} if content and fmt in ("openai", "llama3") else set()
    )


FAKE_STARTS = [
    "<tool_response>\n",
    "Observation: ",
    '{"result": ',
    "<|im_start|>user\n",
    "[TOOL_RESULTS]",
    "Final answer: ",
    "<tool_call>",
]


@SETTINGS
@given(calls=calls, fmt=st.sampled_from(CONCRETE), start=st.sampled_from(FAKE_STARTS), rest=text)
def test_fabricated_tails_are_always_cut(calls: list[ToolCall], fmt: str, start: str, rest: str) -> None:
    if start == "<tool_call>" and fmt == "hermes":
        start = "<tool_response>"  # another <tool_call> is a legitimate parallel call in hermes
    tail = start + rest
    turn = render(calls, format=fmt) + "\n" + tail  # type: ignore[arg-type]
    parsed = parse(turn, format=fmt)  # type: ignore[arg-type]
    assert [c.name for c in parsed.tool_calls] == [c.name for c in calls]
    assert parsed.fabricated == tail
    assert parsed.problems[-1].kind == "fabricated"
    assert parsed.problems[-1].offset == len(turn) - len(tail)


PIECES = [
    "<tool_call>",
    "</tool_call>",
    "<tool_response>",
    "[TOOL_CALLS]",
    "[ARGS]",
    "[CALL_ID]",
    "<|python_tag|>",
    "<|im_end|>",
    "<|eot_id|>",
    "Action:",
    "Action Input:",
    "Observation:",
    "```json",
    "```",
    "{",
    "}",
    "[",
    "]",
    '"',
    "\\",
    ":",
    ",",
    ";",
    " ",
    "\n",
    "x",
    "1",
    "-2.5e3",
    "true",
    "nul",
    '"name"',
    '"arguments"',
    '"parameters"',
    '"a"',
    '{"name": "f", "arguments": {"k": [1, "v"]}}',
    '{"name": "g", "parameters": {}}',
    "f(q=1)",
    'brave_search.call(query="x")',
    "é",
    "\\u00e9",
]


@settings(SETTINGS, max_examples=200)
@given(
    pieces=st.lists(st.sampled_from(PIECES), max_size=30),
    fmt=st.sampled_from(["auto", *CONCRETE]),
    cuts=st.lists(st.integers(min_value=0, max_value=400), max_size=12),
)
def test_streaming_equals_whole_parse(pieces: list[str], fmt: str, cuts: list[int]) -> None:
    turn = "".join(pieces)
    whole = parse(turn, format=fmt)  # type: ignore[arg-type]
    parser = StreamingParser(fmt)  # type: ignore[arg-type]
    points = sorted({min(c, len(turn)) for c in cuts} | {0, len(turn)})
    for a, b in itertools.pairwise(points):
        parser.feed(turn[a:b])
    assert parser.close() == whole
    # and every character is accounted for: nothing silently dropped beyond calls, markers and whitespace
    assert len(whole.content) + len(whole.fabricated) <= len(turn)
