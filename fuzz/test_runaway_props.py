"""Properties of RunawayDetector (hypothesis; deterministic and short, so they run with the tests).

* generated legitimate structures (markdown tables with equal cells, JSON arrays of equal items, code-like
  lines with indentation and elif chains, dividers, big numbers) never fire;
* a loop of any unit (1 to 150 characters, Unicode included) injected after real prose always fires, after
  the loop began and within the absolute cap;
* chunking invariance: the text detectors give the same ``Runaway`` (kind, unit, period, offset, length and
  ``detected_at``) whatever the piece sizes, because they work at checkpoints fixed in the text. ``token_run``
  is the exception by design: it counts tokens, so it depends on how the text was tokenised.
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from toolguard import Runaway, RunawayDetector
from toolguard._runaway import RunawayConfig

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    database=None,
)
CAP = RunawayConfig().cap
PROSE = (
    "The if statement is used for conditional execution. It selects exactly one of the suites by evaluating "
    "the expressions one by one until one is found to be true (see section Boolean operations for the "
    "definition of true and false); then that suite is executed, and no other part of the statement is "
    "executed or evaluated. If all expressions are false, the suite of the else clause, if present, runs.\n"
)


def feed(text: str, sizes: list[int] | None = None) -> Runaway | None:
    d = RunawayDetector()
    i = 0
    k = 0
    while i < len(text):
        size = sizes[k % len(sizes)] if sizes else 4
        found = d.push(text[i : i + size])
        if found is not None:
            return found
        i += size
        k += 1
    return None


cells = st.sampled_from(["0", "0", "", "yes", "no", "1.0", "n/a", "x", "-", "TODO"])


@st.composite
def markdown_tables(draw: st.DrawFn) -> str:
    widths = draw(st.lists(st.integers(1, 12), min_size=1, max_size=8))
    rows = draw(st.integers(1, 40))
    lines = ["| " + " | ".join(f"h{i}".ljust(w) for i, w in enumerate(widths)) + " |"]
    lines.append("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for _ in range(rows):
        lines.append("| " + " | ".join(draw(cells).ljust(w) for w in widths) + " |")
    return "\n".join(lines) + "\n"


json_items = st.sampled_from([0, 1, 0.0, -1, None, True, False, "", "x", "n/a", {"a": 1}, [0, 0], {"id": 0}])


@st.composite
def json_arrays(draw: st.DrawFn) -> str:
    item = draw(json_items)
    indent = draw(st.sampled_from([None, 2, 4]))
    per_item = len(json.dumps({"values": [item] * 2}, indent=indent)) - len(
        json.dumps({"values": [item]}, indent=indent)
    )
    count = draw(st.integers(1, max(1, 900 // per_item)))
    return json.dumps({"values": [item] * count, "tail": "done"}, indent=indent)


statements = st.sampled_from(
    [
        "x = {n}",
        "elif x == {n}:",
        "return {n}",
        "self.items.append({n})",
        "if y > {n}:",
        "total += {n}",
        "# step {n}",
        "print('value', {n})",
        "yield {n}",
        "assert f({n}) == {n}",
    ]
)


@st.composite
def code_lines(draw: st.DrawFn) -> str:
    n = draw(st.integers(1, 80))
    out = []
    for i in range(n):
        depth = draw(st.integers(0, 8))
        out.append("    " * depth + draw(statements).format(n=i))
        if draw(st.integers(0, 9)) == 0:
            out.append("")
    return "\n".join(out) + "\n"


@st.composite
def dividers_and_numbers(draw: st.DrawFn) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 10))):
        parts.append(draw(st.sampled_from("-=*#~_")) * draw(st.integers(3, 120)))
        parts.append(str(10 ** draw(st.integers(1, 60))))
        parts.append(draw(st.sampled_from(["Section", "Result", "Note", "0x" + "f" * 16])))
    return "\n".join(parts) + "\n"


legitimate = st.one_of(markdown_tables(), json_arrays(), code_lines(), dividers_and_numbers())


@SETTINGS
@given(legitimate, st.integers(1, 8))
def test_legitimate_structures_never_fire(text: str, size: int) -> None:
    assert feed("Here it is:\n\n" + text + "\nDone.", [size]) is None


loop_units = st.text(
    st.characters(exclude_categories=["Cs", "Cc", "Zs", "Zl", "Zp"]) | st.sampled_from(" \n"),
    min_size=1,
    max_size=150,
).filter(lambda u: not u.isspace() and any(c.isalpha() for c in u))


@SETTINGS
@given(st.integers(0, len(PROSE)), loop_units, st.lists(st.integers(1, 8), min_size=1, max_size=5))
def test_injected_loops_always_fire(cut: int, unit: str, sizes: list[int]) -> None:
    prefix = PROSE[:cut]
    text = prefix + unit * (6000 // len(unit) + 1)
    found = feed(text, sizes)
    assert found is not None
    assert found.detected_at > len(prefix)
    assert found.detected_at - len(prefix) <= CAP + 2 * len(unit) + 32
    assert found.offset <= len(prefix) + len(unit)
    assert found.length <= CAP + 32 or found.kind == "ngram"


@SETTINGS
@given(st.integers(0, len(PROSE)), st.text(st.sampled_from(" \t\n\r"), min_size=1, max_size=12))
def test_whitespace_runaways_always_fire(cut: int, unit: str) -> None:
    prefix = PROSE[:cut] + '{"a": 1,'
    found = feed(prefix + unit * (3000 // len(unit) + 1))
    assert found is not None and found.kind == "whitespace" and found.offset >= len(prefix) - 1


pieces_of_text = st.lists(
    st.one_of(
        st.sampled_from([PROSE, "def f(x):\n    return x\n", "| a | 0 |\n|---|---|\n", "-" * 79 + "\n"]),
        st.builds(lambda u, n: u * n, st.text(min_size=1, max_size=20), st.integers(1, 300)),
        st.text(max_size=50),
    ),
    min_size=1,
    max_size=6,
)


@SETTINGS
@given(pieces_of_text, st.lists(st.integers(1, 40), min_size=1, max_size=6))
def test_chunking_does_not_change_the_result(parts: list[str], sizes: list[int]) -> None:
    text = "".join(parts)
    whole = RunawayDetector().push(text)
    assert feed(text, sizes) == whole
    assert feed(text, [1]) == whole
