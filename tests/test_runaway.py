"""RunawayDetector and the runaway policy: what fires, what does not, and what a front door does next."""

from __future__ import annotations

import base64
import dataclasses
import json
import sysconfig
from pathlib import Path

import pytest

import toolguard
from toolguard import ConfigError, Runaway, RunawayDetector, RunawayPolicy, UsageError
from toolguard._runaway import FINISH_REASON_REPETITION, RunawayConfig, classify_unit, loop_in_prompt

PROSE = (
    "The if statement is used for conditional execution. It selects exactly one of the suites by evaluating "
    "the expressions one by one until one is found to be true.\n\n"
)


def feed(text: str, *, size: int = 3, detector: RunawayDetector | None = None) -> Runaway | None:
    """Push ``text`` in pieces of ``size`` characters; return the first runaway."""
    d = detector or RunawayDetector()
    for i in range(0, len(text), size):
        found = d.push(text[i : i + size])
        if found is not None:
            return found
    return None


def test_public_names() -> None:
    from toolguard import _runaway

    for name in ("RunawayDetector", "Runaway", "RunawayPolicy"):
        assert name in toolguard.__all__
    for name in ("RunawayConfig", "FINISH_REASON_REPETITION", "loop_in_prompt"):  # the module's API
        assert name in _runaway.__all__
    assert FINISH_REASON_REPETITION == "repetition"
    runaway = Runaway("periodic", "ab", 2, 3, 0, 6, 6)
    with pytest.raises(dataclasses.FrozenInstanceError):
        runaway.kind = "char_run"  # type: ignore[misc]
    assert not hasattr(runaway, "__dict__")


# -- loops that must fire ----------------------------------------------------------------------------------


def test_four_identical_long_tokens_fire_when_ids_are_known() -> None:
    d = RunawayDetector()
    pieces = [("Hello", 1), (",", 2), (" verify", 7), (" verify", 7), (" verify", 7)]
    assert all(d.push(text, tid) is None for text, tid in pieces)
    found = d.push(" verify", 7)
    assert found is not None and found.kind == "token_run"
    assert (found.unit, found.period, found.copies, found.offset) == (" verify", 7, 4, 6)


def test_short_tokens_need_token_run_short_copies() -> None:
    # " S", "la", " nil", "?,": short tokens repeat legitimately (lyrics, SQL, token diagrams), so
    # S S S S ... is still a loop, caught at token_run_short tokens (12, from data: RESULTS.md)
    need = RunawayConfig().token_run_short
    assert need == 12
    d = RunawayDetector()
    d.push("Hello,", 1)
    assert all(d.push(" S", 7) is None for _ in range(need - 1))
    found = d.push(" S", 7)
    assert found is not None and found.kind == "token_run" and found.copies == need


def test_a_30kb_question_loop_is_caught_quickly_and_stays_caught() -> None:
    prefix = PROSE + "Really"
    text = prefix + "?!" * 15_000
    d = RunawayDetector()
    found = None
    pushed = 0
    for i in range(0, len(text), 4):
        found = d.push(text[i : i + 4])
        pushed = i + 4
        if found is not None:
            break
    assert found is not None and found.kind == "periodic"
    assert found.unit == "?!" and found.period == 2 and found.offset == len(prefix)
    assert found.detected_at - len(prefix) <= 100 and pushed - len(prefix) <= 104
    assert found.unit_class == "content"
    # sticky until reset
    assert d.push("more text") is found and d.runaway is found
    # the caller trims back to one copy
    assert text[: found.offset + found.period] == prefix + "?!"
    d.reset()
    assert d.runaway is None and d.consumed == 0
    assert d.push("fresh start") is None


@pytest.mark.parametrize("char", ["G", "S", "!", "\u00e4", "\U0001f600"])
def test_runs_of_one_character(char: str) -> None:
    found = feed(PROSE + char * 500)
    assert found is not None and found.kind == "char_run" and found.unit == char
    assert found.offset == len(PROSE) and found.detected_at - len(PROSE) <= 64


