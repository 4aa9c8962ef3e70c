"""PreToolUse and PostToolUse hooks: real bash and python scripts in a temp dir, run by the
real gate, with Claude Code's payload, exit codes and JSON answers.

Each check is bounded with ``anyio.fail_after``; a hook that must be killed writes its pid
first, and the test looks for its process group afterwards.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import msgspec
import pytest
from permission_harness import Workspace, workspace

from stdio_executor.hooks.config import HookCommand, compile_matcher
from stdio_executor.permissions.gate import Allow, CallInfo, Deny, Verdict
from stdio_executor.permissions.settings_gate import SettingsGate
from stdio_executor.protocol import PermissionCancelled, PermissionRequest, PermissionResponse
from stdio_executor.tools.base import ToolOutcome


@pytest.fixture
def space(tmp_path: Path) -> Iterator[Workspace]:
    yield from workspace(tmp_path)


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


pytestmark = pytest.mark.anyio

LIMIT = 10.0


def script(path: Path, body: str) -> str:
    """An executable hook script; the command that runs it."""
    path.write_text(body)
    path.chmod(0o755)
    return str(path)


def python_hook(path: Path, body: str) -> str:
    path.write_text("import json, os, sys\n" + body)
    return f"{sys.executable} {path}"


def hooks(event: str, matcher: str, *commands: str, timeout: float | None = None) -> Any:
    entries: list[dict[str, Any]] = [{"type": "command", "command": c} for c in commands]
    if timeout is not None:
        for entry in entries:
            entry["timeout"] = timeout
    return {event: [{"matcher": matcher, "hooks": entries}]}


class Host:
    """What the daemon lends the gate: events out, aborts."""

    def __init__(self, gate: SettingsGate) -> None:
        self.events: list[Any] = []
        self.aborts: list[str | None] = []
        self.arrived = anyio.Event()
        gate.attach(self._emit, self.aborts.append)

    def _emit(self, event: Any) -> None:
        self.events.append(event)
        self.arrived.set()


async def before(gate: SettingsGate, call: CallInfo) -> Verdict:
    """The verdict, its confinement left out (what a hook decides is compared here; the
    confinement of file tools has its own tests in test_fast_path.py)."""
    with anyio.fail_after(LIMIT):
        verdict = await gate.before_run(call)
    if isinstance(verdict, Allow) and verdict.confine is not None:
        assert call.tool.spec.file_access is not None  # only file tools are confined
        return msgspec.structs.replace(verdict, confine=None)
    return verdict


async def test_exit_2_blocks_with_stderr_as_the_reason(space: Workspace) -> None:
    hook = script(space.root / "block.sh", "#!/bin/bash\necho 'no rm here' >&2\nexit 2\n")
    gate = space.gate({"hooks": hooks("PreToolUse", "Bash", hook)}, mode="bypassPermissions")
    call = space.call("Bash", {"command": "rm -rf build"})
    assert gate.quick_verdict(call) is None  # a hook matches: no fast path
    verdict = await before(gate, call)
    assert verdict == Deny(
        "<tool_use_error>A PreToolUse hook blocked this call: no rm here</tool_use_error>"
    )


async def test_a_hook_gets_claude_codes_payload_plus_the_batch(space: Workspace) -> None:
    out = space.root / "payload.json"
    hook = python_hook(
        space.root / "record.py",
        f"data = json.load(sys.stdin)\n"
        f"data['env_project'] = os.environ['CLAUDE_PROJECT_DIR']\n"
        f"data['hook_cwd'] = os.getcwd()\n"
        f"open({str(out)!r}, 'w').write(json.dumps(data))\n",
    )
    gate = space.gate({"hooks": hooks("PreToolUse", "*", hook)}, mode="bypassPermissions")
    call = space.call(
        "Read", {"file_path": "a.txt"}, tool_use_id="toolu_7", turn=3, siblings=("toolu_8",)
    )
    assert await before(gate, call) == Allow()
    assert json.loads(out.read_text()) == {
        "session_id": "test-session",
        "cwd": str(space.ws),
        "permission_mode": "bypassPermissions",
        "hook_event_name": "PreToolUse",
        "tool_name": "Read",
        "tool_input": {"file_path": "a.txt"},
        "tool_use_id": "toolu_7",
        "turn": 3,
        "sibling_tool_use_ids": ["toolu_8"],
        "env_project": str(space.ws),
        "hook_cwd": str(space.ws),
    }


def decision(value: str, reason: str = "", **extra: Any) -> str:
    out = {"hookEventName": "PreToolUse", "permissionDecision": value}
    if reason:
        out["permissionDecisionReason"] = reason
    out.update(extra)
    return json.dumps({"hookSpecificOutput": out})


def printing(space: Workspace, name: str, text: str) -> str:
    return python_hook(space.root / name, f"sys.stdin.read()\nprint({text!r})\n")


async def test_a_json_deny_blocks_with_its_reason(space: Workspace) -> None:
    hook = printing(space, "deny.py", decision("deny", "use the Read tool"))
    gate = space.gate({"hooks": hooks("PreToolUse", "Bash", hook)}, mode="bypassPermissions")
    verdict = await before(gate, space.call("Bash", {"command": "cat a.txt"}))
    assert isinstance(verdict, Deny) and "use the Read tool" in verdict.message


async def test_the_older_decision_block_form_blocks(space: Workspace) -> None:
    hook = printing(space, "old.py", json.dumps({"decision": "block", "reason": "not now"}))
    gate = space.gate({"hooks": hooks("PreToolUse", "", hook)}, mode="bypassPermissions")
    verdict = await before(gate, space.call("Bash", {"command": "ls"}))
    assert isinstance(verdict, Deny) and "not now" in verdict.message


async def test_a_hooks_allow_skips_an_ask_the_mode_would_make(space: Workspace) -> None:
    hook = printing(space, "allow.py", decision("allow", "formatter writes are fine"))
    gate = space.gate({"hooks": hooks("PreToolUse", "Write", hook)})
    host = Host(gate)
    call = space.call("Write", {"file_path": "new.txt", "content": "x"})
    assert gate.decide(call).kind == "ask"
    assert await before(gate, call) == Allow()
    assert host.events == []


@pytest.mark.parametrize("mode", ["default", "acceptEdits", "dontAsk", "bypassPermissions"])
@pytest.mark.parametrize(
    ("tool", "tool_input"),
    [
        ("Bash", {"command": "npm run lint -- --fix"}),
        ("Write", {"file_path": "new.txt", "content": "x"}),
    ],
)
async def test_a_hooks_allow_skips_the_prompt_in_every_mode(
    space: Workspace, mode: str, tool: str, tool_input: dict[str, Any]
) -> None:
    """Claude Code honours a PreToolUse "allow" in dontAsk mode too (issue 11, class 6)."""
    hook = printing(space, "allow.py", decision("allow", "the linter is fine"))
    gate = space.gate({"hooks": hooks("PreToolUse", tool, hook)}, mode=mode, no_prompt=True)
    host = Host(gate)
    assert await before(gate, space.call(tool, tool_input)) == Allow()
    assert host.events == []


async def test_without_a_hook_dont_ask_still_denies(space: Workspace) -> None:
    gate = space.gate({}, mode="dontAsk")
    decision_ = gate.decide(space.call("Bash", {"command": "npm test"}))
    assert decision_.kind == "deny" and "dontAsk mode denies" in decision_.reason


async def test_a_hooks_allow_never_overrides_a_deny_rule_in_dont_ask(space: Workspace) -> None:
    hook = printing(space, "allow.py", decision("allow"))
    settings = {
        "permissions": {"deny": ["Bash(npm:*)"]},
        "hooks": hooks("PreToolUse", "Bash", hook),
    }
    gate = space.gate(settings, mode="dontAsk")
    verdict = await before(gate, space.call("Bash", {"command": "nice npm test"}))
    assert isinstance(verdict, Deny) and "Bash(npm:*)" in verdict.message


async def test_a_hooks_allow_never_overrides_a_deny_rule(space: Workspace) -> None:
    hook = printing(space, "allow.py", decision("allow"))
    settings = {
        "permissions": {"deny": ["Bash(rm:*)"]},
        "hooks": hooks("PreToolUse", "Bash", hook),
    }
    gate = space.gate(settings, mode="bypassPermissions")
    verdict = await before(gate, space.call("Bash", {"command": "rm -rf x"}))
    assert isinstance(verdict, Deny) and "Bash(rm:*)" in verdict.message


async def test_a_hooks_allow_does_not_skip_an_ask_rule(space: Workspace) -> None:
    hook = printing(space, "allow.py", decision("allow"))
    settings = {
        "permissions": {"ask": ["Bash(git push:*)"]},
        "hooks": hooks("PreToolUse", "Bash", hook),
    }
    gate = space.gate(settings, no_prompt=True)
    verdict = await before(gate, space.call("Bash", {"command": "git push"}))
    assert isinstance(verdict, Deny)
    assert "ask rule Bash(git push:*)" in verdict.message and "--no-prompt" in verdict.message


async def test_a_hooks_ask_asks_the_host_even_for_a_read(space: Workspace) -> None:
    hook = printing(space, "ask.py", decision("ask", "this file is big"))
    gate = space.gate({"hooks": hooks("PreToolUse", "Read", hook)})
    host = Host(gate)
    call = space.call("Read", {"file_path": "a.txt"}, tool_use_id="toolu_r")
    result: list[Verdict] = []
    async with anyio.create_task_group() as tg:

        async def run() -> None:
            result.append(await before(gate, call))

        tg.start_soon(run)
        with anyio.fail_after(LIMIT):
            await host.arrived.wait()
        request = host.events[0]
        assert isinstance(request, PermissionRequest)
        assert request.reason == "PreToolUse hook: this file is big"
        assert (request.tool_use_id, request.name, request.input) == (
            "toolu_r",
            "Read",
            {"file_path": "a.txt"},
        )
        response = PermissionResponse(request_id=request.request_id, decision="allow")
        assert gate.on_response(response) is None
    assert result == [Allow()]


async def test_updated_input_is_judged_again(space: Workspace) -> None:
    rewrite = decision("allow", updatedInput={"file_path": ".env"})
    hook = printing(space, "rewrite.py", rewrite)
    settings = {
        "permissions": {"deny": ["Read(.env)"]},
        "hooks": hooks("PreToolUse", "Read", hook),
    }
    gate = space.gate(settings)
    verdict = await before(gate, space.call("Read", {"file_path": "a.txt"}))
    assert isinstance(verdict, Deny) and "Read(.env)" in verdict.message


async def test_updated_input_replaces_the_input(space: Workspace) -> None:
    hook = printing(space, "rewrite.py", decision("allow", updatedInput={"command": "ls -la"}))
    gate = space.gate({"hooks": hooks("PreToolUse", "Bash", hook)}, mode="dontAsk")
    verdict = await before(gate, space.call("Bash", {"command": "ls"}))
    assert verdict == Allow(updated_input={"command": "ls -la"})


async def test_invalid_updated_input_is_left_to_the_runtimes_validation(
    space: Workspace,
) -> None:
    hook = printing(space, "rewrite.py", decision("allow", updatedInput={"command": 5}))
    gate = space.gate({"hooks": hooks("PreToolUse", "Bash", hook)})
    verdict = await before(gate, space.call("Bash", {"command": "ls"}))
    # The runtime validates updated input again: this one never runs (invalid_input).
    assert verdict == Allow(updated_input={"command": 5})


async def test_additional_context_reaches_the_model(space: Workspace) -> None:
    text = json.dumps(
        {"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": "hi model"}}
    )
    hook = printing(space, "context.py", text)
    gate = space.gate({"hooks": hooks("PreToolUse", "Read", hook)})
    assert await before(gate, space.call("Read", {"file_path": "a.txt"})) == Allow(
        notes=("hi model",)
    )


async def test_continue_false_stops_the_turn(space: Workspace) -> None:
    text = json.dumps({"continue": False, "stopReason": "build is broken"})
    hook = printing(space, "stop.py", text)
    gate = space.gate({"hooks": hooks("PreToolUse", "Read", hook)})
    host = Host(gate)
    verdict = await before(gate, space.call("Read", {"file_path": "a.txt"}))
    assert isinstance(verdict, Deny) and "build is broken" in verdict.message
    assert host.aborts == [None]


async def test_other_exit_codes_and_plain_output_do_not_block(
    space: Workspace, caplog: pytest.LogCaptureFixture
) -> None:
    failing = script(space.root / "fail.sh", "#!/bin/bash\necho broken >&2\nexit 1\n")
    chatty = script(space.root / "chatty.sh", "#!/bin/bash\necho 'just text'\n")
    gate = space.gate({"hooks": hooks("PreToolUse", "Read", failing, chatty)})
    with caplog.at_level(logging.WARNING, logger="stdio_executor"):
        verdict = await before(gate, space.call("Read", {"file_path": "a.txt"}))
    assert verdict == Allow()
    assert f"PreToolUse hook `{failing}` exited 1 (non-blocking): broken" in caplog.text


async def test_a_hook_that_does_not_start_does_not_block(
    space: Workspace, caplog: pytest.LogCaptureFixture
) -> None:
    gate = space.gate({"hooks": hooks("PreToolUse", "Read", str(space.root / "missing.sh"))})
    with caplog.at_level(logging.WARNING, logger="stdio_executor"):
        assert await before(gate, space.call("Read", {"file_path": "a.txt"})) == Allow()
    assert "exited 127 (non-blocking)" in caplog.text


def pid_from(path: Path) -> int:
    return int(path.read_text().split()[0])


async def gone(pgid: int) -> bool:
    """Whether the group empties within a second: a process that was sent SIGKILL a moment
    ago may still be on its way out."""
    with anyio.move_on_after(1.0):
        while live_members(pgid):  # noqa: ASYNC110 - nothing signals an empty group: poll
            await anyio.sleep(0.01)
    return not live_members(pgid)


def live_members(pgid: int) -> list[int]:
    """Processes of the group that are not zombies (a killed orphan waits for init to
    reap it, and still answers ``killpg(pgid, 0)`` until then)."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            data = Path(f"/proc/{name}/stat").read_bytes()
        except OSError:
            continue
        fields = data[data.rindex(b")") + 2 :].split()
        if int(fields[2]) == pgid and fields[0] not in (b"Z", b"X"):
            found.append(int(name))
    return found


