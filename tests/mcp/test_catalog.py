"""The sans-IO parts of the MCP guard: the catalog (listing, call and result checks), the policy file and
the package surface."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import toolguard.mcp
from toolguard import ConfigError
from toolguard.mcp import McpPolicy, load_policy
from toolguard.mcp._catalog import Allowed, Catalog, Refused, Unknown

NUMBERS = {"type": "object", "properties": {"n": {"type": "integer", "maximum": 3}}, "required": ["n"]}


def _catalog(policy: McpPolicy | None = None, **extra: object) -> Catalog:
    catalog = Catalog(policy or McpPolicy(), server="srv")
    page = {
        "tools": [
            {
                "name": "count",
                "inputSchema": NUMBERS,
                "annotations": {"readOnlyHint": True},
                "outputSchema": {
                    "type": "object",
                    "properties": {"total": {"type": "integer"}},
                    "required": ["total"],
                },
            },
            {"name": "broken", "inputSchema": {"type": "object", "properties": {"x": {"type": 5}}}},
            {"name": "wipe", "inputSchema": {"type": "object"}},
        ]
    }
    problems = catalog.absorb({**page, **extra}, first=True)
    catalog.problems = problems  # type: ignore[attr-defined]
    return catalog


def test_a_bad_server_schema_is_reported_naming_the_tool_and_server() -> None:
    catalog = _catalog()
    (problem,) = catalog.problems  # type: ignore[attr-defined]
    assert "'srv'" in problem and "'broken'" in problem and "inputSchema" in problem
    refused = catalog.check_call("broken", {"x": 1})
    assert isinstance(refused, Refused) and refused.kind == "bad_schema"


def test_calls_are_judged_before_anything_is_sent() -> None:
    catalog = _catalog()
    assert isinstance(catalog.check_call("count", {"n": 2}), Allowed)
    unknown = catalog.check_call("nope", {})
    assert isinstance(unknown, Unknown) and unknown.message == "Unknown tool: nope"
    invalid = catalog.check_call("count", {"n": 4})
    assert isinstance(invalid, Refused) and invalid.path == "/n" and invalid.offset == 6
    not_object = catalog.check_call("count", [1])
    assert isinstance(not_object, Refused) and "must be a JSON object" in not_object.message
    assert isinstance(catalog.check_call(7, {}), Unknown)


def test_results_are_checked_against_the_output_schema_and_the_cap() -> None:
    catalog = _catalog(McpPolicy(max_result_bytes=100))
    entry = catalog.entries["count"]
    good = {"content": [], "structuredContent": {"total": 1}}
    assert catalog.check_result(entry, good, 50).result is good
    assert (
        catalog.check_result(entry, {"content": [], "structuredContent": {"total": "1"}}, 50).kind
        == "output_invalid"
    )
    assert catalog.check_result(entry, {"content": []}, 50).kind == "output_invalid"
    assert catalog.check_result(entry, good, 101).kind == "result_too_large"
    error = {"content": [{"type": "text", "text": "token=abcdef123456789 failed"}], "isError": True}
    checked = catalog.check_result(entry, error, 50)
    assert checked.kind == "tool_error" and "abcdef123456789" not in checked.result["content"][0]["text"]


def test_a_paginated_listing_replaces_the_old_one_only_when_complete() -> None:
    catalog = _catalog()
    catalog.absorb(
        {"tools": [{"name": "a", "inputSchema": {"type": "object"}}], "nextCursor": "p2"}, first=True
    )
    assert "count" in catalog.entries and "a" not in catalog.entries
    catalog.absorb({"tools": [{"name": "b", "inputSchema": {"type": "object"}}]}, first=False)
    assert set(catalog.entries) == {"a", "b"}


def test_policy_refusals_and_hidden_tools() -> None:
    catalog = _catalog(McpPolicy(refuse_destructive=True, allow_destructive=("wi*",), deny=("count",)))
    assert isinstance(catalog.check_call("wipe", {}), Allowed)
    assert isinstance(catalog.check_call("count", {"n": 1}), Refused)
    listing = {"tools": [{"name": "count"}, {"name": "wipe"}, {"name": "other"}]}
    assert [t["name"] for t in catalog.visible(listing)["tools"]] == ["wipe"]
    only = _catalog(McpPolicy(allow=("count",)))
    assert isinstance(only.check_call("wipe", {}), Refused)


def test_policy_file(tmp_path: Path) -> None:
    path = tmp_path / "policy.toml"
    path.write_text(
        'deny = ["git_reset"]\nrefuse_destructive = true\ntimeout = 5\nretry_attempts = 1\n'
        "[tool_timeouts]\nslow = 120\n"
    )
    policy = load_policy(path)
    assert policy.deny == ("git_reset",) and policy.refuse_destructive and policy.timeout == 5.0
    assert policy.retry.attempts == 1 and policy.tool_timeouts == {"slow": 120.0}
    path.write_text("denny = []\n")
    with pytest.raises(ConfigError, match="unknown policy keys: denny"):
        load_policy(path)
    path.write_text("timeout = -1\n")
    with pytest.raises(ConfigError, match="timeout must be a positive number"):
        load_policy(path)
    (tmp_path / "p.json").write_text('{"allow": ["a*"]}')
    assert load_policy(tmp_path / "p.json").allow == ("a*",)


def test_package_surface() -> None:
    assert toolguard.mcp.__all__ == sorted(toolguard.mcp.__all__)
    for name in toolguard.mcp.__all__:
        assert hasattr(toolguard.mcp, name)


def test_the_core_never_imports_the_mcp_door() -> None:
    code = (
        "import sys, toolguard, toolguard.formats, toolguard.proxy, toolguard.sdk, toolguard.cli;"
        "print(','.join(m for m in ('mcp', 'toolguard.mcp') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_a_missing_sdk_gets_an_install_hint() -> None:
    code = "import sys\nsys.modules['mcp'] = None\ntry:\n import toolguard.mcp\nexcept ImportError as e:\n"
    code += " print(e)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install 'toolguard[mcp]'" in out.stdout
