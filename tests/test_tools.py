"""Tools and tool sets: schemas from signatures, OpenAI and MCP JSON, and refusing bad schemas early."""

from __future__ import annotations

import datetime
import json
import lzma
import re
from pathlib import Path
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, Field

import toolguard
from toolguard import SchemaError, StreamValidator, Tool, ToolCall, ToolError, ToolSet, tool

SCHEMAS = Path(__file__).resolve().parent.parent / "schemas" / "tools"
BFCL = Path(__file__).resolve().parent / "data" / "bfcl" / "functions.jsonl.xz"


def test_tool_from_a_typed_function() -> None:
    @tool(idempotent=True, timeout=5)
    def get_weather(
        city: str, unit: Literal["celsius", "fahrenheit"] = "celsius", days: int = 1
    ) -> dict[str, int]:
        """Current weather for a city.

        More detail that is not part of the description.

        Args:
            city: City name,
                e.g. Paris.
            unit (str): Temperature unit.
        """
        return {}

    assert isinstance(get_weather, Tool)
    assert (get_weather.name, get_weather.idempotent, get_weather.timeout) == ("get_weather", True, 5)
    assert get_weather.description == "Current weather for a city."
    schema = get_weather.parameters
    assert schema["required"] == ["city"]
    assert schema["additionalProperties"] is False
    assert schema["properties"]["city"] == {"type": "string", "description": "City name, e.g. Paris."}
    assert schema["properties"]["unit"]["enum"] == ["celsius", "fahrenheit"]
    assert schema["properties"]["days"] == {"type": "integer", "default": 1}


def test_bare_decorator_async_function_and_field_descriptions() -> None:
    @tool
    async def search(query: Annotated[str, Field(description="What to look for", min_length=1)]) -> list[str]:
        """Search."""
        return [query]

    assert search.is_async
    assert search.parameters["properties"]["query"] == {
        "type": "string",
        "description": "What to look for",
        "minLength": 1,
    }


def test_nested_models_and_name_override() -> None:
    class Attendee(BaseModel):
        email: str
        optional: bool = False

    @tool(name="create_event", description="Create an event.")
    def make(title: str, start: datetime.datetime, attendees: list[Attendee]) -> str:
        return title

    assert make.name == "create_event" and make.description == "Create an event."
    assert make.parameters["properties"]["start"]["format"] == "date-time"
    assert "$defs" in make.parameters


@pytest.mark.parametrize(
    ("fn_source", "message"),
    [
        ("def f(*args: int) -> None: ...", "args"),
        ("def f(**kw: int) -> None: ...", "kwargs"),
        ("def f(a: 'Missing') -> None: ...", "type hints"),
        ("def f(a: int, /) -> None: ...", "positional-only"),
    ],
)
def test_signatures_no_schema_can_describe_are_refused(fn_source: str, message: str) -> None:
    namespace: dict[str, object] = {}
    exec(fn_source, namespace)
    with pytest.raises(ToolError, match=message):
        tool(namespace["f"])  # type: ignore[call-overload]


@pytest.mark.parametrize("path", sorted(SCHEMAS.glob("*.json")), ids=lambda p: p.stem)
def test_example_tool_sets_load_and_round_trip(path: Path) -> None:
    entries = json.loads(path.read_text())
    toolset = ToolSet.from_openai(entries)
    assert len(toolset) == len(entries) >= 2
    assert ToolSet.from_openai(toolset.to_openai()).to_openai() == toolset.to_openai()
    assert {p.stem for p in SCHEMAS.glob("*.json")} >= {"weather", "calendar", "files", "math", "http"}


def test_bfcl_type_names_are_normalised_once() -> None:
    toolset = ToolSet.from_openai(
        [
            {
                "name": "bfcl",
                "parameters": {
                    "type": "dict",
                    "properties": {"x": {"type": "float"}, "t": {"type": "tuple", "items": {"type": "any"}}},
                },
            }
        ]
    )
    params = toolset["bfcl"].parameters
    assert params["type"] == "object"
    assert params["properties"] == {"x": {"type": "number"}, "t": {"type": "array", "items": {}}}


def _bfcl_docs() -> list[dict[str, Any]]:
    """BFCL's published function docs, every category, deduplicated (tests/data/bfcl/SOURCE.md)."""
    with lzma.open(BFCL, "rt", encoding="utf-8") as fh:
        return [json.loads(line) for line in fh]


def _type_names(schema: Any) -> set[str]:
    found: set[str] = set()
    if isinstance(schema, dict):
        t = schema.get("type")
        found.update([t] if isinstance(t, str) else t if isinstance(t, list) else [])
        for value in schema.values():
            found |= _type_names(value)
    elif isinstance(schema, list):
        for value in schema:
            found |= _type_names(value)
    return found


