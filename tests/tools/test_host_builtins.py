"""Claude Code tools the host serves (WebSearch, Task, Agent, or a built-in it takes over),
through the real daemon: validated, permission-checked and scheduled like built-ins, run as
``tool_call``; ``unknown_tool`` when no host serves them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from external_harness import REPO_ROOT, drain, run_daemon, tool_use

from stdio_executor.protocol import ErrorEvent, ToolCall, ToolsChanged
from stdio_executor.tools import schemas


def _call_of(daemon: Any, tool_use_id: str) -> ToolCall:
    event = daemon.wait_for(lambda e: isinstance(e, ToolCall) and e.tool_use_id == tool_use_id)
    assert isinstance(event, ToolCall)
    return event


def _answer(daemon: Any, tool_use_id: str, content: str) -> None:
    daemon.send({"type": "tool_output", "tool_use_id": tool_use_id, "content": content})


def test_without_a_host_they_are_unknown(tmp_path: Path) -> None:
    with run_daemon(tmp_path) as daemon:
        assert not {"WebSearch", "Task", "Agent"} & {t.name for t in daemon.ready().tools}
        daemon.send(tool_use("w", {"query": "python 3.14"}, name="WebSearch"))
        result = daemon.result("w")
        assert result.meta.status == "unknown_tool"
        assert (
            result.content
            == "<tool_use_error>Error: No such tool available: WebSearch</tool_use_error>"
        )
        drain(daemon, "d1")


def test_host_builtins_are_announced_validated_and_handed_to_the_host(tmp_path: Path) -> None:
    with run_daemon(tmp_path, "--host-builtins", "WebSearch,Task") as daemon:
        ready = daemon.ready()
        tools = {t.name: t for t in ready.tools}
        assert tools["WebSearch"].input_schema == schemas.load()["WebSearch"]
        assert tools["Task"].input_schema["required"] == ["description", "prompt", "subagent_type"]
        assert ready.tool_info["WebSearch"].source == "host"
        assert ready.tool_info["Task"].read_only == "always"
        assert "Agent" not in tools

        # Two agents and a search run at once (all read-only), each as a tool_call.
        task = {
            "description": "Find the parser",
            "prompt": "Where is X?",
            "subagent_type": "Explore",
        }
        daemon.send(tool_use("t1", task, name="Task"))
        daemon.send(tool_use("t2", {**task, "run_in_background": "true"}, name="Task"))
        daemon.send(
            tool_use(
                "w1", {"query": "msgspec", "allowed_domains": ["jcristharif.com"]}, name="WebSearch"
            )
        )
        first, second, search = (
            _call_of(daemon, "t1"),
            _call_of(daemon, "t2"),
            _call_of(daemon, "w1"),
        )
        assert first.input == task and first.name == "Task"
        assert second.input == {**task, "run_in_background": True}  # normalised
        assert search.input == {"query": "msgspec", "allowed_domains": ["jcristharif.com"]}
        _answer(daemon, "w1", "1. msgspec docs")
        _answer(daemon, "t2", "Agent started in the background.")
        _answer(daemon, "t1", "It is in parser.py.")
        assert daemon.result("t1").content == "It is in parser.py."
        assert daemon.result("w1").content == "1. msgspec docs"

        # Refused like a built-in: never reaches the host.
        daemon.send(tool_use("bad", {"query": "x", "site": "a"}, name="WebSearch"))
        bad = daemon.result("bad")
        assert bad.meta.status == "invalid_input"
        assert bad.content == (
            "<tool_use_error>InputValidationError: WebSearch failed due to the following "
            "issues:\nAn unexpected parameter `site` was provided\n"
            "The parameter `query` must be at least 2 characters long</tool_use_error>"
        )
        drain(daemon, "d1")
        assert [e.tool_use_id for e in daemon.of_type(ToolCall)] == ["t1", "t2", "w1"]


def test_permission_rules_apply_to_host_builtins(tmp_path: Path) -> None:
    settings = json.dumps({"permissions": {"deny": ["WebSearch"]}})
    with run_daemon(
        tmp_path, "--host-builtins", "WebSearch", "--settings", settings, "--no-prompt"
    ) as daemon:
        daemon.send(tool_use("w", {"query": "anything"}, name="WebSearch"))
        result = daemon.result("w")
        assert result.meta.status == "denied" and "WebSearch" in str(result.content)
        drain(daemon, "d1")
        assert not daemon.of_type(ToolCall)


def test_register_tool_naming_only_the_tool_serves_it_and_takes_over_builtins(
    tmp_path: Path,
) -> None:
    (tmp_path / "notes.txt").write_text("local\n")
    with run_daemon(tmp_path) as daemon:
        daemon.send({"type": "register_tool", "tool": {"name": "Agent"}, "request_id": "r1"})
        changed = daemon.wait_for(lambda e: isinstance(e, ToolsChanged) and e.request_id == "r1")
        assert isinstance(changed, ToolsChanged) and changed.added == ["Agent"]
        assert changed.tool_info["Agent"].source == "host"
        daemon.send(tool_use("a", {"description": "d", "prompt": "p"}, name="Agent"))
        assert _call_of(daemon, "a").input == {"description": "d", "prompt": "p"}
        _answer(daemon, "a", "done")
        assert daemon.result("a").content == "done"

        # The host takes over Read: calls (and its alias) go to the host, same schema.
        daemon.send({"type": "register_tool", "tool": {"name": "Read"}, "request_id": "r2"})
        taken = daemon.wait_for(lambda e: isinstance(e, ToolsChanged) and e.request_id == "r2")
        assert isinstance(taken, ToolsChanged) and taken.tool_info["Read"].source == "host"
        assert taken.tool_info["Read"].aliases == ["FileRead"]
        daemon.send(tool_use("r", {"file_path": "notes.txt"}, name="FileRead"))
        assert _call_of(daemon, "r").name == "Read"
        _answer(daemon, "r", "from the host")
        assert daemon.result("r").content == "from the host"
        daemon.send({"type": "unregister_tool", "name": "Read", "request_id": "r3"})
        back = daemon.wait_for(lambda e: isinstance(e, ToolsChanged) and e.request_id == "r3")
        assert isinstance(back, ToolsChanged) and back.tool_info["Read"].source == "builtin"
        daemon.send(tool_use("r2", {"file_path": "notes.txt"}, name="Read"))
        assert daemon.result("r2").content == "     1\tlocal"

        # A full definition under a built-in's name is still refused.
        daemon.send(
            {
                "type": "register_tool",
                "tool": {"name": "Read", "description": "mine", "input_schema": {"type": "object"}},
                "request_id": "r4",
            }
        )
        refused = daemon.wait_for(lambda e: isinstance(e, ErrorEvent) and e.request_id == "r4")
        assert isinstance(refused, ErrorEvent) and refused.code == "invalid_tool_definition"
        drain(daemon, "d1")


def test_an_unknown_host_builtin_is_a_usage_error() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "stdio_executor", "--host-builtins", "WebSearch,Teleport"],
        input=b"",
        capture_output=True,
        cwd=REPO_ROOT,
        timeout=30,
    )
    assert out.returncode == 2 and out.stdout == b""
    assert b"Claude Code has no tool 'Teleport'" in out.stderr
