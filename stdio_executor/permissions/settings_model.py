"""The shape of a Claude Code settings file, as typed models (msgspec Structs).

Owns: which keys of a settings file this daemon reads and what type each must have, the
decoding of a file's text into those models (msgspec validates while it decodes, in C),
the translation of a validation failure into a message that names the key
(``permissions.allow[1] must be a string, not a number``), and the JSON Schema of the
settings we accept (``protocol/settings.schema.json``, checked against these models by
``tests/protocol/test_settings_schema.py``; regenerate with
``python -m stdio_executor.permissions.settings_model > protocol/settings.schema.json``).
Must not: give the values meaning (``settings`` merges files and parses rules).

Unknown keys are ignored everywhere (``env``, ``model``, other hook events, fields Claude
Code adds later), so a team's file works unchanged. Hook events other than PreToolUse and
PostToolUse are not modelled: they are skipped, as is any hook whose ``type`` is not
``command``.
"""

from __future__ import annotations

import re
import sys
from typing import Annotated, Any, Literal

import msgspec

__all__ = ["MODES", "HookEntry", "HookGroupModel", "SettingsFile", "decode", "schema_json"]

Mode = Literal["default", "acceptEdits", "plan", "dontAsk", "bypassPermissions"]
MODES: tuple[str, ...] = ("default", "acceptEdits", "plan", "dontAsk", "bypassPermissions")


class HookEntry(msgspec.Struct, kw_only=True, frozen=True):
    """One hook of a matcher group."""

    type: str = "command"
    command: str | None = None
    # Seconds before the hook is stopped (default 60).
    timeout: Annotated[float, msgspec.Meta(gt=0)] | None = None


class HookGroupModel(msgspec.Struct, kw_only=True, frozen=True):
    """``{"matcher": "Edit|Write", "hooks": [...]}``."""

    hooks: list[HookEntry]
    matcher: str | None = None


class HooksModel(msgspec.Struct, kw_only=True, frozen=True):
    PreToolUse: list[HookGroupModel] | None = None
    PostToolUse: list[HookGroupModel] | None = None


class PermissionsModel(msgspec.Struct, kw_only=True, frozen=True, rename="camel"):
    allow: list[str] | None = None
    deny: list[str] | None = None
    ask: list[str] | None = None
    default_mode: Mode | None = None
    additional_directories: list[str] | None = None


class SettingsFile(msgspec.Struct, kw_only=True, frozen=True):
    """The keys of a Claude Code ``settings.json`` that stdio-executor acts on."""

    permissions: PermissionsModel | None = None
    hooks: HooksModel | None = None
    # Read by the sandbox (its own module validates the section).
    sandbox: dict[str, Any] | None = None


class SettingsShapeError(ValueError):
    """A file that is not in the documented shape; the message names the key."""


_KINDS = {
    "object": "an object",
    "array": "a list",
    "str": "a string",
    "int": "a number",
    "float": "a number",
    "bool": "a boolean",
    "null": "null",
}
_EXPECTED = re.compile(r"Expected `(?P<want>[^`]*)`, got `(?P<got>[^`]*)`(?: - at `\$(?P<at>.*)`)?")
_ENUM = re.compile(r"Invalid enum value (?P<value>.*) - at `\$(?P<at>.*)`")
_MISSING = re.compile(r"Object missing required field `(?P<field>[^`]*)`(?: - at `\$(?P<at>.*)`)?")
_BOUND = re.compile(r"Expected `[^`]*` [<>]=? .* - at `\$(?P<at>.*)`")


def decode(data: bytes | str) -> SettingsFile:
    """Validate JSON text against the model; ``SettingsShapeError`` names what is wrong."""
    try:
        return msgspec.json.decode(data, type=SettingsFile)
    except msgspec.ValidationError as exc:
        raise SettingsShapeError(_explain(str(exc))) from None


def _where(at: str | None) -> str:
    return (at or "").lstrip(".")


def _explain(message: str) -> str:
    if m := _EXPECTED.fullmatch(message):
        where = _where(m["at"])
        got = _KINDS.get(m["got"], m["got"])
        if not where:
            return f"must hold a JSON object, not {got}"
        if where.rsplit(".", 1)[-1] in ("allow", "deny", "ask", "additionalDirectories"):
            return f"{where} must be a list of strings, not {got}"
        if where.endswith(".timeout"):
            return f"{where} must be a positive number of seconds"
        if where.endswith((".command", ".matcher", ".type")) or where.endswith("]"):
            want = "a string" if "str" in m["want"] else _want(m["want"])
            return f"{where} must be {want}, not {got}"
        shown = f"`{where}`" if "." not in where else where
        return f"{shown} must be {_want(m['want'])}, not {got}"
    if m := _ENUM.fullmatch(message):
        where = _where(m["at"])
        choices = ", ".join(MODES) if where.endswith("defaultMode") else "the documented values"
        return f"{where} is {m['value']}; expected one of {choices}"
    if m := _MISSING.fullmatch(message):
        where = _where(m["at"])
        return f"{where}.{m['field']} must be a list" if where else f"`{m['field']}` is missing"
    if m := _BOUND.fullmatch(message):
        where = _where(m["at"])
        if where.endswith(".timeout"):
            return f"{where} must be a positive number of seconds"
        return f"{where} is out of range"
    return message


def _want(want: str) -> str:
    kinds = [k.strip() for k in want.split("|") if k.strip() != "null"]
    return " or ".join(_KINDS.get(k, k) for k in kinds) or want


def schema() -> dict[str, Any]:
    out = msgspec.json.schema(SettingsFile)
    out["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    out["title"] = "stdio-executor settings (the Claude Code settings.json keys it reads)"
    return out


def schema_json() -> bytes:
    return msgspec.json.format(msgspec.json.encode(schema()), indent=2) + b"\n"


if __name__ == "__main__":  # pragma: no cover - regenerates the checked-in schema
    sys.stdout.buffer.write(schema_json())