@pytest.mark.parametrize("unit", [" lock", "lock ", " S", "ha", " the same", "\u4f60\u597d"])
def test_short_units(unit: str) -> None:
    found = feed(PROSE + unit * 200)
    assert found is not None and found.kind == "periodic" and found.period == len(unit)
    assert found.offset <= len(PROSE) and found.detected_at - len(PROSE) <= 96


def test_a_sentence_loop() -> None:
    sentence = "I will check the configuration file again to be sure. "
    found = feed(PROSE + sentence * 40)
    assert found is not None and found.kind == "periodic" and found.unit == sentence
    assert found.copies >= 2 and found.detected_at - len(PROSE) <= 3 * len(sentence)


def test_a_repeated_code_line_and_a_repeated_paragraph() -> None:
    line = "        self.assertEqual(result, expected)\n"
    found = feed("def test(self):\n" + line * 50)
    assert found is not None and found.kind == "line_repeat" and found.unit_class == "lines"
    paragraph = PROSE + PROSE.upper() + PROSE.replace(" ", "_")  # longer than max_period: the block probe
    assert len(paragraph) > RunawayConfig().max_period
    found = feed("Intro.\n\n" + paragraph * 6)
    assert found is not None and found.kind == "line_repeat" and found.period == len(paragraph)


def test_whitespace_runaway_in_json_mode() -> None:
    for ws in ("\n", "\n  ", " ", "\t\n", "\r\n"):
        found = feed('{"name": "get_weather", "arguments": {"city": "Paris",' + ws * 2000)
        assert found is not None and found.kind == "whitespace", repr(ws)
        assert found.detected_at - found.offset <= RunawayConfig().whitespace_chars + 32


def test_repetition_inside_a_json_string() -> None:
    found = feed('{"query": "find the ' + "the " * 500)
    assert found is not None and found.unit.strip() == "the"


def test_an_absolute_cap_holds_for_every_benign_unit() -> None:
    cap = RunawayConfig().cap
    benign = {
        "-": "rule",
        "=": "rule",
        "0": "numeric",
        "0, ": "items",
        '"x", ': "items",
        "| --- ": "rule",
        "{}, ": "items",
        "null, ": "items",
    }
    for unit, cls in benign.items():
        found = feed("[" + unit * 3000)
        assert found is not None and found.unit_class == cls, unit
        assert found.length <= cap + 32, unit
    # base64 runs get the numeric threshold, never more
    blob = base64.b64encode(bytes(range(256)) * 2).decode()
    found = feed(blob + "A" * 5000)
    assert found is not None and found.unit_class == "encoded" and found.length <= cap


# -- legitimate repetition that must not fire ------------------------------------------------------------


def _markdown_table() -> str:
    rows = ["| name | count | ok |", "|------|-------|----|"]
    rows += [f"| item | 0     | {'yes' if i % 3 else 'no'} |" for i in range(40)]
    return "\n".join(rows) + "\n"


