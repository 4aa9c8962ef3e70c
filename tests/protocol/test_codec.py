"""Decoding commands (every way a line can be wrong) and encoding events."""

from __future__ import annotations

import json

import pytest

from stdio_executor.protocol import (
    AddTool,
    CommandDecoder,
    Drain,
    ErrorEvent,
    Interrupt,
    Progress,
    ResultMeta,
    ToolResult,
    decode_event,
    encode_event,
)

decoder = CommandDecoder()


def test_add_tool_decodes_with_extra_fields_ignored() -> None:
    line = (
        b'{"type":"add_tool","host_note":1,"request_id":"r1","tool_use":'
        b'{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"x"}}}'
    )
    cmd = decoder.decode(line, 1)
    assert isinstance(cmd, AddTool)
    assert cmd.request_id == "r1"
    assert cmd.tool_use.input == {"file_path": "x"}


def test_interrupt_reason_defaults_to_abort() -> None:
    cmd = decoder.decode(b'{"type":"interrupt"}', 1)
    assert isinstance(cmd, Interrupt)
    assert cmd.reason == "abort"


@pytest.mark.parametrize(
    ("line", "code"),
    [
        (b"{nope", "invalid_json"),
        (b'{"type":"drain"} trailing', "invalid_json"),
        (b"[1,2]", "not_an_object"),
        (b'"drain"', "not_an_object"),
        (b'{"request_id":"x"}', "missing_type"),
        (b'{"type":"launch_rockets"}', "unknown_type"),
        (b'{"type":"add_tool"}', "invalid_command"),
        (b'{"type":"add_tool","tool_use":{"id":"a","name":"Bash","input":[]}}', "invalid_command"),
        (b'{"type":"drain","request_id":5}', "invalid_command"),
        (b'{"type":"drain","request_id":"\xff"}', "invalid_utf8"),
    ],
)
def test_bad_lines_get_a_stable_code_and_the_line_number(line: bytes, code: str) -> None:
    result = decoder.decode(line, 7)
    assert isinstance(result, ErrorEvent)
    assert result.code == code
    assert result.line == 7
    assert "7" in result.message


def test_a_bad_command_echoes_its_request_id_and_tool_use_id() -> None:
    result = decoder.decode(
        b'{"type":"add_tool","request_id":"r9","tool_use":{"id":"t9","name":3}}', 2
    )
    assert isinstance(result, ErrorEvent)
    assert (result.request_id, result.tool_use_id) == ("r9", "t9")


def test_events_are_one_compact_line() -> None:
    data = encode_event(Drain_event())
    assert data.endswith(b"\n")
    assert data.count(b"\n") == 1
    assert b" " not in data


def Drain_event() -> Progress:
    return Progress(tool_use_id="t", data={"text": "a\nb"})


def test_line_separators_are_escaped_so_every_host_sees_one_line() -> None:
    event = Progress(tool_use_id="t", data={"text": "a\u2028b\u2029c"})
    data = encode_event(event)
    assert b"\xe2\x80\xa8" not in data and b"\xe2\x80\xa9" not in data
    assert json.loads(data)["data"]["text"] == "a\u2028b\u2029c"
    assert decode_event(data) == event


def test_tool_result_minus_meta_is_an_api_tool_result_block() -> None:
    event = ToolResult(
        tool_use_id="toolu_1",
        content="hi",
        is_error=False,
        meta=ResultMeta(status="success", turn=1),
    )
    block = json.loads(encode_event(event))
    del block["meta"]
    assert block == {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": "hi",
        "is_error": False,
    }


def test_drain_round_trips() -> None:
    assert isinstance(decoder.decode(b'{"type":"drain","request_id":"d"}', 1), Drain)


# Every character some common line splitter treats as a line break (Python's
# str.splitlines, JavaScript, Unicode's mandatory breaks), besides \n itself.
LINE_BREAKS = "\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"


@pytest.mark.parametrize("char", list(LINE_BREAKS), ids=lambda c: f"U+{ord(c):04X}")
def test_no_line_break_character_is_ever_written_raw(char: str) -> None:
    event = ErrorEvent(code="internal_error", message=f"a{char}b{char}")
    line = encode_event(event)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert line.decode().splitlines() == [line.decode().rstrip("\n")]
    assert char.encode() not in line
    assert json.loads(line)["message"] == f"a{char}b{char}"


def test_every_unicode_character_round_trips_on_one_line() -> None:
    text = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF)
    line = encode_event(ErrorEvent(code="internal_error", message=text))
    assert len(line.decode().splitlines()) == 1
    assert json.loads(line)["message"] == text


def test_a_lone_surrogate_in_an_event_becomes_a_replacement_character() -> None:
    # A file name that is not UTF-8 reaches a result as os.fsdecode's surrogate escapes.
    event = ToolResult(
        tool_use_id="g",
        content="/ws/bad\udcff.txt",
        is_error=False,
        meta=ResultMeta(status="success", turn=1),
    )
    line = encode_event(event)
    assert json.loads(line)["content"] == "/ws/bad\ufffd.txt"


@pytest.mark.parametrize("depth", [1_000, 5_000, 200_000])
def test_deeply_nested_json_is_an_error_not_a_crash(depth: int) -> None:
    for line in (
        b'{"type":"drain","pad":' + b"[" * depth + b"]" * depth + b"}",
        b"[" * depth + b"]" * depth,
        b'{"a":' * depth + b"1" + b"}" * depth,
    ):
        error = decoder.decode(line, 7)
        assert isinstance(error, ErrorEvent)
        assert (error.code, error.line) == ("invalid_json", 7)
        assert "nested too deeply" in error.message


@pytest.mark.parametrize(
    ("escaped", "expected"),
    [
        (r"\ud800", "\ufffd"),
        (r"\uDFFF tail", "\ufffd tail"),
        (r"a\udc00\ud83d\ude00b", "a\ufffd\U0001f600b"),  # a valid pair stays a pair
        (r"\ud83d", "\ufffd"),  # half a pair
        (r"\ude00\ud83d", "\ufffd\ufffd"),  # a pair in the wrong order is two halves
    ],
)
def test_an_unpaired_surrogate_escape_is_decoded_with_a_replacement(
    escaped: str, expected: str
) -> None:
    line = (
        '{"type":"add_tool","tool_use":{"type":"tool_use","id":"s1","name":"Bash",'
        f'"input":{{"command":"echo {escaped}"}}}}}}'
    ).encode()
    cmd = decoder.decode(line, 1)
    assert isinstance(cmd, AddTool), cmd
    assert cmd.tool_use.id == "s1"
    assert cmd.tool_use.input == {"command": f"echo {expected}"}


def test_an_unpaired_surrogate_in_a_bad_command_still_names_the_problem() -> None:
    line = rb'{"type":"add_tool","tool_use":{"type":"tool_use","id":"s\udfff"}}'
    error = decoder.decode(line, 3)
    assert isinstance(error, ErrorEvent)
    assert error.code == "invalid_command" and error.tool_use_id == "s\ufffd"
    truncated = rb'{"type":"add_tool","tool_use":{"id":"s\ud800"'
    error = decoder.decode(truncated, 4)
    assert isinstance(error, ErrorEvent) and error.code == "invalid_json"
