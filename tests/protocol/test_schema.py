"""The checked-in JSON Schemas must be exactly what the code generates."""

from __future__ import annotations

import pathlib
import subprocess
import sys

from stdio_executor.protocol.schema import protocol_schema, schema_json
from stdio_executor.tools import schemas as tool_schemas

ROOT = pathlib.Path(__file__).resolve().parents[2]


def test_checked_in_protocol_schema_matches_the_code() -> None:
    checked_in = (ROOT / "protocol" / "schema.json").read_bytes()
    assert checked_in == schema_json(), (
        "protocol/schema.json is stale: run `stdio-executor schema > protocol/schema.json`"
    )


def test_schema_command_prints_the_checked_in_schema() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "stdio_executor", "schema"],
        capture_output=True,
        check=True,
        timeout=30,
        cwd=ROOT,
    )
    assert out.stdout == (ROOT / "protocol" / "schema.json").read_bytes()


def test_schema_names_every_command_and_event() -> None:
    defs = protocol_schema()["$defs"]
    for name in ("AddTool", "Interrupt", "Discard", "Drain"):
        assert name in defs
    for name in ("Ready", "ToolStarted", "Progress", "ToolResult", "Drained", "Discarded"):
        assert name in defs
    assert defs["ToolResult"]["properties"]["type"] == {"enum": ["tool_result"]}


def test_checked_in_tool_schemas_match_the_input_structs() -> None:
    assert pathlib.Path(tool_schemas._PATH).read_bytes() == tool_schemas.render(), (
        "stdio_executor/tools/schemas.json is stale: run `python -m stdio_executor.tools.schemas`"
    )


def test_tool_schemas_are_api_tool_definitions() -> None:
    for name, schema in tool_schemas.generate().items():
        assert schema["type"] == "object", name
        assert "title" not in str(schema), name
        for prop in schema["properties"].values():
            assert "description" in prop, name
