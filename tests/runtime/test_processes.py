"""``processes``: the sandbox seam (``ChildSetup``) over real child processes."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from collections.abc import Callable, Iterator

import anyio
import pytest

from stdio_executor.processes import (
    Child,
    ChildSetup,
    ProcessRegistry,
    spawn_group,
    supervised,
)

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def registry() -> Iterator[ProcessRegistry]:
    r = ProcessRegistry()
    try:
        yield r
    finally:
        r.close()


def set_umask(mask: int) -> None:
    """A pre_exec hook: one system call, visible to the command."""
    os.umask(mask)


def refuse(reason: str) -> None:
    raise RuntimeError(reason)


async def run(registry: ProcessRegistry, command: str, setup: ChildSetup | None) -> str:
    read_fd, write_fd = os.pipe()
    try:
        process = await spawn_group(
            registry,
            ["/bin/bash", "-c", command],
            setup=setup,
            stdin=subprocess.DEVNULL,
            stdout=write_fd,
            stderr=subprocess.STDOUT,
        )
    finally:
        os.close(write_fd)
    with anyio.fail_after(10):
        async with supervised(process, registry):
            await process.wait()
    with os.fdopen(read_fd, "rb") as f:
        return f.read().decode()


async def test_a_plan_adds_an_argv_prefix_environment_and_a_pre_exec_step(
    registry: ProcessRegistry,
) -> None:
    setup = ChildSetup(
        pre_exec=set_umask,
        pre_exec_args=(0o027,),
        argv_prefix=("/usr/bin/env", "SEEN_PREFIX=yes"),
        env={"SEEN_ENV": "also"},
    )
    out = await run(registry, "echo $SEEN_PREFIX $SEEN_ENV; umask", setup)
    assert out.split() == ["yes", "also", "0027"]


async def test_no_plan_is_the_plain_child(registry: ProcessRegistry) -> None:
    out = await run(registry, "echo ${SEEN_ENV:-unset}; umask", None)
    assert out.split() == ["unset", f"{_current_umask():04o}"]


async def test_a_failing_pre_exec_fails_the_spawn_and_runs_nothing(
    registry: ProcessRegistry, tmp_path: object
) -> None:
    with pytest.raises((OSError, subprocess.SubprocessError)):
        await run(registry, "echo ran", ChildSetup(pre_exec=refuse, pre_exec_args=("no",)))


def _current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# ------------------------------------------------- sandbox helpers, spoken to directly

needs_root = pytest.mark.skipif(
    os.geteuid() != 0, reason="sandbox helpers run where PID namespaces are ours (root)"
)


def _children_of(pid: int) -> list[int]:
    found: list[int] = []
    with contextlib.suppress(OSError):
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/children") as f:
                found += [int(p) for p in f.read().split()]
    return found


def _tree(pid: int) -> list[int]:
    out, todo = [], _children_of(pid)
    while todo:
        p = todo.pop()
        out.append(p)
        todo += _children_of(p)
    return out


def _is_spawner(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"_spawner.py" in f.read()
    except OSError:
        return False


def _helpers(registry: ProcessRegistry) -> list[int]:
    """The sandbox helpers: spawner processes below the spawner's pid-1 fork."""
    assert registry.spawner_pid is not None
    inner = [p for p in _children_of(registry.spawner_pid) if _is_spawner(p)]
    return [p for p in _children_of(inner[0]) if _is_spawner(p)] if inner else []


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            stat = f.read()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] not in "ZX"


async def _until(check: Callable[[], bool]) -> None:
    with anyio.fail_after(10):
        while not check():  # noqa: ASYNC110 - nothing signals these (other processes): poll
            await anyio.sleep(0.02)


SHARED = ChildSetup(pre_exec=set_umask, pre_exec_args=(0o027,), share_key="plan-a")


