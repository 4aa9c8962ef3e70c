"""The checked-in settings schema is what the typed models generate, and it means what the
loader does: files it accepts validate, files it rejects do not."""

from __future__ import annotations

import json
import pathlib

import jsonschema
import pytest

from stdio_executor.permissions.settings_model import SettingsShapeError, decode, schema_json

ROOT = pathlib.Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "protocol" / "settings.schema.json"


def test_checked_in_settings_schema_matches_the_models() -> None:
    assert SCHEMA.read_bytes() == schema_json(), (
        "protocol/settings.schema.json is stale: run `python -m "
        "stdio_executor.permissions.settings_model > protocol/settings.schema.json`"
    )


GOOD = [
    {},
    {"permissions": {"allow": ["Bash(npm test:*)"], "defaultMode": "acceptEdits"}},
    {"permissions": {"additionalDirectories": ["../lib"]}, "env": {"X": "1"}},
    {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"command": "x", "timeout": 5}]}]}},
    {"hooks": {"Stop": [{"hooks": [{"type": "prompt", "prompt": "hi"}]}]}},
    {"sandbox": {"enabled": True}},
]
BAD = [
    {"permissions": []},
    {"permissions": {"allow": "Bash"}},
    {"permissions": {"deny": ["Bash", 3]}},
    {"permissions": {"defaultMode": "yolo"}},
    {"hooks": {"PreToolUse": [{"matcher": "Bash"}]}},
    {"hooks": {"PostToolUse": [{"hooks": [{"command": "x", "timeout": -1}]}]}},
]


@pytest.mark.parametrize("data", GOOD)
def test_accepted_files_validate(data: object) -> None:
    jsonschema.validate(data, json.loads(SCHEMA.read_text()))
    decode(json.dumps(data))


@pytest.mark.parametrize("data", BAD)
def test_rejected_files_do_not(data: object) -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, json.loads(SCHEMA.read_text()))
    with pytest.raises(SettingsShapeError):
        decode(json.dumps(data))
