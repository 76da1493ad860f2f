"""The weather tool most door tests offer, in each protocol's form, and the request and arguments they use."""

from __future__ import annotations

from typing import Any

#: ``get_weather``'s parameters: a required city, an enum, a free string, a closed object.
WEATHER_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "city": {"type": "string"},
        "unit": {"type": "string", "enum": ["c", "f"]},
        "note": {"type": "string"},
    },
    "required": ["city"],
    "additionalProperties": False,
}
WEATHER_DESCRIPTION = "Current weather in a city."
#: Chat Completions form.
WEATHER_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {"name": "get_weather", "description": WEATHER_DESCRIPTION, "parameters": WEATHER_PARAMETERS},
}
#: Anthropic Messages form.
WEATHER_MESSAGES_TOOL: dict[str, Any] = {
    "name": "get_weather", "description": WEATHER_DESCRIPTION, "input_schema": WEATHER_PARAMETERS,
}
#: Responses API form (strict).
WEATHER_RESPONSES_TOOL: dict[str, Any] = {
    "type": "function", "name": "get_weather", "description": WEATHER_DESCRIPTION,
    "parameters": WEATHER_PARAMETERS, "strict": True,
}
MESSAGES = [{"role": "user", "content": "What is the weather in Paris?"}]
GOOD_ARGS = '{"city": "Paris", "unit": "c"}'
LOOP_UNIT = "Let me check the weather in Paris for you now. "
