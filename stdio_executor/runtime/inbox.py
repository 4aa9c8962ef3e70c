"""The loop's one inbox and the closed set of things that arrive in it.

Owns: ``Inbox`` (a deque, a wake-up, and handing a batch to the loop's handler in place
while the loop is parked) and ``InboxItem``, the typed union of what flows to
the loop that owns the core: decoded input lines, tool completions, an abort raised from
inside a turn, background jobs starting and ending, end of input, signals, the host's death,
and tool-set changes.
Must not: interpret any item (``daemon`` does) or block: ``put`` is called from tool tasks,
watchers and the stdin reader alike.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable

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

    ``serve_here`` lets the stdin reader's callback hand its lines to the loop's handler in
    the same loop iteration that read them, while the loop is parked on an empty inbox:
    waking the loop's task instead cost one more loop iteration per command (a zero-timeout
    ``epoll_wait``, the task's wake-up, a new future), which one call at a time paid on
    every call (bench/NOTES.md section 14).
    """

    def __init__(self) -> None:
        self._items: deque[InboxItem] = deque()
        self._waiter: asyncio.Future[None] | None = None
        self._serving = False
        self._loop: asyncio.AbstractEventLoop | None = None

    @property
    def pending(self) -> bool:
        return bool(self._items)

    def put(self, item: InboxItem) -> None:
        self._items.append(item)
        if not self._serving:
            self.wake()

    def put_all(self, items: list[InboxItem]) -> None:
        self._items.extend(items)
        if not self._serving:
            self.wake()

    def wake(self) -> None:
        """Wake the loop's wait, even with nothing queued (it re-checks its own state)."""
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    def serve_here(self, items: list[InboxItem], handle: Callable[[list[InboxItem]], None]) -> bool:
        """Hand ``items``, then everything put while they are handled, to ``handle`` in
        rounds until none is left, now, in the caller's callback; False (nothing done) unless
        the loop is parked on an empty inbox (its wait pending: it is between batches and
        nothing queued is older than ``items``, so the order is the one the loop would see).
        """
        waiter = self._waiter
        if self._serving or self._items or waiter is None or waiter.done():
            return False
        self._serving = True
        try:
            handle(items)
            while self._items:
                batch = list(self._items)
                self._items.clear()
                handle(batch)
        finally:
            self._serving = False
        return True

    async def get_all(self) -> list[InboxItem]:
        """Everything queued; waits while there is nothing. Empty after a bare ``wake``."""
        if not self._items:
            if self._loop is None:
                # Once: asyncio's lookup asks the kernel for our pid on every call.
                self._loop = asyncio.get_running_loop()
            self._waiter = self._loop.create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        items = list(self._items)
        self._items.clear()
        return items
