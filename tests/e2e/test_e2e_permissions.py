"""The ask round-trip, settings and hooks through the real daemon over real pipes (SPEC 6).

No test here passes ``--permission-mode bypassPermissions`` unless it says so: the daemon
starts as a host would start it, and every answer is a real ``permission_response`` line.
"""

from __future__ import annotations

import json
import shutil
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from daemon_harness import (
    DaemonProcess,
    is_progress,
    is_result,
    is_started,
    is_type,
    run_daemon,
    tool_use,
)

from stdio_executor.protocol import (
    Discarded,
    Drained,
    ErrorEvent,
    Interrupted,
    PermissionCancelled,
    PermissionRequest,
    ToolResult,
)

DEFAULT = ("--permission-mode", "default")


def request_for(d: DaemonProcess, tool_use_id: str) -> PermissionRequest:
    event = d.wait_for(lambda e: isinstance(e, PermissionRequest) and e.tool_use_id == tool_use_id)
    assert isinstance(event, PermissionRequest)
    return event


def answer(d: DaemonProcess, request: PermissionRequest, decision: str, **extra: Any) -> None:
    d.send(
        {
            "type": "permission_response",
            "request_id": request.request_id,
            "decision": decision,
            **extra,
        }
    )


def cancelled_for(d: DaemonProcess, request: PermissionRequest) -> PermissionCancelled:
    event = d.wait_for(
        lambda e: isinstance(e, PermissionCancelled) and e.request_id == request.request_id
    )
    assert isinstance(event, PermissionCancelled)
    return event


def test_with_no_settings_reads_run_and_a_write_asks_the_host(tmp_path: Path) -> None:
    with run_daemon(tmp_path, *DEFAULT) as d:
        d.send(tool_use("a", "sleep 0.2; echo one"))
        d.send(tool_use("b", "echo two"))
        d.send(tool_use("c", "touch made"))
        request = request_for(d, "c")
        assert request.name == "Bash" and request.input == {"command": "touch made"}
        assert request.reason == "default mode: the command is not read-only"
        assert (request.turn, request.siblings) == (1, ["a", "b"])
        assert request.request_id.startswith("perm_")
        # The read-only calls ran without asking.
        assert d.result("a").content == "one" and d.result("b").content == "two"
        assert not (tmp_path / "made").exists()
        answer(d, request, "allow")
        made = d.result("c")
        assert (made.is_error, made.meta.status) == (False, "success")
        assert (tmp_path / "made").exists()
        assert d.of_type(PermissionRequest) == [request]


def _drained(turn: int) -> Callable[[Any], bool]:
    return lambda event: isinstance(event, Drained) and event.turn == turn


def test_a_word_that_expands_into_an_option_asks(tmp_path: Path) -> None:
    # A file named like an option, and a default value that is one: both would make sort
    # write a file. Neither is read-only, so both ask; `ls *` only lists: it runs at once.
    (tmp_path / "--output=PWN1").write_text("x\n")
    with run_daemon(tmp_path, *DEFAULT) as d:
        # One turn each: a denied Bash call cancels its siblings.
        turns = (("g", "sort *"), ("p", "sort ${X:---output=PWN2}"))
        for turn, (tool_use_id, command) in enumerate(turns, start=1):
            d.send(tool_use(tool_use_id, command))
            request = request_for(d, tool_use_id)
            assert request.reason == "default mode: the command is not read-only"
            answer(d, request, "deny")
            assert d.result(tool_use_id).meta.status == "denied"
            d.send({"type": "drain"})
            d.wait_for(_drained(turn))
        d.send(tool_use("l", "ls *"))
        # It ran unasked; ls refuses the option the file name became, and writes nothing.
        assert "unrecognized option '--output=PWN1'" in str(d.result("l").content)
        assert [r.tool_use_id for r in d.of_type(PermissionRequest)] == ["g", "p"]
    assert not (tmp_path / "PWN1").exists() and not (tmp_path / "PWN2").exists()


