"""Validating a tool's input against a JSON Schema the host or an MCP server supplied.

Owns: compiling a schema once (draft from its ``$schema``, Draft 2020-12 when it names
none), checking that a schema is itself valid, and the model-facing
``InputValidationError`` text, worded like the built-ins' and Claude Code's (``validation``):
every missing, unexpected or mistyped parameter, so the model can fix all of them in one
retry.
Must not: be imported on the way to ``ready``; ``jsonschema`` costs 100-250 ms to import, so
it is loaded on first use (normally in a worker thread right after ``ready``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .base import InputError
from .validation import Problems, js_type

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

__all__ = ["SchemaInput", "schema_problem"]

_MAX_MESSAGE_CHARS = 200


def schema_problem(schema: Mapping[str, Any]) -> str | None:
    """Why ``schema`` is not a usable tool input schema, or None if it is."""
    if schema.get("type") != "object":
        return 'input_schema must have "type": "object"'
    from jsonschema import Draft202012Validator, validators
    from jsonschema.exceptions import SchemaError

    cls = validators.validator_for(schema, default=Draft202012Validator)
    try:
        cls.check_schema(dict(schema))
    except SchemaError as exc:
        where = "/".join(str(part) for part in exc.absolute_path) or "(root)"
        return f"input_schema is not a valid JSON Schema at {where}: {_cut(exc.message)}"
    return None


class SchemaInput:
    """A compiled input schema; ``validate`` raises ``InputError`` naming every problem."""

    def __init__(self, tool_name: str, schema: Mapping[str, Any]) -> None:
        self.tool_name = tool_name
        self.schema = schema
        self._validator: Validator | None = None

    def _compiled(self) -> Validator:
        if self._validator is None:
            from jsonschema import Draft202012Validator, validators

            cls = validators.validator_for(self.schema, default=Draft202012Validator)
            self._validator = cls(self.schema)
        return self._validator

    def validate(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        value = dict(raw)
        problems = Problems()
        seen: set[tuple[str, str]] = set()

        def once(kind: str, where: str) -> bool:
            if (kind, where) in seen:
                return False
            seen.add((kind, where))
            return True

        for err in self._compiled().iter_errors(value):
            path = _path(err.absolute_path)
            if err.validator == "required" and isinstance(err.instance, dict):
                required = err.validator_value
                for name in required if isinstance(required, list) else []:
                    where = _path([*err.absolute_path, name])
                    if name not in err.instance and once("missing", where):
                        problems.missing.append(where)
            elif err.validator == "additionalProperties" and isinstance(err.instance, dict):
                known = err.schema.get("properties", {}) if isinstance(err.schema, dict) else {}
                patterns = (
                    err.schema.get("patternProperties", {}) if isinstance(err.schema, dict) else {}
                )
                for name in err.instance:
                    if name in known or any(re.search(p, name) for p in patterns):
                        continue
                    where = _path([*err.absolute_path, name])
                    if once("unexpected", where):
                        problems.unexpected.append(where)
            elif err.validator == "type":
                expected = err.validator_value
                if isinstance(expected, list):
                    expected = " | ".join(str(t) for t in expected)
                expected = (
                    "number"
                    if expected == "integer" and not isinstance(err.instance, int | float)
                    else expected
                )
                if once("type", path):
                    problems.wrong_type.append((path, str(expected), js_type(err.instance)))
            elif once(_cut(err.message), path):
                problems.other.append((path, _cut(err.message)))
        if problems:
            raise InputError(problems.message(self.tool_name))
        return value


def _path(parts: Iterable[Any]) -> str:
    """``todos[0].content``, as Claude Code writes a parameter's path."""
    out = ""
    for part in parts:
        out = f"{out}[{part}]" if isinstance(part, int) else (f"{out}.{part}" if out else str(part))
    return out


def _cut(text: str) -> str:
    # jsonschema quotes the offending instance, which may be a megabyte of JSON.
    return text if len(text) <= _MAX_MESSAGE_CHARS else text[:_MAX_MESSAGE_CHARS] + "\u2026"
