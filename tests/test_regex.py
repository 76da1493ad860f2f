"""ECMA-262 patterns translated for Python's ``regex`` and for llguidance mean what ECMA-262 says: the
JSON-Schema-Test-Suite's ECMA-262 regex cases (vendored, tests/data/json-schema-test-suite), the Annex B forms
real tool schemas use, and every pattern of the real tool sets in tests/data/toolsets."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import regex

from toolguard._regex import ecma_error, translate

SUITE = Path(__file__).resolve().parent / "data" / "json-schema-test-suite" / "tests"
OPTIONAL = SUITE / "draft2020-12" / "optional"
TOOLSETS = Path(__file__).resolve().parent / "data" / "toolsets"


def suite_cases() -> Iterator[tuple[str, str, bool, str]]:
    """(pattern, string, valid, description) for each string instance of the ECMA-262 regex files."""
    for name in ("ecmascript-regex.json", "non-bmp-regex.json"):
        for group in json.loads((OPTIONAL / name).read_text(encoding="utf-8")):
            schema = group["schema"]
            for test in group["tests"]:
                data = test["data"]
                if "pattern" in schema and isinstance(data, str):
                    why = f"{group['description']}: {test['description']}"
                    yield schema["pattern"], data, test["valid"], why
                elif "patternProperties" in schema and isinstance(data, dict) and len(data) == 1:
                    (pattern, sub), = schema["patternProperties"].items()
                    (key, value), = data.items()
                    if jsonschema.Draft202012Validator(sub).is_valid(value):
                        continue  # the value passes either way: the test says nothing about the key
                    # the value breaks the property schema: the instance is valid iff the key does not match
                    why = f"{group['description']}: {test['description']} (key)"
                    yield pattern, key, not test["valid"], why


CASES = list(suite_cases())

# Annex B (web-compatibility) forms: (pattern, matches, does not match)
ANNEX_B = [
    (r"^[\w-\.]+@([\w-]+\.)+[\w-]{2,4}$", ["a-b.c@x-y.org"], ["a b@x.org", "a@x.o"]),  # ACEBench's email
    (r"^a{,3}$", ["a{,3}"], ["aaa", "a"]),
    (r"^\cJ$", ["\n"], ["cJ"]),
    (r"^[^]$", ["\n", "x"], ["", "xy"]),
    (r"^[]$", [], ["", "x"]),
    (r"^\e$", ["e"], ["\x1b"]),
    (r"^a\0$", ["a\x00"], ["a0"]),
    (r"^(?<year>\d{4})-\k<year>$", ["2024-2024"], ["2024-2025"]),
    (r"^\u{1F600}$", ["😀"], ["u"]),  # the u-flag form: JSON Schema patterns have Unicode semantics
    (r"^.$", ["x", "é"], ["\n", "\r", "\u2028"]),
    (r"^\s$", [" ", "\u00a0", "\ufeff", "\u2028"], ["x", "\u200b"]),
    (r"^[\s]$", ["\u3000"], ["x"]),
    (r"^[a&&b]$", ["&", "a"], ["ab"]),
    (r"^x}$", ["x}"], ["x"]),
]


@pytest.mark.parametrize("pattern,string,valid,why", CASES, ids=[c[3][:60] for c in CASES])
def test_suite_semantics_python(pattern: str, string: str, valid: bool, why: str) -> None:
    assert (regex.search(translate(pattern, "python"), string) is not None) is valid, why


@pytest.mark.parametrize("pattern,good,bad", ANNEX_B)
def test_annex_b_python(pattern: str, good: list[str], bad: list[str]) -> None:
    compiled = regex.compile(translate(pattern, "python"))
    for s in good:
        assert compiled.search(s), (pattern, s)
    for s in bad:
        assert not compiled.search(s), (pattern, s)


def test_format_regex_suite() -> None:
    for group in json.loads((OPTIONAL / "format" / "regex.json").read_text(encoding="utf-8")):
        for test in group["tests"]:
            if isinstance(test["data"], str):
                assert (ecma_error(test["data"]) is None) is test["valid"], test["description"]
    assert ecma_error(r"[\w-\.]") is None  # Python's re: "bad character range"
    assert ecma_error("a(") is not None


def _patterns(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "pattern" and isinstance(value, str):
                yield value
            elif key == "patternProperties" and isinstance(value, dict):
                yield from value
            yield from _patterns(value)
    elif isinstance(node, list):
        for value in node:
            yield from _patterns(value)


def test_every_pattern_of_the_real_tool_sets_translates() -> None:
    found = set()
    for path in TOOLSETS.glob("*.jsonl"):
        for line in path.read_text(encoding="utf-8").splitlines():
            found.update(_patterns(json.loads(line)["tools"]))
    assert len(found) > 30
    for p in sorted(found):
        assert ecma_error(p) is None, p
        regex.compile(translate(p, "engine"))


# ---- the engine target, checked with llguidance itself ----------------------------------------------------
def _llg_accepts(pattern: str, s: str) -> bool | None:
    from llguidance import LLMatcher, LLTokenizer

    tok = LLTokenizer("byte")
    g = LLMatcher.grammar_from_json_schema(json.dumps({"type": "string", "pattern": pattern}))
    err, _ = LLMatcher.validate_grammar_with_warnings(g, tok)
    if err:
        return None
    m = LLMatcher(tok, g, log_level=0)
    return bool(m.consume_tokens(list(json.dumps(s, ensure_ascii=False).encode())) and m.is_accepting())


# llguidance has no back-references and no look-around (an empty class needs one): it refuses those patterns
@pytest.mark.parametrize("pattern,good,bad", [c for c in ANNEX_B if "\\k<" not in c[0] and "[]" not in c[0]])
def test_annex_b_engine(pattern: str, good: list[str], bad: list[str]) -> None:
    pytest.importorskip("llguidance")
    engine = translate(pattern, "engine")
    for s in good:
        assert _llg_accepts(engine, s), (pattern, engine, s)
    for s in bad:
        assert _llg_accepts(engine, s) is False, (pattern, engine, s)


def test_suite_semantics_engine() -> None:
    pytest.importorskip("llguidance")
    wrong = []
    for pattern, string, valid, why in CASES:
        got = _llg_accepts(translate(pattern, "engine"), string)
        if got is not valid:
            wrong.append((why, pattern, string, got))
    assert not wrong


# ---- where the translation is used ------------------------------------------------------------------------
def test_a_pattern_the_regex_package_parses_keeps_its_reading() -> None:
    """Python's reading, shared with jsonschema (the fuzz oracle), is kept wherever it exists."""
    from toolguard._regex import compile_pattern, engine_pattern

    for p in (r"^\d+$", r"[\w-\.]", r"a{,3}", r"^.{2,5}$"):
        assert compile_pattern(p).pattern == p and engine_pattern(p) == p
    assert compile_pattern(r"^\d+$").search("١٢")  # Unicode digits, as jsonschema reads it


def test_a_pattern_only_ecma_parses_is_translated_for_validator_and_engine_alike() -> None:
    from toolguard._regex import compile_pattern, engine_pattern

    for p, good, bad in ((r"^a[^]b$", "a\nb", "ab"), (r"^\cJ$", "\n", "cJ"), (r"^\e$", "e", "\\e")):
        compiled = compile_pattern(p)
        assert compiled.search(good) and not compiled.search(bad), p
        assert engine_pattern(p) == translate(p, "engine") != p


def test_the_metaschema_check_accepts_ecma_patterns_and_refuses_broken_ones() -> None:
    from toolguard import SchemaError, ToolSet

    def tools(pattern: str) -> list[dict[str, Any]]:
        params = {"type": "object", "properties": {"e": {"type": "string", "pattern": pattern}}}
        return [{"type": "function", "function": {"name": "f", "parameters": params}}]

    ToolSet.from_openai(tools(r"^[\w-\.]+@([\w-]+\.)+[\w-]{2,4}$"))  # ACEBench's (re: "bad character range")
    ToolSet.from_openai(tools(r"^a[^]b$"))
    with pytest.raises(SchemaError, match="is not a 'regex'"):
        ToolSet.from_openai(tools("^(abc]"))
