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


def test_a_line_over_a_large_limit_costs_no_more_than_the_spool(tmp_path: Path) -> None:
    # With a limit of 48 MiB, a 64 MiB line used to be held in memory until its 48th MiB.
    with run_daemon(tmp_path, "--max-line-bytes", str(48 << 20)) as d:
        d.send(tool_use("warm", "echo warm"))
        d.send({"type": "drain"})
        d.wait_for(is_type(Drained))
        before, peak_before = rss_kib(d.pid), rss_kib(d.pid, "VmHWM")
        chunk = b'{"type":"drain","pad":"' + b"y" * (1 << 20)
        for _ in range(64):
            d.send_bytes(chunk)
        d.send_bytes(b'"}\n')
        error = d.wait_for(is_type(ErrorEvent))
        peak_after = rss_kib(d.pid, "VmHWM")
        assert isinstance(error, ErrorEvent) and error.code == "line_too_long"
        assert peak_after - max(peak_before, before) < 8 * 1024, (
            f"peak RSS grew from {peak_before} to {peak_after} KiB"
        )
        d.send(tool_use("after", "echo alive"))
        assert d.result("after").content == "alive"


def test_deeply_nested_json_gets_an_error_and_the_daemon_goes_on(tmp_path: Path) -> None:
    with run_daemon(tmp_path) as d:
        for depth in (1_000, 100_000):
            d.send_bytes(b'{"type":"drain","x":' + b"[" * depth + b"]" * depth + b"}\n")
        d.send(tool_use("after", "echo alive"))
        d.send({"type": "drain"})
        d.wait_for(is_type(Drained))
        errors = [e for e in d.events if isinstance(e, ErrorEvent)]
        assert [(e.code, e.line) for e in errors] == [("invalid_json", 1), ("invalid_json", 2)]
        assert d.result("after").content == "alive"


def test_an_add_tool_with_a_lone_surrogate_escape_gets_its_result(tmp_path: Path) -> None:
    with run_daemon(tmp_path) as d:
        d.send_bytes(
            b'{"type":"add_tool","tool_use":{"type":"tool_use","id":"s1","name":"Bash",'
            b'"input":{"command":"printf \'%s\\\\n\' \'a\\ud800b\'"}}}\n'
        )
        d.send({"type": "drain"})
        drained = d.wait_for(is_type(Drained))
        assert d.result("s1").content == "a\ufffdb"
        assert isinstance(drained, Drained) and drained.results == 1
        assert not [e for e in d.events if isinstance(e, ErrorEvent)]


def test_a_file_name_that_is_not_utf8_reaches_the_result(tmp_path: Path) -> None:
    (tmp_path / "bad\udcff.txt").touch()  # the bytes b"bad\xff.txt" on disk
    with run_daemon(tmp_path) as d:
        d.send(tool_use("g", {"pattern": "bad*"}, name="Glob"))
        d.send({"type": "drain"})
        d.wait_for(is_type(Drained))
        assert str(d.result("g").content).endswith("bad\ufffd.txt")
        assert not [e for e in d.events if isinstance(e, ErrorEvent)]


def test_next_line_and_other_break_characters_in_output_are_escaped(tmp_path: Path) -> None:
    with run_daemon(tmp_path) as d:
        d.send(tool_use("n", "printf 'a\\xc2\\x85b\\x0bc\\x0cd\\x1ce\\x1df\\x1eg\\n'"))
        d.send({"type": "drain"})
        d.wait_for(is_type(Drained))
        assert d.result("n").content == "a\x85b\x0bc\x0cd\x1ce\x1df\x1eg"
        assert len(bytes(d.raw).decode().splitlines()) == len(d.events)
