"""Fuzz target ``grammar``: random tiny models sampling under toolguard's grammar (needs torch).

Each case draws a tool set (1-3 tools with generated parameter schemas), a ``tool_choice`` (auto, required, a
named tool), a wire format (hermes or bare JSON), parallel calls or not, an engine, a random-weight tiny Llama
(one of a few seeds, built by ``toolguard.local._fixtures`` over the BPE tokenizer the local tests use) and a
sampling seed; it decodes one assistant turn at temperature 1, either through
``model.generate(logits_processor=[ToolCallLogitsProcessor(...)])`` or through ``LocalGenerator.chat``.
Invariants (DESIGN's "one truth": what the grammar lets through, the validator and jsonschema accept):

- ``grammar-output-valid``: every closed call names an allowed tool and its arguments are accepted by the
  ``StreamValidator`` (fed whole, then closed) and by jsonschema;
- ``prefix-viable``: the arguments of a call cut by ``max_new_tokens`` are never rejected by the validator;
- ``terminated``: after the last closed call, only the end of the turn follows;
- ``required-call``: with ``tool_choice`` required or named, a turn that was not cut holds a call;
- ``truthful-finish`` (LocalGenerator): ``finish_reason`` "length" reports no tool calls, "tool_calls" only
  valid ones;
- ``no-unexpected-exception``: building the processor or decoding raises only ``ToolguardError``.

Schemas an engine cannot enforce are refused with a ``ToolguardError`` at construction: counted, not findings.
Cost per case: up to ``max_new_tokens`` forward passes of a ~0.3M-parameter model (~0.1-1 s on one core).
"""

from __future__ import annotations

import json
import os
import random
import tempfile
from pathlib import Path
from typing import Any

from .._core import Target, Violation, register
from .._jsongen import gen_schema
from .._jsonref import reference_valid, strict_loads
from ._common import component, describe_exception

__all__ = ["GrammarTarget"]

FIXTURE_VOCAB = 3000
"""The tokenizer size tests/local uses, so both share one cached tokenizer."""
MODEL_SEEDS = (0, 1, 2, 3)
_ASSERTIONS = frozenset(
    {
        "type",
        "enum",
        "const",
        "multipleOf",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "maxLength",
        "minLength",
        "pattern",
        "format",
        "maxItems",
        "minItems",
        "uniqueItems",
        "maxContains",
        "minContains",
        "maxProperties",
        "minProperties",
        "required",
        "dependentRequired",
        "dependencies",
        "properties",
        "patternProperties",
        "additionalProperties",
        "propertyNames",
        "items",
        "prefixItems",
        "additionalItems",
        "contains",
        "allOf",
        "anyOf",
        "oneOf",
        "not",
        "if",
        "then",
        "else",
        "$ref",
    }
)
_TOOL_NAMES = ("get_weather", "book_flight", "search", "write_file", "add")


def _cache_dir() -> Path:
    root = Path(
        os.environ.get("TOOLGUARD_TEST_CACHE") or Path(tempfile.gettempdir()) / "toolguard-test-cache"
    )
    root.mkdir(parents=True, exist_ok=True)
    return root


def _members(text: str, start: int) -> tuple[dict[str, tuple[int, int]], int]:
    """Exact spans of the members of the JSON object starting at ``text[start]``; returns (spans, end)."""
    decoder = json.JSONDecoder()
    i = start + 1
    spans: dict[str, tuple[int, int]] = {}
    ws = " \t\n\r"
    while True:
        while text[i] in ws:
            i += 1
        if text[i] == "}":
            return spans, i + 1
        if text[i] == ",":
            i += 1
            continue
        key, i = json.decoder.scanstring(text, i + 1)  # type: ignore[attr-defined]
        while text[i] in ws + ":":
            i += 1
        _, end = decoder.raw_decode(text, i)
        spans[key] = (i, end)
        i = end


