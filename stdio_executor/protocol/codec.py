"""Encoding events and decoding commands, one line at a time.

Owns: the single reused msgspec encoder and decoders, the escaping of every character that a
common line splitter treats as a line break, and the mapping of every way a command line can
be wrong onto a stable ``error`` code.
Must not: do I/O or keep state between lines (framing lives in the runtime).
"""

from __future__ import annotations

import re
from typing import Any

import msgspec

from .messages import Command, ErrorEvent, Event

__all__ = ["CommandDecoder", "decode_event", "encode_event"]

_encoder = msgspec.json.Encoder()
# Built on first use: the daemon never decodes events, and a decoder for the whole union
# costs milliseconds to build, on the way to `ready` (bench/NOTES.md, start-up).
_event_decoder: msgspec.json.Decoder[Event] | None = None
_any_decoder: msgspec.json.Decoder[Any] = msgspec.json.Decoder()

# Python's str.splitlines, JavaScript's old parsers and Unicode's mandatory breaks (UAX #14)
# split on these besides \n and \r. JSON escapes every character below U+0020 already
# (\v, \f, U+001C..U+001E included); the three below may be written raw inside strings, and
# only inside strings, so replacing their UTF-8 bytes by escapes keeps the JSON valid.
_RAW_BREAKS = (
    ("\u0085".encode(), b"\\u0085"),
    ("\u2028".encode(), b"\\u2028"),
    ("\u2029".encode(), b"\\u2029"),
)


def encode_event(event: Event) -> bytes:
    """One compact JSON line, ``\\n``-terminated, that every line splitter sees as one line."""
    try:
        data = _encoder.encode(event)
    except UnicodeEncodeError:
        # A str with a lone surrogate: a file name that is not UTF-8 (os.fsdecode keeps its
        # bytes as surrogates), a child's output decoded with surrogateescape. UTF-8 cannot
        # carry it; U+FFFD in its place keeps the event, so no result is ever lost to it.
        data = _encoder.encode(_replace_surrogates(msgspec.to_builtins(event)))
    # ASCII (most events) has none of the three: isascii checks a word at a time, while a
    # two-byte ``in`` scans byte by byte (1.3-3.5 us for a 1 KiB result, bench/NOTES.md).
    # Then a lead byte's memchr (C2 for U+0085, E2 for U+2028/9) before the exact search.
    if not data.isascii() and (
        (data.find(b"\xc2") >= 0 and b"\xc2\x85" in data)
        or (data.find(b"\xe2") >= 0 and b"\xe2\x80" in data)
    ):
        for raw, escaped in _RAW_BREAKS:
            data = data.replace(raw, escaped)
    return data + b"\n"


def decode_event(line: bytes | str) -> Event:
    """Parse one event line (for hosts, clients and tests)."""
    global _event_decoder
    if _event_decoder is None:
        _event_decoder = msgspec.json.Decoder(Event)
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
        except RecursionError:
            return _too_deep(lineno)

    def _explain(self, line: bytes, lineno: int, exc: msgspec.DecodeError) -> Any:
        try:
            raw = _any_decoder.decode(line)
        except msgspec.DecodeError as bad_json:
            if _LONE_SURROGATE.search(line):
                return self._decode_replacing_surrogates(line, lineno)
            return ErrorEvent(
                code="invalid_json",
                message=f"line {lineno} is not valid JSON: {bad_json}",
                line=lineno,
            )
        except RecursionError:
            return _too_deep(lineno)
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

    def _decode_replacing_surrogates(self, line: bytes, lineno: int) -> Any:
        """A line with an unpaired UTF-16 surrogate escape (``"\\ud800"``, as some loggers
        write) is valid JSON that msgspec refuses. Decoded with each unpaired surrogate
        replaced by U+FFFD, it is answered like any other command: an ``add_tool`` still gets
        its result."""
        import json  # msgspec refuses these lines; the stdlib's parser is only for them

        try:
            raw = json.loads(line)
        except (ValueError, RecursionError) as exc:
            return ErrorEvent(
                code="invalid_json", message=f"line {lineno} is not valid JSON: {exc}", line=lineno
            )
        clean = _encoder.encode(_replace_surrogates(raw))
        try:
            return self._decoder.decode(clean)
        except msgspec.DecodeError as exc:
            return self._explain(clean, lineno, exc)


# `\uD800`..`\uDFFF` escapes; a valid pair is two of them and decodes fine in msgspec, so this
# is only consulted after msgspec has refused the line.
_LONE_SURROGATE = re.compile(rb"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
_SURROGATE_CHARS = re.compile("[\ud800-\udfff]")


def _replace_surrogates(value: Any) -> Any:
    # json.loads joins valid pairs into one character, so any surrogate left is unpaired.
    if isinstance(value, str):
        return _SURROGATE_CHARS.sub("\ufffd", value)
    if isinstance(value, list):
        return [_replace_surrogates(v) for v in value]
    if isinstance(value, dict):
        return {_replace_surrogates(k): _replace_surrogates(v) for k, v in value.items()}
    return value


def _too_deep(lineno: int) -> ErrorEvent:
    return ErrorEvent(
        code="invalid_json",
        message=f"line {lineno}: JSON nested too deeply to decode (the limit is about 1000 levels)",
        line=lineno,
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
