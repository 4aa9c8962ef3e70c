"""Validating a tool's input against a JSON Schema the host or an MCP server supplied.

Owns: compiling a schema once (draft from its ``$schema``, Draft 2020-12 when it names
none), checking that a schema is itself valid, and the model-facing
``InputValidationError`` text, worded like the built-ins' (``validation``): every bad field,
what was expected and what arrived, so the model can fix all of them in one retry.
Must not: be imported on the way to ``ready``; ``jsonschema`` costs 100-250 ms to import, so
it is loaded on first use (normally in a worker thread right after ``ready``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from .base import InputError, describe_value

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
        lines: list[str] = []
        seen: set[str] = set()
        for err in self._compiled().iter_errors(value):
            path = [str(part) for part in err.absolute_path]
            if err.validator == "required" and isinstance(err.instance, dict):
                required = err.validator_value
                for name in required if isinstance(required, list) else []:
                    where = ".".join([*path, str(name)])
                    if name not in err.instance and where not in seen:
                        seen.add(where)
                        lines.append(f"- `{where}`: this required parameter is missing")
                continue
            where = ".".join(path) or "input"
            if err.validator == "type":
                expected = err.validator_value
                if isinstance(expected, list):
                    expected = " or ".join(str(t) for t in expected)
                text = f"expected {expected} (got {describe_value(err.instance)})"
            else:
                text = _cut(err.message)
            line = f"- `{where}`: {text}"
            if line not in seen:
                seen.add(line)
                lines.append(line)
        if lines:
            issues = "issue" if len(lines) == 1 else "issues"
            body = "\n".join(lines)
            raise InputError(
                f"<tool_use_error>InputValidationError: {self.tool_name} failed due to the "
                f"following {issues}:\n{body}</tool_use_error>"
            )
        return value


def _cut(text: str) -> str:
    # jsonschema quotes the offending instance, which may be a megabyte of JSON.
    return text if len(text) <= _MAX_MESSAGE_CHARS else text[:_MAX_MESSAGE_CHARS] + "\u2026"
