"""Host-implemented tools through the real daemon over real pipes (SPEC section 7).

The test plays the host: it declares tools (``--tools`` or ``register_tool``), answers
``tool_call`` with ``tool_progress`` and ``tool_output``, and checks that host tools are
validated, scheduled, cancelled and timed out like built-ins.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from external_harness import (
    REPO_ROOT,
    DaemonProcess,
    drain,
    is_result,
    is_started,
    permission_args,
    run_daemon,
    tool_use,
    wait_until,
)

from stdio_executor.protocol import (
    ErrorEvent,
    Event,
    Progress,
    ToolCall,
    ToolCancel,
    ToolResult,
    ToolsChanged,
)

TOOLS: list[dict[str, Any]] = [
    {
        "name": "lookup",
        "description": "Look a key up in the host's index.",
        "input_schema": {
            "type": "object",
            "properties": {"key": {"type": "string"}, "limit": {"type": "integer"}},
            "required": ["key"],
            "additionalProperties": False,
        },
        "read_only": True,
        "aliases": ["Find"],
        "type": "custom",  # an API field the daemon ignores
    },
    {
        "name": "deploy",
        "description": "Deploy to a target.",
        "input_schema": {"type": "object", "properties": {"target": {"type": "string"}}},
        "interrupt_behavior": "cancel",
    },
    {
        "name": "slow",
        "description": "Never answered in time.",
        "input_schema": {"type": "object"},
        "read_only": True,
        "timeout_ms": 400,
    },
]


@contextmanager
def host_daemon(tmp_path: Path, *args: str, tools: Any = TOOLS) -> Iterator[DaemonProcess]:
    workspace = tmp_path / "ws"
    workspace.mkdir(exist_ok=True)
    tools_file = tmp_path / "tools.json"
    tools_file.write_text(json.dumps(tools))
    argv = ["--tools", str(tools_file), *permission_args(), *args]
    with run_daemon(workspace, *argv) as daemon:
        yield daemon


def is_call(tool_use_id: str, turn: int | None = None) -> Callable[[Event], bool]:
    return lambda e: (
        isinstance(e, ToolCall) and e.tool_use_id == tool_use_id and turn in (None, e.turn)
    )


def is_cancel(tool_use_id: str) -> Callable[[Event], bool]:
    return lambda e: isinstance(e, ToolCancel) and e.tool_use_id == tool_use_id


def is_error(
    code: str, line: int | None = None, request_id: str | None = None
) -> Callable[[Event], bool]:
    return lambda e: (
        isinstance(e, ErrorEvent)
        and e.code == code
        and line in (None, e.line)
        and request_id in (None, e.request_id)
    )


def call_of(daemon: DaemonProcess, tool_use_id: str) -> ToolCall:
    event = daemon.wait_for(is_call(tool_use_id))
    assert isinstance(event, ToolCall)
    return event


def output(tool_use_id: str, content: Any, is_error: bool = False) -> dict[str, Any]:
    return {
        "type": "tool_output",
        "tool_use_id": tool_use_id,
        "content": content,
        "is_error": is_error,
    }


# ------------------------------------------------------------------------ declaring


def test_tools_file_puts_host_tools_in_ready_like_builtins(tmp_path: Path) -> None:
    with host_daemon(tmp_path) as daemon:
        ready = daemon.ready()
        by_name = {t.name: t for t in ready.tools}
        assert {"Bash", "Read", "lookup", "deploy", "slow"} <= set(by_name)
        assert by_name["lookup"].input_schema == TOOLS[0]["input_schema"]
        assert by_name["lookup"].description == "Look a key up in the host's index."
        info = ready.tool_info
        assert info["lookup"].source == "host"
        assert info["lookup"].read_only == "always"
        assert info["lookup"].aliases == ["Find"]
        assert info["deploy"].read_only == "never"
        assert info["deploy"].interrupt_behavior == "cancel"
        assert info["lookup"].interrupt_behavior == "block"
        assert info["Bash"].source == "builtin"


def test_bad_tools_file_is_a_usage_error(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    cases = {
        "not json": "{",
        "clash": json.dumps([{"name": "Read", "input_schema": {"type": "object"}}]),
        "bad name": json.dumps([{"name": "has space", "input_schema": {"type": "object"}}]),
    }
    for why, text in cases.items():
        path = tmp_path / "tools.json"
        path.write_text(text)
        done = subprocess.run(
            [sys.executable, "-m", "stdio_executor", "--tools", str(path)],
            input=b"",
            capture_output=True,
            timeout=30,
            env=env,
            check=False,
        )
        assert done.returncode == 2, why
        assert done.stdout == b"", why
        assert b"--tools" in done.stderr, (why, done.stderr)


def test_invalid_schema_in_tools_file_is_dropped_after_ready(tmp_path: Path) -> None:
    broken = {"name": "broken", "input_schema": {"type": "object", "properties": {"x": 5}}}
    with host_daemon(tmp_path, tools=[TOOLS[0], broken]) as daemon:
        assert "broken" in {t.name for t in daemon.ready().tools}
        error = daemon.wait_for(is_error("invalid_tool_definition"))
        assert isinstance(error, ErrorEvent)
        assert "broken" in error.message and "properties" in error.message
        changed = daemon.wait_for(lambda e: isinstance(e, ToolsChanged))
        assert isinstance(changed, ToolsChanged)
        assert changed.removed == ["broken"]
        assert "broken" not in {t.name for t in changed.tools}
        assert "lookup" in changed.tool_info


# ------------------------------------------------------------------------- running


def test_round_trip_relays_progress_and_returns_the_hosts_output(tmp_path: Path) -> None:
    with host_daemon(tmp_path) as daemon:
        daemon.send(tool_use("h1", {"key": "alpha", "limit": 2}, name="Find"))
        call = call_of(daemon, "h1")
        assert call.name == "lookup"  # the alias resolves to the tool's name
        assert call.input == {"key": "alpha", "limit": 2}
        assert call.turn == 1
        assert daemon.index(is_started("h1")) < daemon.index(is_call("h1"))

        daemon.send({"type": "tool_progress", "tool_use_id": "h1", "data": {"pct": 50}})
        progress = daemon.wait_for(lambda e: isinstance(e, Progress) and e.tool_use_id == "h1")
        assert isinstance(progress, Progress) and progress.data == {"pct": 50}

        blocks = [{"type": "text", "text": "alpha=1"}, {"type": "text", "text": "alpha=2"}]
        daemon.send(output("h1", blocks))
        result = daemon.result("h1")
        assert result.content == blocks
        assert not result.is_error
        assert result.meta.status == "success"

        daemon.send(tool_use("h2", {"key": "missing"}, name="lookup"))
        call_of(daemon, "h2")
        daemon.send(output("h2", "no such key", is_error=True))
        failed = daemon.result("h2")
        assert failed.is_error and failed.content == "no such key"
        assert failed.meta.status == "error"
        drain(daemon, "d1")
        assert not daemon.of_type(ErrorEvent)


def test_answers_sent_before_the_call_are_kept_for_it(tmp_path: Path) -> None:
    # A host replaying a recorded session pipes its answers without waiting for tool_call.
    lines = [
        tool_use("h", {"key": "k"}, name="lookup"),
        {"type": "tool_progress", "tool_use_id": "h", "data": {"step": 1}},
        output("h", "early"),
        {"type": "drain", "request_id": "d1"},
    ]
    with host_daemon(tmp_path) as daemon:
        daemon.send_bytes(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
        result = daemon.result("h")
        assert result.content == "early" and not result.is_error
        assert daemon.index(is_call("h")) < daemon.index(is_result("h"))
        assert daemon.of_type(Progress)[0].data == {"step": 1}
        drain(daemon, "d2")
        assert not daemon.of_type(ErrorEvent)


def test_invalid_input_is_refused_with_every_problem_and_never_asked(tmp_path: Path) -> None:
    with host_daemon(tmp_path) as daemon:
        daemon.send(tool_use("bad", {"limit": "ten", "extra": True}, name="lookup"))
        result = daemon.result("bad")
        assert result.meta.status == "invalid_input"
        assert result.content == (
            "<tool_use_error>InputValidationError: lookup failed due to the following issues:\n"
            "The required parameter `key` is missing\n"
            "An unexpected parameter `extra` was provided\n"
            "The parameter `limit` type is expected as `number` but provided as `string`"
            "</tool_use_error>"
        )
        drain(daemon, "d1")
        assert not daemon.of_type(ToolCall)


def test_interrupt_cancels_a_cancel_tool_and_tells_the_host(tmp_path: Path) -> None:
    with host_daemon(tmp_path) as daemon:
        daemon.send(tool_use("dep", {"target": "prod"}, name="deploy"))
        call_of(daemon, "dep")
        daemon.send({"type": "interrupt", "reason": "interrupt", "request_id": "i1"})
        cancel = daemon.wait_for(is_cancel("dep"))
        assert isinstance(cancel, ToolCancel) and cancel.reason == "interrupt"
        result = daemon.result("dep")
        assert result.meta.status == "interrupted"
        assert "interrupted this tool use" in str(result.content)
        # The host answers too late: dropped with a warning, not an error event.
        daemon.send(output("dep", "deployed"))
        drain(daemon, "d1")
        assert not daemon.of_type(ErrorEvent)
        assert wait_until(lambda: b"after the call was cancelled" in daemon.stderr, 5)


def test_failing_bash_cancels_a_running_host_tool(tmp_path: Path) -> None:
    with host_daemon(tmp_path) as daemon:
        daemon.send(tool_use("look", {"key": "k"}, name="lookup"))
        call_of(daemon, "look")
        daemon.send(tool_use("ls", "ls /no/such/dir/anywhere"))
        cancel = daemon.wait_for(is_cancel("look"))
        assert isinstance(cancel, ToolCancel) and cancel.reason == "sibling_error"
        assert daemon.result("look").meta.status == "sibling_cancelled"
        assert daemon.result("ls").meta.status == "error"
        drain(daemon, "d1")


def test_discard_cancels_the_call_and_writes_no_result(tmp_path: Path) -> None:
    with host_daemon(tmp_path) as daemon:
        daemon.send(tool_use("dep", {}, name="deploy"))
        call_of(daemon, "dep")
        daemon.send({"type": "discard", "request_id": "x"})
        cancel = daemon.wait_for(is_cancel("dep"))
        assert isinstance(cancel, ToolCancel) and cancel.reason == "discard"
        daemon.send(tool_use("dep", {"target": "again"}, name="deploy"))  # a fresh turn
        call = daemon.wait_for(is_call("dep", turn=2))
        assert isinstance(call, ToolCall) and call.input == {"target": "again"}
        daemon.send(output("dep", "ok"))
        result = daemon.result("dep")
        assert result.meta.turn == 2 and result.content == "ok"
        drain(daemon, "d1")
        assert len(daemon.of_type(ToolResult)) == 1


def test_host_that_never_answers_hits_the_timeout(tmp_path: Path) -> None:
    with host_daemon(tmp_path) as daemon:
        daemon.send(tool_use("s", {}, name="slow"))
        call_of(daemon, "s")
        result = daemon.result("s", timeout=10)
        assert result.meta.status == "timed_out"
        assert result.content == (
            "<tool_use_error>slow did not finish within 0.4s and was cancelled.</tool_use_error>"
        )
        cancel = daemon.wait_for(is_cancel("s"))
        assert isinstance(cancel, ToolCancel) and cancel.reason == "timeout"
        drain(daemon, "d1")


def test_answers_for_unknown_or_finished_ids_are_error_events(tmp_path: Path) -> None:
    with host_daemon(tmp_path) as daemon:
        daemon.send(output("nobody", "hi"))
        unknown = daemon.wait_for(is_error("unknown_tool_use_id"))
        assert isinstance(unknown, ErrorEvent)
        assert unknown.tool_use_id == "nobody" and unknown.line == 1
        daemon.send({"type": "tool_progress", "tool_use_id": "nobody", "data": {}})
        daemon.wait_for(is_error("unknown_tool_use_id", line=2))

        daemon.send(tool_use("h", {"key": "k"}, name="lookup"))
        call_of(daemon, "h")
        daemon.send(output("h", [{"text": "no type"}]))  # a broken block: still waiting
        broken = daemon.wait_for(is_error("invalid_command"))
        assert isinstance(broken, ErrorEvent) and broken.tool_use_id == "h"
        daemon.send(output("h", "fine"))
        assert daemon.result("h").content == "fine"
        daemon.send(output("h", "twice"))
        twice = daemon.wait_for(is_error("unknown_tool_use_id", line=6))
        assert isinstance(twice, ErrorEvent) and "already answered" in twice.message
        daemon.send({"type": "tool_output", "tool_use_id": "h"})  # no content at all
        daemon.wait_for(is_error("invalid_command", line=7))
        drain(daemon, "d1")
        assert daemon.proc.poll() is None


def test_register_and_unregister_at_run_time(tmp_path: Path) -> None:
    with host_daemon(tmp_path, tools=[]) as daemon:
        echo = {
            "name": "echo_back",
            "description": "Echo the text.",
            "input_schema": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
            },
            "read_only": True,
        }
        daemon.send({"type": "register_tool", "tool": echo, "request_id": "r1"})
        changed = daemon.wait_for(lambda e: isinstance(e, ToolsChanged))
        assert isinstance(changed, ToolsChanged)
        assert changed.request_id == "r1" and changed.added == ["echo_back"]
        assert changed.tool_info["echo_back"].source == "host"
        assert "Bash" in {t.name for t in changed.tools}

        daemon.send(tool_use("e1", {"text": "hi"}, name="echo_back"))
        assert call_of(daemon, "e1").input == {"text": "hi"}
        daemon.send(output("e1", "hi"))
        assert daemon.result("e1").content == "hi"
        drain(daemon, "d1")

        # The same name again replaces the definition.
        daemon.send(
            {"type": "register_tool", "tool": {**echo, "read_only": False}, "request_id": "r1b"}
        )
        replaced = daemon.wait_for(lambda e: isinstance(e, ToolsChanged) and e.request_id == "r1b")
        assert isinstance(replaced, ToolsChanged) and replaced.added == ["echo_back"]
        assert replaced.tool_info["echo_back"].read_only == "never"

        refusals = {
            "r2": {**echo, "name": "Bash"},
            "r3": {**echo, "name": "other", "aliases": ["FileRead"]},
            "r4": {**echo, "name": "typo", "input_schema": {"type": "object", "required": 3}},
        }
        for request_id, tool in refusals.items():
            daemon.send({"type": "register_tool", "tool": tool, "request_id": request_id})
            refused = daemon.wait_for(
                lambda e, r=request_id: (
                    is_error("invalid_tool_definition")(e)  # type: ignore[misc]
                    and e.request_id == r
                )
            )
            assert isinstance(refused, ErrorEvent)
        messages = [e.message for e in daemon.of_type(ErrorEvent)]
        assert "taken by the built-in tool Bash" in messages[0]
        assert "'FileRead' is already taken by the built-in tool Read" in messages[1]
        assert "not a valid JSON Schema" in messages[2]

        daemon.send({"type": "unregister_tool", "name": "echo_back", "request_id": "u1"})
        removed = daemon.wait_for(lambda e: isinstance(e, ToolsChanged) and e.request_id == "u1")
        assert isinstance(removed, ToolsChanged) and removed.removed == ["echo_back"]
        daemon.send(tool_use("e2", {"text": "hi"}, name="echo_back"))
        assert daemon.result("e2").meta.status == "unknown_tool"
        daemon.send({"type": "unregister_tool", "name": "Read", "request_id": "u2"})
        daemon.wait_for(is_error("invalid_tool_definition", request_id="u2"))
        drain(daemon, "d2")


def test_host_tools_keep_the_ordering_rules_beside_bash_and_read(tmp_path: Path) -> None:
    with host_daemon(tmp_path) as daemon:
        (daemon.workspace / "notes.txt").write_text("hello\n")
        daemon.send(tool_use("a", "sleep 0.4; echo a"))  # safe Bash
        daemon.send(tool_use("b", {"key": "k"}, name="lookup"))  # safe host tool
        daemon.send(tool_use("c", {"target": "t"}, name="deploy"))  # unsafe host tool
        daemon.send(tool_use("d", {"file_path": "notes.txt"}, name="Read"))  # safe, after c
        call_of(daemon, "b")  # runs beside a
        daemon.send(output("b", "b done"))
        daemon.result("b")
        # c waits for a; d may not overtake the waiting unsafe c.
        call_of(daemon, "c")
        assert daemon.index(is_result("a")) < daemon.index(is_started("c"))
        time.sleep(0.2)
        assert not [e for e in daemon.events if is_started("d")(e)]
        daemon.send(output("c", "deployed"))
        assert "hello" in str(daemon.result("d").content)
        assert daemon.index(is_result("c")) < daemon.index(is_started("d"))
        drain(daemon, "d1")
        order = [e.tool_use_id for e in daemon.of_type(ToolResult)]
        assert order == ["a", "b", "c", "d"]  # strict result order


def test_end_of_input_fails_calls_nobody_can_answer(tmp_path: Path) -> None:
    with host_daemon(tmp_path) as daemon:
        daemon.send(tool_use("h", {"key": "k"}, name="lookup"))
        call_of(daemon, "h")
        daemon.close_stdin()
        result = daemon.result("h")
        assert result.is_error and "closed its input" in str(result.content)
        assert daemon.wait_exit() == 0
