"""Fuzz target ``formats``: ``toolguard.formats`` parse / render / StreamingParser.

Cases render random calls (names, JSON-object arguments, ids) with random prose before them in each wire
format (openai, hermes, llama3, mistral, react), optionally followed by a fabricated tail (a fake
``<tool_response>``,
``Observation:``, a JSON result, a new turn, prose, text after an end-of-turn token), optionally mutated.
Invariants:

- ``round-trip``: ``parse(render(calls, format=f, content=c), format=f)`` (and ``format="auto"``) gives the
  same calls (names, JSON-equal arguments, ids where the format carries them), the prose, nothing cut, and
  ``complete``;
- ``fabrication-cut``: with a tail after the calls, the calls are unchanged, the tail is not in the content,
  and ``fabricated`` holds the tail's text;
- ``split-invariance``: ``StreamingParser`` fed one character at a time or at random cuts ends in the same
  ``Parsed`` as ``parse``; the calls it announced (``ToolCallCompleted``) are a prefix of the final calls and
  its ``ContentDelta`` texts a prefix of the final content;
- ``no-unexpected-exception``: on any input, only ``ToolguardError``.

Cost per case: O(n) per chunking for a text of a few hundred characters.
"""

from __future__ import annotations

import json
import random
from typing import Any

from .._core import Target, Violation, register
from .._jsongen import mutate, small_value
from .._jsonref import strict_loads
from ._common import component, describe_exception, random_cuts, split_at, text_shrinks

__all__ = ["FormatsTarget"]

RENDER_FORMATS = ("openai", "hermes", "llama3", "mistral", "react")
_NAMES = ("get_weather", "book_flight", "files.read", "search_web", "x", "calc-sum", "send_email2")
_PROSE = (
    "Let me check that for you.",
    "I'll look up the weather in Paris.",
    "Sure! Calling the tool now:",
    "First I need two things, {a} and [b].",
    "Thinking... the user wants 3 * (4 + 5).",
    "Here is the plan:\n1. search\n2. summarise",
    "Voilà — je vérifie 😀.",
)
_TAILS = (
    '\n<tool_response>\n{"temperature": 21}\n</tool_response>',
    "\nObservation: the weather is sunny, 21 degrees.",
    '\n{"result": 42}',
    "\n<|im_start|>user\nthanks!",
    "\nThe weather in Paris is sunny and 21 degrees.",
    "<|im_end|>\nuser: and tomorrow?",
    "<|eot_id|>Function result: ok",
    "\n[TOOL_RESULTS] 17",
    "\nAssistant: done.",
)
_END_TOKENS = (
    "<|im_end|>",
    "<|eot_id|>",
    "<|eom_id|>",
    "<|end_of_text|>",
    "<|endoftext|>",
    "<|end|>",
    "</s>",
)


_TRICKY = (
    "</tool_call>",
    "<tool_call>",
    "<|im_end|>",
    "Observation: 1",
    '{"result": 1}',
    "[TOOL_CALLS]",
    "[ARGS]",
    "Action: y\nAction Input: {}",
    "\n\nuser: hi",
    "```json",
    "<|python_tag|>",
    "}]",
    "; ",
)


_NUMBER_SPELLINGS = ("1e999", "-1e999", "-0", "1E+2", "1.50", "123456789012345678901234567890", "0.1e-400")


def _arguments(rng: random.Random) -> str:
    if rng.random() < 0.1:  # number spellings that JSON allows but a float round trip changes or breaks
        return (
            "{"
            + ", ".join(f'"n{i}": {rng.choice(_NUMBER_SPELLINGS)}' for i in range(rng.randint(1, 3)))
            + "}"
        )
    value = {
        rng.choice(["city", "path", "q", "n", "when", "tags", "é"]): rng.choice(_TRICKY)
        if rng.random() < 0.3
        else small_value(rng)
        for _ in range(rng.randint(0, 4))
    }
    return json.dumps(value, ensure_ascii=rng.random() < 0.5)


def _json_equal(a: str, b: str) -> bool:
    try:
        return json.loads(a) == json.loads(b) if (a.strip() or b.strip()) else True
    except ValueError:
        return a == b


def _strict_json(text: str) -> bool:
    try:
        strict_loads(text)
    except ValueError:
        return False
    return True


def _call_key(call: Any, with_id: bool) -> tuple[str, str, str | None]:
    return (call.name, call.arguments, call.id if with_id else None)


def _same_calls(got: list[Any], want: list[Any], *, with_id: bool) -> bool:
    if len(got) != len(want):
        return False
    for g, w in zip(got, want, strict=True):
        if g.name != w.name or not _json_equal(g.arguments, w.arguments):
            return False
        if with_id and (g.id or None) != (w.id or None):
            return False
    return True