LEGIT = {
    "markdown table": _markdown_table(),
    "dividers": "Title\n=====\n\n"
    + "".join("-" * 79 + f"\nSection {i}\n" for i in range(10))
    + "#" * 80
    + "\n",
    "boxed labels": ("+" + "-" * 70 + "+\n" + "| x" + " " * 67 + "|\n") * 6,
    "numbers": "x = " + " + ".join(str(10**k) for k in range(1, 60)) + "\n" + "y = 1000000000\n",
    "json array of equal items": json.dumps(
        {"values": [0] * 250, "flags": [False] * 100, "names": ["x"] * 100}
    ),
    "pretty json": json.dumps(
        {"matrix": [[0] * 8 for _ in range(8)], "rows": [{"id": 0, "ok": True}] * 20}, indent=2
    ),
    "elif chain": "def f(x):\n" + "".join(f"    elif x == {i}:\n        return {i}\n" for i in range(60)),
    "indentation": "".join(" " * (4 * (i % 10)) + f"call_{i}()\n" for i in range(100)),
    "csv": "a,b,c,d\n" + "".join(f"0,0,{i},0\n" for i in range(200)),
    "log": "".join(f"2024-01-01T00:00:{i % 60:02d} INFO heartbeat ok\n" for i in range(200)),
    "hex dump": "".join(f"{i * 16:08x}: " + "0000 " * 8 + " ................\n" for i in range(64)),
    "base64": base64.encodebytes(
        b"\x89PNG\r\n\x1a\n" + bytes(range(256)) + bytes(300) + bytes(range(99)) + bytes(200)
    ).decode(),
    "ascii art": "+" + "-" * 60 + "+\n" + ("|" + " " * 60 + "|\n") * 5 + "+" + "-" * 60 + "+\n",
    "bullets": "".join(f"- point number {i}\n" for i in range(60)),
    # Unicode layout: box drawing, heavy rules, blocks, leaders in other scripts (classified by Unicode)
    "unicode box": "┌" + "─" * 78 + "┐\n" + ("│" + " " * 78 + "│\n") * 4 + "└" + "─" * 78 + "┘\n",
    "unicode rules": "━" * 120 + "\nSection\n" + "═" * 120 + "\n" + "▁" * 90 + "\n",
    "progress bars": "".join(f"{p:3d}% |{'█' * (p // 2)}{' ' * (50 - p // 2)}|\n" for p in range(0, 101, 10)),
    "leaders": "".join(f"第{i}章 {'・' * 60} {i * 7}\n" for i in range(1, 9))
    + "".join(f"Chapter {i} {'…' * 50} {i}\n" for i in range(1, 9)),
    # short words and literals that repeat in ordinary text
    "refrain": "And the chorus goes: la la la la la la, na na na na na, hey! Then the bridge.\n" * 3,
    "sql placeholders": "INSERT INTO t (a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, q, r, s, t) VALUES ("
    + ", ".join(["?"] * 40)
    + ");\n",
    "lisp nils": "(make-frame " + " ".join(["nil"] * 20) + ")\n(list " + " ".join(["nil"] * 10) + ")\n",
    "token diagram": "input_ids: [V V V V V V V V V V V V T T T T T], here V is for vision.\n",
    "json items up to 2 KB": json.dumps({"results": [{"status": "ok"}] * 100}, indent=2)[:2100] + "]}",
}


@pytest.mark.parametrize("name", sorted(LEGIT))
@pytest.mark.parametrize("size", [1, 4])
def test_legitimate_repetition_does_not_fire(name: str, size: int) -> None:
    assert feed("Here you go:\n\n" + LEGIT[name] + "\nDone.", size=size) is None


def test_real_stdlib_sources_do_not_fire() -> None:
    root = Path(sysconfig.get_paths()["stdlib"])
    for name in ("argparse.py", "textwrap.py", "dataclasses.py", "_pydecimal.py", "pydoc_data/topics.py"):
        text = (root / name).read_text(encoding="utf-8")[:120_000]
        assert feed(text, size=5) is None, name


@pytest.mark.parametrize(
    ("unit", "cls"),
    [
        ("─", "rule"),
        ("━━", "rule"),
        ("═╬", "rule"),
        ("█", "rule"),
        ("・", "rule"),
        ("…", "rule"),
        ("⠋", "rule"),
        ("－", "rule"),
        ("！", "content"),
        ("😀", "content"),
        ("你好", "content"),
        ("?, ", "items"),
        ("nil ", "items"),
        ("la ", "content"),
    ],
)
def test_units_are_classified_by_unicode(unit: str, cls: str) -> None:
    assert classify_unit(unit) == cls


@pytest.mark.parametrize("unit", ["😀", "！", "你"])
def test_content_characters_beyond_ascii_still_loop_early(unit: str) -> None:
    found = feed(PROSE + unit * 200)
    assert found is not None and found.unit_class == "content"
    assert found.detected_at - len(PROSE) <= 64


def test_the_same_short_word_as_token_ids_waits_for_token_run_short() -> None:
    d = RunawayDetector()
    d.push("Sing:", 1)
    assert all(d.push(" la", 5) is None for _ in range(8))  # a refrain, not a loop
    assert d.runaway is None


def test_benign_token_runs_use_the_text_thresholds() -> None:
    d = RunawayDetector()
    d.push("# ", 1)
    assert all(d.push("-", 2) is None for _ in range(79))  # a divider written one token at a time
    d.push("\n", 3)
    assert all(d.push("", 9) is None for _ in range(20))  # half characters: no text yet
    assert d.runaway is None


