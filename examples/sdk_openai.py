"""Guard tool calls from any OpenAI-compatible endpoint with ``toolguard.wrap``.

    python examples/sdk_openai.py --base-url http://localhost:8000/v1 --model Qwen/Qwen2.5-7B-Instruct
    OPENAI_API_KEY=sk-... python examples/sdk_openai.py --model gpt-4o-mini   # OPENAI_BASE_URL is read too
    python examples/sdk_openai.py --demo    # offline: a scripted fake server that first sends a broken call

The wrapped client keeps the SDK's surface and types. Invalid calls are re-asked with the violation, loops
are retried with changed sampling, truncated calls with more room; in a stream the upstream is closed at the
first bad character and tool-call deltas are held until the call is complete, so the caller never sees a
broken call.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import openai

import toolguard

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "City name, e.g. Paris"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                },
                "required": ["city", "unit"],
                "additionalProperties": False,
            },
        },
    }
]
MESSAGES = [{"role": "user", "content": "What's the weather in Paris, in celsius? Use the tool."}]


def show(event: toolguard.FlowEvent) -> None:
    """``on_event`` callback: one line per step of the re-ask flow."""
    line = f"  [toolguard] attempt {event.attempt}: {event.kind}"
    if event.reason and event.kind in ("attempt", "retry"):
        line += f" ({event.reason})"
    if event.verdict is not None and event.kind == "verdict":
        line += f" -> {event.verdict.kind}" + (f": {event.verdict.message}" if event.verdict.message else "")
    if event.delay is not None:
        line += f" {event.delay:g}s"
    print(line)


def run(base_url: str | None, api_key: str, model: str) -> None:
    client = openai.OpenAI(base_url=base_url, api_key=api_key)
    guarded = toolguard.wrap(client, on_event=show)

    print("non-stream:")
    completion = guarded.chat.completions.create(
        model=model, messages=MESSAGES, tools=TOOLS, tool_choice="auto"
    )
    message = completion.choices[0].message
    for call in message.tool_calls or []:
        print(f"  call {call.function.name}({json.loads(call.function.arguments)})")
    if message.content:
        print(f"  content: {message.content}")

    print("stream:")
    arguments: dict[int, str] = {}
    names: dict[int, str] = {}
    with guarded.chat.completions.create(model=model, messages=MESSAGES, tools=TOOLS, stream=True) as stream:
        for chunk in stream:
            if not chunk.choices:
                continue
            delta = chunk.choices[0].delta
            if delta.content:
                print(delta.content, end="", flush=True)
            for tc in delta.tool_calls or []:
                names[tc.index] = names.get(tc.index, "") + (tc.function.name or "")
                arguments[tc.index] = arguments.get(tc.index, "") + (tc.function.arguments or "")
    for index in sorted(arguments):
        print(f"  call {names[index]}({json.loads(arguments[index])})")


def demo() -> None:
    """Run against ScriptedUpstream, the repository's fake model server (tests/support)."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.support import Reply, ScriptedUpstream

    broken = Reply.call("get_weather", '{"city": "Paris", ', '"unit": "kelvin"}')
    fixed = Reply.call("get_weather", '{"city": "Paris", ', '"unit": "celsius"}')
    with ScriptedUpstream() as upstream:
        upstream.script(broken, fixed, broken, fixed)
        run(upstream.base_url, "demo", "scripted-model")
        reask = upstream.chat_requests[1].body["messages"][-1]
        print(f"the re-ask sent to the model ({reask['role']} message):\n  {reask['content']}")


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--base-url", default=os.environ.get("OPENAI_BASE_URL"), help="OpenAI-compatible /v1 URL"
    )
    parser.add_argument("--api-key", default=os.environ.get("OPENAI_API_KEY", "none"))
    parser.add_argument("--model", default=os.environ.get("TOOLGUARD_MODEL", "gpt-4o-mini"))
    parser.add_argument("--demo", action="store_true", help="run offline against a scripted fake server")
    args = parser.parse_args()
    try:
        if args.demo:
            demo()
        else:
            run(args.base_url, args.api_key, args.model)
    except toolguard.GuardError as exc:
        print(f"gave up: {exc} ({len(exc.attempts)} attempts)")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
