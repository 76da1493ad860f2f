"""``toolguard demo``: the embedded model, real tools and the agent loop, end to end, offline.

Theory of operation: the demo loads the embedded demo model (``toolguard/_models/demo``), gives the example
tool sets small Python implementations (fake weather and calendar data, real files in a temporary workspace,
real arithmetic; no network), and runs ``AgentLoop`` on a few requests. The loop talks to ``_DemoClient``, an
OpenAI-surface client over ``LocalGenerator`` that follows a per-request *plan*: most turns are guarded
(grammar on, greedy); a few faults are injected on purpose so every mechanism shows up once:

- **re-ask**: one turn decoded with the grammar *off* and digits banned from sampling, so the model cannot
  write the integer its tool needs; the executor refuses the proposal (``invalid``), the loop re-asks with the
  validation error, and the next, guarded turn gets it right;
- **runaway stop**: one turn with a strong logit bias on one token; the runaway detector stops the loop
  (``finish_reason="repetition"``) and the client retries with the bias removed (retry with a change);
- **tool error**: a request for a file that does not exist; the executor records ``error`` with a sanitised
  message and the model answers with it.

Each proposal is shown with its validation (``StreamValidator`` against the tool's schema), each execution
record with its status, and the run ends with a summary table (``DemoSummary``). Greedy decoding makes a run
deterministic for given weights and thread count. Cost: a few hundred forward passes of a ~2M-parameter model.
"""

from __future__ import annotations

import json
import tempfile
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Literal

from .._executor import Executor
from .._loop import AgentLoop, LoopResult
from .._records import ExecutionRecord
from .._stream import StreamValidator
from .._tools import Tool, ToolCall, ToolSet
from ..formats import parse

if TYPE_CHECKING:
    from rich.console import Console

    from ._generator import LocalGenerator

__all__ = [
    "DEMO_REQUESTS",
    "FAKE_BACKENDS",
    "DemoRequest",
    "DemoSummary",
    "TurnPlan",
    "demo_toolset",
    "grammar_tools",
    "run_demo",
    "run_fake_tool",
]

Fault = Literal["none", "grammar_off_no_digits", "runaway_bias"]

#: Tokens one demo turn may generate.
DEMO_MAX_NEW_TOKENS = 96
#: How the agent loop re-asks after a call it could not read (``toolguard._loop``).
_UNREADABLE_PREFIX = "Your tool call could not be read"
#: Logit added to the runaway turn's favoured token: large enough to win every step.
RUNAWAY_BIAS = 30.0


@dataclass(frozen=True, slots=True)
class TurnPlan:
    """How the client decodes one model turn: ``fault`` is the injected fault (``"none"``: guarded)."""

    fault: Fault = "none"
    note: str = ""


@dataclass(frozen=True, slots=True)
class DemoRequest:
    """One scripted user request and the plans of its first turns (later turns are guarded)."""

    text: str
    title: str
    plan: tuple[TurnPlan, ...] = ()


DEMO_REQUESTS: tuple[DemoRequest, ...] = (
    DemoRequest("What's the weather in Paris?", "a guarded call"),
    DemoRequest("Add 17 and 25.", "arithmetic, executed for real"),
    DemoRequest(
        "Give me a 3 day forecast for Tokyo.",
        "re-ask after an invalid proposal",
        (TurnPlan("grammar_off_no_digits", "grammar OFF and digits banned: the model cannot write days=3"),),
    ),
    DemoRequest("read drafts/missing.txt", "a tool that fails"),
    DemoRequest(
        "Tell me a joke.",
        "runaway stop",
        (TurnPlan("runaway_bias", f"a +{RUNAWAY_BIAS:g} logit bias on one token"),),
    ),
)


@dataclass(frozen=True, slots=True)
class DemoSummary:
    """What a demo run did, in numbers (also printed as the closing table)."""

    requests: int
    turns: int
    proposals: int
    valid_proposals: int
    reasks: int
    runaways_stopped: int
    records: dict[str, int]
    stop_reasons: list[str]
    answers: list[str | None]
    tokens_generated: int
    tokens_forced: int
    seconds: float
    events: list[str] = field(default_factory=list)


# ----------------------------------------------------------------------------------------------------
# Fake backends: deterministic functions of their arguments, the demo's tools (fake data is fine). The
# synthetic training dialogues take their tool results from these, so the model knows their shapes.

