"""What hooks said, in Claude Code's terms.

Owns: the meaning of a hook's exit status and output. Exit 0: go on; stdout that is a JSON
object may decide (``hookSpecificOutput.permissionDecision`` allow/deny/ask with
``permissionDecisionReason``, the older ``decision`` approve/block with ``reason``), rewrite
the input (``updatedInput``), add context for the model (``additionalContext``) or stop the
turn (``continue: false`` with ``stopReason``). Exit 2: block, with stderr as the reason.
Any other status, a timeout or a failure to start: a non-blocking error, logged to stderr.
When several hooks ran, a block beats ask beats allow, the last ``updatedInput`` wins and
every context and reason is kept.
Must not: run anything, or weigh hooks against permission rules (the gate does).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any, Literal

import msgspec

from .runner import HookRun

__all__ = ["PostOutcome", "PreOutcome", "post_outcome", "pre_outcome"]

log = logging.getLogger("stdio_executor")


class PreOutcome(msgspec.Struct, frozen=True):
    block: str | None = None  # the call must not run; the model-facing reason
    decision: Literal["allow", "ask"] | None = None
    reason: str = ""  # the reason given with the decision
    updated_input: dict[str, Any] | None = None
    context: tuple[str, ...] = ()
    stop: str | None = None  # continue: false; the turn is aborted


class PostOutcome(msgspec.Struct, frozen=True):
    block: str | None = None  # the model sees this as a problem with the call
    context: tuple[str, ...] = ()
    stop: str | None = None


def pre_outcome(runs: Sequence[HookRun]) -> PreOutcome:
    blocks: list[str] = []
    asks: list[str] = []
    allows: list[str] = []
    updated: dict[str, Any] | None = None
    context: list[str] = []
    stop: str | None = None
    for run in runs:
        if run.exit_code == 2:
            blocks.append(run.stderr.strip() or f"blocked by the hook `{run.hook.command}`")
            continue
        data = _json_output(run, "PreToolUse")
        if data is None:
            continue
        if data.get("continue") is False and stop is None:
            stop = _text(data.get("stopReason")) or f"the hook `{run.hook.command}` stopped"
        specific = data.get("hookSpecificOutput")
        specific = specific if isinstance(specific, dict) else {}
        decision = specific.get("permissionDecision")
        reason = _text(specific.get("permissionDecisionReason")) or _text(data.get("reason"))
        legacy = data.get("decision")
        if decision == "deny" or legacy == "block":
            blocks.append(reason or f"denied by the hook `{run.hook.command}`")
        elif decision == "ask":
            asks.append(reason or f"the hook `{run.hook.command}` asks")
        elif decision == "allow" or legacy == "approve":
            allows.append(reason)
        new_input = specific.get("updatedInput")
        if isinstance(new_input, dict):
            updated = new_input
        if extra := _text(specific.get("additionalContext")):
            context.append(extra)
    if blocks:
        return PreOutcome(block="\n".join(blocks), stop=stop, context=tuple(context))
    if asks:
        return PreOutcome(None, "ask", "; ".join(asks), updated, tuple(context), stop)
    if allows:
        reason = "; ".join(a for a in allows if a)
        return PreOutcome(None, "allow", reason, updated, tuple(context), stop)
    return PreOutcome(None, None, "", updated, tuple(context), stop)


def post_outcome(runs: Sequence[HookRun]) -> PostOutcome:
    blocks: list[str] = []
    context: list[str] = []
    stop: str | None = None
    for run in runs:
        if run.exit_code == 2:
            blocks.append(run.stderr.strip() or f"the hook `{run.hook.command}` reported a problem")
            continue
        data = _json_output(run, "PostToolUse")
        if data is None:
            continue
        if data.get("continue") is False and stop is None:
            stop = _text(data.get("stopReason")) or f"the hook `{run.hook.command}` stopped"
        if data.get("decision") == "block":
            blocks.append(_text(data.get("reason")) or f"blocked by `{run.hook.command}`")
        specific = data.get("hookSpecificOutput")
        if isinstance(specific, dict) and (extra := _text(specific.get("additionalContext"))):
            context.append(extra)
    return PostOutcome("\n".join(blocks) if blocks else None, tuple(context), stop)


def _json_output(run: HookRun, event: str) -> dict[str, Any] | None:
    """The hook's JSON answer after exit 0; None (and a log line) for everything else."""
    where = f"{event} hook `{run.hook.command}`"
    if run.error is not None:
        log.warning("%s %s (ignored)", where, run.error)
        return None
    if run.timed_out:
        log.warning("%s timed out after %gs and was stopped (ignored)", where, run.hook.timeout)
        return None
    if run.exit_code != 0:
        detail = run.stderr.strip()[-2000:]
        log.warning("%s exited %s (non-blocking): %s", where, run.exit_code, detail)
        return None
    text = run.stdout.strip()
    if not text.startswith("{"):
        if text:
            log.debug("%s printed: %s", where, text[-2000:])
        return None
    try:
        data = json.loads(text)
    except ValueError as exc:
        log.warning("%s printed invalid JSON (ignored): %s", where, exc)
        return None
    if not isinstance(data, dict):
        return None
    if message := _text(data.get("systemMessage")):
        log.warning("%s: %s", where, message)
    return data


def _text(value: Any) -> str:
    return value.strip() if isinstance(value, str) else ""
