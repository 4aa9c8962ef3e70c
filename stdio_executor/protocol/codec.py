"""Encoding events and decoding commands, one line at a time.

Owns: the single reused msgspec encoder and decoders, the U+2028/U+2029 escaping of output,
and the mapping of every way a command line can be wrong onto a stable ``error`` code.
Must not: do I/O or keep state between lines (framing lives in the runtime).
"""

from __future__ import annotations

from typing import Any

import msgspec

from .messages import Command, ErrorEvent, Event

__all__ = ["CommandDecoder", "decode_event", "encode_event"]

_encoder = msgspec.json.Encoder()
_event_decoder: msgspec.json.Decoder[Event] = msgspec.json.Decoder(Event)
_any_decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder()

_LS = "\u2028".encode()
_PS = "\u2029".encode()


def encode_event(event: Event) -> bytes:
    """One compact JSON line, ``\\n``-terminated.

    JSON allows raw U+2028/U+2029 inside strings, but hosts that split on every Unicode line
    break (JavaScript's old parsers, ``str.splitlines``) would see two lines; both can only
    occur inside strings, so replacing the bytes with escapes keeps the JSON valid.
    """
    data = _encoder.encode(event)
    if b"\xe2\x80" in data:
        data = data.replace(_LS, b"\\u2028").replace(_PS, b"\\u2029")
    return data + b"\n"


def decode_event(line: bytes | str) -> Event:
    """Parse one event line (for hosts, clients and tests)."""
    return _event_decoder.decode(line)


class CommandDecoder:
    """Turns one input line into a command or an ``error`` event saying what is wrong.

    The fast path is a single msgspec decode into the tagged union; only a failing line pays
    for the second look that picks the precise error code.
    """

    def __init__(self, command_type: Any = Command) -> None:
        self._decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder(command_type)
        self._types: tuple[str, ...] = _tags_of(command_type)

    def decode(self, line: bytes, lineno: int) -> Any:
        if not line.isascii():
            try:
                line.decode("utf-8")
            except UnicodeDecodeError as exc:
                return ErrorEvent(
                    code="invalid_utf8",
                    message=f"line {lineno} is not valid UTF-8 (byte {exc.start})",
                    line=lineno,
                )
        try:
            return self._decoder.decode(line)
        except msgspec.DecodeError as exc:
            return self._explain(line, lineno, exc)

    def _explain(self, line: bytes, lineno: int, exc: msgspec.DecodeError) -> ErrorEvent:
        try:
            raw = _any_decoder.decode(line)
        except msgspec.DecodeError as bad_json:
            return ErrorEvent(
                code="invalid_json",
                message=f"line {lineno} is not valid JSON: {bad_json}",
                line=lineno,
            )
        if not isinstance(raw, dict):
            return ErrorEvent(
                code="not_an_object",
                message=f"line {lineno} is a JSON {_json_kind(raw)}, expected an object",
                line=lineno,
            )
        request_id = raw.get("request_id")
        rid = request_id if isinstance(request_id, str) else None
        tool_use = raw.get("tool_use")
        tid = tool_use.get("id") if isinstance(tool_use, dict) else None
        tool_use_id = tid if isinstance(tid, str) else None
        if "type" not in raw:
            return ErrorEvent(
                code="missing_type",
                message=f"line {lineno} has no `type` field",
                line=lineno,
                request_id=rid,
            )
        kind = raw["type"]
        if kind not in self._types:
            known = ", ".join(self._types)
            return ErrorEvent(
                code="unknown_type",
                message=f"line {lineno}: unknown command type {kind!r} (known: {known})",
                line=lineno,
                request_id=rid,
            )
        return ErrorEvent(
            code="invalid_command",
            message=f"line {lineno}: invalid {kind!r} command: {exc}",
            line=lineno,
            request_id=rid,
            tool_use_id=tool_use_id,
        )


def _tags_of(union: Any) -> tuple[str, ...]:
    members = getattr(union, "__args__", (union,))
    tags = []
    for member in members:
        config = getattr(member, "__struct_config__", None)
        if config is not None and isinstance(config.tag, str):
            tags.append(config.tag)
    return tuple(tags)


def _json_kind(value: Any) -> str:
    if isinstance(value, list):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    return "number"