_CONDITIONS = ["sunny", "cloudy", "rainy", "windy", "snowy", "foggy", "clear", "partly cloudy"]
_EVENT_TITLES = ["Team sync", "Standup", "Dentist", "Lunch with Sam", "Code review", "Gym", "Book club"]
_FILE_TEXTS = [
    "hello world",
    "buy milk and eggs",
    "meeting at noon",
    "TODO: fix the tests",
    "ship it",
    "done",
]
_FILE_NAMES = ["notes.txt", "todo.md", "config.yaml", "report.csv", "README.md", "data.json", "main.py"]


def _stable_hash(value: str) -> int:
    return zlib.crc32(value.encode("utf-8"))


def _temp(celsius: int, unit: str) -> int:
    return celsius if unit == "celsius" else round(celsius * 9 / 5 + 32)


def fake_get_weather(city: str, unit: str = "celsius") -> dict[str, Any]:
    h = _stable_hash(city.lower())
    return {
        "city": city,
        "temperature": _temp(h % 35 - 5, unit),
        "unit": unit,
        "conditions": _CONDITIONS[(h >> 8) % 8],
    }


def fake_get_forecast(city: str, days: int, unit: str = "celsius") -> dict[str, Any]:
    h = _stable_hash(city.lower())
    daily = [
        {"day": d + 1, "high": _temp((h >> d) % 35 - 5, unit), "conditions": _CONDITIONS[(h >> (d + 3)) % 8]}
        for d in range(days)
    ]
    return {"city": city, "unit": unit, "days": daily}


def fake_create_event(
    title: str,
    start: str,
    duration_minutes: int,
    attendees: list[str] | None = None,
    location: str | None = None,
) -> dict[str, Any]:
    event = {
        "id": f"evt_{_stable_hash(title + start) % 16**6:06x}",
        "title": title,
        "start": start,
        "duration_minutes": duration_minutes,
    }
    return {"created": True, "event": event}


def fake_list_events(date: str) -> dict[str, Any]:
    h = _stable_hash(date)
    events = [
        {
            "title": _EVENT_TITLES[(h >> (4 * i)) % len(_EVENT_TITLES)],
            "start": f"{date}T{9 + (h >> i) % 8:02d}:00:00Z",
        }
        for i in range(h % 3)
    ]
    return {"date": date, "events": events}


def fake_cancel_event(event_id: str) -> dict[str, Any]:
    return {"cancelled": True, "event_id": event_id}


def fake_read_file(path: str, max_bytes: int = 65536) -> dict[str, Any]:
    return {"path": path, "content": _FILE_TEXTS[_stable_hash(path) % len(_FILE_TEXTS)][:max_bytes]}


def fake_write_file(path: str, content: str, overwrite: bool = False) -> dict[str, Any]:
    return {"path": path, "bytes_written": len(content.encode("utf-8"))}


def fake_list_dir(path: str = ".") -> dict[str, Any]:
    h = _stable_hash(path)
    return {
        "path": path,
        "entries": sorted({_FILE_NAMES[(h >> (3 * i)) % len(_FILE_NAMES)] for i in range(1 + h % 4)}),
    }


def fake_http_get(url: str, headers: dict[str, str] | None = None, timeout: float = 10) -> dict[str, Any]:
    status = 200 if _stable_hash(url) % 5 else 404
    return {"url": url, "status": status, "body": "OK" if status == 200 else "Not Found"}


def fake_http_post(url: str, json: dict[str, Any], idempotency_key: str | None = None) -> dict[str, Any]:
    return {"url": url, "status": 201, "body": "Created"}


def _num(x: float) -> int | float:
    return int(x) if float(x).is_integer() else round(x, 6)


def fake_add(a: float, b: float) -> dict[str, Any]:
    return {"result": _num(a + b)}


def fake_evaluate(expression: str) -> dict[str, Any]:
    """Arithmetic only: the schema's pattern admits digits, + - * / ( ) . and spaces, nothing else."""
    if not set(expression) <= set("0123456789+-*/(). "):
        raise ValueError("only numbers and + - * / ( ) are allowed")
    return {"result": _num(round(float(eval(expression, {"__builtins__": {}}, {})), 6))}


