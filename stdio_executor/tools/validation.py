"""Claude Code's ``InputValidationError`` wording, and the walk that finds every problem.

Owns: the model-facing text of a refused input (SPEC section 4), as Claude Code words it::

    <tool_use_error>InputValidationError: Read failed due to the following issues:
    The required parameter `file_path` is missing
    An unexpected parameter `pages` was provided
    The parameter `limit` type is expected as `number` but provided as `string`</tool_use_error>

(missing parameters first, then unexpected ones, then wrong types, as Claude Code orders
them), and ``describe_problems``, which walks an input against a built-in's Struct to list
every problem, where msgspec stops at the first. Problems that are not about presence or
type (a value outside an enum, a number below its minimum) get one sentence each after
those; Claude Code prints zod's issue JSON there, which a model reads no better.
Must not: be on the hot path: it runs only after ``inputs.parse`` has failed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec
import msgspec.inspect as mi

__all__ = ["Problems", "describe_problems", "js_type"]

_TYPE_NAMES: dict[type[mi.Type], str] = {
    mi.StrType: "string",
    mi.IntType: "number",
    mi.FloatType: "number",
    mi.BoolType: "boolean",
    mi.ListType: "array",
    mi.StructType: "object",
    mi.DictType: "object",
    mi.NoneType: "null",
}
_MAX_SHOWN_CHARS = 60


def js_type(value: Any) -> str:
    """The JavaScript name of a JSON value's type, as Claude Code's messages give it."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, Mapping):
        return "object"
    return "unknown"


class Problems(msgspec.Struct):
    """The problems of one input, kept by kind so they print in Claude Code's order."""

    missing: list[str] = msgspec.field(default_factory=list)
    unexpected: list[str] = msgspec.field(default_factory=list)
    wrong_type: list[tuple[str, str, str]] = msgspec.field(
        default_factory=list
    )  # path, expected, got
    other: list[tuple[str, str]] = msgspec.field(default_factory=list)  # path, sentence

    def __bool__(self) -> bool:
        return bool(self.missing or self.unexpected or self.wrong_type or self.other)

    def lines(self) -> list[str]:
        out = [f"The required parameter `{p}` is missing" for p in self.missing]
        out += [f"An unexpected parameter `{p}` was provided" for p in self.unexpected]
        out += [
            f"The parameter `{p}` type is expected as `{want}` but provided as `{got}`"
            for p, want, got in self.wrong_type
        ]
        out += [f"The parameter `{p}` {text}" for p, text in self.other]
        return out

    def message(self, tool_name: str) -> str:
        lines = self.lines()
        issues = "issue" if len(lines) == 1 else "issues"
        body = "\n".join(lines)
        return (
            f"<tool_use_error>InputValidationError: {tool_name} failed due to the following "
            f"{issues}:\n{body}</tool_use_error>"
        )


def describe_problems(
    tool_name: str, cls: type[msgspec.Struct], raw: Any, fallback: str = ""
) -> str:
    """Every problem of ``raw`` as ``cls``, worded for the model.

    ``fallback`` (msgspec's own message) is used should the walk find nothing, so a
    refused input never gets an empty explanation."""
    problems = Problems()
    _check(raw, mi.type_info(cls), "", problems)
    if not problems:
        problems.other.append(("", fallback or "is not valid"))
    return problems.message(tool_name)


def _join(path: str, key: str | int) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else key


def _shown(value: Any) -> str:
    text = msgspec.json.encode(value).decode("utf-8", "replace")
    return text if len(text) <= _MAX_SHOWN_CHARS else text[:_MAX_SHOWN_CHARS] + "\u2026"


