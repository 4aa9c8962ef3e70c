"""The ask round-trip with the host: ``permission_request`` out, ``permission_response`` in.

Owns: fresh request ids; the pending requests and their waiting calls; what an answer means
(``allow`` with an optional ``updated_input``; ``deny`` with an optional ``message``;
``interrupt: true`` denies and aborts the turn, like rejecting a tool in Claude Code); and
every way a request ends without an answer, each told to the host with
``permission_cancelled``: the waiting call was cancelled (abort, discard, a sibling's error,
shutdown), an ``interrupt`` arrived (the user moved on, so the call is denied), or stdin
closed (nobody is left to answer: this and every later ask is a deny), or the host did not
answer within ``--permission-timeout`` (a deny saying so). A request that has waited
``WARN_AFTER_S`` (or half the timeout, if that is sooner) logs a warning on stderr, so a
host that never answers (one written without knowing about permission requests) is visible
instead of silently hung. ``--no-prompt`` makes every ask a deny without a request.
Must not: decide whether to ask (``policy`` and the gate do).
"""

from __future__ import annotations

import itertools
import logging
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import msgspec

from ..protocol import ErrorEvent, PermissionCancelled, PermissionRequest, PermissionResponse
from ..protocol.messages import Event
from .gate import Allow, CallInfo, Deny, Verdict

__all__ = ["Asker", "error_text"]

_REMEMBERED = 4096  # ended request ids kept, so a late answer is ignored, not an error
# A request unanswered this long is logged, once: long enough for a person to read a prompt.
WARN_AFTER_S = 10.0

log = logging.getLogger(__name__)


def error_text(text: str) -> str:
    return f"<tool_use_error>{text}</tool_use_error>"


class _Pending(msgspec.Struct):
    request_id: str
    tool_use_id: str
    name: str
    reason: str
    # An `interrupt` cancels `cancel` tools itself; a waiting `block` tool it leaves alone.
    survives_interrupt: bool
    done: anyio.Event = msgspec.field(default_factory=anyio.Event)
    verdict: Verdict | None = None


