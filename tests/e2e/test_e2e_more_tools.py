"""MultiEdit, NotebookEdit, LS, TodoWrite and WebFetch through the real daemon (SPEC 5, 6).

Each tool's success and error paths as a host sees them on the wire, the ``todos`` event,
and the permission facts each tool carries: MultiEdit and NotebookEdit are edits (they ask
in default mode, run in acceptEdits, and Edit rules cover them), LS reads like Read (inside
the workspace it runs, outside it asks), TodoWrite never asks, and WebFetch asks unless a
``WebFetch(domain:...)`` rule allows its host. Web pages come from a server on 127.0.0.1.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from daemon_harness import DaemonProcess, is_result, is_type, run_daemon, tool_use

from stdio_executor.protocol import PermissionRequest, Todos, ToolCall, ToolResult, ToolsChanged

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tools"))
from web_server import WebServer, web_server

NO_PROMPT = ("--permission-mode", "default", "--no-prompt")
NOTEBOOK = {
    "cells": [
        {"cell_type": "markdown", "id": "intro", "metadata": {}, "source": "# Title"},
        {
            "cell_type": "code",
            "execution_count": 3,
            "id": "calc",
            "metadata": {},
            "outputs": [],
            "source": "x = 1",
        },
    ],
    "metadata": {},
    "nbformat": 4,
    "nbformat_minor": 5,
}


@pytest.fixture
def server() -> Iterator[WebServer]:
    with web_server() as s:
        yield s


def call(d: DaemonProcess, tool_use_id: str, name: str, raw: dict[str, Any]) -> ToolResult:
    d.send(tool_use(tool_use_id, raw, name=name))
    return d.result(tool_use_id)


def settings_file(tmp_path: Path, **permissions: Any) -> str:
    path = tmp_path / "host-settings.json"
    path.write_text(json.dumps({"permissions": permissions}))
    return str(path)


def test_ready_lists_the_new_tools_with_schemas(tmp_path: Path) -> None:
    with run_daemon(tmp_path) as d:
        ready = d.ready()
        tools = {t.name: t for t in ready.tools}
        for name in ("MultiEdit", "NotebookEdit", "LS", "TodoWrite", "WebFetch"):
            assert tools[name].description
            assert tools[name].input_schema["additionalProperties"] is False
        assert tools["MultiEdit"].input_schema["required"] == ["file_path", "edits"]
        assert ready.tool_info["LS"].read_only == "always"
        assert ready.tool_info["TodoWrite"].read_only == "never"


def test_each_tool_and_its_error_paths_over_the_wire(tmp_path: Path, server: WebServer) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    (tmp_path / "nb.ipynb").write_text(json.dumps(NOTEBOOK))
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "f.py").write_text("")
    with run_daemon(tmp_path) as d:
        unread = call(d, "m0", "MultiEdit", {"file_path": "a.txt", "edits": [
            {"old_string": "one", "new_string": "1"}]})  # fmt: skip
        assert (unread.is_error, unread.meta.status) == (True, "error")
        assert "File has not been read yet" in str(unread.content)
        call(d, "r1", "Read", {"file_path": "a.txt"})
        failed = call(d, "m1", "MultiEdit", {"file_path": "a.txt", "edits": [
            {"old_string": "one", "new_string": "1"},
            {"old_string": "nine", "new_string": "9"}]})  # fmt: skip
        assert failed.is_error and "String to replace not found" in str(failed.content)
        assert (tmp_path / "a.txt").read_text() == "one\ntwo\n"
        done = call(d, "m2", "MultiEdit", {"file_path": "a.txt", "edits": [
            {"old_string": "one", "new_string": "1"},
            {"old_string": "two", "new_string": "2"}]})  # fmt: skip
        assert done.content == (
            f"Applied 2 edits to {tmp_path}/a.txt:\n"
            '1. Replaced "one" with "1"\n2. Replaced "two" with "2"'
        )
        assert (tmp_path / "a.txt").read_text() == "1\n2\n"
        invalid = call(d, "m3", "MultiEdit", {"file_path": "a.txt", "edits": [], "x": 1})
        assert (invalid.is_error, invalid.meta.status) == (True, "invalid_input")

        call(d, "r2", "Read", {"file_path": "nb.ipynb"})
        nb = call(d, "n1", "NotebookEdit", {"notebook_path": "nb.ipynb", "cell_id": "calc",
                                            "new_source": "y = 2"})  # fmt: skip
        assert nb.content == "Updated cell calc with y = 2"
        saved = json.loads((tmp_path / "nb.ipynb").read_text())
        assert saved["cells"][1]["source"] == "y = 2"
        assert saved["cells"][1]["execution_count"] is None
        gone = call(d, "n2", "NotebookEdit", {"notebook_path": "nb.ipynb", "cell_id": "zzz",
                                              "new_source": ""})  # fmt: skip
        assert (
            gone.content
            == '<tool_use_error>Cell with ID "zzz" not found in notebook.</tool_use_error>'
        )
        no_type = call(d, "n3", "NotebookEdit", {"notebook_path": "nb.ipynb", "new_source": "",
                                                 "edit_mode": "insert"})  # fmt: skip
        assert no_type.meta.status == "invalid_input"

        listing = call(d, "l1", "LS", {"path": str(tmp_path / "sub")})
        assert str(listing.content).startswith(f"- {tmp_path}/sub/\n  - f.py\n\nNOTE: ")
        missing = call(d, "l2", "LS", {"path": str(tmp_path / "nope")})
        assert missing.is_error and "Directory does not exist" in str(missing.content)

        page = call(d, "w1", "WebFetch", {"url": f"{server.base}/page.html", "prompt": "news?"})
        assert not page.is_error and "# Release notes" in str(page.content)
        moved = call(d, "w2", "WebFetch", {"url": f"{server.base}/elsewhere", "prompt": "p"})
        assert str(moved.content).startswith("REDIRECT DETECTED")
        notfound = call(d, "w3", "WebFetch", {"url": f"{server.base}/missing", "prompt": "p"})
        assert notfound.is_error and "HTTP 404" in str(notfound.content)
        bad = call(d, "w4", "WebFetch", {"url": "file:///etc/passwd", "prompt": "p"})
        assert (bad.is_error, bad.meta.status) == (True, "invalid_input")


def test_todowrite_sends_the_list_before_its_result_in_both_shapes(tmp_path: Path) -> None:
    new_shape = [
        {"content": "Write tests", "status": "in_progress", "activeForm": "Writing tests"},
        {"content": "Ship", "status": "pending", "activeForm": "Shipping"},
    ]
    old_shape = [{"content": "Ship", "status": "completed", "priority": "high", "id": "2"}]
    with run_daemon(tmp_path, *NO_PROMPT) as d:  # default mode: TodoWrite never asks
        d.send(tool_use("t1", {"todos": new_shape}, name="TodoWrite"))
        d.send(tool_use("t2", {"todos": old_shape}, name="TodoWrite"))
        d.send({"type": "drain"})
        first, second = d.result("t1"), d.result("t2")
        assert first.content == (
            "Todos have been modified successfully. Ensure that you continue to use the todo "
            "list to track your progress. Please proceed with the current tasks if applicable"
        )
        assert not second.is_error
        events = d.of_type(Todos)
        assert [e.tool_use_id for e in events] == ["t1", "t2"]
        assert [msg_dict(i) for i in events[0].todos] == new_shape
        assert events[0].previous == []
        assert [msg_dict(i) for i in events[1].todos] == old_shape
        assert [msg_dict(i) for i in events[1].previous] == new_shape
        assert d.index(is_type(Todos)) < d.index(is_result("t1"))
        assert d.of_type(PermissionRequest) == []
        # The last list was all completed: it is forgotten, as in Claude Code.
        d.send(tool_use("t3", {"todos": []}, name="TodoWrite"))
        d.result("t3")
        assert d.of_type(Todos)[-1].previous == []
        missing = call(d, "t4", "TodoWrite", {"todos": [{"content": "x", "status": "pending"}]})
        assert missing.meta.status == "invalid_input"
        assert "The required parameter `todos[0].activeForm` is missing" in str(missing.content)


def msg_dict(item: Any) -> dict[str, Any]:
    return {k: v for k, v in msgspec.structs.asdict(item).items() if v is not None}


def test_edit_tools_ask_in_default_mode_and_run_in_accept_edits(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\n")
    (tmp_path / "nb.ipynb").write_text(json.dumps(NOTEBOOK))
    edit = {"file_path": "a.txt", "edits": [{"old_string": "one", "new_string": "1"}]}
    cell = {"notebook_path": "nb.ipynb", "cell_id": "intro", "new_source": "# New"}
    with run_daemon(tmp_path, *NO_PROMPT) as d:
        call(d, "r1", "Read", {"file_path": "a.txt"})
        call(d, "r2", "Read", {"file_path": "nb.ipynb"})
        for tool_use_id, name, raw in (("m", "MultiEdit", edit), ("n", "NotebookEdit", cell)):
            denied = call(d, tool_use_id, name, raw)
            assert denied.meta.status == "denied", denied
            assert f"default mode: {name} is not read-only" in str(denied.content)
        listing = call(d, "l", "LS", {"path": str(tmp_path)})
        assert not listing.is_error
        outside = call(d, "lo", "LS", {"path": str(tmp_path.parent)})
        assert outside.meta.status == "denied"
        assert "outside the workspace" in str(outside.content)
    assert (tmp_path / "a.txt").read_text() == "one\n"
    with run_daemon(tmp_path, "--permission-mode", "acceptEdits", "--no-prompt") as d:
        call(d, "r1", "Read", {"file_path": "a.txt"})
        call(d, "r2", "Read", {"file_path": "nb.ipynb"})
        assert not call(d, "m", "MultiEdit", edit).is_error
        assert call(d, "n", "NotebookEdit", cell).content == "Updated cell intro with # New"
    assert (tmp_path / "a.txt").read_text() == "1\n"


def test_edit_rules_cover_multiedit_and_notebookedit(tmp_path: Path) -> None:
    (tmp_path / "secret").mkdir()
    (tmp_path / "secret" / "a.txt").write_text("one\n")
    (tmp_path / "secret" / "nb.ipynb").write_text(json.dumps(NOTEBOOK))
    settings = settings_file(tmp_path, deny=["Edit(./secret/**)"], defaultMode="bypassPermissions")
    with run_daemon(tmp_path, "--settings", settings) as d:
        call(d, "r1", "Read", {"file_path": "secret/a.txt"})
        denied = call(d, "m", "MultiEdit", {"file_path": "secret/a.txt", "edits": [
            {"old_string": "one", "new_string": "1"}]})  # fmt: skip
        assert denied.meta.status == "denied"
        assert "denied by the rule Edit(./secret/**)" in str(denied.content)
        denied = call(d, "n", "NotebookEdit", {"notebook_path": "secret/nb.ipynb",
                                               "cell_id": "intro", "new_source": ""})  # fmt: skip
        assert denied.meta.status == "denied"
    assert (tmp_path / "secret" / "a.txt").read_text() == "one\n"


def test_webfetch_asks_unless_a_domain_rule_allows_it(tmp_path: Path, server: WebServer) -> None:
    url = f"{server.base}/page.html"
    with run_daemon(tmp_path, "--permission-mode", "default") as d:
        d.send(tool_use("w", {"url": url, "prompt": "p"}, name="WebFetch"))
        request = d.wait_for(is_type(PermissionRequest))
        assert isinstance(request, PermissionRequest) and request.name == "WebFetch"
        d.send({"type": "permission_response", "request_id": request.request_id,
                "decision": "deny"})  # fmt: skip
        assert d.result("w").meta.status == "denied"
    assert server.requested == []
    allow = settings_file(tmp_path, allow=["WebFetch(domain:127.0.0.1)"])
    with run_daemon(tmp_path, "--settings", allow, "--no-prompt") as d:
        assert not call(d, "w", "WebFetch", {"url": url, "prompt": "p"}).is_error
        # Another domain is not covered by the rule (and "localhost" is refused as a URL).
        other = call(d, "x", "WebFetch", {"url": "https://example.com/", "prompt": "p"})
        assert other.meta.status == "denied"
    deny = settings_file(
        tmp_path, deny=["WebFetch(domain:127.0.0.1)"], defaultMode="bypassPermissions"
    )
    with run_daemon(tmp_path, "--settings", deny) as d:
        denied = call(d, "w", "WebFetch", {"url": url, "prompt": "p"})
        assert "denied by the rule WebFetch(domain:127.0.0.1)" in str(denied.content)
    assert server.requested == ["/page.html"]


def test_a_host_that_takes_webfetch_over_is_judged_by_the_same_domain_rules(
    tmp_path: Path,
) -> None:
    allow = settings_file(tmp_path, allow=["WebFetch(domain:docs.example.com)"])
    with run_daemon(tmp_path, "--settings", allow, "--no-prompt") as d:
        d.send({"type": "register_tool", "request_id": "r1", "tool": {"name": "WebFetch"}})
        changed = d.wait_for(is_type(ToolsChanged))
        assert isinstance(changed, ToolsChanged) and changed.tool_info["WebFetch"].source == "host"
        d.send(tool_use("ok", {"url": "https://docs.example.com/a", "prompt": "p"}, "WebFetch"))
        served = d.wait_for(is_type(ToolCall))
        assert isinstance(served, ToolCall) and served.tool_use_id == "ok"
        d.send({"type": "tool_output", "tool_use_id": "ok", "content": "A summary."})
        assert d.result("ok").content == "A summary."
        # Another domain: the allow rule does not cover it, so it is asked (and denied here)
        # before the host ever sees it.
        other = call(d, "no", "WebFetch", {"url": "https://evil.example.net/", "prompt": "p"})
        assert other.meta.status == "denied"
        assert [c.tool_use_id for c in d.of_type(ToolCall)] == ["ok"]
