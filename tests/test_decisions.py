"""The shared decision record (``toolguard._decisions``): fields, log lines, the streamed summary, MCP's."""

from __future__ import annotations

import json

from toolguard._decisions import Decision, format_decision
from toolguard.mcp import McpDecision

REASK = Decision("re-asked", "rejected", "proxy", attempt=1, retries=0, reason="reask", tool="get_weather",
                 where="arguments", keyword="enum", offset=27, path="/unit", message="'kelvin' is not 'c'",
                 status=None, latency=0.0123, detail={"engine": "vllm"})


def test_a_log_line_leaves_the_pointer_and_message_out_unless_asked() -> None:
    line = format_decision(REASK)
    assert line == ("decision=re-asked door=proxy attempt=1 verdict=rejected reason=reask retries=0 "
                    "tool=get_weather where=arguments keyword=enum offset=27 latency_ms=12.3 engine=vllm")
    full = json.loads(format_decision(REASK, "json", arguments=True))
    assert full["path"] == "/unit" and full["message"] == "'kelvin' is not 'c'"
    assert full["action"] == "re-asked"
    assert "path" not in json.loads(format_decision(REASK, "json"))


def test_logfmt_quotes_what_is_not_a_bare_word() -> None:
    odd = Decision("gave-up", "upstream_error", "sdk", detail={"note": 'two words "quoted"\nand a newline'})
    line = format_decision(odd)
    assert "\n" not in line and line.endswith('note="two words \\"quoted\\" and a newline"'), line


def test_the_streamed_summary_names_no_argument() -> None:
    assert REASK.summary() == {"verdict": "rejected", "action": "re-asked", "retries": 0, "attempts": 1,
                               "reason": "reask", "tool": "get_weather", "keyword": "enum", "offset": 27}


def test_an_mcp_decision_is_the_shared_record_too() -> None:
    record = McpDecision("invalid_arguments", tool="add", request_id=3, attempts=0, duration=0.5,
                         reason="bad /x").record()
    assert (record.action, record.verdict, record.door, record.tool, record.request_id) == (
        "answered", "invalid_arguments", "mcp", "add", 3)
    forwarded = McpDecision("forwarded", tool="add", attempts=1, reached_server=True)
    assert forwarded.record().action == "forwarded"