async def test_a_hook_past_its_timeout_is_killed_with_its_group(
    space: Workspace, caplog: pytest.LogCaptureFixture
) -> None:
    pid_file = space.root / "pid"
    hook = script(
        space.root / "slow.sh",
        f"#!/bin/bash\nsleep 30 &\ncut -d' ' -f4 /proc/self/stat > {pid_file}\nwait\n",
    )
    gate = space.gate({"hooks": hooks("PreToolUse", "Read", hook, timeout=0.5)})
    with caplog.at_level(logging.WARNING, logger="stdio_executor"):
        verdict = await before(gate, space.call("Read", {"file_path": "a.txt"}))
    assert verdict == Allow()  # a timeout is a non-blocking error, as in Claude Code
    assert "timed out after 0.5s" in caplog.text
    assert await gone(pid_from(pid_file))


async def test_matching_hooks_run_at_the_same_time(space: Workspace) -> None:
    # Each waits for the other's mark: run one after the other, both would time out.
    def rendezvous(mine: str, theirs: str) -> str:
        a, b = space.root / mine, space.root / theirs
        done = space.root / f"{mine}.done"
        body = f"#!/bin/bash\ntouch {a}\nuntil [ -e {b} ]; do sleep 0.01; done\ntouch {done}\n"
        return script(space.root / f"{mine}.sh", body)

    first, second = rendezvous("one", "two"), rendezvous("two", "one")
    settings = {"hooks": {"PreToolUse": [
        {"matcher": "Read", "hooks": [{"type": "command", "command": first, "timeout": 5}]},
        {"matcher": "Read|Glob", "hooks": [{"type": "command", "command": second, "timeout": 5}]},
    ]}}  # fmt: skip
    gate = space.gate(settings)
    assert await before(gate, space.call("Read", {"file_path": "a.txt"})) == Allow()
    assert (space.root / "one.done").exists() and (space.root / "two.done").exists()