def test_every_bfcl_function_doc_loads_with_its_type_names_mapped() -> None:
    rows = _bfcl_docs()
    assert len(rows) > 3000
    categories = {row["category"] for row in rows}
    assert {"BFCL_v4_simple_java", "BFCL_v4_simple_javascript", "BFCL_v4_live_multiple"} <= categories
    names = set().union(*(_type_names(row["function"].get("parameters")) for row in rows))
    # the Java and JavaScript categories' names are among them
    assert {"String", "Array", "Boolean", "HashMap", "ArrayList", "long", "char", "double", "any"} <= names
    refused = []
    for row in rows:
        try:
            toolset = ToolSet.from_openai([{"type": "function", "function": row["function"]}])
        except (SchemaError, ToolError) as exc:
            refused.append(f"{row['category']}: {exc}")
            continue
        (loaded,) = toolset
        assert _type_names(loaded.parameters) <= {
            "object",
            "array",
            "string",
            "number",
            "integer",
            "boolean",
            "null",
        }
    assert not refused, refused[:5]


def test_bfcl_java_and_javascript_docs_mean_what_bfcl_means() -> None:
    by_name = {row["function"]["name"]: row["function"] for row in _bfcl_docs()}
    java = ToolSet.from_openai([{"type": "function", "function": by_name["TwoSum.twoSum"]}])["TwoSum.twoSum"]
    assert java.parameters["type"] == "object"
    assert {p["type"] for p in java.parameters["properties"].values()} <= {"array", "string", "integer"}
    js = by_name["createAuthToken"]  # "String", "dict", and a blank type name on options.issuer
    params = ToolSet.from_openai([{"type": "function", "function": js}])["createAuthToken"].parameters
    assert params["properties"]["username"]["type"] == "string"
    assert params["properties"]["options"]["type"] == "object"
    assert "type" not in params["properties"]["options"]["properties"]["issuer"]  # no constraint
    validator = StreamValidator(params)
    validator.feed('{"username": 7')
    assert validator.verdict.state == "rejected" and validator.verdict.error.path == "/username"


@pytest.mark.parametrize(
    ("declared", "expected"),
    [
        ("String", "string"),
        ("Boolean", "boolean"),
        ("Array", "array"),
        ("ArrayList", "array"),
        ("HashMap", "object"),
        ("Hashtable", "object"),
        ("long", "integer"),
        ("Bigint", "integer"),
        ("char", "string"),
        ("double", "number"),
        ("Queue", "array"),
        ("Stack", "array"),
        ("Set", "array"),
        (["String", "null"], ["string", "null"]),
        ("any", None),
        ("Any", None),
        ("", None),
    ],
)
def test_language_type_names(declared: Any, expected: Any) -> None:
    schema = ToolSet.from_openai(
        [{"name": "t", "parameters": {"type": "object", "properties": {"x": {"type": declared}}}}]
    )["t"].parameters
    assert schema["properties"]["x"].get("type") == expected


@pytest.mark.parametrize("declared", ["Promise", "function", "Date", "Optional[str]"])
def test_type_names_with_no_json_schema_meaning_are_refused_naming_the_tool(declared: str) -> None:
    with pytest.raises(SchemaError, match=rf"tool 'js_tool'.*unknown type name '{re.escape(declared)}'"):
        ToolSet.from_openai(
            [{"name": "js_tool", "parameters": {"type": "object", "properties": {"x": {"type": declared}}}}]
        )


@pytest.mark.parametrize(
    ("parameters", "pattern"),
    [
        ({"type": "object", "required": "city"}, r"tool 'bad'.*required"),
        ({"type": "object", "properties": {"x": {"minimum": "3"}}}, r"tool 'bad'.*/properties/x/minimum"),
        ({"type": "string"}, r"tool 'bad'.*object"),
        ({"type": "wat"}, r"tool 'bad'.*wat"),
        ("not a schema", r"tool 'bad'"),
    ],
)
def test_bad_schemas_are_refused_naming_the_tool(parameters: object, pattern: str) -> None:
    with pytest.raises(SchemaError, match=pattern):
        ToolSet.from_openai([{"type": "function", "function": {"name": "bad", "parameters": parameters}}])


def test_draft_is_detected_for_the_schema_check() -> None:
    draft4 = {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "type": "object",
        "properties": {"n": {"type": "number", "minimum": 0, "exclusiveMinimum": True}},
    }
    assert ToolSet.from_openai([{"name": "ok", "parameters": draft4}])["ok"].parameters == draft4
    with pytest.raises(SchemaError, match="draft2020-12"):
        ToolSet.from_openai(
            [
                {
                    "name": "no",
                    "parameters": {**draft4, "$schema": None}
                    | {"properties": {"n": {"type": "number", "exclusiveMinimum": True}}},
                }
            ]
        )


def test_from_openai_refuses_other_entries() -> None:
    with pytest.raises(ToolError, match="not a function tool"):
        ToolSet.from_openai([{"type": "code_interpreter"}])
    with pytest.raises(ToolError, match="no function name"):
        ToolSet.from_openai([{"type": "function", "function": {"parameters": {}}}])
    with pytest.raises(ToolError, match="duplicate"):
        ToolSet.from_openai([{"name": "a"}, {"name": "a"}])


