"""The permission gate's fast path, through the real daemon (issue 13 item 1).

When nothing can object to a tool's calls, the gate answers from a per-tool cache without
judging the input, and the tool checks workspace confinement itself, on the file it opened.
Every test here is one thing that must switch that off, or one thing confinement must still
refuse: a call that must ask or be denied still is. The last tests are the race the check on
the descriptor closes: a symlink swapped after the call was judged.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from daemon_harness import DaemonProcess, is_type, run_daemon, tool_use

from stdio_executor.protocol import Drained, PermissionRequest, ToolResult, WorkspaceTrusted
from stdio_executor.sandbox.kernel import probe

BYPASS = ("--permission-mode", "bypassPermissions")
SECRET = "outside-secret-7f3a"


@pytest.fixture
def outside(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory outside the workspace holding a file whose text must never leak."""
    where = tmp_path_factory.mktemp("outside")
    (where / "secret.txt").write_text(SECRET + "\n")
    (where / "a.txt").write_text("a\n")
    return where


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    (tmp_path / "notes.txt").write_text("inside\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "x.txt").write_text("x\n")
    return tmp_path


def read(d: DaemonProcess, tool_use_id: str, path: str | Path) -> ToolResult:
    d.send(tool_use(tool_use_id, {"file_path": str(path)}, name="Read"))
    return d.result(tool_use_id)


def glob(d: DaemonProcess, tool_use_id: str, pattern: str, path: str | Path) -> ToolResult:
    d.send(tool_use(tool_use_id, {"pattern": pattern, "path": str(path)}, name="Glob"))
    return d.result(tool_use_id)


def status(result: ToolResult) -> tuple[bool, str]:
    return result.is_error, result.meta.status


def request(d: DaemonProcess, tool_use_id: str) -> PermissionRequest:
    event = d.wait_for(lambda e: isinstance(e, PermissionRequest) and e.tool_use_id == tool_use_id)
    assert isinstance(event, PermissionRequest)
    return event


def answer(d: DaemonProcess, req: PermissionRequest, decision: str) -> None:
    d.send({"type": "permission_response", "request_id": req.request_id, "decision": decision})


def drain(d: DaemonProcess) -> None:
    """End the turn (an error result cancels its siblings)."""
    d.send({"type": "drain"})
    d.wait_for(is_type(Drained))


def settings(**entries: Any) -> str:
    return json.dumps(entries)


def hook(tmp_path: Path, event: str, matcher: str, exit_code: int, message: str) -> dict[str, Any]:
    script = f"import sys; sys.stderr.write({message!r}); sys.exit({exit_code})"
    command = f"{sys.executable} -c {json.dumps(script)}"
    return {event: [{"matcher": matcher, "hooks": [{"type": "command", "command": command}]}]}


# ------------------------------------------------------------------ what it leaves as is


def test_with_nothing_to_object_reads_and_globs_run_and_confinement_holds(
    ws: Path, outside: Path
) -> None:
    (ws / "link.txt").symlink_to(outside / "secret.txt")
    (ws / "outdir").symlink_to(outside)
    with run_daemon(ws, *BYPASS) as d:
        assert read(d, "r", "notes.txt").content == "     1\tinside"
        found = str(glob(d, "g", "**/*.txt", ws).content).splitlines()
        # The link is listed by its name inside (Glob reads no file).
        assert sorted(found) == [str(ws / n) for n in ("link.txt", "notes.txt", "sub/x.txt")]
        # Outside, by name and through a symlink inside: denied in bypassPermissions mode.
        for i, path in enumerate([outside / "secret.txt", ws / "link.txt"]):
            result = read(d, f"o{i}", path)
            assert status(result) == (True, "denied"), result
            assert SECRET not in str(result.content)
            assert "outside the workspace" in str(result.content)
        for i, path in enumerate([outside, ws / "outdir"]):
            result = glob(d, f"go{i}", "*.txt", path)
            assert status(result) == (True, "denied"), result
            assert "secret.txt" not in str(result.content)


def test_outside_the_workspace_still_asks_in_default_mode(ws: Path, outside: Path) -> None:
    (ws / "link.txt").symlink_to(outside / "secret.txt")
    with run_daemon(ws, "--permission-mode", "default") as d:
        assert read(d, "in", "notes.txt").content == "     1\tinside"
        d.send(tool_use("out", {"file_path": str(ws / "link.txt")}, name="Read"))
        req = request(d, "out")
        assert "outside the workspace" in req.reason
        answer(d, req, "deny")
        assert status(d.result("out")) == (True, "denied")
        d.send(tool_use("g", {"pattern": "*.txt", "path": str(outside)}, name="Glob"))
        answer(d, request(d, "g"), "allow")  # the user's answer reaches outside
        assert "secret.txt" in str(d.result("g").content)


def test_additional_directories_and_the_spill_directory_are_inside(ws: Path, outside: Path) -> None:
    spill = outside / "spill"
    spill.mkdir()
    (spill / "old.txt").write_text("spilled\n")
    config = settings(permissions={"additionalDirectories": [str(outside / "extra")]})
    (outside / "extra").mkdir()
    (outside / "extra" / "e.txt").write_text("extra\n")
    with run_daemon(ws, *BYPASS, "--settings", config, spill_dir=spill) as d:
        assert read(d, "e", outside / "extra" / "e.txt").content == "     1\textra"
        assert read(d, "s", spill / "old.txt").content == "     1\tspilled"
        assert str(outside / "extra" / "e.txt") in str(
            glob(d, "g", "*.txt", outside / "extra").content
        )
        assert status(read(d, "no", outside / "secret.txt")) == (True, "denied")


# ---------------------------------------------------------- each thing that switches it off


def test_a_deny_rule_on_the_tool_denies(ws: Path) -> None:
    config = settings(permissions={"deny": ["Read(notes.txt)"]})
    with run_daemon(ws, *BYPASS, "--settings", config) as d:
        assert status(read(d, "r", "notes.txt")) == (True, "denied")
        # A Read rule covers Glob, and the rule's file is hidden from its answer.
        assert "notes.txt" not in str(glob(d, "g", "*.txt", ws).content)
        assert read(d, "ok", "sub/x.txt").content == "     1\tx"


def test_a_deny_rule_matches_a_hard_link_to_the_file_it_names(ws: Path) -> None:
    os.link(ws / "notes.txt", ws / "alias.txt")
    config = settings(permissions={"deny": ["Read(notes.txt)"]})
    with run_daemon(ws, *BYPASS, "--settings", config) as d:
        assert status(read(d, "r", "alias.txt")) == (True, "denied")


def test_an_ask_rule_on_the_tool_asks_even_in_bypass_mode(ws: Path) -> None:
    config = settings(permissions={"ask": ["Read(notes.txt)"]})
    with run_daemon(ws, *BYPASS, "--settings", config) as d:
        d.send(tool_use("r", {"file_path": "notes.txt"}, name="Read"))
        answer(d, request(d, "r"), "deny")
        assert status(d.result("r")) == (True, "denied")


def test_an_allow_rule_may_grant_a_path_outside(ws: Path, outside: Path) -> None:
    config = settings(permissions={"allow": [f"Read(/{outside}/a.txt)"]})  # //: absolute
    with run_daemon(ws, *BYPASS, "--settings", config) as d:
        assert read(d, "a", outside / "a.txt").content == "     1\ta"
        assert status(read(d, "s", outside / "secret.txt")) == (True, "denied")


def test_a_pre_tool_use_hook_matching_the_tool_runs(ws: Path) -> None:
    config = settings(hooks=hook(ws, "PreToolUse", "Read|Glob", 2, "not today"))
    with run_daemon(ws, *BYPASS, "--settings", config) as d:
        for result in (read(d, "r", "notes.txt"), glob(d, "g", "*.txt", ws)):
            assert status(result) == (True, "denied")
            assert "not today" in str(result.content)


def test_a_post_tool_use_hook_matching_the_tool_runs(ws: Path) -> None:
    config = settings(hooks=hook(ws, "PostToolUse", "Read", 2, "looked at it"))
    with run_daemon(ws, *BYPASS, "--settings", config) as d:
        result = read(d, "r", "notes.txt")
        assert status(result) == (True, "denied")
        assert "looked at it" in str(result.content)


@pytest.mark.parametrize(
    ("mode", "expected"),
    [("default", "ask"), ("acceptEdits", "ask"), ("dontAsk", "deny"), ("plan", "deny")],
)
def test_a_mode_that_objects_to_some_calls_of_a_tool_still_does(
    ws: Path, mode: str, expected: str
) -> None:
    with run_daemon(ws, "--permission-mode", mode) as d:
        d.send(tool_use("b", "touch made"))
        if expected == "ask":
            answer(d, request(d, "b"), "deny")
        assert status(d.result("b")) == (True, "denied")
        assert not (ws / "made").exists()
        drain(d)
        # Read-only tools run in every mode, outside paths aside.
        assert read(d, "r", "notes.txt").content == "     1\tinside"


def test_a_control_file_still_asks_in_accept_edits_mode(ws: Path) -> None:
    (ws / ".git").mkdir()
    (ws / ".git" / "config").write_text("[core]\n")
    with run_daemon(ws, "--permission-mode", "acceptEdits") as d:
        d.send(tool_use("w", {"file_path": ".git/config", "content": "x"}, name="Write"))
        answer(d, request(d, "w"), "deny")
        assert status(d.result("w")) == (True, "denied")
        assert (ws / ".git" / "config").read_text() == "[core]\n"


def test_a_tool_that_does_not_check_what_it_opens_is_confined_by_the_policy(
    ws: Path, outside: Path
) -> None:
    """LS does not take confinement over from the gate (``Tool.confines`` is false; it only
    re-checks, on its descriptor, a verdict that relied on it): the gate judges each call,
    and a path outside is refused even with nothing else to object."""
    (ws / "outdir").symlink_to(outside)
    with run_daemon(ws, *BYPASS) as d:
        for i, path in enumerate([outside, ws / "outdir"]):
            d.send(tool_use(f"ls{i}", {"path": str(path)}, name="LS"))
            result = d.result(f"ls{i}")
            assert status(result) == (True, "denied"), result
            assert "secret.txt" not in str(result.content)
        d.send(tool_use("in", {"path": str(ws)}, name="LS"))
        assert "notes.txt" in str(d.result("in").content)


_SANDBOX = probe()


@pytest.mark.skipif(
    not (_SANDBOX.landlock_abi and _SANDBOX.user_namespaces),
    reason=f"no sandbox on this system: {_SANDBOX.problem}",
)
def test_the_sandbox_still_has_its_say_on_bash(ws: Path, outside: Path) -> None:
    config = settings(sandbox={"allowUnsandboxedCommands": False})
    with run_daemon(ws, *BYPASS, "--settings", config) as d:
        command = {"command": f"touch {outside}/nope", "dangerouslyDisableSandbox": True}
        d.send(tool_use("b", command))
        result = d.result("b")
    assert result.is_error and "allowUnsandboxedCommands" in str(result.content)
    assert not (outside / "nope").exists()


def test_trusting_the_workspace_brings_its_held_back_settings_into_force(
    ws: Path, outside: Path
) -> None:
    (outside / "extra").mkdir()
    (outside / "extra" / "e.txt").write_text("extra\n")
    (ws / ".claude").mkdir()
    repo = {
        "permissions": {"additionalDirectories": [str(outside / "extra")]},
        "hooks": hook(ws, "PreToolUse", "Glob", 2, "no globbing here"),
    }
    (ws / ".claude" / "settings.json").write_text(json.dumps(repo))
    with run_daemon(ws, *BYPASS, "--settings", "{}") as d:
        # Held back: the extra directory is outside, the hook does not run (and the verdict
        # for each tool was cached on the way).
        assert status(read(d, "r1", outside / "extra" / "e.txt")) == (True, "denied")
        assert not glob(d, "g1", "*.txt", ws).is_error
        d.send({"type": "trust_workspace", "request_id": "t"})
        d.wait_for(is_type(WorkspaceTrusted))
        assert read(d, "r2", outside / "extra" / "e.txt").content == "     1\textra"
        result = glob(d, "g2", "*.txt", ws)
        assert status(result) == (True, "denied") and "no globbing here" in str(result.content)


# --------------------------------------------------------------------------- the race


def test_a_symlink_swapped_after_the_check_is_refused_when_read(ws: Path, outside: Path) -> None:
    """The call is judged (an ask rule makes it wait for the host), then the link is pointed
    outside, then the host allows: the file opened is outside, and Read refuses it."""
    (ws / "link.txt").symlink_to(ws / "notes.txt")
    config = settings(permissions={"ask": ["Read(link.txt)"]})
    with run_daemon(ws, *BYPASS, "--settings", config) as d:
        d.send(tool_use("r", {"file_path": "link.txt"}, name="Read"))
        req = request(d, "r")
        (ws / "link.txt").unlink()
        (ws / "link.txt").symlink_to(outside / "secret.txt")
        answer(d, req, "allow")
        result = d.result("r")
    assert status(result) == (True, "denied"), result
    assert SECRET not in str(result.content)
    assert str(outside / "secret.txt") in str(result.content)


def test_a_directory_swapped_after_the_check_is_refused_when_globbed(
    ws: Path, outside: Path
) -> None:
    (ws / "dir").symlink_to(ws / "sub")
    config = settings(permissions={"ask": ["Glob"]})
    with run_daemon(ws, *BYPASS, "--settings", config) as d:
        d.send(tool_use("g", {"pattern": "*.txt", "path": str(ws / "dir")}, name="Glob"))
        req = request(d, "g")
        (ws / "dir").unlink()
        (ws / "dir").symlink_to(outside)
        answer(d, req, "allow")
        result = d.result("g")
    assert status(result) == (True, "denied"), result
    assert "secret.txt" not in str(result.content)