# -- tuning, invariance, memory --------------------------------------------------------------------------


def test_thresholds_are_tunable_and_validated() -> None:
    text = PROSE + "G" * 400
    strict = feed(text, detector=RunawayDetector(char_run=8))
    relaxed = feed(text, detector=RunawayDetector(char_run=200))
    assert strict is not None and relaxed is not None and strict.detected_at < relaxed.detected_at
    assert relaxed.length >= 200
    config = dataclasses.replace(RunawayConfig(), cap=1024, items_chars=1024)
    assert RunawayDetector(config=config).config.cap == 1024
    with pytest.raises(ConfigError):
        RunawayDetector(no_such_option=1)
    with pytest.raises(ConfigError):
        RunawayConfig(token_run=1)
    with pytest.raises(ConfigError):
        RunawayConfig(cap=100_000)  # larger than the window can hold


def test_chunking_does_not_change_the_answer() -> None:
    text = PROSE + "def f():\n    return 1\n" + "Wait, let me check. " * 30
    answers = {feed(text, size=size) for size in (1, 2, 3, 7, 64, len(text))}
    assert len(answers) == 1 and None not in answers


def test_memory_is_bounded() -> None:
    root = Path(sysconfig.get_paths()["stdlib"])
    text = (root / "argparse.py").read_text(encoding="utf-8") * 4
    d = RunawayDetector(window=4096)
    for i in range(0, len(text), 5):
        assert d.push(text[i : i + 5]) is None
    assert len(d._buf) <= 2 * 4096 + 64  # the tail window, not the text
    assert d.consumed == len(text)


def test_ngram_recurrence_is_optional() -> None:
    loop = "".join(f"Wait, let me recompute the total one more time. The total is {n}. " for n in range(60))
    assert feed(PROSE + loop) is None  # not periodic: the number changes
    found = feed(PROSE + loop, detector=RunawayDetector(ngram=True))
    assert found is not None and found.kind == "ngram"
    assert found.offset >= len(PROSE) - 1


# -- policy ----------------------------------------------------------------------------------------------


def test_retry_changes_sampling_every_time() -> None:
    policy = RunawayPolicy()
    params = {"model": "m", "temperature": 0.9, "seed": 7, "top_p": 0.95}
    first = policy.retry_params(params, 1)
    second = policy.retry_params(params, 2)
    assert first["temperature"] < 0.9 and second["temperature"] < first["temperature"]
    assert len({params["seed"], first["seed"], second["seed"]}) == 3
    assert first["model"] == "m" and first["top_p"] == 0.95 and params["temperature"] == 0.9
    greedy = policy.retry_params({"temperature": 0}, 1)
    assert greedy["temperature"] == policy.temperature_floor and "seed" in greedy
    assert policy.retry_params({"do_sample": False}, 1)["do_sample"] is True
    assert policy.retry_temperature(None, 1) == pytest.approx(policy.default_temperature * 0.7)
    with pytest.raises(UsageError):
        policy.retry_params(params, policy.max_retries + 1)
    with pytest.raises(UsageError):
        policy.retry_seed(1, 0)


def test_retries_are_bounded_and_must_change_something() -> None:
    with pytest.raises(ConfigError):
        RunawayPolicy(max_retries=50)
    with pytest.raises(ConfigError):
        RunawayPolicy(reseed=False, temperature_factor=1.0)
    with pytest.raises(ConfigError):
        RunawayPolicy(temperature_floor=0)
    assert RunawayPolicy(reseed=False).retry_params({"temperature": 1.0}, 1) == {"temperature": 0.7}


def test_no_retry_when_the_loop_is_in_the_prompt() -> None:
    found = feed(PROSE + "?!" * 300)
    assert found is not None
    policy = RunawayPolicy(max_retries=2)
    assert policy.should_retry(found, 1, prompt="Tell me a story.")
    assert policy.should_retry(found, 2)
    assert not policy.should_retry(found, 3)
    assert loop_in_prompt(found, ["system text", "please continue: " + "?!" * 40])
    assert not policy.should_retry(found, 1, prompt="repeat this: " + "?!" * 40)
    assert not loop_in_prompt(found, "a single ?! is fine")
