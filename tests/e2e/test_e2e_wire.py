"""The wire itself: bad input lines, what may reach stdout, escaping (SPEC sections 2, 8)."""

from __future__ import annotations

from pathlib import Path

import msgspec
from daemon_harness import is_type, rss_kib, run_daemon, tool_use

from stdio_executor.protocol import Drained, ErrorEvent, ToolResult


def test_bad_lines_get_numbered_errors_and_the_daemon_keeps_going(tmp_path: Path) -> None:
    good = b'{"type":"add_tool","tool_use":{"type":"tool_use","id":"ok1","name":"Bash",'
    good += b'"input":{"command":"echo fine"}},"host_note":"extra fields are ignored"}'
    lines = [
        b"not json",  # 1
        b"[1, 2]",  # 2
        b'{"foo": 1}',  # 3
        b'{"type": "bogus", "request_id": "r-unknown"}',  # 4
        b'{"type": "add_tool"}',  # 5
        b'{"type": "drain", "request_id": "\xff\xfe"}',  # 6
        b"",  # 7
        b"   \t",  # 8
        good + b"\r",  # 9: CRLF
        b'{"type": "drain", "request_id": "' + b"x" * 1200 + b'"}',  # 10
        b'{"type": "add_tool", "tool_use": {"type": "tool_use", "id": "t", "name": 5}}',  # 11
    ]
    with run_daemon(tmp_path, "--max-line-bytes", "1000") as d:
        d.send_bytes(b"\n".join(lines) + b"\n")
        d.send(tool_use("ok2", "echo still here"))
        d.send({"type": "drain", "request_id": "end"})
        drained = d.wait_for(is_type(Drained))
        assert isinstance(drained, Drained) and drained.request_id == "end"

        errors = d.of_type(ErrorEvent)
        assert [(e.code, e.line) for e in errors] == [
            ("invalid_json", 1),
            ("not_an_object", 2),
            ("missing_type", 3),
            ("unknown_type", 4),
            ("invalid_command", 5),
            ("invalid_utf8", 6),
            ("line_too_long", 10),
            ("invalid_command", 11),
        ]
        assert all(f"line {e.line}" in e.message for e in errors)
        assert errors[3].request_id == "r-unknown"
        assert errors[7].tool_use_id == "t"
        assert d.result("ok1").content == "fine"
        assert d.result("ok2").content == "still here"
        assert drained.results == 2


def test_a_huge_line_is_skipped_without_growing_memory(tmp_path: Path) -> None:
    with run_daemon(tmp_path, "--max-line-bytes", "1024") as d:
        # Warm up the command path first, so the baseline includes what a command costs.
        d.send(tool_use("warm", "echo warm"))
        d.send({"type": "drain"})
        d.wait_for(is_type(Drained))
        before, peak_before = rss_kib(d.pid), rss_kib(d.pid, "VmHWM")

        size = 24 * 1024 * 1024
        chunk = b'{"type":"drain","pad":"' + b"y" * (1024 * 1024)
        sent = 0
        while sent < size:
            d.send_bytes(chunk)
            sent += len(chunk)
        d.send_bytes(b'"}\n')
        error = d.wait_for(is_type(ErrorEvent))
        after, peak_after = rss_kib(d.pid), rss_kib(d.pid, "VmHWM")

        assert isinstance(error, ErrorEvent)
        assert (error.code, error.line) == ("line_too_long", 3)
        assert str(sent + 3 - 1) in error.message  # its size, without the newline
        # A buffered copy would add at least the line's 24 MiB; allow noise of 8 MiB.
        assert after - before < 8 * 1024, f"RSS grew from {before} to {after} KiB"
        assert peak_after - max(peak_before, before) < 8 * 1024, (
            f"peak RSS grew from {peak_before} to {peak_after} KiB"
        )

        d.send(tool_use("after", "echo alive"))
        assert d.result("after").content == "alive"


def test_child_output_on_stderr_reaches_the_result_never_stdout(tmp_path: Path) -> None:
    with run_daemon(tmp_path, "--log-level", "debug") as d:
        d.send(tool_use("mixed", "echo out; echo err >&2; echo out2"))
        d.send(tool_use("loud", "printf 'raw line\\n' >/dev/stderr; echo done"))
        d.send({"type": "drain"})
        d.wait_for(is_type(Drained))
        d.close_stdin()
        assert d.wait_exit() == 0
        mixed = d.result("mixed")
        assert mixed.content == "out\nerr\nout2"
        assert d.result("loud").content == "raw line\ndone"
        for line in bytes(d.raw).splitlines():
            assert line.startswith(b'{"type":"'), line
        assert b"\nerr\n" not in d.raw and not d.raw.startswith(b"err")
        assert b"\nraw line\n" not in d.raw


def test_line_and_paragraph_separators_are_escaped(tmp_path: Path) -> None:
    with run_daemon(tmp_path) as d:
        d.send(tool_use("u", "printf 'a\\xe2\\x80\\xa8b\\xe2\\x80\\xa9c\\n'"))
        # A separator in the input is echoed back in the tool's name and must be escaped too.
        d.send(tool_use("v", {"command": "echo \u2028"}, name="No\u2028pe"))
        d.send({"type": "drain"})
        d.wait_for(is_type(Drained))
        assert d.result("u").content == "a\u2028b\u2029c"
        result_v = d.result("v")
        assert isinstance(result_v, ToolResult) and "No\u2028pe" in str(result_v.content)
        assert b"\xe2\x80\xa8" not in d.raw
        assert b"\xe2\x80\xa9" not in d.raw
        assert b"\\u2028" in d.raw and b"\\u2029" in d.raw
        assert len(bytes(d.raw).splitlines()) == len(d.events)


def test_ready_comes_first_with_api_shaped_tools_pid_and_limits(tmp_path: Path) -> None:
    with run_daemon(tmp_path, "--max-line-bytes", "4096") as d:
        ready = d.ready()
        assert d.events[0] is ready
        assert (ready.protocol_version, ready.pid) == (1, d.pid)
        assert ready.limits.max_line_bytes == 4096
        names = {t.name for t in ready.tools}
        assert {"Bash", "Read", "Write", "Edit", "Glob", "Grep"} <= names
        assert set(ready.tool_info) == names
        first_line = bytes(d.raw).split(b"\n", 1)[0]
        raw = msgspec.json.decode(first_line)
        assert all(set(tool) == {"name", "description", "input_schema"} for tool in raw["tools"])
