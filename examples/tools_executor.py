"""Tools and the Executor: a proposal is checked, run with a deadline, retried only when safe, and recorded.

    python examples/tools_executor.py

Each line shows a proposal, the record's status and attempts, and the tool message the model would get back.
Nothing needs a network or a model: the "model output" is a string, parsed with ``toolguard.formats``.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import toolguard
from toolguard import RetryPolicy, ToolCall, formats, tool

workspace = Path(tempfile.mkdtemp(prefix="toolguard-example-"))


@tool
def write_file(path: str, content: str) -> dict[str, object]:
    """Write a text file in the workspace."""
    (workspace / path).write_text(content)
    return {"path": path, "bytes": len(content.encode())}


@tool(idempotent=True)
def read_file(path: str) -> str:
    """Read a text file in the workspace."""
    return (workspace / path).read_text()


failures = {"left": 2}


@tool(idempotent=True)
def fetch_rates(currency: str) -> dict[str, float]:
    """Exchange rates (a flaky upstream: the first two calls fail)."""
    if failures["left"]:
        failures["left"] -= 1
        raise ConnectionResetError("connection reset by peer")
    return {"EUR": 1.0, currency: 1.08}


@tool(timeout=0.2)
def charge_card(amount_cents: int) -> str:
    """Charge a card: slow, and not idempotent."""
    time.sleep(1)
    return "charged"


@tool
def deploy(service: str) -> str:
    """Deploy a service (fails, leaking a credential in its error)."""
    raise RuntimeError(
        f"deploy of {service} failed: POST https://ci.example/api?token=sk-live-9f8e7d6c5b4a39281726"
    )


executor = toolguard.Executor(
    [write_file, read_file, fetch_rates, charge_card, deploy],
    retry=RetryPolicy(attempts=3, backoff=0.01),
)

# What a model wrote (Qwen/hermes format), including a tool result it made up after its call.
model_output = (
    "I'll save the note first.\n"
    '<tool_call>\n{"name": "write_file", "arguments": {"path": "note.txt", "content": "hello"}}\n'
    "</tool_call>\n"
    '<tool_response>\n{"path": "note.txt", "bytes": 999}\n</tool_response>'
)
parsed = formats.parse(model_output, format="hermes")
print(f"parsed {len(parsed.tool_calls)} call; cut {len(parsed.fabricated)} fabricated characters:")
for note in parsed.notes:
    print("  ", note)
print()

proposals = [
    ToolCall(parsed.tool_calls[0].name, parsed.tool_calls[0].arguments, "call_1"),
    ToolCall("read_file", '{"path": 42}', "call_2"),  # wrong type: refused, tool not run
    ToolCall("read_fil", '{"path": "note.txt"}', "call_3"),  # unknown tool
    ToolCall("read_file", '{"path": "note.txt"}', "call_4"),
    ToolCall("fetch_rates", '{"currency": "USD"}', "call_5"),  # flaky, idempotent: retried
    ToolCall("charge_card", '{"amount_cents": 500}', "call_6"),  # slow, not idempotent: not retried
    ToolCall("deploy", '{"service": "api"}', "call_7"),  # secret in the error: redacted
    ToolCall("write_file", '{"path": "note.txt", "content": "hello"}', "call_1"),  # same id: runs once
]
for call in proposals:
    record = executor.execute(call)
    print(f"{call.id} {call.name:<12} {record.status:<8} attempts={record.attempts}")
    print(f"    {record.to_message()['content']}")