@needs_root
async def test_a_plans_later_calls_go_straight_to_its_helper_with_their_own_environment(
    registry: ProcessRegistry,
) -> None:
    """The first call of a plan makes its helper through the spawner; the next ones are
    sent to the helper directly. The environment sent as "the same as the last" means the
    last on that socket, not the last the helper saw on the spawner's."""

    async def call(value: str) -> tuple[str, Child]:
        read_fd, write_fd = os.pipe()
        try:
            process = await spawn_group(
                registry,
                ["/bin/bash", "-c", "echo $SEEN_VALUE; umask"],
                setup=SHARED,
                env={**os.environ, "SEEN_VALUE": value},
                stdin=subprocess.DEVNULL,
                stdout=write_fd,
                stderr=subprocess.STDOUT,
            )
        finally:
            os.close(write_fd)
        with anyio.fail_after(10):
            await process.wait()
        with os.fdopen(read_fd, "rb") as f:
            return f.read().decode(), process

    out, first = await call("one")
    assert out.split() == ["one", "0027"] and first._direct is None
    out, second = await call("two")
    assert out.split() == ["two", "0027"] and second._direct is not None
    out, third = await call("two")
    assert out.split() == ["two", "0027"] and third._direct is second._direct
    assert len(_helpers(registry)) == 1


@needs_root
@pytest.mark.parametrize("victim", ["helper", "spawner"])
async def test_a_call_sent_straight_to_a_helper_ends_when_the_helper_or_spawner_dies(
    registry: ProcessRegistry, victim: str
) -> None:
    """SIGKILL the helper (or every spawner process) under a running call that was sent to
    the helper directly: the call is reported gone (killed), nothing it started survives,
    and the plan's next call runs (a new helper)."""
    assert (await run(registry, "umask", SHARED)).strip() == "0027"  # makes the helper
    process = await spawn_group(
        registry,
        ["/bin/bash", "-c", "sleep 30 & setsid sleep 31 & sleep 32"],
        setup=SHARED,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    assert process._direct is not None
    [helper] = _helpers(registry)
    await _until(lambda: len(_tree(helper)) >= 4)  # bash and its three sleeps
    started = _tree(helper)
    if victim == "helper":
        os.kill(helper, signal.SIGKILL)
    else:
        assert registry.spawner_pid is not None
        for pid in [registry.spawner_pid, *_tree(registry.spawner_pid)]:
            if _is_spawner(pid):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
    with anyio.fail_after(10):
        assert await process.wait() == -signal.SIGKILL
    await _until(lambda: not any(map(_alive, started)))
    assert (await run(registry, "umask", SHARED)).strip() == "0027"


@needs_root
async def test_a_helper_the_spawner_lets_go_of_exits_once_its_calls_are_gone(
    registry: ProcessRegistry,
) -> None:
    """Past ``_MAX_HELPERS`` distinct plans the spawner lets an idle helper go: we close
    our socket to it and it exits; a call of its plan later gets a new one."""
    setups = [
        ChildSetup(pre_exec=set_umask, pre_exec_args=(0o027,), share_key=f"plan-{i}")
        for i in range(5)
    ]
    for setup in setups[:4]:
        assert (await run(registry, "umask", setup)).strip() == "0027"
        assert (await run(registry, "umask", setup)).strip() == "0027"  # the direct way
    first = _helpers(registry)
    assert len(first) == 4
    assert (await run(registry, "umask", setups[4])).strip() == "0027"
    await _until(lambda: len(_helpers(registry)) == 4)
    assert len(set(first) - set(_helpers(registry))) == 1
    assert (await run(registry, "umask", setups[0])).strip() == "0027"


@needs_root
async def test_a_signal_for_a_call_sent_straight_to_a_helper_reaches_it(
    registry: ProcessRegistry,
) -> None:
    """The signal goes to the helper the call was sent to (the spawner does not know the
    call): a command trapping SIGTERM runs its trap and exits with its code."""
    assert (await run(registry, "umask", SHARED)).strip() == "0027"  # makes the helper
    read_fd, write_fd = os.pipe()
    try:
        process = await spawn_group(
            registry,
            ["/bin/bash", "-c", "trap 'echo trapped; exit 7' TERM; echo ready; sleep 30 & wait"],
            setup=SHARED,
            stdin=subprocess.DEVNULL,
            stdout=write_fd,
            stderr=subprocess.STDOUT,
        )
    finally:
        os.close(write_fd)
    assert process._direct is not None
    with os.fdopen(read_fd, "rb") as out:
        assert out.readline() == b"ready\n"  # the trap is set
        process.terminate()
        with anyio.fail_after(10):
            assert await process.wait() == 7
        assert out.read() == b"trapped\n"