async def test_cancelling_the_call_kills_the_hook_group(space: Workspace) -> None:
    pid_file = space.root / "pid"
    hook = script(
        space.root / "hang.sh",
        f"#!/bin/bash\nsleep 30 &\ncut -d' ' -f4 /proc/self/stat > {pid_file}\nwait\n",
    )
    gate = space.gate({"hooks": hooks("PreToolUse", "Read", hook)})
    call = space.call("Read", {"file_path": "a.txt"})
    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(gate.before_run, call)
            while not pid_file.exists() or not pid_file.read_text().strip():  # noqa: ASYNC110
                await anyio.sleep(0.01)  # the hook's own process writes it: poll
            group = os.getpgid(pid_from(pid_file))
            assert space.processes.live  # the hook's call, as the spawner knows it
            tg.cancel_scope.cancel("interrupt")
    assert await gone(group)


async def test_cancelling_a_pending_ask_tells_the_host(space: Workspace) -> None:
    gate = space.gate()
    host = Host(gate)
    call = space.call("Write", {"file_path": "x", "content": ""}, tool_use_id="toolu_w")
    with anyio.fail_after(LIMIT):
        async with anyio.create_task_group() as tg:
            tg.start_soon(gate.before_run, call)
            await host.arrived.wait()
            tg.cancel_scope.cancel("discard")
    request, cancelled = host.events
    assert isinstance(request, PermissionRequest) and isinstance(cancelled, PermissionCancelled)
    assert (cancelled.request_id, cancelled.tool_use_id, cancelled.reason) == (
        request.request_id,
        "toolu_w",
        "discard",
    )
    # A late answer to it is ignored, an answer to nothing is an error.
    late = PermissionResponse(request_id=request.request_id, decision="allow")
    assert gate.on_response(late) is None
    unknown = gate.on_response(PermissionResponse(request_id="nope", decision="allow"))
    assert unknown is not None and unknown.code == "unknown_request_id"