def test_a_deny_answer_is_a_denied_result_with_the_message(tmp_path: Path) -> None:
    with run_daemon(tmp_path, *DEFAULT) as d:
        d.send(tool_use("w", {"file_path": "new.txt", "content": "x"}, name="Write"))
        request = request_for(d, "w")
        assert request.reason == "default mode: Write is not read-only"
        answer(d, request, "deny", message="write it under docs/ instead")
        result = d.result("w")
        assert (result.is_error, result.meta.status) == (True, "denied")
        assert result.content == (
            "<tool_use_error>The user denied permission to use Write: write it under docs/ "
            "instead</tool_use_error>"
        )
        assert not (tmp_path / "new.txt").exists()


def test_updated_input_is_validated_and_checked_against_deny_rules(tmp_path: Path) -> None:
    settings = tmp_path / "team.json"
    settings.write_text(json.dumps({"permissions": {"deny": ["Bash(rm:*)"]}}))
    (tmp_path / "keep").write_text("k")
    with run_daemon(tmp_path, "--settings", str(settings)) as d:
        d.send(tool_use("one", "touch asked"))
        answer(d, request_for(d, "one"), "allow", updated_input={"command": "touch instead"})
        assert d.result("one").meta.status == "success"
        assert (tmp_path / "instead").exists() and not (tmp_path / "asked").exists()

        d.send(tool_use("two", "touch asked"))
        answer(d, request_for(d, "two"), "allow", updated_input={"command": 5})
        invalid = d.result("two")
        assert invalid.meta.status == "invalid_input"
        assert "InputValidationError" in str(invalid.content)

        d.send({"type": "drain"})  # the invalid Bash cancelled its siblings: a fresh turn
        d.wait_for(is_type(Drained))
        d.send(tool_use("three", "touch asked"))
        answer(d, request_for(d, "three"), "allow", updated_input={"command": "rm keep"})
        denied = d.result("three")
        assert denied.meta.status == "denied" and "Bash(rm:*)" in str(denied.content)
        assert (tmp_path / "keep").exists()


def test_interrupt_true_denies_and_aborts_the_turn(tmp_path: Path) -> None:
    with run_daemon(tmp_path, *DEFAULT) as d:
        d.send(tool_use("first", "touch first"))
        d.send(tool_use("second", "touch second"))
        request = request_for(d, "first")
        answer(d, request, "deny", interrupt=True, message="stop")
        interrupted = d.wait_for(is_type(Interrupted))
        assert isinstance(interrupted, Interrupted)
        assert (interrupted.reason, interrupted.request_id) == ("abort", request.request_id)
        first, second = d.result("first"), d.result("second")
        assert first.meta.status == "denied"
        assert str(first.content).startswith("<tool_use_error>The user rejected this tool use")
        assert second.meta.status == "rejected"
        d.send(tool_use("third", "echo later"))  # still the aborted turn
        assert d.result("third").meta.status == "rejected"
        assert not (tmp_path / "first").exists() and not (tmp_path / "second").exists()


def test_an_interrupt_voids_a_pending_request(tmp_path: Path) -> None:
    with run_daemon(tmp_path, *DEFAULT) as d:
        # Write is a `block` tool: an interrupt does not cancel it, but nobody will answer.
        d.send(tool_use("w", {"file_path": "x.txt", "content": "x"}, name="Write"))
        request = request_for(d, "w")
        d.send({"type": "interrupt", "reason": "interrupt"})
        assert cancelled_for(d, request).reason == "interrupt"
        result = d.result("w")
        assert result.meta.status == "denied" and "interrupted" in str(result.content)
        assert d.index(is_type(PermissionCancelled)) < d.index(is_result("w"))
        # A Bash call waiting for an answer is a `cancel` tool: it is interrupted.
        d.send({"type": "drain"})
        d.wait_for(is_type(Drained))
        d.send(tool_use("b", "touch y"))
        bash_request = request_for(d, "b")
        d.send({"type": "interrupt", "reason": "interrupt"})
        assert cancelled_for(d, bash_request).reason == "interrupt"
        assert d.result("b").meta.status == "interrupted"
        assert not (tmp_path / "x.txt").exists() and not (tmp_path / "y").exists()