class Asker:
    def __init__(
        self,
        *,
        no_prompt: bool = False,
        timeout: float | None = None,
        warn_after: float = WARN_AFTER_S,
    ) -> None:
        self.no_prompt = no_prompt
        self.timeout = timeout  # --permission-timeout; None waits as long as the call lives
        self.warn_after = warn_after
        self._emit: Callable[[Event], None] = lambda event: None
        self._abort: Callable[[str | None], None] = lambda request_id: None
        self._pending: dict[str, _Pending] = {}
        self._ended: deque[str] = deque(maxlen=_REMEMBERED)
        self._ended_set: set[str] = set()
        self._closed = False
        self._ids = itertools.count(1)

    def attach(self, emit: Callable[[Event], None], abort: Callable[[str | None], None]) -> None:
        self._emit = emit
        self._abort = abort

    @property
    def pending(self) -> int:
        return len(self._pending)

    async def ask(self, call: CallInfo, tool_input: Mapping[str, Any], reason: str) -> Verdict:
        if self.no_prompt:
            return Deny(
                error_text(
                    f"Permission to use {call.name} has been denied: it needs approval "
                    f"({reason}), and stdio-executor runs with --no-prompt, so nobody can "
                    "approve it."
                )
            )
        if self._closed:
            return Deny(self._closed_text(call.name, reason))
        request_id = f"perm_{next(self._ids)}"
        survives = call.tool.spec.interrupt_behavior == "block"
        pending = _Pending(request_id, call.tool_use_id, call.name, reason, survives)
        self._pending[request_id] = pending
        self._emit(
            PermissionRequest(
                request_id=request_id,
                tool_use_id=call.tool_use_id,
                name=call.name,
                input=dict(tool_input),
                reason=reason,
                turn=call.turn,
                siblings=call.siblings(),
            )
        )
        try:
            await self._wait(pending)
        except BaseException as exc:  # cancelled: interrupt, abort, discard, shutdown
            if self._pending.pop(request_id, None) is not None:
                self._end(pending, _cancel_reason(exc))
            raise
        if pending.verdict is None:  # nobody answered in time
            self._pending.pop(request_id, None)
            self._end(pending, "timeout")
            pending.verdict = Deny(
                error_text(
                    f"Permission to use {call.name} was not given: the host did not answer "
                    f"the permission request within {self.timeout:g} s "
                    "(--permission-timeout), so it was denied."
                )
            )
        return pending.verdict

    async def _wait(self, pending: _Pending) -> None:
        """Until answered or ``timeout``; logs once if the answer is slow to come."""
        timeout = float("inf") if self.timeout is None else self.timeout
        warn_at = min(self.warn_after, timeout / 2)
        with anyio.move_on_after(warn_at):
            await pending.done.wait()
        if pending.done.is_set():
            return
        log.warning(
            "permission request %s (%s for %s) has waited %g s for a permission_response; "
            "is the host answering permission_request events? (docs/permissions.md)",
            pending.request_id,
            pending.name,
            pending.tool_use_id,
            warn_at,
        )
        with anyio.move_on_after(timeout - warn_at):
            await pending.done.wait()

    def on_response(self, response: PermissionResponse) -> ErrorEvent | None:
        pending = self._pending.pop(response.request_id, None)
        if pending is None:
            if response.request_id in self._ended_set:
                return None  # answers a request that already ended: ignored, as documented
            return ErrorEvent(
                code="unknown_request_id",
                message=f"no permission request {response.request_id!r} is pending",
                request_id=response.request_id,
            )
        self._remember(pending.request_id)
        if response.interrupt:
            extra = f" The user said: {response.message}" if response.message else ""
            pending.verdict = Deny(
                error_text(
                    "The user rejected this tool use, so it was not carried out. Stop what you "
                    f"are doing and wait for the user to say how to go on.{extra}"
                )
            )
            self._abort(pending.request_id)
        elif response.decision == "allow":
            pending.verdict = Allow(updated_input=response.updated_input)
        else:
            why = f": {response.message}" if response.message else "."
            pending.verdict = Deny(
                error_text(f"The user denied permission to use {pending.name}{why}")
            )
        pending.done.set()
        return None

    def on_interrupt(self, reason: str) -> None:
        """The host interrupted the turn: nobody will answer its open requests.

        Every call the interrupt cancels ends its request itself (``ask`` sees the
        cancellation); this ends the requests of calls it leaves running: ``block`` tools
        under reason "interrupt".
        """
        if reason != "interrupt":
            return
        for pending in list(self._pending.values()):
            if not pending.survives_interrupt:
                continue
            self._pending.pop(pending.request_id, None)
            pending.verdict = Deny(
                error_text(
                    f"Permission to use {pending.name} was not given: the user interrupted "
                    "before answering. Stop what you are doing and wait for the user to say "
                    "how to go on."
                )
            )
            self._end(pending, reason)
            pending.done.set()

    def on_input_closed(self) -> None:
        self._closed = True
        for pending in list(self._pending.values()):
            self._pending.pop(pending.request_id, None)
            pending.verdict = Deny(self._closed_text(pending.name, pending.reason))
            self._end(pending, "input_closed")
            pending.done.set()

    @staticmethod
    def _closed_text(name: str, reason: str) -> str:
        return error_text(
            f"Permission to use {name} has been denied: it needs approval ({reason}), and the "
            "host closed stdio-executor's input, so nobody can approve it."
        )

    def _end(self, pending: _Pending, reason: str) -> None:
        self._remember(pending.request_id)
        self._emit(
            PermissionCancelled(
                request_id=pending.request_id, tool_use_id=pending.tool_use_id, reason=reason
            )
        )

    def _remember(self, request_id: str) -> None:
        if len(self._ended) == self._ended.maxlen:
            self._ended_set.discard(self._ended[0])
        self._ended.append(request_id)
        self._ended_set.add(request_id)


def _cancel_reason(exc: BaseException) -> str:
    """The reason the runtime gave its cancel scope (anyio puts it in the message)."""
    _, sep, reason = str(exc).rpartition("; reason: ")
    return reason.strip() if sep and reason.strip() else "cancelled"