def fake_statistics(values: list[float], measures: list[str] | None = None) -> dict[str, Any]:
    import statistics

    out: dict[str, Any] = {}
    for m in measures or ["mean"]:
        if m == "mean":
            out["mean"] = _num(round(statistics.fmean(values), 4))
        elif m == "median":
            out["median"] = _num(statistics.median(values))
        elif m == "stdev":
            out["stdev"] = _num(round(statistics.pstdev(values), 4))
    return out


FAKE_BACKENDS: dict[str, Callable[..., dict[str, Any]]] = {
    "get_weather": fake_get_weather,
    "get_forecast": fake_get_forecast,
    "create_event": fake_create_event,
    "list_events": fake_list_events,
    "cancel_event": fake_cancel_event,
    "read_file": fake_read_file,
    "write_file": fake_write_file,
    "list_dir": fake_list_dir,
    "http_get": fake_http_get,
    "http_post": fake_http_post,
    "add": fake_add,
    "evaluate": fake_evaluate,
    "statistics": fake_statistics,
}


def run_fake_tool(name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """Run the fake backend for ``name`` (``KeyError``: unknown tool, ``TypeError``: bad arguments)."""
    return FAKE_BACKENDS[name](**arguments)


# -- tools -------------------------------------------------------------------------------------------


class _Workspace:
    """Real file tools confined to one folder (paths are relative; nothing escapes the folder)."""

    def __init__(self, root: Path) -> None:
        self.root = root.resolve()

    def _path(self, path: str) -> Path:
        target = (self.root / path).resolve()
        if target != self.root and self.root not in target.parents:
            raise ValueError(f"path {path!r} leaves the workspace")
        return target

    def read_file(self, path: str, max_bytes: int = 65536) -> dict[str, Any]:
        target = self._path(path)
        if not target.is_file():
            raise FileNotFoundError(f"no such file: {path}")
        return {"path": path, "content": target.read_bytes()[:max_bytes].decode("utf-8", errors="replace")}

    def write_file(self, path: str, content: str, overwrite: bool = False) -> dict[str, Any]:
        target = self._path(path)
        if target.exists() and not overwrite:
            raise FileExistsError(f"{path} exists; pass overwrite=true to replace it")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content, encoding="utf-8")
        return {"path": path, "bytes_written": len(content.encode("utf-8"))}

    def list_dir(self, path: str = ".") -> dict[str, Any]:
        target = self._path(path)
        if not target.is_dir():
            raise FileNotFoundError(f"no such directory: {path}")
        return {"path": path, "entries": sorted(p.name for p in target.iterdir())}


def demo_toolset(tool_sets: Mapping[str, Sequence[Mapping[str, Any]]], workspace: Path) -> ToolSet:
    """The example tool sets bound to the demo's implementations (files in ``workspace``, the rest fake)."""
    files = _Workspace(workspace)
    impl: dict[str, Callable[..., Any]] = dict(FAKE_BACKENDS)
    impl.update(read_file=files.read_file, write_file=files.write_file, list_dir=files.list_dir)
    idempotent = {
        "get_weather",
        "get_forecast",
        "list_events",
        "read_file",
        "list_dir",
        "http_get",
        "add",
        "evaluate",
        "statistics",
    }
    tools = []
    for spec in (t for ts in tool_sets.values() for t in ts):
        fn = spec["function"]
        tool = Tool(
            name=fn["name"], parameters=fn.get("parameters", {}), description=fn.get("description", "")
        )
        tools.append(tool.bind(impl[fn["name"]], idempotent=fn["name"] in idempotent))
    return ToolSet(tools)


# -- the client the agent loop talks to ---------------------------------------------------------------------


