"""AgentLoop: the model proposes, the executor disposes, until the model answers.

    python examples/agent_loop.py                         # offline: a canned model (no network, no key)
    OPENAI_API_KEY=sk-... python examples/agent_loop.py --live --model gpt-4o-mini

The canned model misbehaves the way real ones do: its first call has a wrong argument (re-asked with the
error), then it writes a correct call followed by a tool result it made up (cut: the tool result comes only
from the execution record), then it answers.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import toolguard
from toolguard import tool

TEMPERATURES = {"Paris": 21, "Rome": 27}


@tool(idempotent=True)
def get_weather(city: str, unit: str = "celsius") -> dict[str, Any]:
    """Current temperature in a city."""
    if city not in TEMPERATURES:
        raise LookupError(f"no weather station in {city}")
    return {"city": city, "temperature": TEMPERATURES[city], "unit": unit}


class CannedModel:
    """Stands in for ``openai.OpenAI()``: same ``chat.completions.create`` surface, scripted replies."""

    def __init__(self) -> None:
        self.chat = self
        self.completions = self
        self.replies: list[dict[str, Any]] = [
            {"tool_calls": [("get_weather", {"town": "Paris"})]},
            {
                "content": '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n'
                '</tool_call>\n<tool_response>{"temperature": 35}</tool_response>'
            },
            {"content": "It is 21 °C in Paris."},
        ]

    def create(self, **kwargs: Any) -> dict[str, Any]:
        reply = self.replies.pop(0)
        calls = [
            {
                "id": f"call_{len(kwargs['messages'])}",
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args)},
            }
            for name, args in reply.get("tool_calls", [])
        ]
        message = {"role": "assistant", "content": reply.get("content"), "tool_calls": calls or None}
        return {
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}]
        }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--live", action="store_true", help="use openai.OpenAI() (reads OPENAI_API_KEY)")
    parser.add_argument("--model", default="gpt-4o-mini")
    args = parser.parse_args()
    if args.live:
        import openai

        client: Any = openai.OpenAI()
    else:
        client = CannedModel()
    loop = toolguard.AgentLoop(client, [get_weather], model=args.model, text_format="hermes", max_turns=6)
    result = loop.run("What's the weather in Paris?")
    for message in result.messages:
        calls = [
            f"{c['function']['name']}({c['function']['arguments']})" for c in message.get("tool_calls") or []
        ]
        proposed = " -> " + ", ".join(calls) if calls else ""
        print(f"{message['role']:>9}: {message.get('content') or ''}{proposed}")
    statuses = [r.status for r in result.records]
    print(f"\nstop_reason={result.stop_reason} turns={result.turns} records={statuses}")
    for note in result.notes:
        print("note:", note)


if __name__ == "__main__":
    main()
