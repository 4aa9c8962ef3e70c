"""The Python client over the real daemon: turns, events, cancellation, permissions, host
tools and closing."""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import anyio
import pytest

from stdio_executor.client import (
    Client,
    ClientError,
    HostCall,
    HostToolError,
    PermissionDecision,
)
from stdio_executor.protocol import (
    Event,
    HostToolDefinition,
    PermissionRequest,
    Progress,
    ToolCall,
    ToolResult,
    ToolsChanged,
    ToolStarted,
    ToolUse,
)

pytestmark = pytest.mark.anyio

REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def daemon_env() -> dict[str, str]:
    """The environment for a daemon spawned from a source checkout."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))
    return env


BYPASS = ["--permission-mode", "bypassPermissions"]


def bash(tool_use_id: str, command: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_use_id, "name": "Bash", "input": {"command": command}}


def client_for(tmp_path: Path, env: dict[str, str], *args: str, **kw: Any) -> Client:
    return Client([*args, "--spill-dir", str(tmp_path / ".spill")], cwd=tmp_path, env=env, **kw)


async def test_drain_returns_the_turns_results_in_add_order(
    tmp_path: Path, daemon_env: dict[str, str]
) -> None:
    with anyio.fail_after(30):
        async with client_for(tmp_path, daemon_env, *BYPASS) as client:
            assert client.ready.protocol_version == 1
            assert "Bash" in [t["name"] for t in client.api_tools()]
            await client.add_tool(bash("a", "sleep 0.4; echo one"))
            # Any block shape: a protocol ToolUse, or an SDK object with id/name/input.
            await client.add_tool(ToolUse(id="b", name="Bash", input={"command": "echo two"}))
            await client.add_tool(SimpleNamespace(id="c", name="Nope", input={}))
            turn = await client.drain()
            assert [r.tool_use_id for r in turn.results] == ["a", "b", "c"]
            assert [r.content for r in turn.results[:2]] == ["one", "two"]
            assert turn.results[2].meta.status == "unknown_tool"
            assert (turn.drained.turn, turn.drained.results) == (1, 3)
            assert turn.content_blocks()[0] == {
                "type": "tool_result",
                "tool_use_id": "a",
                "content": "one",
                "is_error": False,
            }
            second = await client.run_turn([bash("a", "echo again")])
            assert [(r.tool_use_id, r.content) for r in second.results] == [("a", "again")]
            assert second.drained.turn == 2
        assert client.returncode == 0


async def test_subscribers_see_every_event_from_when_they_subscribe(
    tmp_path: Path, daemon_env: dict[str, str]
) -> None:
    seen: list[Event] = []
    with anyio.fail_after(30):
        async with (
            client_for(tmp_path, daemon_env, *BYPASS) as client,
            client.subscribe() as events,
        ):
            await client.add_tool(bash("p", "echo first; sleep 0.3; echo second"))
            await client.drain()
            await client.aclose()
            async for event in events:  # ends when the daemon exits
                seen.append(event)
    kinds = [type(e).__name__ for e in seen]
    assert kinds[0] == "ToolStarted" and kinds[-1] == "Drained"
    text = "".join(str(e.data["text"]) for e in seen if isinstance(e, Progress))
    assert text == "first\nsecond\n"


async def test_interrupt_cancels_running_bash_and_its_result_follows(
    tmp_path: Path, daemon_env: dict[str, str]
) -> None:
    with anyio.fail_after(30):
        async with client_for(tmp_path, daemon_env, *BYPASS) as client:
            async with client.subscribe() as events:
                await client.add_tool(bash("long", "echo partial; sleep 30"))
                async for event in events:
                    if isinstance(event, Progress):
                        break
            interrupted = await client.interrupt()
            assert interrupted.tool_use_ids == ["long"]
            assert interrupted.reason == "abort"  # the wire's default, not "interrupt"
            turn = await client.drain()
            (result,) = turn.results
            assert result.meta.status == "interrupted"
            assert "partial" in str(result.content)


async def test_discard_drops_the_turn_and_the_next_add_starts_a_fresh_one(
    tmp_path: Path, daemon_env: dict[str, str]
) -> None:
    with anyio.fail_after(30):
        async with client_for(tmp_path, daemon_env, *BYPASS) as client:
            await client.add_tool(bash("x", "sleep 30"))
            await client.add_tool(bash("y", "touch never"))
            discarded = await client.discard()
            assert discarded.tool_use_ids == ["x", "y"]
            turn = await client.run_turn([bash("x", "echo fresh")])
            assert [(r.tool_use_id, r.content) for r in turn.results] == [("x", "fresh")]
            assert turn.drained.turn == 2
    assert not (tmp_path / "never").exists()


async def test_permission_handler_answers_each_request(
    tmp_path: Path, daemon_env: dict[str, str]
) -> None:
    asked: list[PermissionRequest] = []

    async def decide(request: PermissionRequest) -> bool | PermissionDecision:
        asked.append(request)
        if "allowed" in str(request.input.get("command")):
            return True
        return PermissionDecision(False, "not this one")

    with anyio.fail_after(30):
        # No --permission-mode: the default mode asks before anything that writes.
        async with client_for(tmp_path, daemon_env, on_permission=decide) as client:
            turn = await client.run_turn(
                [bash("r", "echo hi"), bash("ok", "touch allowed"), bash("no", "touch refused")]
            )
    statuses = {r.tool_use_id: r.meta.status for r in turn.results}
    assert statuses == {"ok": "success", "no": "denied", "r": "success"}
    assert "not this one" in str(turn.results[2].content)
    assert [r.tool_use_id for r in asked] == ["ok", "no"]  # the read-only call was not asked
    assert (tmp_path / "allowed").exists() and not (tmp_path / "refused").exists()


async def test_without_a_permission_handler_requests_are_denied(
    tmp_path: Path, daemon_env: dict[str, str]
) -> None:
    with anyio.fail_after(30):
        async with client_for(tmp_path, daemon_env) as client:
            turn = await client.run_turn([bash("w", "touch file")])
    assert turn.results[0].meta.status == "denied"
    assert "no permission handler" in str(turn.results[0].content)


async def test_trust_workspace_applies_what_ready_held_back(
    tmp_path: Path, daemon_env: dict[str, str]
) -> None:
    settings = tmp_path / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text('{"permissions": {"allow": ["Bash(touch:*)"]}}')
    with anyio.fail_after(30):
        async with client_for(tmp_path, daemon_env) as client:
            trust = client.ready.workspace_trust
            assert trust is not None and not trust.trusted
            assert trust.held_back is not None
            assert trust.held_back.allow == ["Bash(touch:*)"]
            before = await client.run_turn([bash("a", "touch before")])
            trusted = await client.trust_workspace()
            after = await client.run_turn([bash("b", "touch after")])
            again = await client.trust_workspace()
    # Untrusted, the workspace's allow rule did not apply: the call asked, and with no
    # handler it was denied. Trusted, the same rule lets the next call run.
    assert before.results[0].meta.status == "denied"
    assert trusted.applied.allow == ["Bash(touch:*)"]
    assert trusted.applied.files == [str(settings)]
    assert after.results[0].meta.status == "success"
    assert (tmp_path / "after").exists() and not (tmp_path / "before").exists()
    assert again.applied.allow == []  # nothing is held back any more


async def test_list_jobs_reports_background_shells(
    tmp_path: Path, daemon_env: dict[str, str]
) -> None:
    block = bash("bg", "echo started; sleep 30")
    block["input"]["run_in_background"] = True
    with anyio.fail_after(30):
        async with client_for(tmp_path, daemon_env, *BYPASS) as client:
            assert (await client.list_jobs()).jobs == []
            turn = await client.run_turn([block])
            assert turn.results[0].meta.status == "success"
            jobs = (await client.list_jobs()).jobs
    assert [(j.tool_use_id, j.command, j.status) for j in jobs] == [
        ("bg", "echo started; sleep 30", "running")
    ]


async def test_host_tools_are_served_by_decorated_handlers(
    tmp_path: Path, daemon_env: dict[str, str]
) -> None:
    client = client_for(tmp_path, daemon_env, *BYPASS)

    @client.tool(
        name="lookup",
        description="Look a word up",
        input_schema={
            "type": "object",
            "properties": {"word": {"type": "string"}},
            "required": ["word"],
        },
        read_only=True,
    )
    async def lookup(input: dict[str, Any], call: HostCall) -> str:
        await call.progress({"kind": "note", "text": f"looking up {input['word']}"})
        if input["word"] == "missing":
            raise HostToolError(f"no entry for {input['word']}")
        return f"{input['word']}: a definition"

    progress: list[Progress] = []
    with anyio.fail_after(30):
        async with client:
            assert "lookup" in [t["name"] for t in client.api_tools()]
            async with client.subscribe() as events:
                turn = await client.run_turn(
                    [
                        {"type": "tool_use", "id": "l1", "name": "lookup", "input": {"word": "x"}},
                        {"id": "l2", "name": "lookup", "input": {"word": "missing"}},
                        {"id": "l3", "name": "lookup", "input": {}},
                    ]
                )
                await client.aclose()
                progress = [e async for e in events if isinstance(e, Progress)]
    l1, l2, l3 = turn.results
    assert (l1.content, l1.is_error) == ("x: a definition", False)
    assert (l2.content, l2.is_error) == ("no entry for missing", True)
    assert l3.meta.status == "invalid_input"  # validated by the daemon, never called
    assert [(p.tool_use_id, p.data["text"]) for p in progress] == [
        ("l1", "looking up x"),
        ("l2", "looking up missing"),
    ]


async def test_a_cancelled_host_tool_call_cancels_its_handler(
    tmp_path: Path, daemon_env: dict[str, str]
) -> None:
    cancelled = anyio.Event()
    started = anyio.Event()

    async def slow(input: dict[str, Any], call: HostCall) -> str:
        started.set()
        try:
            await anyio.sleep(30)
        except anyio.get_cancelled_exc_class():
            cancelled.set()
            raise
        return "never"

    with anyio.fail_after(30):
        async with client_for(tmp_path, daemon_env, *BYPASS) as client:
            definition = HostToolDefinition(name="slow", interrupt_behavior="cancel")
            changed = await client.register_tool(definition, slow)
            assert "slow" in changed.added
            await client.add_tool({"id": "s", "name": "slow", "input": {}})
            await started.wait()
            await client.interrupt()
            await cancelled.wait()
            turn = await client.drain()
    assert turn.results[0].meta.status == "interrupted"


async def test_a_refused_registration_raises_client_error(
    tmp_path: Path, daemon_env: dict[str, str]
) -> None:
    async def handler(input: dict[str, Any], call: HostCall) -> str:
        return ""

    with anyio.fail_after(30):
        async with client_for(tmp_path, daemon_env) as client:
            with pytest.raises(ClientError) as info:
                await client.register_tool(
                    HostToolDefinition(name="Bash", description="Mine."), handler
                )
    assert info.value.event is not None
    assert info.value.event.code == "invalid_tool_definition"


async def test_close_terminates_a_daemon_that_does_not_finish_in_time(
    tmp_path: Path, daemon_env: dict[str, str]
) -> None:
    with anyio.fail_after(30):
        client = client_for(tmp_path, daemon_env, *BYPASS, close_timeout=0.5)
        async with client:
            async with client.subscribe() as events:
                await client.add_tool(bash("forever", "sleep 60"))
                async for event in events:
                    if isinstance(event, ToolStarted):
                        break
            began = time.monotonic()
            code = await client.aclose()
            waited = time.monotonic() - began
    assert code == 143  # SIGTERM after the bounded wait: the open turn could not finish
    assert waited < 10
    with pytest.raises(ClientError):
        await client.add_tool(bash("late", "echo"))


async def test_events_of_unknown_calls_are_answered_as_errors(
    tmp_path: Path, daemon_env: dict[str, str]
) -> None:
    # A tool_call for a tool this client does not serve (registered by another path) gets an
    # error output instead of hanging the turn.
    tools_file = tmp_path / "tools.json"
    tools_file.write_text('[{"name": "elsewhere", "read_only": true}]')
    with anyio.fail_after(30):
        async with (
            client_for(tmp_path, daemon_env, "--tools", str(tools_file)) as client,
            client.subscribe() as events,
        ):
            turn = await client.run_turn([{"id": "e", "name": "elsewhere", "input": {}}])
            await client.aclose()
            calls = [e async for e in events if isinstance(e, ToolCall)]
    assert [c.tool_use_id for c in calls] == ["e"]
    result: ToolResult = turn.results[0]
    assert result.is_error and "does not serve elsewhere" in str(result.content)


async def test_a_tool_decorated_on_a_running_client_is_registered_in_the_background(
    tmp_path: Path, daemon_env: dict[str, str]
) -> None:
    with anyio.fail_after(30):
        async with (
            client_for(tmp_path, daemon_env, *BYPASS) as client,
            client.subscribe() as events,
        ):

            @client.tool(name="late", read_only=True)
            async def late(input: dict[str, Any], call: HostCall) -> str:
                return "served"

            async for event in events:
                if isinstance(event, ToolsChanged):
                    assert event.added == ["late"]
                    break
            assert "late" in [t["name"] for t in client.api_tools()]
            turn = await client.run_turn([{"id": "x", "name": "late", "input": {}}])
    assert turn.results[0].content == "served"