class _Display:
    """Prints the run as it happens (rich), and keeps the counters of the summary."""

    def __init__(self, console: Console, toolset: ToolSet) -> None:
        self.console = console
        self.toolset = toolset
        self.turns = self.proposals = self.valid = self.runaways = 0
        self.tokens = self.forced = 0
        self.events: list[str] = []

    def event(self, text: str) -> None:
        self.events.append(text)

    def validate(self, call: ToolCall) -> tuple[bool, str]:
        if call.name not in self.toolset:
            return False, f"unknown tool {call.name!r}"
        validator = StreamValidator(self.toolset[call.name].parameters)
        verdict = validator.feed(call.arguments)
        if verdict.state != "rejected":
            verdict = validator.close()
        if verdict.state == "rejected" and verdict.error is not None:
            err = verdict.error
            return False, f"rejected at offset {err.offset}, path {err.path or '/'}: {err.message}"
        return True, "valid against the schema"

    def turn(self, label: str, reply: Mapping[str, Any], raw_text: str | None) -> None:
        from rich.markup import escape

        self.turns += 1
        choice = reply["choices"][0]
        message = choice["message"]
        calls = [ToolCall.from_openai(tc) for tc in message.get("tool_calls") or []]
        unreadable = []
        if not calls and raw_text is not None:
            parsed = parse(raw_text, format="hermes")
            calls = parsed.tool_calls
            unreadable = [p.message for p in parsed.problems if p.kind == "malformed"]
        extras = reply.get("toolguard") or {}
        stats = extras.get("stats") or {}
        self.tokens += int(stats.get("tokens_generated", 0))
        self.forced += int(stats.get("tokens_forced", 0))
        info = f"finish_reason={choice['finish_reason']}"
        if stats:
            info += f", {stats.get('tokens_generated', 0)} tokens, {stats.get('tokens_forced', 0)} forced"
        self.console.print(f"  [bold]model[/] ({escape(label)}; {info})")
        if raw_text is not None:
            self.console.print(f"    raw output: [yellow]{escape(raw_text.strip()[:200])}[/]")
        for problem in unreadable:
            self.proposals += 1
            self.console.print(f"    validation: [red]✗[/] unreadable: {escape(problem)}")
            self.event(f"unreadable proposal: {problem}")
        for call in calls:
            self.proposals += 1
            ok, why = self.validate(call)
            self.valid += ok
            mark = "[green]✓[/]" if ok else "[red]✗[/]"
            self.console.print(f"    proposal: [cyan]{escape(call.name)}[/]({escape(call.arguments)})")
            self.console.print(f"    validation: {mark} {escape(why)}")
            self.event(f"proposal {call.name} {call.arguments} valid={ok}")
        content = message.get("content")
        if content and not calls and raw_text is None:
            self.console.print(f"    says: {escape(content.strip()[:200])}")

    def runaway(self, info: Mapping[str, Any]) -> None:
        from rich.markup import escape

        self.runaways += 1
        unit = escape(repr(info["unit"]))
        self.console.print(
            f"    [magenta]runaway stopped[/]: {info['kind']} loop of {unit} ({info['copies']} copies, "
            f"period {info['period']}) [dim]-> retrying without the bias[/]"
        )
        self.event(f"runaway {info['kind']} {info['unit']!r}")

    def record(self, record: ExecutionRecord) -> None:
        from rich.markup import escape

        colour = {"ok": "green", "invalid": "red", "error": "red", "timeout": "yellow"}[record.status]
        detail = record.content if record.status == "ok" else (record.error or "")
        self.console.print(
            f"  [bold]executor[/]: [{colour}]{record.status}[/] {escape(record.call.name)} "
            f"({record.attempts} attempt(s), {record.duration * 1000:.1f} ms): "
            f"{escape(detail[:160])}"
        )
        self.event(f"record {record.call.name} {record.status}")


class _ObservedExecutor(Executor):
    """The real ``Executor``; each record is also shown as it is produced."""

    def __init__(self, toolset: ToolSet, display: _Display) -> None:
        super().__init__(toolset, timeout=10.0)
        self.display = display

    def execute_all(self, calls: Any) -> list[ExecutionRecord]:
        records = super().execute_all(calls)
        for record in records:
            self.display.record(record)
        return records


