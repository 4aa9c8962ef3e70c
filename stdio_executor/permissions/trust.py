"""Workspace trust on the wire: what ``ready`` reports as held back, and the answer to
``trust_workspace``.

Owns: turning the settings' ``HeldBack`` and the held-back MCP server names into the
protocol's ``HeldBack`` message, and the policy for the workspace's ``.mcp.json``: its
servers start at once only in a trusted workspace (``--trust-workspace``); otherwise they
wait for ``trust_workspace``.
Must not: read files or start servers (the CLI reads, the daemon starts).
"""

from __future__ import annotations

from collections.abc import Sequence

from ..protocol import HeldBack as HeldBackMessage
from ..protocol import WorkspaceTrust
from .settings import HeldBack

__all__ = ["held_back_message", "workspace_trust"]


def held_back_message(held: HeldBack | None, mcp_servers: Sequence[str] = ()) -> HeldBackMessage:
    held = held or HeldBack()
    return HeldBackMessage(
        files=list(held.files),
        allow=list(held.allow),
        default_mode=held.default_mode,
        additional_directories=list(held.additional_directories),
        hooks=list(held.hooks),
        sandbox=held.sandbox,
        mcp_servers=list(mcp_servers),
    )


def workspace_trust(
    trusted: bool, held: HeldBack | None, mcp_servers: Sequence[str]
) -> WorkspaceTrust:
    """``ready``'s ``workspace_trust``: held_back is None when nothing was held back."""
    if trusted or not (held or mcp_servers):
        return WorkspaceTrust(trusted=trusted)
    return WorkspaceTrust(trusted=False, held_back=held_back_message(held, mcp_servers))