def test_from_mcp_and_back() -> None:
    listing = {
        "tools": [
            {
                "name": "read",
                "description": "Read a file",
                "inputSchema": {
                    "type": "object",
                    "properties": {"path": {"type": "string"}},
                    "required": ["path"],
                },
                "annotations": {"idempotentHint": True, "readOnlyHint": True},
            },
            {"name": "ping", "inputSchema": {"type": "object"}},
        ]
    }
    toolset = ToolSet.from_mcp(listing)  # type: ignore[arg-type]
    assert toolset.names == ["read", "ping"]
    assert toolset["read"].idempotent and not toolset["ping"].idempotent
    assert toolset.to_mcp()[0]["inputSchema"]["required"] == ["path"]
    assert toolset.to_openai()[0] == {
        "type": "function",
        "function": {
            "name": "read",
            "parameters": listing["tools"][0]["inputSchema"],
            "description": "Read a file",
        },
    }


def test_bind_gives_json_tools_an_implementation() -> None:
    toolset = ToolSet.from_openai(json.loads((SCHEMAS / "math.json").read_text()))
    bound = toolset.bind({"add": lambda a, b: a + b})
    assert bound["add"](a=1, b=2) == 3 and toolset["add"].fn is None
    with pytest.raises(ToolError, match="no implementation"):
        toolset["add"](a=1, b=2)
    with pytest.raises(ToolError, match="unknown tools"):
        toolset.bind({"nope": print})


def test_collection_protocol() -> None:
    def a(x: int) -> int:
        return x

    toolset = ToolSet([a, Tool("b")])
    assert "a" in toolset and "z" not in toolset
    assert [t.name for t in toolset] == toolset.names == ["a", "b"]
    assert toolset.get("z") is None
    with pytest.raises(KeyError, match="known tools: a, b"):
        toolset["z"]
    assert repr(toolset) == "ToolSet(['a', 'b'])"


def test_tool_call_proposals() -> None:
    call = ToolCall.from_openai(
        {"id": "c1", "type": "function", "function": {"name": "f", "arguments": {"x": 1}}}
    )
    assert call == ToolCall("f", '{"x": 1}', "c1")
    assert call.parsed_arguments() == {"x": 1}
    assert call.to_openai() == {
        "id": "c1",
        "type": "function",
        "function": {"name": "f", "arguments": '{"x": 1}'},
    }
    assert ToolCall("f", "  ").parsed_arguments() == {}


def test_tool_call_arguments_text_is_kept_verbatim() -> None:
    text = '{"zeta": 1e999, "alpha": 1.0, "mid": -0, "big": 12345678901234567890123}'
    entry = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": text}}
    call = ToolCall.from_openai(entry)
    assert call.arguments == text
    assert call.to_openai() == entry
    assert ToolCall.from_openai(call.to_openai()) == call


def test_public_names() -> None:
    for name in (
        "tool",
        "Tool",
        "ToolSet",
        "ToolCall",
        "Executor",
        "AsyncExecutor",
        "ExecutionRecord",
        "RetryPolicy",
        "AgentLoop",
        "AsyncAgentLoop",
        "LoopResult",
    ):
        assert name in toolguard.__all__, name
    assert repr(toolguard.ToolSet) == "<class 'toolguard.ToolSet'>"


def test_invalid_tool_options() -> None:
    with pytest.raises(ToolError, match="non-empty"):
        Tool("")
    with pytest.raises(ToolError, match="timeout"):
        Tool("x", timeout=0)


def test_tool_call_with_mapping_arguments_is_serialised_once() -> None:
    call = ToolCall("get_weather", {"city": "Zürich", "days": 3}, "toolu_1")  # an Anthropic tool_use.input
    assert call.arguments == '{"city": "Zürich", "days": 3}'
    assert call.parsed_arguments() == {"city": "Zürich", "days": 3}
    assert call == ToolCall("get_weather", '{"city": "Zürich", "days": 3}', "toolu_1")

    @tool
    def get_weather(city: str, days: int) -> str:
        return f"{city}:{days}"

    record = toolguard.Executor([get_weather]).execute(call)
    assert (record.status, record.result) == ("ok", "Zürich:3")


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["Paris"], "not list"),
        (b'{"city": "Paris"}', "not bytes"),
        ({1: "x"}, "must be a string"),
        ({"x": float("nan")}, "cannot be written as JSON"),
        ({"when": datetime.date(2024, 1, 1)}, "cannot be written as JSON"),
    ],
)
def test_tool_call_refuses_arguments_that_are_not_one_json_object_at_construction(
    arguments: Any, message: str
) -> None:
    with pytest.raises(TypeError, match=message):
        ToolCall("f", arguments)


def test_tool_call_from_openai_reads_object_arguments_and_refuses_other_shapes() -> None:
    entry = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": {"a": [1, 2]}}}
    assert ToolCall.from_openai(entry) == ToolCall("f", '{"a": [1, 2]}', "c1")
    with pytest.raises(ToolError, match="JSON text or an object"):
        ToolCall.from_openai({"function": {"name": "f", "arguments": [1]}})