def _show_calls(calls: list[Any]) -> str:
    return "[" + ", ".join(f"{c.name}({c.arguments}, id={c.id!r})" for c in calls) + "]"


def _show_parsed(p: Any) -> str:
    return (
        f"Parsed(calls={_show_calls(p.tool_calls)}, content={p.content!r}, fabricated={p.fabricated!r}, "
        f"complete={p.complete}, problems={[(q.kind, q.offset) for q in p.problems]}, "
        f"truncated={p.truncated!r}, format={p.format!r})"
    )[:1500]


class FormatsTarget(Target):
    name = "formats"
    description = "formats: round trips, fabricated tails, splits, mutations"

    def _api(self) -> tuple[Any, str | None]:
        parse, reason = component("toolguard.formats", "parse")
        if parse is None:
            return None, reason
        for name in ("render", "StreamingParser"):
            if component("toolguard.formats", name)[0] is None:
                return None, f"toolguard.formats.{name} is not built yet"
        import toolguard.formats as formats

        return formats, None

    def unavailable(self) -> str | None:
        return self._api()[1]

    def generate(self, rng: random.Random) -> dict[str, Any]:
        fmt = rng.choice(RENDER_FORMATS)
        with_ids = fmt in ("openai", "mistral") and rng.random() < 0.6
        calls = [
            {
                "name": rng.choice(_NAMES),
                "arguments": _arguments(rng),
                "id": f"call_{rng.randrange(10**6)}" if with_ids else None,
            }
            for _ in range(rng.choice([1, 1, 1, 2, 3]))
        ]
        content = rng.choice(_PROSE) if rng.random() < 0.6 else ""
        if content and rng.random() < 0.2:  # prose holding a partial marker
            content += " " + rng.choice(["<tool", "[TOOL", "Action", "<|", "{", "[1, 2]", '{"a": 1}'])
        tail = rng.choice(_TAILS) if rng.random() < 0.4 else ""
        case: dict[str, Any] = {
            "format": fmt,
            "calls": calls,
            "content": content,
            "tail": tail,
            "cuts_seed": rng.randrange(2**32),
        }
        if rng.random() < 0.3:  # a damaged turn: store the text itself
            formats, _ = self._api()
            from ..._tools import ToolCall

            try:
                text = (
                    formats.render(
                        [ToolCall(str(c["name"]), str(c["arguments"]), c["id"]) for c in calls],
                        format=fmt,
                        content=content,
                    )
                    + tail
                )
            except Exception:  # render's own failures are checked in check(); here just keep the case
                text = content + tail
            for _ in range(rng.randint(1, 3)):
                text = mutate(rng, text)[0]
            case["text"] = text
        return case

    def check(self, case: dict[str, Any]) -> list[Violation]:
        from ..._exceptions import ToolguardError
        from ..._tools import ToolCall

        formats, reason = self._api()
        if formats is None:
            return [Violation("unavailable", "toolguard.formats exists", str(reason))]
        fmt = case["format"]
        calls = [ToolCall(c["name"], c["arguments"], c.get("id")) for c in case["calls"]]
        try:
            rendered = formats.render(calls, format=fmt, content=case["content"])
        except ToolguardError as exc:
            self.stats[f"render refused ({type(exc).__name__})"] += 1
            return []
        except Exception as exc:
            return [self._crash("render", exc)]
        mutated = "text" in case
        text = case["text"] if mutated else rendered + case["tail"]
        out: list[Violation] = []
        try:
            parsed = formats.parse(text, format=fmt)
            auto = formats.parse(text, format="auto")
        except ToolguardError:
            return []
        except Exception as exc:
            return [self._crash("parse", exc, text)]
        with_id = fmt in ("openai", "mistral")
        self.stats["mutated" if mutated else "with tail" if case["tail"] else "round trip"] += 1
        if not mutated and not case["tail"]:
            out += self._round_trip(case, parsed, calls, with_id, "round-trip")
            out += self._round_trip(case, auto, calls, with_id, "round-trip:auto")
        elif not mutated:
            out += self._fabrication(case, parsed, calls, with_id, text)
        out += self._splits(formats, case, text, parsed)
        if out and any("e999" in c["arguments"] for c in case["calls"]):
            # one cause shows in every format and invariant: numbers beyond float range (1e999) that a
            # float round trip turns into Infinity; group them as one bug
            out = [Violation(v.invariant, v.expected, v.observed, signature="float-overflow") for v in out]
        return out

    def _crash(self, where: str, exc: BaseException, text: str = "") -> Violation:
        return Violation(
            "no-unexpected-exception",
            "only ToolguardError",
            f"{where}: {describe_exception(exc)}" + (f" on {text!r}"[:800] if text else ""),
            signature=f"exception:{where}:{type(exc).__qualname__}",
        )

    def _round_trip(
        self, case: dict[str, Any], parsed: Any, calls: list[Any], with_id: bool, label: str
    ) -> list[Violation]:
        problems = [p.kind for p in parsed.problems if p.kind in ("fabricated", "unterminated", "malformed")]
        not_json = [c.arguments for c in parsed.tool_calls if not _strict_json(c.arguments)]
        if not_json:
            return [
                Violation(
                    "round-trip",
                    f"{label}: the parsed arguments are JSON, as the calls' were",
                    f"arguments {not_json[0]!r}: " + _show_parsed(parsed),
                    signature="round-trip:arguments-not-json",
                )
            ]
        ok = (
            _same_calls(parsed.tool_calls, calls, with_id=with_id)
            and parsed.content.strip() == case["content"].strip()
            and not parsed.fabricated
            and parsed.complete
            and not problems
        )
        if ok:
            return []
        return [
            Violation(
                "round-trip",
                f"{label}: parse(render(calls)) gives back {_show_calls(calls)} "
                f"after content {case['content']!r}, "
                "nothing cut, complete",
                _show_parsed(parsed),
                signature=f"{label}:{case['format']}",
            )
        ]

    def _fabrication(
        self, case: dict[str, Any], parsed: Any, calls: list[Any], with_id: bool, text: str
    ) -> list[Violation]:
        tail = case["tail"]
        core = tail
        for token in _END_TOKENS:
            core = core.replace(token, "")
        core = core.strip()
        problems = []
        if not _same_calls(parsed.tool_calls, calls, with_id=with_id):
            problems.append("the calls changed")
        if core and core in parsed.content:
            problems.append("the tail is in the content")
        if core and core not in parsed.fabricated:
            problems.append("the tail is not in fabricated")
        if not problems:
            return []
        return [
            Violation(
                "fabrication-cut",
                f"the calls {_show_calls(calls)} and the tail {tail!r} cut into fabricated",
                "; ".join(problems) + ": " + _show_parsed(parsed),
                signature=f"fabrication-cut:{case['format']}",
            )
        ]

    def _splits(self, formats: Any, case: dict[str, Any], text: str, parsed: Any) -> list[Violation]:
        from ..._exceptions import ToolguardError

        cuts = random_cuts(random.Random(case.get("cuts_seed", 0)), len(text), most=30)
        for label, chunks in (("one character at a time", list(text)), ("random cuts", split_at(text, cuts))):
            parser = formats.StreamingParser(case["format"])
            completed: list[Any] = []
            deltas: list[str] = []
            try:
                for chunk in chunks:
                    for event in parser.feed(chunk):
                        if isinstance(event, formats.ToolCallCompleted):
                            completed.append(event.call)
                        elif isinstance(event, formats.ContentDelta):
                            deltas.append(event.text)
                result = parser.close()
            except ToolguardError:
                return []
            except Exception as exc:
                return [self._crash(f"StreamingParser.feed ({label})", exc, text)]
            if result != parsed:
                return [
                    Violation(
                        "split-invariance",
                        "StreamingParser in any chunks ends in parse()'s Parsed",
                        f"text {text!r}\nparse: {_show_parsed(parsed)}\n{label}: {_show_parsed(result)}"[
                            :3000
                        ],
                    )
                ]
            if completed != result.tool_calls[: len(completed)]:
                return [
                    Violation(
                        "split-invariance",
                        "announced calls are a prefix of the final calls",
                        f"{label}: announced {_show_calls(completed)}, "
                        f"final {_show_calls(result.tool_calls)}",
                        signature="split-invariance:events",
                    )
                ]
            if not result.content.startswith("".join(deltas)):
                return [
                    Violation(
                        "split-invariance",
                        "content deltas are a prefix of the final content",
                        f"{label}: deltas {''.join(deltas)!r}, final {result.content!r}"[:2000],
                        signature="split-invariance:events",
                    )
                ]
        return []

    def shrink(self, case: dict[str, Any]) -> Any:
        if "text" in case:
            for smaller in text_shrinks(case["text"]):
                yield {**case, "text": smaller}
            return
        if len(case["calls"]) > 1:
            for i in range(len(case["calls"])):
                yield {**case, "calls": case["calls"][:i] + case["calls"][i + 1 :]}
        if case["content"]:
            yield {**case, "content": ""}
        for i, call in enumerate(case["calls"]):
            if call["arguments"] != "{}":
                yield {
                    **case,
                    "calls": [*case["calls"][:i], {**call, "arguments": "{}"}, *case["calls"][i + 1 :]],
                }
        for smaller in text_shrinks(case["tail"]):
            yield {**case, "tail": smaller}


register("formats", FormatsTarget)