# ------------------------------------------------------------------------- PostToolUse


def post_call(space: Workspace) -> CallInfo:
    return space.call("Write", {"file_path": "a.txt", "content": "x"}, tool_use_id="toolu_p")


async def after(gate: SettingsGate, call: CallInfo, result: ToolOutcome) -> ToolOutcome:
    with anyio.fail_after(LIMIT):
        return await gate.after_run(call, result)


async def test_post_hook_exit_2_makes_the_result_a_denial_the_model_sees(
    space: Workspace,
) -> None:
    out = space.root / "payload.json"
    hook = script(
        space.root / "lint.sh",
        f"#!/bin/bash\ncat > {out}\necho 'lint: missing newline' >&2\nexit 2\n",
    )
    gate = space.gate({"hooks": hooks("PostToolUse", "Edit|Write", hook)})
    call = post_call(space)
    assert gate.needs_after_run(call)
    result = await after(gate, call, ToolOutcome("The file a.txt has been updated."))
    assert result == ToolOutcome(
        "The file a.txt has been updated.\n"
        "A PostToolUse hook reported a problem with this call: lint: missing newline",
        is_error=True,
        status="denied",
    )
    payload = json.loads(out.read_text())
    assert payload["hook_event_name"] == "PostToolUse"
    assert payload["tool_response"] == {
        "content": "The file a.txt has been updated.",
        "is_error": False,
        "status": "success",
        "exit_code": None,
        "truncated": False,
        "output_path": None,
        "filePath": "a.txt",
    }


