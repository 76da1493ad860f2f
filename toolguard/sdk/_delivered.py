"""The completion the caller gets when the Guard changed the message: repaired calls, cut fabrication.

A non-streamed answer is returned as the upstream sent it unless the Guard repaired a call written as text
(``Guard.repaired``) or cut text made up beside the calls (``Guard.fabricated``). Then the first choice's
``content`` and ``tool_calls`` become the Guard's message and ``finish_reason`` becomes ``"tool_calls"``;
everything else (ids, usage, extra fields) is kept. SDK objects are rebuilt with their own class
(``model_validate`` over ``model_dump``), dicts as dicts. O(size of the completion), only when changed.
"""

from __future__ import annotations

from typing import Any

from .._guard import Guard

__all__ = ["delivered"]


def delivered(completion: Any, guard: Guard) -> Any:
    """``completion`` with the Guard's message in its first choice, when the Guard changed the message."""
    if not (guard.repaired or guard.fabricated):
        return completion
    data = completion if isinstance(completion, dict) else completion.model_dump()
    choices = data.get("choices") or []
    if not choices:
        return completion
    choice = dict(choices[0])
    message = dict(choice.get("message") or {})
    replaced = guard.message()
    message["content"] = replaced["content"]
    message["tool_calls"] = replaced.get("tool_calls")
    choice["message"] = message
    if message["tool_calls"]:
        choice["finish_reason"] = "tool_calls"
    out = {**data, "choices": [choice, *choices[1:]]}
    if isinstance(completion, dict):
        return out
    return type(completion).model_validate(out)