class GrammarTarget(Target):
    name = "grammar"
    description = "grammar-constrained sampling vs StreamValidator and jsonschema (torch)"

    def __init__(self) -> None:
        super().__init__()
        self._tokenizer: Any = None
        self._models: dict[int, Any] = {}
        self._threads: int | None = None

    def unavailable(self) -> str | None:
        try:
            import torch  # noqa: F401
            import transformers  # noqa: F401
        except ImportError as exc:
            return f"needs torch and transformers (pip install 'toolguard[local]'): {exc}"
        for name in ("ToolCallLogitsProcessor", "LocalGenerator"):
            reason = component("toolguard.local", name)[1]
            if reason is not None:
                return reason
        return component("toolguard._stream", "StreamValidator")[1]

    def open(self) -> None:
        import torch

        from toolguard.local._fixtures import cached_tokenizer

        self._threads = torch.get_num_threads()
        torch.set_num_threads(1)
        self._tokenizer = cached_tokenizer(_cache_dir(), FIXTURE_VOCAB)

    def close(self) -> None:
        if self._threads is not None:
            import torch

            torch.set_num_threads(self._threads)
            self._threads = None

    def _model(self, seed: int) -> Any:
        if seed not in self._models:
            from toolguard.local._fixtures import build_tiny_llama

            self._models[seed] = build_tiny_llama(self._tokenizer, seed=seed)
        return self._models[seed]

    def generate(self, rng: random.Random) -> dict[str, Any]:
        engine = "llguidance" if rng.random() < 0.7 else "xgrammar"
        restrict = rng.random() < 0.85  # mostly keywords the engine claims; sometimes any (refusal paths)
        tools: list[dict[str, Any]] = []
        for name in rng.sample(_TOOL_NAMES, rng.randint(1, 3)):
            schema = gen_schema(rng, max_depth=2)
            if schema.get("type") != "object":
                schema = {"type": "object", "properties": {"value": schema}, "required": ["value"]}
            if restrict:
                schema = _restrict(schema, engine)
            tools.append({"type": "function", "function": {"name": name, "parameters": schema}})
        choice: Any = rng.choice(["auto", "required", "required", "named"])
        if choice == "named":
            choice = rng.choice(tools)["function"]["name"]
        return {
            "tools": tools,
            "tool_choice": choice,
            "path": rng.choice(["processor", "generator"]),
            "format": rng.choice(["hermes", "json"]),
            "parallel": rng.random() < 0.3,
            "engine": engine,
            "model_seed": rng.choice(MODEL_SEEDS),
            "sample_seed": rng.randrange(2**31),
            "max_new_tokens": rng.choice([24, 64, 128, 192]),
        }

    def check(self, case: dict[str, Any]) -> list[Violation]:
        if self._tokenizer is None:
            self.open()
        if case["path"] == "generator":
            return self._check_generator(case)
        return self._check_processor(case)

    # -- model.generate() with the logits processor ---------------------------------------------------------
    def _check_processor(self, case: dict[str, Any]) -> list[Violation]:
        import torch
        from transformers import LogitsProcessorList, StoppingCriteriaList

        from toolguard._exceptions import ToolguardError
        from toolguard.local import ToolCallLogitsProcessor

        tok = self._tokenizer
        try:
            proc = ToolCallLogitsProcessor(
                tok,
                case["tools"],
                case["tool_choice"],
                engine=case["engine"],
                format=case["format"],
                parallel_tool_calls=case["parallel"],
            )
        except ToolguardError as exc:
            self.stats[f"refused ({type(exc).__name__})"] += 1
            return []
        except Exception as exc:
            return [self._crash("ToolCallLogitsProcessor(...)", exc)]
        model = self._model(case["model_seed"])
        prompt = tok.apply_chat_template(
            [{"role": "user", "content": "Use a tool."}],
            tools=case["tools"],
            add_generation_prompt=True,
            tokenize=False,
        )
        inputs = tok(prompt, return_tensors="pt")
        torch.manual_seed(case["sample_seed"])
        try:
            with torch.no_grad():
                out = model.generate(
                    **inputs,
                    logits_processor=LogitsProcessorList([proc]),
                    stopping_criteria=StoppingCriteriaList([proc.stopping_criteria()]),
                    do_sample=True,
                    temperature=1.0,
                    top_k=0,
                    top_p=1.0,
                    max_new_tokens=case["max_new_tokens"],
                    pad_token_id=tok.pad_token_id,
                )
        except ToolguardError as exc:
            self.stats[f"decode error ({type(exc).__name__})"] += 1
            return []
        except Exception as exc:
            return [self._crash("model.generate(logits_processor=[...])", exc)]
        new = out[0, inputs["input_ids"].shape[1] :].tolist()
        ends = set(proc.end_token_ids)
        terminated = bool(new) and new[-1] in ends
        body = tok.decode([t for t in new if t not in ends], skip_special_tokens=False)
        self.stats["terminated" if terminated else "cut by max_new_tokens"] += 1
        return self._judge_text(case, body, terminated)

    def _judge_text(self, case: dict[str, Any], body: str, terminated: bool) -> list[Violation]:
        allowed = self._allowed(case)
        schemas = {t["function"]["name"]: t["function"]["parameters"] for t in case["tools"]}
        out: list[Violation] = []
        calls: list[tuple[str, str]] = []  # (call text, how it ended)
        rest = ""
        if case["format"] == "hermes":
            pos = 0
            while (start := body.find("<tool_call>", pos)) >= 0:
                end = body.find("</tool_call>", start)
                if end < 0:
                    calls.append((body[start + len("<tool_call>") :], "open"))
                    pos = len(body)
                    break
                calls.append((body[start + len("<tool_call>") : end], "closed"))
                pos = end + len("</tool_call>")
            rest = body[pos:] if calls else ""
        else:
            calls, rest = _json_calls(body)
        for call_text, how in calls:
            out += self._judge_call(case, call_text.strip(), how, allowed, schemas, body, terminated)
        if terminated and calls and calls[-1][1] == "closed" and rest.strip():
            out.append(
                Violation(
                    "terminated",
                    "only the end of the turn follows the last call",
                    f"after the call: {rest[:300]!r}\nturn: {body[:1500]!r}",
                )
            )
        if terminated and case["tool_choice"] != "auto" and not calls:
            out.append(
                Violation(
                    "required-call",
                    f"tool_choice {case['tool_choice']!r} gives a call",
                    f"turn without a call: {body[:1500]!r}",
                )
            )
        return out

    def _judge_call(
        self,
        case: dict[str, Any],
        text: str,
        how: str,
        allowed: set[str],
        schemas: dict[str, Any],
        body: str,
        terminated: bool,
    ) -> list[Violation]:
        from toolguard._stream import StreamValidator

        if how == "open" and text.startswith("{"):
            try:  # the object closed but its end marker was cut: the arguments are whole
                json.JSONDecoder().raw_decode(text)
                how = "closed"
            except ValueError:
                pass
        if how == "open":
            marker = text.find('"arguments": ')
            if marker < 0:
                return []
            name = _name_of(text)
            if name not in schemas:
                return []
            validator = StreamValidator(schemas[name])
            verdict = validator.feed(text[marker + len('"arguments": ') :])
            if verdict.state == "rejected":
                return [
                    Violation(
                        "prefix-viable",
                        "a call cut by max_new_tokens is still a viable prefix",
                        f"rejected: {verdict.error}\ncall: {text[:1500]!r}",
                    )
                ]
            return []
        try:
            spans, _ = _members(text, text.index("{"))
            name = json.loads(text[slice(*spans["name"])])
            args_text = text[slice(*spans["arguments"])]
        except (ValueError, KeyError, IndexError) as exc:
            return [
                Violation(
                    "grammar-output-valid",
                    'a closed call is {"name", "arguments"} JSON',
                    f"{exc}: {text[:1500]!r}\nturn: {body[:1500]!r}",
                    signature="grammar-output-valid:shape",
                )
            ]
        if name not in allowed:
            return [
                Violation(
                    "grammar-output-valid",
                    f"a call names one of {sorted(allowed)}",
                    f"name {name!r} in {text[:1000]!r}",
                    signature="grammar-output-valid:name",
                )
            ]
        return self._judge_arguments(schemas[name], name, args_text, body)

    def _judge_arguments(self, schema: Any, name: str, args_text: str, body: str) -> list[Violation]:
        from toolguard._stream import StreamValidator

        try:
            value = strict_loads(args_text)
        except ValueError as exc:  # not JSON at all: the validators rightly refuse it; one finding is enough
            return [
                Violation(
                    "grammar-output-valid",
                    "the arguments are strict JSON",
                    f"{exc}: {args_text[:1500]!r}",
                    signature="grammar-output-valid:json",
                )
            ]
        out = []
        validator = StreamValidator(schema)
        validator.feed(args_text)
        verdict = validator.close()
        if verdict.state != "complete":
            out.append(
                Violation(
                    "grammar-output-valid",
                    "the StreamValidator accepts what the grammar produced",
                    f"{name}({args_text[:1500]}): {verdict.error}\nschema: {json.dumps(schema)[:1500]}",
                    signature="grammar-output-valid:stream",
                )
            )
        if reference_valid(schema, value, check_schema=False) is False:
            out.append(
                Violation(
                    "grammar-output-valid",
                    "jsonschema accepts what the grammar produced",
                    f"{name}({args_text[:1500]})\nschema: {json.dumps(schema)[:1500]}",
                    signature="grammar-output-valid:jsonschema",
                )
            )
        return out

    def _allowed(self, case: dict[str, Any]) -> set[str]:
        names = {t["function"]["name"] for t in case["tools"]}
        choice = case["tool_choice"]
        return {choice} if choice in names else names

    # -- LocalGenerator.chat --------------------------------------------------------------------------------
    def _check_generator(self, case: dict[str, Any]) -> list[Violation]:
        from toolguard._exceptions import ToolguardError
        from toolguard.local import LocalGenerator

        generator = LocalGenerator(self._model(case["model_seed"]), self._tokenizer)
        try:
            result = generator.chat(
                [{"role": "user", "content": "Use a tool."}],
                tools=case["tools"],
                tool_choice=case["tool_choice"],
                parallel_tool_calls=case["parallel"],
                max_new_tokens=case["max_new_tokens"],
                temperature=1.0,
                seed=case["sample_seed"],
            )
        except ToolguardError as exc:
            self.stats[f"refused ({type(exc).__name__})"] += 1
            return []
        except Exception as exc:
            return [self._crash("LocalGenerator.chat(...)", exc)]
        choice = result["choices"][0]
        finish = choice.get("finish_reason")
        calls = choice["message"].get("tool_calls") or []
        self.stats[f"finish {finish}"] += 1
        allowed = self._allowed(case)
        schemas = {t["function"]["name"]: t["function"]["parameters"] for t in case["tools"]}
        shown = json.dumps(result, default=str)[:1500]
        if finish == "length" and calls:
            return [Violation("truthful-finish", "finish_reason length reports no tool calls", shown)]
        if finish == "tool_calls" and not calls:
            return [Violation("truthful-finish", "finish_reason tool_calls carries calls", shown)]
        if finish in ("stop", "tool_calls") and case["tool_choice"] != "auto" and not calls:
            return [Violation("required-call", f"tool_choice {case['tool_choice']!r} gives a call", shown)]
        out: list[Violation] = []
        for call in calls:
            fn = call.get("function") or {}
            name = fn.get("name")
            if name not in allowed:
                out.append(
                    Violation(
                        "grammar-output-valid",
                        f"a call names one of {sorted(allowed)}",
                        shown,
                        signature="grammar-output-valid:name",
                    )
                )
                continue
            out += self._judge_arguments(schemas[name], name, fn.get("arguments", ""), shown)
        return out

    def _crash(self, where: str, exc: BaseException) -> Violation:
        return Violation(
            "no-unexpected-exception",
            "only ToolguardError",
            f"{where}: {describe_exception(exc)}",
            signature=f"exception:{where}:{type(exc).__qualname__}",
        )

    def shrink(self, case: dict[str, Any]) -> Any:
        if len(case["tools"]) > 1:
            for i, tool in enumerate(case["tools"]):
                if case["tool_choice"] == tool["function"]["name"]:
                    continue
                yield {**case, "tools": case["tools"][:i] + case["tools"][i + 1 :]}


