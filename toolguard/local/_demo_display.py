"""What ``toolguard demo`` prints as it runs: each turn, proposal, validation, record and runaway; counters.

Theory of operation: ``Display`` is told about every model turn (the reply, and for a grammar-off turn the raw
text, parsed here as hermes calls), validates each proposal with a ``StreamValidator`` against the offered
tool's schema (the verdict names the byte offset and JSON path of the first error), and keeps the counters the
summary table reads. ``ObservedExecutor`` is the real ``Executor``; each record it produces is also shown.
Cost: O(size of the text shown).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .._executor import Executor
from .._records import ExecutionRecord
from .._stream import StreamValidator
from .._tools import ToolCall, ToolSet
from ..formats import parse

if TYPE_CHECKING:
    from rich.console import Console

__all__ = ["RAW_MAX_NEW_TOKENS", "Display", "ObservedExecutor"]

#: Tokens one grammar-off turn may generate.
RAW_MAX_NEW_TOKENS = 96


class Display:
    """Prints the run as it happens (rich), and keeps the counters of the summary."""

    def __init__(self, console: Console, toolset: ToolSet) -> None:
        self.console = console
        self.toolset = toolset
        self.turns = self.proposals = self.valid = self.runaways = 0
        self.tokens = self.forced = 0
        self.events: list[str] = []

    def event(self, text: str) -> None:
        self.events.append(text)

    def count(self, generated: int, forced: int) -> None:
        self.tokens += generated
        self.forced += forced

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
            if not parsed.complete and not unreadable:
                unreadable = [f"the call never closed (cut at the {RAW_MAX_NEW_TOKENS}-token limit)"]
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
        if raw_text is not None and not calls and not unreadable:
            self.console.print("    validation: [red]✗[/] no tool call: the model answered without one")
            self.event("no call")
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

    def runaway(self, info: Mapping[str, Any], action: str) -> None:
        from rich.markup import escape

        self.runaways += 1
        unit = escape(repr(info["unit"]))
        self.console.print(
            f"    [magenta]runaway stopped[/]: {info['kind']} loop of {unit} ({info['copies']} copies, "
            f"period {info['period']}) [dim]-> {escape(action)}[/]"
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


class ObservedExecutor(Executor):
    """The real ``Executor``; each record is also shown as it is produced."""

    def __init__(self, toolset: ToolSet, display: Display) -> None:
        super().__init__(toolset, timeout=10.0)
        self.display = display

    def execute_all(self, calls: Any) -> list[ExecutionRecord]:
        records = super().execute_all(calls)
        for record in records:
            self.display.record(record)
        return records
