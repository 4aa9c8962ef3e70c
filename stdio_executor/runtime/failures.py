"""The one place an exception raised by tool code becomes the call's error result.

Owns: ``crash_outcome``: a bug in a tool's loading, validation, fast path or run still gives
that call exactly one result (SPEC 4: "a tool that raises: the error as the result text, the
daemon keeps running"), and the traceback goes to the log.
Must not: catch anything itself (callers decide where a bug may be contained) or be used for
failures a tool reports as data (those are ``ToolOutcome``s with ``is_error``).
"""

from __future__ import annotations

import logging

from ..core import Outcome

__all__ = ["crash_outcome"]

log = logging.getLogger("stdio_executor")


def crash_outcome(exc: Exception, tool_name: str, duration_ms: float | None = None) -> Outcome:
    """The model-facing error result for a call whose tool raised ``exc`` (logged here)."""
    log.error("tool %s raised", tool_name, exc_info=exc)
    message = f"<tool_use_error>Error: {type(exc).__name__}: {exc}</tool_use_error>"
    return Outcome(message, True, "error", duration_ms=duration_ms)