def test_discard_voids_a_pending_request(tmp_path: Path) -> None:
    with run_daemon(tmp_path, *DEFAULT) as d:
        d.send(tool_use("t", "touch nope"))
        request = request_for(d, "t")
        d.send({"type": "discard", "request_id": "retry"})
        discarded = d.wait_for(is_type(Discarded))
        assert isinstance(discarded, Discarded) and discarded.tool_use_ids == ["t"]
        assert cancelled_for(d, request).reason == "discard"
        answer(d, request, "allow")  # late: ignored, not an error
        d.send(tool_use("t", "echo again"))
        assert d.result("t").content == "again"
        assert not d.of_type(ErrorEvent)
        assert [r.tool_use_id for r in d.of_type(ToolResult)] == ["t"]
        assert not (tmp_path / "nope").exists()


def test_end_of_input_denies_a_pending_request(tmp_path: Path) -> None:
    with run_daemon(tmp_path, *DEFAULT) as d:
        d.send(tool_use("t", "touch nope"))
        request = request_for(d, "t")
        d.close_stdin()
        assert cancelled_for(d, request).reason == "input_closed"
        result = d.result("t")
        assert result.meta.status == "denied"
        assert "closed stdio-executor's input" in str(result.content)
        assert d.wait_exit() == 0
        assert not (tmp_path / "nope").exists()


def test_sigterm_voids_a_pending_request(tmp_path: Path) -> None:
    with run_daemon(tmp_path, *DEFAULT) as d:
        d.send(tool_use("t", "touch nope"))
        request = request_for(d, "t")
        d.proc.send_signal(signal.SIGTERM)
        assert cancelled_for(d, request).reason == "shutdown"
        assert d.result("t").meta.status == "interrupted"
        assert d.wait_exit() == 128 + signal.SIGTERM


def test_no_prompt_denies_what_would_ask(tmp_path: Path) -> None:
    with run_daemon(tmp_path, *DEFAULT, "--no-prompt") as d:
        d.send(tool_use("r", "ls"))
        d.send(tool_use("w", "touch nope"))
        assert d.result("r").meta.status == "success"
        result = d.result("w")
        assert result.meta.status == "denied"
        assert result.content == (
            "<tool_use_error>Permission to use Bash has been denied: it needs approval "
            "(default mode: the command is not read-only), and stdio-executor runs with "
            "--no-prompt, so nobody can approve it.</tool_use_error>"
        )
        assert not d.of_type(PermissionRequest)


def test_a_waiting_call_holds_its_place_while_others_run(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "notes.txt").write_text("far away\n")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "here.txt").write_text("close\n")
    with run_daemon(ws, *DEFAULT) as d:
        d.send(tool_use("far", {"file_path": str(outside / "notes.txt")}, name="Read"))
        d.send(tool_use("near", {"file_path": "here.txt"}, name="Read"))
        d.send(tool_use("echo", "echo hi"))
        request = request_for(d, "far")
        assert request.reason == f"{outside}/notes.txt is outside the workspace and " + (
            "additionalDirectories"
        )
        # Both later read-only calls run while `far` waits (echo's output streams) ...
        d.started("near")
        d.wait_for(is_progress("echo"))
        assert not d.of_type(ToolResult)  # ... but their results keep the order.
        answer(d, request, "allow")
        assert d.result("far").content == "     1\tfar away"
        assert [r.tool_use_id for r in (d.result("near"), d.result("echo"))] == ["near", "echo"]
        ids = [r.tool_use_id for r in d.of_type(ToolResult)]
        assert ids == ["far", "near", "echo"]


def test_an_answer_to_no_request_is_an_error(tmp_path: Path) -> None:
    with run_daemon(tmp_path, *DEFAULT) as d:
        d.send({"type": "permission_response", "request_id": "perm_404", "decision": "allow"})
        error = d.wait_for(is_type(ErrorEvent))
        assert isinstance(error, ErrorEvent)
        assert (error.code, error.request_id) == ("unknown_request_id", "perm_404")


