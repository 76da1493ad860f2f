"""The guard in front of the reference servers from PyPI, ``mcp-server-time`` and ``mcp-server-git`` (on a
temporary repository), over stdio: results equal a direct connection's; bad calls never leave the guard."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from mcp import MCPError

from tests.mcp.helpers import Recorder, direct, guarded
from toolguard.mcp import McpGuard, McpPolicy

pytestmark = pytest.mark.anyio

pytest.importorskip("mcp_server_time", reason="mcp-server-time is not installed (pip install -e '.[dev]')")
pytest.importorskip("mcp_server_git", reason="mcp-server-git is not installed (pip install -e '.[dev]')")

TIME = [sys.executable, "-m", "mcp_server_time", "--local-timezone", "UTC"]


def _dump(result: Any) -> dict[str, Any]:
    return result.model_dump(by_alias=True, exclude_none=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    env = {"GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z"}

    def git(*args: str) -> None:
        subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
            cwd=root,
            check=True,
            capture_output=True,
            env={**env, "PATH": "/usr/bin:/bin"},
        )

    git("init", "-q", "-b", "main")
    (root / "notes.txt").write_text("first\n")
    git("add", "notes.txt")
    git("commit", "-q", "-m", "first commit")
    (root / "notes.txt").write_text("first\nsecond\n")
    return root


async def test_time_server_through_the_guard() -> None:
    convert = {"source_timezone": "Europe/London", "time": "12:00", "target_timezone": "Asia/Tokyo"}
    async with direct(TIME) as session:
        expected = _dump(await session.call_tool("convert_time", convert))
        with pytest.raises(MCPError) as direct_unknown:
            await session.call_tool("no_such_tool", {})
        direct_invalid = await session.call_tool("convert_time", {"time": "12:00"})
    recorder = Recorder()
    async with guarded(McpGuard(command=TIME, on_event=recorder)) as session:
        got = _dump(await session.call_tool("convert_time", convert))
        now = await session.call_tool("get_current_time", {"timezone": "UTC"})
        with pytest.raises(MCPError) as guarded_unknown:
            await session.call_tool("no_such_tool", {})
        invalid = await session.call_tool("convert_time", {"time": "12:00"})
    assert got == expected
    assert now.structured_content["timezone"] == "UTC"
    # toolguard answers an unknown tool exactly as the reference server does
    assert guarded_unknown.value.error == direct_unknown.value.error
    assert direct_invalid.is_error and invalid.is_error
    assert "'source_timezone' is a required property" in invalid.content[0].text
    kinds = recorder.kinds()
    assert kinds == ["forwarded", "forwarded", "unknown_tool", "invalid_arguments"]
    assert [d.reached_server for d in recorder.decisions] == [True, True, False, False]


async def test_git_server_through_the_guard(repo: Path) -> None:
    command = [sys.executable, "-m", "mcp_server_git", "--repository", str(repo)]
    calls = [
        ("git_status", {"repo_path": str(repo)}),
        ("git_log", {"repo_path": str(repo), "max_count": 5}),
        ("git_diff_unstaged", {"repo_path": str(repo)}),
    ]
    async with direct(command) as session:
        expected = [_dump(await session.call_tool(n, a)) for n, a in calls]
    recorder = Recorder()
    policy = McpPolicy(refuse_destructive=True)
    async with guarded(McpGuard(command=command, policy=policy, on_event=recorder)) as session:
        listed = [t.name for t in (await session.list_tools()).tools]
        got = [_dump(await session.call_tool(n, a)) for n, a in calls]
        bad = await session.call_tool("git_log", {"repo_path": str(repo), "max_count": "ten"})
        reset = await session.call_tool("git_reset", {"repo_path": str(repo)})
    assert got == expected
    assert "second" in got[2]["content"][0]["text"]
    assert bad.is_error and "/max_count" in bad.content[0].text
    assert "git_reset" not in listed and "git_commit" in listed  # destructiveHint: true is hidden and refused
    assert reset.is_error and "destructive" in reset.content[0].text
    assert recorder.kinds() == ["forwarded"] * 3 + ["invalid_arguments", "policy_refused"]
    status = subprocess.run(["git", "status", "--porcelain"], cwd=repo, capture_output=True, text=True).stdout
    assert status.strip() == "M notes.txt"  # the refused git_reset did not run


def test_the_readme_example_runs() -> None:
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, str(root / "examples" / "mcp_guard.py")],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=root,
        env={**__import__("os").environ, "PYTHONPATH": str(root)},
    )
    assert out.returncode == 0, out.stderr
    assert "convert_time 12:00 UTC -> Tokyo: 21:00:00+09:00 (isError=False)" in out.stdout
    assert "get_weather: JSON-RPC error -32602: Unknown tool: get_weather" in out.stdout
    assert "decision=invalid_arguments tool=convert_time id=4 attempts=0 reached_server=False" in out.stdout