async def test_post_hook_json_block_and_context(space: Workspace) -> None:
    block = printing(space, "block.py", json.dumps({"decision": "block", "reason": "tests fail"}))
    context = printing(
        space,
        "ctx.py",
        json.dumps(
            {"hookSpecificOutput": {"hookEventName": "PostToolUse", "additionalContext": "fmt ok"}}
        ),
    )
    gate = space.gate({"hooks": hooks("PostToolUse", "Write", block, context)})
    result = await after(gate, post_call(space), ToolOutcome("done"))
    assert result.status == "denied" and result.is_error
    assert result.content == (
        "done\nA PostToolUse hook reported a problem with this call: tests fail\nfmt ok"
    )


async def test_post_hooks_skip_failed_calls_and_unmatched_tools(space: Workspace) -> None:
    marker = space.root / "ran"
    hook = script(space.root / "mark.sh", f"#!/bin/bash\ntouch {marker}\n")
    gate = space.gate({"hooks": hooks("PostToolUse", "Write", hook)})
    failed = ToolOutcome("File has not been read yet.", is_error=True)
    assert await after(gate, post_call(space), failed) == failed
    read = space.call("Read", {"file_path": "a.txt"})
    assert not gate.needs_after_run(read)
    assert not marker.exists()


@pytest.mark.parametrize(
    ("matcher", "tool", "expected"),
    [
        ("", "Read", True),
        ("*", "mcp__x__y", True),
        ("Write", "Write", True),
        ("Write", "WriteFile", False),
        ("Edit|Write", "Write", True),
        ("Edit|Write", "Read", False),
        ("Edit | Write", "Write", True),
        ("Notebook.*", "NotebookEdit", True),
        ("mcp__memory__.*", "mcp__memory__create", True),
        ("mcp__memory__.*", "mcp__github__create", False),
        ("^Bash$", "Bash", True),
        ("B.sh", "Bash", True),
    ],
)
def test_matcher_syntax(matcher: str, tool: str, expected: bool) -> None:
    group = compile_matcher(matcher, (HookCommand("true"),))
    assert group.matches(tool) is expected


def test_a_command_listed_by_two_matchers_runs_once(space: Workspace) -> None:
    settings = {"hooks": {"PreToolUse": [
        {"matcher": "Read", "hooks": [{"type": "command", "command": "log.sh"}]},
        {"matcher": "*", "hooks": [{"type": "command", "command": "log.sh"}]},
    ]}}  # fmt: skip
    gate = space.gate(settings)
    assert [h.command for h in gate.hooks.pre("Read")] == ["log.sh"]
    assert os.path.basename(gate.hooks.pre("Read")[0].source) == "settings.json"