def _check(value: Any, t: mi.Type, path: str, out: Problems) -> None:
    """Add the problems of ``value`` as type ``t`` at ``path`` to ``out``."""
    while isinstance(t, mi.Metadata):  # a description or other annotation around the type
        t = t.type
    if isinstance(t, mi.UnionType):
        members = list(t.types)  # UNSET is not a member: inspect drops it
        for member in members:
            trial = Problems()
            _check(value, member, path, trial)
            if not trial:
                return
        # Report against the member whose kind the value has, else the first.
        same_kind = [m for m in members if _TYPE_NAMES.get(type(m)) == js_type(value)]
        _check(value, (same_kind or members)[0], path, out)
        return
    if isinstance(t, mi.AnyType):
        return
    if isinstance(t, mi.StructType):
        _check_object(value, t, path, out)
    elif isinstance(t, mi.ListType):
        if not isinstance(value, list):
            out.wrong_type.append((path, "array", js_type(value)))
            return
        for i, item in enumerate(value):
            _check(item, t.item_type, _join(path, i), out)
        if t.min_length is not None and len(value) < t.min_length:
            out.other.append((path, f"must have at least {t.min_length} items"))
        if t.max_length is not None and len(value) > t.max_length:
            out.other.append((path, f"must have at most {t.max_length} items"))
    elif isinstance(t, mi.DictType):
        if not isinstance(value, Mapping):
            out.wrong_type.append((path, "object", js_type(value)))
    elif isinstance(t, mi.LiteralType):
        if value not in t.values or isinstance(value, bool) != any(
            isinstance(v, bool) for v in t.values
        ):
            choices = ", ".join(f"`{v}`" for v in t.values)
            out.other.append((path, f"must be one of {choices} (provided {_shown(value)})"))
    elif isinstance(t, mi.StrType):
        if not isinstance(value, str):
            out.wrong_type.append((path, "string", js_type(value)))
        elif t.min_length is not None and len(value) < t.min_length:
            if t.min_length == 1:
                out.other.append((path, "must not be empty"))
            else:
                out.other.append((path, f"must be at least {t.min_length} characters long"))
        elif t.max_length is not None and len(value) > t.max_length:
            out.other.append((path, f"must be at most {t.max_length} characters long"))
    elif isinstance(t, mi.BoolType):
        if not _convertible(value, bool):
            out.wrong_type.append((path, "boolean", js_type(value)))
    elif isinstance(t, mi.IntType | mi.FloatType):
        _check_number(value, t, path, out)
    elif isinstance(t, mi.NoneType) and value is not None:
        out.wrong_type.append((path, "null", js_type(value)))


def _check_object(value: Any, t: mi.StructType, path: str, out: Problems) -> None:
    if not isinstance(value, Mapping):
        out.wrong_type.append((path, "object", js_type(value)))
        return
    known = {f.encode_name: f for f in t.fields}
    for f in t.fields:
        if f.required and f.encode_name not in value:
            out.missing.append(_join(path, f.encode_name))
    if t.forbid_unknown_fields:
        for key in value:
            if key not in known:
                out.unexpected.append(_join(path, str(key)))
    for key, item in value.items():
        info = known.get(key)
        if info is not None:
            _check(item, info.type, _join(path, key), out)


def _check_number(value: Any, t: mi.IntType | mi.FloatType, path: str, out: Problems) -> None:
    want: type = int if isinstance(t, mi.IntType) else float
    if not _convertible(value, want):
        got = js_type(value)
        if want is int and (got == "number" or (got == "string" and _convertible(value, float))):
            out.other.append((path, f"must be a whole number (provided {_shown(value)})"))
        else:
            out.wrong_type.append((path, "number", got))
        return
    number: float = msgspec.convert(value, want, strict=False)
    for bound, ok, words in (
        (t.ge, t.ge is None or number >= t.ge, "at least"),
        (t.gt, t.gt is None or number > t.gt, "greater than"),
        (t.le, t.le is None or number <= t.le, "at most"),
        (t.lt, t.lt is None or number < t.lt, "less than"),
    ):
        if not ok:
            out.other.append((path, f"must be {words} {bound} (provided {_shown(value)})"))


def _convertible(value: Any, target: type) -> bool:
    if isinstance(value, bool) and target is not bool:
        return False  # msgspec would take true as 1; Claude Code does not
    try:
        msgspec.convert(value, target, strict=False)
    except msgspec.ValidationError:
        return False
    return True
