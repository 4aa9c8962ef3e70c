"""The seam between the runtime and permission checks / hooks.

Owns: the ``Gate`` interface the runtime calls around every tool run, and ``OpenGate``, the
gate that allows everything (used when permissions are off, and in tests of the runtime).
Must not: know how rules match or how hooks run (``policy`` and ``hooks`` do).

A check happens inside the tool's execution slot: a tool waiting for the host's answer holds
its place in the result order, and other tools run as the concurrency rules allow. The wait
runs under the tool's cancel scope, so an interrupt, discard or shutdown ends it; a gate must
then tell the host its request is void (``permission_cancelled``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import msgspec

from ..confine import Confinement
from ..protocol import ErrorEvent, PermissionResponse
from ..protocol.messages import Event
from ..tools.base import Tool, ToolOutcome

__all__ = ["Allow", "CallInfo", "Deny", "Gate", "OpenGate", "Verdict"]


# msgspec Structs: built once per call, and a Struct's C __init__ costs a third of a slots
# dataclass's (bench/NOTES.md section 8). Never mutated; ``msgspec.structs.replace`` copies.
class CallInfo(msgspec.Struct):
    """One tool call as the gate sees it."""

    tool_use_id: str
    tool: Tool
    raw_input: Mapping[str, Any]
    value: Any  # the validated input
    turn: int
    cwd: str
    # The ids of the turn's tools (this one included), computed only when a hook or a
    # permission request needs them: a 10,000-tool turn must not pay for it per call.
    turn_tool_ids: Callable[[], tuple[str, ...]] = tuple

    @property
    def name(self) -> str:
        return self.tool.spec.name

    def siblings(self) -> list[str]:
        return [i for i in self.turn_tool_ids() if i != self.tool_use_id]


class Allow(msgspec.Struct):
    # A hook or the host rewrote the input; the runtime validates it again before running.
    updated_input: Mapping[str, Any] | None = None
    # Text for the model, appended to the result (e.g. a hook's additional context).
    notes: tuple[str, ...] = ()
    # The call was allowed because its file lay inside these roots: the tool checks the
    # file it opens against them (``ToolContext.confine``), so a symlink swapped after the
    # check cannot lead it outside.
    confine: Confinement | None = None


class Deny(msgspec.Struct):
    """The call does not run; ``message`` is the model-facing reason."""

    message: str


Verdict = Allow | Deny


class Gate:
    """Decides whether a call may run; may rewrite its input and its result."""

    def attach(self, emit: Callable[[Event], None], abort: Callable[[str | None], None]) -> None:
        """The runtime's hooks: ``emit`` writes an event at once (``permission_request``);
        ``abort(request_id)`` aborts the open turn as an ``interrupt`` with reason "abort"
        would (a host's ``interrupt: true`` answer, a hook's ``continue: false``)."""

    def quick_verdict(self, call: CallInfo) -> Verdict | None:
        """The verdict if it needs no waiting (no hook, no ask), else None.

        Lets the runtime keep its synchronous fast path for cheap tools.
        """
        return Allow()

    def needs_after_run(self, call: CallInfo) -> bool:
        """Whether ``after_run`` may change this call's result (a PostToolUse hook)."""
        return False

    async def before_run(self, call: CallInfo) -> Verdict:
        return Allow()

    async def after_run(self, call: CallInfo, result: ToolOutcome) -> ToolOutcome:
        return result

    def on_response(self, response: PermissionResponse) -> ErrorEvent | None:
        """A ``permission_response`` arrived; an error event if it answers nothing."""
        return ErrorEvent(
            code="unknown_request_id",
            message=f"no permission request {response.request_id!r} is pending",
            request_id=response.request_id,
        )

    def trust(self) -> Any:
        """The host trusts the workspace (``trust_workspace``): held-back settings take
        effect. Returns what was held back (``settings.HeldBack``), or None."""
        return None

    def on_interrupt(self, reason: str) -> None:
        """An ``interrupt`` arrived: pending asks are void (the user moved on)."""

    def on_input_closed(self) -> None:
        """stdin reached EOF: nobody is left to answer; pending asks become denials."""


class OpenGate(Gate):
    """Everything runs (``bypassPermissions`` with no rules and no hooks)."""