def _restrict(schema: Any, engine: str) -> Any:
    """Drop the assertion keywords (and formats) ``toolguard.local`` says ``engine`` does not enforce."""
    try:
        from toolguard.local import ENGINE_FORMATS, ENGINE_KEYWORDS

        allowed, formats = ENGINE_KEYWORDS[engine], ENGINE_FORMATS[engine]
    except (ImportError, KeyError):
        return schema

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(n) for n in node]
        if not isinstance(node, dict):
            return node
        out = {}
        for key, value in node.items():
            if key in _ASSERTIONS and key not in allowed:
                continue
            if key == "format" and value not in formats:
                continue
            if key in ("properties", "$defs", "definitions", "patternProperties"):
                out[key] = {k: walk(v) for k, v in value.items()} if isinstance(value, dict) else value
            elif key in ("enum", "const"):
                out[key] = value
            else:
                out[key] = walk(value)
        if "required" in out and "properties" not in out:
            out.pop("required")
        return out

    return walk(schema)


def _json_calls(body: str) -> tuple[list[tuple[str, str]], str]:
    """The raw text of each call of a bare-JSON turn (an object, or a list of them) and what follows."""
    text = body.strip()
    if not text or text[0] not in "[{":
        return [], ""
    decoder = json.JSONDecoder()
    if text[0] == "{":
        try:
            _, end = decoder.raw_decode(text)
        except ValueError:
            return [(text, "open")], ""
        return [(text[:end], "closed")], text[end:]
    calls: list[tuple[str, str]] = []
    i = 1
    while True:
        while i < len(text) and text[i] in " \t\n\r,":
            i += 1
        if i >= len(text):
            return calls, ""
        if text[i] == "]":
            return calls, text[i + 1 :]
        try:
            _, end = decoder.raw_decode(text, i)
        except ValueError:
            return [*calls, (text[i:], "open")], ""
        calls.append((text[i:end], "closed"))
        i = end


def _name_of(text: str) -> str | None:
    marker = text.find('"name": ')
    if marker < 0:
        return None
    try:
        value, _ = json.JSONDecoder().raw_decode(text, marker + len('"name": '))
    except ValueError:
        return None
    return value if isinstance(value, str) else None


register("grammar", GrammarTarget)
