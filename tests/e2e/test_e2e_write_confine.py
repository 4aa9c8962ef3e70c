"""The edit tools write only what was checked: a symlink swapped after a call was judged
cannot lead Write, Edit, MultiEdit or NotebookEdit outside the workspace.

Each call waits on an ask rule; while the host "thinks", a link on the call's path is
pointed outside; then the host allows. The result must be a denial, and nothing outside may
have been created, emptied or changed. The same calls without the swap succeed (the control
that shows each test could fail).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from daemon_harness import DaemonProcess, run_daemon, tool_use

from stdio_executor.protocol import Drained, PermissionRequest, ToolResult

BYPASS = ("--permission-mode", "bypassPermissions")
ASK_EDITS = json.dumps({"permissions": {"ask": ["Write", "Edit", "MultiEdit", "NotebookEdit"]}})


@pytest.fixture
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("outside")


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "sub").mkdir()
    (tmp_path / "notes.txt").write_text("inside\n")
    return tmp_path


def _request(d: DaemonProcess, tool_use_id: str) -> PermissionRequest:
    event = d.wait_for(lambda e: isinstance(e, PermissionRequest) and e.tool_use_id == tool_use_id)
    assert isinstance(event, PermissionRequest)
    return event


def _allow(d: DaemonProcess, req: PermissionRequest) -> None:
    d.send({"type": "permission_response", "request_id": req.request_id, "decision": "allow"})


def _repoint(link: Path, target: Path) -> None:
    link.unlink()
    link.symlink_to(target)


def _call(
    d: DaemonProcess, tool_use_id: str, name: str, tool_input: dict[str, Any], swap: Any
) -> ToolResult:
    d.send(tool_use(tool_use_id, tool_input, name=name))
    req = _request(d, tool_use_id)
    if swap is not None:
        swap()
    _allow(d, req)
    result = d.result(tool_use_id)
    d.send({"type": "drain"})
    d.wait_for(lambda e: isinstance(e, Drained) and e.turn == result.meta.turn)
    return result


NEW_FILE_CALLS = [
    ("Write", lambda p: {"file_path": p, "content": "planted\n"}),
    ("Edit", lambda p: {"file_path": p, "old_string": "", "new_string": "planted\n"}),
    (
        "MultiEdit",
        lambda p: {"file_path": p, "edits": [{"old_string": "", "new_string": "planted\n"}]},
    ),
]


@pytest.mark.parametrize("deep", [False, True], ids=["file", "with-new-parents"])
@pytest.mark.parametrize(("name", "make"), NEW_FILE_CALLS, ids=[n for n, _ in NEW_FILE_CALLS])
def test_a_directory_swapped_after_the_check_gets_no_new_file(
    ws: Path, outside: Path, name: str, make: Any, deep: bool
) -> None:
    (ws / "dir").symlink_to(ws / "sub")
    rel = "dir/a/b/new.txt" if deep else "dir/new.txt"
    with run_daemon(ws, *BYPASS, "--settings", ASK_EDITS) as d:
        control = _call(d, "c", name, make(str(ws / rel)), None)
        assert control.meta.status == "success", control
        assert (ws / "sub" / rel.removeprefix("dir/")).read_text() == "planted\n"
        swapped = _call(
            d,
            "s",
            name,
            make(str(ws / rel.replace("new", "other"))),
            lambda: _repoint(ws / "dir", outside),
        )
    assert swapped.meta.status == "denied", swapped
    assert str(outside) in str(swapped.content)
    assert list(outside.iterdir()) == [], "something was created outside"


def test_a_file_swapped_after_the_check_is_not_written(ws: Path, outside: Path) -> None:
    # The read-before-write stamp is the file's (mtime, size): an outside file of the same
    # size with the same mtime passes it, so only the check on the descriptor stops this.
    target = outside / "dotfile"
    target.write_text("keep!!\n")  # as long as notes.txt
    (ws / "link.txt").symlink_to(ws / "notes.txt")
    calls: list[tuple[str, dict[str, Any]]] = [
        ("Write", {"file_path": "link.txt", "content": "owned\n"}),
        ("Edit", {"file_path": "link.txt", "old_string": "inside", "new_string": "owned!"}),
        (
            "MultiEdit",
            {"file_path": "link.txt", "edits": [{"old_string": "inside", "new_string": "ow"}]},
        ),
    ]
    results = []
    with run_daemon(ws, *BYPASS, "--settings", ASK_EDITS) as d:
        for i, (name, tool_input) in enumerate(calls):
            _repoint(ws / "link.txt", ws / "notes.txt")
            d.send(tool_use(f"r{i}", {"file_path": "link.txt"}, name="Read"))
            assert d.result(f"r{i}").meta.status == "success"
            stamp = os.stat(ws / "notes.txt").st_mtime_ns

            def swap(stamp: int = stamp) -> None:
                _repoint(ws / "link.txt", target)
                os.utime(target, ns=(stamp, stamp))

            results.append(_call(d, f"c{i}", name, tool_input, swap))
    for result in results:
        assert result.meta.status == "denied", result
    assert target.read_text() == "keep!!\n"
    assert (ws / "notes.txt").read_text() == "inside\n"


def test_a_notebook_swapped_after_the_check_is_not_written(ws: Path, outside: Path) -> None:
    notebook = {
        "cells": [
            {
                "cell_type": "code",
                "id": "c1",
                "metadata": {},
                "source": "1",
                "outputs": [],
                "execution_count": None,
            }
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }
    text = json.dumps(notebook)
    (ws / "sub" / "n.ipynb").write_text(text)
    (outside / "n.ipynb").write_text(text)
    (ws / "dir").symlink_to(ws / "sub")
    with run_daemon(ws, *BYPASS, "--settings", ASK_EDITS) as d:
        d.send(tool_use("r", {"file_path": "dir/n.ipynb"}, name="Read"))
        assert d.result("r").meta.status == "success"
        stamp = os.stat(ws / "sub" / "n.ipynb").st_mtime_ns

        def swap() -> None:
            _repoint(ws / "dir", outside)
            os.utime(outside / "n.ipynb", ns=(stamp, stamp))

        edit = {"notebook_path": "dir/n.ipynb", "cell_id": "c1", "new_source": "2"}
        result = _call(d, "n", "NotebookEdit", edit, swap)
    assert result.meta.status == "denied", result
    assert (outside / "n.ipynb").read_text() == text
