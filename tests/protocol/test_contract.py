"""protocol/ is the language-neutral contract: its example lines cover every message, validate
against the checked-in schema and decode into the Python wire types; the compatibility rule
and the version history agree with the code."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import msgspec
import pytest
from jsonschema import Draft202012Validator

from stdio_executor.protocol import PROTOCOL_VERSION, CommandDecoder, ErrorEvent, encode_event
from stdio_executor.protocol.codec import decode_event

PROTOCOL_DIR = Path(__file__).resolve().parents[2] / "protocol"
SCHEMA: dict[str, Any] = json.loads((PROTOCOL_DIR / "schema.json").read_text())
EXAMPLES = [
    line for line in (PROTOCOL_DIR / "examples.ndjson").read_text().splitlines() if line.strip()
]


def _tags(union: str) -> set[str]:
    refs = SCHEMA["$defs"][union].get("anyOf") or SCHEMA["$defs"][union]["oneOf"]
    tags = set()
    for ref in refs:
        type_field = SCHEMA["$defs"][ref["$ref"].split("/")[-1]]["properties"]["type"]
        tags.add(type_field.get("const") or type_field["enum"][0])
    return tags


def _validator(union: str) -> Draft202012Validator:
    return Draft202012Validator({**SCHEMA, "oneOf": [{"$ref": f"#/$defs/{union}"}]})


def test_every_command_and_event_has_an_example_line() -> None:
    types = [json.loads(line)["type"] for line in EXAMPLES]
    assert set(types) == _tags("Command") | _tags("Event")
    assert len(types) == len(set(types)), "one example per message"


@pytest.mark.parametrize("line", EXAMPLES, ids=lambda line: json.loads(line)["type"])
def test_each_example_validates_and_decodes(line: str) -> None:
    message = json.loads(line)
    if message["type"] in _tags("Command"):
        errors = list(_validator("Command").iter_errors(message))
        assert not errors, errors[0].message
        decoded = CommandDecoder().decode(line.encode(), 1)
        assert not isinstance(decoded, ErrorEvent), decoded
    else:
        errors = list(_validator("Event").iter_errors(message))
        assert not errors, errors[0].message
        # An event example carries every field (the daemon always writes them all), so
        # re-encoding what was decoded gives the line back.
        assert json.loads(encode_event(decode_event(line))) == message


def test_a_validator_rejects_what_the_daemon_would_not_write() -> None:
    bad = {"type": "tool_result", "tool_use_id": "x", "content": "", "is_error": False}
    assert list(_validator("Event").iter_errors(bad)), "meta is required"
    with pytest.raises(msgspec.ValidationError):
        decode_event(json.dumps(bad))


def test_the_version_history_names_the_current_protocol_version() -> None:
    readme = (PROTOCOL_DIR / "README.md").read_text()
    history = readme.split("## Version history", 1)[1]
    versions = [int(v) for v in re.findall(r"^\| (\d+) \|", history, re.MULTILINE)]
    assert versions and max(versions) == PROTOCOL_VERSION == SCHEMA["x-protocol-version"]
    assert SCHEMA["$id"].endswith(f"/v{PROTOCOL_VERSION}.json")


def test_the_version_history_names_every_command_and_event() -> None:
    history = (PROTOCOL_DIR / "README.md").read_text().split("## Version history", 1)[1]
    missing = {tag for tag in _tags("Command") | _tags("Event") if f"`{tag}`" not in history}
    assert not missing, f"protocol/README.md's version history does not mention {missing}"
