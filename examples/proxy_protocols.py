"""Anthropic Messages and the OpenAI Responses API through ``toolguard proxy``, with the official clients.

    python examples/proxy_protocols.py --demo         # offline: a scripted chat upstream + the proxy, here
    python examples/proxy_protocols.py --root http://127.0.0.1:8787 --model my-model   # a running proxy

The proxy serves ``POST /v1/messages`` and ``POST /v1/responses`` over any upstream that speaks Chat
Completions: each request is translated into a chat request, guarded exactly as ``/v1/chat/completions`` is
(schema validation, re-asks, runaway and truncation cuts), and the released answer translated back. In the
demo the upstream's first answer to every request is an invalid call (``unit: "kelvin"``); the client only
ever sees the re-asked, valid one.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import anthropic
import openai

PARAMETERS = {
    "type": "object",
    "properties": {"city": {"type": "string"}, "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
    "required": ["city"],
    "additionalProperties": False,
}
ASK = "What is the weather in Paris?"


def run(root: str, model: str) -> None:
    claude = anthropic.Anthropic(base_url=root, api_key="demo", max_retries=0)
    tool = {"name": "get_weather", "description": "Current weather in a city.", "input_schema": PARAMETERS}
    raw = claude.messages.with_raw_response.create(
        model=model, max_tokens=256, messages=[{"role": "user", "content": ASK}], tools=[tool]
    )
    message = raw.parse()
    print(f"messages (retries={raw.headers.get('x-toolguard-retries')}): stop_reason={message.stop_reason}")
    for block in message.content:
        if block.type == "tool_use":
            print(f"  tool_use {block.name}({block.input})")
    with claude.messages.stream(
        model=model, max_tokens=256, messages=[{"role": "user", "content": ASK}], tools=[tool]
    ) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_message()
    print(
        f"messages stream: {len(kinds)} events, {kinds[0]} ... {kinds[-1]}; stop_reason={final.stop_reason}"
    )
    print(f"  tool_use {final.content[-1].name}({final.content[-1].input})")

    client = openai.OpenAI(base_url=root + "/v1", api_key="demo", max_retries=0)
    function = {
        "type": "function",
        "name": "get_weather",
        "description": "Current weather in a city.",
        "parameters": PARAMETERS,
        "strict": True,
    }
    raw_response = client.responses.with_raw_response.create(model=model, input=ASK, tools=[function])
    response = raw_response.parse()
    retries = raw_response.headers.get("x-toolguard-retries")
    print(f"responses (retries={retries}): status={response.status}")
    for item in response.output:
        if item.type == "function_call":
            print(f"  function_call {item.name}({json.loads(item.arguments)})")
    with client.responses.stream(model=model, input=ASK, tools=[function]) as events:
        kinds = [event.type for event in events]
        done = events.get_final_response()
    print(f"responses stream: {len(kinds)} events, {kinds[0]} ... {kinds[-1]}")
    for item in done.output:
        if item.type == "function_call":
            print(f"  function_call {item.name}({json.loads(item.arguments)})")


def demo() -> None:
    """The scripted chat upstream (tests/support; chat-only: the proxy finds it lacks /v1/messages and
    /v1/responses and translates) and the proxy in this process, on 127.0.0.1."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from tests.proxy.proxy_server import ProxyServer
    from tests.support import Reply, ScriptedUpstream

    broken = Reply.call("get_weather", '{"city": "Paris", ', '"unit": "kelvin"}')
    fixed = Reply.call("get_weather", '{"city": "Paris", ', '"unit": "celsius"}')
    with (
        ScriptedUpstream(chat_only=True) as upstream,
        ProxyServer(upstream=upstream.base_url, engine="generic") as proxy,
    ):
        upstream.script(*[broken, fixed] * 4)
        run(proxy.root, "scripted-model")
        print(
            f"upstream chat requests: {len(upstream.chat_requests)} (4 client requests, each re-asked once)"
        )


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--root", default="http://127.0.0.1:8787", help="the proxy's root URL (no /v1)")
    parser.add_argument("--model", default="my-model")
    parser.add_argument("--demo", action="store_true", help="run offline against a scripted chat upstream")
    args = parser.parse_args()
    if args.demo:
        demo()
    else:
        run(args.root, args.model)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