def test_a_claude_code_settings_file_decides_through_the_daemon(tmp_path: Path) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text(
        json.dumps(
            {
                "permissions": {
                    "allow": ["Bash(touch:*)", "Edit(/notes/**)"],
                    "deny": ["Bash(rm:*)", "Read(./.env)"],
                    "defaultMode": "default",
                }
            }
        )
    )
    (tmp_path / ".env").write_text("TOKEN=1\n")
    (tmp_path / "victim").write_text("v")
    with run_daemon(tmp_path, "--no-prompt") as d:
        d.send(tool_use("ok", "touch ok && ls"))
        d.send(tool_use("env", {"file_path": ".env"}, name="Read"))
        d.send(tool_use("note", {"file_path": "notes/a.md", "content": "n"}, name="Write"))
        assert d.result("ok").meta.status == "success"
        env = d.result("env")
        assert env.meta.status == "denied" and "Read(./.env)" in str(env.content)
        assert d.result("note").meta.status == "success"
        d.send({"type": "drain"})
        d.wait_for(is_type(Drained))
        d.send(tool_use("sneak", "touch a && $(echo rm) victim"))
        sneak = d.result("sneak")
        assert sneak.meta.status == "denied" and "could not be checked" in str(sneak.content)
        d.send({"type": "drain"})
        d.wait_for(is_type(Drained))
        d.send(tool_use("rm", "touch b; r'm' victim"))
        rm = d.result("rm")
        assert rm.meta.status == "denied" and "Bash(rm:*)" in str(rm.content)
        assert (tmp_path / "victim").exists() and (tmp_path / "ok").exists()
        assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_hooks_block_and_add_context_through_the_daemon(tmp_path: Path) -> None:
    hooks_dir = tmp_path / ".claude" / "hooks"
    hooks_dir.mkdir(parents=True)
    guard = hooks_dir / "guard.sh"
    guard.write_text(
        "#!/bin/bash\n"
        'cmd=$(python3 -c \'import json,sys; print(json.load(sys.stdin)["tool_input"]'
        '["command"])\')\n'
        'case "$cmd" in *curl*) echo "no network from the agent" >&2; exit 2;; esac\n'
    )
    guard.chmod(0o755)
    (hooks_dir / "context.py").write_text(
        "import json, sys\n"
        "event = json.load(sys.stdin)\n"
        "path = event['tool_input']['file_path']\n"
        "print(json.dumps({'hookSpecificOutput': {'hookEventName': 'PostToolUse',\n"
        "    'additionalContext': f'formatted {path} (turn {event[\"turn\"]})'}}))\n"
    )
    settings = {
        "hooks": {
            "PreToolUse": [
                {
                    "matcher": "Bash",
                    "hooks": [
                        {
                            "type": "command",
                            "command": '"$CLAUDE_PROJECT_DIR"/.claude/hooks/guard.sh',
                        }
                    ],
                }
            ],
            "PostToolUse": [
                {
                    "matcher": "Edit|Write",
                    "hooks": [
                        {
                            "type": "command",
                            "command": f"{sys.executable} .claude/hooks/context.py",
                            "timeout": 10,
                        }
                    ],
                }
            ],
        }
    }
    (tmp_path / ".claude" / "settings.json").write_text(json.dumps(settings))
    # The workspace's own hooks run only in a trusted workspace (test_e2e_trust.py).
    with run_daemon(tmp_path, "--permission-mode", "bypassPermissions", "--trust-workspace") as d:
        d.send(tool_use("net", "curl -s http://example.invalid"))
        blocked = d.result("net")
        assert blocked.meta.status == "denied"
        assert blocked.content == (
            "<tool_use_error>A PreToolUse hook blocked this call: no network from the agent"
            "</tool_use_error>"
        )
        d.send({"type": "drain"})
        d.wait_for(is_type(Drained))
        d.send(tool_use("ok", "echo fine"))
        d.send(tool_use("w", {"file_path": "out.txt", "content": "x\n"}, name="Write"))
        assert d.result("ok").content == "fine"
        written = d.result("w")
        assert written.meta.status == "success"
        assert str(written.content).endswith("\nformatted out.txt (turn 2)")
        assert d.index(is_started("w")) > d.index(is_started("ok"))


