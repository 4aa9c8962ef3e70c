"""The loop's one inbox and the closed set of things that arrive in it.

Owns: ``Inbox`` (a deque and a wake-up) and ``InboxItem``, the typed union of what flows to
the loop that owns the core: decoded input lines, tool completions, an abort raised from
inside a turn, background jobs starting and ending, end of input, signals, the host's death,
and tool-set changes.
Must not: interpret any item (``daemon`` does) or block: ``put`` is called from tool tasks,
watchers and the stdin reader alike.
"""

from __future__ import annotations

import asyncio
from collections import deque

import msgspec

from ..core import Outcome
from ..protocol.messages import Command, ErrorEvent, JobExited, JobStarted
from .toolset import SchemaReport, ServerTools

__all__ = [
    "Eof",
    "Finished",
    "HostGone",
    "Inbox",
    "InboxItem",
    "Line",
    "SignalReceived",
    "TurnAbort",
]


# Not frozen: built once per call on the hot path, where a frozen dataclass's __init__
# costs several times a plain one's (bench/NOTES.md). Never mutated after construction.
class Finished(msgspec.Struct):
    """A call ended (``Outcome``); sent by the call runner, inline or from the call's task."""

    turn: int
    tool_use_id: str
    outcome: Outcome


class Line(msgspec.Struct):
    """A decoded command with the number of the input line it came from."""

    lineno: int
    command: Command


class TurnAbort(msgspec.Struct):
    """The gate aborts the turn a call of it runs in (a hook's ``continue: false``, a host's
    ``interrupt: true`` answer): an ``interrupt`` with reason "abort" aimed at that turn."""

    turn: int
    request_id: str | None


class Eof(msgspec.Struct):
    pass


class SignalReceived(msgspec.Struct):
    signum: int


class HostGone(msgspec.Struct):
    why: str


InboxItem = (
    Finished
    | Line
    | ErrorEvent  # an input line that could not be decoded
    | JobStarted  # a background job's life (``jobs``), in order with everything else
    | JobExited
    | TurnAbort
    | Eof
    | SignalReceived
    | HostGone
    | ServerTools
    | SchemaReport
)


class Inbox:
    """A deque and a wake-up: cheaper than a memory stream when batches are large.

    The wake-up is a bare asyncio future (the daemon runs on anyio's asyncio backend): an
    ``anyio.Event`` per wait cost a backend lookup and a wrapper on every idle wake-up of
    the loop, which one call at a time pays per call (bench/NOTES.md). A cancelled wait
    (anyio cancels the task) cancels the future; the next wait makes a new one.
    """

    def __init__(self) -> None:
        self._items: deque[InboxItem] = deque()
        self._waiter: asyncio.Future[None] | None = None

    @property
    def pending(self) -> bool:
        return bool(self._items)

    def put(self, item: InboxItem) -> None:
        self._items.append(item)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def get_all(self) -> list[InboxItem]:
        while not self._items:
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        items = list(self._items)
        self._items.clear()
        return items
