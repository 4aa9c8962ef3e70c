"""``processes``: the sandbox seam (``ChildSetup``) over real child processes."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator

import anyio
import pytest

from stdio_executor.processes import ChildSetup, ProcessRegistry, spawn_group, supervised

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