class _DemoClient:
    """``client.chat.completions.create(...)`` over a ``LocalGenerator``, following the current plan."""

    def __init__(self, generator: LocalGenerator, display: _Display) -> None:
        self.generator = generator
        self.display = display
        self.plan: list[TurnPlan] = []
        self._prepared: dict[str, Any] = {}
        self.chat = SimpleNamespace(completions=SimpleNamespace(create=self.create))

    def create(
        self, *, messages: list[dict[str, Any]], tools: Any = None, tool_choice: Any = "auto", **_: Any
    ) -> dict[str, Any]:
        plan = self.plan.pop(0) if self.plan else TurnPlan()
        tools = self._grammar_tools(tools)
        if plan.fault == "grammar_off_no_digits":
            text = self._unguarded(messages, tools)
            reply = {
                "choices": [
                    {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
                ]
            }
            self.display.turn(f"grammar OFF, digits banned: {plan.note}", reply, text)
            return reply
        processors: Sequence[Any] = ()
        if plan.fault == "runaway_bias":
            processors = (_bias_processor(self.generator.tokenizer),)
        reply = self.generator.chat(
            messages,
            tools=tools,
            tool_choice=tool_choice,
            temperature=0.0,
            max_new_tokens=DEMO_MAX_NEW_TOKENS,
            logits_processors=processors,
        )
        label = "grammar on, greedy" + (f"; injected: {plan.note}" if plan.note else "")
        self.display.turn(label, reply, None)
        runaway = (reply.get("toolguard") or {}).get("runaway")
        if reply["choices"][0]["finish_reason"] == "repetition" and runaway:
            self.display.runaway(runaway)
            reply = self.generator.chat(
                messages,
                tools=tools,
                tool_choice=tool_choice,
                temperature=0.0,
                max_new_tokens=DEMO_MAX_NEW_TOKENS,
            )
            self.display.turn("grammar on, greedy, retried without the bias", reply, None)
        return reply

    def _grammar_tools(self, tools: Any) -> Any:
        if not tools:
            return tools
        key = json.dumps(tools, sort_keys=True)
        if key not in self._prepared:
            prepared, dropped = grammar_tools(tools, engine=self.generator.engine)
            for where in dropped:
                self.display.event(f"not enforced by the grammar (the executor checks it): {where}")
            self._prepared[key] = prepared
        return self._prepared[key]

    def _unguarded(self, messages: list[dict[str, Any]], tools: Any) -> str:
        """The raw model, no grammar, greedy, with every token holding a digit masked out."""
        import torch

        gen = self.generator
        prompt = torch.tensor([gen.prompt_ids(messages, tools)])
        banned = _digit_token_ids(gen.tokenizer)

        def ban(ids: Any, scores: Any) -> Any:
            scores[:, banned] = float("-inf")
            return scores

        with torch.inference_mode():
            out = gen.model.generate(
                prompt,
                attention_mask=torch.ones_like(prompt),
                do_sample=False,
                max_new_tokens=DEMO_MAX_NEW_TOKENS,
                logits_processor=[ban],
                eos_token_id=list(gen.end_token_ids),
                pad_token_id=gen.end_token_ids[0],
            )
        text: str = gen.tokenizer.decode(out[0, prompt.shape[1] :], skip_special_tokens=True)
        return text


def grammar_tools(
    tools: Sequence[Mapping[str, Any]], *, engine: str
) -> tuple[list[dict[str, Any]], list[str]]:
    """``tools`` with the keywords ``engine`` cannot enforce removed (``uniqueItems`` in the example sets),
    and
    where they were (``tool/json/pointer``). The grammar enforces the rest; the executor validates the full
    schema, so nothing goes unchecked."""
    from ._keywords import prepare_schema

    out, where = [], []
    for spec in tools:
        fn = spec["function"]
        dropped: list[str] = []
        params = prepare_schema(fn.get("parameters", {}), engine=engine, tool=fn["name"], unenforced=dropped)
        out.append({"type": "function", "function": {**fn, "parameters": params}})
        where += [f"{fn['name']}{pointer}" for pointer in dropped]
    return out, where


def _digit_token_ids(tokenizer: Any) -> list[int]:
    return [i for i in range(len(tokenizer)) if any(ch.isdigit() for ch in tokenizer.decode([i]))]


def _bias_processor(tokenizer: Any) -> Callable[[Any, Any], Any]:
    """Adds ``RUNAWAY_BIAS`` to one word's logit (" ha", or the first of a few common words that is a single
    token): a crafted sampling fault that makes the model repeat it."""
    favoured = None
    for word in (" ha", " la", " very", " the"):
        ids = tokenizer.encode(word, add_special_tokens=False)
        if len(ids) == 1:
            favoured = ids[0]
            break
    if favoured is None:  # pragma: no cover - any byte-level BPE has " the"
        favoured = tokenizer.encode(" ha", add_special_tokens=False)[0]

    def bias(input_ids: Any, scores: Any) -> Any:
        scores[..., favoured] += RUNAWAY_BIAS
        return scores

    return bias


def _is_reask(message: Mapping[str, Any]) -> bool:
    """A re-ask the agent loop sent: an executor ``invalid`` record, or its note about an unreadable call."""
    content = str(message.get("content") or "")
    if message.get("role") == "tool":
        return content.startswith("Invalid call")
    return message.get("role") == "user" and content.startswith(_UNREADABLE_PREFIX)


# -- the run ------------------------------------------------------------------------------------------------


def run_demo(
    *,
    model: str | Path | None = None,
    requests: Sequence[DemoRequest] = DEMO_REQUESTS,
    console: Console | None = None,
    threads: int | None = None,
    engine: str | None = None,
) -> DemoSummary:
    """Run the demo (see the module docstring) and return its summary. ``model`` defaults to the embedded
    demo model; its folder's ``tools.json`` names the tool sets (the repository's ``schemas/tools``)."""
    from rich.console import Console
    from rich.table import Table

    from .._models import demo_model_path
    from ._generator import LocalGenerator
    from ._processor import DEFAULT_ENGINE
    from ._serve import load_local_model

    console = console or Console()
    started = time.perf_counter()
    folder = Path(model) if model is not None else demo_model_path()
    with console.status("loading the demo model"):
        loaded, tokenizer = load_local_model(folder, threads=threads)
        generator = LocalGenerator(
            loaded, tokenizer, engine=engine or DEFAULT_ENGINE, model_name="toolguard-demo"
        )
    from ._synthetic import load_tool_sets

    tools_file = folder / "tools.json"
    tool_sets = json.loads(tools_file.read_text()) if tools_file.is_file() else load_tool_sets()
    params = sum(p.numel() for p in loaded.parameters())
    console.print(
        f"[bold]toolguard demo[/]: a {params / 1e6:.1f}M-parameter demo model, "
        f"{sum(len(v) for v in tool_sets.values())} tools, grammar engine {generator.engine}. "
        "[dim](It is a tiny demo model: it knows these tools and little else.)[/]"
    )

    results: list[LoopResult] = []
    with tempfile.TemporaryDirectory(prefix="toolguard-demo-") as tmp:
        workspace = Path(tmp)
        (workspace / "drafts").mkdir()
        (workspace / "drafts" / "plan.md").write_text("ship the demo\n")
        (workspace / "notes.txt").write_text("buy milk and eggs\n")
        toolset = demo_toolset(tool_sets, workspace)
        display = _Display(console, toolset)
        client = _DemoClient(generator, display)
        loop = AgentLoop(client, _ObservedExecutor(toolset, display), text_format="hermes", max_turns=4)
        for i, request in enumerate(requests, 1):
            console.rule(f"[bold]{i}. {request.title}")
            console.print(f"[bold]user[/]: {request.text}")
            client.plan = list(request.plan)
            result = loop.run(request.text)
            results.append(result)
            answer = result.content or ""
            console.print(f"[bold]answer[/] ([dim]{result.stop_reason}, {result.turns} turn(s)[/]): {answer}")

    records: dict[str, int] = {"ok": 0, "invalid": 0, "error": 0, "timeout": 0}
    for result in results:
        for record in result.records:
            records[record.status] += 1
    summary = DemoSummary(
        requests=len(results),
        turns=display.turns,
        proposals=display.proposals,
        valid_proposals=display.valid,
        reasks=sum(_is_reask(m) for r in results for m in r.messages),
        runaways_stopped=display.runaways,
        records=records,
        stop_reasons=[r.stop_reason for r in results],
        answers=[r.content for r in results],
        tokens_generated=display.tokens,
        tokens_forced=display.forced,
        seconds=round(time.perf_counter() - started, 2),
        events=display.events,
    )
    table = Table(title="summary", show_header=False)
    table.add_row("requests", str(summary.requests))
    table.add_row("model turns", str(summary.turns))
    table.add_row("proposals (valid)", f"{summary.proposals} ({summary.valid_proposals})")
    table.add_row("re-asks after an invalid proposal", str(summary.reasks))
    table.add_row("runaways stopped", str(summary.runaways_stopped))
    table.add_row("execution records", ", ".join(f"{k} {v}" for k, v in records.items() if v))
    table.add_row(
        "tokens generated (forced by the grammar)", f"{summary.tokens_generated} ({summary.tokens_forced})"
    )
    table.add_row("wall time", f"{summary.seconds:.1f} s")
    console.print(table)
    return summary
