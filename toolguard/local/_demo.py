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
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Literal

from .._executor import Executor
from .._loop import AgentLoop, LoopResult
from .._records import ExecutionRecord
from .._stream import StreamValidator
from .._tools import ToolCall, ToolSet
from ..formats import parse
from ._demo_tools import demo_toolset

if TYPE_CHECKING:
    from rich.console import Console

    from ._generator import LocalGenerator

__all__ = [
    "DEMO_REQUESTS",
    "DemoRequest",
    "DemoSummary",
    "TurnPlan",
    "grammar_tools",
    "run_demo",
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
    tool_choice: str | None = None  # overrides the loop's tool_choice for this turn


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
        (
            TurnPlan("grammar_off_no_digits", "grammar OFF and digits banned: the model cannot write days=3"),
            TurnPlan(note="re-asked: the corrected call is required", tool_choice="required"),
        ),
    ),
    DemoRequest("read docs/todo.md", "a tool that fails"),
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
        tool_choice = plan.tool_choice or tool_choice
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
        label = "grammar on, greedy"
        if plan.note:
            label += f"; {plan.note}" if plan.tool_choice else f"; injected: {plan.note}"
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
    from ..engines._keywords import prepare_schema

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
    """Adds ``RUNAWAY_BIAS`` to one word's logit ("ha", or the first of a few common words that is a single
    token; the demo tokenizer keeps spaces apart from words): a crafted sampling fault that makes the model
    repeat it."""
    favoured = None
    for word in ("ha", " ha", "la", "the", " the"):
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
