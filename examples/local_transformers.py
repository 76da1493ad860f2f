"""Grammar-enforced tool calls from a local transformers model, then real execution.

    python examples/local_transformers.py                     # the embedded demo model, nothing to download
    python examples/local_transformers.py --model ./my-model  # a local causal LM folder with a chat template

``LocalGenerator.chat`` returns an OpenAI-shaped ``chat.completion`` dict. The grammar makes every call valid
JSON for its tool's schema, the turn ends right after the call, a call cut by ``max_new_tokens`` is reported
as ``finish_reason="length"`` (never as a call), and the ``Executor`` runs what the model proposed. The
embedded model is a ~1.2M-parameter demo model: it knows the example tools (weather, calendar, files, math,
http) and little else.
"""

from __future__ import annotations

import argparse
import json
from typing import Literal

from transformers import AutoModelForCausalLM, AutoTokenizer

import toolguard
from toolguard._models import demo_model_path
from toolguard.local import LocalGenerator


@toolguard.tool(idempotent=True)
def get_weather(city: str, unit: Literal["celsius", "fahrenheit"] = "celsius") -> dict[str, object]:
    """Current weather for a city."""
    return {"city": city, "temperature": 21 if unit == "celsius" else 70, "unit": unit, "conditions": "sunny"}


@toolguard.tool(idempotent=True)
def add(a: float, b: float) -> dict[str, float]:
    """Add two numbers."""
    return {"result": a + b}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--model", default=None, help="a local model folder (default: the embedded demo model)"
    )
    args = parser.parse_args()

    path = args.model or demo_model_path()
    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path)
    generator = LocalGenerator(model, tokenizer)
    tools = toolguard.ToolSet([get_weather, add])
    executor = toolguard.Executor(tools)

    for request in ("What's the weather in Paris?", "add 2 and 3", "hi"):
        messages = [{"role": "user", "content": request}]
        reply = generator.chat(messages, tools=tools, tool_choice="auto", temperature=0)
        choice = reply["choices"][0]
        message = choice["message"]
        print(f"user: {request}")
        stats = reply["toolguard"]["stats"]
        print(
            f"  finish_reason={choice['finish_reason']} ({stats['tokens_generated']} tokens, "
            f"{stats['tokens_forced']} forced by the grammar)"
        )
        for call in message.get("tool_calls") or []:
            print(f"  proposal: {call['function']['name']}({call['function']['arguments']})")
            record = executor.execute(toolguard.ToolCall.from_openai(call))
            print(f"  executed: {record.status} -> {json.dumps(record.result)}")
            messages += [message, record.to_message()]
            final = generator.chat(messages, tools=tools, temperature=0)["choices"][0]["message"]["content"]
            print(f"  answer: {final}")
        if not message.get("tool_calls"):
            print(f"  answer: {message['content']}")

    # Sampling at temperature 1 with tool_choice="required": the arguments still match the schema.
    reply = generator.chat(
        [{"role": "user", "content": "weather in Tokyo"}],
        tools=tools,
        tool_choice="required",
        temperature=1.0,
        seed=7,
    )
    call = reply["choices"][0]["message"]["tool_calls"][0]["function"]
    print(f"sampled (T=1, required): {call['name']}({call['arguments']})")

    # Cut short by max_new_tokens: reported as "length" with the open call under toolguard.truncated.
    reply = generator.chat(
        [{"role": "user", "content": "weather in Tokyo"}],
        tools=tools,
        tool_choice="required",
        temperature=0,
        max_new_tokens=4,
    )
    print(
        f"max_new_tokens=4: finish_reason={reply['choices'][0]['finish_reason']}, "
        f"tool_calls={reply['choices'][0]['message'].get('tool_calls')}, "
        f"truncated={reply['toolguard']['truncated']!r}"
    )


if __name__ == "__main__":
    main()