def test_an_unanswered_request_is_denied_after_the_permission_timeout(tmp_path: Path) -> None:
    with run_daemon(tmp_path, *DEFAULT, "--permission-timeout", "0.6") as d:
        d.send(tool_use("t", "touch made"))
        request = request_for(d, "t")
        result = d.result("t")
        assert (result.is_error, result.meta.status) == (True, "denied")
        assert result.content == (
            "<tool_use_error>Permission to use Bash was not given: the host did not answer the "
            "permission request within 0.6 s (--permission-timeout), so it was denied."
            "</tool_use_error>"
        )
        assert cancelled_for(d, request).reason == "timeout"
        assert not (tmp_path / "made").exists()
        # A late answer to the ended request is ignored, not an error.
        answer(d, request, "allow")
        d.send({"type": "drain"})
        d.wait_for(is_type(Drained))
        assert not d.of_type(ErrorEvent)
        d.close_stdin()
        assert d.wait_exit() == 0
        assert (
            f"permission request {request.request_id} (Bash for t) has waited" in d.stderr.decode()
        )


def test_an_answer_within_the_permission_timeout_still_counts(tmp_path: Path) -> None:
    with run_daemon(tmp_path, *DEFAULT, "--permission-timeout", "30") as d:
        d.send(tool_use("t", "touch made"))
        answer(d, request_for(d, "t"), "allow")
        assert d.result("t").meta.status == "success"
        assert (tmp_path / "made").exists()


def test_an_answer_to_no_request_names_its_line(tmp_path: Path) -> None:
    with run_daemon(tmp_path, *DEFAULT) as d:
        d.send({"type": "drain"})
        d.send({"type": "permission_response", "request_id": "perm_9", "decision": "deny"})
        error = d.wait_for(is_type(ErrorEvent))
        assert isinstance(error, ErrorEvent)
        assert (error.code, error.line, error.request_id) == ("unknown_request_id", 2, "perm_9")


@pytest.mark.parametrize(
    ("layout", "command"),
    [
        ("bare", "git status"),
        ("bare", "git status -sb"),
        ("bare", "git diff --stat"),
        ("bare", "git log --oneline -n 1"),
        ("bare", "git ls-files"),
        ("nested", "git status"),
        ("nested", "git diff"),
        ("nested", "git status --porcelain=v2"),
    ],
)
def test_a_read_only_git_runs_no_program_its_repository_names(
    tmp_path: Path, layout: str, command: str
) -> None:
    """Files a cloned repository or an accepted edit can create make a bare repository git
    discovers by itself (``HEAD``, ``config``, ``objects/``, ``refs/``), or a tarball's own
    ``.git/config``: its ``core.fsmonitor`` must not run under an auto-allowed command."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    ws = tmp_path / "ws"
    ws.mkdir()
    marker = ws / "fsmonitor-ran"  # inside: a sandbox may keep the rest read-only
    gitdir = ws if layout == "bare" else ws / ".git"
    for sub in ("objects", "refs"):
        (gitdir / sub).mkdir(parents=True)
    (gitdir / "HEAD").write_text("ref: refs/heads/main\n")
    worktree = "\tworktree = .\n" if layout == "bare" else ""
    (gitdir / "config").write_text(
        "[core]\n\trepositoryformatversion = 0\n\tbare = false\n"
        + worktree
        + f"\tfsmonitor = \"touch '{marker}'; false\"\n\tpager = \"touch '{marker}'\"\n"
    )
    (ws / "file.txt").write_text("x\n")
    with run_daemon(ws, *DEFAULT, "--no-prompt") as d:
        d.send(tool_use("g", command))
        result = d.result("g")
        assert result.meta.status in ("success", "error"), result  # ran: it is read-only
    assert not marker.exists(), command


def test_an_updated_bash_input_is_checked_against_read_deny_rules(tmp_path: Path) -> None:
    """The host rewrote the command into one that reads a denied file: the Read rule holds
    for it as it would have for the command first sent."""
    settings = tmp_path / "team.json"
    settings.write_text(json.dumps({"permissions": {"deny": ["Read(./.env)"]}}))
    (tmp_path / ".env").write_text("API_KEY=hunter2\n")
    with run_daemon(tmp_path, "--settings", str(settings), "--sandbox", "off") as d:
        d.send(tool_use("one", "touch asked"))
        answer(d, request_for(d, "one"), "allow", updated_input={"command": "cat .env"})
        denied = d.result("one")
    assert denied.meta.status == "denied" and "Read(./.env)" in str(denied.content)
    assert "hunter2" not in str(denied.content)
