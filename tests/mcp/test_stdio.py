"""The guard in front of a real stdio MCP server (the low-level SDK ``Server`` in a subprocess), driven by the
official ``ClientSession``."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from mcp import MCPError
from mcp_types import INVALID_PARAMS

from tests.mcp.helpers import SERVER_COMMAND, CallLog, Recorder, direct, guarded, make_guard
from toolguard import RetryPolicy

pytestmark = pytest.mark.anyio

FAST = RetryPolicy(attempts=3, backoff=0.01, max_backoff=0.05)


def _dump(result: Any) -> dict[str, Any]:
    return result.model_dump(by_alias=True, exclude_none=True)


async def test_valid_calls_pass_through_unchanged(call_log: CallLog) -> None:
    calls = [
        ("get_weather", {"city": "Paris", "days": 3}),
        ("add", {"a": 2, "b": 40.5}),
        ("write_note", {"text": "x"}),
    ]
    async with direct(SERVER_COMMAND, call_log.env) as session:
        expected = [_dump(await session.call_tool(n, a)) for n, a in calls]
        listed = _dump(await session.list_tools())
    recorder = Recorder()
    async with guarded(make_guard(call_log, recorder)) as session:
        assert _dump(await session.list_tools()) == listed
        got = [_dump(await session.call_tool(n, a)) for n, a in calls]
    assert got == expected
    assert recorder.kinds() == ["forwarded"] * 3
    assert [c["arguments"] for c in call_log.calls()] == [a for _, a in calls] * 2


async def test_invalid_arguments_never_reach_the_server(call_log: CallLog) -> None:
    recorder = Recorder()
    async with guarded(make_guard(call_log, recorder)) as session:
        out_of_range = await session.call_tool("get_weather", {"city": "Paris", "days": 15})
        extra = await session.call_tool("get_weather", {"town": "Paris"})
        wrong_type = await session.call_tool("add", {"a": "2", "b": 3})
    for result in (out_of_range, extra, wrong_type):
        assert result.is_error
    text = out_of_range.content[0].text
    assert "/days" in text and "maximum of 14" in text and "not sent to the server" in text
    assert out_of_range.meta == {
        "io.toolguard/decision": {"kind": "invalid_arguments", "path": "/days", "offset": 27}
    }
    assert "'city' is a required property" in extra.content[0].text
    assert "/a" in wrong_type.content[0].text
    assert call_log.calls() == []
    assert recorder.kinds() == ["invalid_arguments"] * 3
    assert all(not d.reached_server for d in recorder.decisions)


async def test_unknown_tool_is_a_protocol_error_like_the_reference_servers(call_log: CallLog) -> None:
    async with guarded(make_guard(call_log)) as session:
        with pytest.raises(MCPError) as err:
            await session.call_tool("launch_rockets", {})
    assert err.value.error.code == INVALID_PARAMS
    assert err.value.error.message == "Unknown tool: launch_rockets"
    assert call_log.calls() == []


async def test_output_schema_violation_becomes_an_error_result(call_log: CallLog) -> None:
    recorder = Recorder()
    async with guarded(make_guard(call_log, recorder)) as session:
        result = await session.call_tool("bad_output", {})
    assert result.is_error and result.structured_content is None
    assert "/count" in result.content[0].text and "outputSchema" in result.content[0].text
    assert recorder.kinds() == ["output_invalid"]
    assert len(call_log.calls("bad_output")) == 1


async def test_a_read_only_tool_is_retried_on_a_restarted_server(call_log: CallLog) -> None:
    recorder = Recorder()
    async with guarded(make_guard(call_log, recorder, retry=FAST)) as session:
        result = await session.call_tool("flaky_read", {"text": "hi"})
        after = await session.call_tool("add", {"a": 1, "b": 2})  # the restarted server keeps serving
    assert not result.is_error and result.content[0].text == "flaky_read: hi"
    assert after.structured_content == {"result": 3}
    runs = call_log.calls("flaky_read")
    assert len(runs) == 2 and runs[0]["pid"] != runs[1]["pid"]
    assert "restarted" in recorder.kinds()
    forwarded = [d for d in recorder.decisions if d.tool == "flaky_read"]
    assert forwarded[0].kind == "forwarded" and forwarded[0].attempts == 2


async def test_a_non_idempotent_tool_is_not_retried_and_the_client_is_told(call_log: CallLog) -> None:
    recorder = Recorder()
    async with guarded(make_guard(call_log, recorder, retry=FAST)) as session:
        result = await session.call_tool("flaky_write", {"text": "hi"})
        again = await session.call_tool(
            "flaky_write", {"text": "second"}
        )  # the next call restarts the server
    assert result.is_error
    text = result.content[0].text
    assert "outcome is unknown" in text and "not retried" in text and "restarted for the next call" in text
    assert result.meta == {
        "io.toolguard/decision": {"kind": "transport_failure", "attempts": 1, "outcome": "unknown"}
    }
    assert not again.is_error and again.content[0].text == "flaky_write: second"
    assert [c["arguments"]["text"] for c in call_log.calls("flaky_write")] == ["hi", "second"]
    assert recorder.kinds("flaky_write") == ["transport_failure", "forwarded"]


async def test_a_slow_call_times_out_with_an_unknown_outcome(call_log: CallLog) -> None:
    recorder = Recorder()
    guard = make_guard(call_log, recorder, tool_timeouts={"slow": 0.3}, retry=RetryPolicy(attempts=1))
    async with guarded(guard) as session:
        with anyio.fail_after(10):
            result = await session.call_tool("slow", {"seconds": 5})
        quick = await session.call_tool("add", {"a": 1, "b": 1})
    assert result.is_error and "no answer to 'slow' within 0.3 s" in result.content[0].text
    assert quick.structured_content == {"result": 2}
    assert recorder.kinds("slow") == ["timeout"]


async def test_a_read_only_slow_call_is_retried_after_a_timeout(call_log: CallLog) -> None:
    recorder = Recorder()
    guard = make_guard(call_log, recorder, tool_timeouts={"slow": 0.2}, retry=FAST)
    async with guarded(guard) as session:
        result = await session.call_tool("slow", {"seconds": 3})
    assert result.is_error and "after 3 attempts" in result.content[0].text
    assert len(call_log.calls("slow")) == 3


async def test_an_idempotency_key_runs_the_call_once(call_log: CallLog) -> None:
    recorder = Recorder()
    meta = {"io.toolguard/idempotency-key": "note-1"}
    async with guarded(make_guard(call_log, recorder)) as session:
        first = await session.call_tool("write_note", {"text": "once"}, meta=meta)
        second = await session.call_tool("write_note", {"text": "once"}, meta=meta)
        with pytest.raises(MCPError, match="idempotency key 'note-1' was already used for a different call"):
            await session.call_tool("write_note", {"text": "different"}, meta=meta)
    assert _dump(first) == _dump(second)
    assert len(call_log.calls("write_note")) == 1
    assert recorder.kinds("write_note") == ["forwarded", "duplicate", "protocol_error"]


async def test_error_text_is_sanitised(call_log: CallLog) -> None:
    async with guarded(make_guard(call_log)) as session:
        result = await session.call_tool("leaky_error", {})
    text = result.content[0].text
    assert result.is_error
    assert "hunter2" not in text and "sk-live" not in text and "Traceback" not in text and "File " not in text
    assert "ConnectionError: could not reach" in text


async def test_large_results_are_withheld_with_the_reason(call_log: CallLog) -> None:
    async with guarded(make_guard(call_log, max_result_bytes=10_000)) as session:
        small = await session.call_tool("big", {"size": 100})
        large = await session.call_tool("big", {"size": 50_000})
    assert not small.is_error
    assert large.is_error and "over toolguard's cap of 10000 bytes" in large.content[0].text


async def test_progress_notifications_reach_the_client(call_log: CallLog) -> None:
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    async with guarded(make_guard(call_log)) as session:
        result = await session.call_tool("progress", {}, progress_callback=on_progress)
        for _ in range(
            100
        ):  # the client runs progress callbacks in their own tasks: the result may come first
            if len(seen) == 2:
                break
            await anyio.sleep(0.02)
    assert result.content[0].text == "progressed"
    assert seen == [(1, 2, "half"), (2, 2, "done")]


async def test_the_tool_list_is_kept_current_on_list_changed(call_log: CallLog) -> None:
    async with guarded(make_guard(call_log)) as session:
        with pytest.raises(MCPError, match="Unknown tool: late_tool"):
            await session.call_tool("late_tool", {})
        await session.call_tool("add_tool", {})
        for _ in range(100):  # the guard re-lists in the background after notifications/tools/list_changed
            try:
                result = await session.call_tool("late_tool", {})
                break
            except MCPError:
                await anyio.sleep(0.05)
    assert result.content[0].text == "late_tool done"


async def test_policy_deny_and_destructive_tools(call_log: CallLog) -> None:
    recorder = Recorder()
    guard = make_guard(call_log, recorder, deny=("write_*",), refuse_destructive=True)
    async with guarded(guard) as session:
        names = [t.name for t in (await session.list_tools()).tools]
        denied = await session.call_tool("write_note", {"text": "x"})
        destructive = await session.call_tool("delete_all", {})
        fine = await session.call_tool("add", {"a": 1, "b": 1})
    assert "write_note" not in names and "delete_all" not in names and "add" in names
    assert denied.is_error and "denies" in denied.content[0].text
    assert destructive.is_error and "destructive" in destructive.content[0].text
    assert not fine.is_error
    assert [c["name"] for c in call_log.calls()] == ["add"]
    assert recorder.kinds() == ["policy_refused", "policy_refused", "forwarded"]


async def test_auto_negotiating_client_falls_back_to_the_handshake(call_log: CallLog) -> None:
    from mcp import Client

    guard = make_guard(call_log)
    to_guard, guard_in = anyio.create_memory_object_stream[Any](0)
    guard_out, from_guard = anyio.create_memory_object_stream[Any](0)

    @__import__("contextlib").asynccontextmanager
    async def streams() -> Any:
        yield from_guard, to_guard

    async with anyio.create_task_group() as tg:
        tg.start_soon(guard.serve, guard_in, guard_out)
        async with Client(streams(), mode="auto") as client:
            assert client.session.initialize_result is not None
            result = await client.call_tool("add", {"a": 20, "b": 22})
        assert result.structured_content == {"result": 42}
        tg.cancel_scope.cancel()
